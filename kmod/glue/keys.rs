// SPDX-License-Identifier: GPL-2.0

//! Keys (`shim/keys.c`): PKCS#7 signatures checked against the kernel's trusted keyrings, the
//! module's own and the loaded policy's, and revocation through the `.blacklist` keyring.

use kernel::error::Error;
use kernel::ffi::c_int;
use kernel::prelude::*;

use super::to_result;

use super::policy::{Held, RawPolicy};

extern "C" {
    fn elfsig_shim_keyring_init() -> c_int;
    fn elfsig_shim_keyring_exit();
    fn elfsig_shim_add_cert(der: *const u8, len: usize) -> c_int;
    fn elfsig_shim_verify_pkcs7(
        data: *const u8,
        len: usize,
        sig: *const u8,
        sig_len: usize,
        policy: *const RawPolicy,
    ) -> c_int;
    fn elfsig_shim_revocation(digest: *const u8, len: usize) -> c_int;
}

/// The module's own keyring, `.elfsig`, which nothing can be linked into after init. Released
/// on drop.
pub(crate) struct ModuleKeyring(());

impl ModuleKeyring {
    /// Creates the keyring.
    pub(crate) fn create() -> Result<Self> {
        // SAFETY: called once, from module init; undone by `drop`.
        to_result(unsafe { elfsig_shim_keyring_init() })?;
        Ok(ModuleKeyring(()))
    }

    /// Adds a DER certificate.
    pub(crate) fn add_cert(&self, der: &[u8]) -> Result {
        // SAFETY: the keyring exists while `self` does; `der` is valid for the call, which
        // copies it.
        to_result(unsafe { elfsig_shim_add_cert(der.as_ptr(), der.len()) })
    }
}

impl Drop for ModuleKeyring {
    fn drop(&mut self) {
        // SAFETY: undoes `create`, once, after the handler that checks signatures is gone.
        unsafe { elfsig_shim_keyring_exit() }
    }
}

/// Why a signature was not accepted (`enum elfsig_signature` in `shim/shim.h`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SignatureError {
    /// No trusted key matches the signer.
    UnknownKey,
    /// The signature does not verify, or the key is blacklisted.
    Rejected,
    /// Not a PKCS#7 message the kernel can parse, or an algorithm it lacks.
    Malformed,
    /// It verified, by a certificate the loaded policy revokes.
    RevokedKey,
    /// The check could not be made.
    Failed(Error),
}

/// What a shim's signature check returned.
pub(crate) fn signature_error(ret: c_int) -> Result<(), SignatureError> {
    match ret {
        0 => Ok(()),
        1 => Err(SignatureError::UnknownKey),
        2 => Err(SignatureError::Rejected),
        3 => Err(SignatureError::Malformed),
        4 => Err(SignatureError::RevokedKey),
        errno => Err(SignatureError::Failed(Error::from_errno(errno))),
    }
}

/// Checks the PKCS#7 signature `sig` over `data` against the builtin and secondary trusted
/// keyrings, then the module keyring, then the certificates `policy` trusts; a signature that
/// verified is refused when `policy` revokes its signer.
pub(crate) fn verify_pkcs7(
    data: &[u8],
    sig: &[u8],
    policy: Option<&Held>,
) -> Result<(), SignatureError> {
    let policy = policy.map_or(core::ptr::null(), Held::as_ptr);
    // SAFETY: both slices are valid for the duration of the call; `policy` is null or a
    // policy the caller holds a reference to.
    signature_error(unsafe {
        elfsig_shim_verify_pkcs7(data.as_ptr(), data.len(), sig.as_ptr(), sig.len(), policy)
    })
}

/// Whether the digest is listed as `bin:` in the kernel's `.blacklist` keyring. Fails when the
/// lookup could not be made (out of memory): callers refuse then.
pub(crate) fn is_revoked(digest: &[u8; 32]) -> Result<bool> {
    // SAFETY: `digest` is a valid 32-byte array.
    match unsafe { elfsig_shim_revocation(digest.as_ptr(), digest.len()) } {
        0 => Ok(false),
        ret if ret > 0 => Ok(true),
        errno => Err(Error::from_errno(errno)),
    }
}
