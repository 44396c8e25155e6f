//! Where things are in an ELF file and in a signature, found independently of elfsig-core:
//! goblin for the ELF structures, fixed offsets (docs/FORMAT.md) for the record, and plain byte
//! access for fields read or patched by hand.

use std::ops::Range;

use goblin::elf::Elf;
use goblin::elf::program_header::PT_LOAD;

/// Size of the record at the start of the payload.
pub const RECORD_LEN: usize = 96;
/// Offset of the digest in the record.
pub const RECORD_DIGEST: usize = 64;

// Offsets of section header fields: (ELF32, ELF64), for `Layout::sh_field`.
pub const SH_FLAGS: (usize, usize) = (8, 8);
pub const SH_ADDR: (usize, usize) = (12, 16);
pub const SH_OFFSET: (usize, usize) = (16, 24);
pub const SH_SIZE: (usize, usize) = (20, 32);
pub const SH_ADDRALIGN: (usize, usize) = (32, 48);

// Little-endian field access: for ELF64 little-endian files, the record and the trailer (which
// are little-endian whatever the ELF byte order). For either byte order, see `Layout::get` and
// `Layout::put`.

/// The little-endian `u16` at `at`.
pub fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes(b[at..at + 2].try_into().unwrap())
}

/// The little-endian `u32` at `at`.
pub fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

/// The little-endian `u64` at `at`.
pub fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

/// Writes `v` little-endian at `at`.
pub fn put_u16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_le_bytes());
}

/// Writes `v` little-endian at `at`.
pub fn put_u64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

/// A section, as goblin sees it.
#[derive(Clone, Debug)]
pub struct Section {
    pub name: String,
    pub offset: usize,
    pub size: usize,
    /// File offset of the section's header.
    pub header: usize,
}

/// Where things are in an ELF file, found by goblin.
#[derive(Clone, Debug)]
pub struct Layout {
    pub is_64: bool,
    pub little: bool,
    /// The ELF header and the program header table.
    pub headers: [Range<usize>; 2],
    /// The file ranges of the `PT_LOAD` segments.
    pub load_contents: Vec<Range<usize>>,
    pub shoff: usize,
    pub shstrndx: usize,
    /// File offsets of the `PT_LOAD` program headers.
    pub loads: Vec<usize>,
    pub sections: Vec<Section>,
}

impl Layout {
    pub fn of(bytes: &[u8]) -> Layout {
        let elf = Elf::parse(bytes).expect("goblin parses the file");
        let h = &elf.header;
        let (phoff, phentsize) = (h.e_phoff as usize, usize::from(h.e_phentsize));
        let (shoff, shentsize) = (h.e_shoff as usize, usize::from(h.e_shentsize));
        let loads = (elf.program_headers.iter().enumerate())
            .filter(|(_, p)| p.p_type == PT_LOAD)
            .map(|(i, _)| phoff + i * phentsize)
            .collect();
        let load_contents = (elf.program_headers.iter())
            .filter(|p| p.p_type == PT_LOAD)
            .map(|p| p.p_offset as usize..(p.p_offset + p.p_filesz) as usize)
            .collect();
        let headers = [0..usize::from(h.e_ehsize), phoff..phoff + usize::from(h.e_phnum) * phentsize];
        let sections = (elf.section_headers.iter().enumerate())
            .map(|(i, s)| Section {
                name: elf.shdr_strtab.get_at(s.sh_name).unwrap_or("").to_owned(),
                offset: s.sh_offset as usize,
                size: s.sh_size as usize,
                header: shoff + i * shentsize,
            })
            .collect();
        Layout {
            is_64: elf.is_64,
            little: elf.little_endian,
            headers,
            load_contents,
            shoff,
            shstrndx: usize::from(h.e_shstrndx),
            loads,
            sections,
        }
    }

    pub fn section(&self, name: &str) -> &Section {
        self.sections.iter().find(|s| s.name == name).unwrap_or_else(|| panic!("no section {name}"))
    }

    /// Width of an address, offset or size.
    pub fn word(&self) -> usize {
        if self.is_64 { 8 } else { 4 }
    }

    /// Offset of a field within a section header: (ELF32, ELF64).
    pub fn sh_field(&self, offsets: (usize, usize)) -> usize {
        if self.is_64 { offsets.1 } else { offsets.0 }
    }

    /// Offset of the least significant byte of the `width`-byte field at `at`.
    pub fn low_byte(&self, at: usize, width: usize) -> usize {
        if self.little { at } else { at + width - 1 }
    }

    /// The `width`-byte field at `at`, in the file's byte order.
    pub fn get(&self, bytes: &[u8], at: usize, width: usize) -> u64 {
        (0..width).fold(0, |value, i| {
            let most_significant_first = if self.little { at + width - 1 - i } else { at + i };
            value << 8 | u64::from(bytes[most_significant_first])
        })
    }

    /// Writes `value` as the `width`-byte field at `at`, in the file's byte order.
    pub fn put(&self, bytes: &mut [u8], at: usize, width: usize, value: u64) {
        for i in 0..width {
            let byte = (value >> (8 * i)) as u8;
            let index = if self.little { at + i } else { at + width - 1 - i };
            bytes[index] = byte;
        }
    }
}
