//! report.md's `libs` suite: executable mappings under the mapping guard, each case's overhead
//! against baseline, and its target.

use std::fmt::Write as _;

use super::verdict::met;
use crate::bench::results::{Results, sum};

/// The ratio of `config` to baseline for one libs case (totals over all runs).
pub(super) fn libs_ratio(results: &Results, case: &str, config: &str) -> f64 {
    sum(&results.values("libs", case, config)) / sum(&results.values("libs", case, "baseline"))
}

/// The target: elfsig-warm within 1.02x, when the suite ran.
pub(super) fn targets(md: &mut String, results: &Results) {
    let libs_warm = results.cases("libs").into_iter().map(|case| (libs_ratio(results, &case, "elfsig-warm"), case));
    if let Some((worst, case)) = libs_warm.max_by(|a, b| a.0.total_cmp(&b.0)) {
        let _ = writeln!(
            md,
            "| libs: elfsig-warm within 1.02x (libraries checked by the mapping guard) | max {worst:.3}x ({case}) | {} |",
            met(worst <= 1.02)
        );
    }
}

/// The section.
pub(super) fn section(md: &mut String, results: &Results) {
    let execs = sum(&results.values("meta", "libs-execs-per-case", "-"));
    md.push_str(
        "## libs: executable mappings under the mapping guard, overhead against baseline

",
    );
    let _ = writeln!(
        md,
        "`dlopen-50-libraries`: a signed program `dlopen`s 50 small signed libraries. `python-12-extensions`: \
         python3 imports 12 C extension modules (`{}`), most with libraries of their own. Each run {execs:.0} \
         times per configuration; `elfsig-cold` verifies the program, ld.so and every library on each run; `ima` \
         appraises the program and the libraries it copies (its `fowner` rule leaves the system libraries in \
         `/lib` unappraised, which elfsig checks).\n",
        elfsig_guest::image::BENCH_PYTHON_EXTENSIONS.join(" ")
    );
    md.push_str("| case | baseline per run | elfsig-cold | elfsig-warm | ima |\n|---|---:|---:|---:|---:|\n");
    for case in results.cases("libs") {
        let base = sum(&results.values("libs", &case, "baseline"));
        let ratio = |config| format!("{:.3}x", libs_ratio(results, &case, config));
        let _ = writeln!(
            md,
            "| {case} | {:.1} ms | {} | {} | {} |",
            base / execs.max(1.0) / 1000.0,
            ratio("elfsig-cold"),
            ratio("elfsig-warm"),
            ratio("ima")
        );
    }
    md.push('\n');
}
