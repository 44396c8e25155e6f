// SPDX-License-Identifier: GPL-2.0

//! Counters, readable from `/sys/kernel/security/elfsig/stats`.

use core::fmt::{self, Write};
use core::sync::atomic::{AtomicU64, Ordering};

/// Why a file was refused (or would be, in permissive mode).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reason {
    /// No signature.
    Unsigned,
    /// The signature does not verify.
    BadSignature,
    /// Signed by a key no trusted keyring holds.
    UnknownKey,
    /// Validly signed, but not what was signed.
    Modified,
    /// The signed digest is in the `.blacklist` keyring.
    Revoked,
    /// Not a well-formed ELF file or signature.
    Malformed,
    /// Reading the file failed.
    IoError,
    /// Verification could not run (out of memory, crypto failure).
    Error,
    /// A dynamic loader run directly, with `deny_loader` set.
    LoaderExec,
}

impl Reason {
    const ALL: [Reason; 9] = [
        Reason::Unsigned,
        Reason::BadSignature,
        Reason::UnknownKey,
        Reason::Modified,
        Reason::Revoked,
        Reason::Malformed,
        Reason::IoError,
        Reason::Error,
        Reason::LoaderExec,
    ];

    /// The name used in logs and in the stats file.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Reason::Unsigned => "unsigned",
            Reason::BadSignature => "bad_signature",
            Reason::UnknownKey => "unknown_key",
            Reason::Modified => "modified",
            Reason::Revoked => "revoked",
            Reason::Malformed => "malformed",
            Reason::IoError => "io_error",
            Reason::Error => "error",
            Reason::LoaderExec => "loader_exec",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// The counters.
pub(crate) struct Stats {
    /// Files checked: executables and their ELF interpreters.
    pub(crate) checked: AtomicU64,
    /// Execs let through.
    pub(crate) allowed: AtomicU64,
    /// Execs refused.
    pub(crate) denied: AtomicU64,
    /// Checks answered by the verdict cache.
    pub(crate) cache_hits: AtomicU64,
    /// Checks that verified the file.
    pub(crate) cache_misses: AtomicU64,
    /// Bytes hashed.
    pub(crate) bytes_hashed: AtomicU64,
    /// Time spent verifying, in ns.
    pub(crate) verify_ns: AtomicU64,
    /// Bytes currently allocated for verification.
    pub(crate) memory: AtomicU64,
    /// Most bytes ever allocated for verification at once.
    pub(crate) memory_peak: AtomicU64,
    reasons: [AtomicU64; Reason::ALL.len()],
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

impl Stats {
    /// All zero.
    pub(crate) const fn new() -> Self {
        Stats {
            checked: AtomicU64::new(0),
            allowed: AtomicU64::new(0),
            denied: AtomicU64::new(0),
            cache_hits: AtomicU64::new(0),
            cache_misses: AtomicU64::new(0),
            bytes_hashed: AtomicU64::new(0),
            verify_ns: AtomicU64::new(0),
            memory: AtomicU64::new(0),
            memory_peak: AtomicU64::new(0),
            reasons: [const { AtomicU64::new(0) }; Reason::ALL.len()],
        }
    }

    /// Adds `n` to a counter.
    pub(crate) fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    /// Counts a refusal.
    pub(crate) fn refused_for(&self, reason: Reason) {
        if let Some(counter) = self.reasons.get(reason.index()) {
            Self::add(counter, 1);
        }
    }

    /// Counts `bytes` of memory until the returned charge is dropped.
    pub(crate) fn charge(&self, bytes: usize) -> MemoryCharge<'_> {
        let bytes = bytes as u64;
        let now = self.memory.fetch_add(bytes, Ordering::Relaxed).wrapping_add(bytes);
        self.memory_peak.fetch_max(now, Ordering::Relaxed);
        MemoryCharge { stats: self, bytes }
    }

    /// Writes `name value` lines.
    pub(crate) fn write_to(&self, out: &mut impl Write) -> fmt::Result {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        writeln!(out, "checked {}", get(&self.checked))?;
        writeln!(out, "allowed {}", get(&self.allowed))?;
        writeln!(out, "denied {}", get(&self.denied))?;
        for (reason, counter) in Reason::ALL.iter().zip(&self.reasons) {
            writeln!(out, "{} {}", reason.name(), get(counter))?;
        }
        writeln!(out, "cache_hits {}", get(&self.cache_hits))?;
        writeln!(out, "cache_misses {}", get(&self.cache_misses))?;
        writeln!(out, "cache_entries {}", crate::cache::ENTRIES)?;
        writeln!(out, "bytes_hashed {}", get(&self.bytes_hashed))?;
        writeln!(out, "verify_ns {}", get(&self.verify_ns))?;
        writeln!(out, "memory {}", get(&self.memory))?;
        writeln!(out, "memory_peak {}", get(&self.memory_peak))
    }
}
