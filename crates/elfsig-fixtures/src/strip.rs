//! Removing the section header table from a loadable ELF file, as `sstrip`-style tools do.

use crate::elf::{Class, Codec, HeaderFields};

/// Returns `elf` without its section header table: `e_shoff`, `e_shnum` and `e_shstrndx` set to
/// 0 and the file truncated right after the last byte that any program header's file image
/// (`p_offset + p_filesz`) covers, which drops the non-allocated sections (`.symtab`,
/// `.comment`, ...), `.shstrtab` and the table itself. The result still runs.
///
/// Works for either class and byte order. Fails on a file that is not ELF, is truncated, or has
/// no program headers (nothing would be left to describe the contents).
pub fn strip_section_headers(elf: &[u8]) -> Result<Vec<u8>, String> {
    let codec = Codec::of_file(elf)?;
    let f = HeaderFields::of(codec.class);
    let short = || "ELF header is truncated".to_string();
    let phoff = codec.get_word(elf, f.phoff).ok_or_else(short)?;
    let phentsize = u64::from(codec.get_u16(elf, f.phentsize).ok_or_else(short)?);
    let phnum = u64::from(codec.get_u16(elf, f.phnum).ok_or_else(short)?);
    if phnum == 0 || phoff == 0 {
        return Err("no program headers: stripping the section headers would leave nothing".into());
    }
    if phnum == 0xffff {
        return Err("extended program header numbering (PN_XNUM) is not supported".into());
    }
    // Field offsets within one program header.
    let (offset_at, filesz_at) = match codec.class {
        Class::Elf32 => (4, 16),
        Class::Elf64 => (8, 32),
    };
    let table_end = phoff.checked_add(phnum * phentsize).ok_or("program header table overflows")?;
    let mut end = table_end.max(codec.ehsize());
    for i in 0..phnum {
        let ph = phoff + i * phentsize;
        let bad = || format!("program header {i} lies outside the file");
        let offset = codec.get_word(elf, ph + offset_at).ok_or_else(bad)?;
        let filesz = codec.get_word(elf, ph + filesz_at).ok_or_else(bad)?;
        let seg_end = offset.checked_add(filesz).ok_or_else(|| format!("segment {i} overflows"))?;
        end = end.max(seg_end);
    }
    if end > elf.len() as u64 {
        return Err(format!("segments cover {end} bytes but the file has only {}", elf.len()));
    }
    let mut out = elf[..usize::try_from(end).map_err(|e| e.to_string())?].to_vec();
    codec.set_word(&mut out, f.shoff, 0).ok_or_else(short)?;
    codec.set_u16(&mut out, f.shnum, 0).ok_or_else(short)?;
    codec.set_u16(&mut out, f.shstrndx, 0).ok_or_else(short)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Kind, Sections, Spec, synth, synth_specs};

    #[test]
    fn stripping_a_synthetic_file_equals_generating_it_without_sections() {
        for spec in synth_specs() {
            if !spec.has_segments() || !spec.trailing.is_empty() {
                continue;
            }
            let stripped = strip_section_headers(&synth(&spec)).unwrap();
            let bare = synth(&spec.clone().sections(Sections::None));
            assert_eq!(stripped, bare, "{}", spec.name());
        }
    }

    #[test]
    fn refuses_objects_and_garbage() {
        let obj = synth(&Spec::new(crate::Class::Elf64, crate::Endian::Big).kind(Kind::Rel));
        assert!(strip_section_headers(&obj).is_err());
        assert!(strip_section_headers(b"not an elf file").is_err());
        assert!(strip_section_headers(&[]).is_err());
    }
}
