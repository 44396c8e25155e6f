// SPDX-License-Identifier: GPL-2.0

//! The mapping guard (`shim/guard.c`): offering the kfuncs its BPF LSM programs call (which
//! reach the module through `callbacks.rs`), and the programs' links, which the module holds.

use kernel::error::code;
use kernel::ffi::{c_int, c_uint};
use kernel::prelude::*;

use super::to_result;

/// How many hooks the guard's programs attach to, one program on each (`ELFSIG_GUARD_HOOKS`):
/// `mmap_file`, `file_mprotect`, `key_post_create_or_update`, `bprm_creds_for_exec`,
/// `file_open`, `file_release`, `bprm_committed_creds`, `task_alloc`, `mmap_addr`,
/// `ptrace_access_check`, `ptrace_traceme`, `inode_init_security_anon`, and `bpf_prog`, which
/// keeps the others' programs from anyone else.
pub(crate) const HOOKS: usize = 13;

extern "C" {
    fn elfsig_shim_guard_init() -> c_int;
    fn elfsig_shim_guard_attach(fds: *const c_int, count: c_uint) -> c_int;
    fn elfsig_shim_guard_generation() -> u64;
    fn elfsig_shim_guard_release();
    fn elfsig_shim_guard_exit();
}

/// Why the kernel cannot run the guard.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Unavailable {
    /// The kernel is built without `CONFIG_BPF_LSM`.
    NoBpfLsm,
    /// The module carries no BTF, so no program can find its kfuncs.
    NoModuleBtf,
    /// The kernel renumbered the module's BTF (made on a distilled base), so that its kfuncs'
    /// IDs are not those its build wrote (`shim/kfunc_ids.c`).
    DistilledBtf,
    /// Registering the kfuncs failed with this errno.
    Failed(i32),
}

impl Unavailable {
    /// From what `elfsig_shim_guard_init()` returned: `None` for 0.
    pub(crate) fn from_code(code: i32) -> Option<Self> {
        match code {
            0 => None,
            1 => Some(Unavailable::NoBpfLsm),
            2 => Some(Unavailable::NoModuleBtf),
            3 => Some(Unavailable::DistilledBtf),
            errno => Some(Unavailable::Failed(errno)),
        }
    }

    /// What `elfsig_shim_guard_init()` returned (`enum elfsig_guard_unavailable`, or an errno).
    pub(crate) fn code(self) -> i32 {
        match self {
            Unavailable::NoBpfLsm => 1,
            Unavailable::NoModuleBtf => 2,
            Unavailable::DistilledBtf => 3,
            Unavailable::Failed(errno) => errno,
        }
    }
}

/// Offers the kfuncs to BPF LSM programs. Called once, from module init (kfunc sets cannot be
/// withdrawn: they go with the module's BTF when it unloads).
pub(crate) fn offer_kfuncs() -> Result<(), Unavailable> {
    // SAFETY: called once, from module init.
    match Unavailable::from_code(unsafe { elfsig_shim_guard_init() }) {
        None => Ok(()),
        Some(why) => Err(why),
    }
}

/// Takes the BPF links behind the caller's descriptors `fds`, one LSM program on each hook the
/// guard uses, all or none; refused while the module holds links (`EBUSY`), and while ftrace is
/// switched off (`EAGAIN`: their trampolines would not run).
pub(crate) fn attach(fds: &[i32]) -> Result {
    let count = c_uint::try_from(fds.len()).map_err(|_| code::EINVAL)?;
    // SAFETY: `fds` is valid for reads of `count` descriptors; the shim looks each up in the
    // calling task's descriptor table, which is safe for any value.
    to_result(unsafe { elfsig_shim_guard_attach(fds.as_ptr(), count) })
}

/// Which links the module holds: a number that every attach and every release changes, odd
/// while it holds them.
pub(crate) fn generation() -> u64 {
    // SAFETY: reads one word of the shim's.
    unsafe { elfsig_shim_guard_generation() }
}

/// Drops the links the module holds.
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
        // SAFETY: once, at module exit: releases the links as `release` does, and lets ftrace
        // be switched off again, which nothing can ask the module to prevent any more.
        unsafe { elfsig_shim_guard_exit() }
    }
}
