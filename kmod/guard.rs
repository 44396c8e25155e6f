// SPDX-License-Identifier: GPL-2.0

//! The mapping guard's state (docs/DESIGN.md): whether the kernel can run it, which of its BPF
//! programs the module holds, and whether the `mmap_file` program has been seen calling the
//! module since. What the `guard` control file shows and what writing it does.

use core::fmt;
use core::sync::atomic::{AtomicBool, AtomicI32, Ordering};

use kernel::prelude::*;

use crate::glue::guard::{self, Hook, Unavailable};

/// The guard's state.
pub(crate) struct Guard {
    /// 0 while the kernel can run the guard; otherwise why not (see [`Guard::unavailable`]).
    unavailable: AtomicI32,
    /// Whether the `mmap_file` kfunc has run since the module took the links.
    seen: AtomicBool,
}

/// What the `guard` control file says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Status {
    /// The kernel cannot run the guard.
    Unavailable(Unavailable),
    /// The module holds no program on `mmap_file`: only execs are checked.
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
        let code = match result {
            Ok(()) => 0,
            Err(Unavailable::NoBpfLsm) => 1,
            Err(Unavailable::NoModuleBtf) => 2,
            Err(Unavailable::Failed(errno)) => errno.min(-1),
        };
        self.unavailable.store(code, Ordering::Release);
        result
    }

    fn unavailable(&self) -> Option<Unavailable> {
        match self.unavailable.load(Ordering::Acquire) {
            0 => None,
            1 => Some(Unavailable::NoBpfLsm),
            2 => Some(Unavailable::NoModuleBtf),
            errno => Some(Unavailable::Failed(errno)),
        }
    }

    /// The `mmap_file` program called the module.
    pub(crate) fn seen(&self) {
        if !self.seen.load(Ordering::Relaxed) {
            self.seen.store(true, Ordering::Release);
        }
    }

    /// The guard's state now.
    pub(crate) fn status(&self) -> Status {
        if let Some(why) = self.unavailable() {
            return Status::Unavailable(why);
        }
        if !Hook::ALL.into_iter().all(guard::holds) {
            return Status::Detached;
        }
        if self.seen.load(Ordering::Acquire) {
            Status::Active
        } else {
            Status::Attached
        }
    }

    /// Applies a write to the `guard` control file: `attach FD...` takes the links behind the
    /// writer's descriptors (one per hook); `release` drops them, refused while `locked`.
    pub(crate) fn command(&self, input: &[u8], locked: bool) -> Result {
        let mut words = input
            .split(|b| b.is_ascii_whitespace())
            .filter(|w| !w.is_empty());
        match words.next() {
            Some(b"attach") => {
                if self.unavailable().is_some() {
                    return Err(ENODEV);
                }
                let mut any = false;
                for word in words {
                    let fd = parse_fd(word)?;
                    if guard::hold(fd)? == Hook::MmapFile {
                        // Seen again only once the program just taken has run.
                        self.seen.store(false, Ordering::Release);
                    }
                    any = true;
                }
                if any {
                    Ok(())
                } else {
                    Err(EINVAL)
                }
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
