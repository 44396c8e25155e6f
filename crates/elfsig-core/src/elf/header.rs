//! The ELF file header (`Elf32_Ehdr` / `Elf64_Ehdr`).

use super::super::endian::{Fields, FieldsMut};
use super::super::{ByteRange, ElfError, Endian, Error, ReadAt};
use super::{ELF_MAGIC, PN_XNUM, SHN_UNDEF};

/// ELF class: the width of addresses, offsets and sizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// `ELFCLASS32`.
    Elf32,
    /// `ELFCLASS64`.
    Elf64,
}

impl Class {
    /// Size of the file header.
    pub fn header_len(self) -> u64 {
        match self {
            Class::Elf32 => 52,
            Class::Elf64 => 64,
        }
    }

    /// Size of a section header.
    pub fn section_header_len(self) -> u64 {
        match self {
            Class::Elf32 => 40,
            Class::Elf64 => 64,
        }
    }

    /// Size of a program header.
    pub fn program_header_len(self) -> u64 {
        match self {
            Class::Elf32 => 32,
            Class::Elf64 => 56,
        }
    }

    /// Largest file offset the class can express.
    pub fn max_offset(self) -> u64 {
        match self {
            Class::Elf32 => u64::from(u32::MAX),
            Class::Elf64 => u64::MAX,
        }
    }

    pub(crate) fn is_64(self) -> bool {
        self == Class::Elf64
    }
}

/// The fields of the file header that describe the section header table: the ones a signer
/// rewrites and `remove` restores.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SectionFields {
    /// `e_shoff`.
    pub e_shoff: u64,
    /// `e_shentsize`.
    pub e_shentsize: u16,
    /// `e_shnum`.
    pub e_shnum: u16,
    /// `e_shstrndx`.
    pub e_shstrndx: u16,
}

/// A parsed ELF file header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileHeader {
    /// 32- or 64-bit.
    pub class: Class,
    /// Byte order.
    pub endian: Endian,
    /// `e_type` (executable, shared object, ...).
    pub e_type: u16,
    /// `e_machine`.
    pub e_machine: u16,
    /// Offset of the program header table.
    pub e_phoff: u64,
    /// Size of a program header.
    pub e_phentsize: u16,
    /// Number of program headers, or `PN_XNUM`.
    pub e_phnum: u16,
    /// The section header table fields as stored (`e_shoff` is 0 when there is no table).
    pub sections: SectionFields,
}

// Field offsets that differ between the classes: (ELF32, ELF64).
const E_PHOFF: (usize, usize) = (28, 32);
const E_SHOFF: (usize, usize) = (32, 40);
const E_PHENTSIZE: (usize, usize) = (42, 54);
const E_PHNUM: (usize, usize) = (44, 56);
const E_SHENTSIZE: (usize, usize) = (46, 58);
const E_SHNUM: (usize, usize) = (48, 60);
const E_SHSTRNDX: (usize, usize) = (50, 62);
const E_TYPE: usize = 16;
const E_MACHINE: usize = 18;
const EI_CLASS: usize = 4;
const EI_DATA: usize = 5;
const EI_VERSION: usize = 6;

fn pick(class: Class, offsets: (usize, usize)) -> usize {
    if class.is_64() {
        offsets.1
    } else {
        offsets.0
    }
}

impl FileHeader {
    /// Largest header size of any class: reading this many bytes (or the whole file, if shorter)
    /// is enough for [`FileHeader::parse`].
    pub const MAX_LEN: usize = 64;

    /// Parses the header at the start of `bytes`, which holds the first
    /// `min(file length, MAX_LEN)` bytes of the file.
    pub fn parse(bytes: &[u8]) -> Result<Self, Error> {
        if bytes.get(..4) != Some(&ELF_MAGIC[..]) {
            return Err(ElfError::NotElf.into());
        }
        let class = match bytes.get(EI_CLASS) {
            Some(1) => Class::Elf32,
            Some(2) => Class::Elf64,
            Some(&c) => return Err(ElfError::BadClass(c).into()),
            None => return Err(ElfError::TruncatedHeader.into()),
        };
        let endian = match bytes.get(EI_DATA) {
            Some(1) => Endian::Little,
            Some(2) => Endian::Big,
            Some(&d) => return Err(ElfError::BadEncoding(d).into()),
            None => return Err(ElfError::TruncatedHeader.into()),
        };
        let f = Fields { bytes, endian };
        match f.u8(EI_VERSION) {
            Some(1) => {}
            Some(v) => return Err(ElfError::BadVersion(v).into()),
            None => return Err(ElfError::TruncatedHeader.into()),
        }
        let header_len = usize::try_from(class.header_len()).map_err(|_| ElfError::TooLarge)?;
        if bytes.len() < header_len {
            return Err(ElfError::TruncatedHeader.into());
        }
        let wide = class.is_64();
        let truncated = || Error::Elf(ElfError::TruncatedHeader);
        let header = FileHeader {
            class,
            endian,
            e_type: f.u16(E_TYPE).ok_or_else(truncated)?,
            e_machine: f.u16(E_MACHINE).ok_or_else(truncated)?,
            e_phoff: f.word(pick(class, E_PHOFF), wide).ok_or_else(truncated)?,
            e_phentsize: f.u16(pick(class, E_PHENTSIZE)).ok_or_else(truncated)?,
            e_phnum: f.u16(pick(class, E_PHNUM)).ok_or_else(truncated)?,
            sections: SectionFields {
                e_shoff: f.word(pick(class, E_SHOFF), wide).ok_or_else(truncated)?,
                e_shentsize: f.u16(pick(class, E_SHENTSIZE)).ok_or_else(truncated)?,
                e_shnum: f.u16(pick(class, E_SHNUM)).ok_or_else(truncated)?,
                e_shstrndx: f.u16(pick(class, E_SHSTRNDX)).ok_or_else(truncated)?,
            },
        };
        header.check_table_fields()?;
        Ok(header)
    }

    /// Reads and parses the header of a file of `file_len` bytes.
    pub fn read(file: &mut dyn ReadAt, file_len: u64) -> Result<Self, Error> {
        let mut buf = [0u8; Self::MAX_LEN];
        let available = usize::try_from(file_len).unwrap_or(Self::MAX_LEN).min(Self::MAX_LEN);
        let bytes = buf.get_mut(..available).ok_or(Error::END)?;
        file.read_exact_at(0, bytes)?;
        Self::parse(bytes)
    }

    fn check_table_fields(&self) -> Result<(), Error> {
        if self.e_phnum != 0 && u64::from(self.e_phentsize) != self.class.program_header_len() {
            return Err(ElfError::BadProgramHeaderSize(self.e_phentsize).into());
        }
        if self.sections.e_shoff == 0 {
            // No section header table: nothing may claim otherwise.
            if self.sections.e_shnum != 0 || self.sections.e_shstrndx != SHN_UNDEF {
                return Err(ElfError::InconsistentSectionCount.into());
            }
            if self.e_phnum == PN_XNUM {
                return Err(ElfError::InconsistentSegmentCount.into());
            }
        } else if u64::from(self.sections.e_shentsize) != self.class.section_header_len() {
            return Err(ElfError::BadSectionHeaderSize(self.sections.e_shentsize).into());
        }
        Ok(())
    }

    /// The bytes the header occupies.
    pub fn range(&self) -> ByteRange {
        ByteRange { offset: 0, len: self.class.header_len() }
    }

    /// Whether the file has a section header table.
    pub fn has_section_table(&self) -> bool {
        self.sections.e_shoff != 0
    }

    /// Overwrites the section-table fields in `bytes`, an encoded header of this class and byte
    /// order. `TooLarge` when `e_shoff` does not fit the class.
    pub fn write_section_fields(&self, bytes: &mut [u8], fields: SectionFields) -> Result<(), Error> {
        let wide = self.class.is_64();
        let mut w = FieldsMut { bytes, endian: self.endian };
        let written = (|| {
            w.word(pick(self.class, E_SHOFF), wide, fields.e_shoff)?;
            w.u16(pick(self.class, E_SHENTSIZE), fields.e_shentsize)?;
            w.u16(pick(self.class, E_SHNUM), fields.e_shnum)?;
            w.u16(pick(self.class, E_SHSTRNDX), fields.e_shstrndx)
        })();
        written.ok_or(Error::Elf(ElfError::TooLarge))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header64() -> [u8; 64] {
        let mut h = [0u8; 64];
        h[..4].copy_from_slice(&ELF_MAGIC);
        h[4] = 2;
        h[5] = 1;
        h[6] = 1;
        h[16] = 2; // ET_EXEC
        h[54] = 56; // e_phentsize
        h[56] = 1; // e_phnum
        h[32] = 64; // e_phoff
        h
    }

    #[test]
    fn parses_a_minimal_header() {
        let h = FileHeader::parse(&header64()).unwrap();
        assert_eq!(h.class, Class::Elf64);
        assert_eq!(h.endian, Endian::Little);
        assert_eq!(h.e_phoff, 64);
        assert_eq!(h.e_phnum, 1);
        assert!(!h.has_section_table());
    }

    #[test]
    fn rejects_each_bad_identification_field() {
        let mut h = header64();
        h[0] = 0;
        assert_eq!(FileHeader::parse(&h), Err(Error::Elf(ElfError::NotElf)));
        let mut h = header64();
        h[4] = 3;
        assert_eq!(FileHeader::parse(&h), Err(Error::Elf(ElfError::BadClass(3))));
        let mut h = header64();
        h[5] = 0;
        assert_eq!(FileHeader::parse(&h), Err(Error::Elf(ElfError::BadEncoding(0))));
        let mut h = header64();
        h[6] = 2;
        assert_eq!(FileHeader::parse(&h), Err(Error::Elf(ElfError::BadVersion(2))));
        assert_eq!(FileHeader::parse(&header64()[..63]), Err(Error::Elf(ElfError::TruncatedHeader)));
        assert_eq!(FileHeader::parse(b"\x7fEL"), Err(Error::Elf(ElfError::NotElf)));
    }

    #[test]
    fn rejects_inconsistent_table_fields() {
        let mut h = header64();
        h[54] = 55;
        assert_eq!(FileHeader::parse(&h), Err(Error::Elf(ElfError::BadProgramHeaderSize(55))));
        let mut h = header64();
        h[60] = 3; // e_shnum without e_shoff
        assert_eq!(FileHeader::parse(&h), Err(Error::Elf(ElfError::InconsistentSectionCount)));
        let mut h = header64();
        h[40] = 0x80; // e_shoff with a wrong e_shentsize
        h[58] = 40;
        assert_eq!(FileHeader::parse(&h), Err(Error::Elf(ElfError::BadSectionHeaderSize(40))));
    }

    #[test]
    fn section_fields_round_trip_and_respect_the_class() {
        let mut bytes = header64();
        let h = FileHeader::parse(&bytes).unwrap();
        let fields = SectionFields { e_shoff: 0x1234, e_shentsize: 64, e_shnum: 5, e_shstrndx: 4 };
        h.write_section_fields(&mut bytes, fields).unwrap();
        assert_eq!(FileHeader::parse(&bytes).unwrap().sections, fields);

        let mut h32 = [0u8; 52];
        h32[..4].copy_from_slice(&ELF_MAGIC);
        h32[4] = 1;
        h32[5] = 2;
        h32[6] = 1;
        let parsed = FileHeader::parse(&h32).unwrap();
        assert_eq!(parsed.class, Class::Elf32);
        let too_far = SectionFields { e_shoff: 1 << 32, ..fields };
        assert_eq!(parsed.write_section_fields(&mut h32, too_far), Err(Error::Elf(ElfError::TooLarge)));
        let fields32 = SectionFields { e_shentsize: 40, ..fields };
        parsed.write_section_fields(&mut h32, fields32).unwrap();
        assert_eq!(FileHeader::parse(&h32).unwrap().sections, fields32);
    }
}
