//! The signature payload, the contents of the signature section: a [`SignedRecord`] followed by a
//! DER-encoded PKCS#7 `SignedData` over the record.

use super::{der, Error, ReadAt, SignatureError, SignatureLocation, SignedRecord, MAX_PAYLOAD_LEN, MIN_PAYLOAD_LEN};

/// A parsed payload, borrowing its bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Payload<'a> {
    /// The decoded record.
    pub record: SignedRecord,
    /// The record's encoded bytes: the content the PKCS#7 signature covers.
    pub record_bytes: &'a [u8],
    /// The PKCS#7 blob (DER, detached content, no certificates).
    pub cms: &'a [u8],
}

impl<'a> Payload<'a> {
    /// Parses a payload. Checks the record and that the PKCS#7 blob is one DER structure; the
    /// signature itself is the caller's to verify.
    pub fn parse(bytes: &'a [u8]) -> Result<Self, Error> {
        if !(MIN_PAYLOAD_LEN..=MAX_PAYLOAD_LEN).contains(&bytes.len()) {
            return Err(SignatureError::PayloadSize.into());
        }
        let record_bytes = bytes.get(..SignedRecord::LEN).ok_or(SignatureError::PayloadSize)?;
        let cms = bytes.get(SignedRecord::LEN..).ok_or(SignatureError::PayloadSize)?;
        let record = SignedRecord::decode(record_bytes)?;
        if !der::is_single_sequence(cms) {
            return Err(SignatureError::BadCms.into());
        }
        Ok(Payload { record, record_bytes, cms })
    }

    /// Reads the payload at `location` into the front of `buf` and parses it. `buf` must hold
    /// [`SignatureLocation::payload_len`] bytes; [`MAX_PAYLOAD_LEN`] always suffices.
    pub fn read(file: &mut dyn ReadAt, location: &SignatureLocation, buf: &'a mut [u8]) -> Result<Self, Error> {
        let bytes = buf.get_mut(..location.payload_len()).ok_or(SignatureError::PayloadSize)?;
        file.read_exact_at(location.payload.offset, bytes)?;
        Payload::parse(bytes)
    }

    /// Length of a payload holding a PKCS#7 blob of `cms_len` bytes.
    pub fn encoded_len(cms_len: usize) -> Option<usize> {
        SignedRecord::LEN.checked_add(cms_len)
    }
}
