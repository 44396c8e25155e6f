//! The judge: what an exec did, seen by a tracer, and whether that was allowed given what the
//! file was for the whole exec.
//!
//! Every exec runs under `ptrace` ([`system::run_traced`]), so "it ran" means the kernel loaded
//! it. The rules, while the module enforces:
//!
//! - content that must not be loaded is never loaded, faults or not; a child the kernel kills
//!   during its exec counts as loaded too, since the module refuses before exec's point of no
//!   return (the one kill it makes after, at the end of exec, is of an interpreter swapped in
//!   after its check: never of content judged bad at its start);
//! - good content runs, when nothing is injected (the one failure allowed is ETXTBSY, from a
//!   child forked by another thread that holds a replacement open until it execs);
//! - for a library, "loaded" is the library's: the signed program that loads it runs either way,
//!   and the library says when it was loaded;
//! - nothing but the good program's output ever appears.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, RwLock};

use elfsig_guest::system::{self, Traced};

/// Held (shared) by every exec from its fork until its exec ends, and (exclusive) by the
/// library's writer while it has the library open: no child inherits that descriptor.
pub(crate) static FORKING: RwLock<()> = RwLock::new(());

/// What an exec did.
#[derive(Debug)]
pub(crate) enum Exec {
    /// The kernel loaded the good program, which printed its line and exited 0.
    RanGood,
    /// The kernel loaded a program that did not end like the good one: another program, or
    /// (under injected faults only) the good one killed by a fault. `surely_other` when it
    /// printed something the good program does not (an exit status proves nothing: the good
    /// program exits 0 even when its write fails).
    RanOther { what: String, surely_other: bool },
    /// Refused with EACCES.
    Refused,
    /// A library refused: the program that loads it ran, the library did not, and the program
    /// said this (the loader's error, which tells a refusal from content it could not load).
    LibraryRefused(String),
    /// The exec failed otherwise (ETXTBSY while a file is being written, ENOMEM under faults, ...);
    /// see [`Exec::run_library`] for a negative value.
    Failed(i32),
    /// The kernel killed the child before it ran an instruction.
    Killed(i32),
}

impl Exec {
    /// Runs `path` traced and says what happened, against what the good program prints.
    pub(crate) fn run(path: &str, faults: bool, good_output: &[u8]) -> std::io::Result<Exec> {
        system::run_traced(path, &[], faults, &FORKING).map(|traced| Exec::of(traced, good_output))
    }

    /// Runs a signed program that loads a library, and says what happened to the library,
    /// which prints `loaded` first thing when it is loaded: it ran (printing what the good
    /// library makes the program print, or not), or it was refused (never printed). The program's
    /// own exec failing, or being killed under faults, says nothing of the library: that counts
    /// as failed, with the errno or the negated signal.
    pub(crate) fn run_library(
        path: &str,
        args: &[&str],
        faults: bool,
        good_output: &[u8],
        loaded: &[u8],
    ) -> std::io::Result<Exec> {
        system::run_traced(path, args, faults, &FORKING).map(|traced| match traced {
            Traced::Loaded { ref stdout, .. } if !stdout.starts_with(loaded) => {
                Exec::LibraryRefused(String::from_utf8_lossy(&stdout[..stdout.len().min(200)]).trim().to_owned())
            }
            Traced::Loaded { .. } => Exec::of(traced, good_output),
            Traced::NotLoaded(errno) => Exec::Failed(errno),
            Traced::KilledInExec(signal) => Exec::Failed(-signal),
        })
    }

    fn of(traced: Traced, good_output: &[u8]) -> Exec {
        match traced {
            Traced::Loaded { status, stdout } if status.success() && stdout == good_output => Exec::RanGood,
            Traced::Loaded { status, stdout } => Exec::RanOther {
                what: format!("{status} printing {:?}", String::from_utf8_lossy(&stdout[..stdout.len().min(60)])),
                surely_other: !stdout.is_empty() && !good_output.starts_with(&stdout),
            },
            Traced::NotLoaded(libc::EACCES) => Exec::Refused,
            Traced::NotLoaded(errno) => Exec::Failed(errno),
            Traced::KilledInExec(signal) => Exec::Killed(signal),
        }
    }

    /// Whether the kernel loaded what was exec'd.
    pub(crate) fn loaded(&self) -> bool {
        matches!(self, Exec::RanGood | Exec::RanOther { .. })
    }
}

impl std::fmt::Display for Exec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Exec::RanGood => f.write_str("ran the good program"),
            Exec::RanOther { what, .. } => write!(f, "ran: {what}"),
            Exec::Refused => f.write_str("refused"),
            Exec::LibraryRefused(said) => write!(f, "refused ({said:?})"),
            Exec::Failed(errno) => write!(f, "exec failed with errno {errno}"),
            Exec::Killed(signal) => write!(f, "killed by signal {signal} during exec"),
        }
    }
}

/// What a tracked file holds: good (correctly signed) content, bad content, or, after a write
/// failed half-way, anything.
pub(crate) const GOOD: u64 = 0;
/// See [`GOOD`].
pub(crate) const BAD: u64 = 1;
/// See [`GOOD`].
pub(crate) const UNKNOWN: u64 = 2;

/// The content of a file with a single writer, as that writer knows it: a state word
/// `generation << 2 | content`, the generation odd while the file changes. An exec that reads
/// the same even word before and after knows what the file held throughout.
#[derive(Debug)]
pub(crate) struct Tracked(AtomicU64);

impl Tracked {
    pub(crate) const fn new(content: u64) -> Self {
        Tracked(AtomicU64::new(content))
    }

    pub(crate) fn load(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }

    /// Marks the file as changing; returns what it holds until then.
    pub(crate) fn begin(&self) -> u64 {
        let state = self.load();
        self.0.store((((state >> 2) + 1) << 2) | (state & 3), Ordering::SeqCst);
        state & 3
    }

    /// Marks the change done, the file now holding `content`.
    pub(crate) fn end(&self, content: u64) {
        self.0.store((((self.load() >> 2) + 1) << 2) | content, Ordering::SeqCst);
    }

    /// What the file held for the whole time between reading `before` and now, if it did not
    /// change.
    pub(crate) fn held_since(&self, before: u64) -> Option<u64> {
        (self.load() == before && (before >> 2).is_multiple_of(2)).then_some(before & 3)
    }
}

/// What the judge concluded about one exec.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Verdict {
    /// The content must not be loaded.
    pub(crate) must_not_load: bool,
    /// The content must run.
    pub(crate) must_run: bool,
}

/// Whether `what` is a wrong outcome for an exec that the module enforced throughout.
/// `may_die`: the good program may end early once loaded, without that being wrong: under
/// injected faults, or when what it loaded is a library (the kernel does not stop a library
/// being rewritten in place while it is mapped, so a change racing the exec may crash it).
pub(crate) fn wrong(what: &Exec, verdict: Verdict, may_die: bool) -> bool {
    match what {
        _ if verdict.must_not_load => what.loaded() || matches!(what, Exec::Killed(_)),
        _ if verdict.must_run => !matches!(what, Exec::RanGood | Exec::Failed(libc::ETXTBSY)),
        // Whatever a file held, nothing but the good program may run.
        Exec::RanOther { surely_other, .. } => !may_die || *surely_other,
        _ => false,
    }
}

/// The wrong outcomes found, the first few of them kept.
#[derive(Debug, Default)]
pub(crate) struct Violations(Mutex<Vec<String>>);

impl Violations {
    pub(crate) fn add(&self, message: String) {
        let mut v = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if v.len() < 20 {
            v.push(message);
        }
    }

    /// Those found since the last call.
    pub(crate) fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }
}
