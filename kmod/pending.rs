// SPDX-License-Identifier: GPL-2.0

//! What each exec under way expects binfmt_elf to map as its ELF interpreter: recorded by the
//! binfmt handler when it lets an exec proceed, taken back at the end of that exec
//! (`interpreter.rs`).
//!
//! A fixed table, allocated with the module, with no lock. An entry belongs to one task (its
//! address is the key; it is never dereferenced), and only that task writes, takes or forgets
//! it: at the end of its exec, when the handler refuses the exec, or when the task exits (an
//! exec that failed after the handler let it through leaves its entry until then, or until the
//! task's next exec replaces it). So an exec that ends without an entry is one the handler
//! never saw: it began before the module was loaded. Each slot's owner word is the lock:
//! whoever swaps it to [`BUSY`] may write the slot.

use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use crate::glue::exec_end::Exec;
use crate::glue::file::FileId;

/// Enough for as many execs at once, between the handler and their end, as a machine runs
/// tasks in parallel, many times over.
const SLOTS: usize = 1024;
/// How many slots a task may use, starting at the one its address hashes to.
const WINDOW: usize = 64;

/// The owner of a free slot.
const FREE: usize = 0;
/// The owner of a slot being written or taken (task addresses are aligned, never 1).
const BUSY: usize = 1;

/// The table is full: more execs are under way at once than it has slots for (or more tasks
/// than that left entries of failed execs behind and live on).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Full;

/// What an exec expects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Expected {
    /// No ELF interpreter: a static program, or one whose interpreter could not be opened.
    None,
    /// This file, with this change stamp.
    File(FileId),
}

struct Slot {
    owner: AtomicUsize,
    /// The exec count the task will have once this exec succeeds.
    count: AtomicU64,
    /// [`FileId`]'s fields, then whether there is a file and whether it is cacheable.
    fields: [AtomicU64; 9],
}

impl Slot {
    const fn new() -> Self {
        Slot {
            owner: AtomicUsize::new(FREE),
            count: AtomicU64::new(0),
            fields: [const { AtomicU64::new(0) }; 9],
        }
    }

    /// Claims the slot if its owner is `owner`.
    fn claim(&self, owner: usize) -> bool {
        self.owner
            .compare_exchange(owner, BUSY, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    /// Writes a claimed slot and hands it to `task`.
    fn fill(&self, exec: Exec, expected: Expected) {
        let (id, present) = match expected {
            Expected::None => (FileId::default(), 0),
            Expected::File(id) => (id, 1),
        };
        let values = [
            id.dev,
            id.ino,
            id.generation,
            id.ctime_ns as u64,
            id.mtime_ns as u64,
            id.size,
            id.version,
            present,
            u64::from(id.cacheable),
        ];
        for (field, value) in self.fields.iter().zip(values) {
            field.store(value, Ordering::Relaxed);
        }
        self.count
            .store(exec.count.wrapping_add(1), Ordering::Relaxed);
        self.owner.store(exec.task, Ordering::Release);
    }

    /// Reads a claimed slot and frees it.
    fn take(&self) -> (u64, Expected) {
        let [dev, ino, generation, ctime_ns, mtime_ns, size, version, present, cacheable] =
            self.fields.each_ref().map(|f| f.load(Ordering::Relaxed));
        let count = self.count.load(Ordering::Relaxed);
        self.owner.store(FREE, Ordering::Release);
        let id = FileId {
            dev,
            ino,
            generation,
            ctime_ns: ctime_ns as i64,
            mtime_ns: mtime_ns as i64,
            size,
            version,
            cacheable: cacheable != 0,
        };
        (
            count,
            if present != 0 {
                Expected::File(id)
            } else {
                Expected::None
            },
        )
    }
}

/// The table.
pub(crate) struct Pending {
    slots: [Slot; SLOTS],
}

impl Pending {
    /// An empty table.
    pub(crate) const fn new() -> Self {
        Pending {
            slots: [const { Slot::new() }; SLOTS],
        }
    }

    /// The slots `task` may use: [`WINDOW`] of them, from the one its address hashes to.
    fn probe(&self, task: usize) -> impl Iterator<Item = &Slot> {
        // Task structures are large and aligned: mix the address before taking it modulo.
        let mut h = task as u64;
        h = (h ^ (h >> 33)).wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        let start = (h % SLOTS as u64) as usize;
        (0..WINDOW).filter_map(move |i| self.slots.get(start.wrapping_add(i) % SLOTS))
    }

    /// Records what the current exec of `exec.task` expects, replacing what an earlier exec of
    /// the same task left.
    pub(crate) fn expect(&self, exec: Exec, expected: Expected) -> Result<(), Full> {
        let slot = match self.probe(exec.task).find(|s| s.claim(exec.task)) {
            Some(own) => own,
            None => self.probe(exec.task).find(|s| s.claim(FREE)).ok_or(Full)?,
        };
        slot.fill(exec, expected);
        Ok(())
    }

    /// Forgets what `task` left: its exec was refused, or it exits.
    pub(crate) fn forget(&self, task: usize) {
        if let Some(slot) = self.probe(task).find(|s| s.claim(task)) {
            slot.owner.store(FREE, Ordering::Release);
        }
    }

    /// Takes back what the exec that just completed expected; `None` when the handler recorded
    /// nothing for it: it began before the module was loaded.
    pub(crate) fn take(&self, exec: Exec) -> Option<Expected> {
        let slot = self.probe(exec.task).find(|s| s.claim(exec.task))?;
        let (count, expected) = slot.take();
        (count == exec.count).then_some(expected)
    }
}
