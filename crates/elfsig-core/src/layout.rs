//! The layout of a signed file, planned from the original: where the signer puts the new
//! section-name table, the payload and the new section header table, and how the copied section
//! headers and the ELF header change.
//!
//! The signer appends and never moves: the original bytes stay where they were, only four fields
//! of the ELF header change, and the [`Original`] in the record remembers them. The old section
//! header table and name table stay in place, unreferenced, so `remove` is a truncation plus a
//! header patch.
//!
//! ```text
//! | original file (ELF header patched) | pad | names | pad | payload | pad | section headers |
//! ```
//!
//! A file without a section header table keeps its header as it is and gets a trailer instead:
//!
//! ```text
//! | original file | pad | payload | pad | trailer |
//! ```

use super::elf::{
    ElfFile, FileHeader, SectionFields, SectionHeader, SectionTable, SHN_LORESERVE, SHN_XINDEX, SHT_PROGBITS,
    SHT_STRTAB,
};
use super::locate::TRAILER_LEN;
use super::record::{HashAlgorithm, Original};
use super::{ByteRange, ElfError, Entitlements, Error, SignatureError, SignedRecord};

/// Alignment of each appended piece.
pub const ALIGN: u64 = 8;

/// Appended to an existing section-name table: a separator, so that an unterminated last name
/// stays as it was, then the signature section's name.
const NAMES_SUFFIX: &[u8] = b"\0.elfsig\0";
/// A new section-name table, for files that have none.
const NEW_NAMES: &[u8] = b"\0.shstrtab\0.elfsig\0";
const NEW_NAMES_SHSTRTAB: u32 = 1;
const NEW_NAMES_ELFSIG: u32 = 11;

/// The planned layout of a signed file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SignedLayout {
    /// The original file's ELF header.
    pub header: FileHeader,
    /// Length of the original file.
    pub original_len: u64,
    /// The original section header table, if any; its entries are copied first.
    pub original_sections: Option<SectionTable>,
    /// Where the original section names are, copied to the front of the new name table (empty
    /// when the original has no name table).
    pub names_source: ByteRange,
    /// What follows the copied names in the new name table.
    pub names_suffix: &'static [u8],
    /// The new section-name table.
    pub names: ByteRange,
    /// The signature payload.
    pub payload: ByteRange,
    /// What points at the payload: a new section header table, or a trailer.
    pub anchor: LayoutAnchor,
    /// Length of the signed file.
    pub file_len: u64,
    original_names_index: Option<u64>,
    created_names_index: Option<u64>,
    signature_name: u32,
}

/// What the signer appends after the payload to point at it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LayoutAnchor {
    /// A new section header table, whose last entry is the signature section.
    Sections {
        /// Where the table goes.
        range: ByteRange,
        /// Its number of entries.
        count: u64,
    },
    /// A trailer, for files without a section header table.
    Trailer {
        /// Where the trailer goes.
        range: ByteRange,
    },
}

impl LayoutAnchor {
    /// The bytes it occupies.
    pub fn range(&self) -> ByteRange {
        match *self {
            LayoutAnchor::Sections { range, .. } | LayoutAnchor::Trailer { range } => range,
        }
    }
}

fn align(value: u64) -> Option<u64> {
    Some(value.checked_add(ALIGN - 1)? & !(ALIGN - 1))
}

impl SignedLayout {
    /// Plans the signed file for `original`, an unsigned, validated file, with a payload of
    /// `payload_len` bytes.
    pub fn plan(original: &ElfFile, payload_len: u64) -> Result<Self, Error> {
        if original.signature.is_some() {
            return Err(SignatureError::Duplicate.into());
        }
        let class = original.header.class;
        let too_large = Error::Elf(ElfError::TooLarge);
        let original_count = original.sections.map_or(0, |s| s.count);
        let original_names_index = original.sections.and_then(|s| s.names_index);

        let start = align(original.file_len).ok_or(too_large)?;
        if original.sections.is_none() {
            // A trailer instead of a section table; the ELF header stays as it is.
            let payload = ByteRange { offset: start, len: payload_len };
            let trailer = ByteRange { offset: payload.end().and_then(align).ok_or(too_large)?, len: TRAILER_LEN };
            let file_len = trailer.end().ok_or(too_large)?;
            if file_len > class.max_offset() {
                return Err(too_large);
            }
            return Ok(SignedLayout {
                header: original.header,
                original_len: original.file_len,
                original_sections: None,
                names_source: ByteRange::EMPTY,
                names_suffix: b"",
                names: ByteRange { offset: start, len: 0 },
                payload,
                anchor: LayoutAnchor::Trailer { range: trailer },
                file_len,
                original_names_index: None,
                created_names_index: None,
                signature_name: 0,
            });
        }

        let (names_source, names_suffix, signature_name, created_names_index) = match original.names {
            Some(names) => {
                let source = ByteRange { offset: names.sh_offset, len: names.sh_size };
                let name = names.sh_size.checked_add(1).and_then(|n| u32::try_from(n).ok()).ok_or(too_large)?;
                (source, NAMES_SUFFIX, name, None)
            }
            None => (ByteRange::EMPTY, NEW_NAMES, NEW_NAMES_ELFSIG, Some(original_count)),
        };
        let suffix_len = u64::try_from(names_suffix.len()).map_err(|_| too_large)?;
        let names_len = names_source.len.checked_add(suffix_len).ok_or(too_large)?;
        let names = ByteRange { offset: start, len: names_len };
        let payload = ByteRange { offset: names.end().and_then(align).ok_or(too_large)?, len: payload_len };

        let added = if created_names_index.is_some() { 2 } else { 1 };
        let count = original_count.checked_add(added).ok_or(too_large)?;
        if u32::try_from(count).is_err() {
            return Err(too_large);
        }
        let sections = ByteRange {
            offset: payload.end().and_then(align).ok_or(too_large)?,
            len: count.checked_mul(class.section_header_len()).ok_or(too_large)?,
        };
        let file_len = sections.end().ok_or(too_large)?;
        if file_len > class.max_offset() {
            return Err(too_large);
        }
        Ok(SignedLayout {
            header: original.header,
            original_len: original.file_len,
            original_sections: original.sections,
            names_source,
            names_suffix,
            names,
            payload,
            anchor: LayoutAnchor::Sections { range: sections, count },
            file_len,
            original_names_index,
            created_names_index,
            signature_name,
        })
    }

    /// The section-table fields of the signed file's ELF header.
    pub fn header_fields(&self) -> SectionFields {
        let LayoutAnchor::Sections { range, count } = self.anchor else {
            return self.header.sections;
        };
        let reserved = u64::from(SHN_LORESERVE);
        let e_shnum = u16::try_from(count).ok().filter(|&n| n < SHN_LORESERVE).unwrap_or(0);
        let e_shstrndx = match self.created_names_index {
            None => self.header.sections.e_shstrndx,
            Some(index) if index < reserved => u16::try_from(index).unwrap_or(SHN_XINDEX),
            Some(_) => SHN_XINDEX,
        };
        SectionFields {
            e_shoff: range.offset,
            e_shentsize: u16::try_from(self.header.class.section_header_len()).unwrap_or(0),
            e_shnum,
            e_shstrndx,
        }
    }

    /// What the record must remember to restore the original.
    pub fn original(&self) -> Original {
        Original { len: self.original_len, sections: self.header.sections }
    }

    /// The record for this layout and digest, granting `entitlements`.
    pub fn record(&self, hash: HashAlgorithm, digest: [u8; 32], entitlements: Entitlements) -> SignedRecord {
        SignedRecord {
            hash,
            signed_len: self.file_len,
            payload: self.payload,
            original: self.original(),
            digest,
            entitlements,
        }
    }

    /// Number of entries copied from the original section header table.
    pub fn copied_sections(&self) -> u64 {
        self.original_sections.map_or(0, |s| s.count)
    }

    /// Entry `index` of the new table, given the original's entry `index`. Only for
    /// `index < copied_sections()`.
    pub fn copied_section(&self, index: u64, original: SectionHeader) -> SectionHeader {
        let mut section = original;
        if index == 0 {
            section = self.with_extended_counts(section);
        }
        if self.original_names_index == Some(index) {
            section.sh_offset = self.names.offset;
            section.sh_size = self.names.len;
        }
        section
    }

    /// Entry `copied_sections() + k` of the new table: a section-name table when the original
    /// had none, and the signature section, always last. `None` past the table, and always for a
    /// trailer.
    pub fn added_section(&self, k: u64) -> Option<SectionHeader> {
        if let LayoutAnchor::Trailer { .. } = self.anchor {
            return None;
        }
        let names = self.created_names_index.map(|_| SectionHeader {
            sh_name: NEW_NAMES_SHSTRTAB,
            sh_type: SHT_STRTAB,
            sh_offset: self.names.offset,
            sh_size: self.names.len,
            sh_addralign: 1,
            ..SectionHeader::default()
        });
        let signature = SectionHeader {
            sh_name: self.signature_name,
            sh_type: SHT_PROGBITS,
            sh_offset: self.payload.offset,
            sh_size: self.payload.len,
            sh_addralign: ALIGN,
            ..SectionHeader::default()
        };
        let k = usize::try_from(k).ok()?;
        [names, Some(signature)].into_iter().flatten().nth(k)
    }

    /// Section 0 carries the section count when it is 0xff00 or more, and the name table's index
    /// when that is.
    fn with_extended_counts(&self, mut first: SectionHeader) -> SectionHeader {
        let reserved = u64::from(SHN_LORESERVE);
        if let LayoutAnchor::Sections { count, .. } = self.anchor {
            if count >= reserved {
                first.sh_size = count;
            }
        }
        if let Some(index) = self.created_names_index.filter(|&i| i >= reserved) {
            first.sh_link = u32::try_from(index).unwrap_or(0);
        }
        first
    }
}
