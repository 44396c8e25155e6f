// SPDX-License-Identifier: GPL-2.0

//! Code made at run time (W^X): memory a process makes executable after its exec, which no
//! file check sees. A process whose program is not signed with the `jit` entitlement gets no
//! executable memory that is not a signed file's, mapped as verified: no anonymous memory
//! (private or shared, heap, stack) executable, by `mmap`, `mprotect` or `READ_IMPLIES_EXEC`;
//! no mapping writable and executable at once; no mapping made executable once it was not
//! (`hooks::check_mprotect` refuses that for file mappings to everyone); no memory at all
//! under the `READ_IMPLIES_EXEC` personality; no userfaultfd, which fills the pages of a
//! signed file's executable mapping (a hole of a sparse copy) with any content, without
//! writing them; and no program whose exec would give it an executable stack.
//!
//! The rule follows the process, not the file: the exec's verdict (`hooks::check_exec`) says
//! what the program is entitled to, the exec records it (`pending.rs`), and when the exec can
//! no longer fail, the guard's `bprm_committed_creds` program has the module keep it for the
//! task ([`exec_committed`], in `shim/records.c`: the module's own table, which no one else
//! writes); its `task_alloc` program has it copied to every child ([`task_alloc`]). A task
//! with no record ran its program before the guard was attached, and nothing is known of it,
//! as nothing is of an exec before the module was loaded; unless the initramfs loaded the
//! module (`trust_initramfs`, [`initramfs_loaded_the_module`]) and attached the guard: then
//! such a task runs one of the initramfs's programs, which are entitled to nothing, and the
//! rules bind it.
//!
//! The same record says whether the process may write another's code (the `debugger`
//! entitlement): trace it with `ptrace` (and poke its text), read or write its memory with
//! `process_vm_readv` or `process_vm_writev`, or open a process's memory for writing through
//! `/proc/PID/mem`, which the kernel may force into memory that is not writable (its own
//! text too, with `proc_mem.force_override=always`).
//!
//! With the `runtime` setting `off`, nothing here refuses anything.

use core::sync::atomic::{AtomicBool, Ordering};

use kernel::ffi::c_int;
use kernel::prelude::*;

use crate::cache::Runtime;
use crate::elfsig_core::{Entitlement, Entitlements};
use crate::glue::{exec_end, records};
use crate::pending;
use crate::refusal::{report_process, Access, Failure, KernelDetail};
use crate::state::STATE;
use crate::stats::Stats;

/// What the module keeps for a task: 0 when nothing is known (its program ran before the guard
/// was attached), else [`Record::KNOWN`] with the entitlements' bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Record(u32);

impl Record {
    const KNOWN: u32 = 1 << 31;

    /// The record of a process whose program is entitled to `entitlements`.
    fn of(entitlements: Entitlements) -> Self {
        Record(Self::KNOWN | entitlements.bits())
    }

    /// The record of `task` (a `struct task_struct *`, as a key). An entry of 0 is an exec
    /// that began ([`exec_begins`]) and never completed, which leaves the task's program what
    /// it was: as unknown as with no entry.
    fn of_task(task: usize) -> Self {
        match records::get(task) {
            Some(record) if record != 0 => Record(record),
            _ => Self::unrecorded(),
        }
    }

    /// The record of a task that has none: its program ran before the guard was attached.
    /// Nothing is known of it, unless the initramfs loaded the module (`trust_initramfs`) and
    /// attached the guard: then what such a task runs is the initramfs's own (udevd, in
    /// initramfs-tools' boot, runs while the guard is attached), which is entitled to nothing.
    fn unrecorded() -> Self {
        if INITRAMFS_LOADED_THE_MODULE.load(Ordering::Relaxed)
            && STATE.guard.attached_from_initramfs()
        {
            Self::of(Entitlements::NONE)
        } else {
            Record(0)
        }
    }

    /// The current task's record.
    fn current() -> Self {
        Self::of_task(exec_end::current_exec().task)
    }

    /// Whether the rules bind the process: its program is known, and not entitled to
    /// `entitlement`.
    fn lacks(self, entitlement: Entitlement) -> bool {
        self.0 & Self::KNOWN != 0
            && !Entitlements::from_bits(self.0 & !Self::KNOWN)
                .unwrap_or(Entitlements::NONE)
                .has(entitlement)
    }
}

/// Set once, at init, when the initramfs loaded the module with `trust_initramfs`.
static INITRAMFS_LOADED_THE_MODULE: AtomicBool = AtomicBool::new(false);

/// The initramfs loaded the module (`trust_initramfs`, at init, before the guard can be
/// attached): the tasks without a record run its programs.
pub(crate) fn initramfs_loaded_the_module() {
    INITRAMFS_LOADED_THE_MODULE.store(true, Ordering::Relaxed);
}

/// Whether the rules are enforced or logged (`runtime` = `enforce`), rather than off.
fn on() -> bool {
    STATE.runtime_rules()
}

/// Why the exec of a program that does `runtime` is refused, if it is, unless it is entitled to
/// `jit`: one that would have an executable stack (binfmt_elf would make the stack executable,
/// and for a 32-bit program without `PT_GNU_STACK` all its readable memory, before any hook can
/// refuse it), or a segment writable and executable (the guard would refuse binfmt_elf's
/// mapping of it past the point of no return, and the process would die instead of its exec
/// failing). The caller reports it.
pub(crate) fn check_exec(runtime: Runtime) -> Result<(), Failure> {
    if !on() || runtime.entitlements.has(Entitlement::Jit) {
        return Ok(());
    }
    if runtime.writable_executable {
        return Err(Failure::runtime(KernelDetail::WritableExecutable));
    }
    if runtime.executable_stack {
        return Err(Failure::runtime(KernelDetail::ExecutableStack));
    }
    Ok(())
}

/// An exec begins (the guard's `bprm_creds_for_exec` program, where the exec may still fail):
/// the current task gets an entry for the record its exec will give it, if it has none, so
/// that nothing can fail to store that record. 0, or `-ENOMEM`.
pub(crate) fn exec_begins() -> c_int {
    let task = exec_end::current_exec().task;
    if records::get(task).is_some() {
        return 0;
    }
    match records::put(task, 0) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// The current task's exec can no longer fail: it keeps what its program is entitled to, as
/// the handler checked it. An exec the handler let through without recording anything (out of
/// memory in permissive mode, a program that is not ELF) is entitled to nothing. Does not
/// sleep.
pub(crate) fn exec_committed() {
    let exec = exec_end::current_exec();
    let entitlements =
        pending::peek(exec).map_or(Entitlements::NONE, |expecting| expecting.entitlements);
    // The entry was made when the exec began (`exec_begins`).
    records::set(exec.task, Record::of(entitlements).0);
}

/// The current task forks `child` (a `struct task_struct *`, as a key): the child runs the same
/// program, under the same record. 0, or `-ENOMEM`, which fails the fork.
pub(crate) fn task_alloc(child: usize) -> c_int {
    match records::get(exec_end::current_exec().task) {
        Some(record) => match records::put(child, record) {
            Ok(()) => 0,
            Err(e) => e.to_errno(),
        },
        None => {
            // What a task freed at the same address may have left.
            records::forget(child);
            0
        }
    }
}

/// The current task exits: its record goes. Does not sleep.
pub(crate) fn task_exit() {
    records::forget(exec_end::current_exec().task);
}

/// What a process asks of its memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Memory {
    /// Memory that is no file's content made executable: anonymous, private or shared, heap,
    /// stack, a device's.
    Anonymous,
    /// A mapping writable and executable at once.
    WritableExecutable,
    /// Any memory placed under the `READ_IMPLIES_EXEC` personality, which makes whatever is
    /// readable executable (the heap too, which no other hook sees).
    ReadImpliesExec,
    /// A userfaultfd, which fills the pages it is asked for (executable ones too) with any
    /// content, without anyone writing them.
    Userfaultfd,
}

/// Decides a request for executable memory by the current process: 0 allows it, `-EACCES`
/// refuses it (in permissive mode, logged and allowed). Does not sleep.
pub(crate) fn check_memory(memory: Memory) -> c_int {
    if !on() || !Record::current().lacks(Entitlement::Jit) {
        return 0;
    }
    let detail = match memory {
        Memory::Anonymous => KernelDetail::AnonymousExecutable,
        Memory::WritableExecutable => KernelDetail::WritableExecutable,
        Memory::ReadImpliesExec => KernelDetail::ReadImpliesExec,
        Memory::Userfaultfd => KernelDetail::Userfaultfd,
    };
    if report_process(Failure::runtime(detail), Access::Memory) {
        Stats::add(&STATE.stats.memory_denied, 1);
        return EACCES.to_errno();
    }
    0
}

/// What a process asks to do to another's memory, or to its own past its protections.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Injection {
    /// Trace another process (`ptrace` attach or seize), or read or write its memory
    /// (`process_vm_readv`, `process_vm_writev`).
    Ptrace,
    /// Be asked by a child to trace it (`PTRACE_TRACEME`): the tracer is the child's parent,
    /// this `struct task_struct *`, as a key.
    TracedBy(usize),
    /// Open a process's memory (`/proc/PID/mem`, its own too) for writing: the kernel may force
    /// such writes into memory that is not writable, code included.
    ProcMem,
}

/// Decides what the current process asks of a process's memory: 0 allows it, `-EPERM`
/// (ptrace) or `-EACCES` (`/proc/PID/mem`) refuses it, unless the tracer's program is entitled
/// to `debugger` (in permissive mode, logged and allowed). Does not sleep: the ptrace hooks
/// hold `task_lock` or `tasklist_lock`.
pub(crate) fn check_injection(injection: Injection) -> c_int {
    let tracer = match injection {
        Injection::TracedBy(parent) => Record::of_task(parent),
        Injection::Ptrace | Injection::ProcMem => Record::current(),
    };
    if !on() || !tracer.lacks(Entitlement::Debugger) {
        return 0;
    }
    let (detail, errno) = match injection {
        Injection::Ptrace | Injection::TracedBy(_) => (KernelDetail::Ptrace, EPERM),
        Injection::ProcMem => (KernelDetail::ProcMem, EACCES),
    };
    if report_process(Failure::injection(detail), Access::Inject) {
        Stats::add(&STATE.stats.ptrace_denied, 1);
        return errno.to_errno();
    }
    0
}
