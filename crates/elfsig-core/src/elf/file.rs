//! Validation of a whole ELF file: every table and every segment and section inside the file,
//! the tables apart from each other, and at most one signature section, last.
//!
//! The CLI runs this before signing, verifying, inspecting or removing, so that nothing it writes
//! is derived from a file it does not understand. The kernel does not need it: it only locates
//! the signature, and the signature covers everything else.

use super::super::locate::is_signature_section;
use super::super::{ByteRange, ElfError, Error, ReadAt, SignatureError, SignatureLocation};
use super::{FileHeader, ProgramTable, SectionHeader, SectionTable, SHT_STRTAB};

/// A validated ELF file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ElfFile {
    /// The ELF header.
    pub header: FileHeader,
    /// The program header table.
    pub segments: ProgramTable,
    /// The section header table, if any.
    pub sections: Option<SectionTable>,
    /// The section-name table's header, if any.
    pub names: Option<SectionHeader>,
    /// The signature, if the file carries one.
    pub signature: Option<SignatureLocation>,
    /// Length of the file.
    pub file_len: u64,
}

impl ElfFile {
    /// Reads and validates the layout of a file of `file_len` bytes.
    pub fn parse(file: &mut dyn ReadAt, file_len: u64) -> Result<Self, Error> {
        let header = FileHeader::read(file, file_len)?;
        let sections = SectionTable::read(&header, file, file_len)?;
        let segments = ProgramTable::new(&header, sections.as_ref(), file_len)?;

        let header_range = header.range();
        let section_range = sections.map_or(ByteRange::EMPTY, |s| s.range);
        if header_range.overlaps(&segments.range)
            || header_range.overlaps(&section_range)
            || segments.range.overlaps(&section_range)
        {
            return Err(ElfError::TablesOverlap.into());
        }

        let mut elf = ElfFile { header, segments, sections, names: None, signature: None, file_len };
        match sections {
            Some(table) => elf.check_sections(file, &table)?,
            None => elf.signature = SignatureLocation::from_trailer(file, header, file_len)?,
        }
        elf.check_segments(file)?;
        Ok(elf)
    }

    fn check_sections(&mut self, file: &mut dyn ReadAt, table: &SectionTable) -> Result<(), Error> {
        if let Some(index) = table.names_index {
            let names = table.entry(file, index)?;
            if names.sh_type != SHT_STRTAB {
                return Err(ElfError::NamesNotStringTable.into());
            }
            self.names = Some(names);
        }
        let last_index = table.last_index();
        let last = table.entry(file, last_index)?;
        self.signature = SignatureLocation::from_last_section(file, self.header, *table, last, self.file_len)?;

        let header_range = self.header.range();
        for index in 0..table.count {
            let section = if index == last_index { last } else { table.entry(file, index)? };
            if let Some(range) = section.file_range() {
                if !range.within(self.file_len) {
                    return Err(ElfError::SectionOutOfBounds { index }.into());
                }
                if range.overlaps(&header_range) || range.overlaps(&table.range) {
                    return Err(ElfError::SectionOverlapsTable { index }.into());
                }
            }
            // Without a name table every name must be empty: a name pointing into a table that
            // does not exist would point into the one a signer adds.
            let names_len = self.names.map_or(0, |n| n.sh_size);
            if section.sh_name != 0 && u64::from(section.sh_name) >= names_len {
                return Err(ElfError::SectionNameOutOfBounds { index }.into());
            }
            if index != last_index && is_signature_section(file, &section, self.file_len)? {
                let error = if self.signature.is_some() { SignatureError::Duplicate } else { SignatureError::NotLast };
                return Err(error.into());
            }
        }
        Ok(())
    }

    fn check_segments(&self, file: &mut dyn ReadAt) -> Result<(), Error> {
        for index in 0..self.segments.count {
            let segment = self.segments.entry(file, index)?;
            let range = segment.file_range();
            if range.len != 0 && !range.within(self.file_len) {
                return Err(ElfError::SegmentOutOfBounds { index }.into());
            }
            // A signer never places the payload where a loader maps bytes: the loaded image
            // must be covered by the digest.
            if self.signature.is_some_and(|s| s.payload.overlaps(&range)) {
                return Err(SignatureError::PayloadInSegment.into());
            }
        }
        Ok(())
    }
}
