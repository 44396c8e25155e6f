//! Finding the signature in a file, and therefore which bytes are hashed: everything but the
//! payload.
//!
//! Two anchors, chosen by whether the file has a section header table:
//!
//! - With one, the last section header describes the payload, when it is a `SHT_PROGBITS`
//!   section without flags whose contents start with [`RECORD_MAGIC`].
//! - Without one (`e_shoff` is 0), a trailer in the last [`TRAILER_LEN`] bytes of the file
//!   describes it: [`TRAILER_MAGIC`], then the payload's offset and length. Adding a section
//!   table to such a file would make ELF checkers complain about segments without sections.
//!
//! This is the path the kernel takes on every exec that misses its cache, so it reads as little
//! as possible: the ELF header, then section 0, the last section header and the record magic,
//! or the trailer.

use super::elf::{FileHeader, SectionHeader, SectionTable, SHT_PROGBITS};
use super::endian::array_at;
use super::record::RECORD_MAGIC;
use super::{ByteRange, Error, ReadAt, SignatureError, MAX_PAYLOAD_LEN, MIN_PAYLOAD_LEN};

/// First bytes of the trailer of a signed file without a section header table.
pub const TRAILER_MAGIC: [u8; 8] = *b"ELFSIGTR";

/// Size of the trailer: the magic, then the payload offset and length (little-endian `u64`).
pub const TRAILER_LEN: u64 = 24;

/// What points at the payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Anchor {
    /// The last entry of the section header table.
    Section {
        /// The section header table.
        table: SectionTable,
        /// The signature section's header.
        header: SectionHeader,
    },
    /// The trailer at the end of a file without a section header table.
    Trailer {
        /// Offset of the trailer.
        offset: u64,
    },
}

/// Where a file's signature payload is, and therefore which bytes are hashed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SignatureLocation {
    /// The file's ELF header.
    pub header: FileHeader,
    /// What points at the payload.
    pub anchor: Anchor,
    /// The payload's bytes, checked to lie inside the file apart from the headers.
    pub payload: ByteRange,
    /// Length of the file.
    pub file_len: u64,
}

/// Finds the signature of a file of `file_len` bytes. `Ok(None)` means the file is a readable
/// ELF file that carries no signature; an error means the file or its signature is malformed (or
/// could not be read).
///
/// Only what locating the payload needs is checked here; [`super::ElfFile::parse`] validates a
/// whole file.
pub fn find_signature(file: &mut dyn ReadAt, file_len: u64) -> Result<Option<SignatureLocation>, Error> {
    let header = FileHeader::read(file, file_len)?;
    match SectionTable::read(&header, file, file_len)? {
        Some(sections) => {
            let last = sections.entry(file, sections.last_index())?;
            SignatureLocation::from_last_section(file, header, sections, last, file_len)
        }
        None => SignatureLocation::from_trailer(file, header, file_len),
    }
}

/// Whether `section` is a signature section: flagless `SHT_PROGBITS` whose contents start with
/// the record magic. Reads the magic only when the header matches. An error when the header
/// matches but its contents lie outside the file.
pub(crate) fn is_signature_section(
    file: &mut dyn ReadAt,
    section: &SectionHeader,
    file_len: u64,
) -> Result<bool, Error> {
    let magic_len = u64::try_from(RECORD_MAGIC.len()).unwrap_or(u64::MAX);
    if section.sh_type != SHT_PROGBITS || section.sh_flags != 0 || section.sh_size < magic_len {
        return Ok(false);
    }
    let magic_range = ByteRange { offset: section.sh_offset, len: magic_len };
    if !magic_range.within(file_len) {
        return Err(SignatureError::PayloadOutOfBounds.into());
    }
    let mut magic = [0u8; RECORD_MAGIC.len()];
    file.read_exact_at(section.sh_offset, &mut magic)?;
    Ok(magic == RECORD_MAGIC)
}

impl SignatureLocation {
    /// Interprets `last`, the last section header; `Ok(None)` when it is not a signature section.
    pub(crate) fn from_last_section(
        file: &mut dyn ReadAt,
        header: FileHeader,
        table: SectionTable,
        last: SectionHeader,
        file_len: u64,
    ) -> Result<Option<Self>, Error> {
        if !is_signature_section(file, &last, file_len)? {
            return Ok(None);
        }
        let payload = ByteRange { offset: last.sh_offset, len: last.sh_size };
        check_payload(payload, file_len)?;
        if payload.overlaps(&header.range()) || payload.overlaps(&table.range) {
            return Err(SignatureError::PayloadOverlapsHeaders.into());
        }
        let anchor = Anchor::Section { table, header: last };
        Ok(Some(SignatureLocation { header, anchor, payload, file_len }))
    }

    /// Reads the trailer of a file without a section header table; `Ok(None)` when there is
    /// none.
    pub(crate) fn from_trailer(
        file: &mut dyn ReadAt,
        header: FileHeader,
        file_len: u64,
    ) -> Result<Option<Self>, Error> {
        let Some(offset) = file_len.checked_sub(TRAILER_LEN).filter(|&o| o >= header.range().len) else {
            return Ok(None);
        };
        let mut trailer = [0u8; 24];
        file.read_exact_at(offset, &mut trailer)?;
        if array_at::<8>(&trailer, 0) != Some(TRAILER_MAGIC) {
            return Ok(None);
        }
        let field =
            |at| array_at(&trailer, at).map(u64::from_le_bytes).ok_or(Error::Signature(SignatureError::PayloadSize));
        let payload = ByteRange { offset: field(8)?, len: field(16)? };
        // The payload lies between the headers and the trailer.
        check_payload(payload, offset)?;
        let program_headers = ByteRange {
            offset: header.e_phoff,
            len: u64::from(header.e_phnum).saturating_mul(header.class.program_header_len()),
        };
        if payload.overlaps(&header.range()) || payload.overlaps(&program_headers) {
            return Err(SignatureError::PayloadOverlapsHeaders.into());
        }
        let mut magic = [0u8; RECORD_MAGIC.len()];
        file.read_exact_at(payload.offset, &mut magic)?;
        if magic != RECORD_MAGIC {
            return Err(SignatureError::BadMagic.into());
        }
        Ok(Some(SignatureLocation { header, anchor: Anchor::Trailer { offset }, payload, file_len }))
    }

    /// Length of the payload; at most [`MAX_PAYLOAD_LEN`].
    pub fn payload_len(&self) -> usize {
        // Checked against MAX_PAYLOAD_LEN when the location was made.
        usize::try_from(self.payload.len).unwrap_or(MAX_PAYLOAD_LEN).min(MAX_PAYLOAD_LEN)
    }

    /// The bytes the digest covers, in order: everything before the payload, then everything
    /// after it. Either may be empty.
    pub fn hashed_ranges(&self) -> [ByteRange; 2] {
        self.payload.around(self.file_len)
    }

    /// Total number of bytes hashed.
    pub fn hashed_len(&self) -> u64 {
        self.file_len.saturating_sub(self.payload.len)
    }
}

/// The payload's size is within bounds and it ends by `limit`.
fn check_payload(payload: ByteRange, limit: u64) -> Result<(), Error> {
    let size_ok = usize::try_from(payload.len).is_ok_and(|n| (MIN_PAYLOAD_LEN..=MAX_PAYLOAD_LEN).contains(&n));
    if !size_ok {
        return Err(SignatureError::PayloadSize.into());
    }
    if !payload.within(limit) {
        return Err(SignatureError::PayloadOutOfBounds.into());
    }
    Ok(())
}

/// The trailer for a payload.
pub fn encode_trailer(payload: ByteRange) -> [u8; 24] {
    let mut trailer = [0u8; 24];
    let fields: [(usize, [u8; 8]); 3] =
        [(0, TRAILER_MAGIC), (8, payload.offset.to_le_bytes()), (16, payload.len.to_le_bytes())];
    for (at, bytes) in fields {
        // Every field lies inside the fixed-size array.
        let _ = super::endian::put_at(&mut trailer, at, &bytes);
    }
    trailer
}
