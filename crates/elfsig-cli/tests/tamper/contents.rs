//! Bytes the verifier only hashes, so that only the digest catches a change: code and data, the
//! original section header and name tables the signer leaves unreferenced, and the padding it
//! adds.

use crate::common::layout::{Layout, SH_FLAGS, SH_OFFSET};
use crate::common::messages::{MODIFIED, Says, refused};
use crate::common::{Scratch, keys};
use crate::{flip, section_targets, tampered, targets};

#[test]
fn code_and_data_bytes() {
    let (keys, scratch) = (keys("a"), Scratch::new());
    for t in section_targets() {
        let l = Layout::of(&t.signed);
        for name in [".text", ".rodata", ".data"] {
            let s = l.section(name);
            assert!(s.size > 0, "{}: {name} is empty", t.name);
            for (which, at) in [("first", s.offset), ("middle", s.offset + s.size / 2), ("last", s.offset + s.size - 1)]
            {
                let file = format!("{}-{}-{which}", t.name, &name[1..]);
                refused(&keys, &scratch, &file, &tampered(t, flip(at)), Says::Exactly(MODIFIED));
            }
        }
        // A single bit, in the middle of the code.
        let text = l.section(".text");
        let bytes = tampered(t, |b| b[text.offset + text.size / 3] ^= 0x01);
        refused(&keys, &scratch, &format!("{}-text-bit", t.name), &bytes, Says::Exactly(MODIFIED));
    }
}

/// What the loadable segments hold, for every target, those without sections included: the
/// middle and the last byte of each `PT_LOAD`'s file image (outside the ELF header and program
/// header table), and a single bit.
#[test]
fn loaded_bytes() {
    let (keys, scratch) = (keys("a"), Scratch::new());
    for t in targets() {
        let l = Layout::of(&t.signed);
        let mut tried = 0;
        for (i, segment) in l.load_contents.iter().enumerate().filter(|(_, s)| !s.is_empty()) {
            assert!(segment.end <= t.original.len(), "{}: segment {i} covers appended bytes", t.name);
            let positions = [("middle", segment.start + segment.len() / 2), ("last", segment.end - 1)];
            for (which, at) in positions.into_iter().filter(|(_, at)| !l.headers.iter().any(|h| h.contains(at))) {
                let file = format!("{}-load{i}-{which}", t.name);
                refused(&keys, &scratch, &file, &tampered(t, flip(at)), Says::Exactly(MODIFIED));
                let bytes = tampered(t, |b| b[at] ^= 0x80);
                refused(&keys, &scratch, &format!("{file}-bit"), &bytes, Says::Exactly(MODIFIED));
                tried += 1;
            }
        }
        assert!(tried >= 2, "{}: only {tried} loaded bytes outside the headers", t.name);
    }
}

/// The signer leaves the original section header table and section-name table where they were,
/// unreferenced: they are still signed.
#[test]
fn the_unreferenced_original_tables() {
    let (keys, scratch) = (keys("a"), Scratch::new());
    for t in section_targets() {
        let old = Layout::of(&t.original);
        let new = Layout::of(&t.signed);
        assert!(old.shoff > 0 && old.shoff != new.shoff, "{}: the original table should be left behind", t.name);
        let w = old.word();
        // The original table's entry for .text, where nothing points any more.
        let text = old.section(".text").header;
        let names = &old.sections[old.shstrndx];
        assert_eq!(names.name, ".shstrtab");
        assert_ne!(names.offset, new.sections[new.shstrndx].offset, "{}: the name table was copied", t.name);
        let text_name = names.offset + t.original[names.offset..].windows(6).position(|w| w == b".text\0").unwrap();
        let cases = [
            ("old-text-sh_flags", old.low_byte(text + old.sh_field(SH_FLAGS), w)),
            ("old-text-sh_offset", old.low_byte(text + old.sh_field(SH_OFFSET), w)),
            ("old-null-section", old.shoff),
            ("old-shstrtab-text", text_name + 1),
            ("old-shstrtab-last", names.offset + names.size - 1),
        ];
        for (what, at) in cases {
            refused(&keys, &scratch, &format!("{}-{what}", t.name), &tampered(t, flip(at)), Says::Exactly(MODIFIED));
        }
    }
}

/// The zero bytes the signer adds to align what it appends are signed too.
#[test]
fn alignment_padding() {
    let (keys, scratch) = (keys("a"), Scratch::new());
    let (mut before_names, mut around_payload) = (0, 0);
    for t in targets() {
        let l = Layout::of(&t.signed);
        let payload = t.payload;
        let gaps = if t.has_sections() {
            let names = &l.sections[l.shstrndx];
            assert_eq!(l.section(".elfsig").offset, payload.offset);
            vec![
                ("before-names", t.original.len(), names.offset),
                ("before-payload", names.offset + names.size, payload.offset),
                ("before-table", payload.offset + payload.size, l.shoff),
            ]
        } else {
            vec![
                ("before-payload", t.original.len(), payload.offset),
                ("before-trailer", payload.offset + payload.size, t.trailer_at()),
            ]
        };
        for (gap, start, end) in gaps {
            assert!(start <= end && end - start < 8, "{}: {gap} is {start}..{end}", t.name);
            assert!(t.signed[start..end].iter().all(|&b| b == 0), "{}: {gap} is not zeros", t.name);
            for at in start..end {
                let file = format!("{}-pad-{gap}-{at}", t.name);
                refused(&keys, &scratch, &file, &tampered(t, flip(at)), Says::Exactly(MODIFIED));
            }
            if gap == "before-names" {
                before_names += end - start;
            }
            if !t.has_sections() {
                around_payload += end - start;
            }
        }
    }
    assert!(before_names > 0, "no target has padding before the name table");
    assert!(around_payload > 0, "no target without sections has padding around its payload");
}
