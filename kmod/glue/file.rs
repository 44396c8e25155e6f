// SPDX-License-Identifier: GPL-2.0

//! Files (`shim/file.c`): reading them, their identity, change stamp and facts (of the inode
//! that holds their data), refusing writers while they are verified, opening an ELF interpreter
//! as binfmt_elf does, naming them in the log.

use core::ffi::{c_void, CStr};
use core::marker::PhantomData;
use core::ptr::NonNull;

use kernel::error::{code, Error};
use kernel::ffi::{c_char, c_int};
use kernel::prelude::*;

use super::to_result;
use crate::elfsig_core::filesystem;
use crate::elfsig_core::{IoError, LendTo, ReadSomeAt};

// The bits of `FileId::facts` are elfsig-core's, which `ELFSIG_FACT_*` in `shim/shim.h` repeat.
pub(crate) use crate::elfsig_core::filesystem::Facts;

/// `struct file`, opaque.
#[repr(C)]
pub(crate) struct RawFile {
    _opaque: [u8; 0],
}

/// `struct elfsig_file_id`: which file, its change stamp, and the facts the verdict rests on,
/// all of the inode that holds the data (under overlayfs, the real file in a layer).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct FileId {
    /// Device of the filesystem.
    pub(crate) dev: u64,
    /// Inode number.
    pub(crate) ino: u64,
    /// Inode generation.
    pub(crate) generation: u64,
    /// The file handle (exportfs), zero without [`Facts::HANDLE`].
    pub(crate) handle: [u32; 6],
    /// Change time, in ns.
    pub(crate) ctime_ns: i64,
    /// Modification time, in ns.
    pub(crate) mtime_ns: i64,
    /// Size in bytes.
    pub(crate) size: u64,
    /// `i_version`, or 0 when the filesystem does not keep one.
    pub(crate) version: u64,
    /// The inode's address: which object, compared and never followed.
    pub(crate) inode: u64,
    /// What the shim found: [`Facts`] bits.
    pub(crate) facts: u32,
    /// A memfd's `F_SEAL_*` seals (with [`Facts::SEALABLE`]).
    pub(crate) seals: u32,
    /// The filesystem type's name, truncated and NUL-padded.
    pub(crate) fs: [u8; 16],
}

// The layout `shim/shim.h` declares and `shim/file.c` checks.
const _: () = {
    assert!(core::mem::size_of::<FileId>() == 112);
    assert!(core::mem::offset_of!(FileId, inode) == 80);
    assert!(core::mem::offset_of!(FileId, facts) == 88);
};

impl FileId {
    /// Whether every bit of `facts` is set.
    pub(crate) fn has(&self, facts: u32) -> bool {
        self.facts & facts == facts
    }

    /// What elfsig-core's rules for where a file lives look at.
    pub(crate) fn admission(&self) -> filesystem::File<'_> {
        filesystem::File {
            fs: self.fs(),
            facts: self.facts,
            seals: self.seals,
        }
    }

    /// The filesystem type's name (up to 15 bytes of it).
    pub(crate) fn fs(&self) -> &[u8] {
        let len = self
            .fs
            .iter()
            .take_while(|b| **b != 0)
            .fold(0usize, |n, _| n.saturating_add(1));
        self.fs.get(..len).unwrap_or(&[])
    }

    /// Whether `other` is the same object, whatever its change stamp.
    pub(crate) fn same_file(&self, other: &FileId) -> bool {
        self.inode == other.inode
            && self.dev == other.dev
            && self.ino == other.ino
            && self.generation == other.generation
    }

    /// Whether `other` is the same object with the same change stamp: what the end of an exec
    /// compares (without the handle, which it cannot compute there).
    pub(crate) fn same_content(&self, other: &FileId) -> bool {
        self.same_file(other)
            && self.ctime_ns == other.ctime_ns
            && self.mtime_ns == other.mtime_ns
            && self.size == other.size
            && self.version == other.version
    }
}

extern "C" {
    fn elfsig_shim_file_size(file: *mut RawFile) -> u64;
    fn elfsig_shim_file_read(file: *mut RawFile, buf: *mut u8, len: usize, pos: u64) -> isize;
    fn elfsig_shim_file_lendable(file: *mut RawFile) -> bool;
    fn elfsig_shim_file_resident(file: *mut RawFile) -> bool;
    fn elfsig_shim_file_lend(file: *mut RawFile, pos: u64, end: u64, lent: *mut RawLent) -> c_int;
    fn elfsig_shim_file_unlend(lent: *mut RawLent);
    fn elfsig_shim_killed() -> bool;
    fn elfsig_shim_file_id(file: *mut RawFile, id: *mut FileId);
    fn elfsig_shim_path_id(path: *const c_char, id: *mut FileId) -> c_int;
    fn elfsig_shim_deny_writes(file: *mut RawFile, real: *mut *mut RawInode) -> c_int;
    fn elfsig_shim_allow_writes(real: *mut RawInode);
    fn elfsig_shim_hold_write_denial(file: *const RawFile, real: *mut RawInode) -> c_int;
    fn elfsig_shim_write_denials_held() -> u64;
    fn elfsig_shim_open_exec(path: *const c_char, err: *mut c_int) -> *mut RawFile;
    fn elfsig_shim_close_exec(file: *mut RawFile);
    fn elfsig_shim_file_is_regular(file: *mut RawFile) -> bool;
    fn elfsig_shim_file_pinned(file: *mut RawFile) -> bool;
    fn elfsig_shim_log_refusal(
        file: *mut RawFile,
        what: *const c_char,
        message: *const c_char,
        enforced: bool,
    );
    fn elfsig_shim_fault_create();
    fn elfsig_shim_fault_remove();
    fn elfsig_shim_trust_initramfs() -> bool;
    fn elfsig_shim_root_is_initial() -> bool;
}

/// `struct inode`, opaque.
#[repr(C)]
pub(crate) struct RawInode {
    _opaque: [u8; 0],
}

/// A file the kernel holds open, borrowed for `'a`.
///
/// # Invariants
///
/// `ptr` points to a `struct file` that stays open for `'a`.
#[derive(Clone, Copy)]
pub(crate) struct FileRef<'a> {
    ptr: NonNull<RawFile>,
    _life: PhantomData<&'a RawFile>,
}

impl<'a> FileRef<'a> {
    /// # Safety
    ///
    /// `ptr` must be a valid `struct file *` that stays open for the lifetime chosen.
    pub(crate) unsafe fn from_raw(ptr: *mut RawFile) -> Option<Self> {
        // INVARIANT: the caller guarantees that a non-null `ptr` stays open for the lifetime.
        NonNull::new(ptr).map(|ptr| FileRef {
            ptr,
            _life: PhantomData,
        })
    }

    /// The raw pointer, for the shim.
    pub(crate) fn as_ptr(&self) -> *mut RawFile {
        self.ptr.as_ptr()
    }

    /// The file's size.
    pub(crate) fn size(&self) -> u64 {
        // SAFETY: by the type invariant `ptr` is an open file.
        unsafe { elfsig_shim_file_size(self.as_ptr()) }
    }

    /// The identity, change stamp and facts of the inode that holds the file's data. May
    /// sleep.
    pub(crate) fn id(&self) -> FileId {
        let mut id = FileId::default();
        // SAFETY: by the type invariant `ptr` is an open file; `id` is a valid
        // `struct elfsig_file_id`, whose layout is checked above.
        unsafe { elfsig_shim_file_id(self.as_ptr(), &mut id) };
        id
    }

    /// Refuses writers to the inode that holds the file's data until the denial is dropped;
    /// fails with `ETXTBSY` when it is open for writing.
    pub(crate) fn deny_writes(&self) -> Result<WriteDenial<'a>> {
        let mut real = core::ptr::null_mut();
        // SAFETY: by the type invariant `ptr` is an open file; `real` is a valid out-parameter.
        to_result(unsafe { elfsig_shim_deny_writes(self.as_ptr(), &mut real) })?;
        // INVARIANT: the shim denied writes to `real`, which the open file `ptr` keeps alive
        // for `'a`.
        NonNull::new(real)
            .map(|real| WriteDenial {
                file: self.ptr,
                real,
                _life: PhantomData,
            })
            .ok_or(code::EINVAL)
    }

    /// Whether reading all of it now needs neither I/O nor memory: a local disk file system's,
    /// tmpfs's or ramfs's file whose every page the page cache holds.
    pub(crate) fn resident(&self) -> bool {
        // SAFETY: by the type invariant `ptr` is an open file.
        unsafe { elfsig_shim_file_resident(self.as_ptr()) }
    }

    /// Whether it is a regular file (not a device, a pipe, a socket).
    pub(crate) fn is_regular(&self) -> bool {
        // SAFETY: by the type invariant `ptr` is an open file.
        unsafe { elfsig_shim_file_is_regular(self.as_ptr()) }
    }

    /// Whether pages of the inode that holds the file's data may be pinned for DMA (io_uring's
    /// registered buffers), which write them with no stamp moving where there is no dirty
    /// tracking. Walks the page cache: may sleep.
    pub(crate) fn pinned(&self) -> bool {
        // SAFETY: by the type invariant `ptr` is an open file.
        unsafe { elfsig_shim_file_pinned(self.as_ptr()) }
    }

    /// Logs (rate-limited) that the file is refused, with its path: `refused <what><path>:
    /// <message>`. Does not sleep.
    pub(crate) fn log_refusal(
        &self,
        what: &core::ffi::CStr,
        message: &core::ffi::CStr,
        enforced: bool,
    ) {
        // SAFETY: by the type invariant `ptr` is an open file; `what` and `message` are
        // NUL-terminated and outlive the call.
        unsafe {
            elfsig_shim_log_refusal(
                self.as_ptr(),
                what.as_ptr().cast::<c_char>(),
                message.as_ptr().cast::<c_char>(),
                enforced,
            )
        }
    }
}

/// Writers refused to a file's real inode, until dropped.
///
/// # Invariants
///
/// `real` is an inode whose `i_writecount` the shim decremented, kept alive for `'a` by the open
/// file `file`, whose data it holds.
pub(crate) struct WriteDenial<'a> {
    file: NonNull<RawFile>,
    real: NonNull<RawInode>,
    _life: PhantomData<&'a RawInode>,
}

impl WriteDenial<'_> {
    /// Keeps writers refused until the file is released (the mapping guard's `file_release`
    /// program gives the refusal back: `shim/write_denials.c`) instead of until dropped. When
    /// the file holds a refusal already, or the module does not hold the guard's links (so
    /// that nothing would give it back), this one is given back now. Fails with `ENOMEM`. May
    /// sleep.
    pub(crate) fn hold_until_released(self) -> Result {
        // SAFETY: by the type invariant `file` is open and `real` carries a refusal taken on
        // its data's inode.
        let ret = unsafe { elfsig_shim_hold_write_denial(self.file.as_ptr(), self.real.as_ptr()) };
        if ret == 0 {
            // The shim's table owns the refusal now.
            core::mem::forget(self);
            return Ok(());
        }
        // Dropped here: the refusal is given back.
        if ret == code::ENOMEM.to_errno() {
            Err(code::ENOMEM)
        } else {
            Ok(())
        }
    }
}

/// How many files hold a refusal of writers until their release
/// ([`WriteDenial::hold_until_released`]).
pub(crate) fn write_denials_held() -> u64 {
    // SAFETY: reads one counter of the shim's.
    unsafe { elfsig_shim_write_denials_held() }
}

impl Drop for WriteDenial<'_> {
    fn drop(&mut self) {
        // SAFETY: by the type invariant the denial was taken on `real`, alive; it is given back
        // once.
        unsafe { elfsig_shim_allow_writes(self.real.as_ptr()) }
    }
}

/// Reads through `kernel_read`. A task being killed reads no more (`EINTR`): verifying a huge
/// file stops at its next chunk when the exec's task gets `SIGKILL`, and is refused; so does a
/// worker reading for that task (`workqueue.rs`).
impl ReadSomeAt for FileRef<'_> {
    fn read_some_at(&mut self, offset: u64, buf: &mut [u8]) -> Result<usize, IoError> {
        // SAFETY: reads the current task's signal state.
        if unsafe { elfsig_shim_killed() } {
            return Err(IoError::Errno(code::EINTR.to_errno().saturating_neg()));
        }
        // SAFETY: by the type invariant `ptr` is an open file; `buf` is valid and writable
        // for its length.
        let n =
            unsafe { elfsig_shim_file_read(self.as_ptr(), buf.as_mut_ptr(), buf.len(), offset) };
        if n < 0 {
            let errno = i32::try_from(n).map_or(code::EIO.to_errno(), |n| n);
            return Err(IoError::Errno(errno.saturating_neg()));
        }
        usize::try_from(n).map_err(|_| IoError::End)
    }

    /// Hashes from the page cache where the file's is what a read returns
    /// (`elfsig_shim_file_lendable`: the local disk file systems), at most a folio or 64 KiB at
    /// a time, each held and mapped while it is hashed. Saves copying every byte verified (44
    /// MB in a Debian boot). A task being killed stops here too. The bytes are the file's as
    /// long as no one writes it: callers verify with writers refused (`deny_writes`), as they
    /// do for reads.
    fn lend_at(&mut self, offset: u64, len: u64, to: &mut LendTo<'_>) -> Result<bool, IoError> {
        // SAFETY: by the type invariant `ptr` is an open file.
        if !unsafe { elfsig_shim_file_lendable(self.as_ptr()) } {
            return Ok(false);
        }
        let end = offset.checked_add(len).ok_or(IoError::End)?;
        let mut at = offset;
        while at < end {
            // SAFETY: reads the current task's signal state.
            if unsafe { elfsig_shim_killed() } {
                return Err(IoError::Errno(code::EINTR.to_errno().saturating_neg()));
            }
            let lent = Lent::new(*self, at, end)?;
            let bytes = lent.bytes();
            at = u64::try_from(bytes.len())
                .ok()
                .filter(|&n| n > 0)
                .and_then(|n| at.checked_add(n))
                .ok_or(IoError::End)?;
            if to(bytes).is_break() {
                break;
            }
        }
        Ok(true)
    }
}

/// `struct elfsig_lent`: bytes of a file's page cache, mapped.
#[repr(C)]
struct RawLent {
    data: *const u8,
    len: usize,
    folio: *mut c_void,
}

/// Bytes of a file's page cache, mapped and their folio held until this is dropped.
///
/// # Invariants
///
/// `raw` is what `elfsig_shim_file_lend` filled in: `data` maps `len` bytes of a folio that
/// `raw.folio` holds a reference to, until `elfsig_shim_file_unlend`.
struct Lent {
    raw: RawLent,
}

impl Lent {
    /// The bytes of `file` from `at` on, up to `end` and within one folio: at least one byte.
    fn new(file: FileRef<'_>, at: u64, end: u64) -> Result<Self, IoError> {
        let mut raw = RawLent {
            data: core::ptr::null(),
            len: 0,
            folio: core::ptr::null_mut(),
        };
        // SAFETY: `file` is an open file; `raw` is a valid `struct elfsig_lent`, filled in
        // when this returns 0.
        match unsafe { elfsig_shim_file_lend(file.as_ptr(), at, end, &mut raw) } {
            // INVARIANT: filled in.
            0 => Ok(Lent { raw }),
            // The file no longer reaches `end`.
            1 => Err(IoError::End),
            errno => Err(IoError::Errno(errno.saturating_neg())),
        }
    }

    fn bytes(&self) -> &[u8] {
        // SAFETY: by the type invariant `data` maps `len` bytes, which stay mapped and held
        // while `self` lives; writers are held off the file while it is verified, so nothing
        // changes them meanwhile.
        unsafe { core::slice::from_raw_parts(self.raw.data, self.raw.len) }
    }
}

impl Drop for Lent {
    fn drop(&mut self) {
        // SAFETY: by the type invariant the bytes are mapped and the folio held, given back
        // once.
        unsafe { elfsig_shim_file_unlend(&mut self.raw) }
    }
}

/// From now on, marks the files of the initramfs the module is being loaded from, unchanged
/// since, with `INITRAMFS` (`trust_initramfs`); returns false, marking nothing, when the
/// loading process's root is not the initial root file system. Called once, from init, before
/// any file is checked.
pub(crate) fn trust_initramfs() -> bool {
    // SAFETY: from module init, before the binfmt handler and the guard can read what it sets.
    unsafe { elfsig_shim_trust_initramfs() }
}

/// Whether the current process's root is the initial root file system (the initramfs's,
/// until switch_root).
pub(crate) fn root_is_initial() -> bool {
    // SAFETY: reads the current process's and init_task's roots, holding references meanwhile.
    unsafe { elfsig_shim_root_is_initial() }
}

/// The identity of the file `path` names now, found without opening it.
pub(crate) fn path_id(path: &CStr) -> Result<FileId> {
    let mut id = FileId::default();
    // SAFETY: `path` is NUL-terminated; `id` is a valid `struct elfsig_file_id`.
    to_result(unsafe { elfsig_shim_path_id(path.as_ptr().cast(), &mut id) })?;
    Ok(id)
}

/// A file opened with `open_exec()`: writes are refused while it is open. Closed on drop.
///
/// # Invariants
///
/// `ptr` is a file `open_exec()` returned, open until this is dropped.
pub(crate) struct ExecFile {
    ptr: NonNull<RawFile>,
}

// SAFETY: an open file may be read, and closed, from any task (a worker checking it for the task
// that opened it, `workqueue.rs`).
unsafe impl Send for ExecFile {}

impl ExecFile {
    /// Opens `path` as binfmt_elf opens an ELF interpreter.
    pub(crate) fn open(path: &CStr) -> Result<Self> {
        let mut err: c_int = 0;
        // SAFETY: `path` is NUL-terminated; `err` is a valid out-parameter.
        let ptr = unsafe { elfsig_shim_open_exec(path.as_ptr().cast(), &mut err) };
        match NonNull::new(ptr) {
            // INVARIANT: a non-null return is an open file from `open_exec()`.
            Some(ptr) => Ok(ExecFile { ptr }),
            None if err < 0 => Err(Error::from_errno(err)),
            None => Err(code::ENOENT),
        }
    }

    /// The open file.
    pub(crate) fn file(&self) -> FileRef<'_> {
        // INVARIANT: the file stays open for as long as `self` is borrowed.
        FileRef {
            ptr: self.ptr,
            _life: PhantomData,
        }
    }
}

impl Drop for ExecFile {
    fn drop(&mut self) {
        // SAFETY: by the type invariant `ptr` came from `open_exec()`; it is closed once.
        unsafe { elfsig_shim_close_exec(self.ptr.as_ptr()) }
    }
}

/// `/sys/kernel/debug/fail_elfsig_read` on kernels with fault injection in debugfs (nothing
/// elsewhere): makes the module's reads fail on purpose. Removed on drop.
pub(crate) struct FaultInjection(());

impl FaultInjection {
    /// Creates the debugfs attribute, where the kernel has fault injection.
    pub(crate) fn create() -> Self {
        // SAFETY: called once, from module init; undone by `drop`.
        unsafe { elfsig_shim_fault_create() };
        FaultInjection(())
    }
}

impl Drop for FaultInjection {
    fn drop(&mut self) {
        // SAFETY: undoes `create`, once.
        unsafe { elfsig_shim_fault_remove() }
    }
}
