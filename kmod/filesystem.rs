// SPDX-License-Identifier: GPL-2.0

//! What a verdict may trust about where a file lives: the policy per filesystem and per kind of
//! file, applied to the facts the shim reads off the inode that holds the data (under
//! overlayfs, the real file in a layer, never the overlay's inode).
//!
//! - **Cached**: on the filesystems listed in [`CACHED`], whose inode numbers, generations
//!   and file handles name one live file each and whose change time only the kernel sets (to
//!   the current time, on every change: no owner can set it back), a verdict is kept for as
//!   long as the file's identity and change stamp stay as they were.
//! - **Verified every time**: everywhere else (vfat, exfat, NFS, 9p, CIFS, ...), where the
//!   owner sets the only time there is, or a server or another machine changes the bytes: no
//!   verdict is kept, each exec and mapping verifies.
//! - **Refused**: files on a superblock that a user namespace owns (anyone can mount one of
//!   their own) or whose changes the kernel cannot see (FUSE and virtiofs, whatever mounted
//!   it), unless the administrator allows them (`untrusted` = `verify`: verified every time,
//!   never cached);
//!   files on a kernel-internal mount (memfd, SysV shared memory), which come with writable
//!   descriptors the kernel never counts as writers, unless sealed against writes; files
//!   someone has open for writing; and an overlayfs file opened before a copy-up, which reads
//!   the copy and maps the file it opened.
//!
//! A write through a shared mapping moves the stamp when it first faults a page writable, as
//! any write does. Pages pinned for DMA (io_uring's registered buffers, which filesystems
//! without dirty tracking allow) go on being written after the mapping is gone, with no stamp
//! moving: a file with some is refused where it is verified (`policy::verify_into_cache`).

use kernel::prelude::*;

use crate::elfsig_core::Reason;
use crate::glue::file::{Facts, FileId};
use crate::verify::{Failure, KernelDetail};

/// The filesystems whose verdicts are cached, and whether one needs the file handle to tell
/// its files apart (a btrfs subvolume numbers its inodes as every other one does).
pub(crate) const CACHED: [(&str, bool); 11] = [
    ("ext2", false),
    ("ext3", false),
    ("ext4", false),
    ("xfs", false),
    ("btrfs", true),
    ("f2fs", false),
    ("tmpfs", false),
    ("ramfs", false),
    ("rootfs", false),
    ("squashfs", false),
    ("erofs", false),
];

/// `memfd_create`'s seals (include/uapi/linux/fcntl.h).
const F_SEAL_SHRINK: u32 = 0x0002;
const F_SEAL_GROW: u32 = 0x0004;
const F_SEAL_WRITE: u32 = 0x0008;
const F_SEAL_FUTURE_WRITE: u32 = 0x0010;

/// How a file's verdict is kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Keeping {
    /// In the cache, while the file's identity and stamp stay as they were.
    Cache,
    /// Not at all: verified at every exec and mapping.
    Verify,
}

/// What applies to files on mounts the kernel does not trust.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Untrusted {
    /// Refused (the default).
    Refuse,
    /// Verified every time, never cached (the administrator's opt-in).
    Verify,
}

/// Whether the file may be checked at all, and how its verdict is kept.
pub(crate) fn admit(id: &FileId, untrusted: Untrusted) -> Result<Keeping, Failure> {
    if id.has(Facts::INTERNAL) && !sealed(id) {
        return Err(Failure::new(Reason::Unsealed));
    }
    if id.has(Facts::STALE_OPEN) {
        return Err(Failure::modified(KernelDetail::CopiedUp));
    }
    let untrusted_mount = id.facts & (Facts::USERNS | Facts::UNVERIFIABLE) != 0;
    if untrusted_mount && untrusted == Untrusted::Refuse {
        return Err(Failure::new(Reason::UntrustedMount));
    }
    if id.has(Facts::WRITERS) {
        return Err(Failure::new(Reason::OpenForWriting));
    }
    let cached = CACHED.iter().any(|(fs, needs_handle)| {
        fs.as_bytes() == id.fs() && (!needs_handle || id.has(Facts::HANDLE))
    });
    let changes_show = id.facts & (Facts::IVERSION | Facts::SETTLED) != 0;
    Ok(if cached && changes_show && !untrusted_mount {
        Keeping::Cache
    } else {
        Keeping::Verify
    })
}

/// Whether a file whose writers the kernel does not count can no longer change: sealed against
/// writes (`F_SEAL_WRITE`, or `F_SEAL_FUTURE_WRITE` with no shared mapping left that could
/// write), against shrinking and against growing, as runc and systemd seal what they exec.
fn sealed(id: &FileId) -> bool {
    let seals = id.seals;
    let writes = seals & F_SEAL_WRITE != 0
        || (seals & F_SEAL_FUTURE_WRITE != 0 && !id.has(Facts::WRITABLY_MAPPED));
    id.has(Facts::SEALABLE)
        && writes
        && seals & (F_SEAL_SHRINK | F_SEAL_GROW) == F_SEAL_SHRINK | F_SEAL_GROW
}

/// The `filesystems` control file: what applies where, one rule per line.
pub(crate) fn describe(out: &mut impl core::fmt::Write, untrusted: Untrusted) -> core::fmt::Result {
    out.write_str("cache")?;
    for (fs, _) in CACHED {
        write!(out, " {fs}")?;
    }
    out.write_str("\nverify *\n")?;
    writeln!(
        out,
        "untrusted {}",
        match untrusted {
            Untrusted::Refuse => "refuse",
            Untrusted::Verify => "verify",
        }
    )?;
    out.write_str("internal sealed\n")
}
