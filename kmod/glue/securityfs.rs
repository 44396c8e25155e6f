// SPDX-License-Identifier: GPL-2.0

//! The control files in securityfs (`shim/securityfs.c`): created from the table in
//! `control.rs`, removed on drop, and the callbacks through which the shim reads and writes
//! them.

use kernel::ffi::{c_char, c_int, c_uint};
use kernel::prelude::*;

use super::to_result;
use crate::control::{self, ControlFile};

extern "C" {
    fn elfsig_shim_fs_create_dir(name: *const c_char) -> c_int;
    fn elfsig_shim_fs_create_file(name: *const c_char, mode: u16, which: c_uint) -> c_int;
    fn elfsig_shim_fs_remove();
}

/// `/sys/kernel/security/<name>/` and its files. Removed, recursively, on drop.
pub(crate) struct ControlDir(());

impl ControlDir {
    /// Creates the directory `name` and one file per entry of `files`; the shim passes an
    /// entry's index back to [`elfsig_control_read`] and [`elfsig_control_write`].
    pub(crate) fn create(name: &core::ffi::CStr, files: &[ControlFile]) -> Result<Self> {
        // SAFETY: `name` is NUL-terminated; called once, from module init.
        to_result(unsafe { elfsig_shim_fs_create_dir(name.as_ptr().cast::<c_char>()) })?;
        // From here on, dropping the token removes whatever was created.
        let dir = ControlDir(());
        for (which, file) in files.iter().enumerate() {
            let which = c_uint::try_from(which).map_err(|_| EINVAL)?;
            // SAFETY: the directory exists; `file.name` is NUL-terminated and static.
            to_result(unsafe {
                elfsig_shim_fs_create_file(file.name.as_ptr().cast::<c_char>(), file.mode, which)
            })?;
        }
        Ok(dir)
    }
}

impl Drop for ControlDir {
    fn drop(&mut self) {
        // SAFETY: undoes `create`, once. An open control file holds a module reference, so no
        // file operation runs in the module after this.
        unsafe { elfsig_shim_fs_remove() }
    }
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
    match control::read(which, out) {
        Ok(n) => isize::try_from(n).unwrap_or(0),
        Err(e) => e.to_errno() as isize,
    }
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
    match control::write(which, input) {
        Ok(()) => 0,
        Err(e) => e.to_errno() as isize,
    }
}

/// The most bytes one write to control file `which` may bring.
#[no_mangle]
pub(crate) extern "C" fn elfsig_control_write_max(which: c_uint) -> usize {
    control::write_max(which)
}
