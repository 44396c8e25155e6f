//! Every byte of small synthetic files, one flipped file per byte: outside the payload, each is
//! refused with the message its place calls for; inside, each is refused.

use std::collections::HashMap;
use std::fs;
use std::ops::Range;
use std::path::{Path, PathBuf};

use elfsig_fixtures::{Class, Endian, Sections, Spec, synth};
use goblin::elf::Elf;

use crate::common::layout::RECORD_LEN;
use crate::common::messages::{MODIFIED, REJECTIONS};
use crate::common::{Anchor, Payload, Scratch, TRAILER_LEN, elfsig, find_payload, keys, sign};
use crate::trailer_flip_verdict;

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
