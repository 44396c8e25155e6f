//! report.md's `unixbench` suite: each configuration against the baseline measured in the same
//! run, and the target that the rows which execute nothing stay within noise.

use std::fmt::Write as _;

use super::verdict::within_noise;
use crate::bench::results::{Results, mean_sd};

/// The UnixBench rows that execute nothing.
const NON_EXEC: [&str; 6] = [
    "file-copy-4096",
    "file-copy-1024",
    "file-copy-256",
    "pipe-throughput",
    "pipe-context-switching",
    "process-creation",
];

/// The mean difference of `config` from the baseline measured in the same run, and the half
/// width of its 95% interval (Student's t times the standard error), both as fractions.
fn paired_difference(results: &Results, suite: &str, case: &str, config: &str) -> Option<(f64, f64)> {
    results.paired_difference(suite, case, config, "baseline")
}

/// The target: the non-exec rows within noise of baseline, when the suite ran.
pub(super) fn targets(md: &mut String, results: &Results) {
    // Non-exec rows: within noise when the difference from the baseline measured alongside is
    // within its 95% interval (Student's t times the standard error of the paired ratios), or
    // below 1%.
    let mut worst = (0.0f64, 0.0f64, String::new());
    let mut rows = Vec::new();
    for case in NON_EXEC {
        for config in ["elfsig-cold", "elfsig-warm"] {
            let Some((diff, interval)) = paired_difference(results, "unixbench", case, config) else { continue };
            rows.push((diff, interval));
            if diff.abs() > worst.0.abs() {
                worst = (diff, interval, format!("{case} ({config})"));
            }
        }
    }
    if results.has("unixbench") {
        let _ = writeln!(
            md,
            "| non-exec UnixBench rows within noise of baseline | largest difference {:+.1}% ± {:.1}% ({}) | {} |",
            worst.0 * 100.0,
            worst.1 * 100.0,
            worst.2,
            within_noise(&rows)
        );
    }
}

/// The section.
pub(super) fn section(md: &mut String, results: &Results) {
    let runs = results.values("unixbench", "file-copy-4096", "baseline").len();
    let _ = writeln!(
        md,
        "## UnixBench-style microbenchmarks, {runs} runs (higher is better)\n\n\
         Each configuration against the baseline measured in the same run: mean difference ± its 95% interval.\n"
    );
    md.push_str("| test | unit | baseline | elfsig-cold | elfsig-warm | ima |\n|---|---|---:|---:|---:|---:|\n");
    for case in results.cases("unixbench") {
        let (base, sd) = mean_sd(&results.values("unixbench", &case, "baseline"));
        let cell = |config| match paired_difference(results, "unixbench", &case, config) {
            Some((diff, interval)) => format!("{:+.1}% ± {:.1}%", diff * 100.0, interval * 100.0),
            None => "-".into(),
        };
        let _ = writeln!(
            md,
            "| {case} | {} | {base:.0} ± {sd:.0} | {} | {} | {} |",
            results.unit("unixbench", &case),
            cell("elfsig-cold"),
            cell("elfsig-warm"),
            cell("ima")
        );
    }
    md.push('\n');
}
