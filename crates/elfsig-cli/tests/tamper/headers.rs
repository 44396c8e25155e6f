//! The headers that say how the file is laid out and loaded: the ELF header, the program
//! headers and the section headers (those the signer copies, and the `.elfsig` section's fields
//! that do not locate the payload).

use crate::common::layout::{Layout, SH_ADDR, SH_ADDRALIGN, SH_FLAGS};
use crate::common::messages::{MALFORMED_ELF, MODIFIED, SECTION_COUNTS, Says, refused};
use crate::common::{Scratch, keys};
use crate::{flip, section_targets, tampered, targets, trailer_targets};

#[test]
fn elf_header_bytes() {
    let (keys, scratch) = (keys("a"), Scratch::new());
    for t in targets() {
        let l = Layout::of(&t.signed);
        let e_flags = if l.is_64 { 48 } else { 36 };
        let cases = [("ei_osabi", 7), ("e_entry", l.low_byte(24, l.word())), ("e_flags", l.low_byte(e_flags, 4))];
        for (field, at) in cases {
            let name = format!("{}-{field}", t.name);
            refused(&keys, &scratch, &name, &tampered(t, flip(at)), Says::Exactly(MODIFIED));
        }
    }
    // The signer leaves the section-table fields of a file without a section header table as they
    // were (e_shoff, e_shnum and e_shstrndx 0); changing them is refused too. e_shentsize means
    // nothing without a table, so only the digest catches it.
    for t in trailer_targets() {
        let l = Layout::of(&t.signed);
        let (e_shoff, e_shentsize) = if l.is_64 { (40, 58) } else { (32, 46) };
        let cases = [
            ("e_shoff", l.low_byte(e_shoff, l.word()), Says::StartsWith(MALFORMED_ELF)),
            ("e_shentsize", l.low_byte(e_shentsize, 2), Says::Exactly(MODIFIED)),
            ("e_shnum", l.low_byte(e_shentsize + 2, 2), Says::Exactly(SECTION_COUNTS)),
            ("e_shstrndx", l.low_byte(e_shentsize + 4, 2), Says::Exactly(SECTION_COUNTS)),
        ];
        assert_eq!(l.shoff, 0, "{}", t.name);
        for (field, at, says) in cases {
            let bytes = tampered(t, |b| b[at] ^= 0x01);
            refused(&keys, &scratch, &format!("{}-{field}", t.name), &bytes, says);
        }
    }
}

#[test]
fn program_header_bytes() {
    let (keys, scratch) = (keys("a"), Scratch::new());
    for t in targets() {
        let l = Layout::of(&t.signed);
        assert!(!l.loads.is_empty(), "{}: no PT_LOAD", t.name);
        let p_flags = if l.is_64 { 4 } else { 24 };
        for (i, &header) in l.loads.iter().enumerate() {
            // PF_W: a writable text segment is exactly what an attacker would want.
            let at = l.low_byte(header + p_flags, 4);
            let bytes = tampered(t, |b| b[at] ^= 0x02);
            refused(&keys, &scratch, &format!("{}-load{i}-p_flags", t.name), &bytes, Says::Exactly(MODIFIED));
        }
    }
}

#[test]
fn section_header_bytes() {
    let (keys, scratch) = (keys("a"), Scratch::new());
    for t in section_targets() {
        let l = Layout::of(&t.signed);
        assert!(l.shoff >= t.original.len(), "{}: e_shoff points into the original, not the new table", t.name);
        let w = l.word();
        let text = l.section(".text").header;
        let signature = l.section(".elfsig").header;
        let cases = [
            ("text-sh_flags", l.low_byte(text + l.sh_field(SH_FLAGS), w), 0x01),
            ("text-sh_addr", l.low_byte(text + l.sh_field(SH_ADDR), w), 0x10),
            ("elfsig-sh_addralign", l.low_byte(signature + l.sh_field(SH_ADDRALIGN), w), 0x18),
            ("elfsig-sh_name", l.low_byte(signature, 4), 0x01),
        ];
        for (field, at, bits) in cases {
            let bytes = tampered(t, |b| b[at] ^= bits);
            refused(&keys, &scratch, &format!("{}-{field}", t.name), &bytes, Says::Exactly(MODIFIED));
        }
    }
}
