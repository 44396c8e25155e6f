//! Finding the signature in a file: the last section header, if it is a `SHT_PROGBITS` section
//! without flags whose contents start with [`RECORD_MAGIC`], describes the payload, and
//! everything else in the file is hashed.
//!
//! This is the path the kernel takes on every exec that misses its cache, so it reads as little
//! as possible: the ELF header, section 0, the last section header and the magic.

use crate::elf::SHT_PROGBITS;
use crate::elf::{FileHeader, SectionHeader, SectionTable};
use crate::record::RECORD_MAGIC;
use crate::{ByteRange, Error, ReadAt, SignatureError, MAX_PAYLOAD_LEN, MIN_PAYLOAD_LEN};

/// Where a file's signature payload is, and therefore which bytes are hashed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SignatureLocation {
    /// The file's ELF header.
    pub header: FileHeader,
    /// The file's section header table.
    pub sections: SectionTable,
    /// The signature section's header (the last entry of the table).
    pub section: SectionHeader,
    /// The payload's bytes: `section.sh_offset` and `section.sh_size`, checked.
    pub payload: ByteRange,
    /// Length of the file.
    pub file_len: u64,
}

/// Finds the signature of a file of `file_len` bytes. `Ok(None)` means the file is a readable
/// ELF file that carries no signature; an error means the file or its signature section is
/// malformed (or could not be read).
///
/// Only what locating the payload needs is checked here; [`crate::ElfFile::parse`] validates a
/// whole file.
pub fn find_signature(file: &mut dyn ReadAt, file_len: u64) -> Result<Option<SignatureLocation>, Error> {
    let header = FileHeader::read(file, file_len)?;
    let Some(sections) = SectionTable::read(&header, file, file_len)? else {
        return Ok(None);
    };
    let last = sections.entry(file, sections.last_index())?;
    SignatureLocation::from_last_section(file, header, sections, last, file_len)
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
        sections: SectionTable,
        last: SectionHeader,
        file_len: u64,
    ) -> Result<Option<Self>, Error> {
        if !is_signature_section(file, &last, file_len)? {
            return Ok(None);
        }
        let size_ok = usize::try_from(last.sh_size).is_ok_and(|n| (MIN_PAYLOAD_LEN..=MAX_PAYLOAD_LEN).contains(&n));
        if !size_ok {
            return Err(SignatureError::PayloadSize.into());
        }
        let payload = ByteRange { offset: last.sh_offset, len: last.sh_size };
        if !payload.within(file_len) {
            return Err(SignatureError::PayloadOutOfBounds.into());
        }
        if payload.overlaps(&header.range()) || payload.overlaps(&sections.range) {
            return Err(SignatureError::PayloadOverlapsHeaders.into());
        }
        Ok(Some(SignatureLocation { header, sections, section: last, payload, file_len }))
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
