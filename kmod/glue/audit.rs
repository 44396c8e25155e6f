// SPDX-License-Identifier: GPL-2.0

//! Audit records of refusals, and of policies loaded or refused (`shim/audit.c`).

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

/// Records a policy written to the `policy` control file: `loaded` (or cleared), or refused
/// because of `cause`; `serial` is its serial where it is known (0 otherwise).
pub(crate) fn policy(cause: &CStr, serial: u64, loaded: bool) {
    // SAFETY: `cause` is NUL-terminated and outlives the call.
    unsafe { elfsig_shim_audit_policy(cause.as_ptr().cast::<c_char>(), serial, loaded) }
}
