//! The signed record: the small, fixed-size, canonical structure that the PKCS#7 signature
//! covers.
//!
//! Signing a fixed-size record instead of the file lets the kernel check the signature before
//! hashing anything, and lets a verifier stream the file through its own hash. The record binds
//! the digest to the file length and the payload position, so that no byte outside the payload
//! can change and the payload cannot move; it also carries the header fields `remove` restores.
//!
//! Layout (all integers little-endian, whatever the ELF byte order):
//!
//! | offset | size | field                                   |
//! |-------:|-----:|-----------------------------------------|
//! |      0 |    8 | magic `ELFSIGRC`                        |
//! |      8 |    2 | format version (1 or 2)                 |
//! |     10 |    2 | hash algorithm (1 = SHA-256)            |
//! |     12 |    4 | entitlements (version 2), else zero     |
//! |     16 |    8 | signed length (the whole file)          |
//! |     24 |    8 | payload offset                          |
//! |     32 |    8 | payload length                          |
//! |     40 |    8 | original file length                    |
//! |     48 |    8 | original `e_shoff`                      |
//! |     56 |    2 | original `e_shentsize`                  |
//! |     58 |    2 | original `e_shnum`                      |
//! |     60 |    2 | original `e_shstrndx`                   |
//! |     62 |    2 | reserved, zero                          |
//! |     64 |   32 | digest of the file without the payload  |

use super::elf::SectionFields;
use super::endian::{array_at, put_at};
use super::entitlements::Entitlements;
use super::{ByteRange, Error, SignatureError, SignatureLocation};

/// First bytes of every record.
pub const RECORD_MAGIC: [u8; 8] = *b"ELFSIGRC";

/// The record format version of a record without entitlements: what every verifier since the
/// first reads, so a signature that grants nothing stays readable by all.
pub const FORMAT_VERSION: u16 = 1;

/// The record format version that carries entitlements, written only when there are some.
pub const ENTITLED_VERSION: u16 = 2;

/// Hash algorithm of the digest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HashAlgorithm {
    /// SHA-256, 32-byte digest.
    Sha256,
}

impl HashAlgorithm {
    /// Identifier stored in the record.
    pub fn id(self) -> u16 {
        match self {
            HashAlgorithm::Sha256 => 1,
        }
    }

    /// The algorithm with identifier `id`.
    pub fn from_id(id: u16) -> Option<Self> {
        match id {
            1 => Some(HashAlgorithm::Sha256),
            _ => None,
        }
    }

    /// Name, as the kernel's crypto API and OpenSSL spell it.
    pub fn name(self) -> &'static str {
        match self {
            HashAlgorithm::Sha256 => "sha256",
        }
    }
}

/// What the signer changed in the original file, so that `remove` can restore it byte for byte:
/// its length and the ELF header's section-table fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Original {
    /// Length of the original file.
    pub len: u64,
    /// The original section-table fields of the ELF header.
    pub sections: SectionFields,
}

/// The signed record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SignedRecord {
    /// Algorithm of `digest`.
    pub hash: HashAlgorithm,
    /// Length of the signed file.
    pub signed_len: u64,
    /// Where the payload is in the signed file.
    pub payload: ByteRange,
    /// What `remove` restores.
    pub original: Original,
    /// Digest of the signed file without its payload.
    pub digest: [u8; 32],
    /// What the signer entitles the program to.
    pub entitlements: Entitlements,
}

// Field offsets.
const VERSION: usize = 8;
const HASH: usize = 10;
const ENTITLEMENTS: usize = 12;
const SIGNED_LEN: usize = 16;
const PAYLOAD_OFFSET: usize = 24;
const PAYLOAD_LEN: usize = 32;
const ORIGINAL_LEN: usize = 40;
const ORIGINAL_SHOFF: usize = 48;
const ORIGINAL_SHENTSIZE: usize = 56;
const ORIGINAL_SHNUM: usize = 58;
const ORIGINAL_SHSTRNDX: usize = 60;
const RESERVED_B: usize = 62;
const DIGEST: usize = 64;

impl SignedRecord {
    /// Encoded size.
    pub const LEN: usize = 96;

    /// Decodes and checks a record. `bytes` must be exactly [`SignedRecord::LEN`] long.
    pub fn decode(bytes: &[u8]) -> Result<Self, Error> {
        if bytes.len() != Self::LEN {
            return Err(SignatureError::PayloadSize.into());
        }
        let u16_at = |at| array_at(bytes, at).map(u16::from_le_bytes);
        let u32_at = |at| array_at(bytes, at).map(u32::from_le_bytes);
        let u64_at = |at| array_at(bytes, at).map(u64::from_le_bytes);
        let malformed = Error::Signature(SignatureError::PayloadSize);

        if array_at::<8>(bytes, 0) != Some(RECORD_MAGIC) {
            return Err(SignatureError::BadMagic.into());
        }
        let version = u16_at(VERSION).ok_or(malformed)?;
        if version != FORMAT_VERSION && version != ENTITLED_VERSION {
            return Err(SignatureError::UnsupportedVersion(version).into());
        }
        let hash_id = u16_at(HASH).ok_or(malformed)?;
        let hash = HashAlgorithm::from_id(hash_id).ok_or(SignatureError::UnsupportedHash(hash_id))?;
        let bits = u32_at(ENTITLEMENTS).ok_or(malformed)?;
        let entitlements = match version {
            // One encoding per meaning: what grants nothing is a version 1 record.
            ENTITLED_VERSION if bits == 0 => return Err(SignatureError::UnknownEntitlements(0).into()),
            ENTITLED_VERSION => Entitlements::from_bits(bits).ok_or(SignatureError::UnknownEntitlements(bits))?,
            _ if bits != 0 => return Err(SignatureError::ReservedNotZero.into()),
            _ => Entitlements::NONE,
        };
        if u16_at(RESERVED_B) != Some(0) {
            return Err(SignatureError::ReservedNotZero.into());
        }
        let record = SignedRecord {
            hash,
            signed_len: u64_at(SIGNED_LEN).ok_or(malformed)?,
            payload: ByteRange {
                offset: u64_at(PAYLOAD_OFFSET).ok_or(malformed)?,
                len: u64_at(PAYLOAD_LEN).ok_or(malformed)?,
            },
            original: Original {
                len: u64_at(ORIGINAL_LEN).ok_or(malformed)?,
                sections: SectionFields {
                    e_shoff: u64_at(ORIGINAL_SHOFF).ok_or(malformed)?,
                    e_shentsize: u16_at(ORIGINAL_SHENTSIZE).ok_or(malformed)?,
                    e_shnum: u16_at(ORIGINAL_SHNUM).ok_or(malformed)?,
                    e_shstrndx: u16_at(ORIGINAL_SHSTRNDX).ok_or(malformed)?,
                },
            },
            digest: array_at(bytes, DIGEST).ok_or(malformed)?,
            entitlements,
        };
        // The signer appends everything after the original file, so the original ends before
        // the payload, which ends inside the signed file.
        let consistent = record.payload.within(record.signed_len) && record.original.len <= record.payload.offset;
        if !consistent {
            return Err(SignatureError::InconsistentRecord.into());
        }
        Ok(record)
    }

    /// The format version the record is written in: 2 when it carries entitlements, else 1.
    pub fn version(&self) -> u16 {
        if self.entitlements.is_empty() {
            FORMAT_VERSION
        } else {
            ENTITLED_VERSION
        }
    }

    /// Encodes the record.
    pub fn encode(&self) -> [u8; Self::LEN] {
        let mut out = [0u8; Self::LEN];
        let fields: [(usize, &[u8]); 13] = [
            (0, &RECORD_MAGIC),
            (VERSION, &self.version().to_le_bytes()),
            (HASH, &self.hash.id().to_le_bytes()),
            (ENTITLEMENTS, &self.entitlements.bits().to_le_bytes()),
            (SIGNED_LEN, &self.signed_len.to_le_bytes()),
            (PAYLOAD_OFFSET, &self.payload.offset.to_le_bytes()),
            (PAYLOAD_LEN, &self.payload.len.to_le_bytes()),
            (ORIGINAL_LEN, &self.original.len.to_le_bytes()),
            (ORIGINAL_SHOFF, &self.original.sections.e_shoff.to_le_bytes()),
            (ORIGINAL_SHENTSIZE, &self.original.sections.e_shentsize.to_le_bytes()),
            (ORIGINAL_SHNUM, &self.original.sections.e_shnum.to_le_bytes()),
            (ORIGINAL_SHSTRNDX, &self.original.sections.e_shstrndx.to_le_bytes()),
            (DIGEST, &self.digest),
        ];
        for (at, bytes) in fields {
            // Every field lies inside the fixed-size buffer; the unit tests decode what this
            // writes.
            let _ = put_at(&mut out, at, bytes);
        }
        out
    }

    /// Whether the record was made for a file of this length with its payload at this place.
    /// A record moved from another file, or a file grown or shrunk after signing, fails this.
    pub fn matches(&self, location: &SignatureLocation) -> bool {
        self.signed_len == location.file_len && self.payload == location.payload
    }
}

#[cfg(test)]
mod tests {
    use super::super::entitlements::Entitlement as crate_entitlement;
    use super::*;

    fn sample() -> SignedRecord {
        SignedRecord {
            hash: HashAlgorithm::Sha256,
            signed_len: 10_000,
            payload: ByteRange { offset: 8000, len: 700 },
            original: Original {
                len: 7900,
                sections: SectionFields { e_shoff: 7000, e_shentsize: 64, e_shnum: 12, e_shstrndx: 11 },
            },
            digest: [0xab; 32],
            entitlements: Entitlements::NONE,
        }
    }

    #[test]
    fn round_trips() {
        let bytes = sample().encode();
        assert_eq!(&bytes[..8], b"ELFSIGRC");
        assert_eq!(SignedRecord::decode(&bytes), Ok(sample()));
    }

    #[test]
    fn refuses_each_bad_field() {
        let good = sample().encode();
        let with = |at: usize, value: u8| {
            let mut b = good;
            b[at] = value;
            SignedRecord::decode(&b)
        };
        assert_eq!(with(0, b'X'), Err(SignatureError::BadMagic.into()));
        assert_eq!(with(VERSION, 3), Err(SignatureError::UnsupportedVersion(3).into()));
        assert_eq!(with(VERSION, 2), Err(SignatureError::UnknownEntitlements(0).into()));
        assert_eq!(with(HASH, 9), Err(SignatureError::UnsupportedHash(9).into()));
        assert_eq!(with(ENTITLEMENTS, 1), Err(SignatureError::ReservedNotZero.into()));
        assert_eq!(with(ENTITLEMENTS + 3, 1), Err(SignatureError::ReservedNotZero.into()));
        assert_eq!(with(RESERVED_B, 1), Err(SignatureError::ReservedNotZero.into()));
        assert_eq!(SignedRecord::decode(&good[..95]), Err(SignatureError::PayloadSize.into()));
    }

    #[test]
    fn entitlements_make_a_version_2_record() {
        let jit = Entitlements::NONE.with(crate_entitlement::Jit);
        let entitled = SignedRecord { entitlements: jit, ..sample() };
        let bytes = entitled.encode();
        assert_eq!(&bytes[VERSION..VERSION + 2], &[2, 0]);
        assert_eq!(&bytes[ENTITLEMENTS..ENTITLEMENTS + 4], &[1, 0, 0, 0]);
        assert_eq!(SignedRecord::decode(&bytes), Ok(entitled));
        // Without entitlements, the record every verifier reads.
        assert_eq!(&sample().encode()[VERSION..VERSION + 2], &[1, 0]);
        // A bit no entitlement has is refused, not ignored.
        let mut unknown = bytes;
        unknown[ENTITLEMENTS] = 0x05;
        assert_eq!(SignedRecord::decode(&unknown), Err(SignatureError::UnknownEntitlements(5).into()));
    }

    #[test]
    fn refuses_inconsistent_positions() {
        let beyond = SignedRecord { signed_len: 8699, ..sample() };
        assert_eq!(SignedRecord::decode(&beyond.encode()), Err(SignatureError::InconsistentRecord.into()));
        let original_too_long = SignedRecord { original: Original { len: 8001, ..sample().original }, ..sample() };
        assert_eq!(SignedRecord::decode(&original_too_long.encode()), Err(SignatureError::InconsistentRecord.into()));
        let overflow = SignedRecord { payload: ByteRange { offset: u64::MAX, len: 2 }, ..sample() };
        assert_eq!(SignedRecord::decode(&overflow.encode()), Err(SignatureError::InconsistentRecord.into()));
    }
}
