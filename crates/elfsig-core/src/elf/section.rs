//! Section headers (`Elf32_Shdr` / `Elf64_Shdr`) and the section header table, including the
//! extended numbering that stores counts of 0xff00 and more in section 0.

use super::super::endian::{Fields, FieldsMut};
use super::super::{ByteRange, Class, ElfError, Endian, Error, ReadAt};
use super::{FileHeader, SHN_LORESERVE, SHN_XINDEX, SHT_NOBITS, SHT_NULL};

/// A section header, with class-sized fields widened to `u64`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SectionHeader {
    /// Offset of the name in the section-name table.
    pub sh_name: u32,
    /// Section type.
    pub sh_type: u32,
    /// Section flags.
    pub sh_flags: u64,
    /// Address in memory.
    pub sh_addr: u64,
    /// Offset of the contents in the file.
    pub sh_offset: u64,
    /// Size of the contents.
    pub sh_size: u64,
    /// Link to another section (type-specific).
    pub sh_link: u32,
    /// Extra information (type-specific).
    pub sh_info: u32,
    /// Alignment.
    pub sh_addralign: u64,
    /// Size of an entry, for tables.
    pub sh_entsize: u64,
}

// Field offsets: (ELF32, ELF64). sh_name and sh_type are at 0 and 4 in both.
const SH_FLAGS: (usize, usize) = (8, 8);
const SH_ADDR: (usize, usize) = (12, 16);
const SH_OFFSET: (usize, usize) = (16, 24);
const SH_SIZE: (usize, usize) = (20, 32);
const SH_LINK: (usize, usize) = (24, 40);
const SH_INFO: (usize, usize) = (28, 44);
const SH_ADDRALIGN: (usize, usize) = (32, 48);
const SH_ENTSIZE: (usize, usize) = (36, 56);

fn pick(class: Class, offsets: (usize, usize)) -> usize {
    if class.is_64() {
        offsets.1
    } else {
        offsets.0
    }
}

impl SectionHeader {
    /// Size of the largest section header (ELF64).
    pub const MAX_LEN: usize = 64;

    /// Parses a section header of the given class and byte order from the start of `bytes`.
    pub fn parse(bytes: &[u8], class: Class, endian: Endian) -> Result<Self, Error> {
        let f = Fields { bytes, endian };
        let w = class.is_64();
        let parsed = (|| {
            Some(SectionHeader {
                sh_name: f.u32(0)?,
                sh_type: f.u32(4)?,
                sh_flags: f.word(pick(class, SH_FLAGS), w)?,
                sh_addr: f.word(pick(class, SH_ADDR), w)?,
                sh_offset: f.word(pick(class, SH_OFFSET), w)?,
                sh_size: f.word(pick(class, SH_SIZE), w)?,
                sh_link: f.u32(pick(class, SH_LINK))?,
                sh_info: f.u32(pick(class, SH_INFO))?,
                sh_addralign: f.word(pick(class, SH_ADDRALIGN), w)?,
                sh_entsize: f.word(pick(class, SH_ENTSIZE), w)?,
            })
        })();
        parsed.ok_or(Error::END)
    }

    /// Encodes the header into the start of `out`. `TooLarge` when a field does not fit the
    /// class; `Io` when `out` is too small.
    pub fn write(&self, out: &mut [u8], class: Class, endian: Endian) -> Result<(), Error> {
        let len = usize::try_from(class.section_header_len()).map_err(|_| ElfError::TooLarge)?;
        let out = out.get_mut(..len).ok_or(Error::END)?;
        let mut f = FieldsMut { bytes: out, endian };
        let w = class.is_64();
        let written = (|| {
            f.u32(0, self.sh_name)?;
            f.u32(4, self.sh_type)?;
            f.word(pick(class, SH_FLAGS), w, self.sh_flags)?;
            f.word(pick(class, SH_ADDR), w, self.sh_addr)?;
            f.word(pick(class, SH_OFFSET), w, self.sh_offset)?;
            f.word(pick(class, SH_SIZE), w, self.sh_size)?;
            f.u32(pick(class, SH_LINK), self.sh_link)?;
            f.u32(pick(class, SH_INFO), self.sh_info)?;
            f.word(pick(class, SH_ADDRALIGN), w, self.sh_addralign)?;
            f.word(pick(class, SH_ENTSIZE), w, self.sh_entsize)
        })();
        written.ok_or(Error::Elf(ElfError::TooLarge))
    }

    /// The file bytes holding the contents, or `None` for sections that occupy none
    /// (`SHT_NOBITS`, `SHT_NULL`, or empty).
    pub fn file_range(&self) -> Option<ByteRange> {
        if self.sh_type == SHT_NOBITS || self.sh_type == SHT_NULL || self.sh_size == 0 {
            None
        } else {
            Some(ByteRange { offset: self.sh_offset, len: self.sh_size })
        }
    }
}

/// Where the section header table is and what it holds, with extended numbering resolved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SectionTable {
    /// The bytes of the table.
    pub range: ByteRange,
    /// Number of entries (at least 1: section 0).
    pub count: u64,
    /// Index of the section-name table, if there is one.
    pub names_index: Option<u64>,
    /// Section 0, which holds the real counts under extended numbering.
    pub first: SectionHeader,
    class: Class,
    endian: Endian,
}

impl SectionTable {
    /// Locates the section header table of a file of `file_len` bytes; `Ok(None)` when the file
    /// has none. Reads section 0 and checks that the whole table lies inside the file.
    pub fn read(header: &FileHeader, file: &mut dyn ReadAt, file_len: u64) -> Result<Option<Self>, Error> {
        if !header.has_section_table() {
            return Ok(None);
        }
        let fields = header.sections;
        let entry_len = header.class.section_header_len();
        let out_of_bounds = Error::Elf(ElfError::SectionHeadersOutOfBounds);
        let first_range = ByteRange { offset: fields.e_shoff, len: entry_len };
        if !first_range.within(file_len) {
            return Err(out_of_bounds);
        }
        let first = read_header(file, fields.e_shoff, header.class, header.endian)?;

        let count = if fields.e_shnum != 0 { u64::from(fields.e_shnum) } else { first.sh_size };
        if count == 0 {
            return Err(ElfError::InconsistentSectionCount.into());
        }
        let len = count.checked_mul(entry_len).ok_or(out_of_bounds)?;
        let range = ByteRange { offset: fields.e_shoff, len };
        if !range.within(file_len) {
            return Err(out_of_bounds);
        }

        let names_index = match fields.e_shstrndx {
            0 => None,
            SHN_XINDEX => Some(u64::from(first.sh_link)).filter(|&i| i != 0),
            i if i >= SHN_LORESERVE => return Err(ElfError::BadNamesIndex.into()),
            i => Some(u64::from(i)),
        };
        if names_index.is_some_and(|i| i >= count) {
            return Err(ElfError::BadNamesIndex.into());
        }
        Ok(Some(SectionTable { range, count, names_index, first, class: header.class, endian: header.endian }))
    }

    /// Offset of entry `index`, or `None` past the table.
    pub fn entry_offset(&self, index: u64) -> Option<u64> {
        if index >= self.count {
            return None;
        }
        self.range.offset.checked_add(index.checked_mul(self.class.section_header_len())?)
    }

    /// Reads and parses entry `index`.
    pub fn entry(&self, file: &mut dyn ReadAt, index: u64) -> Result<SectionHeader, Error> {
        let offset = self.entry_offset(index).ok_or(ElfError::SectionHeadersOutOfBounds)?;
        read_header(file, offset, self.class, self.endian)
    }

    /// Index of the last entry.
    pub fn last_index(&self) -> u64 {
        self.count.saturating_sub(1)
    }
}

fn read_header(file: &mut dyn ReadAt, offset: u64, class: Class, endian: Endian) -> Result<SectionHeader, Error> {
    let mut buf = [0u8; SectionHeader::MAX_LEN];
    let len = usize::try_from(class.section_header_len()).map_err(|_| ElfError::TooLarge)?;
    let bytes = buf.get_mut(..len).ok_or(Error::END)?;
    file.read_exact_at(offset, bytes)?;
    SectionHeader::parse(bytes, class, endian)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> SectionHeader {
        SectionHeader {
            sh_name: 1,
            sh_type: 3,
            sh_flags: 2,
            sh_addr: 0x1000,
            sh_offset: 0x2000,
            sh_size: 0x30,
            sh_link: 4,
            sh_info: 5,
            sh_addralign: 8,
            sh_entsize: 0,
        }
    }

    #[test]
    fn round_trips_in_every_class_and_order() {
        for class in [Class::Elf32, Class::Elf64] {
            for endian in [Endian::Little, Endian::Big] {
                let mut buf = [0u8; 64];
                sample().write(&mut buf, class, endian).unwrap();
                assert_eq!(SectionHeader::parse(&buf, class, endian).unwrap(), sample());
            }
        }
    }

    #[test]
    fn refuses_fields_too_wide_for_elf32_and_short_buffers() {
        let wide = SectionHeader { sh_offset: 1 << 32, ..sample() };
        let mut buf = [0u8; 64];
        assert_eq!(wide.write(&mut buf, Class::Elf32, Endian::Little), Err(Error::Elf(ElfError::TooLarge)));
        assert_eq!(sample().write(&mut buf[..39], Class::Elf32, Endian::Little), Err(Error::END));
        assert_eq!(SectionHeader::parse(&buf[..63], Class::Elf64, Endian::Little), Err(Error::END));
    }

    #[test]
    fn nobits_and_empty_sections_occupy_no_file_bytes() {
        assert_eq!(SectionHeader { sh_type: SHT_NOBITS, ..sample() }.file_range(), None);
        assert_eq!(SectionHeader { sh_size: 0, ..sample() }.file_range(), None);
        assert_eq!(sample().file_range(), Some(ByteRange { offset: 0x2000, len: 0x30 }));
    }
}
