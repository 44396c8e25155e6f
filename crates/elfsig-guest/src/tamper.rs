//! Finding things in a signed file with elfsig-core, to tamper with them: sections by name, the
//! program and section header tables, the payload.

use elfsig_core::ElfFile;

/// Where things are in a file.
#[derive(Debug)]
pub(crate) struct Map {
    /// Offset of the program header table.
    pub(crate) phoff: usize,
    /// Offset of the section header table.
    pub(crate) shoff: usize,
    /// The payload (offset, size), if signed.
    pub(crate) payload: Option<(usize, usize)>,
    sections: Vec<(String, usize, usize)>,
}

impl Map {
    /// Maps `bytes`, a valid ELF file.
    pub(crate) fn of(bytes: &[u8]) -> Result<Map, String> {
        let len = bytes.len() as u64;
        let elf = ElfFile::parse(&mut &bytes[..], len).map_err(|e| format!("parse: {e}"))?;
        let table = elf.sections.ok_or("no section header table")?;
        let names = elf.names.ok_or("no section names")?;
        let names_bytes = &bytes[names.sh_offset as usize..(names.sh_offset + names.sh_size) as usize];
        let mut sections = Vec::new();
        for index in 0..table.count {
            let section = table.entry(&mut &bytes[..], index).map_err(|e| format!("section {index}: {e}"))?;
            let name_bytes = &names_bytes[section.sh_name as usize..];
            let end = name_bytes.iter().position(|b| *b == 0).unwrap_or(name_bytes.len());
            let name = String::from_utf8_lossy(&name_bytes[..end]).into_owned();
            sections.push((name, section.sh_offset as usize, section.sh_size as usize));
        }
        Ok(Map {
            phoff: elf.header.e_phoff as usize,
            shoff: table.range.offset as usize,
            payload: elf.signature.map(|s| (s.payload.offset as usize, s.payload.len as usize)),
            sections,
        })
    }

    /// Offset and size of the section called `name`.
    pub(crate) fn section(&self, name: &str) -> Result<(usize, usize), String> {
        self.sections
            .iter()
            .find(|(n, _, size)| n == name && *size > 0)
            .map(|(_, offset, size)| (*offset, *size))
            .ok_or_else(|| format!("no section {name}"))
    }

    /// The payload, or an error for unsigned files.
    pub(crate) fn payload(&self) -> Result<(usize, usize), String> {
        self.payload.ok_or_else(|| "not signed".to_owned())
    }
}

/// `bytes` with the byte at `at` inverted.
pub(crate) fn flip(bytes: &[u8], at: usize) -> Vec<u8> {
    let mut out = bytes.to_vec();
    out[at] ^= 0xff;
    out
}
