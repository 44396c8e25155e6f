// SPDX-License-Identifier: GPL-2.0

//! The control files in securityfs (`shim/securityfs.c`): created from the table in
//! `control.rs`, removed on drop. The shim reads and writes them through `callbacks.rs`.

use core::ffi::CStr;

use kernel::ffi::{c_char, c_int, c_uint};
use kernel::prelude::*;

use super::to_result;

extern "C" {
    fn elfsig_shim_fs_create_dir(name: *const c_char) -> c_int;
    fn elfsig_shim_fs_create_file(name: *const c_char, mode: u16, which: c_uint) -> c_int;
    fn elfsig_shim_fs_remove();
}

/// `/sys/kernel/security/<name>/` and its files. Removed, recursively, on drop.
pub(crate) struct ControlDir(());

impl ControlDir {
    /// Creates the directory `name` and one file per entry of `files` (its name and permission
    /// bits); the shim passes an entry's index back when the file is read or written.
    pub(crate) fn create(
        name: &CStr,
        files: impl IntoIterator<Item = (&'static CStr, u16)>,
    ) -> Result<Self> {
        // SAFETY: `name` is NUL-terminated; called once, from module init.
        to_result(unsafe { elfsig_shim_fs_create_dir(name.as_ptr().cast::<c_char>()) })?;
        // From here on, dropping the token removes whatever was created.
        let dir = ControlDir(());
        for (which, (file, mode)) in files.into_iter().enumerate() {
            let which = c_uint::try_from(which).map_err(|_| EINVAL)?;
            // SAFETY: the directory exists; `file` is NUL-terminated and static.
            to_result(unsafe {
                elfsig_shim_fs_create_file(file.as_ptr().cast::<c_char>(), mode, which)
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
