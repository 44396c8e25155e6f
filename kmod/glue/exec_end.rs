// SPDX-License-Identifier: GPL-2.0

//! The end of an exec (`shim/exec_end.c`): a probe on the `sched_process_exec` tracepoint,
//! which fires after binfmt_elf has mapped the program and its ELF interpreter and before the
//! task runs any of it, and one on `sched_process_exit`; what the new image maps; ending a task
//! before it runs.

use kernel::error::{code, Error};
use kernel::ffi::c_int;
use kernel::prelude::*;

use super::file::{FileId, FileRef, RawFile};
use super::to_result;

extern "C" {
    fn elfsig_shim_exec_end_register() -> c_int;
    fn elfsig_shim_exec_end_unregister();
    fn elfsig_shim_current_exec(task: *mut usize, exec_id: *mut u64);
    fn elfsig_shim_mapped_interpreter(program: *mut RawFile, id: *mut FileId) -> c_int;
    fn elfsig_shim_kill_current();
}

/// The probes, registered. Unregistered on drop, which returns once no probe runs.
pub(crate) struct Probe(());

impl Probe {
    /// Attaches to `sched_process_exec` and `sched_process_exit`; fails on kernels without
    /// tracepoints.
    pub(crate) fn register() -> Result<Self> {
        // SAFETY: called once, from module init; undone by `drop`.
        to_result(unsafe { elfsig_shim_exec_end_register() }).inspect_err(|_| {
            pr_err!("cannot attach to the sched_process_exec tracepoint (CONFIG_TRACEPOINTS)\n")
        })?;
        Ok(Probe(()))
    }
}

impl Drop for Probe {
    fn drop(&mut self) {
        // SAFETY: undoes `register`, once; waits until no probe runs.
        unsafe { elfsig_shim_exec_end_unregister() }
    }
}

/// Which exec the current task is in: the task, and its count of successful execs (which
/// the exec being checked increments once it can no longer fail).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Exec {
    /// The task's address, as a key: never dereferenced.
    pub(crate) task: usize,
    /// `self_exec_id`.
    pub(crate) count: u64,
}

/// The current task's exec.
pub(crate) fn current_exec() -> Exec {
    let (mut task, mut count) = (0usize, 0u64);
    // SAFETY: writes two valid out-parameters.
    unsafe { elfsig_shim_current_exec(&mut task, &mut count) };
    Exec { task, count }
}

/// The identity of the ELF interpreter the current task's new image maps besides `program`,
/// or `None` when it maps no other file. Fails with `EAGAIN` when the address space is locked
/// by someone else and `EMLINK` when more than one other file is mapped. Does not sleep.
pub(crate) fn mapped_interpreter(program: FileRef<'_>) -> Result<Option<FileId>> {
    let mut id = FileId::default();
    // SAFETY: `program` is open (the type's invariant); `id` is a valid `struct elfsig_file_id`.
    match unsafe { elfsig_shim_mapped_interpreter(program.as_ptr(), &mut id) } {
        0 => Ok(None),
        1 => Ok(Some(id)),
        errno if errno < 0 => Err(Error::from_errno(errno)),
        _ => Err(code::EINVAL),
    }
}

/// Ends the current task before it returns to user space. Does not sleep.
pub(crate) fn kill_current() {
    // SAFETY: sends SIGKILL to the current task.
    unsafe { elfsig_shim_kill_current() }
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
        crate::interpreter::exec_loaded(program);
    }
}

/// Called by the probe for every task that exits. Does not sleep.
#[no_mangle]
pub(crate) extern "C" fn elfsig_task_exit() {
    crate::interpreter::task_exit();
}
