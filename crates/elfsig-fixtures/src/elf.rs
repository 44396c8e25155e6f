//! ELF vocabulary shared by the generator and the section-header stripper: file class, byte
//! order, the handful of constants this crate writes, and a codec that reads and writes fields in
//! a given class and byte order.

/// ELF file class: the width of addresses and offsets (`EI_CLASS`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Class {
    /// `ELFCLASS32`: 32-bit addresses and offsets.
    Elf32,
    /// `ELFCLASS64`: 64-bit addresses and offsets.
    Elf64,
}

/// ELF data encoding: the byte order of every multi-byte field (`EI_DATA`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Endian {
    /// `ELFDATA2LSB`: least significant byte first.
    Little,
    /// `ELFDATA2MSB`: most significant byte first.
    Big,
}

pub(crate) const ELFCLASS32: u8 = 1;
pub(crate) const ELFCLASS64: u8 = 2;
pub(crate) const ELFDATA2LSB: u8 = 1;
pub(crate) const ELFDATA2MSB: u8 = 2;
pub(crate) const EV_CURRENT: u8 = 1;

pub(crate) const ET_REL: u16 = 1;
pub(crate) const ET_EXEC: u16 = 2;
pub(crate) const ET_DYN: u16 = 3;

pub(crate) const EM_386: u16 = 3;
pub(crate) const EM_PPC: u16 = 20;
pub(crate) const EM_S390: u16 = 22;
pub(crate) const EM_X86_64: u16 = 62;

pub(crate) const PT_LOAD: u32 = 1;
pub(crate) const PT_GNU_STACK: u32 = 0x6474_e551;
pub(crate) const PF_X: u32 = 1;
pub(crate) const PF_W: u32 = 2;
pub(crate) const PF_R: u32 = 4;

pub(crate) const SHT_PROGBITS: u32 = 1;
pub(crate) const SHT_STRTAB: u32 = 3;
pub(crate) const SHT_NOBITS: u32 = 8;
pub(crate) const SHF_WRITE: u64 = 1;
pub(crate) const SHF_ALLOC: u64 = 2;
pub(crate) const SHF_EXECINSTR: u64 = 4;

/// First reserved section index; a section count or string-table index this large does not fit
/// in the ELF header and goes into section 0 instead.
pub(crate) const SHN_LORESERVE: usize = 0xff00;
/// `e_shstrndx` value meaning "the real index is in section 0's `sh_link`".
pub(crate) const SHN_XINDEX: u16 = 0xffff;

/// Reads and writes ELF fields of one class and byte order.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Codec {
    pub(crate) class: Class,
    pub(crate) endian: Endian,
}

impl Codec {
    /// Size of the ELF header.
    pub(crate) fn ehsize(self) -> u64 {
        match self.class {
            Class::Elf32 => 52,
            Class::Elf64 => 64,
        }
    }

    /// Size of one program header.
    pub(crate) fn phentsize(self) -> u64 {
        match self.class {
            Class::Elf32 => 32,
            Class::Elf64 => 56,
        }
    }

    /// Size of one section header.
    pub(crate) fn shentsize(self) -> u64 {
        match self.class {
            Class::Elf32 => 40,
            Class::Elf64 => 64,
        }
    }

    /// Size of an address or offset ("word" in this crate).
    pub(crate) fn word_size(self) -> u64 {
        match self.class {
            Class::Elf32 => 4,
            Class::Elf64 => 8,
        }
    }

    pub(crate) fn put_u16(self, out: &mut Vec<u8>, v: u16) {
        match self.endian {
            Endian::Little => out.extend_from_slice(&v.to_le_bytes()),
            Endian::Big => out.extend_from_slice(&v.to_be_bytes()),
        }
    }

    pub(crate) fn put_u32(self, out: &mut Vec<u8>, v: u32) {
        match self.endian {
            Endian::Little => out.extend_from_slice(&v.to_le_bytes()),
            Endian::Big => out.extend_from_slice(&v.to_be_bytes()),
        }
    }

    pub(crate) fn put_u64(self, out: &mut Vec<u8>, v: u64) {
        match self.endian {
            Endian::Little => out.extend_from_slice(&v.to_le_bytes()),
            Endian::Big => out.extend_from_slice(&v.to_be_bytes()),
        }
    }

    /// Writes an address, offset or size in the class's width. Panics if a 32-bit file is asked
    /// to hold a value that does not fit, which would be a bug in the generator.
    pub(crate) fn put_word(self, out: &mut Vec<u8>, v: u64) {
        match self.class {
            Class::Elf32 => {
                let v = u32::try_from(v).expect("value does not fit a 32-bit ELF field");
                self.put_u32(out, v);
            }
            Class::Elf64 => self.put_u64(out, v),
        }
    }

    fn array<const N: usize>(bytes: &[u8], at: u64) -> Option<[u8; N]> {
        let at = usize::try_from(at).ok()?;
        bytes.get(at..at.checked_add(N)?)?.try_into().ok()
    }

    pub(crate) fn get_u16(self, bytes: &[u8], at: u64) -> Option<u16> {
        let a = Self::array(bytes, at)?;
        Some(match self.endian {
            Endian::Little => u16::from_le_bytes(a),
            Endian::Big => u16::from_be_bytes(a),
        })
    }

    pub(crate) fn get_u32(self, bytes: &[u8], at: u64) -> Option<u32> {
        let a = Self::array(bytes, at)?;
        Some(match self.endian {
            Endian::Little => u32::from_le_bytes(a),
            Endian::Big => u32::from_be_bytes(a),
        })
    }

    pub(crate) fn get_u64(self, bytes: &[u8], at: u64) -> Option<u64> {
        let a = Self::array(bytes, at)?;
        Some(match self.endian {
            Endian::Little => u64::from_le_bytes(a),
            Endian::Big => u64::from_be_bytes(a),
        })
    }

    /// Reads an address, offset or size in the class's width.
    pub(crate) fn get_word(self, bytes: &[u8], at: u64) -> Option<u64> {
        match self.class {
            Class::Elf32 => self.get_u32(bytes, at).map(u64::from),
            Class::Elf64 => self.get_u64(bytes, at),
        }
    }

    /// Overwrites a 16-bit field in place.
    pub(crate) fn set_u16(self, bytes: &mut [u8], at: u64, v: u16) -> Option<()> {
        let mut tmp = Vec::with_capacity(2);
        self.put_u16(&mut tmp, v);
        self.overwrite(bytes, at, &tmp)
    }

    /// Overwrites an address, offset or size field in place.
    pub(crate) fn set_word(self, bytes: &mut [u8], at: u64, v: u64) -> Option<()> {
        let mut tmp = Vec::with_capacity(8);
        self.put_word(&mut tmp, v);
        self.overwrite(bytes, at, &tmp)
    }

    fn overwrite(self, bytes: &mut [u8], at: u64, new: &[u8]) -> Option<()> {
        let at = usize::try_from(at).ok()?;
        bytes.get_mut(at..at.checked_add(new.len())?)?.copy_from_slice(new);
        Some(())
    }

    /// Identifies the class and byte order of an ELF image from its `e_ident`.
    pub(crate) fn of_file(bytes: &[u8]) -> Result<Codec, String> {
        if bytes.get(..4) != Some(b"\x7fELF".as_slice()) {
            return Err("not an ELF file (bad magic)".into());
        }
        let class = match bytes.get(4) {
            Some(&ELFCLASS32) => Class::Elf32,
            Some(&ELFCLASS64) => Class::Elf64,
            other => return Err(format!("unknown ELF class {other:?}")),
        };
        let endian = match bytes.get(5) {
            Some(&ELFDATA2LSB) => Endian::Little,
            Some(&ELFDATA2MSB) => Endian::Big,
            other => return Err(format!("unknown ELF data encoding {other:?}")),
        };
        Ok(Codec { class, endian })
    }
}

/// Offsets of the ELF header fields this crate patches, for a given class.
#[derive(Clone, Copy, Debug)]
pub(crate) struct HeaderFields {
    pub(crate) phoff: u64,
    pub(crate) shoff: u64,
    pub(crate) phentsize: u64,
    pub(crate) phnum: u64,
    pub(crate) shnum: u64,
    pub(crate) shstrndx: u64,
}

impl HeaderFields {
    pub(crate) fn of(class: Class) -> HeaderFields {
        match class {
            Class::Elf32 => HeaderFields { phoff: 28, shoff: 32, phentsize: 42, phnum: 44, shnum: 48, shstrndx: 50 },
            Class::Elf64 => HeaderFields { phoff: 32, shoff: 40, phentsize: 54, phnum: 56, shnum: 60, shstrndx: 62 },
        }
    }
}

/// Rounds `v` up to a multiple of `align` (a power of two, or 0/1 for no alignment).
pub(crate) fn align_up(v: u64, align: u64) -> u64 {
    if align <= 1 { v } else { v.div_ceil(align) * align }
}
