// SPDX-License-Identifier: GPL-2.0

//! What each exec under way expects binfmt_elf to map: recorded by the binfmt handler when it
//! lets an exec proceed (`hooks.rs`), taken back at the end of that exec (`exec_end.rs`).
//!
//! One entry per task, allocated (`glue/pending.rs`): only that task records, takes or forgets
//! it, at the end of its exec, when the handler refuses the exec, or when the task exits. An
//! exec that failed after the handler let it through leaves its entry until the task's next
//! exec replaces it or the task exits: there are never more entries than live tasks, and no
//! number of failed execs can keep another task's exec from recording its own. So an exec that
//! ends without an entry is one the handler never saw: it began before the module was loaded.

use crate::elfsig_core::Entitlements;
use crate::glue::exec_end::Exec;
use crate::glue::file::FileId;
use crate::glue::pending::{self, Expectation};

/// What an exec expects as its ELF interpreter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Expected {
    /// No ELF interpreter: a static program, or one whose interpreter could not be opened.
    None,
    /// This file, with this change stamp.
    File(FileId),
}

/// What an exec expects binfmt_elf to have mapped at its end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Expecting {
    /// Its ELF interpreter.
    pub(crate) interpreter: Expected,
    /// The real file of a program whose data is another inode's (overlayfs), as checked: the
    /// exec's write denial does not cover it.
    pub(crate) stacked_program: Option<FileId>,
    /// What the program is entitled to (`runtime.rs`).
    pub(crate) entitlements: Entitlements,
}

/// Records what the current exec of `exec.task` expects, replacing what an earlier exec of the
/// same task left. Fails with `ENOMEM`.
pub(crate) fn expect(exec: Exec, expecting: &Expecting) -> kernel::error::Result {
    let mut entry = Expectation {
        count: exec.count.wrapping_add(1),
        entitlements: expecting.entitlements.bits(),
        ..Expectation::default()
    };
    if let Expected::File(id) = expecting.interpreter {
        entry.flags |= Expectation::INTERPRETER;
        entry.interpreter = id;
    }
    if let Some(id) = expecting.stacked_program {
        entry.flags |= Expectation::PROGRAM;
        entry.program = id;
    }
    pending::put(exec.task, &entry)
}

/// Forgets what `task` left: its exec was refused, or it exits.
pub(crate) fn forget(task: usize) {
    pending::forget(task);
}

/// Takes back what the exec that just completed expected; `None` when the handler recorded
/// nothing for it: it began before the module was loaded.
pub(crate) fn take(exec: Exec) -> Option<Expecting> {
    pending::take(exec.task).and_then(|entry| of_exec(&entry, exec))
}

/// What the exec under way expects, left in place, once it can no longer fail (its task's
/// exec count moved); `None` when the handler recorded nothing for it.
pub(crate) fn peek(exec: Exec) -> Option<Expecting> {
    pending::peek(exec.task).and_then(|entry| of_exec(&entry, exec))
}

/// What `entry` says, when it is `exec`'s.
fn of_exec(entry: &Expectation, exec: Exec) -> Option<Expecting> {
    (entry.count == exec.count).then_some(Expecting {
        interpreter: if entry.flags & Expectation::INTERPRETER != 0 {
            Expected::File(entry.interpreter)
        } else {
            Expected::None
        },
        stacked_program: (entry.flags & Expectation::PROGRAM != 0).then_some(entry.program),
        entitlements: Entitlements::from_bits(entry.entitlements).unwrap_or(Entitlements::NONE),
    })
}

/// How many entries there are: execs under way, and failed ones of tasks still alive.
pub(crate) fn count() -> u64 {
    pending::count()
}
