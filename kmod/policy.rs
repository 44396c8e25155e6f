// SPDX-License-Identifier: GPL-2.0

//! The signed policy (docs/POLICY.md): what root writes to the `policy` control file, at boot
//! from the initramfs or at run time, checked and applied whole; and what the `policy` file
//! shows of the loaded one.
//!
//! A policy is applied only when it parses (elfsig-core's parser, the one the fuzzer runs), its
//! signature verifies against a policy key (`.elfsig_policy`: certificates embedded at build
//! time for that alone, so that a key trusted to sign programs cannot sign a policy), and its
//! serial is above the loaded one's: an older policy cannot bring back what a newer one
//! revoked. The same policy again is accepted and changes nothing. Anything else is refused
//! with nothing changed, logged and audited. Applying builds the new policy beside the old,
//! swaps it in, then empties the verdict cache: a verification holds one policy from start to
//! end, and one that began before the swap caches its verdict in an epoch that no longer hits.

use core::fmt::{self, Write};
use core::sync::atomic::{AtomicBool, Ordering};

use kernel::error::Error;
use kernel::prelude::*;

use crate::elfsig_core::control::trim;
use crate::elfsig_core::policy::SignedPolicy;
use crate::glue::audit;
use crate::glue::crypto;
use crate::glue::keys::{verify_policy_signature, SignatureError};
use crate::glue::policy::{bad_message, clear, key_rejected, stale, Held, Summary};
use crate::state::STATE;
use crate::text::Cursor;

/// Set while a policy is being applied: a second writer meanwhile gets EBUSY.
static APPLYING: AtomicBool = AtomicBool::new(false);

/// What was written to `policy`: a signed policy, exactly (nothing trimmed), or `clear`
/// (refused while locked; `echo`'s newline after it is ignored).
pub(crate) fn write(input: &[u8]) -> Result {
    if APPLYING
        .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
        .is_err()
    {
        return Err(EBUSY);
    }
    let result = if trim(input) == b"clear" {
        unload()
    } else {
        load(input)
    };
    APPLYING.store(false, Ordering::Release);
    result
}

/// Unloads the policy, unless locked.
fn unload() -> Result {
    if STATE.locked() {
        return Err(refuse(
            c"locked",
            0,
            EPERM,
            format_args!("clear: the module is locked"),
        ));
    }
    clear();
    STATE.cache.flush();
    pr_info!("policy cleared\n");
    audit::policy(c"cleared", 0, true);
    Ok(())
}

/// Logs and audits a refused policy; returns `error`.
fn refuse(
    cause: &'static core::ffi::CStr,
    serial: u64,
    error: Error,
    why: fmt::Arguments<'_>,
) -> Error {
    pr_err!("policy refused: {}\n", why);
    audit::policy(cause, serial, false);
    error
}

fn load(bytes: &[u8]) -> Result {
    let signed = SignedPolicy::parse(bytes)
        .map_err(|e| refuse(c"malformed", 0, EINVAL, format_args!("{}", e.message())))?;
    let serial = signed.policy.serial;
    verify_policy_signature(signed.body, signed.signature).map_err(|e| match e {
        SignatureError::UnknownKey => refuse(
            c"unknown_key",
            serial,
            key_rejected(),
            format_args!("serial {serial}: not signed by a policy key"),
        ),
        SignatureError::Rejected | SignatureError::RevokedKey => refuse(
            c"bad_signature",
            serial,
            key_rejected(),
            format_args!("serial {serial}: its signature does not verify"),
        ),
        SignatureError::Malformed => refuse(
            c"malformed_signature",
            serial,
            bad_message(),
            format_args!("serial {serial}: its signature is not PKCS#7 the kernel reads"),
        ),
        SignatureError::Failed(e) => refuse(
            c"error",
            serial,
            e,
            format_args!("serial {serial}: its signature could not be checked ({e:?})"),
        ),
    })?;
    let sha256 = body_digest(signed.body).map_err(|e| {
        refuse(
            c"error",
            serial,
            e,
            format_args!("serial {serial}: could not be hashed ({e:?})"),
        )
    })?;
    if let Some(loaded) = Held::current().map(|held| held.summary()) {
        if serial == loaded.serial && sha256 == loaded.sha256 {
            // The policy loaded already: at boot and again from its package, say.
            return Ok(());
        }
        if serial <= loaded.serial {
            return Err(refuse(
                c"rollback",
                serial,
                stale(),
                format_args!(
                    "serial {serial} is not above the loaded policy's {}",
                    loaded.serial
                ),
            ));
        }
    }
    let counts = signed.policy.counts();
    let summary = Summary {
        serial,
        sha256,
        digests: counts.digests,
        revoked_certs: counts.revoked_certs,
        trusted_certs: counts.trusted_certs,
    };
    let new = Held::new(&summary, signed.policy.digest_bytes()).map_err(|e| {
        refuse(
            c"error",
            serial,
            e,
            format_args!("serial {serial}: could not be built ({e:?})"),
        )
    })?;
    for (trusted, certs) in [
        (false, signed.policy.revoked_certs()),
        (true, signed.policy.trusted_certs()),
    ] {
        // Counted by hand: `enumerate` would bring an overflow check, a panic.
        let mut index = 0u32;
        for cert in certs {
            match new.add_cert(trusted, index, cert) {
                Ok(()) => {}
                // A certificate the kernel will not take (blacklisted already, an algorithm it
                // lacks, not X.509 it reads) verifies nothing: revoking it is done. Running out
                // of memory is no such answer.
                Err(e) if !trusted && e != ENOMEM => {
                    pr_warn!(
                        "policy {}: revoked certificate {} not taken by the kernel ({:?}): it verifies nothing\n",
                        serial,
                        index,
                        e
                    );
                }
                Err(e) => {
                    return Err(refuse(
                        c"bad_certificate",
                        serial,
                        e,
                        format_args!(
                            "serial {serial}: the kernel cannot take its {} certificate {index} ({e:?})",
                            if trusted { "trusted" } else { "revoked" }
                        ),
                    ))
                }
            }
            index = index.saturating_add(1);
        }
    }
    new.install();
    STATE.cache.flush();
    pr_info!(
        "policy {} loaded: {} digests and {} certificates revoked, {} certificates trusted\n",
        serial,
        counts.digests,
        counts.revoked_certs,
        counts.trusted_certs
    );
    audit::policy(c"loaded", serial, true);
    Ok(())
}

/// The SHA-256 of a policy's body, which names it in `policy`.
fn body_digest(body: &[u8]) -> Result<[u8; 32]> {
    let mut hash = crypto::Sha256::new()?;
    hash.update(body)?;
    hash.finish()
}

/// `policy`: `none`, or the loaded policy's serial, digest and counts, one `name value` per line.
pub(crate) fn read(out: &mut Cursor<'_>) -> fmt::Result {
    let Some(summary) = Held::current().map(|held| held.summary()) else {
        return out.write_str("none\n");
    };
    writeln!(out, "serial {}", summary.serial)?;
    out.write_str("sha256 ")?;
    summary
        .sha256
        .iter()
        .try_for_each(|b| write!(out, "{b:02x}"))?;
    writeln!(out, "\nrevoked_digests {}", summary.digests)?;
    writeln!(out, "revoked_certs {}", summary.revoked_certs)?;
    writeln!(out, "trusted_certs {}", summary.trusted_certs)
}
