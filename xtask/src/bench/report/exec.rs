//! report.md's `exec` suite: microseconds per exec of a tiny static program, run by run.

use std::fmt::Write as _;

use super::verdict::pct;
use crate::bench::results::{CONFIGS, Results, mean_sd};

/// The section.
pub(super) fn section(md: &mut String, results: &Results) {
    md.push_str("## exec: microseconds per exec of a tiny static program, 5 runs\n\n");
    md.push_str("| configuration | run 1 | run 2 | run 3 | run 4 | run 5 | mean | vs baseline |\n|---|---:|---:|---:|---:|---:|---:|---:|\n");
    let (base, _) = mean_sd(&results.values("exec", "exec", "baseline"));
    for config in CONFIGS {
        let values = results.values("exec", "exec", config);
        let (mean, _) = mean_sd(&values);
        let runs: Vec<String> = values.iter().map(|v| format!("{v:.1}")).collect();
        let _ = writeln!(md, "| {config} | {} | {mean:.1} | {} |", runs.join(" | "), pct(mean, base));
    }
    md.push_str("\nPublished for comparison: an exec tracer +8%, an audit execve rule +13%.\n\n");
}
