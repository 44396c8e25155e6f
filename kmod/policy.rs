// SPDX-License-Identifier: GPL-2.0

//! The exec decision: check the program and its ELF interpreter (through the verdict cache),
//! then refuse or, in permissive mode, log and allow. Also the mode, the dynamic loader policy
//! and the lock.

use kernel::ffi::c_int;
use core::fmt::Write;
use core::sync::atomic::{AtomicBool, Ordering};

use kernel::error::code;
use kernel::prelude::*;
use kernel::str::CStr;

use crate::cache::{Cache, Entry};
use crate::ffi::{self, ExecFile, FileRef};
use crate::stats::{Reason, Stats};
use crate::verify::{self, Failure};

/// The module's state: static, because the binfmt handler has no context pointer.
pub(crate) static STATE: State = State::new();

/// Mode, loader policy, lock, counters and cache.
pub(crate) struct State {
    enforce: AtomicBool,
    deny_loader: AtomicBool,
    locked: AtomicBool,
    /// The counters.
    pub(crate) stats: Stats,
    /// The verdict cache.
    pub(crate) cache: Cache,
}

impl State {
    const fn new() -> Self {
        State {
            enforce: AtomicBool::new(true),
            deny_loader: AtomicBool::new(false),
            locked: AtomicBool::new(false),
            stats: Stats::new(),
            cache: Cache::new(),
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
            return Err(code::EPERM);
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
            return Err(code::EPERM);
        }
        if self.enforce.swap(enforce, Ordering::AcqRel) != enforce {
            self.cache.flush();
        }
        Ok(())
    }

    /// Enforces until reboot: the mode cannot be changed, a loader policy of `deny` cannot be
    /// relaxed, and the module cannot be unloaded.
    pub(crate) fn lock(&self) -> Result {
        self.set_enforcing(true)?;
        if self.locked.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        // The reference is never dropped: rmmod fails with EBUSY from now on.
        if !ffi::pin_module() {
            self.locked.store(false, Ordering::Release);
            return Err(code::EBUSY);
        }
        Ok(())
    }
}

/// Applies the module parameters.
pub(crate) fn configure(mode: &[u8], deny_loader: bool, lock: bool) -> Result {
    match mode {
        b"enforce" => STATE.set_enforcing(true)?,
        b"permissive" => STATE.set_enforcing(false)?,
        _ => {
            pr_err!("mode must be enforce or permissive\n");
            return Err(code::EINVAL);
        }
    }
    STATE.set_deny_loader(deny_loader)?;
    if lock {
        STATE.lock()?;
    }
    Ok(())
}

/// Decides an exec. Returns `-ENOEXEC` to let it proceed (the next handler, binfmt_elf, loads
/// the file) and `-EACCES` to refuse it. Files that are not ELF pass through: scripts reach this
/// handler again with their interpreter.
pub(crate) fn check_exec(file: FileRef<'_>, head: &[u8]) -> c_int {
    if !head.starts_with(b"\x7fELF") {
        return code::ENOEXEC.to_errno();
    }
    let stats = &STATE.stats;
    match check_program(file) {
        Ok(()) => {
            Stats::add(&stats.allowed, 1);
            code::ENOEXEC.to_errno()
        }
        Err(failure) => {
            stats.refused_for(failure.reason);
            let enforced = STATE.enforcing();
            let mut message = Message::new();
            let _ = write!(message, "{failure}");
            file.log_refusal(message.as_cstr(), enforced);
            if enforced {
                Stats::add(&stats.denied, 1);
                code::EACCES.to_errno()
            } else {
                Stats::add(&stats.allowed, 1);
                code::ENOEXEC.to_errno()
            }
        }
    }
}

/// Checks a program and the ELF interpreter it names, which binfmt_elf opens directly, past
/// every binfmt handler. A cached program costs one lookup (and, when it is dynamically linked,
/// reading its interpreter's name and looking the interpreter up); only what is not cached is
/// read and hashed. A dynamic loader run directly is refused when the policy says so.
fn check_program(file: FileRef<'_>) -> Result<(), Failure> {
    let stats = &STATE.stats;
    Stats::add(&stats.checked, 1);
    let id = file.id();
    let epoch = STATE.cache.epoch();
    let mut name = KVec::new();
    let interpreter = match STATE.cache.lookup(&id, epoch) {
        Some(entry) => {
            Stats::add(&stats.cache_hits, 1);
            // A cached verdict stands unless its digest has been revoked since.
            verify::not_revoked(&entry.digest)?;
            loader_allowed(entry.loader)?;
            if !entry.has_interpreter {
                return Ok(());
            }
            verify::exec_info(file, &mut name)?.interpreter
        }
        None => {
            Stats::add(&stats.cache_misses, 1);
            let verified = timed_verify(file, &mut name)?;
            if id.cacheable {
                STATE.cache.insert(&id, epoch, &Entry::of(&verified));
            }
            loader_allowed(verified.exec.loader)?;
            verified.exec.interpreter
        }
    };
    match interpreter {
        Some(path) => check_interpreter(path).map_err(Failure::in_interpreter),
        None => Ok(()),
    }
}

/// Checks the ELF interpreter at `path`. A cache check needs only the identity of the file the
/// path names; it is opened (and so protected from writes while it is hashed) only to verify it.
fn check_interpreter(path: &CStr) -> Result<(), Failure> {
    let stats = &STATE.stats;
    Stats::add(&stats.checked, 1);
    let epoch = STATE.cache.epoch();
    if let Some(entry) = ffi::path_id(path).ok().and_then(|id| STATE.cache.lookup(&id, epoch)) {
        Stats::add(&stats.cache_hits, 1);
        return verify::not_revoked(&entry.digest);
    }
    Stats::add(&stats.cache_misses, 1);
    let interpreter = ExecFile::open(path).map_err(Failure::io)?;
    let id = interpreter.file().id();
    // Its own interpreter does not matter here (binfmt_elf does not follow a second one), but
    // the entry serves the interpreter run directly too.
    let mut name = KVec::new();
    let verified = timed_verify(interpreter.file(), &mut name)?;
    if id.cacheable {
        STATE.cache.insert(&id, epoch, &Entry::of(&verified));
    }
    Ok(())
}

/// Refuses a dynamic loader run directly, when the policy says so.
fn loader_allowed(loader: bool) -> Result<(), Failure> {
    if loader && STATE.denying_loader() { Err(Failure::new(Reason::LoaderExec)) } else { Ok(()) }
}

/// Verifies `file`, counting the time it takes.
fn timed_verify<'n>(file: FileRef<'_>, name: &'n mut KVec<u8>) -> Result<verify::Verified<'n>, Failure> {
    let start = ffi::now_ns();
    let result = verify::verify_file(file, name);
    Stats::add(&STATE.stats.verify_ns, ffi::now_ns().saturating_sub(start));
    result
}

/// A log message in a fixed buffer, always NUL-terminated, truncated if too long.
struct Message {
    buf: [u8; 200],
    len: usize,
}

impl Message {
    fn new() -> Self {
        Message { buf: [0; 200], len: 0 }
    }

    fn as_cstr(&self) -> &CStr {
        let with_nul = self.buf.get(..=self.len).unwrap_or(b"\0");
        CStr::from_bytes_with_nul(with_nul).unwrap_or(kernel::c_str!("?"))
    }
}

impl Write for Message {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        // Keep the last byte for the NUL; drop interior NULs.
        for b in s.bytes().filter(|b| *b != 0) {
            if self.len.saturating_add(1) >= self.buf.len() {
                break;
            }
            if let Some(slot) = self.buf.get_mut(self.len) {
                *slot = b;
                self.len = self.len.saturating_add(1);
            }
        }
        Ok(())
    }
}
