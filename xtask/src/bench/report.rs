//! report.md: the measurements in the shapes of the published studies (per-program ratios,
//! percentages against baseline, mean ± sd), the targets with what was measured against them,
//! and the native projection.

mod boot;

use elfsig_guest::image::BenchEffort;
use std::fmt::Write as _;

use super::native::{COREUTILS, Native};
use super::results::{CONFIGS, Results, mean_sd, median, sum};

/// The earlier C module's published overhead ratios, lowest and highest, for the coreutils table.
const PUBLISHED_C_MODULE: (f64, f64) = (1.35, 3.06);

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
    /// What the guests' clocks counted.
    pub clock: crate::vm::qemu::Clock,
    /// When the run started.
    pub started: String,
    /// How long it took, in seconds.
    pub seconds: f64,
}

/// The ratio of `config` to baseline for one coreutils program (totals over all runs).
pub fn coreutils_ratio(results: &Results, program: &str, config: &str) -> f64 {
    sum(&results.values("coreutils", program, config)) / sum(&results.values("coreutils", program, "baseline"))
}

/// Which verdicts a projected first exec must compute.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Misses {
    /// The program's and ld.so's: `elfsig-cold`, the whole cache emptied.
    ProgramAndLdSo,
    /// The program's only: its first exec on a running system, where ld.so was verified for an
    /// earlier program.
    Program,
}

/// The projected first-exec ratio on this machine, natively: the program's native exec time plus
/// the module's work for the verdicts it misses (criterion's exec path, and one RSA-3072 check
/// each), over the native exec time.
fn projected_cold_ratio(native: &Native, program: &str, misses: Misses) -> Option<f64> {
    let exec = native.exec_us.iter().find(|(p, _)| p == program)?.1;
    let own = native.bench("exec-path", program)?.mean_ns / 1000.0 + native.rsa3072_verify_us;
    let ld_so = match misses {
        Misses::ProgramAndLdSo => native.bench("exec-path", "ld.so")?.mean_ns / 1000.0 + native.rsa3072_verify_us,
        Misses::Program => 0.0,
    };
    Some((exec + own + ld_so) / exec)
}

fn pct(value: f64, base: f64) -> String {
    format!("{:+.1}%", (value / base - 1.0) * 100.0)
}

/// The widest 95% interval a "within noise" verdict can rest on: a wider one would call a real
/// difference noise.
const WIDEST_INTERVAL: f64 = 0.05;

/// The verdict on differences from baseline, each `(difference, 95% interval)` as fractions,
/// that should be noise: not measured without any; not met when one is outside its interval
/// (and above 1%); inconclusive when all are inside but some interval is too wide to tell; met
/// otherwise.
fn within_noise(rows: &[(f64, f64)]) -> &'static str {
    if rows.is_empty() {
        "not measured"
    } else if rows.iter().any(|&(_, interval)| interval.is_nan()) {
        "**inconclusive**: one run, no interval"
    } else if rows.iter().any(|&(diff, interval)| diff.abs() > interval.max(0.01)) {
        met(false)
    } else if rows.iter().any(|&(_, interval)| interval.is_nan() || interval > WIDEST_INTERVAL) {
        "**inconclusive**: an interval is wider than ±5%, rerun on a quiet machine"
    } else {
        met(true)
    }
}

fn met(ok: bool) -> &'static str {
    if ok { "met" } else { "**not met**" }
}

/// The report.
pub fn markdown(results: &Results, native: &Native, meta: &Meta) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "# elfsig benchmarks: {}\n", meta.kernel);
    let _ = write!(
        md,
        "{} run started {}, {:.0} s, QEMU ({}) on {}. Host CPU: {}.",
        meta.effort.pick("Full", "Quick (`--quick`)", "Smoke (`cargo xtask test`: timings not meant to be read)"),
        meta.started,
        meta.seconds,
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
        coreutils(&mut md, results, native);
    }
    if ran("libs") {
        libs(&mut md, results);
    }
    if ran("exec") {
        exec(&mut md, results);
    }
    if ran("keys") {
        keys(&mut md, results);
    }
    if ran("unixbench") {
        unixbench(&mut md, results);
    }
    if ran("apps") {
        apps(&mut md, results);
    }
    if ran("large") {
        large(&mut md, results, native);
    }
    boot::section(&mut md, results, native, &meta.accel);
    native_section(&mut md, native);
    md
}

fn targets(md: &mut String, results: &Results, native: &Native) {
    md.push_str("## Targets\n\n");
    let _ = writeln!(md, "| target | measured | |\n|---|---|---|");
    if results.has("coreutils") {
        coreutils_targets(md, results, native);
    }
    other_targets(md, results, native);
    boot::targets(md, results);
    md.push('\n');
}

/// The coreutils table's targets, measured and projected natively.
fn coreutils_targets(md: &mut String, results: &Results, native: &Native) {
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

/// The targets of the libs, unixbench and large suites, those that ran.
fn other_targets(md: &mut String, results: &Results, native: &Native) {
    let libs_warm = results.cases("libs").into_iter().map(|case| (libs_ratio(results, &case, "elfsig-warm"), case));
    if let Some((worst, case)) = libs_warm.max_by(|a, b| a.0.total_cmp(&b.0)) {
        let _ = writeln!(
            md,
            "| libs: elfsig-warm within 1.02x (libraries checked by the mapping guard) | max {worst:.3}x ({case}) | {} |",
            met(worst <= 1.02)
        );
    }
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

fn coreutils(md: &mut String, results: &Results, native: &Native) {
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

/// The ratio of `config` to baseline for one libs case (totals over all runs).
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

fn libs_ratio(results: &Results, case: &str, config: &str) -> f64 {
    sum(&results.values("libs", case, config)) / sum(&results.values("libs", case, "baseline"))
}

fn libs(md: &mut String, results: &Results) {
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

fn exec(md: &mut String, results: &Results) {
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

/// What the signature's algorithm costs a first exec, in the VM: the same program signed with
/// RSA-3072 and with ECDSA P-256, every exec cold.
fn keys(md: &mut String, results: &Results) {
    md.push_str(
        "## keys: a first exec by signature algorithm

The exec suite's tiny static program, signed \
         with RSA-3072 and with ECDSA P-256, executed alternately with the verdict cache flushed before every \
         exec (`elfsig-cold`): the difference is the kernel's signature verification.\n\n\
         | key | µs per cold exec (mean ± sd) | vs RSA-3072 (95% interval) |\n|---|---:|---:|\n",
    );
    for (key, _) in elfsig_guest::image::BENCH_HELLO_BY_KEY {
        let (mean, sd) = mean_sd(&results.values("keys", "cold-exec", key));
        let versus = match results.paired_difference("keys", "cold-exec", key, "rsa-3072") {
            Some((difference, half)) if key != "rsa-3072" => {
                format!("{:+.1}% ± {:.1}%", difference * 100.0, half * 100.0)
            }
            _ => "-".into(),
        };
        let _ = writeln!(md, "| {key} | {mean:.0} ± {sd:.0} | {versus} |");
    }
    md.push('\n');
}

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

fn unixbench(md: &mut String, results: &Results) {
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

fn apps(md: &mut String, results: &Results) {
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

fn large(md: &mut String, results: &Results, native: &Native) {
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

fn native_section(md: &mut String, native: &Native) {
    md.push_str("## Native measurements on the host\n\n");
    let _ = writeln!(
        md,
        "OpenSSL: SHA-256 {:.0} MB/s (16 KiB blocks); RSA-3072 verification {:.1} µs.\n",
        native.sha256_mbps, native.rsa3072_verify_us
    );
    md.push_str("| criterion benchmark | mean time | throughput | vs OpenSSL SHA-256 |\n|---|---:|---:|---:|\n");
    for c in &native.criterion {
        let (throughput, ratio) = match c.bytes {
            Some(bytes) => {
                let mbs = bytes / c.mean_ns * 1000.0;
                (format!("{mbs:.0} MB/s"), format!("{:.0}%", mbs / native.sha256_mbps * 100.0))
            }
            None => (String::new(), String::new()),
        };
        let _ = writeln!(md, "| {}/{} | {:.3} ms | {throughput} | {ratio} |", c.group, c.name, c.mean_ns / 1e6);
    }
    md.push_str(
        "\n`verify/*` is `elfsig verify`'s work (parse, hash, RSA in the rsa crate); `sign/*` signs a directory \
         on one core and on all; `exec-path/*` is what the module does on a cache miss minus the PKCS#7 check \
         (locate, read the payload, hash), on the programs of the coreutils table and ld.so.\n\n",
    );
    md.push_str(
        "| program | native exec | module work (program + ld.so + 2 RSA checks) | projected elfsig-cold | \
         projected first exec, ld.so verified already |\n|---|---:|---:|---:|---:|\n",
    );
    for program in COREUTILS {
        let Some(exec) = native.exec_us.iter().find(|(p, _)| *p == program).map(|(_, t)| *t) else { continue };
        let Some(cold) = projected_cold_ratio(native, program, Misses::ProgramAndLdSo) else { continue };
        let Some(first) = projected_cold_ratio(native, program, Misses::Program) else { continue };
        let _ = writeln!(md, "| {program} | {exec:.0} µs | {:.0} µs | {cold:.3}x | {first:.3}x |", exec * (cold - 1.0));
    }
    md.push('\n');
}

#[cfg(test)]
mod tests {
    use super::within_noise;

    #[test]
    fn noise_is_met_only_when_every_interval_is_narrow_enough_to_tell() {
        assert_eq!(within_noise(&[(0.004, 0.02), (-0.01, 0.03)]), "met");
        assert_eq!(within_noise(&[(0.03, 0.01)]), "**not met**");
        // The loaded machine's row: +78.4% ± 136.9% is no evidence of anything.
        assert!(within_noise(&[(0.784, 1.369)]).starts_with("**inconclusive**"));
        assert!(within_noise(&[(0.0, 0.02), (0.001, f64::NAN)]).starts_with("**inconclusive**"));
        // One run: no interval, whatever the difference.
        assert!(within_noise(&[(0.3, f64::NAN)]).starts_with("**inconclusive**"));
        // A difference outside its interval is measured, however wide another interval is.
        assert_eq!(within_noise(&[(0.2, 0.1), (0.0, 0.9)]), "**not met**");
        assert_eq!(within_noise(&[]), "not measured");
    }
}
