//! The load: workers exec the files at random and judge each exec, while other threads change
//! the files under them (replace by rename, rewrite in place, truncate), remove and re-sign one
//! with the CLI, rename interpreters over the path a signed program names in `PT_INTERP`, and
//! swap good and bad versions of a library that signed programs `dlopen` and need.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use elfsig_fixtures::{GUARD_LIBRARY, GUARD_LIBRARY_LOADED, GUARD_USER_OUTPUT};
use elfsig_guest::harness::{Context, Outcome, ensure, read};
use elfsig_guest::image::{self, CERT, ELFSIG, GUARD_PROBE, GUARD_RUNPATH, GUARD_USER, KEY, LIB_SIGNED};

use super::judge::{self, BAD, Exec, GOOD, Tracked, UNKNOWN, Verdict, Violations};
use crate::tamper::{Map, flip};

/// Where the stress files live.
pub(crate) const DIR: &str = "/tmp/stress";
const WORKERS: usize = 4;
const GOOD_SLOTS: usize = 2;
const MIX_SLOTS: usize = 3;

/// The kinds of file the workers exec.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Slot {
    /// Only ever complete, correctly signed files, each replacement renamed over the old one.
    Good,
    /// Good, unsigned, modified and badly signed content, replaced, rewritten and truncated.
    Mix,
    /// Never good, never changed.
    Bad,
    /// Good until its digest is revoked.
    Revokeme,
    /// Signed by a key trusted only between its addition and its removal.
    Newkey,
    /// Good until a signed policy revokes its digest (loaded again after each reload of the
    /// module, which forgets it).
    Policy,
    /// Removed (made unsigned) and signed again by the CLI in the VM.
    Resign,
    /// A signed program whose `PT_INTERP` path has a signed loader and an unsigned program
    /// renamed over it, again and again.
    Interp,
    /// A signed program `dlopen`ing the library in [`GUARD_RUNPATH`], which is good, unsigned,
    /// modified or badly signed in turn: replaced, rewritten and truncated (the mapping guard).
    Dlopen,
    /// A signed program that needs that library (`DT_NEEDED`, found through `DT_RUNPATH`).
    Needed,
}

impl Slot {
    pub(crate) const ALL: [Slot; 10] = [
        Slot::Good,
        Slot::Mix,
        Slot::Bad,
        Slot::Revokeme,
        Slot::Newkey,
        Slot::Policy,
        Slot::Resign,
        Slot::Interp,
        Slot::Dlopen,
        Slot::Needed,
    ];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Slot::Good => "good",
            Slot::Mix => "mix",
            Slot::Bad => "bad",
            Slot::Revokeme => "revokeme",
            Slot::Newkey => "newkey",
            Slot::Policy => "policy",
            Slot::Resign => "resign",
            Slot::Interp => "interp",
            Slot::Dlopen => "dlopen",
            Slot::Needed => "needed",
        }
    }
}

/// The contents the files cycle through.
pub(crate) struct Contents {
    /// Signed hello.
    good: Vec<u8>,
    /// Signed cstatic (which prints something else) made unsigned, modified and badly signed.
    pub(crate) bad: Vec<(&'static str, Vec<u8>)>,
    /// What the program run through the swapped interpreter prints.
    interp_output: Vec<u8>,
    /// The signed test library.
    library: Vec<u8>,
    /// The library made unsigned, modified and badly signed.
    bad_libraries: Vec<(&'static str, Vec<u8>)>,
}

impl Contents {
    pub(crate) fn make() -> Result<Contents, String> {
        let library = read(format!("{LIB_SIGNED}/{GUARD_LIBRARY}"))?;
        Ok(Contents {
            good: read(image::HELLO)?,
            bad: spoiled(&read(format!("{}/cstatic", image::SIGNED))?)?,
            interp_output: read(format!("{}/cdynamic", image::EXPECTED))?,
            bad_libraries: spoiled(&library)?,
            library,
        })
    }
}

/// A signed file made unsigned, modified (a byte of its section headers) and badly signed.
fn spoiled(signed: &[u8]) -> Result<Vec<(&'static str, Vec<u8>)>, String> {
    let map = Map::of(signed)?;
    let (payload, size) = map.payload()?;
    Ok(vec![
        ("unsigned", flip(signed, payload)),
        ("modified", flip(signed, map.shoff + 64 + 8)),
        ("bad-signature", flip(signed, payload + size - 1)),
    ])
}

/// When a one-off event started and ended.
#[derive(Debug, Default)]
pub(crate) struct Event {
    pub(crate) started: OnceLock<Instant>,
    pub(crate) done: OnceLock<Instant>,
}

impl Event {
    /// Runs `action` as the event.
    pub(crate) fn run<T>(&self, action: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
        let _ = self.started.set(Instant::now());
        let result = action();
        let _ = self.done.set(Instant::now());
        result
    }

    /// Whether it was over before `at`.
    fn done_before(&self, at: Instant) -> bool {
        self.done.get().is_some_and(|t| at > *t)
    }

    /// Whether it had not begun by `at`.
    fn not_begun_by(&self, at: Instant) -> bool {
        self.started.get().is_none_or(|t| *t > at)
    }
}

/// Counters of what the execs did.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    pub(crate) execs: AtomicU64,
    pub(crate) ran_good: AtomicU64,
    pub(crate) ran_other: AtomicU64,
    pub(crate) refused: AtomicU64,
    pub(crate) failed: AtomicU64,
    pub(crate) killed_in_exec: AtomicU64,
    /// Execs of the interp slot the kernel killed: the interpreter was swapped during them.
    pub(crate) interp_killed: AtomicU64,
    /// Execs judged "must not be loaded" and "must run", per [`Slot`].
    pub(crate) judged: [[AtomicU64; 2]; Slot::ALL.len()],
}

impl Tally {
    fn count(&self, which: Slot, what: &Exec) {
        if which == Slot::Interp && matches!(what, Exec::Killed(_)) {
            self.interp_killed.fetch_add(1, Ordering::Relaxed);
        }
        let counter = match what {
            Exec::RanGood => &self.ran_good,
            Exec::RanOther { .. } => &self.ran_other,
            Exec::Refused | Exec::LibraryRefused(_) => &self.refused,
            Exec::Failed(_) => &self.failed,
            Exec::Killed(_) => &self.killed_in_exec,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        self.execs.fetch_add(1, Ordering::Relaxed);
    }

    /// How many execs of `slot` were judged "must not be loaded" and "must run".
    pub(crate) fn judged(&self, slot: Slot) -> [u64; 2] {
        self.judged[slot as usize].each_ref().map(|c| c.load(Ordering::Relaxed))
    }
}

/// What the threads share.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) stop: AtomicBool,
    /// Odd while the module is not enforcing (permissive or unloaded).
    pub(crate) unenforced: AtomicU64,
    /// What each mixed slot holds.
    mix: [Tracked; MIX_SLOTS],
    pub(crate) faults: AtomicBool,
    pub(crate) revocation: Event,
    /// The policy that revokes the policy slot's file, loaded.
    pub(crate) policy_revocation: Event,
    /// What `resign` holds: good while signed, bad while its signature is removed.
    resign: Tracked,
    /// Completed remove-and-sign rounds of `resign`.
    pub(crate) resign_rounds: AtomicU64,
    /// What the `PT_INTERP` path of the interp slot names: the signed loader, or not.
    interp: Tracked,
    /// Renames over that path.
    pub(crate) interp_swaps: AtomicU64,
    /// What the library the dlopen and needed slots load holds.
    library: Tracked,
    /// Changes of it.
    pub(crate) library_changes: AtomicU64,
    pub(crate) key_added: Event,
    pub(crate) key_removed: Event,
    pub(crate) tally: Tally,
    pub(crate) violations: Violations,
}

impl Shared {
    pub(crate) fn new() -> Self {
        Shared {
            stop: AtomicBool::new(false),
            unenforced: AtomicU64::new(0),
            mix: [const { Tracked::new(GOOD) }; MIX_SLOTS],
            faults: AtomicBool::new(false),
            revocation: Event::default(),
            policy_revocation: Event::default(),
            resign: Tracked::new(GOOD),
            resign_rounds: AtomicU64::new(0),
            interp: Tracked::new(GOOD),
            interp_swaps: AtomicU64::new(0),
            library: Tracked::new(GOOD),
            library_changes: AtomicU64::new(0),
            key_added: Event::default(),
            key_removed: Event::default(),
            tally: Tally::default(),
            violations: Violations::default(),
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

pub(crate) fn slot(kind: &str, i: usize) -> String {
    format!("{DIR}/{kind}{i}")
}

/// The signed loader and the unsigned program renamed in turn over the interp slot's
/// `PT_INTERP` path (hard links to them, so that each rename is cheap and each keeps its inode).
fn interp_source(good: bool) -> String {
    format!("{DIR}/interp.{}", if good { "good" } else { "evil" })
}

/// The library the dlopen and needed slots load.
fn library() -> String {
    format!("{GUARD_RUNPATH}/{GUARD_LIBRARY}")
}

/// Writes `bytes` as a new file and renames it over `path`.
fn replace(path: &str, bytes: &[u8], tag: usize) -> std::io::Result<()> {
    let tmp = format!("{path}.new{tag}");
    std::fs::write(&tmp, bytes)?;
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755))?;
    std::fs::rename(&tmp, path)
}

/// Writes the files, before the module loads.
pub(crate) fn set_up(contents: &Contents) -> Outcome {
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
    replace(&format!("{DIR}/revokeme"), &read(image::REVOKEME)?, 0).context("write revokeme")?;
    replace(&format!("{DIR}/newkey"), &read(image::HELLO_ADDED_KEY)?, 0).context("write newkey")?;
    replace(&policy_slot(), &read(image::POLICY_REVOKEME)?, 0).context("write the policy slot's file")?;
    replace(&format!("{DIR}/resign"), &contents.good, 0).context("write resign")?;
    replace(&interp_source(true), &read(image::LD_SO)?, 0).context("write the signed loader")?;
    replace(&interp_source(false), &read(image::HELLO_UNSIGNED)?, 0).context("write the unsigned interpreter")?;
    std::fs::create_dir_all(GUARD_RUNPATH).context("create the library's directory")?;
    replace(&library(), &contents.library, 0).context("write the library")?;
    let _ = std::fs::remove_file(image::STRESS_INTERPRETER);
    std::fs::hard_link(interp_source(true), image::STRESS_INTERPRETER).context("link the interpreter")
}

/// The policy slot's file: a signed program of its own digest.
pub(crate) fn policy_slot() -> String {
    format!("{DIR}/policy")
}

/// One exec of a random file, judged against what the file was at that moment.
fn exec_once(shared: &Shared, contents: &Contents, rng: &mut Rng) {
    let pick = rng.below(GOOD_SLOTS + MIX_SLOTS + 8);
    let (which, path, tracked) = match pick.checked_sub(GOOD_SLOTS + MIX_SLOTS) {
        None if pick < GOOD_SLOTS => (Slot::Good, slot("good", pick), None),
        None => (Slot::Mix, slot("mix", pick - GOOD_SLOTS), shared.mix.get(pick - GOOD_SLOTS)),
        Some(0) => (Slot::Bad, slot("bad", rng.below(contents.bad.len())), None),
        Some(1) => (Slot::Revokeme, format!("{DIR}/revokeme"), None),
        Some(2) => (Slot::Newkey, format!("{DIR}/newkey"), None),
        Some(3) => (Slot::Interp, image::CDYNAMIC_STRESS_INTERPRETER.to_owned(), Some(&shared.interp)),
        Some(4) => (Slot::Dlopen, GUARD_PROBE.to_owned(), Some(&shared.library)),
        Some(5) => (Slot::Needed, GUARD_USER.to_owned(), Some(&shared.library)),
        Some(6) => (Slot::Policy, policy_slot(), None),
        Some(_) => (Slot::Resign, format!("{DIR}/resign"), Some(&shared.resign)),
    };
    let faults = shared.faults.load(Ordering::SeqCst);
    let held = tracked.map(Tracked::load);
    let before = shared.unenforced.load(Ordering::SeqCst);
    let started = Instant::now();
    let result = match which {
        Slot::Interp => Exec::run(&path, faults, &contents.interp_output),
        Slot::Dlopen => {
            let good_output = [GUARD_LIBRARY_LOADED, b"dlopen: ok\n"].concat();
            Exec::run_library(&path, &["dlopen", &library()], faults, &good_output, GUARD_LIBRARY_LOADED)
        }
        Slot::Needed => Exec::run_library(&path, &[], faults, GUARD_USER_OUTPUT, GUARD_LIBRARY_LOADED),
        _ => Exec::run(&path, faults, image::HELLO_OUTPUT),
    };
    let ended = Instant::now();
    let after = shared.unenforced.load(Ordering::SeqCst);
    // What a tracked file held for the whole exec, if it did not change.
    let content = tracked.zip(held).and_then(|(t, held)| t.held_since(held));
    let what = match result {
        Ok(what) => what,
        Err(e) => return shared.violations.add(format!("{path}: cannot run it: {e}")),
    };
    shared.tally.count(which, &what);
    if before != after || !before.is_multiple_of(2) {
        // The module did not enforce for the whole exec.
        return;
    }
    let revoked = shared.revocation.done_before(started);
    let not_revoked = shared.revocation.not_begun_by(ended);
    let revoked_by_policy = shared.policy_revocation.done_before(started);
    let not_revoked_by_policy = shared.policy_revocation.not_begun_by(ended);
    // The key was trusted for the whole exec, or not at all.
    let key_trusted = shared.key_added.done_before(started) && shared.key_removed.not_begun_by(ended);
    let key_untrusted = shared.key_added.not_begun_by(ended) || shared.key_removed.done_before(started);
    let verdict = Verdict {
        must_not_load: match which {
            Slot::Bad => true,
            Slot::Mix | Slot::Resign | Slot::Interp | Slot::Dlopen | Slot::Needed => content == Some(BAD),
            Slot::Revokeme => revoked,
            Slot::Newkey => key_untrusted,
            Slot::Policy => revoked_by_policy,
            Slot::Good => false,
        },
        must_run: !faults
            && match which {
                Slot::Good => true,
                Slot::Mix | Slot::Resign | Slot::Interp | Slot::Dlopen | Slot::Needed => content == Some(GOOD),
                Slot::Revokeme => not_revoked,
                Slot::Newkey => key_trusted,
                Slot::Policy => not_revoked_by_policy,
                Slot::Bad => false,
            },
    };
    if verdict.must_run || verdict.must_not_load {
        shared.tally.judged[which as usize][usize::from(verdict.must_run)].fetch_add(1, Ordering::Relaxed);
    }
    let library_loaded = matches!(which, Slot::Dlopen | Slot::Needed);
    if judge::wrong(&what, verdict, faults || library_loaded) {
        // What the module logged of the library, when it is the library's exec that went wrong.
        let logged = if library_loaded { logged_about(GUARD_LIBRARY) } else { String::new() };
        shared.violations.add(format!(
            "{path} ({}{}): {what}{logged}",
            which.name(),
            if faults { ", faults" } else { "" }
        ));
    }
}

/// The module's last log lines that name `name`, for a wrong outcome's message.
fn logged_about(name: &str) -> String {
    let log = elfsig_guest::harness::kernel_log().unwrap_or_default();
    let lines: Vec<&String> = log.iter().filter(|l| l.starts_with("elfsig") && l.contains(name)).collect();
    match lines.len() {
        0 => "; the module logged nothing of it".to_owned(),
        n => format!("; the module logged: {:?}", &lines[n.saturating_sub(2)..]),
    }
}

/// Runs the CLI in the VM, as an operator would.
fn cli(args: &[&str]) -> Outcome {
    // Started as the workers' execs are (see `change_library`): spawn returns once it has
    // exec'd.
    let child = {
        let _forking = judge::FORKING.read().unwrap_or_else(std::sync::PoisonError::into_inner);
        std::process::Command::new(ELFSIG)
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
    };
    let out = child.and_then(std::process::Child::wait_with_output).context("run elfsig")?;
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

/// Until told to stop: changes a file in bursts, as fast as `change` goes for 300 ms, so that
/// some changes land in the middle of execs; then once more, left alone for `hold`, so that
/// execs also find it unchanged and are judged by what it holds.
fn in_bursts(shared: &Shared, seed: u64, hold: Duration, mut change: impl FnMut(&mut Rng) -> Outcome) -> Outcome {
    let mut rng = Rng(seed);
    while !shared.stop.load(Ordering::Relaxed) {
        let burst = Instant::now();
        while burst.elapsed() < Duration::from_millis(300) {
            change(&mut rng)?;
        }
        change(&mut rng)?;
        std::thread::sleep(hold);
    }
    Ok(())
}

/// Renames the signed loader or the unsigned program over the interp slot's `PT_INTERP` path,
/// so that some renames land between the module's check of the interpreter and binfmt_elf's
/// open of it.
fn swap_interpreter(shared: &Shared, rng: &mut Rng) -> Outcome {
    let good = rng.below(2) == 0;
    let tmp = format!("{}.new", image::STRESS_INTERPRETER);
    shared.interp.begin();
    let _ = std::fs::remove_file(&tmp);
    std::fs::hard_link(interp_source(good), &tmp).context("link an interpreter")?;
    std::fs::rename(&tmp, image::STRESS_INTERPRETER).context("rename an interpreter over PT_INTERP")?;
    shared.interp.end(if good { GOOD } else { BAD });
    shared.interp_swaps.fetch_add(1, Ordering::Relaxed);
    Ok(())
}

/// Replaces, rewrites or truncates the library with good or (as often) bad content, every 2 ms
/// or so: as a package upgrade replaces a library, and as its owner may rewrite it.
fn change_library(shared: &Shared, contents: &Contents, rng: &mut Rng) -> Outcome {
    let bad = (rng.below(2) == 0).then(|| rng.below(contents.bad_libraries.len()));
    let (bytes, kind) =
        bad.and_then(|i| contents.bad_libraries.get(i)).map_or((&contents.library[..], GOOD), |(_, b)| (&b[..], BAD));
    // No child is between its fork and its exec while the library is open for writing here:
    // one would inherit the descriptor and hold it until its exec closes it, which under load
    // can be well after the change ended; a library mapped meanwhile is refused for being open
    // for writing, rightly, while the change is done and good content held. (A program exec'd
    // meanwhile fails with ETXTBSY instead, which the judge allows: the program slots are
    // written without this.)
    let writing = judge::FORKING.write().unwrap_or_else(std::sync::PoisonError::into_inner);
    let now = shared.library.begin();
    shared.library.end(change(&library(), bytes, kind, now, rng, 2));
    drop(writing);
    shared.library_changes.fetch_add(1, Ordering::Relaxed);
    std::thread::sleep(Duration::from_millis(2));
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
    tracked.end(change(&path, bytes, kind, now, rng, tag));
}

/// Puts `bytes`, which are `kind` content, in `path`, which holds `now` content, at random by
/// replacing the file, rewriting it in place, or truncating it; returns what it holds then.
/// Errors are expected (ETXTBSY while a program runs) and leave the file as it was, except a
/// write that fails after the open emptied the file.
fn change(path: &str, bytes: &[u8], kind: u64, now: u64, rng: &mut Rng, tag: usize) -> u64 {
    match rng.below(3) {
        0 => replace(path, bytes, tag).map_or(now, |()| kind),
        1 => match std::fs::OpenOptions::new().write(true).truncate(true).open(path) {
            Ok(mut file) => file.write_all(bytes).map_or(UNKNOWN, |()| kind),
            Err(_) => now,
        },
        _ => {
            let len = rng.below(bytes.len()) as u64;
            match std::fs::OpenOptions::new().write(true).open(path) {
                Ok(file) if file.metadata().is_ok_and(|m| m.len() != len) => file.set_len(len).map_or(now, |()| BAD),
                _ => now,
            }
        }
    }
}

/// Runs the workers (and, without faults, the threads that change the files) while `during`
/// runs on this thread.
pub(crate) fn run_phase(contents: &Contents, shared: &Shared, during: impl FnOnce() -> Outcome) -> Outcome {
    shared.stop.store(false, Ordering::SeqCst);
    std::thread::scope(|scope| {
        for i in 0..WORKERS {
            scope.spawn(move || {
                let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ (i as u64 + 1));
                while !shared.stop.load(Ordering::Relaxed) {
                    exec_once(shared, contents, &mut rng);
                }
            });
        }
        let changes = !shared.faults.load(Ordering::SeqCst);
        let resigner = changes.then(|| scope.spawn(move || resign_loop(shared)));
        let swapper = changes.then(|| {
            // Long enough that, with the guard checking ld.so's mapping too, a dynamic exec on
            // the debug kernel fits in a hold and is judged by the loader it finds (700 ms gave
            // 3, then 0, execs judged must-run in 200 s).
            let hold = Duration::from_secs(2);
            scope.spawn(move || in_bursts(shared, 0x5851_f42d_4c95_7f2d, hold, |rng| swap_interpreter(shared, rng)))
        });
        let library_changer = changes.then(|| {
            // Held for longer than an exec takes on the debug kernel, so that the library execs are
            // judged by what it holds.
            let hold = Duration::from_secs(3);
            scope.spawn(move || {
                in_bursts(shared, 0x1405_7b7e_f767_814f, hold, |rng| change_library(shared, contents, rng))
            })
        });
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
        let joined = |thread: Option<std::thread::ScopedJoinHandle<'_, Outcome>>, what: &str| {
            thread.map_or(Ok(()), |t| t.join().unwrap_or_else(|_| Err(format!("the {what} thread panicked"))))
        };
        result
            .and(joined(resigner, "re-signing"))
            .and(joined(swapper, "interpreter-swapping"))
            .and(joined(library_changer, "library-changing"))
    })
}
