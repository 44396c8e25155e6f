// SPDX-License-Identifier: GPL-2.0

//! The ELF interpreter a program names in `PT_INTERP` (`ld.so`). binfmt_elf opens it by path
//! itself, past every binfmt handler, after the handler has returned; so a check of the file
//! the path names is not enough on its own: a rename or a rewrite between that check and
//! binfmt_elf's open would have an unverified interpreter mapped.
//!
//! So the handler checks the file the path names now ([`check`]), and the exec records its
//! identity and change stamp when it is let through ([`record`]). When the exec has mapped
//! everything, before the task runs a single instruction ([`exec_loaded`], on the
//! `sched_process_exec` tracepoint), the interpreter actually mapped must be that file,
//! unchanged; otherwise the task is killed (in permissive mode, logged).

use core::ffi::CStr;
use kernel::prelude::*;

use crate::elfsig_core::Reason;
use crate::glue::exec_end::{self, Exec};
use crate::glue::file::{self, ExecFile, FileRef};
use crate::pending::Expected;
use crate::policy::{self, Access, STATE};
use crate::stats::Stats;
use crate::verify::{Failure, KernelDetail, Refusal};

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
    let epoch = STATE.cache.epoch();
    if let Some((id, entry)) = file::path_id(path)
        .ok()
        .and_then(|id| STATE.cache.lookup(&id, epoch).map(|entry| (id, entry)))
    {
        Stats::add(&stats.cache_hits, 1);
        return (
            Expected::File(id),
            policy::not_revoked_since_cached(&entry.digest),
        );
    }
    Stats::add(&stats.cache_misses, 1);
    let interpreter = match ExecFile::open(path) {
        Ok(file) => file,
        Err(e) => return (Expected::None, Err(Failure::io(e))),
    };
    let id = interpreter.file().id();
    // Its own interpreter does not matter here (binfmt_elf does not follow a second one), but
    // the entry serves the interpreter run directly too.
    let mut name = KVec::new();
    let verdict = policy::timed_verify(interpreter.file(), &mut name).map(|verified| {
        if id.cacheable {
            STATE
                .cache
                .insert(&id, epoch, &crate::cache::Entry::of(&verified));
        }
    });
    (Expected::File(id), verdict)
}

/// Records what the current exec, which the handler lets through, expects as its interpreter.
/// Fails when too many execs are under way at once to keep track of them.
pub(crate) fn record(exec: Exec, expected: Expected) -> Result<(), Failure> {
    STATE
        .pending
        .expect(exec, expected)
        .map_err(|_| Failure::error(EAGAIN))
}

/// Forgets what the current exec expected: the handler refused it.
pub(crate) fn forget(exec: Exec) {
    STATE.pending.forget(exec.task);
}

/// Forgets what the exiting current task left behind. Does not sleep.
pub(crate) fn task_exit() {
    STATE.pending.forget(exec_end::current_exec().task);
}

/// Called at the end of every successful exec, before its first instruction, with preemption
/// disabled: the ELF interpreter binfmt_elf mapped must be the one checked for this exec.
pub(crate) fn exec_loaded(program: FileRef<'_>) {
    // An exec the handler never saw began before the module was loaded: nothing about it was
    // checked, and nothing is now.
    let Some(expected) = STATE.pending.take(exec_end::current_exec()) else {
        return;
    };
    let failure = match exec_end::mapped_interpreter(program) {
        // A static program: nothing else was mapped.
        Ok(None) => return,
        Ok(Some(mapped)) => {
            let checked = match expected {
                Expected::File(id) => id.cacheable && id.same_content(&mapped),
                Expected::None => false,
            };
            if checked {
                return;
            }
            Stats::add(&STATE.stats.interpreter_replaced, 1);
            Failure::from(Refusal::by_trust(Reason::Modified, KernelDetail::Replaced))
        }
        // What was mapped cannot be told: refuse.
        Err(e) => Failure::error(e),
    };
    if policy::report(program, failure.in_interpreter(), Access::Exec) {
        Stats::add(&STATE.stats.denied, 1);
        exec_end::kill_current();
    }
}
