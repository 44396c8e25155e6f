//! What a verdict may trust about where a file lives: the kernel module's policy per filesystem
//! and per kind of file, applied to the facts its shim reads off the inode that holds the data
//! (under overlayfs, the real file in a layer, never the overlay's inode).
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
//!   it), unless the administrator allows them ([`Untrusted::Verify`]: verified every time,
//!   never cached); files on a kernel-internal mount (memfd, SysV shared memory), which come
//!   with writable descriptors the kernel never counts as writers, unless sealed against
//!   writes; files someone has open for writing; and an overlayfs file opened before a
//!   copy-up, which reads the copy and maps the file it opened.
//!
//! A write through a shared mapping moves the stamp when it first faults a page writable, as
//! any write does. Pages pinned for DMA (io_uring's registered buffers, which filesystems
//! without dirty tracking allow) go on being written after the mapping is gone, with no stamp
//! moving: the module refuses a file with some where it verifies it ([`Facts::NO_WRITEBACK`]).

use core::fmt;

/// The filesystems whose verdicts are cached, and whether one needs the file handle to tell
/// its files apart (a btrfs subvolume numbers its inodes as every other one does).
pub const CACHED: [(&str, bool); 11] = [
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

/// What the module's shim found about a file: bits of [`File::facts`] (`ELFSIG_FACT_*` in
/// `kmod/shim/shim.h`, which must agree).
#[derive(Clone, Copy, Debug)]
pub struct Facts;

impl Facts {
    /// The filesystem keeps `i_version`.
    pub const IVERSION: u32 = 1 << 1;
    /// Changed before the current clock tick: a later change moves its times.
    pub const SETTLED: u32 = 1 << 2;
    /// The file handle is known.
    pub const HANDLE: u32 = 1 << 3;
    /// The data is another inode's than the one the path shows (overlayfs).
    pub const STACKED: u32 = 1 << 4;
    /// On a superblock a user namespace other than the initial one owns.
    pub const USERNS: u32 = 1 << 5;
    /// On a filesystem whose changes the kernel cannot see (FUSE).
    pub const UNVERIFIABLE: u32 = 1 << 6;
    /// On a kernel-internal mount (memfd, SysV shared memory): writers are not counted.
    pub const INTERNAL: u32 = 1 << 7;
    /// [`File::seals`] holds the file's seals.
    pub const SEALABLE: u32 = 1 << 8;
    /// A shared mapping may write it.
    pub const WRITABLY_MAPPED: u32 = 1 << 9;
    /// Open for writing.
    pub const WRITERS: u32 = 1 << 10;
    /// No dirty tracking (shmem, ramfs): its pages may be pinned for DMA for good, and written
    /// through the pins with no writer counted and no stamp moved.
    pub const NO_WRITEBACK: u32 = 1 << 11;
    /// An overlayfs file that maps another real file than the one it reads (copied up since
    /// it was opened).
    pub const STALE_OPEN: u32 = 1 << 12;
    /// On the initramfs the module was loaded from (`trust_initramfs`), its change time
    /// earlier than the load: a file the initramfs, which ran unchecked before the module and
    /// loaded it, holds as it was then.
    pub const INITRAMFS: u32 = 1 << 13;
}

/// `memfd_create`'s seals (include/uapi/linux/fcntl.h).
pub const F_SEAL_SHRINK: u32 = 0x0002;
/// Growing is refused.
pub const F_SEAL_GROW: u32 = 0x0004;
/// Writing is refused.
pub const F_SEAL_WRITE: u32 = 0x0008;
/// Writing through new descriptors and mappings is refused.
pub const F_SEAL_FUTURE_WRITE: u32 = 0x0010;

/// What the admission looks at of a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct File<'a> {
    /// Its filesystem type's name.
    pub fs: &'a [u8],
    /// [`Facts`] bits.
    pub facts: u32,
    /// Its `F_SEAL_*` seals, with [`Facts::SEALABLE`].
    pub seals: u32,
}

impl File<'_> {
    /// Whether every bit of `facts` is set.
    pub fn has(&self, facts: u32) -> bool {
        self.facts & facts == facts
    }
}

/// How a file's verdict is kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Keeping {
    /// In the cache, while the file's identity and stamp stay as they were.
    Cache,
    /// Not at all: verified at every exec and mapping.
    Verify,
    /// Not verified: the initramfs's own file, as it was when the initramfs loaded the module
    /// ([`Facts::INITRAMFS`]), which nothing maps writable. Its identity and stamp still tell
    /// whether what exec mapped is the file checked.
    Initramfs,
}

/// What applies to files on mounts the kernel does not trust.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Untrusted {
    /// Refused (the default).
    Refuse,
    /// Verified every time, never cached (the administrator's opt-in).
    Verify,
}

/// Why a file may not be checked at all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// A memfd or SysV shared memory not sealed against writes, shrinking and growing.
    Unsealed,
    /// An overlayfs file opened before its copy-up: it maps the file it opened, not the copy
    /// it reads.
    CopiedUp,
    /// On a mount the kernel does not trust, while such mounts are refused.
    UntrustedMount,
    /// Open for writing.
    OpenForWriting,
}

/// Whether `file` may be checked at all, and how its verdict is kept.
pub fn admit(file: &File<'_>, untrusted: Untrusted) -> Result<Keeping, Refusal> {
    if file.has(Facts::INTERNAL) && !sealed(file) {
        return Err(Refusal::Unsealed);
    }
    if file.has(Facts::STALE_OPEN) {
        return Err(Refusal::CopiedUp);
    }
    let untrusted_mount = file.facts & (Facts::USERNS | Facts::UNVERIFIABLE) != 0;
    if untrusted_mount && untrusted == Untrusted::Refuse {
        return Err(Refusal::UntrustedMount);
    }
    if file.has(Facts::WRITERS) {
        return Err(Refusal::OpenForWriting);
    }
    if file.has(Facts::INITRAMFS) && !file.has(Facts::WRITABLY_MAPPED) {
        return Ok(Keeping::Initramfs);
    }
    let cached =
        CACHED.iter().any(|(fs, needs_handle)| fs.as_bytes() == file.fs && (!needs_handle || file.has(Facts::HANDLE)));
    let changes_show = file.facts & (Facts::IVERSION | Facts::SETTLED) != 0;
    Ok(if cached && changes_show && !untrusted_mount { Keeping::Cache } else { Keeping::Verify })
}

/// Whether a file whose writers the kernel does not count can no longer change: sealed against
/// writes (`F_SEAL_WRITE`, or `F_SEAL_FUTURE_WRITE` with no shared mapping left that could
/// write), against shrinking and against growing, as runc and systemd seal what they exec.
fn sealed(file: &File<'_>) -> bool {
    let seals = file.seals;
    let writes = seals & F_SEAL_WRITE != 0 || (seals & F_SEAL_FUTURE_WRITE != 0 && !file.has(Facts::WRITABLY_MAPPED));
    file.has(Facts::SEALABLE) && writes && seals & (F_SEAL_SHRINK | F_SEAL_GROW) == F_SEAL_SHRINK | F_SEAL_GROW
}

/// The `filesystems` control file: what applies where, one rule per line.
pub fn describe(out: &mut impl fmt::Write, untrusted: Untrusted) -> fmt::Result {
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::string::String;

    const SETTLED_EXT4: File<'static> = File { fs: b"ext4", facts: Facts::SETTLED, seals: 0 };

    fn with(facts: u32) -> File<'static> {
        File { facts: SETTLED_EXT4.facts | facts, ..SETTLED_EXT4 }
    }

    const SEALED: u32 = F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW;

    #[test]
    fn a_listed_filesystem_keeps_verdicts_once_its_changes_show() {
        assert_eq!(admit(&SETTLED_EXT4, Untrusted::Refuse), Ok(Keeping::Cache));
        let unsettled = File { facts: 0, ..SETTLED_EXT4 };
        assert_eq!(admit(&unsettled, Untrusted::Refuse), Ok(Keeping::Verify));
        let versioned = File { facts: Facts::IVERSION, ..SETTLED_EXT4 };
        assert_eq!(admit(&versioned, Untrusted::Refuse), Ok(Keeping::Cache));
    }

    #[test]
    fn every_other_filesystem_verifies_every_time() {
        for fs in [&b"vfat"[..], b"nfs", b"9p", b"ext", b"ext44", b""] {
            let file = File { fs, ..SETTLED_EXT4 };
            assert_eq!(admit(&file, Untrusted::Refuse), Ok(Keeping::Verify), "{fs:?}");
        }
    }

    #[test]
    fn btrfs_needs_the_handle() {
        let btrfs = File { fs: b"btrfs", ..SETTLED_EXT4 };
        assert_eq!(admit(&btrfs, Untrusted::Refuse), Ok(Keeping::Verify));
        let with_handle = File { facts: btrfs.facts | Facts::HANDLE, ..btrfs };
        assert_eq!(admit(&with_handle, Untrusted::Refuse), Ok(Keeping::Cache));
    }

    #[test]
    fn untrusted_mounts_are_refused_or_verified_never_cached() {
        for fact in [Facts::USERNS, Facts::UNVERIFIABLE] {
            assert_eq!(admit(&with(fact), Untrusted::Refuse), Err(Refusal::UntrustedMount));
            assert_eq!(admit(&with(fact), Untrusted::Verify), Ok(Keeping::Verify));
        }
    }

    #[test]
    fn writers_and_stale_opens_are_refused() {
        assert_eq!(admit(&with(Facts::WRITERS), Untrusted::Verify), Err(Refusal::OpenForWriting));
        assert_eq!(admit(&with(Facts::STALE_OPEN), Untrusted::Verify), Err(Refusal::CopiedUp));
        // The copy-up is named before the mount's trust.
        let both = with(Facts::STALE_OPEN | Facts::USERNS);
        assert_eq!(admit(&both, Untrusted::Refuse), Err(Refusal::CopiedUp));
    }

    #[test]
    fn internal_files_need_every_seal() {
        let memfd = |seals: u32, facts: u32| File {
            fs: b"tmpfs",
            facts: Facts::INTERNAL | Facts::SEALABLE | Facts::SETTLED | facts,
            seals,
        };
        assert_eq!(admit(&memfd(SEALED, 0), Untrusted::Refuse), Ok(Keeping::Cache));
        for missing in [F_SEAL_WRITE, F_SEAL_SHRINK, F_SEAL_GROW] {
            let file = memfd(SEALED & !missing, 0);
            assert_eq!(admit(&file, Untrusted::Refuse), Err(Refusal::Unsealed));
        }
        let future = F_SEAL_FUTURE_WRITE | F_SEAL_SHRINK | F_SEAL_GROW;
        assert_eq!(admit(&memfd(future, 0), Untrusted::Refuse), Ok(Keeping::Cache));
        let mapped = memfd(future, Facts::WRITABLY_MAPPED);
        assert_eq!(admit(&mapped, Untrusted::Refuse), Err(Refusal::Unsealed));
        // Seals read off a file that cannot have any mean nothing.
        let unsealable = File { facts: Facts::INTERNAL | Facts::SETTLED, ..memfd(SEALED, 0) };
        assert_eq!(admit(&unsealable, Untrusted::Refuse), Err(Refusal::Unsealed));
    }

    #[test]
    fn the_initramfs_own_files_are_trusted_while_no_one_can_write_them() {
        let initramfs = File { fs: b"rootfs", facts: Facts::INITRAMFS | Facts::SETTLED, seals: 0 };
        assert_eq!(admit(&initramfs, Untrusted::Refuse), Ok(Keeping::Initramfs));
        let mapped = File { facts: initramfs.facts | Facts::WRITABLY_MAPPED, ..initramfs };
        assert_eq!(admit(&mapped, Untrusted::Refuse), Ok(Keeping::Cache));
        let written = File { facts: initramfs.facts | Facts::WRITERS, ..initramfs };
        assert_eq!(admit(&written, Untrusted::Refuse), Err(Refusal::OpenForWriting));
        // The same file changed since the module loaded: verified as any other.
        let changed = File { facts: Facts::SETTLED, ..initramfs };
        assert_eq!(admit(&changed, Untrusted::Refuse), Ok(Keeping::Cache));
    }

    /// The shim reads the facts off the inode and names them in `kmod/shim/shim.h`; the two
    /// lists must agree bit for bit, or the module would judge one fact as another.
    #[test]
    fn the_facts_are_the_shims() {
        let shim = include_str!("../../../kmod/shim/shim.h");
        let bit = |name: &str| -> Option<u32> {
            let line = shim.lines().find(|l| l.starts_with(&std::format!("#define ELFSIG_FACT_{name}\t")))?;
            let shift = line.split("(1u << ").nth(1)?.split(')').next()?;
            Some(1 << shift.parse::<u32>().ok()?)
        };
        let ours = [
            ("IVERSION", Facts::IVERSION),
            ("SETTLED", Facts::SETTLED),
            ("HANDLE", Facts::HANDLE),
            ("STACKED", Facts::STACKED),
            ("USERNS", Facts::USERNS),
            ("UNVERIFIABLE", Facts::UNVERIFIABLE),
            ("INTERNAL", Facts::INTERNAL),
            ("SEALABLE", Facts::SEALABLE),
            ("WRITABLY_MAPPED", Facts::WRITABLY_MAPPED),
            ("WRITERS", Facts::WRITERS),
            ("NO_WRITEBACK", Facts::NO_WRITEBACK),
            ("STALE_OPEN", Facts::STALE_OPEN),
            ("INITRAMFS", Facts::INITRAMFS),
        ];
        for (name, value) in ours {
            assert_eq!(bit(name), Some(value), "ELFSIG_FACT_{name}");
        }
        let defined = shim.lines().filter(|l| l.starts_with("#define ELFSIG_FACT_")).count();
        assert_eq!(defined, ours.len(), "a fact the shim names that elfsig-core does not");
    }

    #[test]
    fn the_control_file_lists_the_policy() {
        let mut out = String::new();
        describe(&mut out, Untrusted::Refuse).unwrap();
        assert_eq!(
            out,
            "cache ext2 ext3 ext4 xfs btrfs f2fs tmpfs ramfs rootfs squashfs erofs\n\
             verify *\nuntrusted refuse\ninternal sealed\n"
        );
        out.clear();
        describe(&mut out, Untrusted::Verify).unwrap();
        assert!(out.contains("\nuntrusted verify\n"));
    }
}
