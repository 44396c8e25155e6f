//! The `boot` suite, inside the signed Debian system: `cargo xtask bench` boots the same image
//! once per configuration and run (`elfsig_bench=CONFIG,RUN` on the kernel command line), and a
//! unit runs `elfsig-bench boot` once systemd has started. It reports how long the boot took
//! (systemd's own timestamps), times the Debian workload right after, when every program and
//! library it uses is met for the first time, and reads what the module verified. With
//! `,upgrade`, it then times the system's upgrade from its signed archive (`apt-get update`,
//! `upgrade`, `install`): in `baseline` with elfsig's package gate taken out first, so that
//! the two configurations are a host without elfsig and one with all of it. With
//! `,containers`, after that, it times podman: loading the signed image the system holds,
//! containers' start and end (`podman run --rm IMAGE true`) and a short workload in one.
//!
//! - `baseline`: `elfsig=off`, the module not loaded;
//! - `elfsig`: the module loaded from the initramfs, enforcing, locked, its guard attached;
//! - `ima`: `elfsig=off`, and IMA appraising the root file system's programs and executable
//!   mappings (`elfsig-bench boot-ima`, run from the initramfs before the root runs anything,
//!   loads the policy and the key; the files carry evmctl's `security.ima` signatures). It
//!   does not upgrade: the archive's packages carry no IMA signature, and IMA would refuse what
//!   they install.

use std::path::Path;
use std::time::Instant;

use elfsig_control::{Control, Mode};
use elfsig_guest::debian::{self, WORKLOAD};
use elfsig_guest::harness::{self, Context, Stats, ensure};
use elfsig_guest::image;
use elfsig_guest::image::GATE_HOOK;

use crate::console::emit;
use crate::function_time;
use crate::ima;

const SUITE: &str = "boot";
/// Left by [`load_ima`], in the initramfs's `/run`, which becomes the root's.
const IMA_LOADED: &str = "/run/elfsig-bench-ima";
/// A copy of a program, without IMA's signature.
const PROBE: &str = "/root/elfsig-bench-probe";

/// Measures this boot, reports, and ends the VM.
pub(crate) fn measure() {
    let result = run();
    if let Err(e) = &result {
        println!("{}{e}", image::BENCH_ERROR);
    }
    println!("{}{}", image::BENCH_DONE, if result.is_ok() { "ok" } else { "failed" });
    debian::end();
}

/// From the initramfs: loads the `ima` configuration's key and policy, when the kernel command
/// line asks for it. Exits non-zero on failure, which the initramfs script reports.
pub(crate) fn load_ima() {
    let wanted = elfsig_guest::cmdline(image::BOOT_BENCH).is_some_and(|w| w.starts_with("ima,"));
    if !wanted {
        return;
    }
    let loaded = std::fs::read(image::BOOT_IMA_CERT).context(image::BOOT_IMA_CERT).and_then(|der| {
        let policy = std::fs::read_to_string(image::BOOT_IMA_POLICY).context(image::BOOT_IMA_POLICY)?;
        ima::load(&der, &policy)?;
        std::fs::write(IMA_LOADED, &policy).context(IMA_LOADED)
    });
    if let Err(e) = loaded {
        eprintln!("elfsig-bench: cannot set IMA up: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    let word = elfsig_guest::cmdline(image::BOOT_BENCH).ok_or("no elfsig_bench= on the kernel command line")?;
    let Word { config, run, smoke, upgrade, containers } = Word::parse(&word).ok_or_else(|| {
        format!("{}={word}: expected CONFIG,RUN, then ,smoke, ,upgrade and ,containers if asked", image::BOOT_BENCH)
    })?;
    debian::booted()?;
    let (before_systemd, finished) = systemd_times()?;
    configured_as(&config)?;
    // The counters as the initramfs ended, and as the boot ended, copied before this program ran.
    let in_initramfs = module_stats(&config, &Control::at(format!("/run/{}", image::BOOT_BENCH_INITRAMFS)))?;
    let at_boot = module_stats(&config, &Control::at(format!("/run/{}", image::BOOT_BENCH_RUN)))?;
    let (initramfs_start, initramfs_start_idle) = initramfs_uptime("uptime-start")?;
    let (initramfs_end, initramfs_idle) = initramfs_uptime("uptime")?;

    let started = Instant::now();
    let mut cases = Vec::new();
    // A smoke run checks that every row comes, not how long the workload takes: its first case.
    let workload = if smoke { &WORKLOAD[..1] } else { &WORKLOAD[..] };
    for (id, name, steps) in workload {
        let case = Instant::now();
        debian::run_case(steps).map_err(|e| format!("workload, {name}: {e}"))?;
        cases.push((id, case.elapsed()));
    }
    let workload = started.elapsed();
    let after = module_stats(&config, &Control::system())?;
    // Nothing may have been refused, or the workload was not the same in every configuration.
    if let (Some(at_boot), Some(after)) = (&at_boot, &after) {
        nothing_refused(after)?;
        if let Some(in_initramfs) = &in_initramfs {
            emit_stats(&config, run, "in-initramfs", in_initramfs);
        }
        emit_stats(&config, run, "at-boot", at_boot);
        emit_stats(&config, run, "after-workload", after);
        emit(SUITE, "module-memory-peak", &config, run, count(after, "memory_peak") as f64, "bytes");
    }
    ima_appraises(&config)?;

    emit("meta", "sha256-ni", &config, run, f64::from(u8::from(crate::sha256::uses_sha_ni())), "bool");
    emit(SUITE, "boot-to-default-target", &config, run, finished, "s");
    emit(SUITE, "kernel-and-initramfs", &config, run, before_systemd, "s");
    emit(SUITE, "systemd-to-default-target", &config, run, finished - before_systemd, "s");
    emit(SUITE, "initramfs-end", &config, run, initramfs_end, "s");
    emit(SUITE, "initramfs-idle", &config, run, initramfs_idle, "s");
    emit(SUITE, "initramfs-scripts", &config, run, initramfs_end - initramfs_start, "s");
    emit(SUITE, "initramfs-scripts-idle", &config, run, initramfs_idle - initramfs_start_idle, "s");
    emit(SUITE, "workload", &config, run, workload.as_secs_f64() * 1000.0, "ms");
    for (id, elapsed) in cases {
        emit(SUITE, &format!("workload-{id}"), &config, run, elapsed.as_secs_f64() * 1000.0, "ms");
    }
    systemd_account(&config, run);
    if upgrade {
        measure_upgrade(&config, run)?;
    }
    if containers {
        measure_containers(&config, run)?;
    }
    if config == "baseline" {
        measure_loading(run)?;
    }
    Ok(())
}

/// In `baseline`, once everything else is measured: what loading elfsig costs, step by step as
/// the initramfs does it (kmod/boot/initramfs-tools/scripts/init-top/elfsig): the module (the
/// kernel checking its signature, reading its BTF, its init), the signed policy, and the
/// mapping guard (finding the hooks in the kernel's BTF, the BPF verifier, attaching). The
/// guard's own verification is left out, as the boot leaves it out: the initramfs's copy, there
/// before the module, is trusted (`trust_initramfs`); this one, on the root file system, is
/// verified by a first run that is not timed.
fn measure_loading(run: usize) -> Result<(), String> {
    let step = |case: &str, work: &dyn Fn() -> Result<(), String>| -> Result<(), String> {
        let started = Instant::now();
        work().map_err(|e| format!("loading elfsig, {case}: {e}"))?;
        emit(SUITE, case, "baseline", run, started.elapsed().as_secs_f64() * 1000.0, "ms");
        Ok(())
    };
    let runs = |program: &str, args: &[&str]| -> Result<(), String> {
        let out = harness::run(program, args).context(program)?;
        ensure(out.status.success(), || {
            format!("{program} exited with {}: {}", out.status, String::from_utf8_lossy(&out.stderr).trim())
        })
    };
    // The first RSA signature the kernel checks after boot (the module's certificates' own, as
    // it adds them at init) makes it build and self-test the algorithm: timed apart.
    let ((loaded, ms), self_test) = function_time::around(CRYPTO_SELF_TEST, || {
        let started = Instant::now();
        let loaded = runs("/usr/sbin/modprobe", &["elfsig"]);
        (loaded, started.elapsed().as_secs_f64() * 1000.0)
    })
    .map_err(|e| format!("loading elfsig, tracing {CRYPTO_SELF_TEST}: {e}"))?;
    loaded.map_err(|e| format!("loading elfsig, load-module: {e}"))?;
    emit(SUITE, "load-module", "baseline", run, ms, "ms");
    emit(SUITE, "load-module-crypto-self-test", "baseline", run, self_test, "ms");
    step("load-policy", &|| {
        let policy = std::fs::read(image::DISTRO_POLICY).context(image::DISTRO_POLICY)?;
        let control = Control::system().dir().join("policy");
        std::fs::write(&control, policy).context(&control.display().to_string())
    })?;
    runs("/usr/sbin/elfsig-guard", &["--help"]).map_err(|e| format!("loading elfsig, the guard's first run: {e}"))?;
    let started = Instant::now();
    let out = harness::run("/usr/sbin/elfsig-guard", &["--verbose"]).context("elfsig-guard")?;
    let total = started.elapsed().as_secs_f64() * 1000.0;
    let said = String::from_utf8_lossy(&out.stderr);
    ensure(out.status.success(), || {
        format!("loading elfsig, attach-guard: elfsig-guard exited with {}: {}", out.status, said.trim())
    })?;
    emit(SUITE, "attach-guard", "baseline", run, total, "ms");
    for (case, steps) in GUARD_STEPS {
        let ms = steps
            .iter()
            .map(|name| {
                guard_step(&said, name).ok_or_else(|| format!("elfsig-guard --verbose did not say {name:?}: {said}"))
            })
            .sum::<Result<f64, String>>()?;
        emit(SUITE, case, "baseline", run, ms, "ms");
    }
    Ok(())
}

/// The kernel function that self-tests a crypto algorithm it has just built (crypto/testmgr.c,
/// called by algboss.c's `cryptomgr_test`, which ends its thread and so never returns).
const CRYPTO_SELF_TEST: &str = "alg_test";

/// The parts of attaching the guard, from `elfsig-guard --verbose`'s top-level steps (guard/src/load.rs).
const GUARD_STEPS: [(&str, &[&str]); 3] = [
    ("attach-guard-btf", &["read vmlinux's BTF", "find the module's BTF", "find the hooks and kfuncs"]),
    ("attach-guard-verifier", &["kfunc filter", "fmod_ret", "load", "sealed"]),
    ("attach-guard-attach", &["attach"]),
];

/// The milliseconds `elfsig-guard --verbose` gave step `name` (`[    1.0 ms] elfsig-guard: load: 12.3 ms`).
fn guard_step(said: &str, name: &str) -> Option<f64> {
    said.lines().find_map(|line| {
        let (_, rest) = line.split_once("] elfsig-guard: ")?;
        rest.strip_prefix(name)?.strip_prefix(": ")?.strip_suffix(" ms")?.parse().ok()
    })
}

/// Nothing was refused (one mapping is elfsig-guard's own check that the guard works: its
/// canary), or the work was not the same in every configuration.
fn nothing_refused(stats: &Stats) -> Result<(), String> {
    let (denied, mappings) = (count(stats, "denied"), count(stats, "mmap_denied"));
    ensure(denied == 0 && mappings <= 1, || {
        format!("the module refused {denied} execs and {mappings} mappings (1: the guard's canary)")
    })
}

/// How many containers [`measure_containers`] starts after the first.
const CONTAINER_STARTS: usize = 4;

/// Times podman with the signed image the system holds (`cargo xtask distro`'s): its load, a
/// container's start and end (`podman run --rm IMAGE true`: the first meets the image's files
/// for the first time, the next ones find their verdicts cached), and a short workload in one
/// (a pipeline over /usr/bin, perl's XS modules, gzip); in `elfsig`, nothing refused.
fn measure_containers(config: &str, run: usize) -> Result<(), String> {
    const TAG: &str = "localhost/elfsig-bench";
    let run_in = format!("podman run --rm --network none {TAG}");
    let timed = |case: &str, script: &str| -> Result<f64, String> {
        let started = Instant::now();
        debian::shell_runs(script, "").map_err(|e| format!("containers, {case}: {e}"))?;
        Ok(started.elapsed().as_secs_f64() * 1000.0)
    };
    let load = timed(
        "load",
        &format!(
            "podman load --input {}/{} > /run/elfsig-bench-load && \
             podman tag \"$(sed -n 's/^Loaded image[^:]*: //p' /run/elfsig-bench-load | cut -d, -f1)\" {TAG}",
            image::CONTAINER_IMAGES,
            image::CONTAINER_SIGNED
        ),
    )?;
    emit(SUITE, "containers-load", config, run, load, "ms");
    let first = timed("first start", &format!("{run_in} true"))?;
    emit(SUITE, "container-start-first", config, run, first, "ms");
    let mut starts = Vec::with_capacity(CONTAINER_STARTS);
    for _ in 0..CONTAINER_STARTS {
        starts.push(timed("start", &format!("{run_in} true"))?);
    }
    emit(SUITE, "container-start", config, run, starts.iter().sum::<f64>() / starts.len() as f64, "ms");
    let workload = timed(
        "workload",
        &format!(
            "{run_in} sh -c 'ls -l /usr/bin | sort | sha256sum && perl -MPOSIX -e \"print POSIX::floor(7.5)\" && \
             tar -cf - /usr/lib/x86_64-linux-gnu/perl-base | gzip | wc -c'"
        ),
    )?;
    emit(SUITE, "container-workload", config, run, workload, "ms");
    if let Some(after) = module_stats(config, &Control::system())? {
        nothing_refused(&after)?;
    }
    Ok(())
}

/// Times the upgrade from the system's signed archive, step by step, and in `elfsig` reads what
/// the module verified by its end.
fn measure_upgrade(config: &str, run: usize) -> Result<(), String> {
    if config == "baseline" {
        // A host without elfsig: no APT hook, and dpkg's verification slot off again as Debian
        // ships it.
        debian::shell_runs(&format!("rm {GATE_HOOK} && sed -i 's/^#no-debsig$/no-debsig/' /etc/dpkg/dpkg.cfg"), "")?;
    }
    let started = Instant::now();
    for (id, script) in debian::upgrade_steps() {
        let step = Instant::now();
        let out = debian::sh(&format!("{script} 2>&1")).context(&script)?;
        let output = String::from_utf8_lossy(&out.stdout);
        ensure(out.status.success(), || {
            let lines: Vec<&str> = output.lines().collect();
            format!("upgrade, `{script}` failed: {}", lines[lines.len().saturating_sub(10)..].join(" | "))
        })?;
        emit(SUITE, &format!("upgrade-{id}"), config, run, step.elapsed().as_secs_f64() * 1000.0, "ms");
    }
    emit(SUITE, "upgrade", config, run, started.elapsed().as_secs_f64() * 1000.0, "ms");
    if let Some(after) = module_stats(config, &Control::system())? {
        nothing_refused(&after)?;
        emit_stats(config, run, "after-upgrade", &after);
    }
    Ok(())
}

/// What [`image::BOOT_BENCH`]'s value asks for: `CONFIG,RUN`, then `,smoke`, `,upgrade` and
/// `,containers` if asked, in that order.
#[derive(Debug, PartialEq, Eq)]
struct Word {
    config: String,
    run: usize,
    /// Times the workload's first case only.
    smoke: bool,
    /// Times the upgrade from the archive after the workload.
    upgrade: bool,
    /// Times podman's containers after the workload.
    containers: bool,
}

impl Word {
    fn parse(word: &str) -> Option<Word> {
        let mut fields = word.split(',');
        let config = fields.next().filter(|c| !c.is_empty())?.to_owned();
        let run = fields.next()?.parse::<usize>().ok()?;
        let mut rest = fields.peekable();
        let smoke = rest.next_if_eq(&"smoke").is_some();
        let upgrade = rest.next_if_eq(&"upgrade").is_some();
        let containers = rest.next_if_eq(&"containers").is_some();
        match rest.next() {
            None => Some(Word { config, run, smoke, upgrade, containers }),
            Some(_) => None,
        }
    }
}

/// When systemd started, and when it reached its default target: seconds since the kernel
/// started (CLOCK_MONOTONIC), as `systemd-analyze` counts them.
fn systemd_times() -> Result<(f64, f64), String> {
    let out = harness::run(
        "/usr/bin/systemctl",
        &["show", "-p", "UserspaceTimestampMonotonic", "-p", "FinishTimestampMonotonic"],
    )
    .context("systemctl show")?;
    let text = String::from_utf8_lossy(&out.stdout);
    let property = |name: &str| -> Result<f64, String> {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix('=')?.parse::<u64>().ok())
            .filter(|us| *us > 0)
            .map(|us| us as f64 / 1e6)
            .ok_or_else(|| format!("systemctl show: no {name} in {text:?}"))
    };
    Ok((property("UserspaceTimestampMonotonic")?, property("FinishTimestampMonotonic")?))
}

/// systemd's own account of the boot, on the console for whoever reads the log (not measured:
/// the report's rows come from the timestamps above): the chain of units the default target
/// waited on, and each unit's start, slowest first. Run after the workload, which it would
/// otherwise lengthen by its own first exec.
fn systemd_account(config: &str, run: usize) {
    for what in ["critical-chain", "blame"] {
        match harness::run("/usr/bin/systemd-analyze", &[what, "--no-pager"]) {
            Ok(out) => {
                // On failure, what it said on standard error instead: the log says why the account is missing.
                let said = if out.status.success() { &out.stdout } else { &out.stderr };
                for line in String::from_utf8_lossy(said).lines().take(60) {
                    println!("elfsig-bench: {config} {run} systemd-analyze {what}: {line}");
                }
            }
            Err(e) => println!("elfsig-bench: {config} {run} systemd-analyze {what}: {e}"),
        }
    }
}

/// The system runs the configuration it was booted for.
fn configured_as(config: &str) -> Result<(), String> {
    let loaded = Path::new("/sys/module/elfsig").exists();
    let ima = Path::new(IMA_LOADED).exists();
    match config {
        "baseline" => ensure(!loaded && !ima, || format!("baseline: module loaded {loaded}, IMA set up {ima}")),
        "ima" => ensure(!loaded && ima, || format!("ima: module loaded {loaded}, IMA set up {ima}")),
        "elfsig" => {
            ensure(!ima, || "elfsig: IMA set up too".into())?;
            debian::module_state(Mode::Enforce, true).map_err(|e| format!("elfsig: {e}"))
        }
        other => Err(format!("unknown configuration {other:?}")),
    }
}

/// The module's counters from `control`, in the configuration that loads the module.
fn module_stats(config: &str, control: &Control) -> Result<Option<Stats>, String> {
    if config != "elfsig" {
        return Ok(None);
    }
    let stats = control.stats().map(|s| s.into_map()).map_err(|e| format!("the module's counters: {e}"))?;
    // A copy that failed (the shell hides why) reads as no counters at all, not as zeros.
    ensure(stats.contains_key("cache_misses") && stats.contains_key("bytes_hashed"), || {
        format!("the module's counters from {control:?} lack cache_misses or bytes_hashed: {stats:?}")
    })?;
    Ok(Some(stats))
}

/// `/proc/uptime` as the bench's initramfs scripts copied it to `name`, as init-top ran
/// (`uptime-start`) and as the initramfs ended (`uptime`): the seconds since the kernel started,
/// and those the CPU spent idle, when loading elfsig could have run for free.
fn initramfs_uptime(name: &str) -> Result<(f64, f64), String> {
    let path = format!("/run/{}/{name}", image::BOOT_BENCH_INITRAMFS);
    let text = std::fs::read_to_string(&path).context(&path)?;
    let mut fields = text.split_whitespace().map(str::parse::<f64>);
    match (fields.next(), fields.next()) {
        (Some(Ok(up)), Some(Ok(idle))) => Ok((up, idle)),
        _ => Err(format!("{path}: expected two numbers, read {text:?}")),
    }
}

fn count(stats: &Stats, name: &str) -> u64 {
    stats.get(name).copied().unwrap_or(0)
}

/// What the module did up to `when`: files verified (every verification), distinct files in
/// its cache, bytes hashed (and of them, hashed in the page cache), time spent verifying, execs and executable mappings checked.
fn emit_stats(config: &str, run: usize, when: &str, stats: &Stats) {
    for (name, case, unit, scale) in [
        ("cache_misses", "files-verified", "files", 1.0),
        ("initramfs_trusted", "initramfs-files-trusted", "files", 1.0),
        ("cache_used", "distinct-files-cached", "files", 1.0),
        ("bytes_hashed", "bytes-hashed", "bytes", 1.0),
        ("bytes_hashed_in_cache", "bytes-hashed-in-cache", "bytes", 1.0),
        ("verify_ns", "verify-time", "ms", 1e-6),
        ("hash_ns", "hash-time", "ms", 1e-6),
        ("signature_ns", "signature-time", "ms", 1e-6),
        ("checked", "execs-checked", "execs", 1.0),
        ("mmap_checked", "mappings-checked", "mappings", 1.0),
    ] {
        emit(SUITE, &format!("{case}-{when}"), config, run, count(stats, name) as f64 * scale, unit);
    }
}

/// IMA appraises in the `ima` configuration and in no other: a copy of a program without IMA's
/// signature (but with elfsig's) is refused there and runs elsewhere.
fn ima_appraises(config: &str) -> Result<(), String> {
    // Written anew, not copied: a new file has no extended attributes.
    harness::write_exec(PROBE, &harness::read("/usr/bin/true")?)?;
    let ran = std::process::Command::new(PROBE).status();
    let refused = matches!(&ran, Err(e) if e.raw_os_error() == Some(libc::EACCES));
    let _ = std::fs::remove_file(PROBE);
    if config == "ima" {
        ensure(refused, || format!("ima: a program without IMA's signature was not refused: {ran:?}"))
    } else {
        ensure(matches!(&ran, Ok(s) if s.success()), || format!("{config}: a signed copy of true did not run: {ran:?}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kernel_command_line_word_names_a_configuration_a_run_and_what_else_to_do() {
        let word = |config: &str, run, smoke, upgrade, containers| {
            Some(Word { config: config.to_owned(), run, smoke, upgrade, containers })
        };
        assert_eq!(Word::parse("elfsig,3"), word("elfsig", 3, false, false, false));
        assert_eq!(Word::parse("ima,0,smoke"), word("ima", 0, true, false, false));
        assert_eq!(Word::parse("baseline,1,upgrade"), word("baseline", 1, false, true, false));
        assert_eq!(Word::parse("elfsig,0,smoke,upgrade"), word("elfsig", 0, true, true, false));
        assert_eq!(Word::parse("elfsig,2,upgrade,containers"), word("elfsig", 2, false, true, true));
        assert_eq!(Word::parse("baseline,0,containers"), word("baseline", 0, false, false, true));
        for bad in [
            "",
            "elfsig",
            ",1",
            "elfsig,",
            "elfsig,x",
            "elfsig,1,quick",
            "elfsig,1,smoke,",
            "elfsig,-1",
            "elfsig,1,upgrade,smoke",
            "elfsig,1,containers,upgrade",
            "elfsig,1,smoke,smoke",
        ] {
            assert_eq!(Word::parse(bad), None, "{bad:?}");
        }
    }

    /// The unit's copy of the counters can fail silently (its shell hides why); an empty or
    /// partial copy must fail the run, not read as a boot that verified nothing.
    #[test]
    fn a_failed_copy_of_the_counters_is_refused() {
        let dir = std::env::temp_dir().join(format!("elfsig-bench-stats-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let control = Control::at(&dir);
        for (copy, good) in [("", false), ("checked 3\n", false), ("cache_misses 2\nbytes_hashed 4096\n", true)] {
            std::fs::write(dir.join("stats"), copy).unwrap();
            let read = module_stats("elfsig", &control);
            assert_eq!(read.as_ref().is_ok_and(Option::is_some), good, "{copy:?}: {read:?}");
            assert!(matches!(module_stats("baseline", &control), Ok(None)));
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
