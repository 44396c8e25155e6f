//! The stress suite (`elfsig.suite=stress`, run on the debug kernel by `cargo xtask stress`).
//!
//! Threads exec files while others replace them (rename over), rewrite them in place and
//! truncate them; meanwhile the verdict cache is flushed, a digest is revoked, the mode is
//! flipped to permissive and back, and the module is unloaded and reloaded. Then the same execs
//! run with allocations and the module's reads failing on purpose. A key is added to the
//! secondary trusted keyring and later removed. Every exec's outcome is
//! checked against what the file could have been at that moment:
//!
//! - `good*` slots only ever hold complete, correctly signed files (each replacement is a new
//!   file renamed over the old one): while the module enforces and no fault is injected, every
//!   exec must run and print the signed program's line;
//! - `mix*` slots hold good, unsigned, modified and badly signed content, replaced, rewritten
//!   and truncated at random: while the module enforces, nothing but the good program may run;
//! - `bad*` files never change and are never good: under injected faults too, they never run;
//! - `revokeme` is good until its digest is revoked, then refused;
//! - `newkey` is signed by a key the kernel trusts only between its addition to the secondary
//!   keyring and its removal (followed by a cache flush).
//!
//! Afterwards the module must unload, the kernel log must hold no BUG, WARNING (KASAN, lockdep
//! and atomic-sleep reports are among them) or Oops, and kmemleak must find nothing of the module's.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::process::Output;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::tamper::{Map, flip};
use elfsig_guest::harness::{
    Context, Outcome, Suite, ensure, grew, kernel_log, keyring, read, stats, unload_when_idle, write_control,
};
use elfsig_guest::system;

const MODULE: &str = "/elfsig.ko";
const DIR: &str = "/tmp/stress";
const GOOD_OUTPUT: &[u8] = b"hello from an elfsig fixture\n";
const WORKERS: usize = 4;
const GOOD_SLOTS: usize = 2;
const MIX_SLOTS: usize = 3;

/// What an exec did.
enum Exec {
    /// The good program ran and printed its line.
    RanGood,
    /// Another program ran: it exited normally or printed something else.
    RanBad(String),
    /// The child died of a signal without printing anything. Under injected faults that can be
    /// the child failing between fork and exec (std aborts when it cannot report a failed
    /// exec), so it is counted apart and not judged there.
    Died(String),
    /// Refused with EACCES.
    Refused,
    /// The exec failed otherwise (ETXTBSY while a file is being written, ENOMEM under faults, ...).
    Failed(i32),
}

impl std::fmt::Display for Exec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Exec::RanGood => f.write_str("ran the good program"),
            Exec::RanBad(what) => write!(f, "ran: {what}"),
            Exec::Died(what) => write!(f, "died: {what}"),
            Exec::Refused => f.write_str("refused"),
            Exec::Failed(errno) => write!(f, "exec failed with errno {errno}"),
        }
    }
}

fn outcome(result: std::io::Result<Output>) -> Exec {
    match result {
        Ok(out) if out.status.success() && out.stdout == GOOD_OUTPUT => Exec::RanGood,
        Ok(out) if out.status.code().is_none() && out.stdout.is_empty() => Exec::Died(out.status.to_string()),
        Ok(out) => Exec::RanBad(format!(
            "{} printing {:?}",
            out.status,
            String::from_utf8_lossy(&out.stdout[..out.stdout.len().min(60)])
        )),
        Err(e) if e.raw_os_error() == Some(libc::EACCES) => Exec::Refused,
        Err(e) => Exec::Failed(e.raw_os_error().unwrap_or(0)),
    }
}

/// The contents the slots cycle through.
struct Contents {
    good: Vec<u8>,
    bad: Vec<(&'static str, Vec<u8>)>,
}

impl Contents {
    /// The signed hello, and signed cstatic (which prints something else) made unsigned,
    /// modified and badly signed.
    fn make() -> Result<Contents, String> {
        let good = read("/t/signed/hello")?;
        let other = read("/t/signed/cstatic")?;
        let map = Map::of(&other)?;
        let (payload, size) = map.payload()?;
        Ok(Contents {
            good,
            bad: vec![
                ("unsigned", flip(&other, payload)),
                ("modified", flip(&other, map.shoff + 64 + 8)),
                ("bad-signature", flip(&other, payload + size - 1)),
            ],
        })
    }
}

/// What the threads share.
struct Shared {
    stop: AtomicBool,
    /// Odd while the module is not enforcing (permissive or unloaded).
    unenforced: AtomicU64,
    faults: AtomicBool,
    revoke_started: OnceLock<Instant>,
    revoke_done: OnceLock<Instant>,
    key_add_started: OnceLock<Instant>,
    key_add_done: OnceLock<Instant>,
    key_remove_started: OnceLock<Instant>,
    key_remove_done: OnceLock<Instant>,
    execs: AtomicU64,
    ran_good: AtomicU64,
    refused: AtomicU64,
    failed: AtomicU64,
    died: AtomicU64,
    /// `newkey` execs that ran, and that were refused: both must happen.
    newkey: [AtomicU64; 2],
    violations: Mutex<Vec<String>>,
}

impl Shared {
    fn violation(&self, message: String) {
        let mut v = self.violations.lock().unwrap_or_else(|e| e.into_inner());
        if v.len() < 20 {
            v.push(message);
        }
    }
}

/// A small deterministic random generator (xorshift), one per thread.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

fn slot(kind: &str, i: usize) -> String {
    format!("{DIR}/{kind}{i}")
}

/// Writes `bytes` as a new file and renames it over `path`.
fn replace(path: &str, bytes: &[u8], tag: usize) -> std::io::Result<()> {
    let tmp = format!("{path}.new{tag}");
    std::fs::write(&tmp, bytes)?;
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755))?;
    std::fs::rename(&tmp, path)
}

/// One exec of a random file, checked.
fn exec_once(shared: &Shared, rng: &mut Rng) {
    let pick = rng.below(GOOD_SLOTS + MIX_SLOTS + 3);
    let (kind, path) = if pick < GOOD_SLOTS {
        ("good", slot("good", pick))
    } else if pick < GOOD_SLOTS + MIX_SLOTS {
        ("mix", slot("mix", pick - GOOD_SLOTS))
    } else if pick == GOOD_SLOTS + MIX_SLOTS {
        ("bad", slot("bad", rng.below(3)))
    } else if pick == GOOD_SLOTS + MIX_SLOTS + 1 {
        ("revokeme", format!("{DIR}/revokeme"))
    } else {
        ("newkey", format!("{DIR}/newkey"))
    };
    let faults = shared.faults.load(Ordering::SeqCst);
    let before = shared.unenforced.load(Ordering::SeqCst);
    let started = Instant::now();
    let result = if faults { system::run_with_faults(&path) } else { std::process::Command::new(&path).output() };
    let after = shared.unenforced.load(Ordering::SeqCst);
    let enforced = before == after && before.is_multiple_of(2);
    let what = outcome(result);
    shared.execs.fetch_add(1, Ordering::Relaxed);
    match what {
        Exec::RanGood => shared.ran_good.fetch_add(1, Ordering::Relaxed),
        Exec::Refused => shared.refused.fetch_add(1, Ordering::Relaxed),
        Exec::Died(_) => shared.died.fetch_add(1, Ordering::Relaxed),
        _ => shared.failed.fetch_add(1, Ordering::Relaxed),
    };
    if kind == "newkey" && !faults {
        match what {
            Exec::RanGood => shared.newkey[0].fetch_add(1, Ordering::Relaxed),
            Exec::Refused => shared.newkey[1].fetch_add(1, Ordering::Relaxed),
            _ => 0,
        };
    }
    if !enforced {
        return;
    }
    // Revoked before this exec started; or not yet being revoked when it ended.
    let revoked = shared.revoke_done.get().is_some_and(|done| started > *done);
    let not_revoked = shared.revoke_started.get().is_none_or(|s| *s > Instant::now());
    // The key was trusted for the whole exec, or not at all.
    let ended = Instant::now();
    let done_before_start = |at: &OnceLock<Instant>| at.get().is_some_and(|t| started > *t);
    let not_begun_by_end = |at: &OnceLock<Instant>| at.get().is_none_or(|t| *t > ended);
    let key_trusted = done_before_start(&shared.key_add_done) && not_begun_by_end(&shared.key_remove_started);
    let key_untrusted = not_begun_by_end(&shared.key_add_started) || done_before_start(&shared.key_remove_done);
    // Without faults, good content always runs; an exec may only fail with ETXTBSY, when a
    // child forked by another thread holds a replacement file open for writing until it execs.
    let ran_or_busy = |o: &Exec| matches!(o, Exec::RanGood) || matches!(o, Exec::Failed(e) if *e == libc::ETXTBSY);
    let wrong = match (kind, &what) {
        // Nothing bad ever runs while enforcing, faults or not. (Under faults a good program in
        // a mixed slot may run and then die of an injected failure: not telling, so not judged.)
        ("bad", Exec::RanBad(_)) => true,
        ("bad" | "mix", Exec::Died(_)) => !faults,
        ("mix", Exec::RanBad(_)) => !faults,
        ("revokeme", Exec::RanGood | Exec::RanBad(_)) => revoked,
        ("good", o) if !faults => !ran_or_busy(o),
        ("revokeme", o) if !faults && not_revoked => !ran_or_busy(o),
        ("newkey", Exec::RanGood | Exec::RanBad(_)) => key_untrusted,
        ("newkey", o) if !faults && key_trusted => !ran_or_busy(o),
        _ => false,
    };
    if wrong {
        shared.violation(format!("{path} ({kind}{}): {what}", if faults { ", faults" } else { "" }));
    }
}

/// Replaces, rewrites and truncates the slots at random.
fn mutate_once(contents: &Contents, rng: &mut Rng, tag: usize) {
    if rng.below(4) == 0 {
        let _ = replace(&slot("good", rng.below(GOOD_SLOTS)), &contents.good, tag);
        return;
    }
    let path = slot("mix", rng.below(MIX_SLOTS));
    let choice = rng.below(contents.bad.len() + 1);
    let bytes = contents.bad.get(choice).map_or(&contents.good[..], |(_, b)| &b[..]);
    // Errors are expected: ETXTBSY while the file runs, ENOENT between renames.
    let _ = match rng.below(3) {
        0 => replace(&path, bytes, tag),
        1 => std::fs::OpenOptions::new().write(true).truncate(true).open(&path).and_then(|mut f| f.write_all(bytes)),
        _ => std::fs::OpenOptions::new().write(true).open(&path).and_then(|f| f.set_len(rng.below(bytes.len()) as u64)),
    };
}

fn set_up(contents: &Contents) -> Outcome {
    std::fs::create_dir_all(DIR).context("create the stress directory")?;
    for i in 0..GOOD_SLOTS {
        replace(&slot("good", i), &contents.good, 0).context("write a good slot")?;
    }
    for i in 0..MIX_SLOTS {
        replace(&slot("mix", i), &contents.good, 0).context("write a mixed slot")?;
    }
    for (i, (_, bytes)) in contents.bad.iter().enumerate() {
        replace(&slot("bad", i), bytes, 0).context("write a bad file")?;
    }
    replace(&format!("{DIR}/revokeme"), &read("/t/signed/revokeme")?, 0).context("write revokeme")?;
    replace(&format!("{DIR}/newkey"), &read("/t/added/hello")?, 0).context("write newkey")?;
    if !std::path::Path::new("/sys/kernel/debug/kmemleak").exists() {
        system::mount("debugfs", "/sys/kernel/debug").context("mount debugfs")?;
    }
    system::load_module(std::path::Path::new(MODULE), "").context("load the module")
}

/// The disturbances, spread over `phase`: cache flushes, a revocation half-way, permissive
/// windows and module reloads.
fn disturb(shared: &Shared, phase: Duration) -> Outcome {
    let start = Instant::now();
    let mut round = 0u32;
    let secondary = keyring(".secondary_trusted_keys")?;
    let mut added = None;
    while start.elapsed() < phase {
        std::thread::sleep(phase / 12);
        round += 1;
        write_control("flush", "1").context("flush")?;
        if round == 3 {
            let cert = read("/t/added.der")?;
            let _ = shared.key_add_started.set(Instant::now());
            added = Some(system::add_key("asymmetric", "", &cert, secondary).context("add a key")?);
            let _ = shared.key_add_done.set(Instant::now());
        }
        if let (9, Some(key)) = (round, added) {
            let _ = shared.key_remove_started.set(Instant::now());
            system::unlink_key(key, secondary).context("remove the key")?;
            write_control("flush", "1").context("flush")?;
            let _ = shared.key_remove_done.set(Instant::now());
        }
        if round == 6 {
            let digest = crate::cases::manifest("revoke_digest")?;
            let signature = read("/t/revoke.p7")?;
            let _ = shared.revoke_started.set(Instant::now());
            system::add_key("blacklist", &format!("bin:{digest}"), &signature, keyring(".blacklist")?)
                .context("revoke")?;
            let _ = shared.revoke_done.set(Instant::now());
        }
        shared.unenforced.fetch_add(1, Ordering::SeqCst);
        let result = if round.is_multiple_of(2) {
            write_control("mode", "permissive").context("set permissive").and_then(|()| {
                std::thread::sleep(Duration::from_millis(100));
                write_control("mode", "enforce").context("set enforce")
            })
        } else {
            unload_when_idle("elfsig").and_then(|()| {
                std::thread::sleep(Duration::from_millis(100));
                system::load_module(std::path::Path::new(MODULE), "").context("reload")
            })
        };
        shared.unenforced.fetch_add(1, Ordering::SeqCst);
        result?;
    }
    Ok(())
}

/// Sets a fault-injection attribute in debugfs.
fn fault(attr: &str, file: &str, value: &str) -> Outcome {
    std::fs::write(format!("/sys/kernel/debug/{attr}/{file}"), value).context(&format!("set {attr}/{file}"))
}

/// Arms (or, with probability 0, disarms) failslab, fail_page_alloc and the module's read
/// failures, for marked tasks only.
fn arm_faults(probability: u32) -> Outcome {
    for attr in ["failslab", "fail_page_alloc", "fail_elfsig_read"] {
        fault(attr, "task-filter", "Y")?;
        fault(attr, "interval", "1")?;
        fault(attr, "times", "-1")?;
        fault(attr, "verbose", "0")?;
        fault(attr, "probability", &probability.to_string())?;
    }
    for attr in ["failslab", "fail_page_alloc"] {
        fault(attr, "ignore-gfp-wait", "N")?;
    }
    Ok(())
}

/// Runs workers (and, without faults, the mutator) while `during` runs on this thread.
fn run_phase(contents: &Contents, shared: &Shared, during: impl FnOnce() -> Outcome) -> Outcome {
    shared.stop.store(false, Ordering::SeqCst);
    std::thread::scope(|scope| {
        for i in 0..WORKERS {
            scope.spawn(move || {
                let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ (i as u64 + 1));
                while !shared.stop.load(Ordering::Relaxed) {
                    exec_once(shared, &mut rng);
                }
            });
        }
        if !shared.faults.load(Ordering::SeqCst) {
            scope.spawn(move || {
                let mut rng = Rng(0x2545_f491_4f6c_dd1d);
                while !shared.stop.load(Ordering::Relaxed) {
                    mutate_once(contents, &mut rng, 1);
                    std::thread::sleep(Duration::from_millis(2));
                }
            });
        }
        let result = during();
        shared.stop.store(true, Ordering::SeqCst);
        result
    })
}

/// The wrong outcomes since the last call.
fn violations(shared: &Shared) -> Outcome {
    let v = std::mem::take(&mut *shared.violations.lock().unwrap_or_else(|e| e.into_inner()));
    ensure(v.is_empty(), || format!("{} wrong outcome(s): {}", v.len(), v.join("; ")))
}

/// Scans for leaks (twice: objects freed late need a second scan to be told from leaks); returns
/// how many unreferenced objects there are and the reports that name the module.
fn kmemleak() -> Result<(usize, Vec<String>), String> {
    let path = "/sys/kernel/debug/kmemleak";
    for _ in 0..2 {
        std::fs::write(path, "scan").context("scan")?;
        std::thread::sleep(Duration::from_secs(1));
    }
    let report = std::fs::read_to_string(path).context("read kmemleak")?;
    let leaks: Vec<&str> = report.split("unreferenced object").skip(1).collect();
    let ours = leaks.iter().filter(|l| l.contains("elfsig")).map(|l| (*l).to_owned()).collect();
    Ok((leaks.len(), ours))
}

/// Runs the suite; true when everything held.
pub(crate) fn run_all() -> bool {
    let seconds: u64 = elfsig_guest::cmdline("elfsig.seconds").and_then(|s| s.parse().ok()).unwrap_or(30);
    let mut suite = Suite::default();
    let contents = match Contents::make() {
        Ok(c) => c,
        Err(e) => {
            suite.case("stress_setup", || Err(e));
            return suite.finish();
        }
    };
    let shared = Shared {
        stop: AtomicBool::new(false),
        unenforced: AtomicU64::new(0),
        faults: AtomicBool::new(false),
        revoke_started: OnceLock::new(),
        revoke_done: OnceLock::new(),
        key_add_started: OnceLock::new(),
        key_add_done: OnceLock::new(),
        key_remove_started: OnceLock::new(),
        key_remove_done: OnceLock::new(),
        execs: AtomicU64::new(0),
        ran_good: AtomicU64::new(0),
        refused: AtomicU64::new(0),
        failed: AtomicU64::new(0),
        died: AtomicU64::new(0),
        newkey: [AtomicU64::new(0), AtomicU64::new(0)],
        violations: Mutex::new(Vec::new()),
    };
    suite.case("stress_setup", || set_up(&contents));

    let main = Duration::from_secs(seconds * 2 / 3);
    suite.case("execs_under_changes_reloads_and_revocation", || {
        run_phase(&contents, &shared, || disturb(&shared, main))?;
        violations(&shared)?;
        let execs = shared.execs.load(Ordering::Relaxed);
        println!(
            "ELFSIG-STRESS phase=changes seconds={} execs={execs} ran_good={} refused={} other={}",
            main.as_secs(),
            shared.ran_good.load(Ordering::Relaxed),
            shared.refused.load(Ordering::Relaxed),
            shared.failed.load(Ordering::Relaxed)
        );
        ensure(shared.revoke_done.get().is_some(), || "the revocation never happened".into())?;
        ensure(shared.key_remove_done.get().is_some(), || "the key was never added and removed".into())?;
        let [ran, refused] = [0, 1].map(|i| shared.newkey[i].load(Ordering::Relaxed));
        ensure(ran > 0 && refused > 0, || {
            format!("the added key's file ran {ran} times and was refused {refused} times")
        })?;
        ensure(shared.ran_good.load(Ordering::Relaxed) > 0 && shared.refused.load(Ordering::Relaxed) > 0, || {
            "the execs did not both run and get refused".into()
        })
    });

    let faults = Duration::from_secs(seconds / 3);
    suite.case("injected_faults_never_let_bad_files_run", || {
        let before = stats()?;
        let execs_before = shared.execs.load(Ordering::Relaxed);
        shared.faults.store(true, Ordering::SeqCst);
        arm_faults(10)?;
        let result = run_phase(&contents, &shared, || {
            std::thread::sleep(faults);
            Ok(())
        });
        let disarm = arm_faults(0);
        shared.faults.store(false, Ordering::SeqCst);
        result?;
        disarm?;
        violations(&shared)?;
        let after = stats()?;
        let (io, errors) = (grew(&before, &after, "io_error"), grew(&before, &after, "error"));
        println!(
            "ELFSIG-STRESS phase=faults seconds={} execs={} io_error={io} error={errors} died_before_exec={}",
            faults.as_secs(),
            shared.execs.load(Ordering::Relaxed) - execs_before,
            shared.died.load(Ordering::Relaxed)
        );
        ensure(io + errors > 0, || "no injected fault reached the module".into())
    });

    suite.case("good_files_run_again_after_faults", || {
        let out = std::process::Command::new(slot("good", 0)).output().context("exec")?;
        ensure(out.stdout == GOOD_OUTPUT, || format!("printed {:?}", String::from_utf8_lossy(&out.stdout)))
    });
    // While the module is loaded, so that kmemleak's backtraces name its functions.
    suite.case("kmemleak_finds_nothing_of_the_module", || {
        let (total, ours) = kmemleak()?;
        println!("ELFSIG-STRESS kmemleak unreferenced={} module={}", total, ours.len());
        ensure(ours.is_empty(), || format!("kmemleak: {}", ours.first().map_or("", |l| l.trim())))
    });
    suite.case("module_unloads_after_stress", || unload_when_idle("elfsig"));
    suite.case("kernel_log_has_no_bug_warning_or_oops", || {
        let log = kernel_log()?;
        let bad: Vec<&String> = log
            .iter()
            .filter(|l| l.contains("BUG:") || l.contains("WARNING:") || l.contains("Oops") || l.contains("KASAN"))
            .take(5)
            .collect();
        ensure(bad.is_empty(), || format!("the kernel reported: {bad:?}"))?;
        // The checkers were there to report: KASAN initialised, lockdep still on (it turns
        // itself off after its first report).
        ensure(log.iter().any(|l| l.contains("KernelAddressSanitizer initialized")), || {
            "KASAN is not running in this kernel".into()
        })?;
        let lockdep = std::fs::read_to_string("/proc/lockdep_stats").context("read /proc/lockdep_stats")?;
        ensure(lockdep.lines().any(|l| l.split_whitespace().eq(["debug_locks:", "1"])), || {
            "lockdep is off (debug_locks is not 1)".into()
        })
    });
    suite.finish()
}
