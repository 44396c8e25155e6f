//! ELF structures: the file header, section and program header tables, and validation of a whole
//! file's layout.
//!
//! 32- and 64-bit files of either byte order are handled by the same types: fields are widened to
//! `u64` on reading and checked to fit on writing.

mod exec;
mod file;
mod header;
mod section;
mod segment;

pub use exec::{
    ExecInfo, DT_NULL, DT_SONAME, ET_DYN, MAX_DYNAMIC_ENTRIES, MAX_INTERP_LEN, PF_W, PF_X, PT_DYNAMIC, PT_GNU_STACK,
    PT_INTERP, PT_LOAD,
};
pub use file::ElfFile;
pub use header::{Class, FileHeader, SectionFields};
pub use section::{SectionHeader, SectionTable};
pub use segment::{ProgramHeader, ProgramTable};

/// `e_ident` magic.
pub const ELF_MAGIC: [u8; 4] = *b"\x7fELF";
/// Section index meaning "no section".
pub const SHN_UNDEF: u16 = 0;
/// First reserved section index; counts and indexes from here on are stored in section 0.
pub const SHN_LORESERVE: u16 = 0xff00;
/// `e_shstrndx` value meaning "the index is in section 0's `sh_link`".
pub const SHN_XINDEX: u16 = 0xffff;
/// `e_phnum` value meaning "the count is in section 0's `sh_info`".
pub const PN_XNUM: u16 = 0xffff;
/// Section type of section 0 and of unused entries.
pub const SHT_NULL: u32 = 0;
/// Section type of sections holding program-defined contents.
pub const SHT_PROGBITS: u32 = 1;
/// Section type of string tables.
pub const SHT_STRTAB: u32 = 3;
/// Section type of sections that occupy no file space.
pub const SHT_NOBITS: u32 = 8;
/// Section flag: occupies memory at run time.
pub const SHF_ALLOC: u64 = 2;
