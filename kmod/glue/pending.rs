// SPDX-License-Identifier: GPL-2.0

//! The execs under way (`shim/pending.c`): one allocated entry per task whose exec the handler
//! let through, taken back at the end of that exec, forgotten when the task exits.

use kernel::ffi::c_int;
use kernel::prelude::*;

use super::file::FileId;

/// `struct elfsig_expectation`: what an exec expects to find mapped at its end.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Expectation {
    /// The task's exec count once this exec succeeds.
    pub(crate) count: u64,
    /// [`Expectation::INTERPRETER`] and [`Expectation::PROGRAM`].
    pub(crate) flags: u32,
    /// What the program is entitled to (elfsig-core's bits).
    pub(crate) entitlements: u32,
    /// The ELF interpreter checked, with [`Expectation::INTERPRETER`].
    pub(crate) interpreter: FileId,
    /// The real file of a stacked program checked, with [`Expectation::PROGRAM`].
    pub(crate) program: FileId,
}

// The layout `shim/shim.h` declares and `shim/pending.c` checks.
const _: () = {
    assert!(core::mem::size_of::<Expectation>() == 16 + 2 * 112);
    assert!(core::mem::offset_of!(Expectation, interpreter) == 16);
};

impl Expectation {
    /// `interpreter` holds the ELF interpreter checked.
    pub(crate) const INTERPRETER: u32 = 1;
    /// `program` holds the real file of the stacked program checked.
    pub(crate) const PROGRAM: u32 = 2;
}

extern "C" {
    fn elfsig_shim_pending_put(task: usize, expectation: *const Expectation) -> c_int;
    fn elfsig_shim_pending_take(task: usize, expectation: *mut Expectation) -> bool;
    fn elfsig_shim_pending_peek(task: usize, expectation: *mut Expectation) -> bool;
    fn elfsig_shim_pending_forget(task: usize);
    fn elfsig_shim_pending_clear();
    fn elfsig_shim_pending_count() -> u64;
}

/// Records what `task`'s exec expects, replacing what its last one left. May sleep; fails
/// with `ENOMEM`.
pub(crate) fn put(task: usize, expectation: &Expectation) -> Result {
    // SAFETY: `expectation` is a valid `struct elfsig_expectation`, whose layout is checked
    // above; `task` is only a key.
    super::to_result(unsafe { elfsig_shim_pending_put(task, expectation) })
}

/// Takes back what `task`'s exec expected, if anything. Does not sleep.
pub(crate) fn take(task: usize) -> Option<Expectation> {
    let mut expectation = Expectation::default();
    // SAFETY: `expectation` is a valid out-parameter; `task` is only a key.
    unsafe { elfsig_shim_pending_take(task, &mut expectation) }.then_some(expectation)
}

/// What `task`'s exec expects, if anything, left in place. Does not sleep.
pub(crate) fn peek(task: usize) -> Option<Expectation> {
    let mut expectation = Expectation::default();
    // SAFETY: `expectation` is a valid out-parameter; `task` is only a key.
    unsafe { elfsig_shim_pending_peek(task, &mut expectation) }.then_some(expectation)
}

/// Forgets what `task` left. Does not sleep.
pub(crate) fn forget(task: usize) {
    // SAFETY: `task` is only a key.
    unsafe { elfsig_shim_pending_forget(task) }
}

/// How many entries there are.
pub(crate) fn count() -> u64 {
    // SAFETY: reads a counter.
    unsafe { elfsig_shim_pending_count() }
}

/// The table's entries, freed on drop (module exit), once neither the handler nor the probes
/// can run: drop it after the binfmt registration and the probes.
pub(crate) struct Table(());

impl Table {
    /// The table (statically allocated by the shim).
    pub(crate) fn new() -> Self {
        Table(())
    }
}

impl Drop for Table {
    fn drop(&mut self) {
        // SAFETY: nothing adds or takes entries any more (see the type's doc).
        unsafe { elfsig_shim_pending_clear() }
    }
}
