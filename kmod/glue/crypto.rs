// SPDX-License-Identifier: GPL-2.0

//! SHA-256 through the kernel's crypto API (`shim/crypto.c`).

use core::ptr::NonNull;

use kernel::error::code;
use kernel::ffi::c_int;
use kernel::prelude::*;

use super::to_result;

/// `struct elfsig_sha256`, opaque.
#[repr(C)]
struct RawSha256 {
    _opaque: [u8; 0],
}

extern "C" {
    fn elfsig_shim_sha256_init() -> c_int;
    fn elfsig_shim_sha256_exit();
    fn elfsig_shim_sha256_new() -> *mut RawSha256;
    fn elfsig_shim_sha256_update(hash: *mut RawSha256, data: *const u8, len: usize) -> c_int;
    fn elfsig_shim_sha256_final(hash: *mut RawSha256, digest: *mut u8) -> c_int;
    fn elfsig_shim_sha256_free(hash: *mut RawSha256);
}

/// The SHA-256 transform every digest uses, allocated once. Freed on drop.
pub(crate) struct Transform(());

impl Transform {
    /// Allocates the transform.
    pub(crate) fn alloc() -> Result<Self> {
        // SAFETY: called once, from module init; undone by `drop`.
        to_result(unsafe { elfsig_shim_sha256_init() })?;
        Ok(Transform(()))
    }
}

impl Drop for Transform {
    fn drop(&mut self) {
        // SAFETY: undoes `alloc`; no digest is in progress once the binfmt handler and the
        // exec-end probe are gone, which the module's field order ensures.
        unsafe { elfsig_shim_sha256_exit() }
    }
}

/// A SHA-256 computation.
///
/// # Invariants
///
/// `ptr` is a live descriptor from `elfsig_shim_sha256_new()`, freed only by `drop`.
pub(crate) struct Sha256 {
    ptr: NonNull<RawSha256>,
}

impl Sha256 {
    /// Starts a digest. The [`Transform`] must exist.
    pub(crate) fn new() -> Result<Self> {
        // SAFETY: allocates a descriptor for the transform made at init.
        let ptr = unsafe { elfsig_shim_sha256_new() };
        // INVARIANT: a non-null return is a live descriptor.
        NonNull::new(ptr)
            .map(|ptr| Sha256 { ptr })
            .ok_or(code::ENOMEM)
    }

    /// Hashes `data`.
    pub(crate) fn update(&mut self, data: &[u8]) -> Result {
        // SAFETY: by the type invariant `ptr` is live; `data` is a valid slice.
        to_result(unsafe {
            elfsig_shim_sha256_update(self.ptr.as_ptr(), data.as_ptr(), data.len())
        })
    }

    /// The digest.
    pub(crate) fn finish(self) -> Result<[u8; 32]> {
        let mut digest = [0u8; 32];
        // SAFETY: by the type invariant `ptr` is live; `digest` has room for a SHA-256 digest.
        to_result(unsafe { elfsig_shim_sha256_final(self.ptr.as_ptr(), digest.as_mut_ptr()) })?;
        Ok(digest)
    }
}

impl Drop for Sha256 {
    fn drop(&mut self) {
        // SAFETY: by the type invariant `ptr` is live; it is freed once.
        unsafe { elfsig_shim_sha256_free(self.ptr.as_ptr()) }
    }
}
