// SPDX-License-Identifier: GPL-2.0

//! The end of an exec: what binfmt_elf mapped must be what the exec's check checked. It opens
//! the ELF interpreter a program names in `PT_INTERP` (`ld.so`) by path itself, past every
//! binfmt handler, after the handler has returned; so a check of the file the path names is not
//! enough on its own: a rename or a rewrite between that check and binfmt_elf's open would have
//! an unverified interpreter mapped.
//!
//! So the handler checks the file the path names now, and records its identity and change stamp
//! when it lets the exec through (`pending.rs`), with those of the program's real file when its
//! data is another inode's (overlayfs: the exec's write denial protects only the overlay inode).
//! When the exec has mapped everything, before the task runs a single instruction
//! ([`exec_loaded`], on the `sched_process_exec` tracepoint), the interpreter actually mapped
//! must be that file, unchanged, and a stacked program's real file must be unchanged and not
//! open for writing; otherwise the task is killed (in permissive mode, logged).

use crate::glue::exec_end::{self, Mapped};
use crate::glue::file::{Facts, FileId, FileRef};
use crate::pending::{self, Expected, Expecting};
use crate::refusal::{report, Access, Failure, KernelDetail};
use crate::state::STATE;
use crate::stats::Stats;
use crate::verdict;

/// Called at the end of every successful exec, before its first instruction, with preemption
/// disabled: the ELF interpreter binfmt_elf mapped must be the one checked for this exec, and a
/// stacked program's real file the one checked.
pub(crate) fn exec_loaded(program: FileRef<'_>) {
    // An exec the handler never saw began before the module was loaded: nothing about it was
    // checked, and nothing is now.
    let Some(expecting) = pending::take(exec_end::current_exec()) else {
        return;
    };
    let failure = match exec_end::mapped_files(program) {
        Ok(mapped) => match mismatch(&expecting, &mapped) {
            None => return,
            Some(failure) => failure,
        },
        // What was mapped cannot be told: refuse.
        Err(e) => Failure::error(e).in_interpreter(),
    };
    if report(program, failure, Access::Exec) {
        Stats::add(&STATE.stats.denied, 1);
        exec_end::kill_current();
    }
}

/// Forgets what the exiting current task left behind. Does not sleep.
pub(crate) fn task_exit() {
    pending::forget(exec_end::current_exec().task);
}

/// What is wrong with what the exec mapped, if anything.
fn mismatch(expecting: &Expecting, mapped: &Mapped) -> Option<Failure> {
    let replaced = || Failure::modified(KernelDetail::Replaced);
    if let Some(checked) = &expecting.stacked_program {
        match &mapped.program {
            Some(real) if verdict::keeps_stamp(checked) && unchanged(checked, real) => {}
            _ => {
                Stats::add(&STATE.stats.program_replaced, 1);
                return Some(replaced());
            }
        }
    }
    let interpreter = mapped.interpreter.as_ref()?;
    let checked = match expecting.interpreter {
        Expected::File(id) => verdict::keeps_stamp(&id) && unchanged(&id, interpreter),
        Expected::None => false,
    };
    if checked {
        return None;
    }
    Stats::add(&STATE.stats.interpreter_replaced, 1);
    Some(replaced().in_interpreter())
}

/// Whether `mapped` is the file `checked`, unchanged since, and not open for writing (its
/// exec's write denial covers the overlay's inode, not this one).
fn unchanged(checked: &FileId, mapped: &FileId) -> bool {
    checked.same_content(mapped) && !mapped.has(Facts::WRITERS)
}
