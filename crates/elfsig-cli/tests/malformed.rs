//! Malformed input: every command that reads ELF files (sign, verify, inspect, remove) refuses
//! each broken file with exit status 1 and a message naming the problem, never panics, leaves the
//! file byte for byte as it was and leaves no temporary file behind.

#[allow(unreachable_pub)]
mod common;

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use common::layout::{RECORD_LEN, put_u16, put_u64, u16_at, u32_at, u64_at};
use common::messages::{
    BAD_CMS, BAD_RECORD_MAGIC, HEADERS_OVERLAP, NAME_TABLE_INDEX, NOT_ELF, NOT_SIGNED, PAYLOAD_OVER_HEADERS,
    PAYLOAD_PAST_END, PAYLOAD_SIZE, PROGRAM_TABLE_PAST_END, SECTION_TABLE_PAST_END, SHORTER_THAN_ELF_HEADER,
    SIGNATURE_NOT_LAST, section_over_headers, section_past_end, segment_past_end, unknown_class, unknown_data_encoding,
    unknown_version, unsupported_format_version,
};
use common::{Keys, Scratch, TRAILER_LEN, elfsig, keys, payload, sign, trailer, verify};
use predicates::str::contains;

/// The commands that read ELF files.
const COMMANDS: [&str; 4] = ["sign", "verify", "inspect", "remove"];

/// Runs `command` (with the options it needs) on `file`.
fn run(command: &str, keys: &Keys, file: &Path) -> Output {
    let mut args: Vec<OsString> = vec![command.into()];
    match command {
        "sign" => args.extend(["--key".into(), keys.key.clone().into(), "--cert".into(), keys.cert.clone().into()]),
        "verify" => args.extend(["--cert".into(), keys.cert.clone().into()]),
        _ => {}
    }
    elfsig().args(args).arg(file).timeout(Duration::from_secs(30)).output().unwrap()
}

/// The names in `dir`, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> =
        fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
}

/// Asserts that stderr shows no panic.
fn assert_no_panic(stderr: &str, context: &str) {
    assert!(!stderr.contains("panicked") && !stderr.contains("RUST_BACKTRACE"), "{context}: panicked:\n{stderr}");
}

/// Asserts that every command refuses `file` with exit status 1 and an `elfsig: FILE: ...` line
/// containing `expected`, without panicking, changing the file or leaving anything in its
/// directory; and, when `json_kind` is given, that `inspect --json` reports that error kind.
fn assert_refused(file: &Path, expected: &str, json_kind: Option<&str>) {
    let keys = keys("a");
    let dir = file.parent().unwrap();
    let before = fs::read(file).ok();
    let names = listing(dir);
    let prefix = format!("elfsig: {}: ", file.display());
    for command in COMMANDS {
        let out = run(command, &keys, file);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let context = format!("elfsig {command} {}", file.display());
        assert_no_panic(&stderr, &context);
        assert_eq!(out.status.code(), Some(1), "{context}: wrong exit status; stderr:\n{stderr}");
        assert!(out.stdout.is_empty(), "{context}: printed on stdout: {}", String::from_utf8_lossy(&out.stdout));
        assert!(
            stderr.lines().any(|line| line.starts_with(&prefix) && line.contains(expected)),
            "{context}: expected a line {prefix}...{expected}..., got:\n{stderr}"
        );
        assert!(fs::read(file).ok() == before, "{context}: the file changed");
        assert_eq!(listing(dir), names, "{context}: left something in {}", dir.display());
    }
    if let Some(kind) = json_kind {
        let out = elfsig().args(["inspect", "--json"]).arg(file).output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(1), "inspect --json {}", file.display());
        assert_no_panic(&String::from_utf8_lossy(&out.stderr), "inspect --json");
        assert_eq!(stdout.lines().count(), 1, "inspect --json {}: {stdout}", file.display());
        assert!(
            stdout.contains(&format!("\"error\":{{\"kind\":\"{kind}\"")),
            "inspect --json {}: {stdout}",
            file.display()
        );
        assert!(stdout.contains(expected), "inspect --json {}: message: {stdout}", file.display());
    }
}

// ELF64 header fields (the files patched here are ELF64 little-endian: `u64_at` and the like
// read them).
const E_PHOFF: usize = 32;
const E_SHOFF: usize = 40;
const E_PHNUM: usize = 56;
const E_SHNUM: usize = 60;
const E_SHSTRNDX: usize = 62;

/// `ls`, which on this (x86-64) machine is an ELF64 little-endian file with sections and
/// segments.
fn ls() -> Vec<u8> {
    let bytes = fs::read(elfsig_fixtures::system_binary("ls").expect("ls is installed")).unwrap();
    assert_eq!(&bytes[..6], b"\x7fELF\x02\x01", "these tests patch an ELF64 little-endian ls");
    bytes
}

/// `bytes` with `patch` applied.
fn patched(bytes: &[u8], patch: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let mut bytes = bytes.to_vec();
    patch(&mut bytes);
    bytes
}

/// Offset of section header `index`.
fn shdr(bytes: &[u8], index: usize) -> usize {
    u64_at(bytes, E_SHOFF) as usize + 64 * index
}

/// Offset of program header `index`.
fn phdr(bytes: &[u8], index: usize) -> usize {
    u64_at(bytes, E_PHOFF) as usize + 56 * index
}

/// Index of the first section with file contents (not NULL or NOBITS, not empty).
fn first_section_with_contents(bytes: &[u8]) -> usize {
    (1..usize::from(u16_at(bytes, E_SHNUM)))
        .find(|&i| {
            let at = shdr(bytes, i);
            let sh_type = u32_at(bytes, at + 4);
            sh_type != 0 && sh_type != 8 && u64_at(bytes, at + 32) != 0
        })
        .expect("ls has sections with contents")
}

/// Index of the first segment with file contents.
fn first_segment_with_contents(bytes: &[u8]) -> usize {
    (0..usize::from(u16_at(bytes, E_PHNUM)))
        .find(|&i| u64_at(bytes, phdr(bytes, i) + 32) != 0)
        .expect("ls has segments with contents")
}

/// The malformed files: (name, contents, expected message).
fn malformed_files() -> Vec<(&'static str, Vec<u8>, String)> {
    let ls = ls();
    let len = ls.len() as u64;
    let not_elf = NOT_ELF.to_string();
    let sht_past_end = SECTION_TABLE_PAST_END.to_string();
    let section = first_section_with_contents(&ls);
    let segment = first_segment_with_contents(&ls);
    let shnum = u16_at(&ls, E_SHNUM);
    assert!(len / 2 < u64_at(&ls, E_SHOFF), "the section header table of ls is in its second half");
    vec![
        ("empty", Vec::new(), not_elf.clone()),
        ("script.sh", b"#!/bin/sh\necho hello\n".to_vec(), not_elf.clone()),
        ("almost-elf.txt", b"\x7fELephants are not ELF files\n".to_vec(), not_elf),
        ("header-truncated", ls[..40].to_vec(), SHORTER_THAN_ELF_HEADER.into()),
        ("half", ls[..ls.len() / 2].to_vec(), sht_past_end.clone()),
        ("shoff-past-eof", patched(&ls, |b| put_u64(b, E_SHOFF, len + 4096)), sht_past_end.clone()),
        ("shnum-absurd", patched(&ls, |b| put_u16(b, E_SHNUM, 0xfff0)), sht_past_end),
        ("shstrndx-out-of-range", patched(&ls, |b| put_u16(b, E_SHSTRNDX, shnum)), NAME_TABLE_INDEX.into()),
        ("shstrndx-reserved", patched(&ls, |b| put_u16(b, E_SHSTRNDX, 0xff00)), NAME_TABLE_INDEX.into()),
        ("phoff-past-eof", patched(&ls, |b| put_u64(b, E_PHOFF, len + 4096)), PROGRAM_TABLE_PAST_END.into()),
        (
            "phdrs-overlap-shdrs",
            patched(&ls, |b| {
                let shoff = u64_at(b, E_SHOFF);
                put_u64(b, E_PHOFF, shoff);
            }),
            HEADERS_OVERLAP.into(),
        ),
        (
            "section-past-eof",
            patched(&ls, |b| {
                let at = shdr(b, section);
                let offset = u64_at(b, at + 24);
                put_u64(b, at + 32, len - offset + 1);
            }),
            section_past_end(section),
        ),
        (
            "section-overlaps-header",
            patched(&ls, |b| {
                let at = shdr(b, section);
                put_u64(b, at + 24, 0);
            }),
            section_over_headers(section),
        ),
        (
            "segment-past-eof",
            patched(&ls, |b| {
                let at = phdr(b, segment);
                let offset = u64_at(b, at + 8);
                put_u64(b, at + 32, len - offset + 1);
            }),
            segment_past_end(segment),
        ),
        ("bad-class", patched(&ls, |b| b[4] = 3), unknown_class(3)),
        ("bad-data-0", patched(&ls, |b| b[5] = 0), unknown_data_encoding(0)),
        ("bad-data-7", patched(&ls, |b| b[5] = 7), unknown_data_encoding(7)),
        ("bad-version", patched(&ls, |b| b[6] = 2), unknown_version(2)),
    ]
}

#[test]
fn malformed_elf_files_are_refused_by_every_command() {
    let files = malformed_files();
    assert!(files.len() >= 18);
    for (name, bytes, expected) in files {
        // One directory per file: the check that nothing is left behind looks at it.
        let scratch = Scratch::new();
        let file = scratch.write(name, &bytes);
        assert_refused(&file, &expected, Some("malformed_elf"));
    }
}

#[test]
fn things_that_are_not_regular_files_are_refused() {
    let scratch = Scratch::new();
    let dir = scratch.path("a-directory");
    fs::create_dir(&dir).unwrap();
    assert_refused(&dir, "is not a regular file", None);
    assert!(dir.is_dir() && fs::read_dir(&dir).unwrap().next().is_none(), "the directory is untouched and empty");

    let missing = scratch.path("no-such-file");
    assert_refused(
        &missing,
        &format!("cannot open {}: No such file or directory", missing.display()),
        Some("io_error"),
    );
    assert!(!missing.exists(), "nothing created");

    // A character device. Only its name is used, so /dev is not listed for leftovers.
    let keys = keys("a");
    for command in COMMANDS {
        let out = run(command, &keys, Path::new("/dev/null"));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_no_panic(&stderr, command);
        assert_eq!(out.status.code(), Some(1), "{command} /dev/null: {stderr}");
        assert!(stderr.contains("elfsig: /dev/null: /dev/null is not a regular file"), "{command} /dev/null: {stderr}");
    }
}

#[test]
fn an_unreadable_file_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let scratch = Scratch::new();
    let file = scratch.write("unreadable", &ls());
    fs::set_permissions(&file, fs::Permissions::from_mode(0o000)).unwrap();
    if fs::read(&file).is_ok() {
        eprintln!("skipping the unreadable-file case: running as root, permissions do not stop reads");
        return;
    }
    assert_refused(&file, &format!("cannot open {}: Permission denied", file.display()), Some("io_error"));
}

/// A FIFO must be refused as "not a regular file", not opened: opening a FIFO for reading blocks
/// until a writer comes, so a command given one must not hang.
#[test]
fn a_fifo_is_refused_without_hanging() {
    let scratch = Scratch::new();
    let fifo = scratch.path("fifo");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success(), "mkfifo failed");
    let keys = keys("a");
    // In parallel, so that a hang costs the timeout once, not four times.
    std::thread::scope(|s| {
        let runs: Vec<_> = COMMANDS
            .iter()
            .map(|&command| {
                let (keys, fifo) = (&keys, &fifo);
                s.spawn(move || {
                    let out = elfsig()
                        .arg(command)
                        .args(match command {
                            "sign" => vec![
                                OsString::from("--key"),
                                keys.key.clone().into(),
                                "--cert".into(),
                                keys.cert.clone().into(),
                            ],
                            "verify" => vec!["--cert".into(), keys.cert.clone().into()],
                            _ => vec![],
                        })
                        .arg(fifo)
                        .timeout(Duration::from_secs(5))
                        .output()
                        .unwrap();
                    (command, out)
                })
            })
            .collect();
        for run in runs {
            let (command, out) = run.join().unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(
                out.status.code(),
                Some(1),
                "elfsig {command} FIFO did not exit 1 (a signal or the 5 s timeout means it blocked opening the FIFO); stderr:\n{stderr}"
            );
            assert!(stderr.contains("is not a regular file"), "{command}: {stderr}");
        }
    });
    assert_eq!(listing(scratch.dir.path()), ["fifo"], "nothing left behind");
}

/// A signed copy of ls and where its payload is.
fn signed_ls(scratch: &Scratch) -> (PathBuf, Vec<u8>, usize, usize) {
    let file = scratch.write("ls", &ls());
    sign(&keys("a"), &file);
    let (offset, size) = payload(&file);
    (file, fs::read(scratch.path("ls")).unwrap(), offset, size)
}

#[test]
fn a_signature_with_an_unsupported_format_version_is_refused() {
    let scratch = Scratch::new();
    let (file, signed, offset, _) = signed_ls(&scratch);
    assert_eq!(u16_at(&signed, offset + 8), 1, "the format version is at payload offset + 8");
    fs::write(&file, patched(&signed, |b| b[offset + 8] = 3)).unwrap();
    assert_refused(&file, &unsupported_format_version(3), Some("malformed_signature"));
}

#[test]
fn a_signature_whose_pkcs7_is_not_der_is_refused() {
    let scratch = Scratch::new();
    let (file, signed, offset, _) = signed_ls(&scratch);
    assert_eq!(signed[offset + RECORD_LEN], 0x30, "the PKCS#7 blob follows the 96-byte record");
    fs::write(&file, patched(&signed, |b| b[offset + RECORD_LEN] = 0x31)).unwrap();
    assert_refused(&file, BAD_CMS, Some("malformed_signature"));
    // Not one DER structure at all: refused before any PKCS#7 parsing, so without detail.
    let out = run("verify", &keys("a"), &file);
    assert_eq!(String::from_utf8_lossy(&out.stderr), format!("elfsig: {}: {BAD_CMS}\n", file.display()));
}

#[test]
fn a_signature_whose_pkcs7_is_der_but_not_signed_data_is_refused() {
    let scratch = Scratch::new();
    let (file, signed, offset, size) = signed_ls(&scratch);
    let original = ls();
    // A DER SEQUENCE of zeros exactly as long as the PKCS#7 blob (long enough for a 2-byte length).
    let cms_len = size - RECORD_LEN;
    assert!((0x100..0x10000).contains(&(cms_len - 4)));
    let mut sequence = vec![0x30, 0x82, ((cms_len - 4) >> 8) as u8, (cms_len - 4) as u8];
    sequence.resize(cms_len, 0);
    let broken = patched(&signed, |b| b[offset + RECORD_LEN..offset + size].copy_from_slice(&sequence));
    fs::write(&file, &broken).unwrap();

    let keys = keys("a");
    let names = listing(scratch.dir.path());
    for command in ["verify", "inspect"] {
        let out = run(command, &keys, &file);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_no_panic(&stderr, command);
        assert_eq!(out.status.code(), Some(1), "{command}: {stderr}");
        let line = stderr.lines().find(|l| l.starts_with(&format!("elfsig: {}: ", file.display())));
        let line = line.unwrap_or_else(|| panic!("{command}: no error line: {stderr}"));
        assert!(line.contains(&format!("{BAD_CMS}: not a PKCS#7 ContentInfo")), "{command}: {line}");
        assert!(fs::read(&file).unwrap() == broken, "{command} changed the file");
        assert_eq!(listing(scratch.dir.path()), names);
    }
    let out = elfsig().args(["inspect", "--json"]).arg(&file).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains(r#""error":{"kind":"malformed_signature""#));

    // The record and layout are intact, so the signature is elfsig's own (with a broken blob):
    // remove restores the original and sign replaces the blob.
    let copy = scratch.write("ls-copy", &broken);
    elfsig().arg("remove").arg(&copy).assert().success();
    assert!(fs::read(&copy).unwrap() == original, "remove restored the original");
    sign(&keys, &file);
    verify(&keys, &file).success();
}

#[test]
fn a_signature_section_that_is_not_last_is_refused() {
    let scratch = Scratch::new();
    let (file, signed, _, _) = signed_ls(&scratch);
    let shnum = u16_at(&signed, E_SHNUM);
    assert_eq!(shdr(&signed, usize::from(shnum)), signed.len(), "the signer puts the section header table last");
    // Append a NULL section header, so the signature section is the one before last.
    let mut broken = signed.clone();
    broken.extend_from_slice(&[0; 64]);
    put_u16(&mut broken, E_SHNUM, shnum + 1);
    fs::write(&file, &broken).unwrap();
    assert_refused(&file, SIGNATURE_NOT_LAST, Some("malformed_signature"));
}

#[test]
fn verify_reports_good_and_bad_files_of_one_call_separately() {
    let keys = keys("a");
    let scratch = Scratch::new();
    let ls = ls();
    let good = scratch.write("good", &ls);
    sign(&keys, &good);
    let bad = scratch.write("bad", &patched(&ls, |b| put_u64(b, E_SHOFF, 1 << 40)));
    let unsigned = scratch.write("unsigned", &ls);
    let out = elfsig().arg("verify").arg("--cert").arg(&keys.cert).args([&bad, &good, &unsigned]).output().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_no_panic(&stderr, "verify");
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(stdout, format!("{}: OK (signed by CN=elfsig test key a)\n", good.display()));
    assert_eq!(
        stderr,
        format!(
            "elfsig: {}: {SECTION_TABLE_PAST_END}\n\
             elfsig: {}: {NOT_SIGNED}\n\
             elfsig: verified: 1 done, 2 failed\n",
            bad.display(),
            unsigned.display()
        )
    );
    // And the other commands over the same mix: the bad file fails, the others are handled.
    elfsig()
        .arg("inspect")
        .args([&bad, &good, &unsigned])
        .assert()
        .code(1)
        .stdout(contains(format!("{}: signed\n", good.display())))
        .stdout(contains(format!("{}: not signed\n", unsigned.display())))
        .stderr(contains("elfsig: inspected: 2 done, 1 failed"));
}

/// A signed file without a section header table whose trailer no longer describes a payload
/// elfsig wrote: every command refuses it as a malformed signature (and none rewrites it).
#[test]
fn a_trailer_that_does_not_describe_a_payload_is_refused_by_every_command() {
    let original = elfsig_fixtures::synth(
        &elfsig_fixtures::Spec::new(elfsig_fixtures::Class::Elf64, elfsig_fixtures::Endian::Little)
            .sections(elfsig_fixtures::Sections::None),
    );
    let scratch = Scratch::new();
    let file = scratch.write("signed", &original);
    sign(&keys("a"), &file);
    let signed = fs::read(&file).unwrap();
    assert_eq!(u64_at(&signed, E_SHOFF), 0, "no section header table");
    let (offset, size) = trailer(&signed).expect("a trailer");
    let at = signed.len() - TRAILER_LEN;
    let headers_end = u64_at(&signed, E_PHOFF) + 56 * u64::from(u16_at(&signed, E_PHNUM));
    assert!(headers_end > 64 && headers_end < offset, "program headers at {headers_end}");
    let with_trailer = |new_offset: u64, new_size: u64| {
        patched(&signed, |b| {
            put_u64(b, at + 8, new_offset);
            put_u64(b, at + 16, new_size);
        })
    };
    let cases = [
        ("later", with_trailer(offset + 8, size), PAYLOAD_PAST_END),
        ("far", with_trailer(u64::MAX - 4, size), PAYLOAD_PAST_END),
        ("earlier", with_trailer(offset - 8, size), BAD_RECORD_MAGIC),
        ("after-the-headers", with_trailer(headers_end, size), BAD_RECORD_MAGIC),
        ("at-0", with_trailer(0, size), PAYLOAD_OVER_HEADERS),
        ("over-the-program-headers", with_trailer(headers_end - 8, size), PAYLOAD_OVER_HEADERS),
        ("empty", with_trailer(offset, 0), PAYLOAD_SIZE),
        ("huge", with_trailer(offset, u64::MAX), PAYLOAD_SIZE),
        ("shorter", with_trailer(offset, size - 1), BAD_CMS),
        ("record-magic", patched(&signed, |b| b[offset as usize] ^= 0x20), BAD_RECORD_MAGIC),
    ];
    for (name, bytes, expected) in cases {
        let scratch = Scratch::new();
        let file = scratch.write(name, &bytes);
        assert_refused(&file, expected, Some("malformed_signature"));
    }
}
