// SPDX-License-Identifier: GPL-2.0

//! The mapping guard's state (docs/DESIGN.md): whether the kernel can run it, which of its BPF
//! programs the module holds, and whether the `mmap_file` program has been seen calling the
//! module since. What the `guard` control file shows and what writing it does.

use core::fmt;
use core::sync::atomic::{AtomicBool, AtomicI32, Ordering};

use kernel::prelude::*;

use crate::glue::guard::{self, Unavailable};

/// The guard's state.
pub(crate) struct Guard {
    /// What offering the kfuncs returned: 0, or why the kernel cannot run the guard
    /// ([`Unavailable::code`]).
    unavailable: AtomicI32,
    /// Whether the `mmap_file` kfunc has run since the module took the links.
    seen: AtomicBool,
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
            seen: AtomicBool::new(false),
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

    /// The `mmap_file` program called the module.
    pub(crate) fn seen(&self) {
        if !self.seen.load(Ordering::Relaxed) {
            self.seen.store(true, Ordering::Release);
        }
    }

    /// The guard's state now.
    pub(crate) fn status(&self) -> Status {
        if let Some(why) = Unavailable::from_code(self.unavailable.load(Ordering::Acquire)) {
            Status::Unavailable(why)
        } else if !guard::attached() {
            Status::Detached
        } else if self.seen.load(Ordering::Acquire) {
            Status::Active
        } else {
            Status::Attached
        }
    }

    /// Applies a write to the `guard` control file: `attach FD FD` takes the links behind the
    /// writer's descriptors (one program on each hook, all or none); `release` drops them,
    /// refused while `locked`.
    pub(crate) fn command(&self, input: &[u8], locked: bool) -> Result {
        let mut words = input
            .split(|b| b.is_ascii_whitespace())
            .filter(|w| !w.is_empty());
        match words.next() {
            Some(b"attach") => {
                if let Status::Unavailable(_) = self.status() {
                    return Err(ENODEV);
                }
                // One more slot than there are hooks, so that too many descriptors are refused.
                let mut fds = [-1i32; 3];
                let mut count = 0;
                for word in words {
                    *fds.get_mut(count).ok_or(EINVAL)? = parse_fd(word)?;
                    count = count.saturating_add(1);
                }
                guard::attach(fds.get(..count).ok_or(EINVAL)?)?;
                // Seen again only once the programs just taken have run.
                self.seen.store(false, Ordering::Release);
                Ok(())
            }
            Some(b"release") if words.next().is_none() => {
                if locked {
                    return Err(EPERM);
                }
                guard::release();
                self.seen.store(false, Ordering::Release);
                Ok(())
            }
            _ => Err(EINVAL),
        }
    }
}

/// A descriptor number in decimal.
fn parse_fd(word: &[u8]) -> Result<i32> {
    let mut fd: i32 = 0;
    if word.is_empty() || word.len() > 9 {
        return Err(EINVAL);
    }
    for digit in word {
        if !digit.is_ascii_digit() {
            return Err(EINVAL);
        }
        fd = fd
            .checked_mul(10)
            .and_then(|n| n.checked_add(i32::from(digit - b'0')))
            .ok_or(EINVAL)?;
    }
    Ok(fd)
}

impl fmt::Display for Unavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unavailable::NoBpfLsm => f.write_str("the kernel is built without CONFIG_BPF_LSM"),
            Unavailable::NoModuleBtf => f.write_str(
                "the module has no BTF (a kernel without CONFIG_DEBUG_INFO_BTF_MODULES, or built without vmlinux)",
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
