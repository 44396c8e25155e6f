//! Tampering with signed files: whatever byte of a signed file changes (code, data, headers, the
//! tables the signer left unreferenced, padding, the trailer of a file without a section header
//! table, the signature itself) and whatever is added, removed or moved, `verify` fails with exit
//! status 1 and the message that says what is wrong.
//!
//! Every offset is found with goblin, an independent ELF parser, or read from the trailer by
//! hand, so that these tests do not trust elfsig-core's idea of where things are.

// The shared helpers are `pub` for every test crate that includes them.
#[allow(unreachable_pub)]
mod common;

use std::collections::HashMap;
use std::fs;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use common::{Anchor, Keys, Payload, Scratch, TRAILER_LEN, TRAILER_MAGIC, elfsig, find_payload, keys, sign, verify};
use elfsig_fixtures::{Built, Class, Endian, Sections, Spec, build, synth, system_binary};
use goblin::elf::Elf;
use goblin::elf::program_header::PT_LOAD;

const MODIFIED: &str = "modified since it was signed: digest mismatch";
const MOVED: &str = "modified since it was signed: its length or signature position is not what was signed";
const BAD_SIGNATURE: &str = "bad signature (the signature does not verify)";
const NOT_SIGNED: &str = "not signed";
const UNKNOWN_KEY: &str = "signed by an unknown key: signer is ";
const TRUNCATED: &str = "malformed ELF: section header table extends past the end of the file";
/// The PKCS#7 blob is not one DER structure filling the rest of the payload (no detail: the
/// blob is not even parsed).
const BAD_CMS: &str = "malformed signature: PKCS#7 signature is not well formed";
const MALFORMED_SIGNATURE: &str = "malformed signature: ";
// What a trailer that no longer describes the payload gives.
const PAYLOAD_SIZE: &str = "malformed signature: signature payload size out of bounds";
const PAYLOAD_PAST_END: &str =
    "malformed signature: signature payload extends past the end of the file or into its trailer";
const PAYLOAD_OVER_HEADERS: &str =
    "malformed signature: signature payload overlaps the ELF header, program headers or section headers";
const BAD_RECORD_MAGIC: &str = "malformed signature: signed record has a bad magic";
const SECTION_COUNTS: &str = "malformed ELF: section count fields are inconsistent";

/// Size of the record at the start of the payload.
const RECORD_LEN: usize = 96;
/// Offset of the digest in the record.
const RECORD_DIGEST: usize = 64;

/// Every message `verify` may give for a file it refuses (the core's `Reason` vocabulary).
const REJECTIONS: &[&str] = &[
    "not signed",
    "malformed ELF: ",
    "malformed signature: ",
    "signed by an unknown key",
    "bad signature (the signature does not verify)",
    "modified since it was signed: ",
];

/// Bounds of the payload size (docs/FORMAT.md).
const PAYLOAD_SIZES: std::ops::RangeInclusive<u64> = 160..=16480;

/// A signed file to tamper with.
struct Target {
    name: String,
    original: Vec<u8>,
    signed: Vec<u8>,
    /// Where the payload is, and what points at it.
    payload: Payload,
}

impl Target {
    /// Whether the file has a section header table (and so a `.elfsig` section) rather than a
    /// trailer.
    fn has_sections(&self) -> bool {
        self.payload.anchor == Anchor::Section
    }

    /// Offset of the trailer (files without a section header table).
    fn trailer_at(&self) -> usize {
        assert!(!self.has_sections(), "{} has no trailer", self.name);
        self.signed.len() - TRAILER_LEN
    }
}

/// The targets with a section header table, signed with an `.elfsig` section.
fn section_targets() -> impl Iterator<Item = &'static Target> {
    targets().iter().filter(|t| t.has_sections())
}

/// The targets without a section header table, signed with a trailer.
fn trailer_targets() -> impl Iterator<Item = &'static Target> {
    targets().iter().filter(|t| !t.has_sections())
}

/// The files every test tampers with, signed by `keys("a")` once per process: a dynamically
/// linked PIE (ls), a large one (bash), a static executable built with gcc when gcc is there, a
/// 32-bit big-endian file (other field offsets and byte order), and a file whose length is not
/// a multiple of 8 (so the signer pads before the name table). And files without a section
/// header table, which get a trailer: the static executable with its section headers stripped
/// (when gcc is there), a 32-bit big-endian one (the trailer is little-endian whatever the ELF
/// byte order) and one whose length is not a multiple of 8 (so the signer pads before the
/// payload).
fn targets() -> &'static [Target] {
    static TARGETS: OnceLock<Vec<Target>> = OnceLock::new();
    TARGETS.get_or_init(|| {
        let mut sources: Vec<(String, Vec<u8>)> = Vec::new();
        for name in ["ls", "bash"] {
            let path = system_binary(name).unwrap_or_else(|| panic!("/usr/bin/{name} is missing"));
            sources.push((name.to_owned(), fs::read(path).unwrap()));
        }
        for built in [Built::CStatic, Built::NoSectionHeaders] {
            match build(built) {
                Ok(path) => sources.push((built.name().to_owned(), fs::read(path).unwrap())),
                Err(why) => eprintln!("not tampering with {}: {why}", built.name()),
            }
        }
        let be32 = Spec::new(Class::Elf32, Endian::Big);
        let odd = Spec::new(Class::Elf64, Endian::Little).trailing(b"odd length");
        let be32_bare = be32.clone().sections(Sections::None);
        let odd_bare = odd.clone().sections(Sections::None);
        for spec in [be32, odd, be32_bare, odd_bare] {
            sources.push((spec.name(), synth(&spec)));
        }

        let keys = keys("a");
        let scratch = Scratch::new();
        sources
            .into_iter()
            .map(|(name, original)| {
                let path = scratch.write(&name, &original);
                sign(&keys, &path);
                verify(&keys, &path).success();
                let signed = fs::read(&path).unwrap();
                let payload = find_payload(&signed).unwrap_or_else(|| panic!("{name}: no payload found"));
                Target { name, original, signed, payload }
            })
            .collect()
    })
}

/// A section, as goblin sees it.
#[derive(Clone, Debug)]
struct Section {
    name: String,
    offset: usize,
    size: usize,
    /// File offset of the section's header.
    header: usize,
}

/// Where things are in an ELF file, found by goblin.
#[derive(Clone, Debug)]
struct Layout {
    is_64: bool,
    little: bool,
    /// The ELF header and the program header table.
    headers: [Range<usize>; 2],
    /// The file ranges of the `PT_LOAD` segments.
    load_contents: Vec<Range<usize>>,
    shoff: usize,
    shstrndx: usize,
    /// File offsets of the `PT_LOAD` program headers.
    loads: Vec<usize>,
    sections: Vec<Section>,
}

impl Layout {
    fn of(bytes: &[u8]) -> Layout {
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

    fn section(&self, name: &str) -> &Section {
        self.sections.iter().find(|s| s.name == name).unwrap_or_else(|| panic!("no section {name}"))
    }

    /// Width of an address, offset or size.
    fn word(&self) -> usize {
        if self.is_64 { 8 } else { 4 }
    }

    /// Offset of a field within a section header: (ELF32, ELF64).
    fn sh_field(&self, offsets: (usize, usize)) -> usize {
        if self.is_64 { offsets.1 } else { offsets.0 }
    }

    /// Offset of the least significant byte of the `width`-byte field at `at`.
    fn low_byte(&self, at: usize, width: usize) -> usize {
        if self.little { at } else { at + width - 1 }
    }

    fn get(&self, bytes: &[u8], at: usize, width: usize) -> u64 {
        (0..width).fold(0, |value, i| {
            let most_significant_first = if self.little { at + width - 1 - i } else { at + i };
            value << 8 | u64::from(bytes[most_significant_first])
        })
    }

    fn put(&self, bytes: &mut [u8], at: usize, width: usize, value: u64) {
        for i in 0..width {
            let byte = (value >> (8 * i)) as u8;
            let index = if self.little { at + i } else { at + width - 1 - i };
            bytes[index] = byte;
        }
    }
}

const SH_FLAGS: (usize, usize) = (8, 8);
const SH_ADDR: (usize, usize) = (12, 16);
const SH_OFFSET: (usize, usize) = (16, 24);
const SH_SIZE: (usize, usize) = (20, 32);
const SH_ADDRALIGN: (usize, usize) = (32, 48);

/// `target`'s signed bytes with `change` applied; the change must change something.
fn tampered(target: &Target, change: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let mut bytes = target.signed.clone();
    change(&mut bytes);
    assert!(bytes != target.signed, "{}: the tampering changed nothing", target.name);
    bytes
}

/// Flips every bit of the byte at `at`.
fn flip(at: usize) -> impl FnOnce(&mut Vec<u8>) {
    move |bytes: &mut Vec<u8>| bytes[at] ^= 0xff
}

/// What `verify` must say about a file.
#[derive(Clone, Copy, Debug)]
enum Says {
    /// Exactly this message.
    Exactly(&'static str),
    /// A message starting with this.
    StartsWith(&'static str),
}

impl Says {
    fn matches(self, message: &str) -> bool {
        match self {
            Says::Exactly(expected) => message == expected,
            Says::StartsWith(expected) => message.starts_with(expected),
        }
    }
}

/// What `verify` must say about `signed`, a file signed with a trailer, once its trailer names
/// a payload of `size` bytes at `offset`: the rules of docs/FORMAT.md, in the order it gives
/// (the size is bounded; the payload ends before the trailer, lies after the ELF header and the
/// program header table, and starts with the record magic). The trailer itself must be intact.
fn trailer_verdict(signed: &[u8], payload: &Payload, offset: u64, size: u64) -> Says {
    let trailer_at = (signed.len() - TRAILER_LEN) as u64;
    let headers = Layout::of(signed).headers;
    if !PAYLOAD_SIZES.contains(&size) {
        return Says::Exactly(PAYLOAD_SIZE);
    }
    let Some(end) = offset.checked_add(size).filter(|&end| end <= trailer_at) else {
        return Says::Exactly(PAYLOAD_PAST_END);
    };
    if headers.iter().any(|h| h.start < h.end && offset < h.end as u64 && (h.start as u64) < end) {
        return Says::Exactly(PAYLOAD_OVER_HEADERS);
    }
    if signed[offset as usize..][..8] != *b"ELFSIGRC" {
        return Says::Exactly(BAD_RECORD_MAGIC);
    }
    assert_ne!((offset, size), (payload.offset as u64, payload.size as u64), "the trailer is unchanged");
    if offset == payload.offset as u64 {
        // The right record, with a PKCS#7 blob cut short or followed by padding bytes.
        Says::Exactly(BAD_CMS)
    } else {
        Says::StartsWith(MALFORMED_SIGNATURE)
    }
}

/// What `verify` must say about `signed`, a file signed with a trailer, once the trailer byte at
/// `at` is flipped (all bits): a broken magic leaves no trailer, so the file is not signed; a
/// changed field is judged by [`trailer_verdict`].
fn trailer_flip_verdict(signed: &[u8], payload: &Payload, at: usize) -> Says {
    let trailer_at = signed.len() - TRAILER_LEN;
    assert!((trailer_at..signed.len()).contains(&at));
    assert_eq!(&signed[trailer_at..trailer_at + 8], TRAILER_MAGIC);
    if at < trailer_at + 8 {
        return Says::Exactly(NOT_SIGNED);
    }
    let mut trailer = signed[trailer_at..].to_vec();
    trailer[at - trailer_at] ^= 0xff;
    let field = |i: usize| u64::from_le_bytes(trailer[i..i + 8].try_into().unwrap());
    trailer_verdict(signed, payload, field(8), field(16))
}

/// Writes `bytes` as `name` and checks that `verify` refuses it: exit status 1, nothing on
/// standard output, and one line on standard error, `elfsig: FILE: <message>`.
fn refused(keys: &Keys, scratch: &Scratch, name: &str, bytes: &[u8], says: Says) -> String {
    let path = scratch.write(name, bytes);
    let assert = verify(keys, &path).code(1);
    let output = assert.get_output();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stdout.is_empty(), "{name}: verify printed {stdout:?}");
    let prefix = format!("elfsig: {}: ", path.display());
    let message = stderr
        .strip_suffix('\n')
        .and_then(|line| line.strip_prefix(&prefix))
        .filter(|m| !m.contains('\n'))
        .unwrap_or_else(|| panic!("{name}: unexpected standard error {stderr:?}"));
    match says {
        Says::Exactly(expected) => assert_eq!(message, expected, "{name}"),
        Says::StartsWith(expected) => {
            assert!(message.starts_with(expected), "{name}: {message:?} does not start with {expected:?}")
        }
    }
    assert!(says.matches(message));
    message.to_owned()
}

#[test]
fn the_targets_are_varied_enough() {
    let targets = targets();
    assert!(section_targets().count() >= 4, "{} targets with sections", section_targets().count());
    assert!(trailer_targets().count() >= 2, "{} targets without sections", trailer_targets().count());
    for kind in [section_targets().collect::<Vec<_>>(), trailer_targets().collect()] {
        let layouts: Vec<Layout> = kind.iter().map(|t| Layout::of(&t.signed)).collect();
        assert!(layouts.iter().any(|l| l.is_64 && l.little) && layouts.iter().any(|l| !l.is_64 && !l.little));
    }
    for target in targets {
        let (original, signed) = (&target.original, &target.signed);
        let layout = Layout::of(signed);
        assert!(signed.len() > original.len());
        let had_sections = Layout::of(original).shoff != 0;
        assert_eq!(target.has_sections(), had_sections, "{}: what points at the payload", target.name);
        if had_sections {
            assert_eq!(layout.sections.last().unwrap().name, ".elfsig", "{}", target.name);
        } else {
            // The header untouched, no section header table, the trailer at the end.
            assert!(signed.starts_with(original), "{}: the original changed", target.name);
            assert_eq!((layout.shoff, layout.sections.len()), (0, 0), "{}", target.name);
            let at = target.trailer_at();
            assert_eq!(&signed[at..at + 8], TRAILER_MAGIC, "{}", target.name);
            assert!(target.payload.offset >= original.len() && target.payload.range().end <= at, "{}", target.name);
        }
    }
}

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
            ("e_shoff", l.low_byte(e_shoff, l.word()), Says::StartsWith("malformed ELF: ")),
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

#[test]
fn signature_section_header_that_no_longer_describes_the_payload() {
    let (keys, scratch) = (keys("a"), Scratch::new());
    for t in section_targets() {
        let l = Layout::of(&t.signed);
        let w = l.word();
        let header = l.section(".elfsig").header;
        let (offset_at, size_at) = (header + l.sh_field(SH_OFFSET), header + l.sh_field(SH_SIZE));
        let (offset, size) = (l.get(&t.signed, offset_at, w), l.get(&t.signed, size_at, w));

        // Moved: the record magic is no longer where the section starts. Moved later, the section
        // may also reach into the section header table, which makes the file malformed.
        for (delta, why) in [(8i64, "later"), (-8, "earlier"), (1, "later-by-1")] {
            let moved = offset.checked_add_signed(delta).unwrap();
            let says = if moved + size > l.shoff as u64 {
                Says::StartsWith("malformed ELF: section ")
            } else {
                Says::Exactly(NOT_SIGNED)
            };
            let bytes = tampered(t, |b| l.put(b, offset_at, w, moved));
            refused(&keys, &scratch, &format!("{}-elfsig-{why}", t.name), &bytes, says);
        }
        // Shortened: the PKCS#7 blob loses its last byte.
        let bytes = tampered(t, |b| l.put(b, size_at, w, size - 1));
        refused(&keys, &scratch, &format!("{}-elfsig-shorter", t.name), &bytes, Says::Exactly(BAD_CMS));
        // Lengthened: whatever follows is not part of the blob.
        let bytes = tampered(t, |b| l.put(b, size_at, w, size + 1));
        let file = format!("{}-elfsig-longer", t.name);
        refused(&keys, &scratch, &file, &bytes, Says::StartsWith(MALFORMED_SIGNATURE));
        // Made loadable, or of another type: no longer a signature section at all.
        let flags = l.low_byte(header + l.sh_field(SH_FLAGS), w);
        let bytes = tampered(t, |b| b[flags] |= 0x02);
        refused(&keys, &scratch, &format!("{}-elfsig-alloc", t.name), &bytes, Says::Exactly(NOT_SIGNED));
        let sh_type = header + 4;
        let bytes = tampered(t, |b| l.put(b, sh_type, 4, 7));
        refused(&keys, &scratch, &format!("{}-elfsig-note", t.name), &bytes, Says::Exactly(NOT_SIGNED));
    }
}

/// Every byte of the trailer of a file without a section header table matters: a broken magic
/// leaves the file unsigned, a changed offset or length no longer describes the payload.
#[test]
fn trailer_bytes() {
    let (keys, scratch) = (keys("a"), Scratch::new());
    for t in trailer_targets() {
        let at = t.trailer_at();
        let mut said = Vec::new();
        for i in 0..TRAILER_LEN {
            let says = trailer_flip_verdict(&t.signed, &t.payload, at + i);
            let bytes = tampered(t, flip(at + i));
            said.push(refused(&keys, &scratch, &format!("{}-trailer-{i}", t.name), &bytes, says));
        }
        // Whatever the values, the magic's bytes unsign the file and the fields' bytes break it.
        assert!(said[..8].iter().all(|m| m == NOT_SIGNED), "{}: {said:?}", t.name);
        assert!(said[8..].iter().all(|m| m.starts_with(MALFORMED_SIGNATURE)), "{}: {said:?}", t.name);
        // A single bit of the magic.
        let bytes = tampered(t, |b| b[at + 7] ^= 0x01);
        refused(&keys, &scratch, &format!("{}-trailer-magic-bit", t.name), &bytes, Says::Exactly(NOT_SIGNED));
    }
}

#[test]
fn a_trailer_that_no_longer_describes_the_payload() {
    let (keys, scratch) = (keys("a"), Scratch::new());
    for t in trailer_targets() {
        let at = t.trailer_at();
        let (offset, size) = (t.payload.offset as u64, t.payload.size as u64);
        let padding_after = (at - t.payload.range().end) as u64;
        assert!(padding_after < 8, "{}: {padding_after} bytes between the payload and the trailer", t.name);
        let headers_end = Layout::of(&t.signed).headers[1].end as u64;
        let cases = [
            // Moved: past the trailer, into the original or the padding before the payload, onto
            // the headers, or by a byte.
            ("later", offset + 8, size, Says::Exactly(PAYLOAD_PAST_END)),
            ("far-later", u64::MAX - 3, size, Says::Exactly(PAYLOAD_PAST_END)),
            ("earlier", offset - 8, size, Says::Exactly(BAD_RECORD_MAGIC)),
            ("into-the-original", headers_end, size, Says::Exactly(BAD_RECORD_MAGIC)),
            ("onto-the-elf-header", 0, size, Says::Exactly(PAYLOAD_OVER_HEADERS)),
            ("onto-the-program-headers", headers_end - 1, size, Says::Exactly(PAYLOAD_OVER_HEADERS)),
            (
                "later-by-1",
                offset + 1,
                size,
                Says::Exactly(if padding_after >= 1 { BAD_RECORD_MAGIC } else { PAYLOAD_PAST_END }),
            ),
            // Resized: the PKCS#7 blob loses its last byte, or gains a padding byte (or reaches
            // into the trailer), or the size is out of bounds.
            ("shorter", offset, size - 1, Says::Exactly(BAD_CMS)),
            ("longer", offset, size + 1, Says::Exactly(if padding_after >= 1 { BAD_CMS } else { PAYLOAD_PAST_END })),
            ("empty", offset, 0, Says::Exactly(PAYLOAD_SIZE)),
            ("too-small", offset, 159, Says::Exactly(PAYLOAD_SIZE)),
            ("too-large", offset, 16481, Says::Exactly(PAYLOAD_SIZE)),
            ("huge", offset, u64::MAX, Says::Exactly(PAYLOAD_SIZE)),
        ];
        for (why, new_offset, new_size, says) in cases {
            let model = trailer_verdict(&t.signed, &t.payload, new_offset, new_size);
            assert_eq!(format!("{model:?}"), format!("{says:?}"), "{}-{why}: the model disagrees", t.name);
            let bytes = tampered(t, |b| {
                b[at + 8..at + 16].copy_from_slice(&new_offset.to_le_bytes());
                b[at + 16..at + 24].copy_from_slice(&new_size.to_le_bytes());
            });
            refused(&keys, &scratch, &format!("{}-trailer-{why}", t.name), &bytes, says);
        }
        // The fields are little-endian whatever the ELF byte order: written big-endian, they
        // describe no payload.
        let bytes = tampered(t, |b| {
            b[at + 8..at + 16].copy_from_slice(&offset.to_be_bytes());
            b[at + 16..at + 24].copy_from_slice(&size.to_be_bytes());
        });
        refused(&keys, &scratch, &format!("{}-trailer-big-endian", t.name), &bytes, Says::Exactly(PAYLOAD_SIZE));
    }
}

#[test]
fn signature_bytes() {
    let (keys, scratch) = (keys("a"), Scratch::new());
    for t in targets() {
        let p = t.payload;
        let end = p.offset + p.size;
        // Without the record magic, a last section is not a signature section; a trailer still
        // names the payload, which is then malformed.
        let no_magic = if t.has_sections() { NOT_SIGNED } else { BAD_RECORD_MAGIC };
        let cases = [
            ("rsa-last", end - 1, Says::Exactly(BAD_SIGNATURE)),
            ("rsa-middle", end - 128, Says::Exactly(BAD_SIGNATURE)),
            ("record-digest", p.offset + RECORD_DIGEST, Says::Exactly(BAD_SIGNATURE)),
            ("record-digest-last", p.offset + RECORD_LEN - 1, Says::Exactly(BAD_SIGNATURE)),
            ("record-signed-length", p.offset + 16, Says::Exactly(BAD_SIGNATURE)),
            ("record-magic", p.offset, Says::Exactly(no_magic)),
            ("record-magic-last", p.offset + 7, Says::Exactly(no_magic)),
        ];
        for (what, at, says) in cases {
            refused(&keys, &scratch, &format!("{}-{what}", t.name), &tampered(t, flip(at)), says);
        }
    }
}

const SHA256_OID: &[u8] = &[0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01];
const RSA_ENCRYPTION_NULL: &[u8] = &[0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01, 0x05, 0x00];

/// Changes the byte `at_in(blob)` of each target's PKCS#7 blob to `value` and checks that
/// `verify` calls the signature malformed.
fn refuse_blob_change(what: &str, at_in: impl Fn(&[u8]) -> usize, value: u8) {
    let (keys, scratch) = (keys("a"), Scratch::new());
    for t in targets() {
        let p = t.payload;
        let cms_at = p.offset + RECORD_LEN;
        let at = cms_at + at_in(&t.signed[cms_at..p.offset + p.size]);
        assert_ne!(t.signed[at], value);
        let bytes = tampered(t, |b| b[at] = value);
        refused(&keys, &scratch, &format!("{}-{what}", t.name), &bytes, Says::StartsWith(MALFORMED_SIGNATURE));
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> usize {
    haystack.windows(needle.len()).position(|w| w == needle).expect("the blob has the algorithm identifier")
}

/// The RSA signature covers the record, not the PKCS#7 blob around it, so `verify` must accept
/// only the blob the signer writes: otherwise the signed file is malleable (its bytes change and
/// it still verifies). Here the SignedData's `digestAlgorithms` set (the first SHA-256
/// identifier in the blob) says SHA-512, which OpenSSL refuses ("no matching digest").
#[test]
fn pkcs7_digest_algorithms_cannot_change() {
    refuse_blob_change("cms-digest-algorithms", |cms| find(cms, SHA256_OID) + SHA256_OID.len() - 1, 0x03);
}

/// As above: the NULL parameters of rsaEncryption become an empty OCTET STRING.
#[test]
fn pkcs7_signature_algorithm_parameters_cannot_change() {
    refuse_blob_change(
        "cms-rsa-parameters",
        |cms| find(cms, RSA_ENCRYPTION_NULL) + RSA_ENCRYPTION_NULL.len() - 2,
        0x04,
    );
}

#[test]
fn a_byte_appended() {
    let (keys, scratch) = (keys("a"), Scratch::new());
    for t in targets() {
        // After a trailer, appended bytes leave no trailer at the end: the file is not signed.
        let says = if t.has_sections() { MOVED } else { NOT_SIGNED };
        for extra in [&[0u8][..], b"\x7fELF"] {
            let bytes = tampered(t, |b| b.extend_from_slice(extra));
            let file = format!("{}-appended-{}", t.name, extra.len());
            refused(&keys, &scratch, &file, &bytes, Says::Exactly(says));
        }
    }
    // Bytes appended, then the trailer again, so that the file ends with a trailer describing
    // the payload: the signed length no longer matches.
    for t in trailer_targets() {
        let trailer = t.signed[t.trailer_at()..].to_vec();
        for (what, extra) in [("trailer-again", Vec::new()), ("bytes-and-trailer", b"appended".to_vec())] {
            let bytes = tampered(t, |b| {
                b.extend_from_slice(&extra);
                b.extend_from_slice(&trailer);
            });
            refused(&keys, &scratch, &format!("{}-{what}", t.name), &bytes, Says::Exactly(MOVED));
        }
    }
}

#[test]
fn a_byte_truncated() {
    let (keys, scratch) = (keys("a"), Scratch::new());
    for t in targets() {
        let bytes = tampered(t, |b| {
            b.pop();
        });
        // The section header table ends a file with sections; the trailer, one without.
        let says = if t.has_sections() { TRUNCATED } else { NOT_SIGNED };
        refused(&keys, &scratch, &format!("{}-truncated", t.name), &bytes, Says::Exactly(says));
    }
    let mut moved_trailers = 0;
    for t in trailer_targets() {
        let at = t.trailer_at();
        // The whole trailer cut off: nothing says the file is signed.
        let bytes = tampered(t, |b| b.truncate(at));
        refused(&keys, &scratch, &format!("{}-no-trailer", t.name), &bytes, Says::Exactly(NOT_SIGNED));
        // The padding before the trailer cut out: the trailer still describes the payload, but
        // the file is shorter than what was signed.
        if at > t.payload.range().end {
            let bytes = tampered(t, |b| {
                b.drain(t.payload.range().end..at);
            });
            refused(&keys, &scratch, &format!("{}-trailer-moved", t.name), &bytes, Says::Exactly(MOVED));
            moved_trailers += 1;
        }
    }
    assert!(moved_trailers > 0, "no target has padding before its trailer");
}

/// A byte in the middle of what the original's sections, or for a file without sections its
/// last non-empty loadable segment, hold: content that changes no layout.
fn content_byte(original: &[u8]) -> usize {
    let l = Layout::of(original);
    if l.shoff != 0 {
        let rodata = l.section(".rodata");
        return rodata.offset + rodata.size / 2;
    }
    let segment = l.load_contents.iter().rev().find(|s| !s.is_empty()).expect("a loadable segment");
    let at = segment.start + segment.len() / 2;
    assert!(!l.headers.iter().any(|h| h.contains(&at)), "the middle of the last segment is in the headers");
    at
}

#[test]
fn a_signature_moved_from_another_file() {
    let (keys, scratch) = (keys("a"), Scratch::new());
    let targets = targets();
    for (i, a) in targets.iter().enumerate() {
        let pa = a.payload;
        let payload_a = a.signed[pa.range()].to_vec();

        // Another program's signature, pasted over this one's.
        let b = &targets[(i + 1) % targets.len()];
        let pb = b.payload;
        assert_eq!(pa.size, pb.size, "one key, one payload size");
        assert_ne!(a.signed.len(), b.signed.len(), "{} and {} should differ in length", a.name, b.name);
        let bytes = tampered(a, |f| f[pa.range()].copy_from_slice(&b.signed[pb.range()]));
        refused(&keys, &scratch, &format!("{}-with-{}-signature", a.name, b.name), &bytes, Says::Exactly(MOVED));

        // A twin of the same length, changed in one byte and signed itself: same layout, so only
        // the digest can tell them apart.
        let mut twin = a.original.clone();
        twin[content_byte(&a.original)] ^= 0xff;
        let twin_path = scratch.write(&format!("{}-twin", a.name), &twin);
        sign(&keys, &twin_path);
        verify(&keys, &twin_path).success();
        let signed_twin = fs::read(&twin_path).unwrap();
        assert_eq!(signed_twin.len(), a.signed.len());
        assert_eq!(find_payload(&signed_twin), Some(pa), "{}: the twin's payload", a.name);
        let mut bytes = signed_twin;
        bytes[pa.range()].copy_from_slice(&payload_a);
        let file = format!("{}-twin-with-original-signature", a.name);
        refused(&keys, &scratch, &file, &bytes, Says::Exactly(MODIFIED));
    }
}

#[test]
fn the_wrong_certificate() {
    let scratch = Scratch::new();
    let other = keys("b");
    for t in targets() {
        let message = refused(&other, &scratch, &t.name, &t.signed, Says::StartsWith(UNKNOWN_KEY));
        assert!(message.contains("CN=elfsig test key a"), "{message:?} does not name the signer");
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

/// Small synthetic files in which every byte gets flipped, one file per byte.
fn small_files() -> Vec<(String, Vec<u8>)> {
    let specs = [
        Spec::new(Class::Elf64, Endian::Little),
        Spec::new(Class::Elf32, Endian::Big).kind(elfsig_fixtures::Kind::Rel),
        Spec::new(Class::Elf64, Endian::Big).kind(elfsig_fixtures::Kind::Dyn).sections(Sections::None),
        Spec::new(Class::Elf32, Endian::Little).sections(Sections::NoNames),
    ];
    let matrix = elfsig_fixtures::synth_matrix();
    specs
        .iter()
        .map(|spec| {
            let name = spec.name();
            let bytes = synth(spec);
            assert!(matrix.iter().any(|(n, b)| *n == name && *b == bytes), "{name} is not in the matrix");
            (name, bytes)
        })
        .collect()
}

/// `bytes` signed, written as `name`; and where its payload is.
fn signed_small_file(scratch: &Scratch, name: &str, bytes: &[u8]) -> (PathBuf, Vec<u8>, Payload) {
    let path = scratch.write(name, bytes);
    sign(&keys("a"), &path);
    let signed = fs::read(&path).unwrap();
    assert!(signed.len() < 8 * 1024, "{name} is {} bytes: flip a stride instead", signed.len());
    let p = find_payload(&signed).unwrap_or_else(|| panic!("{name}: no payload found"));
    let expected = if name.ends_with("-nosections") { Anchor::Trailer } else { Anchor::Section };
    assert_eq!(p.anchor, expected, "{name}");
    (path, signed, p)
}

/// Verifies, in a few runs of `elfsig verify` (it takes many files), the untouched signed file
/// and one copy of it per position in `positions` with that byte flipped. Checks that the
/// untouched file passes and returns, for each position, the message `verify` gave (`None` if
/// the copy passed).
fn flip_each(scratch: &Scratch, signed_path: &Path, signed: &[u8], positions: &[usize]) -> Vec<Option<String>> {
    let keys = keys("a");
    let dir = scratch.path(&format!("{}.flipped", signed_path.file_name().unwrap().to_str().unwrap()));
    fs::create_dir(&dir).unwrap();
    let mut paths: Vec<PathBuf> = vec![signed_path.to_owned()];
    for &at in positions {
        let mut copy = signed.to_vec();
        copy[at] ^= 0xff;
        let path = dir.join(format!("{at:06}"));
        fs::write(&path, copy).unwrap();
        paths.push(path);
    }
    let mut said: HashMap<String, String> = HashMap::new();
    let mut passed: Vec<String> = Vec::new();
    for batch in paths.chunks(1000) {
        let output = elfsig().arg("verify").arg("--cert").arg(&keys.cert).args(batch).output().unwrap();
        let failures_before = said.len();
        for line in String::from_utf8(output.stdout).unwrap().lines() {
            let file = line.strip_suffix(": OK (signed by CN=elfsig test key a)").expect("only OK lines on stdout");
            passed.push(file.to_owned());
        }
        for line in String::from_utf8(output.stderr).unwrap().lines() {
            let rest = line.strip_prefix("elfsig: ").unwrap_or_else(|| panic!("{line:?}"));
            if rest.starts_with("verified: ") {
                continue;
            }
            let (file, message) = rest.split_once(": ").unwrap_or_else(|| panic!("{line:?}"));
            assert!(said.insert(file.to_owned(), message.to_owned()).is_none(), "{file} reported twice");
        }
        let expected_status = if said.len() > failures_before { 1 } else { 0 };
        assert_eq!(output.status.code(), Some(expected_status), "exit status of verify");
    }
    let shown = |p: &Path| p.display().to_string();
    assert!(passed.contains(&shown(signed_path)), "{}: the untouched signed file does not verify", shown(signed_path));
    paths[1..]
        .iter()
        .map(|p| {
            let (ok, message) = (passed.contains(&shown(p)), said.get(&shown(p)));
            assert!(ok != message.is_some(), "{}: passed {ok} and said {message:?}", p.display());
            message.cloned()
        })
        .collect()
}

/// The ELF header, program header table and section header table of a signed file: the bytes
/// where a change can make the file malformed rather than merely different.
fn structure(bytes: &[u8]) -> [Range<usize>; 3] {
    let elf = Elf::parse(bytes).unwrap();
    let h = &elf.header;
    let (phoff, shoff) = (h.e_phoff as usize, h.e_shoff as usize);
    [
        0..usize::from(h.e_ehsize),
        phoff..phoff + usize::from(h.e_phnum) * usize::from(h.e_phentsize),
        shoff..shoff + elf.section_headers.len() * usize::from(h.e_shentsize),
    ]
}

#[test]
fn every_byte_outside_the_payload_is_signed() {
    let scratch = Scratch::new();
    let (mut flipped, mut trailer_bytes) = (0, 0);
    for (name, bytes) in small_files() {
        let (path, signed, payload) = signed_small_file(&scratch, &name, &bytes);
        let positions: Vec<usize> = (0..signed.len()).filter(|at| !payload.range().contains(at)).collect();
        let results = flip_each(&scratch, &path, &signed, &positions);
        let structure = structure(&signed);
        let trailer = match payload.anchor {
            Anchor::Section => 0..0,
            Anchor::Trailer => signed.len() - TRAILER_LEN..signed.len(),
        };
        let mut wrong = Vec::new();
        for (&at, message) in positions.iter().zip(&results) {
            let in_structure = structure.iter().any(|range| range.contains(&at));
            let ok = match message {
                None => false,
                Some(m) if in_structure => REJECTIONS.iter().any(|r| m.starts_with(r)),
                Some(m) if trailer.contains(&at) => trailer_flip_verdict(&signed, &payload, at).matches(m),
                Some(m) => m == MODIFIED,
            };
            if !ok {
                wrong.push(format!("byte {at:#x}: {message:?}"));
            }
        }
        assert!(wrong.is_empty(), "{name}: flipping these bytes gave the wrong answer:\n{}", wrong.join("\n"));
        flipped += positions.len();
        trailer_bytes += trailer.len();
    }
    assert!(flipped > 2000, "only {flipped} bytes flipped");
    assert!(trailer_bytes >= TRAILER_LEN, "no file without a section header table");
}

#[test]
fn every_byte_of_the_payload_is_checked() {
    let scratch = Scratch::new();
    for (name, bytes) in small_files() {
        let (path, signed, payload) = signed_small_file(&scratch, &name, &bytes);
        let positions: Vec<usize> = payload.range().collect();
        let results = flip_each(&scratch, &path, &signed, &positions);
        let mut wrong = Vec::new();
        for (&at, message) in positions.iter().zip(&results) {
            let where_ = match at - payload.offset {
                r if r < RECORD_LEN => format!("record byte {r}"),
                r => format!("PKCS#7 byte {}", r - RECORD_LEN),
            };
            match message {
                None => wrong.push(format!("{where_} (file offset {at:#x}): still verifies")),
                Some(m) if !REJECTIONS.iter().any(|r| m.starts_with(r)) => wrong.push(format!("{where_}: {m:?}")),
                Some(_) => {}
            }
        }
        assert!(
            wrong.is_empty(),
            "{name}: flipping these payload bytes is not caught (verify must accept only the exact PKCS#7 blob \
             the signer writes, including the parts the RSA signature does not cover):\n{}",
            wrong.join("\n")
        );
    }
}
