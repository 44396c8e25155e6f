// SPDX-License-Identifier: GPL-2.0

//! Files (`shim/file.c`): reading them, their identity and change stamp, opening an ELF
//! interpreter as binfmt_elf does, naming them in the log.

use core::ffi::CStr;
use core::marker::PhantomData;
use core::ptr::NonNull;

use kernel::error::{code, Error};
use kernel::ffi::{c_char, c_int};
use kernel::prelude::*;

use super::to_result;
use crate::elfsig_core::{IoError, ReadSomeAt};

/// `struct file`, opaque.
#[repr(C)]
pub(crate) struct RawFile {
    _opaque: [u8; 0],
}

/// `struct elfsig_file_id`: which file, and its change stamp.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct FileId {
    /// Device of the filesystem.
    pub(crate) dev: u64,
    /// Inode number.
    pub(crate) ino: u64,
    /// Inode generation.
    pub(crate) generation: u64,
    /// Change time, in ns.
    pub(crate) ctime_ns: i64,
    /// Modification time, in ns.
    pub(crate) mtime_ns: i64,
    /// Size in bytes.
    pub(crate) size: u64,
    /// `i_version`, or 0 when the filesystem does not keep one.
    pub(crate) version: u64,
    /// Whether any later change is sure to alter this identity.
    pub(crate) cacheable: bool,
}

// The layout `shim/shim.h` declares and `shim/file.c` checks.
const _: () = {
    assert!(core::mem::size_of::<FileId>() == 64);
    assert!(core::mem::offset_of!(FileId, version) == 48);
    assert!(core::mem::offset_of!(FileId, cacheable) == 56);
};

impl FileId {
    /// Whether `other` is the same file with the same change stamp.
    pub(crate) fn same_content(&self, other: &FileId) -> bool {
        FileId {
            cacheable: false,
            ..*self
        } == FileId {
            cacheable: false,
            ..*other
        }
    }
}

extern "C" {
    fn elfsig_shim_file_size(file: *mut RawFile) -> u64;
    fn elfsig_shim_file_read(file: *mut RawFile, buf: *mut u8, len: usize, pos: u64) -> isize;
    fn elfsig_shim_file_id(file: *mut RawFile, id: *mut FileId);
    fn elfsig_shim_path_id(path: *const c_char, id: *mut FileId) -> c_int;
    fn elfsig_shim_open_exec(path: *const c_char, err: *mut c_int) -> *mut RawFile;
    fn elfsig_shim_close_exec(file: *mut RawFile);
    fn elfsig_shim_file_is_regular(file: *mut RawFile) -> bool;
    fn elfsig_shim_log_refusal(
        file: *mut RawFile,
        what: *const c_char,
        message: *const c_char,
        enforced: bool,
    );
    fn elfsig_shim_fault_create();
    fn elfsig_shim_fault_remove();
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

impl FileRef<'_> {
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

    /// The file's identity and change stamp.
    pub(crate) fn id(&self) -> FileId {
        let mut id = FileId::default();
        // SAFETY: by the type invariant `ptr` is an open file; `id` is a valid
        // `struct elfsig_file_id`, whose layout is checked above.
        unsafe { elfsig_shim_file_id(self.as_ptr(), &mut id) };
        id
    }

    /// Whether it is a regular file (not a device, a pipe, a socket).
    pub(crate) fn is_regular(&self) -> bool {
        // SAFETY: by the type invariant `ptr` is an open file.
        unsafe { elfsig_shim_file_is_regular(self.as_ptr()) }
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

/// Reads through `kernel_read`.
impl ReadSomeAt for FileRef<'_> {
    fn read_some_at(&mut self, offset: u64, buf: &mut [u8]) -> Result<usize, IoError> {
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
