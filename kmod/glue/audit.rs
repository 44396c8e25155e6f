// SPDX-License-Identifier: GPL-2.0

//! Audit records of refusals, and of policies loaded or refused (`shim/audit.c`), and the log
//! line of a refusal that names a process rather than a file.

use core::ffi::{c_char, CStr};

use crate::glue::file::{FileRef, RawFile};

extern "C" {
    fn elfsig_shim_audit_refusal(
        file: *mut RawFile,
        op: *const c_char,
        cause: *const c_char,
        digest: *const u8,
        enforced: bool,
    );
    fn elfsig_shim_audit_policy(cause: *const c_char, serial: u64, loaded: bool);
    fn elfsig_shim_audit_task_refusal(op: *const c_char, cause: *const c_char, enforced: bool);
    fn elfsig_shim_log_task_refusal(what: *const c_char, message: *const c_char, enforced: bool);
}

/// Records that `file` is refused (or, when not `enforced`, would be): `op` says how it was
/// used (`elfsig_exec`, `elfsig_mmap`, `elfsig_mprotect`), `cause` why (elfsig-core's reason
/// name), `digest` is its SHA-256 where the refusal knows it. Does not sleep.
pub(crate) fn refusal(
    file: FileRef<'_>,
    op: &CStr,
    cause: &CStr,
    digest: Option<&[u8; 32]>,
    enforced: bool,
) {
    let digest = digest.map_or(core::ptr::null(), |d| d.as_ptr());
    // SAFETY: `file` is open for the call (FileRef's invariant); `op` and `cause` are
    // NUL-terminated and outlive it; `digest` is null or 32 readable bytes that outlive it.
    unsafe {
        elfsig_shim_audit_refusal(
            file.as_ptr(),
            op.as_ptr().cast::<c_char>(),
            cause.as_ptr().cast::<c_char>(),
            digest,
            enforced,
        )
    }
}

/// Records that the current process is refused (or, when not `enforced`, would be) what `op`
/// says, because of `cause`: the record names the process and its program. Does not sleep.
pub(crate) fn task_refusal(op: &CStr, cause: &CStr, enforced: bool) {
    // SAFETY: `op` and `cause` are NUL-terminated and outlive the call.
    unsafe {
        elfsig_shim_audit_task_refusal(
            op.as_ptr().cast::<c_char>(),
            cause.as_ptr().cast::<c_char>(),
            enforced,
        )
    }
}

/// Logs (rate-limited) that the current process is refused `what`, with `message`: the line
/// names the process by its name and pid. Does not sleep.
pub(crate) fn task_log_refusal(what: &CStr, message: &CStr, enforced: bool) {
    // SAFETY: `what` and `message` are NUL-terminated and outlive the call.
    unsafe {
        elfsig_shim_log_task_refusal(
            what.as_ptr().cast::<c_char>(),
            message.as_ptr().cast::<c_char>(),
            enforced,
        )
    }
}

/// Records a policy written to the `policy` control file: `loaded` (or cleared), or refused
/// because of `cause`; `serial` is its serial where it is known (0 otherwise).
pub(crate) fn policy(cause: &CStr, serial: u64, loaded: bool) {
    // SAFETY: `cause` is NUL-terminated and outlives the call.
    unsafe { elfsig_shim_audit_policy(cause.as_ptr().cast::<c_char>(), serial, loaded) }
}
