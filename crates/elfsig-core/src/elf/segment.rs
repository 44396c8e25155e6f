//! Program headers (`Elf32_Phdr` / `Elf64_Phdr`) and the program header table.

use super::super::endian::Fields;
use super::super::{ByteRange, Class, ElfError, Endian, Error, ReadAt};
use super::{FileHeader, SectionTable, PN_XNUM};

/// A program header, with class-sized fields widened to `u64`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProgramHeader {
    /// Segment type.
    pub p_type: u32,
    /// Segment flags.
    pub p_flags: u32,
    /// Offset of the segment in the file.
    pub p_offset: u64,
    /// Virtual address.
    pub p_vaddr: u64,
    /// Physical address.
    pub p_paddr: u64,
    /// Bytes in the file.
    pub p_filesz: u64,
    /// Bytes in memory.
    pub p_memsz: u64,
    /// Alignment.
    pub p_align: u64,
}

impl ProgramHeader {
    /// Size of the largest program header (ELF64).
    pub const MAX_LEN: usize = 56;

    /// Parses a program header of the given class and byte order from the start of `bytes`.
    pub fn parse(bytes: &[u8], class: Class, endian: Endian) -> Result<Self, Error> {
        let f = Fields { bytes, endian };
        let parsed = match class {
            Class::Elf64 => (|| {
                Some(ProgramHeader {
                    p_type: f.u32(0)?,
                    p_flags: f.u32(4)?,
                    p_offset: f.u64(8)?,
                    p_vaddr: f.u64(16)?,
                    p_paddr: f.u64(24)?,
                    p_filesz: f.u64(32)?,
                    p_memsz: f.u64(40)?,
                    p_align: f.u64(48)?,
                })
            })(),
            Class::Elf32 => (|| {
                Some(ProgramHeader {
                    p_type: f.u32(0)?,
                    p_offset: f.u32(4)?.into(),
                    p_vaddr: f.u32(8)?.into(),
                    p_paddr: f.u32(12)?.into(),
                    p_filesz: f.u32(16)?.into(),
                    p_memsz: f.u32(20)?.into(),
                    p_flags: f.u32(24)?,
                    p_align: f.u32(28)?.into(),
                })
            })(),
        };
        parsed.ok_or(Error::END)
    }

    /// The file bytes of the segment.
    pub fn file_range(&self) -> ByteRange {
        ByteRange { offset: self.p_offset, len: self.p_filesz }
    }
}

/// Where the program header table is and how many entries it has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProgramTable {
    /// The bytes of the table (empty when there are no program headers).
    pub range: ByteRange,
    /// Number of entries.
    pub count: u64,
    class: Class,
    endian: Endian,
}

impl ProgramTable {
    /// Locates the program header table, resolving `PN_XNUM` through section 0, and checks that
    /// it lies inside the file.
    pub fn new(header: &FileHeader, sections: Option<&SectionTable>, file_len: u64) -> Result<Self, Error> {
        let count = if header.e_phnum == PN_XNUM {
            u64::from(sections.ok_or(ElfError::InconsistentSegmentCount)?.first.sh_info)
        } else {
            u64::from(header.e_phnum)
        };
        let out_of_bounds = Error::Elf(ElfError::ProgramHeadersOutOfBounds);
        let len = count.checked_mul(header.class.program_header_len()).ok_or(out_of_bounds)?;
        let range = if count == 0 { ByteRange::EMPTY } else { ByteRange { offset: header.e_phoff, len } };
        if !range.within(file_len) {
            return Err(out_of_bounds);
        }
        Ok(ProgramTable { range, count, class: header.class, endian: header.endian })
    }

    /// Reads and parses entry `index`.
    pub fn entry(&self, file: &mut dyn ReadAt, index: u64) -> Result<ProgramHeader, Error> {
        let entry_len = self.class.program_header_len();
        let offset = (index < self.count)
            .then(|| self.range.offset.checked_add(index.checked_mul(entry_len)?))
            .flatten()
            .ok_or(ElfError::ProgramHeadersOutOfBounds)?;
        let mut buf = [0u8; ProgramHeader::MAX_LEN];
        let len = usize::try_from(entry_len).map_err(|_| ElfError::TooLarge)?;
        let bytes = buf.get_mut(..len).ok_or(Error::END)?;
        file.read_exact_at(offset, bytes)?;
        ProgramHeader::parse(bytes, self.class, self.endian)
    }
}
