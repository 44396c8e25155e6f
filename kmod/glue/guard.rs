// SPDX-License-Identifier: GPL-2.0

//! The mapping guard (`shim/guard.c`): the kfuncs its BPF LSM programs call, which reach
//! [`crate::policy::check_mapping`] and [`crate::policy::check_mprotect`], and the programs'
//! links, which the module holds.

use kernel::error::code;
use kernel::ffi::{c_int, c_uint};
use kernel::prelude::*;

use super::file::{FileRef, RawFile};
use super::to_result;

extern "C" {
    fn elfsig_shim_guard_init() -> c_int;
    fn elfsig_shim_guard_hold(fd: c_int) -> c_int;
    fn elfsig_shim_guard_held() -> c_uint;
    fn elfsig_shim_guard_release();
}

/// The LSM hooks the guard's programs run on, as the shim numbers them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Hook {
    /// `mmap_file`: files mapped with `PROT_EXEC`.
    MmapFile = 0,
    /// `file_mprotect`: file mappings that ask for `PROT_EXEC`.
    FileMprotect = 1,
}

impl Hook {
    /// Every hook.
    pub(crate) const ALL: [Hook; 2] = [Hook::MmapFile, Hook::FileMprotect];

    fn bit(self) -> u32 {
        1 << self as u32
    }
}

/// Why the kernel cannot run the guard.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Unavailable {
    /// The kernel is built without `CONFIG_BPF_LSM`.
    NoBpfLsm,
    /// The module carries no BTF, so no program can find its kfuncs.
    NoModuleBtf,
    /// Registering the kfuncs failed with this errno.
    Failed(i32),
}

/// Offers the kfuncs to BPF LSM programs. Called once, from module init (kfunc sets cannot be
/// withdrawn: they go with the module's BTF when it unloads).
pub(crate) fn offer_kfuncs() -> Result<(), Unavailable> {
    // SAFETY: called once, from module init.
    match unsafe { elfsig_shim_guard_init() } {
        0 => Ok(()),
        1 => Err(Unavailable::NoBpfLsm),
        2 => Err(Unavailable::NoModuleBtf),
        e => Err(Unavailable::Failed(e)),
    }
}

/// Takes a reference on the BPF link behind the caller's descriptor `fd`, which must be an LSM
/// program on one of the [`Hook`]s on which the module holds no link yet; returns that hook.
pub(crate) fn hold(fd: i32) -> Result<Hook> {
    // SAFETY: looks `fd` up in the calling task's descriptor table, which the shim does safely
    // for any value.
    let hook = unsafe { elfsig_shim_guard_hold(fd) };
    to_result(hook)?;
    Hook::ALL
        .into_iter()
        .find(|h| *h as c_int == hook)
        .ok_or(code::EINVAL)
}

/// Whether the module holds a link on `hook`.
pub(crate) fn holds(hook: Hook) -> bool {
    // SAFETY: reads the shim's table under its lock.
    let held = unsafe { elfsig_shim_guard_held() };
    held & hook.bit() != 0
}

/// Drops every link the module holds.
pub(crate) fn release() {
    // SAFETY: takes the shim's table under its lock and drops what it held, once each.
    unsafe { elfsig_shim_guard_release() }
}

/// The links, dropped on module exit (which can only come once they are released: the
/// programs hold references on the module).
pub(crate) struct Links(());

impl Links {
    /// The token for module init.
    pub(crate) fn new() -> Self {
        Links(())
    }
}

impl Drop for Links {
    fn drop(&mut self) {
        release();
    }
}

/// The `mmap_file` kfunc's decision: 0 allows the mapping, `-EACCES` refuses it.
///
/// # Safety
///
/// `file` must be the file being mapped, open for the call.
#[no_mangle]
pub(crate) unsafe extern "C" fn elfsig_check_mapping(file: *mut RawFile) -> c_int {
    // SAFETY: the caller guarantees `file` is open for the call.
    match unsafe { FileRef::from_raw(file) } {
        Some(file) => crate::policy::check_mapping(file),
        None => 0,
    }
}

/// The `file_mprotect` kfunc's decision: 0 allows the change, `-EACCES` refuses it. Runs under
/// `mmap_lock`: does not sleep.
///
/// # Safety
///
/// `file` must be the file of the mapping being changed, open for the call.
#[no_mangle]
pub(crate) unsafe extern "C" fn elfsig_check_mprotect(file: *mut RawFile) -> c_int {
    // SAFETY: the caller guarantees `file` is open for the call.
    match unsafe { FileRef::from_raw(file) } {
        Some(file) => crate::policy::check_mprotect(file),
        None => 0,
    }
}
