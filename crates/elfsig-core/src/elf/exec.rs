//! What exec makes of an ELF file: the interpreter binfmt_elf will load after it (`PT_INTERP`),
//! whether the file is itself a dynamic loader, and whether exec gives it memory writable and
//! executable: a stack, or a segment.
//!
//! A dynamic loader (`ld.so`) is a shared object with no interpreter of its own. Run directly
//! (`ld.so ./program`), it maps and runs any file it is given, past every exec check; a policy
//! that wants to close that door refuses such direct execs. Static PIE programs are shared
//! objects without an interpreter too, but they carry no `DT_SONAME`: the loader does, as
//! every library does, because programs name it.

use super::super::endian::Fields;
use super::super::{ByteRange, Class, ElfError, Error, ReadAt};
use super::{FileHeader, ProgramTable, SectionTable, PN_XNUM};

/// `PT_LOAD`: a segment exec maps.
pub const PT_LOAD: u32 = 1;
/// `PT_DYNAMIC`: the dynamic section.
pub const PT_DYNAMIC: u32 = 2;
/// `PT_INTERP`: the ELF interpreter's path.
pub const PT_INTERP: u32 = 3;
/// `PT_GNU_STACK`: what the stack's permissions are to be.
pub const PT_GNU_STACK: u32 = 0x6474_e551;
/// `PF_X`: a segment's executable flag.
pub const PF_X: u32 = 1;
/// `PF_W`: a segment's writable flag.
pub const PF_W: u32 = 2;
/// `e_type` of shared objects (and of PIE programs).
pub const ET_DYN: u16 = 3;
/// `DT_NULL`: ends the dynamic section.
pub const DT_NULL: u64 = 0;
/// `DT_SONAME`: the shared object's name.
pub const DT_SONAME: u64 = 14;
/// Longest interpreter path binfmt_elf accepts (`PATH_MAX`, with its NUL).
pub const MAX_INTERP_LEN: u64 = 4096;
/// Most dynamic entries read looking for `DT_SONAME` (real files have a few dozen).
pub const MAX_DYNAMIC_ENTRIES: u64 = 1024;

/// How exec treats a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExecInfo {
    /// The bytes of the first `PT_INTERP` (the interpreter's path and its NUL), if any.
    pub interpreter: Option<ByteRange>,
    /// A shared object with a `DT_SONAME` and no interpreter: a dynamic loader.
    pub loader: bool,
    /// Whether exec gives it an executable stack, as binfmt_elf decides: its last
    /// `PT_GNU_STACK` has `PF_X`, or a 32-bit file has none, and then the kernel makes all the
    /// readable memory it maps executable too (`READ_IMPLIES_EXEC`).
    pub executable_stack: bool,
    /// Whether a `PT_LOAD` segment is both writable and executable: binfmt_elf maps it so.
    pub writable_executable: bool,
}

impl ExecInfo {
    /// Reads what exec needs from a file of `file_len` bytes. A `PT_INTERP` binfmt_elf would
    /// refuse (shorter than 2 bytes, longer than [`MAX_INTERP_LEN`], past the end of the file)
    /// is an error.
    pub fn read(file: &mut dyn ReadAt, file_len: u64) -> Result<Self, Error> {
        let header = FileHeader::read(file, file_len)?;
        let sections = if header.e_phnum == PN_XNUM { SectionTable::read(&header, file, file_len)? } else { None };
        let table = ProgramTable::new(&header, sections.as_ref(), file_len)?;
        let mut interpreter = None;
        let mut dynamic = None;
        let mut stack = None;
        let mut writable_executable = false;
        for index in 0..table.count {
            let segment = table.entry(file, index)?;
            match segment.p_type {
                PT_INTERP if interpreter.is_none() => {
                    let range = segment.file_range();
                    if range.len < 2 || range.len > MAX_INTERP_LEN || !range.within(file_len) {
                        return Err(ElfError::BadInterpreter.into());
                    }
                    interpreter = Some(range);
                }
                PT_DYNAMIC if dynamic.is_none() => dynamic = Some(segment.file_range()),
                // The last one decides, as binfmt_elf reads them.
                PT_GNU_STACK => stack = Some(segment.p_flags & PF_X != 0),
                PT_LOAD if segment.p_flags & (PF_W | PF_X) == PF_W | PF_X => writable_executable = true,
                _ => {}
            }
        }
        let loader = match (interpreter, dynamic) {
            (None, Some(dynamic)) if header.e_type == ET_DYN => has_soname(file, file_len, &header, dynamic)?,
            _ => false,
        };
        let executable_stack = stack.unwrap_or(header.class == Class::Elf32);
        Ok(ExecInfo { interpreter, loader, executable_stack, writable_executable })
    }
}

/// Whether the dynamic entries in `dynamic` hold a `DT_SONAME` before their `DT_NULL`. Entries
/// past the end of the file are not there to find.
fn has_soname(file: &mut dyn ReadAt, file_len: u64, header: &FileHeader, dynamic: ByteRange) -> Result<bool, Error> {
    let entry_len: u64 = match header.class {
        Class::Elf32 => 8,
        Class::Elf64 => 16,
    };
    let wide = header.class.is_64();
    let available = file_len.saturating_sub(dynamic.offset).min(dynamic.len);
    let count = (available.checked_div(entry_len).unwrap_or(0)).min(MAX_DYNAMIC_ENTRIES);
    let mut buf = [0u8; 16];
    let bytes = buf.get_mut(..usize::try_from(entry_len).map_err(|_| ElfError::TooLarge)?).ok_or(Error::END)?;
    for index in 0..count {
        let offset =
            index.checked_mul(entry_len).and_then(|at| dynamic.offset.checked_add(at)).ok_or(ElfError::TooLarge)?;
        file.read_exact_at(offset, bytes)?;
        let tag = Fields { bytes, endian: header.endian }.word(0, wide).ok_or(Error::END)?;
        match tag {
            DT_SONAME => return Ok(true),
            DT_NULL => return Ok(false),
            _ => {}
        }
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    /// A minimal ELF64 little-endian file: header, `phdrs` program headers after it, and
    /// `body` after them.
    fn elf(e_type: u16, phdrs: &[(u32, u64, u64)], body: &[u8]) -> Vec<u8> {
        let mut with_stack = phdrs.to_vec();
        with_stack.push((PT_GNU_STACK, 0, 0));
        elf_with(e_type, &with_stack, 6, body)
    }

    /// [`elf`] with exactly the program headers given, `PT_GNU_STACK`'s flags being
    /// `stack_flags`.
    fn elf_with(e_type: u16, phdrs: &[(u32, u64, u64)], stack_flags: u32, body: &[u8]) -> Vec<u8> {
        let mut out = std::vec![0u8; 64];
        out[..4].copy_from_slice(b"\x7fELF");
        out[4] = 2;
        out[5] = 1;
        out[6] = 1;
        out[16..18].copy_from_slice(&e_type.to_le_bytes());
        out[18..20].copy_from_slice(&62u16.to_le_bytes());
        out[32..40].copy_from_slice(&64u64.to_le_bytes());
        out[52..54].copy_from_slice(&64u16.to_le_bytes());
        out[54..56].copy_from_slice(&56u16.to_le_bytes());
        out[56..58].copy_from_slice(&u16::try_from(phdrs.len()).unwrap().to_le_bytes());
        for (p_type, offset, len) in phdrs {
            let mut phdr = [0u8; 56];
            phdr[..4].copy_from_slice(&p_type.to_le_bytes());
            if *p_type == PT_GNU_STACK {
                phdr[4..8].copy_from_slice(&stack_flags.to_le_bytes());
            }
            phdr[8..16].copy_from_slice(&offset.to_le_bytes());
            phdr[32..40].copy_from_slice(&len.to_le_bytes());
            out.extend_from_slice(&phdr);
        }
        out.extend_from_slice(body);
        out
    }

    fn dynamic(tags: &[u64]) -> Vec<u8> {
        tags.iter().flat_map(|t| t.to_le_bytes().into_iter().chain(0u64.to_le_bytes())).collect()
    }

    fn info(bytes: &[u8]) -> Result<ExecInfo, Error> {
        let mut file = bytes;
        ExecInfo::read(&mut file, u64::try_from(bytes.len()).unwrap())
    }

    const BODY_AT: u64 = 64 + 56 * 3;

    #[test]
    fn a_shared_object_with_a_soname_and_no_interpreter_is_a_loader() {
        let body = dynamic(&[1, DT_SONAME, DT_NULL]);
        let loader = elf(ET_DYN, &[(1, 0, 64), (PT_DYNAMIC, BODY_AT, 48)], &body);
        assert_eq!(
            info(&loader),
            Ok(ExecInfo { interpreter: None, loader: true, executable_stack: false, writable_executable: false })
        );
    }

    #[test]
    fn static_pie_programs_and_executables_are_not_loaders() {
        // Static PIE: ET_DYN, PT_DYNAMIC, no DT_SONAME before DT_NULL.
        let body = dynamic(&[1, DT_NULL, DT_SONAME]);
        let static_pie = elf(ET_DYN, &[(1, 0, 64), (PT_DYNAMIC, BODY_AT, 48)], &body);
        assert_eq!(info(&static_pie).map(|i| i.loader), Ok(false));
        // The same dynamic section in an ET_EXEC file.
        let body = dynamic(&[DT_SONAME, DT_NULL]);
        let exec = elf(2, &[(1, 0, 64), (PT_DYNAMIC, BODY_AT, 32)], &body);
        assert_eq!(info(&exec).map(|i| i.loader), Ok(false));
    }

    #[test]
    fn a_program_with_an_interpreter_is_not_a_loader() {
        let mut body = dynamic(&[DT_SONAME, DT_NULL]);
        let interp_at = BODY_AT + u64::try_from(body.len()).unwrap();
        body.extend_from_slice(b"/lib/ld.so\0");
        let program = elf(ET_DYN, &[(PT_DYNAMIC, BODY_AT, 32), (PT_INTERP, interp_at, 11)], &body);
        assert_eq!(
            info(&program),
            Ok(ExecInfo {
                interpreter: Some(ByteRange { offset: interp_at, len: 11 }),
                loader: false,
                executable_stack: false,
                writable_executable: false
            })
        );
    }

    #[test]
    fn interpreters_binfmt_elf_would_refuse_are_errors() {
        let body = b"/x\0";
        for (offset, len) in [(BODY_AT, 1), (BODY_AT, MAX_INTERP_LEN + 1), (BODY_AT, 4), (u64::MAX, 3)] {
            let program = elf(2, &[(PT_INTERP, offset, len)], body);
            assert_eq!(info(&program), Err(ElfError::BadInterpreter.into()), "{offset} {len}");
        }
    }

    #[test]
    fn dynamic_entries_past_the_end_or_beyond_the_bound_are_not_read() {
        // The segment claims more than the file holds, and a huge count: only what is there is read.
        let body = dynamic(&[1, 1]);
        let truncated = elf(ET_DYN, &[(PT_DYNAMIC, BODY_AT, u64::MAX)], &body);
        assert_eq!(info(&truncated).map(|i| i.loader), Ok(false));
        let beyond = elf(ET_DYN, &[(PT_DYNAMIC, u64::MAX - 4, 64)], &body);
        assert_eq!(info(&beyond).map(|i| i.loader), Ok(false));
        let mut far = std::vec![1u64; usize::try_from(MAX_DYNAMIC_ENTRIES).unwrap()];
        far.push(DT_SONAME);
        let body = dynamic(&far);
        let long = elf(ET_DYN, &[(PT_DYNAMIC, BODY_AT - 2 * 56, u64::try_from(body.len()).unwrap())], &body);
        assert_eq!(info(&long).map(|i| i.loader), Ok(false));
    }

    #[test]
    fn the_stack_is_executable_as_binfmt_elf_makes_it() {
        let stack =
            |phdrs: &[(u32, u64, u64)], flags: u32| info(&elf_with(2, phdrs, flags, b"")).map(|i| i.executable_stack);
        let gnu_stack = (PT_GNU_STACK, 0, 0);
        assert_eq!(stack(&[gnu_stack], 6), Ok(false));
        assert_eq!(stack(&[gnu_stack], 7), Ok(true));
        // The last PT_GNU_STACK decides, as binfmt_elf reads them.
        let (not_x, x) = ((PT_GNU_STACK, 0, 0), (PT_GNU_STACK, 1, 0));
        let flags = |phdrs: &[(u32, u64, u64)]| {
            let mut bytes = elf_with(2, phdrs, 0, b"");
            // elf_with gives every PT_GNU_STACK the same flags: set each from its offset.
            for (i, (_, offset, _)) in phdrs.iter().enumerate() {
                let at = 64 + 56 * i + 4;
                bytes[at..at + 4].copy_from_slice(&(if *offset == 1 { 7u32 } else { 6 }).to_le_bytes());
            }
            info(&bytes).map(|i| i.executable_stack)
        };
        assert_eq!(flags(&[not_x, x]), Ok(true));
        assert_eq!(flags(&[x, not_x]), Ok(false));
        // None: a 64-bit program's stack is not executable.
        assert_eq!(stack(&[(1, 0, 64)], 7), Ok(false));
        // None in a 32-bit file: READ_IMPLIES_EXEC.
        let mut elf32 = std::vec![0u8; 52];
        elf32[..4].copy_from_slice(b"\x7fELF");
        elf32[4] = 1;
        elf32[5] = 1;
        elf32[6] = 1;
        elf32[16..18].copy_from_slice(&2u16.to_le_bytes());
        elf32[18..20].copy_from_slice(&3u16.to_le_bytes());
        elf32[40..42].copy_from_slice(&52u16.to_le_bytes());
        elf32[42..44].copy_from_slice(&32u16.to_le_bytes());
        assert_eq!(info(&elf32).map(|i| i.executable_stack), Ok(true));
    }

    #[test]
    fn a_segment_both_writable_and_executable_is_seen() {
        // PT_LOAD segments with the flags given, each set by hand (elf_with writes none).
        let segments = |flags: &[u32]| {
            let phdrs: Vec<(u32, u64, u64)> = flags.iter().map(|_| (PT_LOAD, 0, 0)).collect();
            let mut bytes = elf_with(2, &phdrs, 6, b"");
            for (i, f) in flags.iter().enumerate() {
                bytes[64 + 56 * i + 4..64 + 56 * i + 8].copy_from_slice(&f.to_le_bytes());
            }
            info(&bytes).map(|i| i.writable_executable)
        };
        // Read-only, read and execute, read and write: as every toolchain lays a program out.
        assert_eq!(segments(&[4, 5, 6]), Ok(false));
        assert_eq!(segments(&[4, 7, 6]), Ok(true));
        assert_eq!(segments(&[PF_W | PF_X]), Ok(true));
        // Only PT_LOAD counts: a writable and executable PT_GNU_STACK is the stack's question.
        assert_eq!(info(&elf_with(2, &[(PT_GNU_STACK, 0, 0)], 7, b"")).map(|i| i.writable_executable), Ok(false));
    }
}
