// SPDX-License-Identifier: GPL-2.0

//! Every call between the Rust code and the C shim (`shim.h`), with safe wrappers.
//!
//! Nothing outside this module touches a raw pointer or calls a C function.

use kernel::ffi::{c_char, c_int, c_uint};
use core::marker::PhantomData;
use core::ptr::NonNull;

use kernel::bindings;
use kernel::error::{code, Error};
use kernel::prelude::*;
use kernel::str::CStr;

/// `struct file`, opaque.
#[repr(C)]
pub(crate) struct RawFile {
    _opaque: [u8; 0],
}

/// `struct elfsig_sha256`, opaque.
#[repr(C)]
struct RawSha256 {
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

extern "C" {
    fn elfsig_shim_init() -> c_int;
    fn elfsig_shim_register() -> c_int;
    fn elfsig_shim_unregister();
    fn elfsig_shim_exit();
    fn elfsig_shim_mode_param(len: *mut usize) -> *const c_char;
    fn elfsig_shim_lock_param() -> bool;
    fn elfsig_shim_deny_loader_param() -> bool;
    fn elfsig_shim_embedded_certs(len: *mut usize) -> *const u8;
    fn elfsig_shim_add_cert(der: *const u8, len: usize) -> c_int;
    fn elfsig_shim_file_size(file: *mut RawFile) -> u64;
    fn elfsig_shim_file_read(file: *mut RawFile, buf: *mut u8, len: usize, pos: u64) -> isize;
    fn elfsig_shim_file_id(file: *mut RawFile, id: *mut FileId);
    fn elfsig_shim_path_id(path: *const c_char, id: *mut FileId) -> c_int;
    fn elfsig_shim_open_exec(path: *const c_char, err: *mut c_int) -> *mut RawFile;
    fn elfsig_shim_close_exec(file: *mut RawFile);
    fn elfsig_shim_sha256_new() -> *mut RawSha256;
    fn elfsig_shim_sha256_update(hash: *mut RawSha256, data: *const u8, len: usize) -> c_int;
    fn elfsig_shim_sha256_final(hash: *mut RawSha256, digest: *mut u8) -> c_int;
    fn elfsig_shim_sha256_free(hash: *mut RawSha256);
    fn elfsig_shim_verify_pkcs7(data: *const u8, len: usize, sig: *const u8, sig_len: usize) -> c_int;
    fn elfsig_shim_revocation(digest: *const u8, len: usize) -> c_int;
    fn elfsig_shim_log_refusal(file: *mut RawFile, message: *const c_char, enforced: bool);
    fn elfsig_shim_now_ns() -> u64;
    fn elfsig_shim_pin_module() -> bool;
}

fn errno(ret: c_int) -> Result {
    if ret < 0 {
        Err(Error::from_errno(ret))
    } else {
        Ok(())
    }
}

/// Creates the hash transform, the module keyring and the control files.
pub(crate) fn init() -> Result {
    // SAFETY: called once, from module init.
    errno(unsafe { elfsig_shim_init() })
}

/// Creates the control files and registers the binfmt handler: from then on execs reach
/// [`crate::policy::check_exec`]. On failure nothing is registered; call [`exit`].
pub(crate) fn register() -> Result {
    // SAFETY: called once, from module init, after a successful `init`.
    errno(unsafe { elfsig_shim_register() })
}

/// Undoes [`register`]; first thing on module exit.
pub(crate) fn unregister() {
    // SAFETY: called once, from module exit, after `register`.
    unsafe { elfsig_shim_unregister() }
}

/// Undoes [`init`].
pub(crate) fn exit() {
    // SAFETY: called once, after a successful `init`, with the handler not registered.
    unsafe { elfsig_shim_exit() }
}

/// The `mode` module parameter's bytes.
pub(crate) fn mode_param() -> &'static [u8] {
    let mut len = 0usize;
    // SAFETY: returns the module parameter buffer and its string length.
    let ptr = unsafe { elfsig_shim_mode_param(&mut len) };
    if ptr.is_null() {
        return &[];
    }
    // SAFETY: the buffer lives as long as the module, holds `len` initialised bytes, and is only
    // written while the module loads, before this runs.
    unsafe { core::slice::from_raw_parts(ptr.cast::<u8>(), len) }
}

/// The `lock` module parameter.
pub(crate) fn lock_param() -> bool {
    // SAFETY: reads a module parameter.
    unsafe { elfsig_shim_lock_param() }
}

/// The `deny_loader` module parameter.
pub(crate) fn deny_loader_param() -> bool {
    // SAFETY: reads a module parameter.
    unsafe { elfsig_shim_deny_loader_param() }
}

/// Certificates embedded at build time, concatenated DER.
pub(crate) fn embedded_certs() -> &'static [u8] {
    let mut len = 0usize;
    // SAFETY: the shim returns the bounds of a static array in the module's .rodata.
    let ptr = unsafe { elfsig_shim_embedded_certs(&mut len) };
    if ptr.is_null() || len == 0 {
        return &[];
    }
    // SAFETY: `ptr` and `len` describe that static array, which lives as long as the module.
    unsafe { core::slice::from_raw_parts(ptr, len) }
}

/// Adds a DER certificate to the module keyring.
pub(crate) fn add_cert(der: &[u8]) -> Result {
    // SAFETY: `der` is a valid slice for the duration of the call; the shim copies it.
    errno(unsafe { elfsig_shim_add_cert(der.as_ptr(), der.len()) })
}

/// A file the kernel holds open, borrowed for `'a`.
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
        NonNull::new(ptr).map(|ptr| FileRef { ptr, _life: PhantomData })
    }

    /// The file's size.
    pub(crate) fn size(&self) -> u64 {
        // SAFETY: by the type invariant `ptr` is an open file.
        unsafe { elfsig_shim_file_size(self.ptr.as_ptr()) }
    }

    /// Reads up to `buf.len()` bytes at `pos` through `kernel_read`; returns how many.
    pub(crate) fn read_at(&self, pos: u64, buf: &mut [u8]) -> Result<usize> {
        // SAFETY: `ptr` is an open file and `buf` a valid, writable slice.
        let n = unsafe { elfsig_shim_file_read(self.ptr.as_ptr(), buf.as_mut_ptr(), buf.len(), pos) };
        if n < 0 {
            let errno = c_int::try_from(n).unwrap_or(-(bindings::EIO as c_int));
            return Err(Error::from_errno(errno));
        }
        usize::try_from(n).map_err(|_| code::EIO)
    }

    /// The file's identity and change stamp.
    pub(crate) fn id(&self) -> FileId {
        let mut id = FileId::default();
        // SAFETY: `ptr` is an open file and `id` a valid `struct elfsig_file_id`.
        unsafe { elfsig_shim_file_id(self.ptr.as_ptr(), &mut id) };
        id
    }

    /// Logs (rate-limited) that the file is refused, with its path.
    pub(crate) fn log_refusal(&self, message: &CStr, enforced: bool) {
        // SAFETY: `ptr` is an open file; `message` is NUL-terminated and outlives the call.
        unsafe { elfsig_shim_log_refusal(self.ptr.as_ptr(), message.as_char_ptr(), enforced) }
    }
}

/// The identity of the file `path` names now, found without opening it.
pub(crate) fn path_id(path: &CStr) -> Result<FileId> {
    let mut id = FileId::default();
    // SAFETY: `path` is NUL-terminated; `id` is a valid `struct elfsig_file_id`.
    errno(unsafe { elfsig_shim_path_id(path.as_char_ptr(), &mut id) })?;
    Ok(id)
}

/// A file opened with `open_exec()`: write access is denied while it is open. Closed on drop.
pub(crate) struct ExecFile {
    ptr: NonNull<RawFile>,
}

impl ExecFile {
    /// Opens `path` for execution, as binfmt_elf opens an interpreter.
    pub(crate) fn open(path: &CStr) -> Result<Self> {
        let mut err: c_int = 0;
        // SAFETY: `path` is NUL-terminated; `err` is a valid out-parameter.
        let ptr = unsafe { elfsig_shim_open_exec(path.as_char_ptr(), &mut err) };
        match NonNull::new(ptr) {
            Some(ptr) => Ok(ExecFile { ptr }),
            None => Err(Error::from_errno(if err < 0 { err } else { -(bindings::ENOENT as c_int) })),
        }
    }

    /// The open file.
    pub(crate) fn file(&self) -> FileRef<'_> {
        FileRef { ptr: self.ptr, _life: PhantomData }
    }
}

impl Drop for ExecFile {
    fn drop(&mut self) {
        // SAFETY: `ptr` came from `open_exec` and is closed exactly once.
        unsafe { elfsig_shim_close_exec(self.ptr.as_ptr()) }
    }
}

/// A SHA-256 computation through the kernel crypto API.
pub(crate) struct Sha256 {
    ptr: NonNull<RawSha256>,
}

impl Sha256 {
    /// Starts a digest.
    pub(crate) fn new() -> Result<Self> {
        // SAFETY: allocates a descriptor for the transform made at init.
        let ptr = unsafe { elfsig_shim_sha256_new() };
        NonNull::new(ptr).map(|ptr| Sha256 { ptr }).ok_or(code::ENOMEM)
    }

    /// Hashes `data`.
    pub(crate) fn update(&mut self, data: &[u8]) -> Result {
        // SAFETY: `ptr` is a live descriptor and `data` a valid slice.
        errno(unsafe { elfsig_shim_sha256_update(self.ptr.as_ptr(), data.as_ptr(), data.len()) })
    }

    /// The digest.
    pub(crate) fn finish(self) -> Result<[u8; 32]> {
        let mut digest = [0u8; 32];
        // SAFETY: `ptr` is a live descriptor; `digest` has room for a SHA-256 digest.
        errno(unsafe { elfsig_shim_sha256_final(self.ptr.as_ptr(), digest.as_mut_ptr()) })?;
        Ok(digest)
    }
}

impl Drop for Sha256 {
    fn drop(&mut self) {
        // SAFETY: `ptr` came from `elfsig_shim_sha256_new` and is freed exactly once.
        unsafe { elfsig_shim_sha256_free(self.ptr.as_ptr()) }
    }
}

/// Errors `verify_pkcs7_signature()` returns, beyond those in `kernel::error::code`.
pub(crate) mod pkcs7_errno {
    use kernel::ffi::c_int;

    /// No trusted key matches the signer.
    pub(crate) const ENOKEY: c_int = -(kernel::bindings::ENOKEY as c_int);
    /// The signature does not verify, or the key is blacklisted.
    pub(crate) const EKEYREJECTED: c_int = -(kernel::bindings::EKEYREJECTED as c_int);
    /// The PKCS#7 message cannot be parsed.
    pub(crate) const EBADMSG: c_int = -(kernel::bindings::EBADMSG as c_int);
    /// An algorithm the kernel does not have.
    pub(crate) const ENOPKG: c_int = -(kernel::bindings::ENOPKG as c_int);
}

/// Checks the PKCS#7 signature `sig` over `data` against the builtin and secondary trusted
/// keyrings, then the module keyring. Returns the kernel's errno on failure.
pub(crate) fn verify_pkcs7(data: &[u8], sig: &[u8]) -> core::result::Result<(), c_int> {
    // SAFETY: both slices are valid for the duration of the call.
    let ret = unsafe { elfsig_shim_verify_pkcs7(data.as_ptr(), data.len(), sig.as_ptr(), sig.len()) };
    if ret < 0 {
        Err(ret)
    } else {
        Ok(())
    }
}

/// Whether the digest is listed as `bin:` in the kernel's `.blacklist` keyring.
/// Fails when the lookup could not be made (out of memory): callers refuse then.
pub(crate) fn is_revoked(digest: &[u8; 32]) -> Result<bool> {
    // SAFETY: `digest` is a valid 32-byte array.
    match unsafe { elfsig_shim_revocation(digest.as_ptr(), digest.len()) } {
        0 => Ok(false),
        ret if ret > 0 => Ok(true),
        errno => Err(Error::from_errno(errno)),
    }
}

/// Monotonic time in ns.
pub(crate) fn now_ns() -> u64 {
    // SAFETY: reads the clock.
    unsafe { elfsig_shim_now_ns() }
}

/// Takes a reference on this module that is never dropped, so it cannot be unloaded.
pub(crate) fn pin_module() -> bool {
    // SAFETY: `try_module_get(THIS_MODULE)` on a live module.
    unsafe { elfsig_shim_pin_module() }
}

/// Called by the shim's binfmt handler for every exec.
#[no_mangle]
pub(crate) extern "C" fn elfsig_check_exec(file: *mut RawFile, head: *const u8, head_len: usize) -> c_int {
    // SAFETY: the shim passes `bprm->file`, open for the whole exec.
    let Some(file) = (unsafe { FileRef::from_raw(file) }) else {
        return code::ENOEXEC.to_errno();
    };
    let head = if head.is_null() {
        &[][..]
    } else {
        // SAFETY: the shim passes `bprm->buf` and its size; it lives for the whole exec.
        unsafe { core::slice::from_raw_parts(head, head_len) }
    };
    crate::policy::check_exec(file, head)
}

/// Called by the shim to fill a control file's contents into `buf`; returns the length.
#[no_mangle]
pub(crate) extern "C" fn elfsig_control_read(which: c_uint, buf: *mut c_char, len: usize) -> isize {
    if buf.is_null() {
        return code::EINVAL.to_errno() as isize;
    }
    // SAFETY: the shim passes a zeroed kernel buffer of `len` bytes that nothing else uses.
    let out = unsafe { core::slice::from_raw_parts_mut(buf.cast::<u8>(), len) };
    match crate::control::read(which, out) {
        Ok(n) => isize::try_from(n).unwrap_or(0),
        Err(e) => e.to_errno() as isize,
    }
}

/// Called by the shim with what was written to a control file.
#[no_mangle]
pub(crate) extern "C" fn elfsig_control_write(which: c_uint, buf: *const c_char, len: usize) -> isize {
    if buf.is_null() {
        return code::EINVAL.to_errno() as isize;
    }
    // SAFETY: the shim passes a kernel copy of the written bytes, `len` long.
    let input = unsafe { core::slice::from_raw_parts(buf.cast::<u8>(), len) };
    match crate::control::write(which, input) {
        Ok(()) => 0,
        Err(e) => e.to_errno() as isize,
    }
}
