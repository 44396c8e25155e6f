//! elfsig's one encoding of an ECDSA signature value: a DER `ECDSA-Sig-Value` (what the kernel's
//! "x962" encoding parses) with S in its low half and a fixed length per curve.
//!
//! The fixed length lets the blob's size be known before the record is (the layout needs it),
//! and, with low S, leaves no byte of a valid signature that can be changed into another valid
//! one (ECDSA's (r, n - s)). Keys in memory and keys on tokens make their values here alike.

use crate::error::Error;

/// How many fresh signatures to try for one of the fixed length (each has about an even chance).
const TRIES: usize = 64;

/// The length of every ECDSA signature elfsig makes with `field_bytes`-byte scalars: r with its
/// top bit set (a zero byte first), low S with its top byte non-zero. About half of all
/// signatures have it.
const fn ecdsa_len(field_bytes: usize) -> usize {
    2 + (2 + field_bytes + 1) + (2 + field_bytes)
}

/// Every P-256 signature value's length.
pub(crate) const P256_LEN: usize = ecdsa_len(32);
/// Every P-384 signature value's length.
pub(crate) const P384_LEN: usize = ecdsa_len(48);

/// The curve's size in bits that an ECDSA value of `len` bytes belongs to, if any.
pub fn ecdsa_bits(len: usize) -> Option<usize> {
    match len {
        P256_LEN => Some(256),
        P384_LEN => Some(384),
        _ => None,
    }
}

/// A P-256 signature in elfsig's encoding: low S, DER (its length is [`fixed_len`]'s to check).
pub(crate) fn p256_value(s: p256::ecdsa::Signature) -> Vec<u8> {
    s.normalize_s().unwrap_or(s).to_der().as_bytes().to_vec()
}

/// A P-384 signature in elfsig's encoding, as [`p256_value`].
pub(crate) fn p384_value(s: p384::ecdsa::Signature) -> Vec<u8> {
    s.normalize_s().unwrap_or(s).to_der().as_bytes().to_vec()
}

/// Signs with fresh randomness until the value has `len` bytes.
pub(crate) fn fixed_len(len: usize, mut sign: impl FnMut() -> Result<Vec<u8>, Error>) -> Result<Vec<u8>, Error> {
    for _ in 0..TRIES {
        let value = sign()?;
        if value.len() == len {
            return Ok(value);
        }
    }
    Err(Error::msg(format!("no ECDSA signature of {len} bytes in {TRIES} tries: the key or its randomness is broken")))
}
