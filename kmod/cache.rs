// SPDX-License-Identifier: GPL-2.0

//! The verdict cache: which files verified, so that the next exec of an unchanged file costs one
//! lookup.
//!
//! Entries are keyed by the identity of the inode that holds the file's data (device, inode
//! number, generation, file handle: a btrfs subvolume's inode numbers are every other one's)
//! and hold its
//! change stamp (change and modification times, size, `i_version`), the digest it verified with
//! (so revocation still applies), whether it names an ELF interpreter (so that a cached static
//! program needs no reading at all), whether it is a dynamic loader, what it is entitled to and
//! whether exec gives it an executable stack, and the epoch it was made in. A lookup hits only when the identity, the whole stamp and the epoch match; flushing is
//! bumping the epoch.
//!
//! The cache has a fixed size, allocated with the module: 4-way set-associative, replacing
//! round-robin within a set. Lookups take no lock: each slot is a sequence lock made of
//! atomics. A writer that finds a slot busy skips caching rather than wait; a reader that races
//! a writer misses and verifies.

use core::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};

use crate::elfsig_core::Entitlements;
use crate::glue::file::FileId;

const WAYS: usize = 4;
const SETS: usize = 256;
/// Number of entries.
pub(crate) const ENTRIES: usize = WAYS * SETS;

/// One entry: a sequence number (odd while being written) and the fields.
struct Slot {
    seq: AtomicU64,
    dev: AtomicU64,
    ino: AtomicU64,
    generation: AtomicU64,
    handle: [AtomicU64; 3],
    ctime_ns: AtomicU64,
    mtime_ns: AtomicU64,
    size: AtomicU64,
    version: AtomicU64,
    epoch: AtomicU64,
    /// [`HAS_INTERPRETER`], [`LOADER`], [`EXECUTABLE_STACK`], [`WRITABLE_EXECUTABLE`], and the
    /// entitlements' bits from [`ENTITLEMENTS_SHIFT`] on.
    flags: AtomicU64,
    digest: [AtomicU64; 4],
}

/// What the cache remembers of a file that verified.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    /// The digest it verified with.
    pub(crate) digest: [u8; 32],
    /// Whether it names an ELF interpreter (`PT_INTERP`).
    pub(crate) has_interpreter: bool,
    /// Whether it is a dynamic loader (a shared object without an interpreter).
    pub(crate) loader: bool,
    /// What it does at run time.
    pub(crate) runtime: Runtime,
}

/// What a verified file does at run time (`runtime.rs`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Runtime {
    /// What its signature entitles it to.
    pub(crate) entitlements: Entitlements,
    /// Whether exec gives it an executable stack (elfsig-core's `ExecInfo`).
    pub(crate) executable_stack: bool,
    /// Whether a segment exec maps is writable and executable (elfsig-core's `ExecInfo`).
    pub(crate) writable_executable: bool,
}

const HAS_INTERPRETER: u64 = 1;
const LOADER: u64 = 2;
const EXECUTABLE_STACK: u64 = 4;
const WRITABLE_EXECUTABLE: u64 = 8;
const ENTITLEMENTS_SHIFT: u32 = 32;

impl Slot {
    const fn new() -> Self {
        Slot {
            seq: AtomicU64::new(0),
            dev: AtomicU64::new(0),
            ino: AtomicU64::new(0),
            generation: AtomicU64::new(0),
            handle: [const { AtomicU64::new(0) }; 3],
            ctime_ns: AtomicU64::new(0),
            mtime_ns: AtomicU64::new(0),
            size: AtomicU64::new(0),
            version: AtomicU64::new(0),
            // Epoch 0 is never current, so an unused slot never hits.
            epoch: AtomicU64::new(0),
            flags: AtomicU64::new(0),
            digest: [const { AtomicU64::new(0) }; 4],
        }
    }

    /// The slot's entry if it holds `id` in `epoch`; `None` on a miss or a race.
    fn read(&self, id: &FileId, epoch: u64) -> Option<Entry> {
        let before = self.seq.load(Ordering::Acquire);
        if before & 1 == 1 {
            return None;
        }
        let same = self.holds(id)
            && self.ctime_ns.load(Ordering::Relaxed) == id.ctime_ns as u64
            && self.mtime_ns.load(Ordering::Relaxed) == id.mtime_ns as u64
            && self.size.load(Ordering::Relaxed) == id.size
            && self.version.load(Ordering::Relaxed) == id.version
            && self.epoch.load(Ordering::Relaxed) == epoch;
        let flags = self.flags.load(Ordering::Relaxed);
        let mut digest = [0u8; 32];
        for (chunk, word) in digest.chunks_exact_mut(8).zip(&self.digest) {
            for (d, s) in chunk
                .iter_mut()
                .zip(word.load(Ordering::Relaxed).to_le_bytes())
            {
                *d = s;
            }
        }
        fence(Ordering::Acquire);
        let after = self.seq.load(Ordering::Relaxed);
        (same && before == after).then_some(Entry {
            digest,
            has_interpreter: flags & HAS_INTERPRETER != 0,
            loader: flags & LOADER != 0,
            runtime: Runtime {
                // The bits were a valid set when stored.
                entitlements: Entitlements::from_bits((flags >> ENTITLEMENTS_SHIFT) as u32)
                    .unwrap_or(Entitlements::NONE),
                executable_stack: flags & EXECUTABLE_STACK != 0,
                writable_executable: flags & WRITABLE_EXECUTABLE != 0,
            },
        })
    }

    /// Whether the slot holds `id`, whatever its stamp or epoch (a candidate to overwrite).
    fn holds(&self, id: &FileId) -> bool {
        self.dev.load(Ordering::Relaxed) == id.dev
            && self.ino.load(Ordering::Relaxed) == id.ino
            && self.generation.load(Ordering::Relaxed) == id.generation
            && self
                .handle
                .iter()
                .zip(handle_words(id))
                .all(|(word, value)| word.load(Ordering::Relaxed) == value)
    }

    /// Writes the slot unless another writer holds it.
    fn write(&self, id: &FileId, epoch: u64, entry: &Entry) {
        let seq = self.seq.load(Ordering::Relaxed);
        if seq & 1 == 1
            || self
                .seq
                .compare_exchange(
                    seq,
                    seq.wrapping_add(1),
                    Ordering::Acquire,
                    Ordering::Relaxed,
                )
                .is_err()
        {
            return;
        }
        fence(Ordering::Release);
        self.dev.store(id.dev, Ordering::Relaxed);
        self.ino.store(id.ino, Ordering::Relaxed);
        self.generation.store(id.generation, Ordering::Relaxed);
        for (word, value) in self.handle.iter().zip(handle_words(id)) {
            word.store(value, Ordering::Relaxed);
        }
        self.ctime_ns.store(id.ctime_ns as u64, Ordering::Relaxed);
        self.mtime_ns.store(id.mtime_ns as u64, Ordering::Relaxed);
        self.size.store(id.size, Ordering::Relaxed);
        self.version.store(id.version, Ordering::Relaxed);
        self.epoch.store(epoch, Ordering::Relaxed);
        let flags = if entry.has_interpreter {
            HAS_INTERPRETER
        } else {
            0
        } | if entry.loader { LOADER } else { 0 }
            | if entry.runtime.executable_stack {
                EXECUTABLE_STACK
            } else {
                0
            }
            | if entry.runtime.writable_executable {
                WRITABLE_EXECUTABLE
            } else {
                0
            }
            | u64::from(entry.runtime.entitlements.bits()) << ENTITLEMENTS_SHIFT;
        self.flags.store(flags, Ordering::Relaxed);
        for (word, chunk) in self.digest.iter().zip(entry.digest.chunks_exact(8)) {
            let bytes: [u8; 8] = chunk.try_into().unwrap_or([0; 8]);
            word.store(u64::from_le_bytes(bytes), Ordering::Relaxed);
        }
        self.seq.store(seq.wrapping_add(2), Ordering::Release);
    }
}

/// A file handle as three words.
fn handle_words(id: &FileId) -> [u64; 3] {
    let [a, b, c, d, e, f] = id.handle;
    let word = |lo: u32, hi: u32| u64::from(lo) | (u64::from(hi) << 32);
    [word(a, b), word(c, d), word(e, f)]
}

/// The cache.
pub(crate) struct Cache {
    slots: [Slot; ENTRIES],
    /// Per-set round-robin victim counters.
    next: [AtomicU32; SETS],
    epoch: AtomicU64,
}

impl Cache {
    /// An empty cache.
    pub(crate) const fn new() -> Self {
        Cache {
            slots: [const { Slot::new() }; ENTRIES],
            next: [const { AtomicU32::new(0) }; SETS],
            epoch: AtomicU64::new(1),
        }
    }

    /// The current epoch; entries made in another one do not hit.
    pub(crate) fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::Acquire)
    }

    /// Forgets every entry.
    pub(crate) fn flush(&self) {
        self.epoch.fetch_add(1, Ordering::AcqRel);
    }

    /// How many entries hold a verdict of the current epoch (some may be for files changed
    /// since, which will not hit).
    pub(crate) fn used(&self) -> usize {
        let epoch = self.epoch();
        // Not `count()`, whose `+ 1` brings a panic on overflow into the module.
        self.slots.iter().fold(0, |n: usize, slot| {
            n.saturating_add(usize::from(slot.epoch.load(Ordering::Relaxed) == epoch))
        })
    }

    /// The set a file belongs in.
    fn set_index(id: &FileId) -> usize {
        // Mix the identity so that neighbouring inode numbers spread over the sets.
        let mut h = id.ino ^ id.dev.rotate_left(32) ^ id.generation.rotate_left(17);
        h = (h ^ (h >> 33)).wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        (h % SETS as u64) as usize
    }

    fn set(&self, index: usize) -> &[Slot] {
        let start = index.saturating_mul(WAYS);
        self.slots
            .get(start..start.saturating_add(WAYS))
            .unwrap_or(&[])
    }

    /// What the cache remembers of a file, if it is cached unchanged in `epoch`.
    pub(crate) fn lookup(&self, id: &FileId, epoch: u64) -> Option<Entry> {
        self.set(Self::set_index(id))
            .iter()
            .find_map(|slot| slot.read(id, epoch))
    }

    /// Records that the file verified in `epoch`.
    pub(crate) fn insert(&self, id: &FileId, epoch: u64, entry: &Entry) {
        let index = Self::set_index(id);
        let slots = self.set(index);
        // Reuse the file's own slot, else one from an old epoch, else the next victim.
        let victim = slots
            .iter()
            .position(|s| s.holds(id))
            .or_else(|| {
                slots
                    .iter()
                    .position(|s| s.epoch.load(Ordering::Relaxed) != epoch)
            })
            .unwrap_or_else(|| {
                self.next
                    .get(index)
                    .map_or(0, |n| n.fetch_add(1, Ordering::Relaxed) as usize % WAYS)
            });
        if let Some(slot) = slots.get(victim) {
            slot.write(id, epoch, entry);
        }
    }
}
