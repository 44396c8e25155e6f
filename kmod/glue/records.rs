// SPDX-License-Identifier: GPL-2.0

//! What each process's program is entitled to (`shim/records.c`): one entry per task, the
//! module's own, looked up without a lock.

use kernel::ffi::c_int;
use kernel::prelude::*;

extern "C" {
    fn elfsig_shim_record_put(task: usize, record: u32) -> c_int;
    fn elfsig_shim_record_set(task: usize, record: u32) -> bool;
    fn elfsig_shim_record_get(task: usize, record: *mut u32) -> bool;
    fn elfsig_shim_record_forget(task: usize);
    fn elfsig_shim_records_clear();
    fn elfsig_shim_records_count() -> u64;
}

/// Gives `task` an entry holding `record`, replacing any. May sleep; fails with `ENOMEM`.
pub(crate) fn put(task: usize, record: u32) -> Result {
    // SAFETY: `task` is only a key.
    super::to_result(unsafe { elfsig_shim_record_put(task, record) })
}

/// Sets `task`'s record where it has an entry; returns whether it has one. Does not sleep.
pub(crate) fn set(task: usize, record: u32) -> bool {
    // SAFETY: `task` is only a key.
    unsafe { elfsig_shim_record_set(task, record) }
}

/// `task`'s record, if it has an entry. Does not sleep, takes no lock.
pub(crate) fn get(task: usize) -> Option<u32> {
    let mut record = 0u32;
    // SAFETY: `record` is a valid out-parameter; `task` is only a key.
    unsafe { elfsig_shim_record_get(task, &mut record) }.then_some(record)
}

/// Drops `task`'s entry. Does not sleep; any context.
pub(crate) fn forget(task: usize) {
    // SAFETY: `task` is only a key.
    unsafe { elfsig_shim_record_forget(task) }
}

/// How many tasks have an entry.
pub(crate) fn count() -> u64 {
    // SAFETY: reads a counter.
    unsafe { elfsig_shim_records_count() }
}

/// The table's entries, freed on drop (module exit), once neither the guard's programs nor
/// the probes can call in: drop it after the guard's links and the probes.
pub(crate) struct Table(());

impl Table {
    /// The table (statically allocated by the shim).
    pub(crate) fn new() -> Self {
        Table(())
    }
}

impl Drop for Table {
    fn drop(&mut self) {
        // SAFETY: nothing adds or looks up entries any more (see the type's doc).
        unsafe { elfsig_shim_records_clear() }
    }
}
