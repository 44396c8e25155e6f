//! The format end to end on real files: every fixture signs and restores exactly, each
//! transition of the section table (none, no names, extended numbering) is handled, every kind of
//! malformed input gets its own error, and random mutations never break an invariant.

#[path = "support/invariants.rs"]
mod invariants;

use elfsig_core::record::RECORD_MAGIC;
use elfsig_core::{find_signature, ElfError, ElfFile, Error, Payload, SignatureError, SignedLayout};
use elfsig_fixtures::{self as fixtures, Built, Class as FClass, Endian as FEndian, Kind, Sections, Spec};
use proptest::prelude::*;

// ---------------------------------------------------------------------------------------------
// Helpers for ELF64 little-endian files.

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes(b[at..at + 2].try_into().unwrap())
}
fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}
fn put_u16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_le_bytes());
}
fn put_u32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}
fn put_u64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}
fn shoff(b: &[u8]) -> usize {
    u64_at(b, 40) as usize
}
fn shdr(b: &[u8], index: usize) -> usize {
    shoff(b) + index * 64
}
fn section_count(b: &[u8]) -> usize {
    match u16_at(b, 60) {
        0 => u64_at(b, shoff(b) + 32) as usize,
        n => usize::from(n),
    }
}

fn parse(b: &[u8]) -> Result<ElfFile, Error> {
    ElfFile::parse(&mut &b[..], b.len() as u64)
}

fn elf64(sections: Sections) -> Vec<u8> {
    fixtures::synth(&Spec::new(FClass::Elf64, FEndian::Little).sections(sections))
}

/// `bytes` signed with a stand-in signature, as the core defines signing.
fn signed(bytes: &[u8]) -> Vec<u8> {
    invariants::sign_then_remove_is_identity(bytes).expect("signable")
}

fn all_fixtures() -> Vec<(String, Vec<u8>)> {
    let mut all = fixtures::synth_matrix();
    for built in fixtures::ALL_BUILT {
        match fixtures::build(*built) {
            Ok(path) => all.push((built.name().to_owned(), std::fs::read(path).unwrap())),
            Err(why) => eprintln!("skipping {}: {why}", built.name()),
        }
    }
    for program in ["ls", "bash", "python3", "busybox", "true", "tar"] {
        match fixtures::system_binary(program) {
            Some(path) => all.push((program.to_owned(), std::fs::read(path).unwrap())),
            None => eprintln!("skipping {program}: not installed"),
        }
    }
    all
}

// ---------------------------------------------------------------------------------------------
// Every fixture.

#[test]
fn every_fixture_signs_and_restores_byte_for_byte() {
    let all = all_fixtures();
    assert!(all.len() > 50, "too few fixtures: {}", all.len());
    for (name, bytes) in all {
        invariants::parse_is_consistent(&bytes);
        let signed = invariants::sign_then_remove_is_identity(&bytes).unwrap_or_else(|| {
            panic!("{name}: not signable: {:?}", parse(&bytes).err());
        });
        invariants::parse_is_consistent(&signed);
        invariants::hashed_ranges_cover_all_but_payload(&signed);
    }
}

#[test]
fn regressions_hold() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/regressions");
    for (_, bytes) in elfsig_fixtures::regression_inputs(&dir).unwrap() {
        invariants::parse_is_consistent(&bytes);
        if let Some(signed) = invariants::sign_then_remove_is_identity(&bytes) {
            invariants::parse_is_consistent(&signed);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Section table shapes.

#[test]
fn file_without_section_table_gets_a_trailer_and_keeps_its_header() {
    for spec in [Spec::new(FClass::Elf64, FEndian::Little), Spec::new(FClass::Elf32, FEndian::Big).kind(Kind::Dyn)] {
        let original = fixtures::synth(&spec.sections(Sections::None));
        assert_eq!(parse(&original).unwrap().sections, None);
        let s = signed(&original);
        let header_len = if s[4] == 2 { 64 } else { 52 };
        assert_eq!(s[..header_len], original[..header_len], "the ELF header is untouched");
        let elf = parse(&s).unwrap();
        assert_eq!(elf.sections, None, "no section header table was added");
        let location = elf.signature.unwrap();
        let trailer = &s[s.len() - 24..];
        assert_eq!(&trailer[..8], b"ELFSIGTR");
        assert_eq!(u64::from_le_bytes(trailer[8..16].try_into().unwrap()), location.payload.offset);
        assert_eq!(u64::from_le_bytes(trailer[16..24].try_into().unwrap()), location.payload.len);
        assert!(matches!(location.anchor, elfsig_core::Anchor::Trailer { .. }));
    }
}

#[test]
fn a_trailer_that_lies_is_refused() {
    let s = signed(&elf64(Sections::None));
    let trailer = s.len() - 24;
    let with_trailer = |offset: u64, len: u64| {
        let mut b = s.clone();
        put_u64(&mut b, trailer + 8, offset);
        put_u64(&mut b, trailer + 16, len);
        find_signature(&mut &b[..], b.len() as u64)
    };
    let payload = u64_at(&s, trailer + 8);
    let size = u64_at(&s, trailer + 16);
    assert_eq!(with_trailer(payload, 10), Err(SignatureError::PayloadSize.into()));
    assert_eq!(with_trailer(payload, size + 100), Err(SignatureError::PayloadOutOfBounds.into()));
    assert_eq!(with_trailer(u64::MAX - 5, size), Err(SignatureError::PayloadOutOfBounds.into()));
    assert_eq!(with_trailer(0, size), Err(SignatureError::PayloadOverlapsHeaders.into()));
    assert_eq!(with_trailer(payload - 8, size), Err(SignatureError::BadMagic.into()));
    let mut no_magic = s.clone();
    no_magic[trailer] ^= 0xff;
    assert_eq!(find_signature(&mut &no_magic[..], no_magic.len() as u64), Ok(None), "no trailer: unsigned");
}

#[test]
fn file_without_names_gets_a_name_table() {
    let original = elf64(Sections::NoNames);
    let count = section_count(&original);
    let s = signed(&original);
    assert_eq!(section_count(&s), count + 2);
    assert_eq!(usize::from(u16_at(&s, 62)), count, "new .shstrtab after the copied sections");
}

#[test]
fn crossing_into_extended_numbering() {
    // 0xfeff sections before signing, 0xff00 after: e_shnum no longer fits.
    let original = elf64(Sections::Named { extra: 0xfeff - 6 });
    assert_eq!(section_count(&original), 0xfeff);
    assert_ne!(u16_at(&original, 60), 0);
    let s = signed(&original);
    assert_eq!(u16_at(&s, 60), 0, "e_shnum is 0 under extended numbering");
    assert_eq!(u64_at(&s, shdr(&s, 0) + 32), 0xff00, "section 0 holds the count");
    assert_eq!(u16_at(&s, 62), u16_at(&original, 62), "the name table index is unchanged");
}

#[test]
fn already_extended_numbering() {
    let original = elf64(Sections::EXTENDED);
    assert_eq!(u16_at(&original, 60), 0);
    let count = section_count(&original);
    let s = signed(&original);
    assert_eq!(section_count(&s), count + 1);
    assert_eq!(u16_at(&s, 62), 0xffff, "name table index still in section 0");
}

#[test]
fn new_name_table_with_an_index_past_0xff00() {
    // An extended table whose name table is dropped: the new one gets an index >= 0xff00, which
    // must go in section 0's sh_link with e_shstrndx = SHN_XINDEX.
    let mut original = elf64(Sections::EXTENDED);
    put_u16(&mut original, 62, 0);
    let count = section_count(&original);
    for index in 0..count {
        let at = shdr(&original, index);
        put_u32(&mut original, at, 0); // no names without a name table
    }
    let s = signed(&original);
    assert_eq!(u16_at(&s, 62), 0xffff);
    let link = u32::from_le_bytes(s[shdr(&s, 0) + 40..shdr(&s, 0) + 44].try_into().unwrap());
    assert_eq!(link as usize, count);
}

#[test]
fn big_endian_and_32_bit_files_keep_their_encoding() {
    for (class, endian) in
        [(FClass::Elf32, FEndian::Big), (FClass::Elf32, FEndian::Little), (FClass::Elf64, FEndian::Big)]
    {
        let original = fixtures::synth(&Spec::new(class, endian).kind(Kind::Dyn));
        let s = signed(&original);
        let elf = parse(&s).unwrap();
        assert_eq!(
            elf.header.class,
            if class == FClass::Elf32 { elfsig_core::Class::Elf32 } else { elfsig_core::Class::Elf64 }
        );
        assert_eq!(
            elf.header.endian,
            if endian == FEndian::Big { elfsig_core::Endian::Big } else { elfsig_core::Endian::Little }
        );
        assert!(elf.signature.is_some());
    }
}

#[test]
fn elf32_files_cannot_grow_past_4_gib() {
    let original = fixtures::synth(&Spec::new(FClass::Elf32, FEndian::Little));
    let mut elf = parse(&original).unwrap();
    elf.file_len = u64::from(u32::MAX) - 100;
    assert_eq!(SignedLayout::plan(&elf, 700), Err(Error::Elf(ElfError::TooLarge)));
}

// ---------------------------------------------------------------------------------------------
// Malformed files: each kind gets its own error.

fn with(mut b: Vec<u8>, patch: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    patch(&mut b);
    b
}

#[test]
fn malformed_elf_files_are_refused_with_their_reason() {
    let base = elf64(Sections::Named { extra: 2 });
    let n = section_count(&base);
    let len = base.len() as u64;
    let text = 1; // .text
    let names = usize::from(u16_at(&base, 62));
    let cases: Vec<(&str, Vec<u8>, ElfError)> = vec![
        ("empty", vec![], ElfError::NotElf),
        ("not ELF", b"#!/bin/sh\necho hi\n".to_vec(), ElfError::NotElf),
        ("truncated header", base[..40].to_vec(), ElfError::TruncatedHeader),
        ("bad class", with(base.clone(), |b| b[4] = 9), ElfError::BadClass(9)),
        ("bad encoding", with(base.clone(), |b| b[5] = 3), ElfError::BadEncoding(3)),
        ("bad version", with(base.clone(), |b| b[6] = 0), ElfError::BadVersion(0)),
        ("bad phentsize", with(base.clone(), |b| put_u16(b, 54, 50)), ElfError::BadProgramHeaderSize(50)),
        ("bad shentsize", with(base.clone(), |b| put_u16(b, 58, 40)), ElfError::BadSectionHeaderSize(40)),
        (
            "section table past the end",
            with(base.clone(), |b| put_u64(b, 40, len - 8)),
            ElfError::SectionHeadersOutOfBounds,
        ),
        ("absurd section count", with(base.clone(), |b| put_u16(b, 60, 0xfe00)), ElfError::SectionHeadersOutOfBounds),
        ("offset overflow", with(base.clone(), |b| put_u64(b, 40, u64::MAX - 10)), ElfError::SectionHeadersOutOfBounds),
        ("extended count of 0", with(base.clone(), |b| put_u16(b, 60, 0)), ElfError::InconsistentSectionCount),
        ("sections without a table", with(base.clone(), |b| put_u64(b, 40, 0)), ElfError::InconsistentSectionCount),
        ("name index too large", with(base.clone(), |b| put_u16(b, 62, n as u16)), ElfError::BadNamesIndex),
        ("name index reserved", with(base.clone(), |b| put_u16(b, 62, 0xff05)), ElfError::BadNamesIndex),
        (
            "program headers past the end",
            with(base.clone(), |b| put_u64(b, 32, len - 10)),
            ElfError::ProgramHeadersOutOfBounds,
        ),
        (
            "program headers over section headers",
            with(base.clone(), |b| {
                let at = shoff(b) as u64;
                put_u64(b, 32, at);
            }),
            ElfError::TablesOverlap,
        ),
        ("program headers over the ELF header", with(base.clone(), |b| put_u64(b, 32, 8)), ElfError::TablesOverlap),
        (
            "section past the end",
            with(base.clone(), |b| {
                let at = shdr(b, text) + 24;
                put_u64(b, at, len - 4);
            }),
            ElfError::SectionOutOfBounds { index: text as u64 },
        ),
        (
            "section size overflow",
            with(base.clone(), |b| {
                let at = shdr(b, text) + 32;
                put_u64(b, at, u64::MAX);
            }),
            ElfError::SectionOutOfBounds { index: text as u64 },
        ),
        (
            "section over the section table",
            with(base.clone(), |b| {
                let (at, to) = (shdr(b, text) + 24, shoff(b) as u64);
                put_u64(b, at, to);
            }),
            ElfError::SectionOverlapsTable { index: text as u64 },
        ),
        (
            "section over the ELF header",
            with(base.clone(), |b| {
                let at = shdr(b, text) + 24;
                put_u64(b, at, 0);
            }),
            ElfError::SectionOverlapsTable { index: text as u64 },
        ),
        (
            "name table of the wrong type",
            with(base.clone(), |b| {
                let at = shdr(b, names) + 4;
                put_u32(b, at, 1);
            }),
            ElfError::NamesNotStringTable,
        ),
        (
            "name outside the name table",
            with(base.clone(), |b| {
                let at = shdr(b, text);
                put_u32(b, at, 0x10000);
            }),
            ElfError::SectionNameOutOfBounds { index: text as u64 },
        ),
        (
            "name without a name table",
            with(base.clone(), |b| put_u16(b, 62, 0)),
            ElfError::SectionNameOutOfBounds { index: 1 },
        ),
        (
            "segment past the end",
            with(base.clone(), |b| {
                let at = u64_at(b, 32) as usize + 32; // first program header's p_filesz
                put_u64(b, at, len * 2);
            }),
            ElfError::SegmentOutOfBounds { index: 0 },
        ),
    ];
    for (what, bytes, expected) in cases {
        assert_eq!(parse(&bytes).err(), Some(Error::Elf(expected)), "{what}");
        invariants::parse_is_consistent(&bytes);
    }
}

/// The signed fixture and the index of its signature section.
fn signed_fixture() -> (Vec<u8>, usize) {
    let s = signed(&elf64(Sections::Named { extra: 20 }));
    let last = section_count(&s) - 1;
    (s, last)
}

fn payload_offset(s: &[u8], last: usize) -> usize {
    u64_at(s, shdr(s, last) + 24) as usize
}

#[test]
fn malformed_signatures_are_refused_with_their_reason() {
    let (base, last) = signed_fixture();
    let payload = payload_offset(&base, last);
    let cases: Vec<(&str, Vec<u8>, Error)> = vec![
        (
            "payload too small",
            with(base.clone(), |b| {
                let at = shdr(b, last) + 32;
                put_u64(b, at, 100);
            }),
            SignatureError::PayloadSize.into(),
        ),
        (
            "payload too large",
            with(base.clone(), |b| {
                let at = shdr(b, last) + 32;
                put_u64(b, at, 1 << 20);
            }),
            SignatureError::PayloadSize.into(),
        ),
        (
            "payload over the section table",
            with(base.clone(), |b| {
                // Move the payload 8 bytes before the table and give it a magic there.
                let to = shoff(b) - 8;
                b[to..to + 8].copy_from_slice(&RECORD_MAGIC);
                let at = shdr(b, last) + 24;
                put_u64(b, at, to as u64);
                let size_at = shdr(b, last) + 32;
                put_u64(b, size_at, 200);
            }),
            SignatureError::PayloadOverlapsHeaders.into(),
        ),
        ("unknown version", with(base.clone(), |b| b[payload + 8] = 7), SignatureError::UnsupportedVersion(7).into()),
        ("unknown hash", with(base.clone(), |b| b[payload + 10] = 9), SignatureError::UnsupportedHash(9).into()),
        ("reserved field set", with(base.clone(), |b| b[payload + 12] = 1), SignatureError::ReservedNotZero.into()),
        (
            "record contradicts itself",
            with(base.clone(), |b| put_u64(b, payload + 16, 5)),
            SignatureError::InconsistentRecord.into(),
        ),
        ("PKCS#7 not DER", with(base.clone(), |b| b[payload + 96] = 0x31), SignatureError::BadCms.into()),
        ("PKCS#7 length wrong", with(base.clone(), |b| b[payload + 96 + 3] ^= 1), SignatureError::BadCms.into()),
    ];
    for (what, bytes, expected) in cases {
        let len = bytes.len() as u64;
        let result = find_signature(&mut &bytes[..], len).and_then(|location| {
            let location = location.expect("still located");
            let mut buf = vec![0u8; location.payload_len()];
            Payload::read(&mut &bytes[..], &location, &mut buf).map(|_| ())
        });
        assert_eq!(result, Err(expected), "{what}");
        invariants::parse_is_consistent(&bytes);
    }
}

#[test]
fn a_signature_section_must_be_last_and_alone() {
    let (base, last) = signed_fixture();
    let entry = base[shdr(&base, last)..shdr(&base, last) + 64].to_vec();
    // Append a null section after the signature section.
    let mut not_last = base.clone();
    not_last.extend_from_slice(&[0u8; 64]);
    put_u16(&mut not_last, 60, (last + 2) as u16);
    assert_eq!(parse(&not_last).err(), Some(SignatureError::NotLast.into()));
    assert_eq!(find_signature(&mut &not_last[..], not_last.len() as u64), Ok(None), "the kernel sees no signature");
    // Append a second signature section.
    let mut twice = base.clone();
    twice.extend_from_slice(&entry);
    put_u16(&mut twice, 60, (last + 2) as u16);
    assert_eq!(parse(&twice).err(), Some(SignatureError::Duplicate.into()));
}

#[test]
fn a_payload_a_loader_would_map_is_refused() {
    let (mut s, _) = signed_fixture();
    let len = s.len() as u64;
    let first_phdr = u64_at(&s, 32) as usize;
    put_u64(&mut s, first_phdr + 8, 0); // p_offset
    put_u64(&mut s, first_phdr + 32, len); // p_filesz: the whole file
    assert_eq!(parse(&s).err(), Some(SignatureError::PayloadInSegment.into()));
}

#[test]
fn a_broken_magic_means_unsigned() {
    let (mut s, last) = signed_fixture();
    let payload = payload_offset(&s, last);
    s[payload] ^= 0xff;
    let elf = parse(&s).unwrap();
    assert_eq!(elf.signature, None);
    assert_eq!(find_signature(&mut &s[..], s.len() as u64), Ok(None));
}

#[test]
fn a_signed_file_cannot_be_planned_again() {
    let (s, _) = signed_fixture();
    assert_eq!(SignedLayout::plan(&parse(&s).unwrap(), 700), Err(SignatureError::Duplicate.into()));
}

#[test]
fn built_objects_with_real_extended_numbering_sign() {
    let Ok(path) = fixtures::build(Built::ManySectionsObject) else { return };
    let bytes = std::fs::read(path).unwrap();
    assert_eq!(u16_at(&bytes, 60), 0, "the fixture uses extended numbering");
    let s = signed(&bytes);
    assert_eq!(section_count(&s), section_count(&bytes) + 1);
}

// ---------------------------------------------------------------------------------------------
// Random mutations.

/// Made once: building the matrix for each of the cases was nearly all of this test's time.
fn small_fixtures() -> &'static [Vec<u8>] {
    static SMALL: std::sync::OnceLock<Vec<Vec<u8>>> = std::sync::OnceLock::new();
    SMALL.get_or_init(|| fixtures::synth_matrix().into_iter().map(|(_, b)| b).filter(|b| b.len() < 64 * 1024).collect())
}

#[derive(Clone, Debug)]
enum Mutation {
    Set(usize, u8),
    Truncate(usize),
    Insert(usize, u8),
    Append(Vec<u8>),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        4 => (any::<usize>(), any::<u8>()).prop_map(|(at, v)| Mutation::Set(at, v)),
        1 => any::<usize>().prop_map(Mutation::Truncate),
        1 => (any::<usize>(), any::<u8>()).prop_map(|(at, v)| Mutation::Insert(at, v)),
        1 => proptest::collection::vec(any::<u8>(), 1..16).prop_map(Mutation::Append),
    ]
}

fn apply(bytes: &mut Vec<u8>, m: &Mutation) {
    let n = bytes.len().max(1);
    match m {
        Mutation::Set(at, v) => {
            if !bytes.is_empty() {
                bytes[at % n] = *v;
            }
        }
        Mutation::Truncate(at) => bytes.truncate(at % n),
        Mutation::Insert(at, v) => bytes.insert(at % (bytes.len() + 1), *v),
        Mutation::Append(tail) => bytes.extend_from_slice(tail),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 384, ..ProptestConfig::default() })]

    #[test]
    fn mutated_files_never_break_the_invariants(
        pick in any::<prop::sample::Index>(),
        sign_first in any::<bool>(),
        mutations in proptest::collection::vec(mutation(), 1..6),
    ) {
        let all = small_fixtures();
        let mut bytes = all[pick.index(all.len())].clone();
        if sign_first {
            bytes = signed(&bytes);
        }
        for m in &mutations {
            apply(&mut bytes, m);
        }
        invariants::parse_is_consistent(&bytes);
        if let Some(s) = invariants::sign_then_remove_is_identity(&bytes) {
            invariants::parse_is_consistent(&s);
            invariants::hashed_ranges_cover_all_but_payload(&s);
        }
    }
}
