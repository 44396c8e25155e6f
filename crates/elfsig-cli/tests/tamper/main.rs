//! Tampering with signed files: whatever byte of a signed file changes (code, data, headers, the
//! tables the signer left unreferenced, padding, the trailer of a file without a section header
//! table, the signature itself) and whatever is added, removed or moved, `verify` fails with exit
//! status 1 and the message that says what is wrong.
//!
//! Every offset is found with goblin, an independent ELF parser, or read from the trailer by
//! hand, so that these tests do not trust elfsig-core's idea of where things are.
//!
//! This file holds the signed files the tests tamper with and what the tests share; each module
//! tampers with one kind of thing.

// The shared helpers are `pub` for every test crate that includes them.
#[allow(unreachable_pub)]
#[path = "../common/mod.rs"]
mod common;

mod anchor;
mod contents;
mod every_byte;
mod headers;
mod lengths;
mod signature;

use std::fs;
use std::sync::OnceLock;

use common::layout::{Layout, u64_at};
use common::messages::{
    BAD_CMS, BAD_RECORD_MAGIC, MALFORMED_SIGNATURE, NOT_SIGNED, PAYLOAD_OVER_HEADERS, PAYLOAD_PAST_END, PAYLOAD_SIZE,
    Says,
};
use common::{Anchor, Payload, Scratch, TRAILER_LEN, TRAILER_MAGIC, find_payload, keys, sign, verify};
use elfsig_fixtures::{Built, Class, Endian, Sections, Spec, build, synth, system_binary};

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
    trailer_verdict(signed, payload, u64_at(&trailer, 8), u64_at(&trailer, 16))
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
