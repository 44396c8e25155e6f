// SPDX-License-Identifier: GPL-2.0

//! The module's state, [`STATE`]: the settings (mode, loader policy, untrusted mounts, the
//! run-time rules, the lock), the counters, the verdict cache and the mapping guard's state. Every room of the
//! module reads it; the control files and module init change the settings.

use core::sync::atomic::{AtomicBool, Ordering};

use kernel::prelude::*;

use crate::cache::Cache;
use crate::elfsig_core::filesystem::Untrusted;
use crate::glue::module;
use crate::guard::Guard;
use crate::stats::Stats;

/// The module's state: static, because the binfmt handler and the tracepoint probe have no
/// context pointer.
pub(crate) static STATE: State = State::new();

/// Mode, loader policy, untrusted mounts, run-time rules, lock, counters, the verdict cache and the mapping
/// guard.
pub(crate) struct State {
    enforce: AtomicBool,
    deny_loader: AtomicBool,
    verify_untrusted: AtomicBool,
    runtime_rules: AtomicBool,
    locked: AtomicBool,
    /// The counters.
    pub(crate) stats: Stats,
    /// The verdict cache.
    pub(crate) cache: Cache,
    /// The mapping guard.
    pub(crate) guard: Guard,
}

impl State {
    const fn new() -> Self {
        State {
            enforce: AtomicBool::new(true),
            deny_loader: AtomicBool::new(false),
            verify_untrusted: AtomicBool::new(false),
            runtime_rules: AtomicBool::new(true),
            locked: AtomicBool::new(false),
            stats: Stats::new(),
            cache: Cache::new(),
            guard: Guard::new(),
        }
    }

    /// Whether refusals are enforced.
    pub(crate) fn enforcing(&self) -> bool {
        self.enforce.load(Ordering::Acquire)
    }

    /// Whether running a dynamic loader directly (`ld.so ./program`) is refused: the loader maps
    /// the program itself, so no exec check ever sees it.
    pub(crate) fn denying_loader(&self) -> bool {
        self.deny_loader.load(Ordering::Acquire)
    }

    /// Refuses or allows running a dynamic loader directly; allowing it again is refused while
    /// locked.
    pub(crate) fn set_deny_loader(&self, deny: bool) -> Result {
        if !deny && self.locked() {
            return Err(EPERM);
        }
        self.deny_loader.store(deny, Ordering::Release);
        Ok(())
    }

    /// What applies to files on mounts the kernel does not trust.
    pub(crate) fn untrusted(&self) -> Untrusted {
        if self.verify_untrusted.load(Ordering::Acquire) {
            Untrusted::Verify
        } else {
            Untrusted::Refuse
        }
    }

    /// Refuses files on untrusted mounts, or verifies them every time; allowing them is
    /// refused while locked.
    pub(crate) fn set_untrusted(&self, untrusted: Untrusted) -> Result {
        let verify = untrusted == Untrusted::Verify;
        if verify && self.locked() {
            return Err(EPERM);
        }
        self.verify_untrusted.store(verify, Ordering::Release);
        Ok(())
    }

    /// Whether the run-time rules apply (`runtime.rs`): no executable memory but signed files'
    /// to a process without the `jit` entitlement.
    pub(crate) fn runtime_rules(&self) -> bool {
        self.runtime_rules.load(Ordering::Acquire)
    }

    /// Applies the run-time rules or turns them off; turning them off is refused while locked.
    pub(crate) fn set_runtime_rules(&self, on: bool) -> Result {
        if !on && self.locked() {
            return Err(EPERM);
        }
        self.runtime_rules.store(on, Ordering::Release);
        Ok(())
    }

    /// Whether the mode is locked to enforce until reboot.
    pub(crate) fn locked(&self) -> bool {
        self.locked.load(Ordering::Acquire)
    }

    /// Switches between enforce and permissive; refused while locked. A change flushes the
    /// cache, so that every file is looked at again under the new mode.
    pub(crate) fn set_enforcing(&self, enforce: bool) -> Result {
        if !enforce && self.locked() {
            return Err(EPERM);
        }
        if self.enforce.swap(enforce, Ordering::AcqRel) != enforce {
            self.cache.flush();
        }
        Ok(())
    }

    /// Enforces until reboot: the mode cannot be changed, a loader policy of `deny` cannot be
    /// relaxed nor untrusted mounts allowed nor the run-time rules turned off, the mapping guard cannot be released, and the
    /// module cannot be unloaded. Cannot fail, so that module init takes it last, once nothing
    /// else can fail.
    pub(crate) fn lock(&self) {
        // Enforcing is never refused.
        let _ = self.set_enforcing(true);
        if !self.locked.swap(true, Ordering::AcqRel) {
            // The reference is never dropped: rmmod fails with EWOULDBLOCK from now on.
            module::pin();
        }
    }
}
