//! `cargo xtask bench`: builds what is missing, measures natively and in the bench VM, and
//! writes `target/bench/latest/` (and a dated copy): `results.csv` with every raw measurement,
//! `report.md`, `chart.svg`.
//!
//! Two VMs, one per host CPU, run `bench/` (the `elfsig-bench` program) as their init: each
//! measures every other round and interleaves the four configurations within it; the host
//! merges both. `--quick` does fewer repetitions of every suite.

mod chart;
pub mod native;
mod report;
mod results;
mod stage;

use std::fs;
use std::time::Instant;

use crate::cmd::Cmd;
use crate::deps::{self, Need};
use crate::vm::qemu;
use crate::{Result, flags, keys, kmod, paths, tools};
use elfsig_guest::image;

/// What the bench needs besides the kernel build tools.
const BENCH_PACKAGES: &[Need] = &[
    Need::Deb("qemu-system-x86"),
    Need::Deb("busybox-static"),
    Need::Deb("ima-evm-utils"),
    Need::Deb("openssl"),
    Need::Deb("rsync"),
    Need::Deb("coreutils"),
    Need::Deb("grep"),
    Need::Deb("procps"),
    Need::Deb("less"),
    Need::Deb("mount"),
    Need::Deb("tar"),
    // The libs suite: its libraries are built with gcc; python3's C extension modules.
    Need::Deb("gcc"),
    Need::Deb("libc6-dev"),
    Need::Deb("python3.11"),
];

/// How many bench VMs run at once.
const VMS: usize = 2;

/// Runs the task.
pub fn run(options: &flags::Bench) -> Result {
    let suites: Vec<&str> = options.suite.iter().map(String::as_str).collect();
    if let Some(unknown) = suites.iter().find(|s| !SUITES.contains(s)) {
        return Err(format!("unknown suite {unknown:?}; the suites are {}", SUITES.join(", ")));
    }
    bench(options.quick, &suites)
}

/// The VM's suites, as `--suite` names them.
const SUITES: [&str; 6] = ["coreutils", "libs", "exec", "unixbench", "apps", "large"];

/// The bench, full or quick; every suite, or those named.
pub fn bench(quick: bool, suites: &[&str]) -> Result {
    let start = Instant::now();
    let started = Cmd::new("date").args(["-u", "+%Y-%m-%dT%H-%M-%SZ"]).read()?.trim().to_owned();
    deps::ensure(BENCH_PACKAGES)?;
    deps::ensure(deps::GUARD_PACKAGES)?;
    // Natively first, while nothing else runs.
    let native = native::measure(quick)?;

    let elfsig = tools::build_cli()?;
    let keys = keys::test_keys(&elfsig)?;
    let (kernel, ko) = kmod::for_tests(crate::kernel::Flavor::Release, &keys)?;
    let program = tools::build_static("elfsig-bench")?;
    let initramfs = stage::initramfs(&elfsig, &program, &ko, &keys)?;
    // Emulated guests do not run exec-heavy work faster with more CPUs, but two one-CPU
    // guests do twice the work of one.
    let labels: Vec<String> = (0..VMS).map(|i| format!("bench-{i}")).collect();
    let appends: Vec<String> = (0..VMS)
        .map(|i| {
            let only = if suites.is_empty() {
                String::new()
            } else {
                format!(" {}={}", image::BENCH_SUITES, suites.join(","))
            };
            format!("{}={} {}={i}/{VMS}{only}", image::BENCH_QUICK, u8::from(quick), image::BENCH_PART)
        })
        .collect();
    let boots: Vec<qemu::Boot<'_>> = (0..VMS)
        .map(|i| qemu::Boot {
            kernel: &kernel.bzimage,
            initramfs: &initramfs,
            append: &appends[i],
            timeout_secs: if quick { 1500 } else { 3000 },
            memory_mb: 3072,
            cpus: 1,
            label: &labels[i],
        })
        .collect();
    let runs = qemu::boot_all(&boots)?;
    let consoles: Vec<(&str, &str)> = labels.iter().zip(&runs).map(|(l, r)| (l.as_str(), r.console.as_str())).collect();
    let results = results::Results::parse_all(&consoles)?;
    results.check_complete(if suites.is_empty() { &SUITES } else { suites })?;

    let meta = report::Meta {
        quick,
        accel: runs.first().map_or("tcg", |r| r.accel).to_owned(),
        started: started.clone(),
        seconds: start.elapsed().as_secs_f64(),
    };
    let dir = paths::target().join("bench").join(&started);
    fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let report = report::markdown(&results, &native, &meta);
    for (name, contents) in
        [("results.csv", results.csv()), ("report.md", report.clone()), ("chart.svg", chart::svg(&results))]
    {
        fs::write(dir.join(name), contents).map_err(|e| format!("cannot write {name}: {e}"))?;
    }
    let latest = paths::target().join("bench/latest");
    let _ = fs::remove_dir_all(&latest);
    fs::create_dir_all(&latest).map_err(|e| format!("cannot create {}: {e}", latest.display()))?;
    for name in ["results.csv", "report.md", "chart.svg"] {
        fs::copy(dir.join(name), latest.join(name)).map_err(|e| format!("cannot copy {name}: {e}"))?;
    }
    print!("{report}");
    eprintln!("xtask: report in {} (and {})", latest.join("report.md").display(), dir.display());
    Ok(())
}
