// SPDX-License-Identifier: GPL-2.0

//! The decisions: an exec (the program and its ELF interpreter), an
//! `execveat(AT_EXECVE_CHECK)`, and, with the mapping guard, a file mapped executable, all
//! through the same verdict cache; refuse or, in permissive mode, log and allow. Also opening
//! for writing a file mapped executable, the mode, the dynamic loader policy, what applies to
//! untrusted mounts, and the lock.

use core::sync::atomic::{AtomicBool, Ordering};

use core::ffi::CStr;
use kernel::ffi::c_int;
use kernel::prelude::*;

use crate::cache::{Cache, Entry};
use crate::elfsig_core::{Detail, ReadSomeAt, Reason};
use crate::filesystem::{self, Keeping, Untrusted};
use crate::glue::file::{ExecFile, Facts, FileId, FileRef};
use crate::glue::module;
use crate::glue::{audit, exec_end};
use crate::guard::Guard;
use crate::interpreter;
use crate::pending::Expecting;
use crate::stats::Stats;
use crate::text::Message;
use crate::verify::{self, Failure, Verified};

/// The module's state: static, because the binfmt handler and the tracepoint probe have no
/// context pointer.
pub(crate) static STATE: State = State::new();

/// Mode, loader policy, untrusted mounts, lock, counters, the verdict cache and the mapping
/// guard.
pub(crate) struct State {
    enforce: AtomicBool,
    deny_loader: AtomicBool,
    verify_untrusted: AtomicBool,
    locked: AtomicBool,
    /// The counters.
    pub(crate) stats: Stats,
    /// The verdict cache.
    pub(crate) cache: Cache,
    /// The mapping guard.
    pub(crate) guard: Guard,
}

impl State {
    const fn new() -> Self {
        State {
            enforce: AtomicBool::new(true),
            deny_loader: AtomicBool::new(false),
            verify_untrusted: AtomicBool::new(false),
            locked: AtomicBool::new(false),
            stats: Stats::new(),
            cache: Cache::new(),
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

    /// What applies to files on mounts the kernel does not trust.
    pub(crate) fn untrusted(&self) -> Untrusted {
        if self.verify_untrusted.load(Ordering::Acquire) {
            Untrusted::Verify
        } else {
            Untrusted::Refuse
        }
    }

    /// Refuses files on untrusted mounts, or verifies them every time; allowing them is
    /// refused while locked.
    pub(crate) fn set_untrusted(&self, untrusted: Untrusted) -> Result {
        let verify = untrusted == Untrusted::Verify;
        if verify && self.locked() {
            return Err(EPERM);
        }
        self.verify_untrusted.store(verify, Ordering::Release);
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
    /// relaxed nor untrusted mounts allowed, the mapping guard cannot be released, and the
    /// module cannot be unloaded. Cannot fail, so that module init takes it last, once nothing
    /// else can fail.
    pub(crate) fn lock(&self) {
        // Enforcing is never refused.
        let _ = self.set_enforcing(true);
        if !self.locked.swap(true, Ordering::AcqRel) {
            // The reference is never dropped: rmmod fails with EWOULDBLOCK from now on.
            module::pin();
        }
    }

    /// Applies the `mode`, `untrusted` and `deny_loader` module parameters (`lock` is applied
    /// last, by module init).
    pub(crate) fn configure(&self, mode: &[u8], untrusted: &[u8], deny_loader: bool) -> Result {
        let enforce = crate::control::MODE
            .parse(mode)
            .inspect_err(|_| pr_err!("mode must be enforce or permissive\n"))?;
        self.set_enforcing(enforce)?;
        let untrusted = crate::control::UNTRUSTED
            .parse(untrusted)
            .inspect_err(|_| pr_err!("untrusted must be refuse or verify\n"))?;
        self.set_untrusted(if untrusted {
            Untrusted::Refuse
        } else {
            Untrusted::Verify
        })?;
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
    let (interpreter, program) = match check_program(file, &mut name) {
        Ok((interpreter, id)) => (interpreter, Some(id)),
        Err(failure) if report(file, failure, Access::Exec) => return refuse(exec),
        // Permissive: the interpreter is checked all the same, so that one run lists
        // everything that would be refused.
        Err(_) => (
            verify::exec_info(file, &mut unverified_name)
                .ok()
                .and_then(|exec| exec.interpreter),
            None,
        ),
    };
    let (expected, verdict) = interpreter::check(interpreter);
    if let Err(failure) = verdict {
        if report(file, failure.in_interpreter(), Access::Exec) {
            return refuse(exec);
        }
    }
    let expecting = Expecting {
        interpreter: expected,
        stacked_program: program.filter(|id| id.has(crate::glue::file::Facts::STACKED)),
    };
    if let Err(failure) = interpreter::record(exec, &expecting) {
        if report(file, failure, Access::Exec) {
            return refuse(exec);
        }
    }
    Stats::add(&STATE.stats.allowed, 1);
    ENOEXEC.to_errno()
}

/// How many nested `#!` scripts an exec follows (binfmt_script's `BINPRM_MAX_RECURSION`).
const MAX_SCRIPTS: u32 = 4;

/// What execve returns for scripts nested deeper (`-ELOOP`, which the kernel crate lacks).
const ELOOP: c_int = -40;

/// How much of a file binfmt_script reads to find the interpreter (`BINPRM_BUF_SIZE`).
const HEAD: usize = 256;

/// Decides an `execveat(AT_EXECVE_CHECK)` of `file` (the guard's `bprm_creds_for_exec`
/// program): what an `execve` of it would meet. The kernel runs no binfmt handler for it, so the
/// checks are the handler's, without recording anything for an exec end that will not come: an
/// ELF program and the interpreter it names; for a `#!` script, the interpreter it names, as
/// binfmt_script finds it (nested scripts too); anything else passes, as the handler lets it
/// pass. 0 when `execve` would run it, else an errno (`EACCES` for a refusal).
pub(crate) fn check_exec_query(file: FileRef<'_>) -> c_int {
    let mut script_interpreter: Option<ExecFile> = None;
    let mut depth = 0u32;
    loop {
        let current = script_interpreter.as_ref().map_or(file, ExecFile::file);
        let mut head = [0u8; HEAD];
        let mut reader = current;
        let len = match reader.read_some_at(0, &mut head) {
            Ok(len) => len,
            Err(_) => return EIO.to_errno(),
        };
        let head = head.get(..len).unwrap_or(&[]);
        if head.starts_with(b"\x7fELF") {
            return check_queried_program(current);
        }
        let mut path = [0u8; HEAD];
        let Some(path) = script(head, &mut path) else {
            return 0;
        };
        if depth >= MAX_SCRIPTS {
            return ELOOP;
        }
        depth = depth.saturating_add(1);
        match ExecFile::open(path) {
            Ok(next) => script_interpreter = Some(next),
            Err(e) => return e.to_errno(),
        }
    }
}

/// The program of an `execveat(AT_EXECVE_CHECK)`: checked as the exec handler checks one.
fn check_queried_program(file: FileRef<'_>) -> c_int {
    let mut name = KVec::new();
    let verdict = check_program(file, &mut name).and_then(|(interpreter, _)| {
        interpreter::check(interpreter)
            .1
            .map_err(Failure::in_interpreter)
    });
    match verdict {
        Err(failure) if report(file, failure, Access::Check) => EACCES.to_errno(),
        _ => 0,
    }
}

/// The interpreter a `#!` script names in its first bytes `head`, as binfmt_script reads it,
/// NUL-terminated in `out`; `None` when `head` is no script execve would run. (No `split`,
/// `position` or `KVec::push`: their index arithmetic brings overflow panics into the module.)
fn script<'b>(head: &[u8], out: &'b mut [u8; HEAD]) -> Option<&'b CStr> {
    let rest = head.strip_prefix(b"#!")?;
    // Without a newline in the buffer, binfmt_script wants the name to end within it.
    let complete = rest.contains(&b'\n') || head.len() < HEAD;
    let blank = |b: &u8| *b == b' ' || *b == b'\t';
    let mut ended = false;
    let name = rest
        .iter()
        .take_while(|b| **b != b'\n')
        .skip_while(|b| blank(b))
        .take_while(|b| {
            ended = blank(b) || **b == 0;
            !ended
        });
    *out = [0; HEAD];
    let mut named = false;
    // The name is shorter than `rest`, itself shorter than `out`: a NUL stays after it.
    for (slot, b) in out.iter_mut().zip(name) {
        *slot = *b;
        named = true;
    }
    if !named || !(complete || ended) {
        return None;
    }
    CStr::from_bytes_until_nul(out).ok()
}

/// What a refusal refuses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Access {
    /// Running the file (or a program naming it as ELF interpreter).
    Exec,
    /// Asking whether it may run (`execveat(AT_EXECVE_CHECK)`).
    Check,
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
            Access::Check => c"elfsig_execve_check",
            Access::Mmap => c"elfsig_mmap",
            Access::Mprotect => c"elfsig_mprotect",
        }
    }

    /// What the log puts before the file's path.
    fn prefix(self) -> &'static core::ffi::CStr {
        match self {
            Access::Exec => c"",
            Access::Check => c"execveat(AT_EXECVE_CHECK) of ",
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

/// Decides opening `file` for writing while a process maps it executable (the guard's
/// `file_open` program): refused with `ETXTBSY`, as writing a running program is, so that no
/// one changes the code of a library or a program under the processes that run it (in
/// permissive mode, logged and allowed). Counted, logged and audited.
pub(crate) fn check_write(file: FileRef<'_>) -> c_int {
    Stats::add(&STATE.stats.writes_refused, 1);
    let enforced = STATE.enforcing();
    file.log_refusal(c"opening for writing ", c"mapped executable", enforced);
    audit::refusal(file, c"elfsig_write", c"mapped_executable", None, enforced);
    if enforced {
        ETXTBSY.to_errno()
    } else {
        0
    }
}

/// Checks a program; returns the ELF interpreter it names (which binfmt_elf opens directly,
/// past every binfmt handler) and the identity of its real file as checked. A cached program
/// costs one lookup (and, when it is dynamically linked, reading its interpreter's name); only
/// what is not cached is read and hashed. A dynamic loader run directly is refused when the
/// policy says so.
fn check_program<'n>(
    file: FileRef<'_>,
    name: &'n mut KVec<u8>,
) -> Result<(Option<&'n CStr>, FileId), Failure> {
    Stats::add(&STATE.stats.checked, 1);
    match lookup(file)? {
        Lookup::Hit(entry, id) => {
            loader_allowed(entry.loader)?;
            if !entry.has_interpreter {
                return Ok((None, id));
            }
            Ok((verify::exec_info(file, name)?.interpreter, id))
        }
        Lookup::Miss(miss) => {
            let (verified, id) = verify_into_cache(file, miss, name)?;
            loader_allowed(verified.exec.loader)?;
            Ok((verified.exec.interpreter, id))
        }
    }
}

/// Checks a file through the cache, as a program is checked but for the loader policy (an ELF
/// interpreter, a file mapped executable); returns the identity of its real file as checked.
pub(crate) fn check_file(file: FileRef<'_>, name: &mut KVec<u8>) -> Result<FileId, Failure> {
    match lookup(file)? {
        Lookup::Hit(_, id) => Ok(id),
        Lookup::Miss(miss) => verify_into_cache(file, miss, name).map(|(_, id)| id),
    }
}

/// What the cache says of a file.
enum Lookup {
    /// It verified, and has not changed since.
    Hit(Entry, FileId),
    /// Not cached: verify it.
    Miss(Miss),
}

/// A file to verify: its identity as looked up, how its verdict may be kept, and the cache's
/// epoch, taken before verifying it.
struct Miss {
    keeping: Keeping,
    epoch: u64,
}

/// Looks `file` up in the verdict cache, where its filesystem lets a verdict be kept
/// ([`filesystem::admit`], which refuses what may not be checked at all). A cached verdict
/// stands unless its digest has been revoked since.
fn lookup(file: FileRef<'_>) -> Result<Lookup, Failure> {
    let stats = &STATE.stats;
    let id = file.id();
    let keeping = filesystem::admit(&id, STATE.untrusted())?;
    let epoch = STATE.cache.epoch();
    if keeping == Keeping::Cache {
        if let Some(entry) = STATE.cache.lookup(&id, epoch) {
            Stats::add(&stats.cache_hits, 1);
            not_revoked_since_cached(&entry.digest)?;
            return Ok(Lookup::Hit(entry, id));
        }
    }
    Stats::add(&stats.cache_misses, 1);
    Ok(Lookup::Miss(Miss { keeping, epoch }))
}

/// What the cache says of the file `id` names (found by path, not opened), where its
/// filesystem lets a verdict be kept: `None` when it must be opened and checked.
pub(crate) fn cached(id: &FileId) -> Option<Entry> {
    match filesystem::admit(id, STATE.untrusted()) {
        Ok(Keeping::Cache) => STATE.cache.lookup(id, STATE.cache.epoch()),
        _ => None,
    }
}

/// Whether the end of an exec can rely on the identity and stamp of the file `id` names to tell
/// that what binfmt_elf mapped is what was checked: its stamp moves with every change (its
/// filesystem lets a verdict be kept), or the guard verified the mapping as it was made.
pub(crate) fn keeps_stamp(id: &FileId) -> bool {
    STATE.guard.active() || matches!(filesystem::admit(id, STATE.untrusted()), Ok(Keeping::Cache))
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

/// Verifies a file the cache missed, with writers to its real inode refused meanwhile, and
/// caches the verdict where its filesystem lets it be kept. Returns it with the identity and
/// stamp the file had while it was verified.
fn verify_into_cache<'n>(
    file: FileRef<'_>,
    miss: Miss,
    name: &'n mut KVec<u8>,
) -> Result<(Verified<'n>, FileId), Failure> {
    // Exec denies writes to the inode it opened; under overlayfs the data is another inode's.
    let _writers_refused = file
        .deny_writes()
        .map_err(|_| Failure::new(Reason::OpenForWriting))?;
    // What the verdict is about: the file as it is now that no one can write it.
    let id = file.id();
    let keeping = filesystem::admit(&id, STATE.untrusted())?;
    // Where there is no dirty tracking, pages pinned for DMA (io_uring's registered buffers
    // over a shared mapping) may be written after the verdict, with no writer counted and no
    // stamp moved.
    if id.has(Facts::NO_WRITEBACK) && file.pinned() {
        return Err(Failure::new(Reason::OpenForWriting));
    }
    let verified = timed_verify(file, name)?;
    if keeping == Keeping::Cache && miss.keeping == Keeping::Cache {
        STATE.cache.insert(&id, miss.epoch, &Entry::of(&verified));
    }
    Ok((verified, id))
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
    if let Err(failure) = check_file(file, &mut name) {
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
