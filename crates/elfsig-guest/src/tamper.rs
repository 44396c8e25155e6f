//! Finding things in a signed file with elfsig-core, to tamper with them: sections by name, the
//! program and section header tables, the payload; and every way of tampering the tests try, on
//! programs and on libraries alike.

use elfsig_core::ElfFile;
use elfsig_guest::harness::{ensure, read};

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

/// A tampered variant: its case name, its bytes (or why they could not be made), and the counter
/// its refusal must bump.
pub(crate) type Variant = (&'static str, Result<Vec<u8>, String>, &'static str);

/// Every tamper class, applied to the signed file at `path`; `other` is another file signed
/// with the same key, whose signature is pasted over this one's.
pub(crate) fn variants(path: &str, other: &str) -> Result<Vec<Variant>, String> {
    let signed = read(path)?;
    let map = Map::of(&signed).map_err(|e| format!("{path}: {e}"))?;
    let mid = |(offset, size): (usize, usize)| offset + size / 2;
    let payload = map.payload().map_err(|e| format!("{path}: {e}"))?;
    let other = read(other).ok().and_then(|b| Map::of(&b).ok().map(|m| (b, m)));

    let mut variants: Vec<Variant> = vec![
        ("tampered_elf_header", Ok(flip(&signed, 24)), "modified"),
        ("tampered_program_headers", Ok(flip(&signed, map.phoff + 4)), "modified"),
        ("tampered_code", map.section(".text").map(|s| flip(&signed, mid(s))), "modified"),
        ("tampered_rodata", map.section(".rodata").map(|s| flip(&signed, mid(s))), "modified"),
        ("tampered_data", map.section(".data").map(|s| flip(&signed, mid(s))), "modified"),
        ("tampered_section_headers", Ok(flip(&signed, map.shoff + 64 + 8)), "modified"),
        ("tampered_signature_value", Ok(flip(&signed, payload.0 + payload.1 - 1)), "bad_signature"),
        ("tampered_record_digest", Ok(flip(&signed, payload.0 + 64)), "bad_signature"),
        ("tampered_record_magic", Ok(flip(&signed, payload.0)), "unsigned"),
        ("appended_byte", Ok([&signed[..], b"x"].concat()), "modified"),
        ("truncated_byte", Ok(signed[..signed.len() - 1].to_vec()), "malformed_elf"),
    ];
    if let Some((other_bytes, other_map)) = &other {
        // The other file's signature pasted over this one's (same key, so the same size).
        let moved = other_map.payload().and_then(|(offset, size)| {
            ensure(size == payload.1, || "payloads differ in size".into())?;
            let mut bytes = signed.clone();
            bytes[payload.0..payload.0 + size].copy_from_slice(&other_bytes[offset..offset + size]);
            Ok(bytes)
        });
        variants.push(("signature_moved_from_another_file", moved, "modified"));
    }
    Ok(variants)
}
