//! `cargo xtask bench`: builds what is missing, measures natively and in the bench VM, and
//! writes `target/bench/latest/` (and a dated copy): `results.csv` with every raw measurement,
//! `report.md`, `chart.svg`.
//!
//! Two VMs, one per host CPU, run `bench/` (the `elfsig-bench` program) as their init: each
//! measures every other round and interleaves the four configurations within it; the host
//! merges both. `--quick` does fewer repetitions of every suite; `--smoke` (what `cargo xtask
//! test` runs, on Debian's kernel) is just long enough for every suite to produce its rows: one
//! VM per kernel, the instruction clock alone. It runs on the 6.12 test kernel and then on
//! Debian's stock 7.2 kernel (`--kernel` for one), and report.md puts the kernels side by side
//! before each one's own sections (`results-debian-7.2.csv`, `chart-debian-7.2.svg` for
//! Debian's, the `boot` suite's rows among them).

mod boot;
mod chart;
mod figure;
pub mod native;
mod report;
mod results;
mod signing;
mod stage;

use std::fs;
use std::path::Path;
use std::time::Instant;

use self::figure::figure;
use crate::cmd::Cmd;
use crate::deps::{self, Need};
use crate::vm::{self, Kernels, qemu};
use crate::{Result, debian_kernel, flags, keys, kmod, paths, tools};
use elfsig_guest::image::{self, BenchEffort};

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
    if let Some(unknown) = suites.iter().find(|s| !SUITES.contains(s) && **s != BOOT && **s != SIGNING) {
        return Err(format!("unknown suite {unknown:?}; the suites are {}, {BOOT}, {SIGNING}", SUITES.join(", ")));
    }
    let kernels = Kernels::parse(options.kernel.as_deref(), Kernels::Both)?;
    if suites.contains(&BOOT) && !kernels.debian() {
        return Err(format!(
            "the {BOOT} suite boots Debian's kernel only: drop --kernel, or use --kernel {}",
            debian_kernel::NAME
        ));
    }
    let effort = match (options.quick, options.smoke) {
        (true, true) => return Err("--quick and --smoke are two efforts: pick one".into()),
        (true, false) => BenchEffort::Quick,
        (false, true) => BenchEffort::Smoke,
        (false, false) => BenchEffort::Full,
    };
    bench(effort, &suites, kernels)
}

/// The bench VM's suites, as `--suite` names them.
const SUITES: [&str; 6] = ["coreutils", "libs", "exec", "unixbench", "apps", "large"];
/// The suite that boots the signed Debian 13 system instead (on Debian's kernel only: the
/// system's own).
const BOOT: &str = boot::SUITE;
/// The suite that measures signing on the host.
const SIGNING: &str = signing::SUITE;

/// A kernel the bench runs on: how the report names it, and what its files' names carry
/// (`results-debian-7.2.csv`; nothing for the test kernel).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Benched {
    name: String,
    suffix: String,
}

impl Benched {
    fn test() -> Benched {
        Benched { name: "the 6.12 test kernel (no debug options)".to_owned(), suffix: String::new() }
    }

    fn debian() -> Benched {
        Benched {
            name: format!("Debian's {} kernel", debian_kernel::RELEASE),
            suffix: format!("-{}", debian_kernel::NAME),
        }
    }
}

/// One kernel's bench run, with one clock.
struct KernelRun {
    kernel: Benched,
    results: results::Results,
    accel: String,
    /// What the guests' clocks counted.
    clock: qemu::Clock,
    seconds: f64,
}

impl KernelRun {
    /// A kernel's run before anything is measured.
    fn empty(kernel: Benched, clock: qemu::Clock) -> KernelRun {
        KernelRun { kernel, results: results::Results::default(), accel: String::new(), clock, seconds: 0.0 }
    }

    /// How the report names the run: the kernel and the figure.
    fn name(&self) -> String {
        format!("{}, {}", self.kernel.name, figure(self.clock).0)
    }

    /// What its files' names end with (`results{suffix}.csv`).
    fn suffix(&self) -> String {
        format!("{}{}", self.kernel.suffix, figure(self.clock).1)
    }
}

/// The bench, full, quick or a smoke run; every suite, or those named; on the test kernel,
/// Debian's, or both, one after the other, reported side by side.
pub fn bench(effort: BenchEffort, suites: &[&str], kernels: Kernels) -> Result {
    let start = Instant::now();
    let started = Cmd::new("date").args(["-u", "+%Y-%m-%dT%H-%M-%SZ"]).read()?.trim().to_owned();
    deps::ensure(BENCH_PACKAGES)?;
    deps::ensure(deps::GUARD_PACKAGES)?;
    // Natively first, while nothing else runs.
    let native = native::measure(effort)?;

    let elfsig = tools::build_cli()?;
    let keys = keys::test_keys(&elfsig)?;
    let program = tools::build_static("elfsig-bench")?;
    // On the host too, before the VMs load it.
    let signing = if suites.is_empty() || suites.contains(&SIGNING) {
        Some(signing::measure(&elfsig, &keys, effort)?)
    } else {
        None
    };
    // Those of the bench VM's suites asked for (all when none is named).
    let vm_suites: Vec<&str> = suites.iter().copied().filter(|s| *s != BOOT && *s != SIGNING).collect();
    let vms = suites.is_empty() || !vm_suites.is_empty();
    // Debian's module first: a failure there (not root, no network) must not come after the
    // test kernel's long run and lose it.
    let debian = if kernels.debian() && vms { Some(vm::debian_module(&keys)?) } else { None };
    let mut runs = Vec::new();
    // A smoke run with Debian's kernel runs the exec suites there alone (the same code measures
    // on either kernel).
    let smoke_on_debian = effort == BenchEffort::Smoke && debian.is_some();
    // The boot suite's image too, before any long run.
    let boot_suite = kernels.debian() && (suites.is_empty() || suites.contains(&BOOT));
    let boot_image = if boot_suite { Some(boot::prepare()?) } else { None };
    // Every kernel twice: its guest clock counting instructions (the figure a repeat run
    // reproduces, whatever the host's load), then the host's time. A smoke run, which checks
    // that every suite gives rows, uses the first alone: the guests run the same either way.
    let test_kernel = if kernels.test() && vms && !smoke_on_debian {
        let (kernel, ko) = kmod::for_tests(crate::kernel::Flavor::Release, &keys)?;
        Some((kernel, stage::initramfs("test", &elfsig, &program, &ko, &keys)?))
    } else {
        None
    };
    let debian_initramfs = match &debian {
        Some((_, ko)) => Some(stage::initramfs("debian", &elfsig, &program, ko, &keys)?),
        None => None,
    };
    let clocks: &[qemu::Clock] = if effort == BenchEffort::Smoke {
        &[qemu::Clock::Instructions]
    } else {
        &[qemu::Clock::Instructions, qemu::Clock::Host]
    };
    for &clock in clocks {
        let mut guests = Vec::new();
        if let Some((kernel, initramfs)) = &test_kernel {
            guests.push(Guests {
                benched: Benched::test(),
                kernel: &kernel.bzimage,
                initramfs,
                cpus: 1,
                extra: String::new(),
            });
        }
        if let (Some((kernel, _)), Some(initramfs)) = (&debian, &debian_initramfs) {
            guests.push(Guests {
                benched: Benched::debian(),
                kernel: &kernel.vmlinuz,
                initramfs,
                cpus: vm::DEBIAN_CPUS,
                extra: format!(" {}=distro", image::KERNEL),
            });
        }
        // A smoke run boots one VM per kernel, the kernels side by side, and the boot suite's
        // VMs beside them (nothing is timed: one VM of one vCPU would leave a host CPU idle); a
        // measuring run, two VMs per kernel, one kernel after the other, then the boot suite.
        let (mut measured, booted) = std::thread::scope(|scope| {
            let boot_meanwhile = boot_image.as_ref().filter(|_| effort == BenchEffort::Smoke);
            let booting = boot_meanwhile.map(|image| scope.spawn(move || measure_boot(image, effort, clock)));
            let mut measured = Vec::new();
            let vms = if effort == BenchEffort::Smoke {
                run_vms(&guests, effort, &vm_suites, clock).map(|runs| measured = runs)
            } else {
                guests.iter().try_for_each(|one| {
                    measured.extend(run_vms(std::slice::from_ref(one), effort, &vm_suites, clock)?);
                    Ok(())
                })
            };
            let booted = match booting {
                Some(thread) => Some(thread.join().unwrap_or_else(|_| Err("the boot suite's thread panicked".into()))),
                None if vms.is_ok() => boot_image.as_ref().map(|image| measure_boot(image, effort, clock)),
                None => None,
            };
            match (vms, booted) {
                // Both failures said, when both failed side by side.
                (Err(vms), Some(Err(boot))) => Err(format!("{vms}\n{boot}")),
                (vms, booted) => vms.map(|()| (measured, booted)),
            }
        })?;
        // The boot suite's rows go with Debian's kernel's, whose system it boots.
        if let Some(booted) = booted {
            let (results, accel, seconds) = booted?;
            let run = match measured.iter().position(|run| run.kernel == Benched::debian()) {
                Some(at) => &mut measured[at],
                None => {
                    measured.push(KernelRun::empty(Benched::debian(), clock));
                    measured.last_mut().ok_or("no run to put the boot suite's rows in")?
                }
            };
            run.results.records.extend(results.records);
            run.accel = accel;
            // Side by side, the run took as long as the longer of the two.
            let side_by_side = effort == BenchEffort::Smoke;
            run.seconds = if side_by_side { run.seconds.max(seconds) } else { run.seconds + seconds };
        }
        runs.extend(measured);
    }
    let dir = paths::target().join("bench").join(&started);
    fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let mut files: Vec<(String, String)> = Vec::new();
    let mut report = String::new();
    if runs.len() > 1 {
        let names: Vec<String> = runs.iter().map(KernelRun::name).collect();
        let kernels: Vec<(&str, &results::Results)> =
            names.iter().zip(&runs).map(|(name, r)| (name.as_str(), &r.results)).collect();
        report.push_str(&report::side_by_side(&kernels));
    }
    // Each kernel's instruction and host-time runs, with the native projection.
    for instructions in runs.iter().filter(|r| r.clock == qemu::Clock::Instructions) {
        let host = runs.iter().find(|r| r.clock == qemu::Clock::Host && r.kernel == instructions.kernel);
        if let Some(host) = host.filter(|_| instructions.results.has("coreutils")) {
            let kernel = &instructions.kernel.name;
            report.push_str(&report::figures_compared(kernel, &instructions.results, &host.results, &native));
        }
    }
    for run in &runs {
        let meta = report::Meta {
            kernel: run.name(),
            suffix: run.suffix(),
            effort,
            accel: run.accel.clone(),
            qemu: crate::deps::qemu_version()
                .map_or("(version unknown)".to_owned(), |(major, minor)| format!("{major}.{minor}")),
            clock: run.clock,
            started: started.clone(),
            seconds: run.seconds,
        };
        let one = report::markdown(&run.results, &native, &meta);
        if runs.len() > 1 {
            // Each kernel's report becomes a section of the whole.
            for line in one.lines() {
                if line.starts_with('#') {
                    report.push('#');
                }
                report.push_str(line);
                report.push('\n');
            }
        } else {
            report.push_str(&one);
        }
        files.push((format!("results{}.csv", run.suffix()), run.results.csv()));
        files.push((format!("chart{}.svg", run.suffix()), chart::svg(&run.results)));
    }
    if let Some(signing) = &signing {
        report.push_str(&signing::markdown(signing));
        files.push(("signing.csv".to_owned(), signing.csv()));
    }
    files.push(("report.md".to_owned(), report.clone()));
    for (name, contents) in &files {
        fs::write(dir.join(name), contents).map_err(|e| format!("cannot write {name}: {e}"))?;
    }
    let latest = paths::target().join("bench/latest");
    let _ = fs::remove_dir_all(&latest);
    fs::create_dir_all(&latest).map_err(|e| format!("cannot create {}: {e}", latest.display()))?;
    for (name, _) in &files {
        fs::copy(dir.join(name), latest.join(name)).map_err(|e| format!("cannot copy {name}: {e}"))?;
    }
    print!("{report}");
    eprintln!(
        "xtask: report in {} (and {}), {:.0} s",
        latest.join("report.md").display(),
        dir.display(),
        start.elapsed().as_secs_f64()
    );
    // Checked once the report is written, which shows what is missing.
    if effort == BenchEffort::Smoke { smoke_checks(&runs) } else { Ok(()) }
}

/// What a smoke run checks of its rows: what the instruction clock counts (hashing as a server
/// CPU runs it), and that the breakdowns of the first exec and of the boot have every row, each
/// a number.
fn smoke_checks(runs: &[KernelRun]) -> Result {
    for run in runs.iter().filter(|run| run.results.has("coreutils")) {
        if let Some(case) = report::coreutils::cold_breakdown_missing(&run.results) {
            return Err(format!("{}: the first exec's breakdown lacks {case}", run.name()));
        }
    }
    for run in runs.iter().filter(|run| run.results.has(boot::SUITE)) {
        let rows = report::breakdown_rows(&run.results).ok_or("the boot suite gave no breakdown of its boot")?;
        if let Some((label, _)) = rows.iter().find(|(_, ms)| !ms.is_finite()) {
            return Err(format!("the boot's breakdown: {label:?} is no number"));
        }
    }
    for run in runs {
        let (with, all) = report::sha_ni_boots(&run.results);
        if with != all || all == 0 {
            return Err(format!(
                "{}: {with} of {all} guests hashed with the x86 SHA extensions; every one must (QEMU 8.2 or \
                 later, -cpu max)",
                run.name()
            ));
        }
    }
    Ok(())
}

/// The boot suite's measurements, the accelerator and the seconds they took.
fn measure_boot(
    image: &crate::distro::image::Image,
    effort: BenchEffort,
    clock: qemu::Clock,
) -> Result<(results::Results, String, f64)> {
    let start = Instant::now();
    let (results, accel) = boot::measure(image, effort, clock)?;
    Ok((results, accel, start.elapsed().as_secs_f64()))
}

/// One kernel's bench VMs: what they boot, and which kernel the report says it is.
struct Guests<'a> {
    benched: Benched,
    kernel: &'a Path,
    initramfs: &'a Path,
    /// vCPUs per VM.
    cpus: u32,
    /// Added to the kernel command line.
    extra: String,
}

/// Boots the bench VMs of every kernel in `guests` at once (two per kernel, one in a smoke run),
/// with their clocks counting as `clock` says, and reads each kernel's measurements.
fn run_vms(guests: &[Guests<'_>], effort: BenchEffort, suites: &[&str], clock: qemu::Clock) -> Result<Vec<KernelRun>> {
    let start = Instant::now();
    // Emulated guests do not run exec-heavy work faster with more CPUs, but two one-CPU
    // guests do twice the work of one. A smoke run's rounds are one VM's work.
    let vms = if effort == BenchEffort::Smoke { 1 } else { VMS };
    let only = if suites.is_empty() { String::new() } else { format!(" {}={}", image::BENCH_SUITES, suites.join(",")) };
    let mut labels = Vec::new();
    let mut appends = Vec::new();
    for guest in guests {
        for i in 0..vms {
            labels.push(format!("bench{}{}-{i}", guest.benched.suffix, figure(clock).1));
            appends.push(format!(
                "{}={} {}={i}/{vms}{only}{}",
                image::BENCH_EFFORT,
                effort.word(),
                image::BENCH_PART,
                guest.extra
            ));
        }
    }
    let boots: Vec<qemu::Boot<'_>> = labels
        .iter()
        .zip(&appends)
        .enumerate()
        .map(|(n, (label, append))| {
            let guest = &guests[n / vms];
            qemu::Boot {
                disk: None,
                kernel: guest.kernel,
                initramfs: guest.initramfs,
                append,
                timeout_secs: effort.pick(3000, 1500, 900),
                memory_mb: 3072,
                cpus: guest.cpus,
                label,
                clock,
                uefi: None,
            }
        })
        .collect();
    let runs = qemu::boot_all(&boots)?;
    let seconds = start.elapsed().as_secs_f64();
    let mut measured = Vec::new();
    for ((guest, labels), runs) in guests.iter().zip(labels.chunks(vms)).zip(runs.chunks(vms)) {
        let consoles: Vec<(&str, &str)> =
            labels.iter().zip(runs).map(|(l, r)| (l.as_str(), r.console.as_str())).collect();
        let results = results::Results::parse_all(&consoles)?;
        results.check_complete(if suites.is_empty() { &SUITES } else { suites })?;
        measured.push(KernelRun {
            kernel: guest.benched.clone(),
            results,
            accel: runs.first().map_or("tcg", |r| r.accel).to_owned(),
            clock,
            seconds,
        });
    }
    Ok(measured)
}
