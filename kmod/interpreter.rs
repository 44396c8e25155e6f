// SPDX-License-Identifier: GPL-2.0

//! The ELF interpreter a program names in `PT_INTERP` (`ld.so`), and what the end of an exec
//! checks. binfmt_elf opens the interpreter by path itself, past every binfmt handler, after
//! the handler has returned; so a check of the file the path names is not enough on its own: a
//! rename or a rewrite between that check and binfmt_elf's open would have an unverified
//! interpreter mapped.
//!
//! So the handler checks the file the path names now ([`check`]), and the exec records its
//! identity and change stamp when it is let through ([`record`]), with those of the program's
//! real file when its data is another inode's (overlayfs: the exec's write denial protects only
//! the overlay inode). When the exec has mapped everything, before the task runs a single
//! instruction ([`exec_loaded`], on the `sched_process_exec` tracepoint), the interpreter
//! actually mapped must be that file, unchanged, and a stacked program's real file must be
//! unchanged and not open for writing; otherwise the task is killed (in permissive mode,
//! logged).

use core::ffi::CStr;
use kernel::prelude::*;

use crate::glue::exec_end::{self, Exec, Mapped};
use crate::glue::file::{self, ExecFile, Facts, FileId, FileRef};
use crate::pending::{self, Expected, Expecting};
use crate::policy::{self, Access, STATE};
use crate::stats::Stats;
use crate::verify::{Failure, KernelDetail};

/// Checks the ELF interpreter at `path` (with `None`, notes that there is none). Returns what
/// the exec is to expect binfmt_elf to map, with the verdict. A cache check needs only the
/// identity of the file the path names; the file is opened (and so protected from writes while
/// it is hashed) only to verify it.
pub(crate) fn check(path: Option<&CStr>) -> (Expected, Result<(), Failure>) {
    let Some(path) = path else {
        return (Expected::None, Ok(()));
    };
    let stats = &STATE.stats;
    Stats::add(&stats.checked, 1);
    if let Ok(id) = file::path_id(path) {
        if let Some(entry) = policy::cached(&id) {
            Stats::add(&stats.cache_hits, 1);
            return (
                Expected::File(id),
                policy::not_revoked_since_cached(&entry.digest),
            );
        }
    }
    let interpreter = match ExecFile::open(path) {
        Ok(file) => file,
        Err(e) => {
            Stats::add(&stats.cache_misses, 1);
            return (Expected::None, Err(Failure::io(e)));
        }
    };
    // Its own interpreter does not matter here (binfmt_elf does not follow a second one), but
    // the entry serves the interpreter run directly too.
    let mut name = KVec::new();
    match policy::check_file(interpreter.file(), &mut name) {
        Ok(id) => (Expected::File(id), Ok(())),
        Err(failure) => (Expected::None, Err(failure)),
    }
}

/// Records what the current exec, which the handler lets through, expects to find mapped.
/// Fails when there is no memory to keep track of it.
pub(crate) fn record(exec: Exec, expecting: &Expecting) -> Result<(), Failure> {
    pending::expect(exec, expecting).map_err(Failure::error)
}

/// Forgets what the current exec expected: the handler refused it.
pub(crate) fn forget(exec: Exec) {
    pending::forget(exec.task);
}

/// Forgets what the exiting current task left behind. Does not sleep.
pub(crate) fn task_exit() {
    pending::forget(exec_end::current_exec().task);
}

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
    if policy::report(program, failure, Access::Exec) {
        Stats::add(&STATE.stats.denied, 1);
        exec_end::kill_current();
    }
}

/// What is wrong with what the exec mapped, if anything.
fn mismatch(expecting: &Expecting, mapped: &Mapped) -> Option<Failure> {
    let replaced = || Failure::modified(KernelDetail::Replaced);
    if let Some(checked) = &expecting.stacked_program {
        match &mapped.program {
            Some(real) if policy::keeps_stamp(checked) && unchanged(checked, real) => {}
            _ => {
                Stats::add(&STATE.stats.program_replaced, 1);
                return Some(replaced());
            }
        }
    }
    let interpreter = mapped.interpreter.as_ref()?;
    let checked = match expecting.interpreter {
        Expected::File(id) => policy::keeps_stamp(&id) && unchanged(&id, interpreter),
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
