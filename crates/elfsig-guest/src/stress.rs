//! The stress suite (`elfsig.suite=stress`, run on the debug kernel by `cargo xtask stress`).
//!
//! Threads exec files while others replace them (rename over), rewrite them in place and
//! truncate them, and the `elfsig` CLI removes and re-signs one of them; meanwhile the verdict
//! cache is flushed, a digest is revoked, a key is added to the secondary trusted keyring and
//! later removed, the mode is flipped to permissive and back, and the module is unloaded and
//! reloaded. Then the same execs run with allocations and the module's reads failing on
//! purpose. Every exec runs under `ptrace`, so "it ran" means the kernel loaded it (see
//! [`system::run_traced`]), and its outcome is checked against what the file could have been
//! at that moment:
//!
//! - `good*` slots only ever hold complete, correctly signed files (each replacement is a new
//!   file renamed over the old one): while the module enforces and no fault is injected, every
//!   exec must run and print the signed program's line;
//! - `mix*` slots hold good, unsigned, modified and badly signed content, replaced, rewritten
//!   and truncated at random: while the module enforces, nothing but the good program may run,
//!   and an exec during which a slot stayed unchanged must run it if it held the good program
//!   and must not load it otherwise;
//! - `bad*` files never change and are never good: under injected faults too, they are never
//!   loaded;
//! - `resign` is removed (made unsigned) and signed again, and re-signed while signed, by the
//!   CLI inside the VM: it runs while signed and is refused while unsigned;
//! - `revokeme` is good until its digest is revoked, then refused;
//! - `newkey` is signed by a key the kernel trusts only between its addition to the secondary
//!   keyring and its removal (followed by a cache flush).
//!
//! Afterwards the module must unload, the kernel log must hold no BUG, WARNING (KASAN, lockdep
//! and atomic-sleep reports are among them) or Oops, and kmemleak must find nothing of the module's.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::cases::{CERT, ELFSIG, KEY};
use crate::tamper::{Map, flip};
use elfsig_guest::harness::{
    Context, Outcome, Suite, ensure, grew, kernel_log, keyring, read, stats, unload_when_idle, write_control,
};
use elfsig_guest::system::{self, Traced};

const MODULE: &str = "/elfsig.ko";
const DIR: &str = "/tmp/stress";
const GOOD_OUTPUT: &[u8] = b"hello from an elfsig fixture\n";
const WORKERS: usize = 4;
const GOOD_SLOTS: usize = 2;
const MIX_SLOTS: usize = 3;
/// The files the workers exec (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    Good,
    Mix,
    Bad,
    Revokeme,
    Newkey,
    Resign,
}

impl Slot {
    const COUNT: usize = 6;

    fn name(self) -> &'static str {
        match self {
            Slot::Good => "good",
            Slot::Mix => "mix",
            Slot::Bad => "bad",
            Slot::Revokeme => "revokeme",
            Slot::Newkey => "newkey",
            Slot::Resign => "resign",
        }
    }
}

/// What an exec did.
enum Exec {
    /// The kernel loaded the good program, which printed its line and exited 0.
    RanGood,
    /// The kernel loaded a program that did not end like the good one: another program, or
    /// (under injected faults only) the good one killed by a fault. `surely_other` when it
    /// printed something the good program does not (an exit status proves nothing: the good
    /// program exits 0 even when its write fails).
    RanOther { what: String, surely_other: bool },
    /// Refused with EACCES.
    Refused,
    /// The exec failed otherwise (ETXTBSY while a file is being written, ENOMEM under faults, ...).
    Failed(i32),
    /// The kernel killed the child before its exec completed: nothing was loaded.
    Killed(i32),
}

impl Exec {
    fn loaded(&self) -> bool {
        matches!(self, Exec::RanGood | Exec::RanOther { .. })
    }
}

impl std::fmt::Display for Exec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Exec::RanGood => f.write_str("ran the good program"),
            Exec::RanOther { what, .. } => write!(f, "ran: {what}"),
            Exec::Refused => f.write_str("refused"),
            Exec::Failed(errno) => write!(f, "exec failed with errno {errno}"),
            Exec::Killed(signal) => write!(f, "killed by signal {signal} during exec"),
        }
    }
}

fn outcome(traced: Traced) -> Exec {
    match traced {
        Traced::Loaded { status, stdout } if status.success() && stdout == GOOD_OUTPUT => Exec::RanGood,
        Traced::Loaded { status, stdout } => Exec::RanOther {
            what: format!("{status} printing {:?}", String::from_utf8_lossy(&stdout[..stdout.len().min(60)])),
            surely_other: !stdout.is_empty() && !GOOD_OUTPUT.starts_with(&stdout),
        },
        Traced::NotLoaded(libc::EACCES) => Exec::Refused,
        Traced::NotLoaded(errno) => Exec::Failed(errno),
        Traced::KilledInExec(signal) => Exec::Killed(signal),
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

/// What a tracked file holds: good (correctly signed) content, bad content, or, after a write
/// failed half-way, anything.
const GOOD: u64 = 0;
const BAD: u64 = 1;
const UNKNOWN: u64 = 2;

/// The content of a file with a single writer (the mutator for mixed slots, the CLI loop for
/// `resign`), as that writer knows it: a state word `generation << 2 | content`, the
/// generation odd while the file changes. An exec that reads the same even word before and
/// after knows what the file held throughout.
struct Tracked(AtomicU64);

impl Tracked {
    const fn new(content: u64) -> Self {
        Tracked(AtomicU64::new(content))
    }

    fn load(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }

    /// Marks the file as changing; returns what it holds until then.
    fn begin(&self) -> u64 {
        let state = self.load();
        self.0.store((((state >> 2) + 1) << 2) | (state & 3), Ordering::SeqCst);
        state & 3
    }

    /// Marks the change done, the file now holding `content`.
    fn end(&self, content: u64) {
        self.0.store((((self.load() >> 2) + 1) << 2) | content, Ordering::SeqCst);
    }

    /// What the file held for the whole time between reading `before` and now, if it did not
    /// change.
    fn held_since(&self, before: u64) -> Option<u64> {
        (self.load() == before && (before >> 2).is_multiple_of(2)).then_some(before & 3)
    }
}

/// What the threads share.
struct Shared {
    stop: AtomicBool,
    /// Odd while the module is not enforcing (permissive or unloaded).
    unenforced: AtomicU64,
    /// What each mixed slot holds.
    mix: [Tracked; MIX_SLOTS],
    faults: AtomicBool,
    revoke_started: OnceLock<Instant>,
    revoke_done: OnceLock<Instant>,
    /// What `resign` holds: good while signed, bad while its signature is removed.
    resign: Tracked,
    /// Completed remove-and-sign rounds of `resign`.
    resign_rounds: AtomicU64,
    key_add_started: OnceLock<Instant>,
    key_add_done: OnceLock<Instant>,
    key_remove_started: OnceLock<Instant>,
    key_remove_done: OnceLock<Instant>,
    execs: AtomicU64,
    ran_good: AtomicU64,
    refused: AtomicU64,
    failed: AtomicU64,
    killed_in_exec: AtomicU64,
    ran_other: AtomicU64,
    /// Execs judged "must not be loaded" and "must run", per [`Slot`].
    judged: [[AtomicU64; 2]; Slot::COUNT],
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
    let pick = rng.below(GOOD_SLOTS + MIX_SLOTS + 4);
    let (which, path, tracked) = match pick.checked_sub(GOOD_SLOTS + MIX_SLOTS) {
        None if pick < GOOD_SLOTS => (Slot::Good, slot("good", pick), None),
        None => (Slot::Mix, slot("mix", pick - GOOD_SLOTS), shared.mix.get(pick - GOOD_SLOTS)),
        Some(0) => (Slot::Bad, slot("bad", rng.below(3)), None),
        Some(1) => (Slot::Revokeme, format!("{DIR}/revokeme"), None),
        Some(2) => (Slot::Newkey, format!("{DIR}/newkey"), None),
        Some(_) => (Slot::Resign, format!("{DIR}/resign"), Some(&shared.resign)),
    };
    let faults = shared.faults.load(Ordering::SeqCst);
    let held = tracked.map(Tracked::load);
    let before = shared.unenforced.load(Ordering::SeqCst);
    let started = Instant::now();
    let result = system::run_traced(&path, faults);
    let ended = Instant::now();
    let after = shared.unenforced.load(Ordering::SeqCst);
    // What a tracked file held for the whole exec, if it did not change.
    let content = tracked.zip(held).and_then(|(t, held)| t.held_since(held));
    shared.execs.fetch_add(1, Ordering::Relaxed);
    let what = match result {
        Ok(traced) => outcome(traced),
        Err(e) => return shared.violation(format!("{path}: cannot run it: {e}")),
    };
    let counter = match what {
        Exec::RanGood => &shared.ran_good,
        Exec::RanOther { .. } => &shared.ran_other,
        Exec::Refused => &shared.refused,
        Exec::Failed(_) => &shared.failed,
        Exec::Killed(_) => &shared.killed_in_exec,
    };
    counter.fetch_add(1, Ordering::Relaxed);
    let enforced = before == after && before.is_multiple_of(2);
    if !enforced {
        return;
    }
    // Revoked before this exec started; or not yet being revoked when it ended.
    let revoked = shared.revoke_done.get().is_some_and(|done| started > *done);
    let not_revoked = shared.revoke_started.get().is_none_or(|s| *s > ended);
    // The key was trusted for the whole exec, or not at all.
    let done_before_start = |at: &OnceLock<Instant>| at.get().is_some_and(|t| started > *t);
    let not_begun_by_end = |at: &OnceLock<Instant>| at.get().is_none_or(|t| *t > ended);
    let key_trusted = done_before_start(&shared.key_add_done) && not_begun_by_end(&shared.key_remove_started);
    let key_untrusted = not_begun_by_end(&shared.key_add_started) || done_before_start(&shared.key_remove_done);
    // Content that must not be loaded while enforcing, faults or not.
    let must_not_load = match which {
        Slot::Bad => true,
        Slot::Mix | Slot::Resign => content == Some(BAD),
        Slot::Revokeme => revoked,
        Slot::Newkey => key_untrusted,
        Slot::Good => false,
    };
    // Good content that must run while enforcing without faults.
    let must_run = !faults
        && match which {
            Slot::Good => true,
            Slot::Mix | Slot::Resign => content == Some(GOOD),
            Slot::Revokeme => not_revoked,
            Slot::Newkey => key_trusted,
            Slot::Bad => false,
        };
    if must_run || must_not_load {
        shared.judged[which as usize][usize::from(must_run)].fetch_add(1, Ordering::Relaxed);
    }
    let wrong = match &what {
        // The module refuses before exec's point of no return, so a child the kernel killed
        // during exec got past the module: the file was let through.
        _ if must_not_load => what.loaded() || matches!(what, Exec::Killed(_)),
        // The only failure allowed is ETXTBSY, when a child forked by another thread holds a
        // replacement file open for writing until it execs.
        _ if must_run => !matches!(what, Exec::RanGood | Exec::Failed(libc::ETXTBSY)),
        // Whatever a slot held, nothing but the good program may run; under faults, the good
        // program may be killed once loaded.
        Exec::RanOther { surely_other, .. } => !faults || *surely_other,
        _ => false,
    };
    if wrong {
        shared.violation(format!("{path} ({}{}): {what}", which.name(), if faults { ", faults" } else { "" }));
    }
}

/// Runs the CLI in the VM, as an operator would.
fn cli(args: &[&str]) -> Outcome {
    let out = std::process::Command::new(ELFSIG).args(args).output().context("run elfsig")?;
    ensure(out.status.success(), || {
        format!("elfsig {} failed ({}): {}", args.join(" "), out.status, String::from_utf8_lossy(&out.stderr).trim())
    })
}

/// Until told to stop: re-signs `resign` while it is signed (the same bytes again, not a
/// change: execs must go on running), removes its signature, and signs it again. A failing
/// command leaves the file marked as changing, so nothing after it is judged by its content.
fn resign_loop(shared: &Shared) -> Outcome {
    let path = format!("{DIR}/resign");
    let sign = ["sign", "-q", "--key", KEY, "--cert", CERT, &path];
    while !shared.stop.load(Ordering::Relaxed) {
        cli(&sign)?;
        shared.resign.begin();
        cli(&["remove", "-q", &path])?;
        shared.resign.end(BAD);
        // Unsigned for long enough that execs see it so.
        std::thread::sleep(Duration::from_millis(1000));
        shared.resign.begin();
        cli(&sign)?;
        shared.resign.end(GOOD);
        shared.resign_rounds.fetch_add(1, Ordering::Relaxed);
        std::thread::sleep(Duration::from_millis(1000));
    }
    Ok(())
}

/// Replaces, rewrites and truncates the slots at random, keeping track of what each mixed slot
/// holds.
fn mutate_once(shared: &Shared, contents: &Contents, rng: &mut Rng, tag: usize) {
    if rng.below(4) == 0 {
        let _ = replace(&slot("good", rng.below(GOOD_SLOTS)), &contents.good, tag);
        return;
    }
    // The last mixed slot changes rarely, so that execs also find it unchanged (and are judged
    // by its content); the others change every few milliseconds, racing the execs.
    let i = if rng.below(200) == 0 { MIX_SLOTS - 1 } else { rng.below(MIX_SLOTS - 1) };
    let path = slot("mix", i);
    let choice = rng.below(contents.bad.len() + 1);
    let (bytes, kind) = contents.bad.get(choice).map_or((&contents.good[..], GOOD), |(_, b)| (&b[..], BAD));
    let Some(tracked) = shared.mix.get(i) else { return };
    let now = tracked.begin();
    // Errors are expected (ETXTBSY while the file runs) and leave the file as it was, except
    // a write that fails after the open emptied the file.
    let kind = match rng.below(3) {
        0 => replace(&path, bytes, tag).map_or(now, |()| kind),
        1 => match std::fs::OpenOptions::new().write(true).truncate(true).open(&path) {
            Ok(mut file) => file.write_all(bytes).map_or(UNKNOWN, |()| kind),
            Err(_) => now,
        },
        _ => {
            let len = rng.below(bytes.len()) as u64;
            match std::fs::OpenOptions::new().write(true).open(&path) {
                Ok(file) if file.metadata().is_ok_and(|m| m.len() != len) => file.set_len(len).map_or(now, |()| BAD),
                _ => now,
            }
        }
    };
    tracked.end(kind);
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
    replace(&format!("{DIR}/resign"), &contents.good, 0).context("write resign")?;
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

/// Arms (or, with probabilities 0, disarms) failslab and fail_page_alloc with `alloc` percent
/// and the module's read failures with `read` percent, for marked tasks only.
fn arm_faults(alloc: u32, read: u32) -> Outcome {
    for (attr, probability) in [("failslab", alloc), ("fail_page_alloc", alloc), ("fail_elfsig_read", read)] {
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

/// Runs workers (and, without faults, the mutator and the re-signer) while `during` runs on
/// this thread.
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
        let changes = !shared.faults.load(Ordering::SeqCst);
        let resigner = changes.then(|| scope.spawn(move || resign_loop(shared)));
        if changes {
            scope.spawn(move || {
                let mut rng = Rng(0x2545_f491_4f6c_dd1d);
                while !shared.stop.load(Ordering::Relaxed) {
                    mutate_once(shared, contents, &mut rng, 1);
                    std::thread::sleep(Duration::from_millis(2));
                }
            });
        }
        let result = during();
        shared.stop.store(true, Ordering::SeqCst);
        let resigned = resigner
            .map_or(Ok(()), |thread| thread.join().unwrap_or_else(|_| Err("the re-signing thread panicked".into())));
        result.and(resigned)
    })
}

/// The names of the exec counters [`tally`] reads.
const COUNTERS: [&str; 8] = [
    "execs",
    "ran_good",
    "ran_other",
    "refused",
    "exec_failed",
    "killed_in_exec",
    "judged_must_not_load",
    "judged_must_run",
];

/// The exec counters now.
fn tally(shared: &Shared) -> [u64; 8] {
    let [not_load, run] = shared
        .judged
        .iter()
        .fold([0, 0], |[a, b], [c, d]| [a + c.load(Ordering::Relaxed), b + d.load(Ordering::Relaxed)]);
    let counters =
        [&shared.execs, &shared.ran_good, &shared.ran_other, &shared.refused, &shared.failed, &shared.killed_in_exec];
    let [execs, good, other, refused, failed, killed] = counters.map(|c| c.load(Ordering::Relaxed));
    [execs, good, other, refused, failed, killed, not_load, run]
}

/// Prints what a phase did: its exec counters (`after - before`) and `extra`.
fn report(phase: &str, seconds: u64, before: [u64; 8], after: [u64; 8], extra: &str) {
    let counts: Vec<String> =
        COUNTERS.iter().zip(after.iter().zip(before)).map(|(name, (a, b))| format!("{name}={}", a - b)).collect();
    println!("ELFSIG-STRESS phase={phase} seconds={seconds} {} {extra}", counts.join(" "));
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
        mix: [const { Tracked::new(GOOD) }; MIX_SLOTS],
        faults: AtomicBool::new(false),
        revoke_started: OnceLock::new(),
        revoke_done: OnceLock::new(),
        resign: Tracked::new(GOOD),
        resign_rounds: AtomicU64::new(0),
        key_add_started: OnceLock::new(),
        key_add_done: OnceLock::new(),
        key_remove_started: OnceLock::new(),
        key_remove_done: OnceLock::new(),
        execs: AtomicU64::new(0),
        ran_good: AtomicU64::new(0),
        refused: AtomicU64::new(0),
        failed: AtomicU64::new(0),
        killed_in_exec: AtomicU64::new(0),
        ran_other: AtomicU64::new(0),
        judged: [const { [AtomicU64::new(0), AtomicU64::new(0)] }; Slot::COUNT],
        violations: Mutex::new(Vec::new()),
    };
    suite.case("stress_setup", || set_up(&contents));
    // The judge itself: a good file is seen loaded and running, a refused one not loaded, and
    // another signed program loaded and told apart from the good one.
    suite.case("traced_execs_tell_what_was_loaded", || {
        let judged = |path: &str| system::run_traced(path, false).map(outcome).context(path);
        let good = judged(&slot("good", 0))?;
        ensure(matches!(good, Exec::RanGood), || format!("good: {good}"))?;
        let bad = judged(&slot("bad", 0))?;
        ensure(matches!(bad, Exec::Refused), || format!("bad: {bad}"))?;
        let other = judged("/t/signed/cstatic")?;
        ensure(matches!(other, Exec::RanOther { surely_other: true, .. }), || format!("cstatic: {other}"))
    });

    let main = Duration::from_secs(seconds * 2 / 3);
    suite.case("execs_under_changes_reloads_and_revocation", || {
        run_phase(&contents, &shared, || disturb(&shared, main))?;
        violations(&shared)?;
        let rounds = shared.resign_rounds.load(Ordering::Relaxed);
        let counted = tally(&shared);
        report("changes", main.as_secs(), [0; 8], counted, &format!("cli_remove_sign_rounds={rounds}"));
        ensure(shared.revoke_done.get().is_some(), || "the revocation never happened".into())?;
        ensure(shared.key_remove_done.get().is_some(), || "the key was never added and removed".into())?;
        // Each changing file was seen both ways, so its checks ran. The revoked file and the
        // added key's file always are; a quick run has too few remove-and-sign rounds and
        // mixed-slot changes for that to be sure of the others, so only longer runs insist.
        for which in [Slot::Mix, Slot::Resign, Slot::Revokeme, Slot::Newkey] {
            let [not_load, run] = shared.judged[which as usize].each_ref().map(|c| c.load(Ordering::Relaxed));
            let name = which.name();
            println!("ELFSIG-STRESS judged kind={name} must_not_load={not_load} must_run={run}");
            let required = main >= Duration::from_secs(60) || matches!(which, Slot::Revokeme | Slot::Newkey);
            ensure(!required || (not_load > 0 && run > 0), || format!("no {name} exec was judged both ways"))?;
        }
        ensure(shared.ran_good.load(Ordering::Relaxed) > 0 && shared.refused.load(Ordering::Relaxed) > 0, || {
            "the execs did not both run and get refused".into()
        })?;
        ensure(rounds > 0, || "the CLI never removed and signed the re-signed file".into())
    });

    let faults = Duration::from_secs(seconds / 3);
    suite.case("injected_faults_never_let_bad_files_run", || {
        let before = stats()?;
        let counted = tally(&shared);
        shared.faults.store(true, Ordering::SeqCst);
        // An exec makes hundreds of allocations before the module runs: rare allocation
        // failures, so that many execs reach verification, and frequent read failures in it.
        arm_faults(2, 10)?;
        let result = run_phase(&contents, &shared, || {
            std::thread::sleep(faults);
            Ok(())
        });
        let disarm = arm_faults(0, 0);
        shared.faults.store(false, Ordering::SeqCst);
        result?;
        disarm?;
        violations(&shared)?;
        let after = stats()?;
        let (io, errors) = (grew(&before, &after, "io_error"), grew(&before, &after, "error"));
        report("faults", faults.as_secs(), counted, tally(&shared), &format!("io_error={io} error={errors}"));
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
