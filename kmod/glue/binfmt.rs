// SPDX-License-Identifier: GPL-2.0

//! The binfmt handler (`shim/binfmt.c`), at the head of the list: every exec reaches
//! [`crate::policy::check_exec`] before binfmt_elf loads anything.

use kernel::ffi::c_int;

use super::file::{FileRef, RawFile};

extern "C" {
    fn elfsig_shim_binfmt_register();
    fn elfsig_shim_binfmt_unregister();
}

/// The handler, registered. Unregistered on drop.
pub(crate) struct Registration(());

impl Registration {
    /// Registers the handler ahead of binfmt_elf. Cannot fail: the last step of module init.
    pub(crate) fn register() -> Self {
        // SAFETY: called once, from module init, with everything the handler uses set up.
        unsafe { elfsig_shim_binfmt_register() };
        Registration(())
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        // SAFETY: undoes `register`, once; a handler still running holds a module reference.
        unsafe { elfsig_shim_binfmt_unregister() }
    }
}

/// Called by the shim's handler for every exec: `-ENOEXEC` lets it proceed to the next
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
    // SAFETY: the caller guarantees `file` is open for the call.
    let Some(file) = (unsafe { FileRef::from_raw(file) }) else {
        return kernel::error::code::ENOEXEC.to_errno();
    };
    let head = if head.is_null() {
        &[][..]
    } else {
        // SAFETY: the caller guarantees `head` is valid for `head_len` bytes.
        unsafe { core::slice::from_raw_parts(head, head_len) }
    };
    crate::policy::check_exec(file, head)
}
