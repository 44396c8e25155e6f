// SPDX-License-Identifier: GPL-2.0

//! Counters, readable from `/sys/kernel/security/elfsig/stats`. Refusal reasons are counted
//! under the names elfsig-core gives them, the words the CLI and the log use too.

use core::fmt::{self, Write};
use core::sync::atomic::{AtomicU64, Ordering};

use crate::elfsig_core::Reason;
use crate::glue::module;

const REASONS: usize = Reason::ALL.len();

/// The counters.
pub(crate) struct Stats {
    /// Files checked: executables and their ELF interpreters.
    pub(crate) checked: AtomicU64,
    /// Execs let through.
    pub(crate) allowed: AtomicU64,
    /// Execs refused.
    pub(crate) denied: AtomicU64,
    /// Files mapped with `PROT_EXEC` that the mapping guard checked.
    pub(crate) mmap_checked: AtomicU64,
    /// Executable mappings let through.
    pub(crate) mmap_allowed: AtomicU64,
    /// Executable mappings (and `mprotect`s making file mappings executable) refused.
    pub(crate) mmap_denied: AtomicU64,
    /// Executable memory that is no signed file's refused (`runtime.rs`): anonymous memory
    /// made executable, mappings writable and executable, to processes without `jit`.
    pub(crate) memory_denied: AtomicU64,
    /// Processes traced, and process memory opened for writing, refused (`runtime.rs`) to
    /// processes without `debugger`.
    pub(crate) ptrace_denied: AtomicU64,
    /// Checks answered by the verdict cache.
    pub(crate) cache_hits: AtomicU64,
    /// Checks that verified the file.
    pub(crate) cache_misses: AtomicU64,
    /// Checks of the initramfs's own files, not verified (`trust_initramfs`).
    pub(crate) initramfs_trusted: AtomicU64,
    /// ELF interpreters handed to another CPU to check while their program was verified
    /// (`verdict/ahead.rs`; the task checks one itself if no worker took it in time).
    pub(crate) interpreters_ahead: AtomicU64,
    /// Signatures handed to another CPU to check while their file was hashed
    /// (`verdict/verify.rs`; the task checks one itself if no worker took it in time).
    pub(crate) signatures_beside: AtomicU64,
    /// Execs whose mapped ELF interpreter was not the file checked for them.
    pub(crate) interpreter_replaced: AtomicU64,
    /// Execs whose stacked program's real file (overlayfs) changed or was opened for writing
    /// between the check and the end of the exec.
    pub(crate) program_replaced: AtomicU64,
    /// Files opened for writing while mapped executable (refused, or logged in permissive
    /// mode).
    pub(crate) writes_refused: AtomicU64,
    /// Bytes hashed.
    pub(crate) bytes_hashed: AtomicU64,
    /// Of those, bytes hashed where the page cache holds them, not copied out first.
    pub(crate) bytes_hashed_in_cache: AtomicU64,
    /// Time spent verifying, in ns.
    pub(crate) verify_ns: AtomicU64,
    /// Of that, time spent in SHA-256, in ns.
    pub(crate) hash_ns: AtomicU64,
    /// Time spent checking signatures (PKCS#7 and the keyrings), in ns: part of `verify_ns`,
    /// but where a worker checks them while the file is hashed (more than one CPU).
    pub(crate) signature_ns: AtomicU64,
    /// Bytes currently allocated for verification.
    pub(crate) memory: AtomicU64,
    /// Most bytes ever allocated for verification at once.
    pub(crate) memory_peak: AtomicU64,
    reasons: [AtomicU64; REASONS],
}

/// Memory counted in [`Stats::memory`] until dropped.
pub(crate) struct MemoryCharge<'a> {
    stats: &'a Stats,
    bytes: u64,
}

impl Drop for MemoryCharge<'_> {
    fn drop(&mut self) {
        self.stats.memory.fetch_sub(self.bytes, Ordering::Relaxed);
    }
}

/// The counters at one moment, read once each before any is formatted.
pub(crate) struct Snapshot {
    values: [u64; 23],
    reasons: [u64; REASONS],
}

/// The names of [`Snapshot::values`], in the order the stats file lists them after the reasons.
const NAMES: [&str; 23] = [
    "checked",
    "allowed",
    "denied",
    "mmap_checked",
    "mmap_allowed",
    "mmap_denied",
    "memory_denied",
    "ptrace_denied",
    "cache_hits",
    "cache_misses",
    "initramfs_trusted",
    "interpreters_ahead",
    "signatures_beside",
    "interpreter_replaced",
    "program_replaced",
    "writes_refused",
    "bytes_hashed",
    "bytes_hashed_in_cache",
    "verify_ns",
    "hash_ns",
    "signature_ns",
    "memory",
    "memory_peak",
];

impl Stats {
    /// All zero.
    pub(crate) const fn new() -> Self {
        Stats {
            checked: AtomicU64::new(0),
            allowed: AtomicU64::new(0),
            denied: AtomicU64::new(0),
            mmap_checked: AtomicU64::new(0),
            mmap_allowed: AtomicU64::new(0),
            mmap_denied: AtomicU64::new(0),
            memory_denied: AtomicU64::new(0),
            ptrace_denied: AtomicU64::new(0),
            cache_hits: AtomicU64::new(0),
            cache_misses: AtomicU64::new(0),
            initramfs_trusted: AtomicU64::new(0),
            interpreters_ahead: AtomicU64::new(0),
            signatures_beside: AtomicU64::new(0),
            interpreter_replaced: AtomicU64::new(0),
            program_replaced: AtomicU64::new(0),
            writes_refused: AtomicU64::new(0),
            bytes_hashed: AtomicU64::new(0),
            bytes_hashed_in_cache: AtomicU64::new(0),
            verify_ns: AtomicU64::new(0),
            hash_ns: AtomicU64::new(0),
            signature_ns: AtomicU64::new(0),
            memory: AtomicU64::new(0),
            memory_peak: AtomicU64::new(0),
            reasons: [const { AtomicU64::new(0) }; REASONS],
        }
    }

    /// Adds `n` to a counter.
    pub(crate) fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    /// Runs `work`, adding the time it took to `counter` (`verify_ns` and its parts).
    pub(crate) fn timed<T>(counter: &AtomicU64, work: impl FnOnce() -> T) -> T {
        let start = module::now_ns();
        let result = work();
        Self::add(counter, module::now_ns().saturating_sub(start));
        result
    }

    /// Counts a refusal (or, in permissive mode, a would-be refusal).
    pub(crate) fn refused_for(&self, reason: Reason) {
        if let Some(counter) = Reason::ALL
            .iter()
            .position(|r| *r == reason)
            .and_then(|i| self.reasons.get(i))
        {
            Self::add(counter, 1);
        }
    }

    /// Counts `bytes` of memory until the returned charge is dropped.
    pub(crate) fn charge(&self, bytes: usize) -> MemoryCharge<'_> {
        let bytes = u64::try_from(bytes).unwrap_or(u64::MAX);
        let now = self
            .memory
            .fetch_add(bytes, Ordering::Relaxed)
            .wrapping_add(bytes);
        self.memory_peak.fetch_max(now, Ordering::Relaxed);
        MemoryCharge { stats: self, bytes }
    }

    /// Every counter, read now.
    pub(crate) fn snapshot(&self) -> Snapshot {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        Snapshot {
            values: [
                &self.checked,
                &self.allowed,
                &self.denied,
                &self.mmap_checked,
                &self.mmap_allowed,
                &self.mmap_denied,
                &self.memory_denied,
                &self.ptrace_denied,
                &self.cache_hits,
                &self.cache_misses,
                &self.initramfs_trusted,
                &self.interpreters_ahead,
                &self.signatures_beside,
                &self.interpreter_replaced,
                &self.program_replaced,
                &self.writes_refused,
                &self.bytes_hashed,
                &self.bytes_hashed_in_cache,
                &self.verify_ns,
                &self.hash_ns,
                &self.signature_ns,
                &self.memory,
                &self.memory_peak,
            ]
            .map(get),
            reasons: self.reasons.each_ref().map(get),
        }
    }
}

impl Snapshot {
    /// Writes `name value` lines: the exec and mapping counters, the reasons, the rest.
    pub(crate) fn write_to(&self, out: &mut impl Write) -> fmt::Result {
        let mut counters = NAMES.iter().zip(self.values);
        for (name, value) in counters.by_ref().take(8) {
            writeln!(out, "{name} {value}")?;
        }
        for (reason, value) in Reason::ALL.iter().zip(self.reasons) {
            writeln!(out, "{} {value}", reason.name())?;
        }
        for (name, value) in counters {
            writeln!(out, "{name} {value}")?;
        }
        Ok(())
    }
}
