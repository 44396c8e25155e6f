// SPDX-License-Identifier: GPL-2.0

//! Keys (`shim/keys.c`): the two keyrings the module owns, PKCS#7 signatures
//! checked against the kernel's trusted keyrings, the module's own and the loaded policy's, a
//! policy's signature checked against the policy keys, and revocation through the `.blacklist`
//! keyring.

use kernel::error::Error;
use kernel::ffi::c_int;
use kernel::prelude::*;

use super::policy::{Held, RawPolicy};
use super::to_result;

extern "C" {
    fn elfsig_shim_keyring_init() -> c_int;
    fn elfsig_shim_keyring_exit();
    fn elfsig_shim_add_cert(der: *const u8, len: usize) -> c_int;
    fn elfsig_shim_policy_keyring_init() -> c_int;
    fn elfsig_shim_policy_add_key(der: *const u8, len: usize) -> c_int;
    fn elfsig_shim_policy_keyring_exit();
    fn elfsig_shim_verify_pkcs7(
        data: *const u8,
        len: usize,
        sig: *const u8,
        sig_len: usize,
        policy: *const RawPolicy,
    ) -> c_int;
    fn elfsig_shim_policy_verify(
        data: *const u8,
        len: usize,
        sig: *const u8,
        sig_len: usize,
    ) -> c_int;
    fn elfsig_shim_revocation(digest: *const u8, len: usize) -> c_int;
}

/// The shim's calls for one keyring.
struct KeyringCalls {
    init: unsafe extern "C" fn() -> c_int,
    add: unsafe extern "C" fn(*const u8, usize) -> c_int,
    exit: unsafe extern "C" fn(),
}

/// `.elfsig`: the program keys embedded at build time.
static PROGRAM_KEYS: KeyringCalls = KeyringCalls {
    init: elfsig_shim_keyring_init,
    add: elfsig_shim_add_cert,
    exit: elfsig_shim_keyring_exit,
};

/// `.elfsig_policy`: the keys policies must be signed by. Its exit also puts whatever policy is
/// loaded.
static POLICY_KEYS: KeyringCalls = KeyringCalls {
    init: elfsig_shim_policy_keyring_init,
    add: elfsig_shim_policy_add_key,
    exit: elfsig_shim_policy_keyring_exit,
};

/// A keyring the module owns, which nothing can be linked into after init: `.elfsig` or
/// `.elfsig_policy`. Released on drop.
pub(crate) struct Keyring {
    calls: &'static KeyringCalls,
}

impl Keyring {
    /// Creates `.elfsig`, the keyring of the program keys.
    pub(crate) fn programs() -> Result<Self> {
        Self::create(&PROGRAM_KEYS)
    }

    /// Creates `.elfsig_policy`, the keyring of the policy keys.
    pub(crate) fn policies() -> Result<Self> {
        Self::create(&POLICY_KEYS)
    }

    fn create(calls: &'static KeyringCalls) -> Result<Self> {
        // SAFETY: called once per keyring, from module init; undone by `drop`.
        to_result(unsafe { (calls.init)() })?;
        Ok(Keyring { calls })
    }

    /// Adds a DER certificate.
    pub(crate) fn add_cert(&self, der: &[u8]) -> Result {
        // SAFETY: the keyring exists while `self` does; `der` is valid for the call, which
        // copies it.
        to_result(unsafe { (self.calls.add)(der.as_ptr(), der.len()) })
    }
}

impl Drop for Keyring {
    fn drop(&mut self) {
        // SAFETY: undoes `create`, once, after the handler that checks signatures is gone.
        unsafe { (self.calls.exit)() }
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
fn signature_error(ret: c_int) -> Result<(), SignatureError> {
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

/// Checks the detached PKCS#7 signature `sig` over a policy's `body` against the policy keys.
pub(crate) fn verify_policy_signature(body: &[u8], sig: &[u8]) -> Result<(), SignatureError> {
    // SAFETY: both slices are valid for the duration of the call.
    signature_error(unsafe {
        elfsig_shim_policy_verify(body.as_ptr(), body.len(), sig.as_ptr(), sig.len())
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
