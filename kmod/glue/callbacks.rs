// SPDX-License-Identifier: GPL-2.0

//! Every function C calls in the module, in one place: the binfmt handler (`shim/binfmt.c`),
//! the probes at the end of an exec and of a task (`shim/exec_end.c`), the mapping guard's
//! kfuncs (`shim/guard.c`) and the control files (`shim/securityfs.c`). Each turns the raw
//! pointers it is given into safe types and calls the room that decides: `hooks.rs`,
//! `exec_end.rs`, `control.rs`. Nothing else in the module is called from C.

use kernel::ffi::{c_char, c_int, c_uint};
use kernel::prelude::*;

use super::file::{FileRef, RawFile};
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

kfunc_callback!(
    /// The `mmap_file` kfunc's decision: 0 allows the mapping, `-EACCES` refuses it.
    elfsig_check_mapping => hooks::check_mapping
);

kfunc_callback!(
    /// The `file_mprotect` kfunc's decision: 0 allows the change, `-EACCES` refuses it. Runs
    /// under `mmap_lock`: does not sleep.
    elfsig_check_mprotect => hooks::check_mprotect
);

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
