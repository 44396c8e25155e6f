//! The signed policy: what a host revokes and trusts beyond the keys the module was built with,
//! with a serial number, signed by a policy key. The kernel module parses it from a control file
//! written by root (and by the initramfs at boot), so it is read here, bounded and without
//! allocating. The CLI writes it with `write_body` and `write_trailer`, which only the `signer`
//! feature compiles: the kernel never writes a policy.
//!
//! Layout (all integers little-endian):
//!
//! | offset | size | field                                              |
//! |-------:|-----:|----------------------------------------------------|
//! |      0 |    8 | magic `ELFSIGPL`                                   |
//! |      8 |    2 | format version (1)                                 |
//! |     10 |    2 | reserved, zero                                     |
//! |     12 |    4 | reserved, zero                                     |
//! |     16 |    8 | serial: a policy is only replaced by a higher one  |
//! |     24 |    4 | number of revoked digests, `d`                     |
//! |     28 |    4 | number of revoked certificates, `r`                |
//! |     32 |    4 | number of trusted certificates, `t`                |
//! |     36 |    4 | reserved, zero                                     |
//! |     40 | 32·d | the revoked SHA-256 digests, strictly ascending    |
//! |      … |      | `r` revoked, then `t` trusted certificates: each a 4-byte length and that many bytes of one DER SEQUENCE |
//!
//! That is the body, which the signature covers. After it come the detached PKCS#7 signature
//! over the body and a 12-byte trailer: the signature's length (4 bytes) and the magic
//! `ELFSIGPS`. The digests are those elfsig signs (of the file without its signature, as
//! `elfsig inspect` shows them); ascending order makes the list canonical and a lookup a binary
//! search.

use core::cmp::Ordering;

use super::der;
#[cfg(feature = "signer")]
use super::endian::put_at;
use super::endian::{array_at, Endian, Fields};
use super::{MAX_CMS_LEN, MIN_CMS_LEN};

/// First bytes of every policy.
pub const POLICY_MAGIC: [u8; 8] = *b"ELFSIGPL";
/// Last bytes of every signed policy.
pub const SIGNATURE_MAGIC: [u8; 8] = *b"ELFSIGPS";
/// The policy format version this crate reads and writes.
pub const POLICY_VERSION: u16 = 1;
/// Length of the body's fixed header.
pub const HEADER_LEN: usize = 40;
/// Length of the trailer after the signature.
pub const TRAILER_LEN: usize = 12;
/// Length of one revoked digest.
pub const DIGEST_LEN: usize = 32;
/// Largest signed policy accepted: 4 MiB, about 130,000 revoked digests. The kernel holds the
/// policy in memory, so the bound is the memory root can make it use.
pub const MAX_POLICY_LEN: usize = 4 << 20;
/// Most certificates of each kind.
pub const MAX_CERTS: u32 = 256;
/// Largest certificate accepted.
pub const MAX_CERT_LEN: usize = 16 * 1024;

/// Why a policy file was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PolicyError {
    /// Shorter than its header and trailer, or longer than [`MAX_POLICY_LEN`].
    BadLength,
    /// The body does not start with [`POLICY_MAGIC`], or the file does not end with
    /// [`SIGNATURE_MAGIC`].
    BadMagic,
    /// A format version this crate does not read.
    UnsupportedVersion,
    /// A reserved field is not zero.
    Reserved,
    /// More certificates than [`MAX_CERTS`].
    TooManyCerts,
    /// The counts and lengths do not add up to the file's length.
    Truncated,
    /// The digests are not strictly ascending (unsorted, or one listed twice).
    Unsorted,
    /// A certificate is empty, longer than [`MAX_CERT_LEN`], or not one DER SEQUENCE.
    BadCert,
    /// The signature is not one DER SEQUENCE of a plausible length.
    BadSignature,
}

impl PolicyError {
    /// What the error says, for logs and messages.
    pub fn message(self) -> &'static str {
        match self {
            PolicyError::BadLength => "not a policy: too short, or longer than 4 MiB",
            PolicyError::BadMagic => "not a signed elfsig policy (no ELFSIGPL header or ELFSIGPS trailer)",
            PolicyError::UnsupportedVersion => "a policy format version this elfsig does not read",
            PolicyError::Reserved => "a reserved field of the policy is not zero",
            PolicyError::TooManyCerts => "more than 256 certificates of one kind",
            PolicyError::Truncated => "the policy's counts do not match its length: truncated or padded",
            PolicyError::Unsorted => "the revoked digests are not in strictly ascending order",
            PolicyError::BadCert => "a certificate in the policy is not one DER structure of at most 16 KiB",
            PolicyError::BadSignature => "the policy's signature is not one PKCS#7 structure",
        }
    }
}

/// The counts of a policy's lists.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Revoked digests.
    pub digests: u32,
    /// Revoked certificates.
    pub revoked_certs: u32,
    /// Trusted certificates.
    pub trusted_certs: u32,
}

/// A policy's contents, borrowed from its bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Policy<'a> {
    /// Its serial number.
    pub serial: u64,
    /// The revoked digests, [`DIGEST_LEN`] bytes each, ascending.
    digests: &'a [u8],
    /// The revoked certificates, length-prefixed.
    revoked: Certs<'a>,
    /// The trusted certificates, length-prefixed.
    trusted: Certs<'a>,
}

impl<'a> Policy<'a> {
    /// Parses a body (without signature and trailer), checking everything but the signature.
    pub fn parse(body: &'a [u8]) -> Result<Self, PolicyError> {
        let fields = Fields { bytes: body, endian: Endian::Little };
        let header = body.get(..HEADER_LEN).ok_or(PolicyError::Truncated)?;
        if header.get(..8) != Some(&POLICY_MAGIC[..]) {
            return Err(PolicyError::BadMagic);
        }
        let field = |at| fields.u32(at).ok_or(PolicyError::Truncated);
        if fields.u16(8) != Some(POLICY_VERSION) {
            return Err(PolicyError::UnsupportedVersion);
        }
        if fields.u16(10) != Some(0) || field(12)? != 0 || field(36)? != 0 {
            return Err(PolicyError::Reserved);
        }
        let serial = fields.u64(16).ok_or(PolicyError::Truncated)?;
        let counts = Counts { digests: field(24)?, revoked_certs: field(28)?, trusted_certs: field(32)? };
        if counts.revoked_certs > MAX_CERTS || counts.trusted_certs > MAX_CERTS {
            return Err(PolicyError::TooManyCerts);
        }
        let digests_len = usize::try_from(counts.digests)
            .ok()
            .and_then(|n| n.checked_mul(DIGEST_LEN))
            .ok_or(PolicyError::Truncated)?;
        let digests_end = HEADER_LEN.checked_add(digests_len).ok_or(PolicyError::Truncated)?;
        let digests = body.get(HEADER_LEN..digests_end).ok_or(PolicyError::Truncated)?;
        let mut previous: Option<&[u8]> = None;
        for digest in digests.chunks_exact(DIGEST_LEN) {
            if previous.is_some_and(|p| order(p, digest) != Ordering::Less) {
                return Err(PolicyError::Unsorted);
            }
            previous = Some(digest);
        }
        let rest = body.get(digests_end..).ok_or(PolicyError::Truncated)?;
        let (revoked, rest) = Certs::split(rest, counts.revoked_certs)?;
        let (trusted, rest) = Certs::split(rest, counts.trusted_certs)?;
        if !rest.is_empty() {
            return Err(PolicyError::Truncated);
        }
        Ok(Policy { serial, digests, revoked, trusted })
    }

    /// How many of each list it has.
    pub fn counts(&self) -> Counts {
        let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        Counts {
            digests: count(self.digests.len() / DIGEST_LEN),
            revoked_certs: self.revoked.count,
            trusted_certs: self.trusted.count,
        }
    }

    /// The revoked digests as the body holds them, [`DIGEST_LEN`] bytes each, ascending: what
    /// [`lists`] searches.
    pub fn digest_bytes(&self) -> &'a [u8] {
        self.digests
    }

    /// The revoked digests, ascending.
    pub fn digests(&self) -> impl Iterator<Item = [u8; DIGEST_LEN]> + 'a {
        self.digests.chunks_exact(DIGEST_LEN).filter_map(|d| d.try_into().ok())
    }

    /// Whether `digest` is revoked: a binary search.
    pub fn revokes(&self, digest: &[u8; DIGEST_LEN]) -> bool {
        lists(self.digests, digest)
    }

    /// The revoked certificates (DER).
    pub fn revoked_certs(&self) -> Certs<'a> {
        self.revoked
    }

    /// The trusted certificates (DER).
    pub fn trusted_certs(&self) -> Certs<'a> {
        self.trusted
    }
}

/// Whether `digests`, [`DIGEST_LEN`]-byte digests in ascending order (a policy's list, as the
/// module keeps it), holds `digest`: a binary search.
pub fn lists(digests: &[u8], digest: &[u8; DIGEST_LEN]) -> bool {
    let (mut low, mut high) = (0usize, digests.len() / DIGEST_LEN);
    while low < high {
        let mid = low.saturating_add(high.saturating_sub(low) / 2);
        let Some(at) = mid.checked_mul(DIGEST_LEN) else { return false };
        let Some(entry) = array_at::<DIGEST_LEN>(digests, at) else { return false };
        match order(&entry, digest) {
            Ordering::Less => low = mid.saturating_add(1),
            Ordering::Greater => high = mid,
            Ordering::Equal => return true,
        }
    }
    false
}

/// How `a` orders against `b`, byte by byte. Not `Ord` for slices: some versions of `core`
/// compare their lengths by subtracting, which brings an overflow check (a panic) into the
/// kernel module.
fn order(a: &[u8], b: &[u8]) -> Ordering {
    for (x, y) in a.iter().zip(b) {
        if x != y {
            return if x < y { Ordering::Less } else { Ordering::Greater };
        }
    }
    a.len().cmp(&b.len())
}

/// Certificates, each a 4-byte length and one DER SEQUENCE; iterating gives each one's bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Certs<'a> {
    bytes: &'a [u8],
    count: u32,
}

impl<'a> Certs<'a> {
    /// The `count` certificates at the start of `bytes`, checked, and what follows them.
    fn split(bytes: &'a [u8], count: u32) -> Result<(Self, &'a [u8]), PolicyError> {
        let mut at = 0usize;
        for _ in 0..count {
            let len = array_at::<4>(bytes, at).map(u32::from_le_bytes).ok_or(PolicyError::Truncated)?;
            let len = usize::try_from(len).map_err(|_| PolicyError::BadCert)?;
            if len == 0 || len > MAX_CERT_LEN {
                return Err(PolicyError::BadCert);
            }
            let start = at.checked_add(4).ok_or(PolicyError::Truncated)?;
            let end = start.checked_add(len).ok_or(PolicyError::Truncated)?;
            let cert = bytes.get(start..end).ok_or(PolicyError::Truncated)?;
            if !der::is_single_sequence(cert) {
                return Err(PolicyError::BadCert);
            }
            at = end;
        }
        let certs = bytes.get(..at).ok_or(PolicyError::Truncated)?;
        let rest = bytes.get(at..).ok_or(PolicyError::Truncated)?;
        Ok((Certs { bytes: certs, count }, rest))
    }

    /// How many there are.
    pub fn len(&self) -> u32 {
        self.count
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
}

impl<'a> Iterator for Certs<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        let len = usize::try_from(array_at::<4>(self.bytes, 0).map(u32::from_le_bytes)?).ok()?;
        let end = len.checked_add(4)?;
        let cert = self.bytes.get(4..end)?;
        self.bytes = self.bytes.get(end..)?;
        self.count = self.count.saturating_sub(1);
        Some(cert)
    }
}

/// A signed policy: its body (what the signature covers), parsed, and the signature.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SignedPolicy<'a> {
    /// The body's bytes.
    pub body: &'a [u8],
    /// The detached PKCS#7 signature over the body.
    pub signature: &'a [u8],
    /// What the body says.
    pub policy: Policy<'a>,
}

impl<'a> SignedPolicy<'a> {
    /// Parses a signed policy file, checking everything but the signature's cryptography.
    pub fn parse(bytes: &'a [u8]) -> Result<Self, PolicyError> {
        if bytes.len() > MAX_POLICY_LEN || bytes.len() < HEADER_LEN.saturating_add(TRAILER_LEN) {
            return Err(PolicyError::BadLength);
        }
        let trailer_at = bytes.len().saturating_sub(TRAILER_LEN);
        let rest = bytes.get(..trailer_at).ok_or(PolicyError::BadLength)?;
        let trailer = bytes.get(trailer_at..).ok_or(PolicyError::BadLength)?;
        if trailer.get(4..) != Some(&SIGNATURE_MAGIC[..]) || bytes.get(..8) != Some(&POLICY_MAGIC[..]) {
            return Err(PolicyError::BadMagic);
        }
        let signature_len = array_at::<4>(trailer, 0).map(u32::from_le_bytes).ok_or(PolicyError::BadLength)?;
        let signature_len = usize::try_from(signature_len).map_err(|_| PolicyError::BadSignature)?;
        if !(MIN_CMS_LEN..=MAX_CMS_LEN).contains(&signature_len) {
            return Err(PolicyError::BadSignature);
        }
        let body_len = rest.len().checked_sub(signature_len).ok_or(PolicyError::Truncated)?;
        let body = rest.get(..body_len).ok_or(PolicyError::Truncated)?;
        let signature = rest.get(body_len..).ok_or(PolicyError::Truncated)?;
        if !der::is_single_sequence(signature) {
            return Err(PolicyError::BadSignature);
        }
        let policy = Policy::parse(body)?;
        Ok(SignedPolicy { body, signature, policy })
    }
}

/// The length of the body of a policy with `counts` and certificates of `cert_bytes` bytes in
/// all (without their length fields).
#[cfg(feature = "signer")]
pub fn body_len(counts: Counts, cert_bytes: usize) -> Option<usize> {
    let digests = usize::try_from(counts.digests).ok()?.checked_mul(DIGEST_LEN)?;
    let certs = usize::try_from(counts.revoked_certs.checked_add(counts.trusted_certs)?).ok()?.checked_mul(4)?;
    HEADER_LEN.checked_add(digests)?.checked_add(certs)?.checked_add(cert_bytes)
}

/// Writes a body into `out`, which must be exactly [`body_len`] long: `digests` must be strictly
/// ascending, and each certificate one DER SEQUENCE of at most [`MAX_CERT_LEN`] bytes. `None`
/// when anything does not hold, or does not fit.
#[cfg(feature = "signer")]
pub fn write_body(
    out: &mut [u8],
    serial: u64,
    digests: &[[u8; DIGEST_LEN]],
    revoked: &[&[u8]],
    trusted: &[&[u8]],
) -> Option<()> {
    let mut previous: Option<&[u8; DIGEST_LEN]> = None;
    for digest in digests {
        if previous.is_some_and(|p| order(p, digest) != Ordering::Less) {
            return None;
        }
        previous = Some(digest);
    }
    let count = |n: usize| u32::try_from(n).ok();
    let counts = Counts {
        digests: count(digests.len())?,
        revoked_certs: count(revoked.len())?,
        trusted_certs: count(trusted.len())?,
    };
    if counts.revoked_certs > MAX_CERTS || counts.trusted_certs > MAX_CERTS {
        return None;
    }
    let mut cert_bytes = 0usize;
    for cert in revoked.iter().chain(trusted) {
        if cert.is_empty() || cert.len() > MAX_CERT_LEN || !der::is_single_sequence(cert) {
            return None;
        }
        cert_bytes = cert_bytes.checked_add(cert.len())?;
    }
    if out.len() != body_len(counts, cert_bytes)? {
        return None;
    }
    put_at(out, 0, &POLICY_MAGIC)?;
    put_at(out, 8, &POLICY_VERSION.to_le_bytes())?;
    put_at(out, 10, &[0; 6])?;
    put_at(out, 16, &serial.to_le_bytes())?;
    put_at(out, 24, &counts.digests.to_le_bytes())?;
    put_at(out, 28, &counts.revoked_certs.to_le_bytes())?;
    put_at(out, 32, &counts.trusted_certs.to_le_bytes())?;
    put_at(out, 36, &[0; 4])?;
    let mut at = HEADER_LEN;
    for digest in digests {
        put_at(out, at, digest)?;
        at = at.checked_add(DIGEST_LEN)?;
    }
    for cert in revoked.iter().chain(trusted) {
        put_at(out, at, &count(cert.len())?.to_le_bytes())?;
        put_at(out, at.checked_add(4)?, cert)?;
        at = at.checked_add(4)?.checked_add(cert.len())?;
    }
    Some(())
}

/// The trailer that follows a signature of `signature_len` bytes.
#[cfg(feature = "signer")]
pub fn write_trailer(signature_len: usize) -> Option<[u8; TRAILER_LEN]> {
    let mut trailer = [0u8; TRAILER_LEN];
    put_at(&mut trailer, 0, &u32::try_from(signature_len).ok()?.to_le_bytes())?;
    put_at(&mut trailer, 4, &SIGNATURE_MAGIC)?;
    Some(trailer)
}

// The tests make their policies with the writer.
#[cfg(test)]
#[cfg(feature = "signer")]
mod tests {
    extern crate alloc;
    use super::*;
    use alloc::vec;
    use alloc::vec::Vec;

    /// A DER SEQUENCE of `n` content bytes (short form).
    fn sequence(n: u8, fill: u8) -> Vec<u8> {
        let mut v = vec![0x30, n];
        v.extend(vec![fill; usize::from(n)]);
        v
    }

    fn body(serial: u64, digests: &[[u8; 32]], revoked: &[&[u8]], trusted: &[&[u8]]) -> Vec<u8> {
        let counts = Counts {
            digests: u32::try_from(digests.len()).unwrap(),
            revoked_certs: u32::try_from(revoked.len()).unwrap(),
            trusted_certs: u32::try_from(trusted.len()).unwrap(),
        };
        let cert_bytes = revoked.iter().chain(trusted).map(|c| c.len()).sum();
        let mut out = vec![0u8; body_len(counts, cert_bytes).unwrap()];
        write_body(&mut out, serial, digests, revoked, trusted).unwrap();
        out
    }

    fn signed(body: &[u8]) -> Vec<u8> {
        let signature = sequence(100, 7);
        let mut v = body.to_vec();
        v.extend_from_slice(&signature);
        v.extend_from_slice(&write_trailer(signature.len()).unwrap());
        v
    }

    #[test]
    fn round_trips_and_finds_what_it_revokes() {
        let digests = [[1u8; 32], [2u8; 32], [9u8; 32]];
        let (a, b, c) = (sequence(10, 1), sequence(20, 2), sequence(30, 3));
        let written = body(42, &digests, &[&a], &[&b, &c]);
        let file = signed(&written);
        let parsed = SignedPolicy::parse(&file).unwrap();
        assert_eq!(parsed.body, &written[..]);
        assert_eq!(parsed.signature, &sequence(100, 7)[..]);
        let policy = parsed.policy;
        assert_eq!(policy.serial, 42);
        assert_eq!(policy.counts(), Counts { digests: 3, revoked_certs: 1, trusted_certs: 2 });
        assert_eq!(policy.digests().collect::<Vec<_>>(), digests);
        for d in digests {
            assert!(policy.revokes(&d));
        }
        for d in [[0u8; 32], [3u8; 32], [10u8; 32], [0xff; 32]] {
            assert!(!policy.revokes(&d));
        }
        assert_eq!(policy.revoked_certs().collect::<Vec<_>>(), [&a[..]]);
        assert_eq!(policy.trusted_certs().collect::<Vec<_>>(), [&b[..], &c[..]]);
        // An empty policy is one too: it revokes and trusts nothing.
        let empty = signed(&body(1, &[], &[], &[]));
        let policy = SignedPolicy::parse(&empty).unwrap().policy;
        assert!(!policy.revokes(&[0; 32]) && policy.revoked_certs().is_empty());
    }

    #[test]
    fn refuses_what_is_not_exactly_a_policy() {
        let cert = sequence(10, 1);
        let good = signed(&body(5, &[[1; 32], [2; 32]], &[], &[&cert]));
        assert!(SignedPolicy::parse(&good).is_ok());
        // Every truncation and every extension is refused.
        for len in 0..good.len() {
            assert!(SignedPolicy::parse(&good[..len]).is_err(), "truncated to {len}");
        }
        let mut longer = good.clone();
        longer.push(0);
        assert!(SignedPolicy::parse(&longer).is_err());
        // Each byte of the body's header flipped.
        for at in 0..HEADER_LEN {
            let mut bad = good.clone();
            bad[at] ^= 0x01;
            // The serial may be anything.
            if (16..24).contains(&at) {
                assert!(SignedPolicy::parse(&bad).is_ok());
            } else {
                assert!(SignedPolicy::parse(&bad).is_err(), "header byte {at}");
            }
        }
        // Unsorted or repeated digests.
        let mut unsorted = body(5, &[[1; 32], [2; 32]], &[], &[]);
        unsorted[HEADER_LEN] = 3;
        assert_eq!(SignedPolicy::parse(&signed(&unsorted)), Err(PolicyError::Unsorted));
        let mut repeated = body(5, &[[1; 32], [2; 32]], &[], &[]);
        repeated[HEADER_LEN + 32..HEADER_LEN + 64].copy_from_slice(&[1; 32]);
        assert_eq!(SignedPolicy::parse(&signed(&repeated)), Err(PolicyError::Unsorted));
        // A certificate that is not one DER SEQUENCE.
        let mut bad_cert = body(5, &[], &[&cert], &[]);
        bad_cert[HEADER_LEN + 4] = 0x31;
        assert_eq!(SignedPolicy::parse(&signed(&bad_cert)), Err(PolicyError::BadCert));
        // Too many certificates, said before anything is read.
        let mut many = body(5, &[], &[], &[]);
        many[32..36].copy_from_slice(&(MAX_CERTS + 1).to_le_bytes());
        assert_eq!(SignedPolicy::parse(&signed(&many)), Err(PolicyError::TooManyCerts));
        // A digest count that would overflow.
        let mut huge = body(5, &[], &[], &[]);
        huge[24..28].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(SignedPolicy::parse(&signed(&huge)), Err(PolicyError::Truncated));
    }

    #[test]
    fn the_writer_refuses_what_the_reader_would() {
        let cert = sequence(10, 1);
        let counts = Counts { digests: 2, revoked_certs: 0, trusted_certs: 0 };
        let mut out = vec![0u8; body_len(counts, 0).unwrap()];
        assert!(write_body(&mut out, 1, &[[2; 32], [1; 32]], &[], &[]).is_none());
        assert!(write_body(&mut out, 1, &[[1; 32], [1; 32]], &[], &[]).is_none());
        assert!(write_body(&mut out[1..], 1, &[[1; 32], [2; 32]], &[], &[]).is_none());
        let counts = Counts { digests: 0, revoked_certs: 1, trusted_certs: 0 };
        let mut out = vec![0u8; body_len(counts, 3).unwrap()];
        assert!(write_body(&mut out, 1, &[], &[&[0x31, 1, 0]], &[]).is_none());
        assert!(write_body(&mut out, 1, &[], &[&[0x30, 1, 0]], &[]).is_some());
        let mut out = vec![0u8; body_len(Counts { revoked_certs: 1, ..Counts::default() }, cert.len()).unwrap()];
        assert!(write_body(&mut out, 1, &[], &[&cert], &[]).is_some());
    }
}
