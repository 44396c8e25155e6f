//! report.md's `large` suite: the largest binary, its exec and verification, the module's
//! memory, and their targets.

use std::fmt::Write as _;

use super::verdict::met;
use crate::bench::native::Native;
use crate::bench::results::{CONFIGS, Results, mean_sd};

/// The targets: constant memory, and throughput near the kernel's SHA-256, as far as measured.
pub(super) fn targets(md: &mut String, results: &Results, native: &Native) {
    let peak = results.values("large", "module-memory-peak", "elfsig-cold");
    if let Some(peak) = peak.iter().copied().reduce(f64::max) {
        let _ = writeln!(
            md,
            "| large: constant memory, at most 256 KiB extra | module peak {:.0} KiB | {} |",
            peak / 1024.0,
            met(peak <= 256.0 * 1024.0)
        );
    }
    if results.has("large") {
        let (throughput, _) = mean_sd(&results.values("large", "verify-throughput", "elfsig-cold"));
        let _ = writeln!(
            md,
            "| large: throughput near the kernel's SHA-256 | {throughput:.0} MB/s in the VM (native SHA-256 here: {:.0} MB/s; see IMA below for the same kernel hash in the VM) | |",
            native.sha256_mbps
        );
    }
}

/// The section.
pub(super) fn section(md: &mut String, results: &Results, native: &Native) {
    let one = |case: &str, config: &str| mean_sd(&results.values("large", case, config)).0;
    md.push_str("## The largest binary\n\n");
    let _ = writeln!(
        md,
        "A generated, signed ELF of {:.1} MiB whose executable segment is {:.1} MiB, executed once per run (published: a 128 MB chromium with a 76.8 MB .text).\n",
        one("file-size", "-") / 1048576.0,
        one("text-segment-size", "-") / 1048576.0
    );
    md.push_str("| configuration | exec time | verification | throughput | module memory peak | slab + vmalloc growth |\n|---|---:|---:|---:|---:|---:|\n");
    for config in CONFIGS {
        let cell = |case: &str, scale: f64, unit: &str| {
            let values = results.values("large", case, config);
            if values.is_empty() { String::new() } else { format!("{:.1} {unit}", mean_sd(&values).0 / scale) }
        };
        let _ = writeln!(
            md,
            "| {config} | {} | {} | {} | {} | {} |",
            cell("exec-time", 1000.0, "ms"),
            cell("verify-time", 1000.0, "ms"),
            cell("verify-throughput", 1.0, "MB/s"),
            cell("module-memory-peak", 1024.0, "KiB"),
            cell("kernel-memory-growth", 1024.0, "KiB")
        );
    }
    let _ = writeln!(
        md,
        "\n`ima` is IMA's first appraisal of the same file (its signature set again before each run). Natively, SHA-256 on this CPU runs at {:.0} MB/s.\n",
        native.sha256_mbps
    );
}
