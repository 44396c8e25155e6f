// SPDX-License-Identifier: GPL-2.0

//! The signed policy's kernel objects (`shim/policy.c`): the policy being built from a verified
//! file, and references to the loaded one. (Its keyring and signature check are keys'.)

use kernel::error::Error;
use kernel::ffi::c_int;
use kernel::prelude::*;

use super::to_result;

/// `struct elfsig_policy_summary`: what the `policy` control file shows of a loaded policy.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Summary {
    /// Its serial.
    pub(crate) serial: u64,
    /// The SHA-256 of its body.
    pub(crate) sha256: [u8; 32],
    /// How many digests it revokes.
    pub(crate) digests: u32,
    /// How many certificates it revokes.
    pub(crate) revoked_certs: u32,
    /// How many certificates it trusts.
    pub(crate) trusted_certs: u32,
}

/// `struct elfsig_policy`, opaque.
#[repr(C)]
pub(crate) struct RawPolicy {
    _opaque: [u8; 0],
}

extern "C" {
    fn elfsig_shim_policy_new(
        summary: *const Summary,
        digests: *const u8,
        digests_len: usize,
        err: *mut c_int,
    ) -> *mut RawPolicy;
    fn elfsig_shim_policy_add_cert(
        policy: *mut RawPolicy,
        trusted: bool,
        index: u32,
        der: *const u8,
        len: usize,
    ) -> c_int;
    fn elfsig_shim_policy_install(policy: *mut RawPolicy);
    fn elfsig_shim_policy_get() -> *mut RawPolicy;
    fn elfsig_shim_policy_put(policy: *mut RawPolicy);
    fn elfsig_shim_policy_summary(policy: *const RawPolicy) -> *const Summary;
    fn elfsig_shim_policy_digests(policy: *const RawPolicy, len: *mut usize) -> *const u8;
}

/// A reference to a policy: the loaded one, or one being built. Dropped, it is put.
pub(crate) struct Held(*mut RawPolicy);

// SAFETY: the policy is immutable once installed and reference counted by the shim; a
// reference may be put from any thread.
unsafe impl Send for Held {}
// SAFETY: as above: nothing mutates a policy through a shared reference.
unsafe impl Sync for Held {}

impl Held {
    /// The loaded policy, if any.
    pub(crate) fn current() -> Option<Held> {
        // SAFETY: returns a new reference or null.
        let raw = unsafe { elfsig_shim_policy_get() };
        (!raw.is_null()).then_some(Held(raw))
    }

    /// A new, empty-keyringed policy with `summary` and the revoked `digests` (32 bytes each,
    /// ascending): not loaded until [`Held::install`].
    pub(crate) fn new(summary: &Summary, digests: &[u8]) -> Result<Held> {
        let mut err: c_int = 0;
        // SAFETY: `summary` and `digests` are valid for the call, which copies them.
        let raw =
            unsafe { elfsig_shim_policy_new(summary, digests.as_ptr(), digests.len(), &mut err) };
        if raw.is_null() {
            return Err(if err < 0 {
                Error::from_errno(err)
            } else {
                ENOMEM
            });
        }
        Ok(Held(raw))
    }

    /// Adds a DER certificate the policy trusts (`trusted`) or revokes, the `index`th of its
    /// list. Only for a policy not yet installed.
    pub(crate) fn add_cert(&self, trusted: bool, index: u32, der: &[u8]) -> Result {
        // SAFETY: `self.0` is a live policy not yet visible to anything else; `der` is valid
        // for the call, which copies it.
        to_result(unsafe {
            elfsig_shim_policy_add_cert(self.0, trusted, index, der.as_ptr(), der.len())
        })
    }

    /// Makes this policy the loaded one; the one before is put.
    pub(crate) fn install(self) {
        let raw = self.0;
        core::mem::forget(self);
        // SAFETY: passes our reference to the shim, which keeps it as the current policy.
        unsafe { elfsig_shim_policy_install(raw) }
    }

    /// What it shows.
    pub(crate) fn summary(&self) -> Summary {
        // SAFETY: a live policy's summary, immutable.
        unsafe { *elfsig_shim_policy_summary(self.0) }
    }

    /// The digests it revokes, 32 bytes each, ascending.
    pub(crate) fn digests(&self) -> &[u8] {
        let mut len = 0usize;
        // SAFETY: the digests of a live policy, immutable while we hold the reference.
        let ptr = unsafe { elfsig_shim_policy_digests(self.0, &mut len) };
        if ptr.is_null() || len == 0 {
            return &[];
        }
        // SAFETY: `ptr` and `len` describe the policy's digests, alive as long as `self`.
        unsafe { core::slice::from_raw_parts(ptr, len) }
    }

    /// The raw pointer, for the signature check.
    pub(crate) fn as_ptr(&self) -> *const RawPolicy {
        self.0
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        // SAFETY: puts the reference this value owns, once.
        unsafe { elfsig_shim_policy_put(self.0) }
    }
}

/// An errno `kernel::error::code` lacks, from the kernel's headers.
fn errno(positive: u32) -> Error {
    Error::from_errno(i32::try_from(positive).map_or(-22, |n| -n))
}

/// A policy not signed by a policy key, or whose signature does not verify.
pub(crate) fn key_rejected() -> Error {
    errno(kernel::bindings::EKEYREJECTED)
}

/// A policy whose signature is not PKCS#7 the kernel reads.
pub(crate) fn bad_message() -> Error {
    errno(kernel::bindings::EBADMSG)
}

/// A policy older than the loaded one.
pub(crate) fn stale() -> Error {
    errno(kernel::bindings::ESTALE)
}

/// Unloads the policy: none is loaded afterwards.
pub(crate) fn clear() {
    // SAFETY: a null policy is "none"; the one before is put.
    unsafe { elfsig_shim_policy_install(core::ptr::null_mut()) }
}
