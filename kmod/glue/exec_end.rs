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
    fn elfsig_shim_mapped_files(
        program: *mut RawFile,
        program_id: *mut FileId,
        interpreter_id: *mut FileId,
    ) -> c_int;
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

/// What the current task's new image maps, by the real inodes that hold the data.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Mapped {
    /// The program's.
    pub(crate) program: Option<FileId>,
    /// The one other file's: the ELF interpreter.
    pub(crate) interpreter: Option<FileId>,
}

/// What the current task's new image maps besides `program`'s own pages. Fails with `EAGAIN`
/// when the address space is locked by someone else and `EMLINK` when more than one other file
/// is mapped, or the program's pages are of more than one file. Does not sleep.
pub(crate) fn mapped_files(program: FileRef<'_>) -> Result<Mapped> {
    let (mut program_id, mut interpreter_id) = (FileId::default(), FileId::default());
    // SAFETY: `program` is open (the type's invariant); the ids are valid
    // `struct elfsig_file_id`s.
    let ret =
        unsafe { elfsig_shim_mapped_files(program.as_ptr(), &mut program_id, &mut interpreter_id) };
    if ret < 0 {
        return Err(Error::from_errno(ret));
    }
    if ret > 3 {
        return Err(code::EINVAL);
    }
    Ok(Mapped {
        program: (ret & 1 != 0).then_some(program_id),
        interpreter: (ret & 2 != 0).then_some(interpreter_id),
    })
}

/// Ends the current task before it returns to user space. Does not sleep.
pub(crate) fn kill_current() {
    // SAFETY: sends SIGKILL to the current task.
    unsafe { elfsig_shim_kill_current() }
}
