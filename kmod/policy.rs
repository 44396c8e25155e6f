// SPDX-License-Identifier: GPL-2.0

//! The decisions: an exec (the program and its ELF interpreter) and, with the mapping guard, a
//! file mapped executable, both through the same verdict cache; refuse or, in permissive mode,
//! log and allow. Also the mode, the dynamic loader policy and the lock.

use core::sync::atomic::{AtomicBool, Ordering};

use core::ffi::CStr;
use kernel::ffi::c_int;
use kernel::prelude::*;

use crate::cache::{Cache, Entry};
use crate::elfsig_core::{Detail, Reason};
use crate::glue::file::{FileId, FileRef};
use crate::glue::module;
use crate::glue::{audit, exec_end};
use crate::guard::Guard;
use crate::interpreter;
use crate::pending::Pending;
use crate::stats::Stats;
use crate::text::Message;
use crate::verify::{self, Failure, Verified};

/// The module's state: static, because the binfmt handler and the tracepoint probe have no
/// context pointer.
pub(crate) static STATE: State = State::new();

/// Mode, loader policy, lock, counters, the verdict cache, the execs under way and the mapping
/// guard.
pub(crate) struct State {
    enforce: AtomicBool,
    deny_loader: AtomicBool,
    locked: AtomicBool,
    /// The counters.
    pub(crate) stats: Stats,
    /// The verdict cache.
    pub(crate) cache: Cache,
    /// What each exec under way expects as its ELF interpreter.
    pub(crate) pending: Pending,
    /// The mapping guard.
    pub(crate) guard: Guard,
}

impl State {
    const fn new() -> Self {
        State {
            enforce: AtomicBool::new(true),
            deny_loader: AtomicBool::new(false),
            locked: AtomicBool::new(false),
            stats: Stats::new(),
            cache: Cache::new(),
            pending: Pending::new(),
            guard: Guard::new(),
        }
    }

    /// Whether refusals are enforced.
    pub(crate) fn enforcing(&self) -> bool {
        self.enforce.load(Ordering::Acquire)
    }

    /// Whether running a dynamic loader directly (`ld.so ./program`) is refused: the loader maps
    /// the program itself, so no exec check ever sees it.
    pub(crate) fn denying_loader(&self) -> bool {
        self.deny_loader.load(Ordering::Acquire)
    }

    /// Refuses or allows running a dynamic loader directly; allowing it again is refused while
    /// locked.
    pub(crate) fn set_deny_loader(&self, deny: bool) -> Result {
        if !deny && self.locked() {
            return Err(EPERM);
        }
        self.deny_loader.store(deny, Ordering::Release);
        Ok(())
    }

    /// Whether the mode is locked to enforce until reboot.
    pub(crate) fn locked(&self) -> bool {
        self.locked.load(Ordering::Acquire)
    }

    /// Switches between enforce and permissive; refused while locked. A change flushes the
    /// cache, so that every file is looked at again under the new mode.
    pub(crate) fn set_enforcing(&self, enforce: bool) -> Result {
        if !enforce && self.locked() {
            return Err(EPERM);
        }
        if self.enforce.swap(enforce, Ordering::AcqRel) != enforce {
            self.cache.flush();
        }
        Ok(())
    }

    /// Enforces until reboot: the mode cannot be changed, a loader policy of `deny` cannot be
    /// relaxed, the mapping guard cannot be released, and the module cannot be unloaded. Cannot fail, so that module init takes it
    /// last, once nothing else can fail.
    pub(crate) fn lock(&self) {
        // Enforcing is never refused.
        let _ = self.set_enforcing(true);
        if !self.locked.swap(true, Ordering::AcqRel) {
            // The reference is never dropped: rmmod fails with EWOULDBLOCK from now on.
            module::pin();
        }
    }

    /// Applies the `mode` and `deny_loader` module parameters (`lock` is applied last, by
    /// module init).
    pub(crate) fn configure(&self, mode: &[u8], deny_loader: bool) -> Result {
        let enforce = crate::control::MODE
            .parse(mode)
            .inspect_err(|_| pr_err!("mode must be enforce or permissive\n"))?;
        self.set_enforcing(enforce)?;
        self.set_deny_loader(deny_loader)
    }
}

/// Decides an exec. Returns `-ENOEXEC` to let it proceed (the next handler, binfmt_elf, loads
/// the file) and `-EACCES` to refuse it. Files that are not ELF pass through: scripts reach this
/// handler again with their interpreter.
pub(crate) fn check_exec(file: FileRef<'_>, head: &[u8]) -> c_int {
    if !head.starts_with(b"\x7fELF") {
        return ENOEXEC.to_errno();
    }
    let exec = exec_end::current_exec();
    let (mut name, mut unverified_name) = (KVec::new(), KVec::new());
    let interpreter = match check_program(file, &mut name) {
        Ok(interpreter) => interpreter,
        Err(failure) if report(file, failure, Access::Exec) => return refuse(exec),
        // Permissive: the interpreter is checked all the same, so that one run lists
        // everything that would be refused.
        Err(_) => verify::exec_info(file, &mut unverified_name)
            .ok()
            .and_then(|exec| exec.interpreter),
    };
    let (expected, verdict) = interpreter::check(interpreter);
    if let Err(failure) = verdict {
        if report(file, failure.in_interpreter(), Access::Exec) {
            return refuse(exec);
        }
    }
    if let Err(failure) = interpreter::record(exec, expected) {
        if report(file, failure, Access::Exec) {
            return refuse(exec);
        }
    }
    Stats::add(&STATE.stats.allowed, 1);
    ENOEXEC.to_errno()
}

/// What a refusal refuses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Access {
    /// Running the file (or a program naming it as ELF interpreter).
    Exec,
    /// Mapping it executable.
    Mmap,
    /// Making a mapping of it executable.
    Mprotect,
}

impl Access {
    /// The audit record's `op`.
    fn op(self) -> &'static core::ffi::CStr {
        match self {
            Access::Exec => c"elfsig_exec",
            Access::Mmap => c"elfsig_mmap",
            Access::Mprotect => c"elfsig_mprotect",
        }
    }

    /// What the log puts before the file's path.
    fn prefix(self) -> &'static core::ffi::CStr {
        match self {
            Access::Exec => c"",
            Access::Mmap => c"mmap of ",
            Access::Mprotect => c"mprotect of ",
        }
    }
}

/// Counts, logs and audits a refusal; returns whether it is enforced.
pub(crate) fn report(file: FileRef<'_>, failure: Failure, access: Access) -> bool {
    let reason = failure.refused.reason;
    STATE.stats.refused_for(reason);
    let enforced = STATE.enforcing();
    file.log_refusal(access.prefix(), Message::new(&failure).as_cstr(), enforced);
    let digest = match &failure.refused.detail {
        Detail::Trust(detail) => detail.digest(),
        _ => None,
    };
    let cause = Message::new(&reason.name());
    audit::refusal(file, access.op(), cause.as_cstr(), digest, enforced);
    enforced
}

/// Refuses the current exec.
fn refuse(exec: exec_end::Exec) -> c_int {
    interpreter::forget(exec);
    Stats::add(&STATE.stats.denied, 1);
    EACCES.to_errno()
}

/// Checks a program; returns the ELF interpreter it names (which binfmt_elf opens directly,
/// past every binfmt handler). A cached program costs one lookup (and, when it is dynamically
/// linked, reading its interpreter's name); only what is not cached is read and hashed. A
/// dynamic loader run directly is refused when the policy says so.
fn check_program<'n>(
    file: FileRef<'_>,
    name: &'n mut KVec<u8>,
) -> Result<Option<&'n CStr>, Failure> {
    Stats::add(&STATE.stats.checked, 1);
    match lookup(file)? {
        Lookup::Hit(entry) => {
            loader_allowed(entry.loader)?;
            if !entry.has_interpreter {
                return Ok(None);
            }
            Ok(verify::exec_info(file, name)?.interpreter)
        }
        Lookup::Miss(id, epoch) => {
            let verified = verify_into_cache(file, &id, epoch, name)?;
            loader_allowed(verified.exec.loader)?;
            Ok(verified.exec.interpreter)
        }
    }
}

/// What the verdict cache says of a file.
enum Lookup {
    /// It verified, and has not changed since.
    Hit(Entry),
    /// Not cached: its identity and the cache's epoch, taken before verifying it.
    Miss(FileId, u64),
}

/// Looks `file` up in the verdict cache. A cached verdict stands unless its digest has been
/// revoked since.
fn lookup(file: FileRef<'_>) -> Result<Lookup, Failure> {
    let stats = &STATE.stats;
    let id = file.id();
    let epoch = STATE.cache.epoch();
    match STATE.cache.lookup(&id, epoch) {
        Some(entry) => {
            Stats::add(&stats.cache_hits, 1);
            not_revoked_since_cached(&entry.digest)?;
            Ok(Lookup::Hit(entry))
        }
        None => {
            Stats::add(&stats.cache_misses, 1);
            Ok(Lookup::Miss(id, epoch))
        }
    }
}

/// Whether a cached verdict's digest is still not revoked. While the guard runs, its key hook
/// flushes the cache on every revocation ([`revocation_added`]), and the cache was flushed when
/// it started running, so a cached verdict was checked after the last revocation: only without
/// the guard is there a `.blacklist` lookup to make, on every hit.
pub(crate) fn not_revoked_since_cached(digest: &[u8; 32]) -> Result<(), Failure> {
    if STATE.guard.active() {
        Ok(())
    } else {
        verify::not_revoked(digest)
    }
}

/// A key was added to `.blacklist` (seen by the guard's key hook): every cached verdict is
/// checked again, revocation included.
pub(crate) fn revocation_added() {
    STATE.cache.flush();
}

/// Verifies a file the cache missed, and caches the verdict when its identity would show any
/// later change.
fn verify_into_cache<'n>(
    file: FileRef<'_>,
    id: &FileId,
    epoch: u64,
    name: &'n mut KVec<u8>,
) -> Result<Verified<'n>, Failure> {
    let verified = timed_verify(file, name)?;
    if id.cacheable {
        STATE.cache.insert(id, epoch, &Entry::of(&verified));
    }
    Ok(verified)
}

/// Decides a file mapped with `PROT_EXEC` (the guard's `mmap_file` program, before the mapping
/// exists): 0 allows it, `-EACCES` refuses it. The file must verify as a program would, through
/// the same cache; a dynamic loader is mapped like any library. Files that are not regular
/// (devices) are not file contents, and are left alone as IMA leaves them.
pub(crate) fn check_mapping(file: FileRef<'_>) -> c_int {
    if STATE.guard.seen() {
        // The guard runs from now on, its key hook with it: what was cached before may have
        // been revoked unseen.
        STATE.cache.flush();
    }
    if !file.is_regular() {
        return 0;
    }
    let stats = &STATE.stats;
    Stats::add(&stats.mmap_checked, 1);
    let mut name = KVec::new();
    let verdict = match lookup(file) {
        Ok(Lookup::Miss(id, epoch)) => verify_into_cache(file, &id, epoch, &mut name).map(|_| ()),
        other => other.map(|_| ()),
    };
    if let Err(failure) = verdict {
        if report(file, failure, Access::Mmap) {
            Stats::add(&stats.mmap_denied, 1);
            return EACCES.to_errno();
        }
    }
    Stats::add(&stats.mmap_allowed, 1);
    0
}

/// Decides a file mapping that is not executable asking for `PROT_EXEC` (`mprotect`): refused,
/// as IMA refuses it, since the hook runs under `mmap_lock`, where the file cannot be read to
/// verify it. Nothing real software does needs it: loaders map code executable from the start.
pub(crate) fn check_mprotect(file: FileRef<'_>) -> c_int {
    if !file.is_regular() {
        return 0;
    }
    if report(file, Failure::new(Reason::MadeExecutable), Access::Mprotect) {
        Stats::add(&STATE.stats.mmap_denied, 1);
        return EACCES.to_errno();
    }
    0
}

/// Refuses a dynamic loader run directly, when the policy says so.
fn loader_allowed(loader: bool) -> Result<(), Failure> {
    if loader && STATE.denying_loader() {
        Err(Failure::new(Reason::LoaderExec))
    } else {
        Ok(())
    }
}

/// Verifies `file`, counting the time it takes.
pub(crate) fn timed_verify<'n>(
    file: FileRef<'_>,
    name: &'n mut KVec<u8>,
) -> Result<Verified<'n>, Failure> {
    let start = module::now_ns();
    let result = verify::verify_file(file, name);
    Stats::add(
        &STATE.stats.verify_ns,
        module::now_ns().saturating_sub(start),
    );
    result
}
