//! report.md: the measurements in the shapes of the published studies (per-program ratios,
//! percentages against baseline, mean ± sd), the targets with what was measured against them,
//! and the native projection. This file holds what every section shares: the run described,
//! the targets' table, the order of the sections (one file per suite), and the views across
//! kernels and figures.

mod apps;
mod boot;
pub mod coreutils;
mod exec;
mod keys;
mod large;
mod libs;
mod native;
mod unixbench;
mod verdict;

pub use boot::breakdown_rows;

use elfsig_guest::image::BenchEffort;
use std::fmt::Write as _;

use self::coreutils::coreutils_ratio;
use self::libs::libs_ratio;
use self::native::{Misses, projected_cold_ratio};
use super::native::{COREUTILS, Native};
use super::results::{Results, median};

/// What the report says about the run itself.
#[derive(Debug)]
pub struct Meta {
    /// Which kernel the VMs ran, as the report names it.
    pub kernel: String,
    /// What the names of its results and chart files end with.
    pub suffix: String,
    /// Full, `--quick`, or a smoke run.
    pub effort: BenchEffort,
    /// QEMU accelerator used.
    pub accel: String,
    /// QEMU's version, `major.minor`.
    pub qemu: String,
    /// What the guests' clocks counted.
    pub clock: crate::vm::qemu::Clock,
    /// When the run started.
    pub started: String,
    /// How long it took, in seconds.
    pub seconds: f64,
}

/// How many of the guests' boots hashed with the x86 SHA extensions, of how many said.
pub fn sha_ni_boots(results: &Results) -> (usize, usize) {
    let said: Vec<f64> =
        results.records.iter().filter(|r| r.suite == "meta" && r.case == "sha256-ni").map(|r| r.value).collect();
    (said.iter().filter(|v| **v > 0.5).count(), said.len())
}

/// Which SHA-256 the guests' kernels ran, elfsig's and IMA's alike.
fn sha256(results: &Results) -> String {
    match sha_ni_boots(results) {
        (_, 0) => String::new(),
        (with, all) if with == all => format!(
            "SHA-256 in the guests' kernels, for elfsig and IMA alike: `sha256_ni`, the x86 SHA extensions every \
             recent server CPU has (QEMU's TCG emulates them), in all {all} guests.\n\n"
        ),
        (with, all) => format!(
            "SHA-256 in the guests' kernels: the x86 SHA extensions in {with} of {all} guests only; the others \
             hashed with AVX2 or generic code, several times the instructions a server CPU runs (QEMU emulates \
             the extensions from 8.2 on).\n\n"
        ),
    }
}

/// The report.
pub fn markdown(results: &Results, native: &Native, meta: &Meta) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "# elfsig benchmarks: {}\n", meta.kernel);
    let _ = write!(
        md,
        "{} run started {}, {:.0} s, QEMU {} ({}) on {}. Host CPU: {}.",
        meta.effort.pick("Full", "Quick (`--quick`)", "Smoke (`cargo xtask test`: timings not meant to be read)"),
        meta.started,
        meta.seconds,
        meta.qemu,
        meta.accel,
        meta.kernel,
        native.cpu
    );
    // The bench VM's suites, when any ran (the boot suite describes its own configurations).
    if results.records.iter().any(|r| r.suite != super::boot::SUITE) {
        md.push_str(meta.effort.pick(
            " Bench VMs: two guests of 1 vCPU side by side, each measuring every other round.",
            " Bench VMs: two guests of 1 vCPU side by side, each measuring every other round.",
            " Bench VM: one guest of 1 vCPU (one per kernel, side by side).",
        ));
        md.push_str(
            " Configurations, \
             interleaved (each round measures all four, in rotating order): `baseline` (module not loaded), \
             `elfsig-cold` (module enforcing with its mapping guard attached, so that every library is checked \
             too; verdict cache flushed before every exec), `elfsig-warm` (the same, cache warm), `ima` (IMA \
             appraisal, `appraise func=BPRM_CHECK` and `func=MMAP_CHECK` with `appraise_type=imasig`, on copies \
             of the same programs and libraries).",
        );
    }
    let _ = writeln!(md, " Raw measurements: `results{0}.csv`; chart: `chart{0}.svg`.\n", meta.suffix);
    md.push_str(&sha256(results));
    if meta.accel == "tcg" {
        md.push_str(
            "The VMs run under TCG emulation, where hashing is far slower than on real hardware: the native \
             section projects the verification cost onto this machine's CPU.\n\n",
        );
    }
    md.push_str(match meta.clock {
        crate::vm::qemu::Clock::Instructions => {
            "**Figure: instructions.** The guests ran with `-icount shift=0,sleep=off`: their clock advanced 1 ns \
             for every instruction they executed, so every time below counts instructions (1 µs reads 1,000 \
             instructions, 1 s a billion), and the host's load cannot move it: a repeat run reproduces it. What \
             it leaves out is what instructions do not say: the host's caches and memory, and emulation's own \
             costs (the boot suite's root file system is on an NVDIMM, read by memory copies the guest \
             executes, so that no I/O completes in the host's own time). The verdicts below rest on this \
             figure.\n\n"
        }
        crate::vm::qemu::Clock::Host => {
            "**Figure: host time.** The guests' clock followed the host's: wall-clock time under emulation, \
             which measures the host's load as much as elfsig. Read it beside the instruction figure: where \
             they disagree, it is the host's noise or what instructions leave out.\n\n"
        }
    });

    targets(&mut md, results, native);
    // Each suite's section, when it ran (`--suite`).
    let ran = |suite| results.has(suite);
    if ran("coreutils") {
        coreutils::section(&mut md, results, native);
    }
    if ran("libs") {
        libs::section(&mut md, results);
    }
    if ran("exec") {
        exec::section(&mut md, results);
    }
    if ran("keys") {
        keys::section(&mut md, results);
    }
    if ran("unixbench") {
        unixbench::section(&mut md, results);
    }
    if ran("apps") {
        apps::section(&mut md, results);
    }
    if ran("large") {
        large::section(&mut md, results, native);
    }
    boot::section(&mut md, results, native, &meta.accel);
    native::section(&mut md, native);
    md
}

/// The targets' table: each suite's rows, those that ran.
fn targets(md: &mut String, results: &Results, native: &Native) {
    md.push_str("## Targets\n\n");
    let _ = writeln!(md, "| target | measured | |\n|---|---|---|");
    if results.has("coreutils") {
        coreutils::targets(md, results, native);
    }
    libs::targets(md, results);
    unixbench::targets(md, results);
    large::targets(md, results, native);
    boot::targets(md, results);
    md.push('\n');
}

/// The headline ratios of each kernel's run, one column per kernel: what a reader compares
/// first. Each kernel's own section follows with everything it measured.
pub fn side_by_side(kernels: &[(&str, &Results)]) -> String {
    let mut md = String::from("# elfsig benchmarks, kernel by kernel\n\n");
    md.push_str(
        "Each kernel's VMs ran the same initramfs and configurations (one kernel after the other; in a smoke run, \
         side by side); ratios are against that kernel's own `baseline`, interleaved in the same runs. Medians over the coreutils \
         programs; totals over the runs for the `libs` cases.\n\n",
    );
    let _ = write!(md, "| measure |");
    for (name, _) in kernels {
        let _ = write!(md, " {name} |");
    }
    md.push_str("\n|---|");
    md.push_str(&"---:|".repeat(kernels.len()));
    md.push('\n');
    let mut row = |label: &str, value: &dyn Fn(&Results) -> Option<f64>| {
        let _ = write!(md, "| {label} |");
        for (_, results) in kernels {
            match value(results) {
                Some(v) if v.is_finite() => {
                    let _ = write!(md, " {v:.3}x |");
                }
                _ => md.push_str(" - |"),
            }
        }
        md.push('\n');
    };
    for config in ["elfsig-warm", "elfsig-cold", "ima"] {
        row(&format!("coreutils, {config}"), &|r: &Results| {
            let ratios: Vec<f64> =
                r.cases("coreutils").iter().map(|program| coreutils_ratio(r, program, config)).collect();
            (!ratios.is_empty()).then(|| median(&ratios))
        });
    }
    let cases: Vec<String> = kernels.first().map(|(_, r)| r.cases("libs")).unwrap_or_default();
    for case in &cases {
        for config in ["elfsig-warm", "ima"] {
            row(&format!("libs {case}, {config}"), &|r: &Results| {
                r.cases("libs").contains(case).then(|| libs_ratio(r, case, config))
            });
        }
    }
    md.push('\n');
    md
}

/// The three views of one kernel's coreutils figures side by side: instructions, host time,
/// and the native projection of a first exec; and why they differ.
pub fn figures_compared(kernel: &str, instructions: &Results, host: &Results, native: &Native) -> String {
    let mut md = format!(
        "## Three figures for {kernel}

"
    );
    md.push_str("| coreutils, median over the programs | instructions | host time | projected natively |\n|---|---:|---:|---:|\n");
    let median_ratio = |results: &Results, config: &str| {
        let ratios: Vec<f64> = results.cases("coreutils").iter().map(|p| coreutils_ratio(results, p, config)).collect();
        if ratios.is_empty() { "-".to_owned() } else { format!("{:.3}x", median(&ratios)) }
    };
    for config in ["elfsig-warm", "elfsig-cold", "ima"] {
        let projected = if config == "elfsig-cold" {
            let ratios: Vec<f64> =
                COREUTILS.iter().filter_map(|p| projected_cold_ratio(native, p, Misses::ProgramAndLdSo)).collect();
            if ratios.is_empty() { "-".to_owned() } else { format!("{:.3}x", median(&ratios)) }
        } else {
            "-".to_owned()
        };
        let _ = writeln!(
            md,
            "| {config} | {} | {} | {projected} |",
            median_ratio(instructions, config),
            median_ratio(host, config)
        );
    }
    md.push_str(
        "\nWhere they agree, the cost is what elfsig adds to the exec path, and all three see it alike: a warm \
         verdict is one cache lookup. Where they disagree, it is what each counts. A first exec (`elfsig-cold`) \
         hashes the program, ld.so and every library: the emulated CPU has no SHA extensions, so the kernel's \
         generic SHA-256 runs tens of instructions per byte, each counted, and the instruction figure is the \
         largest; under emulation those plain arithmetic instructions are cheap next to the exec path's page \
         faults and TLB work, which TCG emulates at great cost, so host time shows less; the native projection \
         (criterion's exec path and OpenSSL's RSA on the host CPU, with SHA-NI) is what real hardware pays. \
         The instruction figure is the one a repeat run reproduces; read it for changes in elfsig's own work, \
         and the native projection for what a first exec costs on a real machine.\n\n",
    );
    md
}
