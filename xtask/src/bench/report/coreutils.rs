//! report.md's `coreutils` suite: the published table, each program's overhead against
//! baseline, measured in the VM and projected natively, and its targets.

use std::fmt::Write as _;

use super::native::{Misses, projected_cold_ratio};
use super::verdict::met;
use crate::bench::native::{COREUTILS, Native};
use crate::bench::results::{Results, mean_sd, median, sum};
use elfsig_guest::image::BENCH_COREUTILS_COLD;

/// The earlier C module's published overhead ratios, lowest and highest, for the coreutils table.
const PUBLISHED_C_MODULE: (f64, f64) = (1.35, 3.06);

/// The ratio of `config` to baseline for one coreutils program (totals over all runs).
pub fn coreutils_ratio(results: &Results, program: &str, config: &str) -> f64 {
    sum(&results.values("coreutils", program, config)) / sum(&results.values("coreutils", program, "baseline"))
}

/// The coreutils table's targets, measured and projected natively.
pub(super) fn targets(md: &mut String, results: &Results, native: &Native) {
    let warm: Vec<f64> = COREUTILS.iter().map(|p| coreutils_ratio(results, p, "elfsig-warm")).collect();
    let cold: Vec<f64> = COREUTILS.iter().map(|p| coreutils_ratio(results, p, "elfsig-cold")).collect();
    let warm_max = warm.iter().copied().fold(f64::MIN, f64::max);
    let _ = writeln!(
        md,
        "| elfsig-warm median overhead ≤ 1.02x | {:.3}x | {} |",
        median(&warm),
        met(median(&warm) <= 1.02)
    );
    let _ = writeln!(md, "| elfsig-warm no program above 1.05x | max {warm_max:.3}x | {} |", met(warm_max <= 1.05));
    let below = cold.iter().filter(|r| **r < PUBLISHED_C_MODULE.0).count();
    let _ = writeln!(
        md,
        "| elfsig-cold below the earlier C module for every program (its best: {:.2}x) | {below} of 18 below, max {:.2}x in the VM | {} |",
        PUBLISHED_C_MODULE.0,
        cold.iter().copied().fold(f64::MIN, f64::max),
        met(below == 18)
    );
    for (misses, what) in [
        (Misses::ProgramAndLdSo, "elfsig-cold projected natively on this CPU"),
        (
            Misses::Program,
            "first exec of a program, ld.so already verified, projected natively (not a target; for context)",
        ),
    ] {
        let projected: Vec<f64> = COREUTILS.iter().filter_map(|p| projected_cold_ratio(native, p, misses)).collect();
        let Some(worst) = projected.iter().copied().reduce(f64::max) else { continue };
        let verdict = if misses == Misses::ProgramAndLdSo { met(worst < PUBLISHED_C_MODULE.0) } else { "" };
        let _ = writeln!(md, "| {what} | median {:.3}x, max {worst:.3}x | {verdict} |", median(&projected));
    }
}

/// The section.
pub(super) fn section(md: &mut String, results: &Results, native: &Native) {
    let execs = sum(&results.values("meta", "coreutils-execs-per-program", "-"));
    md.push_str("## coreutils: 18 programs, overhead against baseline\n\n");
    let _ = write!(
        md,
        "Each program run {execs:.0} times with `--version` in every configuration; the baseline column is the total time of those runs. "
    );
    let _ = writeln!(
        md,
        "The earlier C module measured {:.2}x to {:.2}x on this table.\n",
        PUBLISHED_C_MODULE.0, PUBLISHED_C_MODULE.1
    );
    md.push_str("| program | baseline total | elfsig-cold | elfsig-warm | ima | elfsig-cold projected natively |\n|---|---:|---:|---:|---:|---:|\n");
    for program in COREUTILS {
        let base = sum(&results.values("coreutils", program, "baseline"));
        let ratio = |config| format!("{:.3}x", coreutils_ratio(results, program, config));
        let projected = projected_cold_ratio(native, program, Misses::ProgramAndLdSo)
            .map_or_else(|| "".into(), |r| format!("{r:.3}x"));
        let _ = writeln!(
            md,
            "| {program} | {:.0} ms | {} | {} | {} | {projected} |",
            base / 1000.0,
            ratio("elfsig-cold"),
            ratio("elfsig-warm"),
            ratio("ima")
        );
    }
    for config in ["elfsig-cold", "elfsig-warm", "ima"] {
        let ratios: Vec<f64> = COREUTILS.iter().map(|p| coreutils_ratio(results, p, config)).collect();
        let _ = writeln!(
            md,
            "\n{config}: median {:.3}x, min {:.3}x, max {:.3}x.",
            median(&ratios),
            ratios.iter().copied().fold(f64::MAX, f64::min),
            ratios.iter().copied().fold(f64::MIN, f64::max)
        );
    }
    md.push('\n');
    cold_breakdown(md, results, execs);
}

/// The first program whose first-exec breakdown is missing or not a number, if any: a smoke
/// run checks that every row is there.
pub fn cold_breakdown_missing(results: &Results) -> Option<String> {
    COREUTILS.iter().flat_map(|program| ["verify", "hash", "signature"].map(|part| format!("{program}:{part}"))).find(
        |case| {
            let values = results.values(BENCH_COREUTILS_COLD, case, "elfsig-cold");
            values.is_empty() || values.iter().any(|v| !v.is_finite())
        },
    )
}

/// What a first exec costs in the VM, program by program: `elfsig-cold`'s exec against
/// baseline's, and what the module's counters say its verification took (the program, ld.so
/// and every library, each verified afresh), split into SHA-256, the signature, and the rest.
fn cold_breakdown(md: &mut String, results: &Results, execs: f64) {
    let part = |program: &str, part: &str| {
        mean_sd(&results.values(BENCH_COREUTILS_COLD, &format!("{program}:{part}"), "elfsig-cold")).0
    };
    if results.values(BENCH_COREUTILS_COLD, &format!("{}:verify", COREUTILS[0]), "elfsig-cold").is_empty() {
        return;
    }
    md.push_str(
        "What a first exec costs in the VM (`elfsig-cold`, per exec, µs): its exec against baseline's, and the \
         module's verification (of the program, ld.so and every library it maps, each afresh: the cache was \
         flushed before every exec), from the module's own counters, split into SHA-256, the signature (PKCS#7 \
         and the keyrings), and the rest (reading the file, parsing, revocation lists). What the extra is \
         besides verifying is the exec's own share (the guard's checks, the cache, the hooks).\n\n\
         | program | baseline | elfsig-cold | extra | verifying | SHA-256 | signature | rest of verifying | extra besides verifying |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for program in COREUTILS {
        let per_exec = |config: &str| sum(&results.values("coreutils", program, config)) / execs.max(1.0);
        let (base, cold) = (per_exec("baseline"), per_exec("elfsig-cold"));
        let (verify, hash, signature) = (part(program, "verify"), part(program, "hash"), part(program, "signature"));
        let _ = writeln!(
            md,
            "| {program} | {base:.0} | {cold:.0} | {:.0} | {verify:.0} | {hash:.0} | {signature:.0} | {:.0} | {:.0} |",
            cold - base,
            verify - hash - signature,
            cold - base - verify
        );
    }
    md.push('\n');
}
