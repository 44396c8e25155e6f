//! `elfsig inspect`, as text and as JSON, checked against values computed independently: goblin
//! for the section, the trailer read by hand for files without a section header table, OpenSSL
//! for the digest and the certificate's serial, the file sizes.
//! The JSON is parsed by Python's `json` module (serde_json is not a dev-dependency).

#[allow(unreachable_pub)]
mod common;

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::{Anchor, Scratch, elfsig, keys, section, sign, signature_payload, trailer};
use elfsig_fixtures::{Class, Endian, Sections, Spec, synth};

/// One JSON object, flattened: ("signature.payload.offset", "151656"), in document order, with
/// every value as JSON (strings quoted).
type Flat = Vec<(String, String)>;

const FLATTEN: &str = r#"
import json, sys

def flat(prefix, value):
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from flat(prefix + "." + key if prefix else key, inner)
    else:
        yield prefix, json.dumps(value)

for line in sys.stdin.read().split("\n")[:-1]:
    obj = json.loads(line)
    if not isinstance(obj, dict):
        sys.exit("not an object: " + line)
    for key, value in flat("", obj):
        print(key + "\t" + value)
    print("--")
"#;

/// Parses `stdout`, one JSON object per line (each line must be one complete object), with
/// Python.
fn parse_json_lines(stdout: &[u8]) -> Vec<Flat> {
    let python = elfsig_fixtures::system_binary("python3").expect("python3 is installed");
    let mut child = Command::new(python)
        .args(["-c", FLATTEN])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdout).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "not one JSON object per line: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(stdout)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let mut objects = Vec::new();
    let mut current = Flat::new();
    for line in text.lines() {
        if line == "--" {
            objects.push(std::mem::take(&mut current));
        } else {
            let (key, value) = line.split_once('\t').unwrap();
            current.push((key.to_owned(), value.to_owned()));
        }
    }
    objects
}

/// The value at `key`, panicking with the whole object if absent.
fn get<'f>(object: &'f Flat, key: &str) -> &'f str {
    object.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str()).unwrap_or_else(|| panic!("no {key} in {object:?}"))
}

fn has(object: &Flat, prefix: &str) -> bool {
    object.iter().any(|(k, _)| k == prefix || k.starts_with(&format!("{prefix}.")))
}

/// A JSON string literal.
fn quoted(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

fn inspect<P: AsRef<Path>>(files: &[P], json: bool) -> Output {
    let mut cmd = elfsig();
    cmd.arg("inspect");
    if json {
        cmd.arg("--json");
    }
    cmd.args(files.iter().map(AsRef::as_ref)).output().unwrap()
}

/// Runs `openssl` with `args` (and `stdin`); returns stdout.
fn openssl(args: &[&str], stdin: &[u8]) -> String {
    let mut child = Command::new("openssl")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("openssl is installed");
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// SHA-256 of everything in `file` but the signature payload, by OpenSSL.
fn digest_without_payload(file: &Path) -> String {
    let bytes = fs::read(file).unwrap();
    let p = signature_payload(file);
    let (offset, size) = (p.offset, p.size);
    let mut rest = bytes[..offset].to_vec();
    rest.extend_from_slice(&bytes[offset + size..]);
    let out = openssl(&["dgst", "-sha256", "-r"], &rest);
    out.split_whitespace().next().unwrap().to_owned()
}

/// The certificate's serial number per OpenSSL, in lowercase hex.
fn serial(cert: &Path) -> String {
    let out = openssl(&["x509", "-noout", "-serial", "-in", cert.to_str().unwrap()], b"");
    out.trim().strip_prefix("serial=").unwrap().to_lowercase()
}

fn ls_copy(scratch: &Scratch, name: &str) -> PathBuf {
    scratch.copy(&elfsig_fixtures::system_binary("ls").expect("ls is installed"), name)
}

#[test]
fn an_unsigned_file() {
    let scratch = Scratch::new();
    let file = ls_copy(&scratch, "ls");

    let out = inspect(&[&file], false);
    assert_eq!(out.status.code(), Some(0), "unsigned is reported, not failed");
    assert_eq!(String::from_utf8_lossy(&out.stdout), format!("{}: not signed\n", file.display()));
    assert!(out.stderr.is_empty());

    let out = inspect(&[&file], true);
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stderr.is_empty());
    let objects = parse_json_lines(&out.stdout);
    assert_eq!(objects.len(), 1);
    let expected: Flat = [
        ("schema", "2".to_string()),
        ("file", quoted(&file.display().to_string())),
        ("elf.class", quoted("ELF64")),
        ("elf.endian", quoted("little")),
        ("elf.type", "3".into()),
        ("elf.machine", "62".into()),
        ("signed", "false".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    assert_eq!(objects[0], expected, "exactly these fields, no signature and no error");
}

#[test]
fn a_signed_elf64_little_endian_file() {
    let keys = keys("a");
    let scratch = Scratch::new();
    let file = ls_copy(&scratch, "ls");
    let original_len = fs::metadata(&file).unwrap().len();
    sign(&keys, &file);
    let signed_len = fs::metadata(&file).unwrap().len();
    let (offset, size) = section(&file, ".elfsig").expect("goblin finds the .elfsig section");
    let digest = digest_without_payload(&file);
    let serial = serial(&keys.cert);
    assert_eq!(digest.len(), 64);

    let out = inspect(&[&file], true);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stderr.is_empty());
    let objects = parse_json_lines(&out.stdout);
    assert_eq!(objects.len(), 1);
    let o = &objects[0];
    assert_eq!(get(o, "schema"), "2");
    assert_eq!(get(o, "file"), quoted(&file.display().to_string()));
    assert_eq!(get(o, "elf.class"), quoted("ELF64"));
    assert_eq!(get(o, "elf.endian"), quoted("little"));
    assert_eq!(get(o, "elf.type"), "3", "ls is a PIE");
    assert_eq!(get(o, "elf.machine"), "62", "x86-64");
    assert_eq!(get(o, "signed"), "true");
    assert_eq!(get(o, "signature.format_version"), "1");
    assert_eq!(get(o, "signature.hash_algorithm"), quoted("sha256"));
    assert_eq!(get(o, "signature.digest"), quoted(&digest));
    assert_eq!(get(o, "signature.signed_length"), signed_len.to_string());
    assert_eq!(get(o, "signature.original_length"), original_len.to_string());
    assert_eq!(get(o, "signature.signature_algorithm"), quoted("rsa-pkcs1v15"));
    assert_eq!(get(o, "signature.key_bits"), "2048");
    assert_eq!(get(o, "signature.signer.issuer"), quoted("CN=elfsig test key a"));
    assert_eq!(get(o, "signature.signer.serial").to_lowercase(), quoted(&serial));
    assert_payload(o, offset, size, "section");
    assert!(!has(o, "error"));
    let keys_in_order: Vec<&str> = o.iter().map(|(k, _)| k.split('.').next().unwrap()).collect();
    let mut top: Vec<&str> = keys_in_order.clone();
    top.dedup();
    assert_eq!(top, ["schema", "file", "elf", "signed", "signature"], "top-level fields in schema order");

    let out = inspect(&[&file], false);
    assert_eq!(out.status.code(), Some(0));
    let expected = format!(
        "{file}: signed\n  \
         signer:         CN=elfsig test key a (serial {serial})\n  \
         signature:      RSA-2048 PKCS#1 v1.5 over SHA-512, PKCS#7 detached, format v1\n  \
         entitlements:   none\n  \
         digest:         sha256:{digest}\n  \
         signed length:  {signed_len} bytes (original {original_len} bytes)\n  \
         payload:        {size} bytes at offset {offset:#x} (section .elfsig)\n",
        file = file.display(),
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), expected);
}

#[test]
fn a_signed_elf32_big_endian_file() {
    let keys = keys("a");
    let scratch = Scratch::new();
    let spec = Spec::new(Class::Elf32, Endian::Big);
    let bytes = synth(&spec);
    let file = scratch.write("elf32-be", &bytes);
    sign(&keys, &file);
    let (offset, size) = section(&file, ".elfsig").expect("goblin finds the .elfsig section");

    let out = inspect(&[&file], true);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let objects = parse_json_lines(&out.stdout);
    let o = &objects[0];
    assert_eq!(get(o, "elf.class"), quoted("ELF32"));
    assert_eq!(get(o, "elf.endian"), quoted("big"));
    assert_eq!(get(o, "elf.type"), "2", "ET_EXEC");
    assert_eq!(get(o, "elf.machine"), spec.e_machine().to_string());
    assert_eq!(get(o, "signed"), "true");
    assert_eq!(get(o, "signature.original_length"), bytes.len().to_string());
    assert_eq!(get(o, "signature.signed_length"), fs::metadata(&file).unwrap().len().to_string());
    assert_eq!(get(o, "signature.digest"), quoted(&digest_without_payload(&file)));
    assert_payload(o, offset, size, "section");
    assert_eq!(get(o, "signature.key_bits"), "2048");
    let out = inspect(&[&file], false);
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last = stdout.lines().last().unwrap();
    assert_eq!(last, format!("  payload:        {size} bytes at offset {offset:#x} (section .elfsig)"), "{stdout}");
}

/// Asserts that the object's `signature.payload` is exactly `{"offset", "size", "anchor"}` with
/// these values, and that the `signature.section` object of old is gone.
fn assert_payload(o: &Flat, offset: usize, size: usize, anchor: &str) {
    let fields: Vec<(&str, &str)> =
        o.iter().filter(|(k, _)| k.starts_with("signature.payload.")).map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let (offset, size, anchor) = (offset.to_string(), size.to_string(), quoted(anchor));
    let expected = [
        ("signature.payload.offset", offset.as_str()),
        ("signature.payload.size", size.as_str()),
        ("signature.payload.anchor", anchor.as_str()),
    ];
    assert_eq!(fields, expected, "signature.payload, in this order: {o:?}");
    assert!(!has(o, "signature.section"), "{o:?}");
}

/// A file without a section header table carries its payload after a trailer, and says so.
#[test]
fn a_signed_file_without_a_section_header_table() {
    let keys = keys("a");
    let scratch = Scratch::new();
    for spec in [
        Spec::new(Class::Elf64, Endian::Little).sections(Sections::None),
        Spec::new(Class::Elf32, Endian::Big).kind(elfsig_fixtures::Kind::Dyn).sections(Sections::None),
    ] {
        let bytes = synth(&spec);
        let file = scratch.write(&spec.name(), &bytes);
        sign(&keys, &file);
        let signed = fs::read(&file).unwrap();
        assert!(section(&file, ".elfsig").is_none(), "{}: no .elfsig section", spec.name());
        let (offset, size) = trailer(&signed).unwrap_or_else(|| panic!("{}: no trailer", spec.name()));
        let (offset, size) = (offset as usize, size as usize);
        assert_eq!(signature_payload(&file).anchor, Anchor::Trailer);
        assert!(offset >= bytes.len() && offset + size < signed.len(), "{}: {offset} + {size}", spec.name());
        let digest = digest_without_payload(&file);

        let out = inspect(&[&file], true);
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        assert!(out.stderr.is_empty());
        let objects = parse_json_lines(&out.stdout);
        assert_eq!(objects.len(), 1);
        let o = &objects[0];
        assert_eq!(get(o, "elf.class"), quoted(if spec.class == Class::Elf64 { "ELF64" } else { "ELF32" }));
        assert_eq!(get(o, "signed"), "true");
        assert_eq!(get(o, "signature.digest"), quoted(&digest));
        assert_eq!(get(o, "signature.signed_length"), signed.len().to_string());
        assert_eq!(get(o, "signature.original_length"), bytes.len().to_string());
        assert_payload(o, offset, size, "trailer");

        let out = inspect(&[&file], false);
        assert_eq!(out.status.code(), Some(0));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.starts_with(&format!("{}: signed\n", file.display())), "{stdout}");
        assert!(stdout.contains(&format!("  digest:         sha256:{digest}\n")), "{stdout}");
        assert!(
            stdout.ends_with(&format!("  payload:        {size} bytes at offset {offset:#x} (trailer)\n")),
            "{stdout}"
        );
    }
}

/// `-q` silences the summary, but inspect's result lines are its output: they are still printed,
/// and errors are still reported.
#[test]
fn quiet_inspect_prints_its_results_but_no_summary() {
    let keys = keys("a");
    let scratch = Scratch::new();
    let signed = ls_copy(&scratch, "signed");
    sign(&keys, &signed);
    let unsigned = ls_copy(&scratch, "unsigned");
    let not_elf = scratch.write("not-elf", b"#!/bin/sh\n");
    let files = [&signed, &unsigned];

    for json in [false, true] {
        let loud = inspect(&files, json);
        assert_eq!(loud.status.code(), Some(0));
        assert_eq!(String::from_utf8_lossy(&loud.stderr), "elfsig: inspected: 2 done\n");
        assert!(loud.stdout.len() > 100);
        for quiet in [&["-q", "inspect"][..], &["inspect", "-q"], &["inspect", "--quiet"]] {
            let mut cmd = elfsig();
            cmd.args(quiet);
            if json {
                cmd.arg("--json");
            }
            let out = cmd.args(files).output().unwrap();
            let context = format!("{quiet:?} json={json}");
            assert_eq!(out.status.code(), Some(0), "{context}");
            assert_eq!(String::from_utf8_lossy(&out.stderr), "", "{context}: no summary");
            assert_eq!(String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&loud.stdout), "{context}");
        }
    }
    let text = inspect(&files, false);
    let stdout = String::from_utf8_lossy(&text.stdout);
    assert!(stdout.starts_with(&format!("{}: signed\n", signed.display())), "{stdout}");
    assert!(stdout.ends_with(&format!("{}: not signed\n", unsigned.display())), "{stdout}");

    // An error is still reported, without a summary; the good file's lines are still printed.
    let out = elfsig().args(["-q", "inspect"]).arg(&unsigned).arg(&not_elf).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&out.stdout), format!("{}: not signed\n", unsigned.display()));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!("elfsig: {}: malformed ELF: not an ELF file\n", not_elf.display())
    );
}

#[test]
fn several_files_one_line_each_in_order_with_errors_reported_in_place() {
    let keys = keys("a");
    let scratch = Scratch::new();
    let signed = ls_copy(&scratch, "signed");
    sign(&keys, &signed);
    let unsigned = ls_copy(&scratch, "unsigned");
    let mut broken = fs::read(&unsigned).unwrap();
    broken[4] = 9; // EI_CLASS
    let malformed = scratch.write("malformed", &broken);
    let missing = scratch.path("missing");
    let big_endian = scratch.write("elf32-be", &synth(&Spec::new(Class::Elf32, Endian::Big)));
    sign(&keys, &big_endian);

    // All good: exit 0, one object per file, in order.
    let out = inspect(&[&unsigned, &signed, &big_endian], true);
    assert_eq!(out.status.code(), Some(0));
    let objects = parse_json_lines(&out.stdout);
    let files: Vec<&str> = objects.iter().map(|o| get(o, "file")).collect();
    let expected: Vec<String> =
        [&unsigned, &signed, &big_endian].iter().map(|f| quoted(&f.display().to_string())).collect();
    assert_eq!(files, expected);
    assert_eq!(String::from_utf8_lossy(&out.stderr), "elfsig: inspected: 3 done\n");

    // With a malformed and a missing file among them.
    let order = [&signed, &malformed, &unsigned, &missing, &big_endian];
    let out = inspect(&order, true);
    assert_eq!(out.status.code(), Some(1), "a malformed file fails");
    let objects = parse_json_lines(&out.stdout);
    assert_eq!(objects.len(), 5, "every file is reported");
    for (object, file) in objects.iter().zip(order) {
        assert_eq!(get(object, "file"), quoted(&file.display().to_string()), "in the order given");
        assert_eq!(get(object, "schema"), "2");
    }
    assert_eq!(get(&objects[0], "signed"), "true");
    assert_eq!(get(&objects[1], "error.kind"), quoted("malformed_elf"));
    assert_eq!(get(&objects[1], "error.message"), quoted("malformed ELF: unknown ELF class 9"));
    assert!(!has(&objects[1], "signed") && !has(&objects[1], "signature") && !has(&objects[1], "elf"));
    assert_eq!(get(&objects[2], "signed"), "false");
    assert_eq!(get(&objects[3], "error.kind"), quoted("io_error"));
    assert!(get(&objects[3], "error.message").contains("No such file or directory"));
    assert_eq!(get(&objects[4], "elf.class"), quoted("ELF32"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("elfsig: {}: malformed ELF: unknown ELF class 9\n", malformed.display())),
        "{stderr}"
    );
    assert!(stderr.ends_with("elfsig: inspected: 3 done, 2 failed\n"), "{stderr}");
    assert!(!stderr.contains('\x1b') && !stderr.contains('\r'), "no progress bar without a terminal");

    // As text: the good files are reported, the bad ones only on stderr.
    let out = inspect(&order, false);
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let firsts: Vec<&str> = stdout.lines().filter(|l| !l.starts_with(' ')).collect();
    assert_eq!(
        firsts,
        [
            format!("{}: signed", signed.display()),
            format!("{}: not signed", unsigned.display()),
            format!("{}: signed", big_endian.display()),
        ]
    );
}
