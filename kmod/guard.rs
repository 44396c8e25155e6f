// SPDX-License-Identifier: GPL-2.0

//! The mapping guard's state (docs/DESIGN.md): whether the kernel can run it, which of its BPF
//! programs the module holds, and whether the `mmap_file` program has been seen calling the
//! module since. What the `guard` control file shows and what writing it does.

use core::fmt;
use core::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};

use kernel::prelude::*;

use crate::elfsig_core::control::{parse_fd, words};
use crate::glue::file;
use crate::glue::guard::{self, Unavailable};

/// The guard's state.
pub(crate) struct Guard {
    /// What offering the kfuncs returned: 0, or why the kernel cannot run the guard
    /// ([`Unavailable::code`]).
    unavailable: AtomicI32,
    /// The links' generation ([`guard::generation`]) in which the `mmap_file` kfunc last ran:
    /// the guard runs while it is the current one.
    seen_in: AtomicU64,
    /// Whether the links the module holds were handed over by a process whose root is the
    /// initial root file system (the initramfs): what ran before them is the initramfs's.
    from_initramfs: AtomicBool,
}

/// What the `guard` control file says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Status {
    /// The kernel cannot run the guard.
    Unavailable(Unavailable),
    /// The module holds no programs: only execs are checked.
    Detached,
    /// The module holds the programs, and none has called it yet.
    Attached,
    /// The module holds the programs, and the `mmap_file` one has called it: mappings are
    /// checked.
    Active,
}

impl Guard {
    pub(crate) const fn new() -> Self {
        Guard {
            unavailable: AtomicI32::new(0),
            seen_in: AtomicU64::new(0),
            from_initramfs: AtomicBool::new(false),
        }
    }

    /// Offers the kfuncs to BPF LSM programs; remembers why the kernel cannot run the guard.
    pub(crate) fn offer(&self) -> Result<(), Unavailable> {
        let result = guard::offer_kfuncs();
        if let Err(why) = result {
            self.unavailable.store(why.code(), Ordering::Release);
        }
        result
    }

    /// The `mmap_file` program called the module. Returns whether that is the first call of
    /// the links the module holds: the guard runs from now on.
    pub(crate) fn seen(&self) -> bool {
        let generation = guard::generation();
        let first = generation % 2 == 1 && self.seen_in.load(Ordering::Relaxed) != generation;
        if first {
            self.seen_in.store(generation, Ordering::Release);
        }
        first
    }

    /// Whether the guard runs: the module holds the links and the `mmap_file` program has
    /// called it since it took them. Lock-free, for the exec path.
    pub(crate) fn active(&self) -> bool {
        let generation = guard::generation();
        generation % 2 == 1 && self.seen_in.load(Ordering::Acquire) == generation
    }

    /// Whether the module holds links that the initramfs handed over: a task that ran its
    /// program before them ran one of the initramfs's (kmod/runtime.rs).
    pub(crate) fn attached_from_initramfs(&self) -> bool {
        guard::generation() % 2 == 1 && self.from_initramfs.load(Ordering::Acquire)
    }

    /// The guard's state now.
    pub(crate) fn status(&self) -> Status {
        if let Some(why) = Unavailable::from_code(self.unavailable.load(Ordering::Acquire)) {
            Status::Unavailable(why)
        } else if guard::generation() % 2 == 0 {
            Status::Detached
        } else if self.active() {
            Status::Active
        } else {
            Status::Attached
        }
    }

    /// Applies a write to the `guard` control file: `attach FD...` takes the links behind the
    /// writer's descriptors (one program on each hook, all or none); `release` drops them,
    /// refused while `locked`.
    pub(crate) fn command(&self, input: &[u8], locked: bool) -> Result {
        let mut words = words(input);
        match words.next() {
            Some(b"attach") => {
                if let Status::Unavailable(_) = self.status() {
                    return Err(ENODEV);
                }
                // One more slot than there are hooks, so that too many descriptors are refused.
                let mut fds = [-1i32; guard::HOOKS + 1];
                let mut count = 0;
                for word in words {
                    *fds.get_mut(count).ok_or(EINVAL)? = parse_fd(word).ok_or(EINVAL)?;
                    count = count.saturating_add(1);
                }
                // Active only once the programs just taken have run: a new generation.
                guard::attach(fds.get(..count).ok_or(EINVAL)?)?;
                // Who handed them over (false until now: nothing is bound in between that would
                // be bound otherwise, but for what the initramfs runs at that moment).
                self.from_initramfs
                    .store(file::root_is_initial(), Ordering::Release);
                // When it came, for whoever reads the log: at boot, before the root's mount.
                pr_info!("the mapping guard is attached\n");
                Ok(())
            }
            Some(b"release") if words.next().is_none() => {
                if locked {
                    return Err(EPERM);
                }
                self.from_initramfs.store(false, Ordering::Release);
                guard::release();
                Ok(())
            }
            _ => Err(EINVAL),
        }
    }
}

impl fmt::Display for Unavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unavailable::NoBpfLsm => f.write_str("the kernel is built without CONFIG_BPF_LSM"),
            Unavailable::NoModuleBtf => f.write_str(
                "the module has no BTF (a kernel without CONFIG_DEBUG_INFO_BTF_MODULES, or built without vmlinux)",
            ),
            Unavailable::DistilledBtf => f.write_str(
                "the module's BTF was made on a distilled base, which the kernel renumbers: build it as kmod/dkms/build does",
            ),
            Unavailable::Failed(errno) => write!(f, "registering its kfuncs failed (errno {errno})"),
        }
    }
}

/// The `guard` control file: `active`, `attached` (the programs never ran: is `bpf` among the
/// active LSMs?), `detached`, or `unavailable: <why>`.
impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Status::Unavailable(why) => write!(f, "unavailable: {why}"),
            Status::Detached => f.write_str("detached"),
            Status::Attached => f.write_str("attached"),
            Status::Active => f.write_str("active"),
        }
    }
}
