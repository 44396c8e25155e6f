//! report.md's `apps` suite: the application workloads, milliseconds against baseline.

use std::fmt::Write as _;

use super::verdict::pct;
use crate::bench::results::{CONFIGS, Results, mean_sd};

/// The section.
pub(super) fn section(md: &mut String, results: &Results) {
    let runs = results.values("apps", "rsync-tree", "baseline").len();
    let _ = writeln!(md, "## Application workloads, {runs} runs each (milliseconds, mean ± sd)\n");
    md.push_str("| workload | baseline | elfsig-cold | elfsig-warm | ima |\n|---|---:|---:|---:|---:|\n");
    for case in results.cases("apps") {
        let (base, _) = mean_sd(&results.values("apps", &case, "baseline"));
        let cells: Vec<String> = CONFIGS
            .iter()
            .map(|config| {
                let (mean, sd) = mean_sd(&results.values("apps", &case, config));
                if *config == "baseline" {
                    format!("{mean:.1} ± {sd:.1}")
                } else {
                    format!("{mean:.1} ± {sd:.1} ({})", pct(mean, base))
                }
            })
            .collect();
        let _ = writeln!(md, "| {case} | {} |", cells.join(" | "));
    }
    md.push('\n');
}
