// SPDX-License-Identifier: GPL-2.0

//! Every function C calls in the module, in one place: the binfmt handler (`shim/binfmt.c`),
//! the probes at the end of an exec and of a task (`shim/exec_end.c`), the mapping guard's
//! kfuncs (`shim/guard.c`) and the control files (`shim/securityfs.c`). Each turns the raw
//! pointers it is given into safe types and calls the room that decides: `hooks.rs`,
//! `exec_end.rs`, `runtime.rs`, `control.rs`. Nothing else in the module is called from C.

use kernel::ffi::{c_char, c_int, c_uint};
use kernel::prelude::*;

use super::file::{FileRef, RawFile};
use crate::runtime::{self, Injection, Memory};
use crate::{control, exec_end, hooks};

/// `decide`'s answer for the file C passed, or `absent` when it passed none.
///
/// # Safety
///
/// `file` must be null or a `struct file *` that stays open for the call.
unsafe fn on_file(
    file: *mut RawFile,
    absent: c_int,
    decide: impl FnOnce(FileRef<'_>) -> c_int,
) -> c_int {
    // SAFETY: the caller guarantees a non-null `file` is open for the call.
    match unsafe { FileRef::from_raw(file) } {
        Some(file) => decide(file),
        None => absent,
    }
}

/// Called by the shim's binfmt handler for every exec: `-ENOEXEC` lets it proceed to the next
/// handler, `-EACCES` refuses it.
///
/// # Safety
///
/// `file` must be the exec's `bprm->file`, open for the call; `head` must be valid for reads
/// of `head_len` bytes (`bprm->buf`) for the call.
#[no_mangle]
pub(crate) unsafe extern "C" fn elfsig_check_exec(
    file: *mut RawFile,
    head: *const u8,
    head_len: usize,
) -> c_int {
    let head = if head.is_null() {
        &[][..]
    } else {
        // SAFETY: the caller guarantees `head` is valid for `head_len` bytes.
        unsafe { core::slice::from_raw_parts(head, head_len) }
    };
    // SAFETY: the caller guarantees `file` is open for the call.
    unsafe {
        on_file(file, ENOEXEC.to_errno(), |file| {
            hooks::check_exec(file, head)
        })
    }
}

/// Called by the probe for every exec that loaded, before its first instruction. Does not
/// sleep: it runs with preemption disabled.
///
/// # Safety
///
/// `program` must be the exec's `bprm->file`, open for the call.
#[no_mangle]
pub(crate) unsafe extern "C" fn elfsig_exec_loaded(program: *mut RawFile) {
    // SAFETY: the caller guarantees `program` is open for the call.
    if let Some(program) = unsafe { FileRef::from_raw(program) } {
        exec_end::exec_loaded(program);
    }
}

/// Called by the probe for every task that exits. Does not sleep.
#[no_mangle]
pub(crate) extern "C" fn elfsig_task_exit() {
    exec_end::task_exit();
    runtime::task_exit();
}

/// Defines a kfunc's callback: C passes the file the hook is about (null for none, which is
/// allowed), and the hook's decision, 0 or a negative errno, goes back.
macro_rules! kfunc_callback {
    ($(#[$doc:meta])* $name:ident => $hook:path) => {
        $(#[$doc])*
        ///
        /// # Safety
        ///
        /// `file` must be null or the file the hook is about, open for the call.
        #[no_mangle]
        pub(crate) unsafe extern "C" fn $name(file: *mut RawFile) -> c_int {
            // SAFETY: the caller guarantees a non-null `file` is open for the call.
            unsafe { on_file(file, 0, $hook) }
        }
    };
}

/// The `mmap_file` kfuncs' decision on memory mapped with `PROT_EXEC` (`writable` when with
/// `PROT_WRITE`) by the current task: 0 allows the mapping, `-EACCES` refuses it.
///
/// # Safety
///
/// `file` must be null (anonymous memory) or the file mapped, open for the call.
#[no_mangle]
pub(crate) unsafe extern "C" fn elfsig_check_mapping(file: *mut RawFile, writable: bool) -> c_int {
    // SAFETY: the caller guarantees a non-null `file` is open for the call.
    let file = unsafe { FileRef::from_raw(file) };
    hooks::check_mapping(file, writable)
}

/// The `file_mprotect` kfunc's decision on a mapping asking for `PROT_EXEC` (`writable` when
/// with `PROT_WRITE`; `executable` when it is executable already) by the current task: 0
/// allows the change, `-EACCES` refuses it. Runs under `mmap_lock`: does not sleep.
///
/// # Safety
///
/// `file` must be null (anonymous memory) or the mapping's file, open for the call.
#[no_mangle]
pub(crate) unsafe extern "C" fn elfsig_check_mprotect(
    file: *mut RawFile,
    executable: bool,
    writable: bool,
) -> c_int {
    // SAFETY: the caller guarantees a non-null `file` is open for the call.
    let file = unsafe { FileRef::from_raw(file) };
    hooks::check_mprotect(file, executable, writable)
}

/// The `mmap_addr` kfunc's decision on memory placed by the current task, whose personality
/// has `READ_IMPLIES_EXEC`: 0 allows it, `-EACCES` refuses it. Does not sleep.
#[no_mangle]
pub(crate) extern "C" fn elfsig_check_implied_exec() -> c_int {
    runtime::check_memory(Memory::ReadImpliesExec)
}

/// The `inode_init_security_anon` kfunc's decision on a userfaultfd made by the current task:
/// 0 allows it, `-EACCES` refuses it. Does not sleep.
#[no_mangle]
pub(crate) extern "C" fn elfsig_check_userfaultfd() -> c_int {
    runtime::check_memory(Memory::Userfaultfd)
}

/// The `ptrace_access_check` kfunc's decision on a process traced, or its memory read or
/// written, by the current task: 0 allows it, `-EPERM` refuses it. Does not sleep.
#[no_mangle]
pub(crate) extern "C" fn elfsig_check_ptrace() -> c_int {
    runtime::check_injection(Injection::Ptrace)
}

/// The `ptrace_traceme` kfunc's decision on the current task asking its parent, `parent` (a
/// `struct task_struct *`, only a key), to trace it: 0 allows it, `-EPERM` refuses it. Does
/// not sleep.
#[no_mangle]
pub(crate) extern "C" fn elfsig_check_traced_by(parent: usize) -> c_int {
    runtime::check_injection(Injection::TracedBy(parent))
}

/// The `file_open` kfunc's decision on a process's memory opened for writing through
/// `/proc/PID/mem` by the current task: 0 allows it, `-EACCES` refuses it.
#[no_mangle]
pub(crate) extern "C" fn elfsig_check_proc_mem() -> c_int {
    runtime::check_injection(Injection::ProcMem)
}

/// The `bprm_creds_for_exec` kfunc for an exec beginning: 0, or `-ENOMEM` when the current
/// task cannot get the entry its exec's record will go in.
#[no_mangle]
pub(crate) extern "C" fn elfsig_exec_begins() -> c_int {
    runtime::exec_begins()
}

/// The `bprm_committed_creds` kfunc: the current task's exec can no longer fail. Does not
/// sleep.
#[no_mangle]
pub(crate) extern "C" fn elfsig_exec_committed() {
    runtime::exec_committed();
}

/// The `task_alloc` kfunc: the current task forks `child` (a `struct task_struct *`, only a
/// key). 0, or `-ENOMEM`, which fails the fork.
#[no_mangle]
pub(crate) extern "C" fn elfsig_task_alloc(child: usize) -> c_int {
    runtime::task_alloc(child)
}

kfunc_callback!(
    /// The `bprm_creds_for_exec` kfunc's decision for `execveat(AT_EXECVE_CHECK)`: 0 when
    /// execve would run the file, else a negative errno.
    elfsig_check_exec_query => hooks::check_exec_query
);

kfunc_callback!(
    /// The `file_open` kfunc's decision for a file opened for writing while a process maps it
    /// executable: 0 allows it, `-ETXTBSY` refuses it.
    elfsig_check_write => hooks::check_write
);

/// The key kfunc: a key was added to `.blacklist`, revoking a digest.
#[no_mangle]
pub(crate) extern "C" fn elfsig_revocation_added() {
    hooks::revocation_added();
}

/// Fills `buf` with the contents of control file `which`; returns the length or an errno.
///
/// # Safety
///
/// `buf` must be valid for writes of `len` bytes, and not used by anything else during the call.
#[no_mangle]
pub(crate) unsafe extern "C" fn elfsig_control_read(
    which: c_uint,
    buf: *mut c_char,
    len: usize,
) -> isize {
    if buf.is_null() {
        return EINVAL.to_errno() as isize;
    }
    // SAFETY: the caller guarantees `buf` is valid and exclusively ours for `len` bytes.
    let out = unsafe { core::slice::from_raw_parts_mut(buf.cast::<u8>(), len) };
    to_ssize(control::read(which, out))
}

/// Applies what was written to control file `which`; returns 0 or an errno.
///
/// # Safety
///
/// `buf` must be valid for reads of `len` bytes for the duration of the call.
#[no_mangle]
pub(crate) unsafe extern "C" fn elfsig_control_write(
    which: c_uint,
    buf: *const c_char,
    len: usize,
) -> isize {
    if buf.is_null() {
        return EINVAL.to_errno() as isize;
    }
    // SAFETY: the caller guarantees `buf` is valid for `len` bytes.
    let input = unsafe { core::slice::from_raw_parts(buf.cast::<u8>(), len) };
    to_ssize(control::write(which, input).map(|()| 0))
}

/// What a control file's read or write returns to the shim: a length, or a negative errno.
fn to_ssize(result: Result<usize>) -> isize {
    match result {
        Ok(n) => isize::try_from(n).unwrap_or(0),
        Err(e) => e.to_errno() as isize,
    }
}

/// The most bytes one write to control file `which` may bring.
#[no_mangle]
pub(crate) extern "C" fn elfsig_control_write_max(which: c_uint) -> usize {
    control::write_max(which)
}
