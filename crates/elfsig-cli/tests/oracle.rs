//! Independent tools as oracles: OpenSSL verifies the PKCS#7 signature over the record, SHA-256
//! of the file without its payload is the record's digest, and goblin, readelf, eu-elflint and
//! objdump see in a signed file the same program as in the original, with nothing new to
//! complain about. A file without a section header table stays without one: its payload is
//! found through the trailer at its end, and its ELF header is untouched.
//!
//! The tools come from the Debian packages openssl, binutils and elfutils; a missing one fails
//! the test with the package to install.

// The shared helpers are `pub` for every test crate that includes them.
#[allow(unreachable_pub)]
mod common;

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;

use common::layout::{RECORD_DIGEST, RECORD_LEN, u16_at, u64_at};
use common::oracle::{openssl_verify, record_and_blob, run, text, tool};
use common::{
    Anchor, Keys, Scratch, TRAILER_LEN, TRAILER_MAGIC, elfsig, keys, payload, sign, signature_payload, system_programs,
    trailer, verify,
};
use elfsig_fixtures::{ALL_BUILT, build, synth_matrix};
use sha2::{Digest, Sha256};

/// A file and its signed copy, with the same file name in two directories, so that tools that
/// print the file name print the same thing for both.
#[derive(Debug)]
struct Pair {
    name: String,
    dir: PathBuf,
    signed_dir: PathBuf,
}

impl Pair {
    fn original(&self) -> PathBuf {
        self.dir.join(&self.name)
    }

    fn signed(&self) -> PathBuf {
        self.signed_dir.join(&self.name)
    }
}

/// Copies `sources` (name, bytes) into `scratch`, once as they are and once signed by `keys`.
fn pairs(scratch: &Scratch, keys: &Keys, sources: Vec<(String, Vec<u8>)>) -> Vec<Pair> {
    let dir = scratch.path("original");
    let signed_dir = scratch.path("signed");
    fs::create_dir_all(&dir).unwrap();
    fs::create_dir_all(&signed_dir).unwrap();
    sources
        .into_iter()
        .map(|(name, bytes)| {
            let pair = Pair { name, dir: dir.clone(), signed_dir: signed_dir.clone() };
            fs::write(pair.original(), &bytes).unwrap();
            fs::write(pair.signed(), &bytes).unwrap();
            sign(keys, &pair.signed());
            pair
        })
        .collect()
}

/// Some of this machine's programs.
fn programs(names: &[&str]) -> Vec<(String, Vec<u8>)> {
    let found: Vec<_> = system_programs().into_iter().filter(|(name, _, _)| names.contains(name)).collect();
    assert!(found.iter().any(|(n, _, _)| *n == "ls") && found.iter().any(|(n, _, _)| *n == "bash"));
    found.into_iter().map(|(name, path, _)| (name.to_owned(), fs::read(path).unwrap())).collect()
}

/// Every file worth signing: this machine's programs, every synthetic shape, and whatever real
/// binaries this machine's toolchains build.
fn everything() -> Vec<(String, Vec<u8>)> {
    let mut all: Vec<_> =
        system_programs().into_iter().map(|(name, path, _)| (name.to_owned(), fs::read(path).unwrap())).collect();
    all.extend(synth_matrix());
    let mut built = 0;
    for what in ALL_BUILT {
        match build(*what) {
            Ok(path) => {
                all.push((what.name().to_owned(), fs::read(path).unwrap()));
                built += 1;
            }
            Err(why) => eprintln!("skipping {}: {why}", what.name()),
        }
    }
    assert!(built >= 4, "only {built} built fixtures: is gcc installed?");
    all
}

/// The key kinds the oracle checks: RSA, ECDSA on P-256 and on P-384 (name prefixes for
/// [`keys`]).
const KINDS: [&str; 3] = ["", "ecdsa-p256-", "ecdsa-p384-"];

#[test]
fn openssl_verifies_the_signature_over_the_record() {
    for kind in KINDS {
        openssl_verifies_with(kind);
    }
}

fn openssl_verifies_with(kind: &str) {
    let (a, b) = (keys(&format!("{kind}a")), keys(&format!("{kind}b")));
    let scratch = Scratch::new();
    let work = scratch.path("work");
    fs::create_dir(&work).unwrap();
    for pair in pairs(&scratch, &a, programs(&["ls", "bash", "busybox"])) {
        let (record, blob) = record_and_blob(&pair.signed());
        let good = openssl_verify(&work, &record, &blob, &a.cert);
        assert!(good.status.success(), "{}: openssl refuses the signature: {}", pair.name, text(&good.stderr));
        assert!(text(&good.stderr).contains("Verification successful"), "{}", pair.name);

        for at in [0, 16, RECORD_DIGEST, RECORD_LEN - 1] {
            let mut changed = record.clone();
            changed[at] ^= 0x01;
            let bad = openssl_verify(&work, &changed, &blob, &a.cert);
            assert!(!bad.status.success(), "{}: openssl accepts a changed record byte {at}", pair.name);
            assert!(text(&bad.stderr).contains("Verification failure"), "{}: {}", pair.name, text(&bad.stderr));
        }

        let other = openssl_verify(&work, &record, &blob, &b.cert);
        assert!(!other.status.success(), "{}: openssl accepts the signature with another certificate", pair.name);
        assert!(text(&other.stderr).contains("signer certificate not found"), "{}", text(&other.stderr));
    }
}

#[test]
fn the_blob_carries_no_certificate_and_no_signed_attributes() {
    let openssl = tool("openssl", "openssl");
    let keys = keys("a");
    let scratch = Scratch::new();
    let cert_der = run(&openssl, &["x509", "-in", keys.cert.to_str().unwrap(), "-outform", "DER"], scratch.dir.path());
    assert!(cert_der.status.success() && cert_der.stdout.len() > 500, "{}", text(&cert_der.stderr));
    for pair in pairs(&scratch, &keys, programs(&["ls", "bash"])) {
        let (_, blob) = record_and_blob(&pair.signed());
        assert!(!blob.windows(cert_der.stdout.len()).any(|w| w == cert_der.stdout), "the certificate is embedded");
        fs::write(scratch.path("sig.p7"), &blob).unwrap();
        let parsed = run(&openssl, &["asn1parse", "-inform", "DER", "-in", "sig.p7"], scratch.dir.path());
        assert!(parsed.status.success(), "{}", text(&parsed.stderr));
        let out = text(&parsed.stdout);
        // Lines such as "   15:d=1  hl=4 l= 368 cons: cont [ 0 ]": (depth, what).
        let lines: Vec<(u32, String)> = out
            .lines()
            .map(|line| {
                let depth = line.split("d=").nth(1).and_then(|d| d.split_whitespace().next()).unwrap();
                let what = line.split_once(": ").map_or("", |(_, w)| w.trim());
                (depth.parse().unwrap(), what.to_owned())
            })
            .collect();
        let count = |pattern: &str| lines.iter().filter(|(_, w)| w.contains(pattern)).count();
        assert_eq!(count(":pkcs7-signedData"), 1, "{out}");
        assert_eq!(count(":pkcs7-data"), 1, "{out}");
        assert_eq!(count(":sha512"), 2, "digestAlgorithms and the signer's digest algorithm: {out}");
        assert_eq!(count(":rsaEncryption"), 1, "{out}");
        assert_eq!(count(":commonName"), 1, "only the signer's issuer, no certificate: {out}");
        assert_eq!(count("OCTET STRING"), 1, "only the signature value: the content is detached: {out}");
        // The only context-specific tag is the ContentInfo's [0]: no certificates ([0] in the
        // SignedData), no CRLs ([1]), no signed ([0]) or unsigned ([1]) attributes.
        let tagged: Vec<_> = lines.iter().filter(|(_, w)| w.contains("cont [")).collect();
        assert_eq!(tagged, [&(1, "cont [ 0 ]".to_owned())], "{out}");
        for attribute in [":contentType", ":messageDigest", ":signingTime", ":S/MIME Capabilities"] {
            assert_eq!(count(attribute), 0, "{out}");
        }
    }
}

/// Verifies, in one run of `elfsig verify`, one copy of `signed` per position with that byte
/// flipped; returns which positions still verify.
fn elfsig_accepts(scratch: &Scratch, keys: &Keys, signed: &[u8], positions: &[usize]) -> Vec<bool> {
    let dir = scratch.path("flipped");
    fs::create_dir_all(&dir).unwrap();
    let paths: Vec<PathBuf> = positions
        .iter()
        .map(|&at| {
            let mut copy = signed.to_vec();
            copy[at] ^= 0xff;
            let path = dir.join(format!("{at:08}"));
            fs::write(&path, copy).unwrap();
            path
        })
        .collect();
    let output = elfsig().arg("verify").arg("--cert").arg(&keys.cert).args(&paths).output().unwrap();
    let stdout = text(&output.stdout);
    let passed: BTreeSet<&str> = stdout.lines().filter_map(|l| l.split_once(": OK (signed by ").map(|p| p.0)).collect();
    let stderr = text(&output.stderr);
    paths
        .iter()
        .map(|p| {
            let shown = p.display().to_string();
            let failed = stderr.contains(&format!("elfsig: {shown}: "));
            assert!(passed.contains(shown.as_str()) != failed, "{shown}: neither passed nor failed, or both");
            !failed
        })
        .collect()
}

/// The differential test: whatever single-byte change to the PKCS#7 blob makes OpenSSL refuse
/// it, `verify` refuses too (it may be stricter, never laxer).
#[test]
fn elfsig_refuses_every_blob_openssl_refuses() {
    for kind in KINDS {
        elfsig_refuses_what_openssl_refuses_with(kind);
    }
}

fn elfsig_refuses_what_openssl_refuses_with(kind: &str) {
    let keys = keys(&format!("{kind}a"));
    let scratch = Scratch::new();
    let work = scratch.path("work");
    fs::create_dir(&work).unwrap();
    let pair = pairs(&scratch, &keys, programs(&["ls", "bash"])).remove(0);
    let signed = fs::read(pair.signed()).unwrap();
    let (offset, size) = payload(&pair.signed());
    let (record, blob) = record_and_blob(&pair.signed());
    assert!(openssl_verify(&work, &record, &blob, &keys.cert).status.success(), "openssl refuses the untouched blob");
    let positions: Vec<usize> = (offset + RECORD_LEN..offset + size).collect();
    let elfsig_accepts = elfsig_accepts(&scratch, &keys, &signed, &positions);
    let mut laxer = Vec::new();
    for (i, accepted) in elfsig_accepts.into_iter().enumerate() {
        let mut changed = blob.clone();
        changed[i] ^= 0xff;
        let openssl_accepts = openssl_verify(&work, &record, &changed, &keys.cert).status.success();
        if accepted && !openssl_accepts {
            laxer.push(format!("PKCS#7 byte {i} (file offset {:#x})", offset + RECORD_LEN + i));
        }
    }
    assert!(
        laxer.is_empty(),
        "elfsig accepts blobs that openssl refuses, with these bytes flipped:\n{}",
        laxer.join("\n")
    );
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn the_record_digest_is_sha256_of_the_file_without_its_payload() {
    let keys = keys("a");
    let scratch = Scratch::new();
    let pairs = pairs(&scratch, &keys, everything());
    let inspect = elfsig().args(["inspect", "--json"]).args(pairs.iter().map(Pair::signed)).output().unwrap();
    assert!(inspect.status.success(), "{}", text(&inspect.stderr));
    let reports: Vec<serde_json::Value> =
        text(&inspect.stdout).lines().map(|line| serde_json::from_str(line).unwrap()).collect();
    assert_eq!(reports.len(), pairs.len());
    for (pair, report) in pairs.iter().zip(reports) {
        let name = &pair.name;
        let original = fs::read(pair.original()).unwrap();
        let signed = fs::read(pair.signed()).unwrap();
        let header = goblin::elf::Elf::parse_header(&original).unwrap();
        let had_sections = header.e_shoff != 0;
        let found = signature_payload(&pair.signed());
        let expected_anchor = if had_sections { Anchor::Section } else { Anchor::Trailer };
        assert_eq!(found.anchor, expected_anchor, "{name}: what points at the payload");
        let (offset, size) = (found.offset, found.size);
        let record = &signed[offset..offset + RECORD_LEN];

        let mut hasher = Sha256::new();
        hasher.update(&signed[..offset]);
        hasher.update(&signed[offset + size..]);
        let digest: [u8; 32] = hasher.finalize().into();
        assert_eq!(hex(&record[RECORD_DIGEST..]), hex(&digest), "{name}: the record's digest");
        assert_ne!(digest, <[u8; 32]>::from(Sha256::digest(&signed)), "{name}: the payload must not be hashed");

        assert_eq!(report["file"], pair.signed().display().to_string());
        let signature = &report["signature"];
        assert_eq!(signature["digest"], hex(&digest), "{name}: inspect's digest");
        assert_eq!(signature["hash_algorithm"], "sha256");
        assert_eq!(signature["payload"]["offset"], offset as u64, "{name}");
        assert_eq!(signature["payload"]["size"], size as u64, "{name}");
        assert_eq!(signature["payload"]["anchor"], expected_anchor.json_name(), "{name}");
        assert_eq!(signature["payload"].as_object().map(|o| o.len()), Some(3), "{name}: {}", signature["payload"]);
        assert!(signature.get("section").is_none(), "{name}: the old `section` object is still there");
        assert_eq!(signature["signed_length"], signed.len() as u64, "{name}");
        assert_eq!(signature["original_length"], original.len() as u64, "{name}");

        // The rest of the record, field by field.
        assert_eq!(&record[..8], b"ELFSIGRC", "{name}");
        assert_eq!((u16_at(record, 8), u16_at(record, 10)), (1, 1), "{name}: version 1, SHA-256");
        assert_eq!(u64_at(record, 16), signed.len() as u64, "{name}: signed length");
        assert_eq!((u64_at(record, 24), u64_at(record, 32)), (offset as u64, size as u64), "{name}: payload");
        assert_eq!(u64_at(record, 40), original.len() as u64, "{name}: original length");
        assert_eq!(u64_at(record, 48), header.e_shoff, "{name}: original e_shoff");
        let fields = (u16_at(record, 56), u16_at(record, 58), u16_at(record, 60));
        assert_eq!(fields, (header.e_shentsize, header.e_shnum, header.e_shstrndx), "{name}: original fields");
        assert!(record[12..16].iter().chain(&record[62..64]).all(|&b| b == 0), "{name}: reserved fields");
        let header_len = usize::from(header.e_ehsize);
        assert!(
            signed[header_len..original.len()] == original[header_len..],
            "{name}: original bytes moved or changed"
        );
        if !had_sections {
            assert!(signed[..header_len] == original[..header_len], "{name}: the ELF header changed");
        }
    }
}

#[test]
fn goblin_sees_the_same_program_and_a_last_signature_section_or_a_trailer() {
    use goblin::elf::Elf;
    use goblin::elf::section_header::SHT_PROGBITS;

    let keys = keys("a");
    let scratch = Scratch::new();
    let mut parsed = 0;
    for pair in pairs(&scratch, &keys, everything()) {
        let name = &pair.name;
        let original_bytes = fs::read(pair.original()).unwrap();
        let signed_bytes = fs::read(pair.signed()).unwrap();
        let original = match Elf::parse(&original_bytes) {
            Ok(elf) => elf,
            Err(e) => panic!("{name}: goblin cannot parse the original: {e}"),
        };
        let signed = Elf::parse(&signed_bytes).unwrap_or_else(|e| panic!("{name}: goblin cannot parse it signed: {e}"));
        parsed += 1;

        let found = signature_payload(&pair.signed());
        let (offset, size) = (found.offset, found.size);
        assert!(offset >= original_bytes.len(), "{name}: the payload is appended");
        let had_sections = original.header.e_shoff != 0;
        if had_sections {
            assert_eq!(found.anchor, Anchor::Section, "{name}");
            let last = signed.section_headers.last().unwrap();
            assert_eq!(signed.shdr_strtab.get_at(last.sh_name), Some(".elfsig"), "{name}");
            assert_eq!((last.sh_type, last.sh_flags, last.sh_addr), (SHT_PROGBITS, 0, 0), "{name}");
            assert_eq!((last.sh_offset, last.sh_size), (offset as u64, size as u64), "{name}");
            assert!(trailer(&signed_bytes).is_none(), "{name}: a file with sections has no trailer");
        } else {
            // Still no section header table, the ELF header byte for byte as it was, and the
            // trailer at the very end pointing at the payload: zero padding to 8 bytes, the
            // payload, zero padding to 8 bytes, the 24-byte trailer.
            assert_eq!(found.anchor, Anchor::Trailer, "{name}");
            assert_eq!(signed.header.e_shoff, 0, "{name}: gained a section header table");
            assert!(signed.section_headers.is_empty(), "{name}: gained sections");
            let header_len = usize::from(original.header.e_ehsize);
            assert!(signed_bytes[..header_len] == original_bytes[..header_len], "{name}: the ELF header changed");
            assert!(signed_bytes.starts_with(&original_bytes), "{name}: original bytes moved or changed");
            assert_eq!(offset, original_bytes.len().next_multiple_of(8), "{name}: payload offset");
            let trailer_at = (offset + size).next_multiple_of(8);
            assert_eq!(signed_bytes.len(), trailer_at + TRAILER_LEN, "{name}: the trailer ends the file");
            assert_eq!(&signed_bytes[trailer_at..trailer_at + 8], TRAILER_MAGIC, "{name}");
            assert_eq!(trailer(&signed_bytes), Some((offset as u64, size as u64)), "{name}: the trailer's fields");
            assert_eq!(&signed_bytes[offset..offset + 8], b"ELFSIGRC", "{name}: the payload starts with the record");
            let padding =
                signed_bytes[original_bytes.len()..offset].iter().chain(&signed_bytes[offset + size..trailer_at]);
            assert!(padding.into_iter().all(|&b| b == 0), "{name}: padding is not zeros");
        }

        assert_eq!(signed.entry, original.entry, "{name}: entry point");
        assert_eq!(signed.header.e_type, original.header.e_type, "{name}");
        assert_eq!(signed.header.e_machine, original.header.e_machine, "{name}");
        assert_eq!(signed.header.e_phoff, original.header.e_phoff, "{name}");
        assert_eq!(signed.program_headers, original.program_headers, "{name}: program headers");
        assert_eq!(signed.interpreter, original.interpreter, "{name}");
        assert_eq!(signed.libraries, original.libraries, "{name}");
        for p in &signed.program_headers {
            let end = p.p_offset + p.p_filesz;
            assert!(p.p_filesz == 0 || end <= original_bytes.len() as u64, "{name}: a segment covers new bytes");
        }

        // The original's sections come first, unchanged but for the name table's position (and
        // section 0, which holds the count under extended numbering); then what the signer adds.
        let names_index = match original.header.e_shstrndx {
            0xffff => original.section_headers[0].sh_link as usize,
            index => usize::from(index),
        };
        let added = signed.section_headers.len() - original.section_headers.len();
        let expected_added = match (had_sections, names_index) {
            (false, _) => 0,
            (true, 0) => 2,
            (true, _) => 1,
        };
        assert_eq!(added, expected_added, "{name}: sections added");
        for (i, (o, s)) in original.section_headers.iter().zip(&signed.section_headers).enumerate().skip(1) {
            assert_eq!(
                original.shdr_strtab.get_at(o.sh_name).unwrap_or(""),
                signed.shdr_strtab.get_at(s.sh_name).unwrap_or(""),
                "{name} [{i}]"
            );
            let unchanged = (o.sh_type, o.sh_flags, o.sh_addr, o.sh_link, o.sh_info, o.sh_addralign, o.sh_entsize);
            assert_eq!(
                unchanged,
                (s.sh_type, s.sh_flags, s.sh_addr, s.sh_link, s.sh_info, s.sh_addralign, s.sh_entsize)
            );
            if i != names_index {
                assert_eq!((o.sh_offset, o.sh_size), (s.sh_offset, s.sh_size), "{name} [{i}]");
            }
        }
    }
    assert!(parsed > 50, "only {parsed} files");
}

/// The warning and error lines a tool printed (standard output and error).
fn complaints(output: &Output, path: &Path) -> BTreeSet<String> {
    let path = path.display().to_string();
    [&output.stdout, &output.stderr]
        .into_iter()
        .flat_map(|bytes| text(bytes).lines().map(str::to_owned).collect::<Vec<_>>())
        .filter(|line| line.contains("Warning") || line.contains("Error") || line.contains("warning"))
        .map(|line| line.replace(&path, "FILE"))
        .collect()
}

#[test]
fn readelf_finds_nothing_new_to_complain_about() {
    let readelf = tool("readelf", "binutils");
    let keys = keys("a");
    let scratch = Scratch::new();
    let mut without_sections = 0;
    for pair in pairs(&scratch, &keys, everything()) {
        let name = pair.name.as_str();
        let before = run(&readelf, &["-a", "-W", name], &pair.dir);
        let after = run(&readelf, &["-a", "-W", name], &pair.signed_dir);
        let new: Vec<_> =
            complaints(&after, &pair.signed()).difference(&complaints(&before, &pair.original())).cloned().collect();
        assert!(new.is_empty(), "{name}: readelf has new complaints:\n{}", new.join("\n"));
        assert!(after.status.success() || !before.status.success(), "{name}: readelf fails on the signed file");
        let had_sections = goblin::elf::Elf::parse_header(&fs::read(pair.original()).unwrap()).unwrap().e_shoff != 0;
        if had_sections {
            let listed = text(&after.stdout).lines().any(|l| l.contains("] .elfsig ") && l.contains("PROGBITS"));
            assert!(listed, "{name}: readelf does not list .elfsig");
        } else {
            // The ELF header is untouched and nothing new is described: readelf sees exactly
            // the original.
            assert!(text(&after.stdout).contains("There are no sections in this file."), "{name}");
            assert_eq!(text(&after.stdout), text(&before.stdout), "{name}: readelf -a sees a different file");
            assert_eq!(text(&after.stderr), text(&before.stderr), "{name}: readelf -a complains differently");
            assert_eq!(after.status.code(), before.status.code(), "{name}");
        }
        without_sections += usize::from(!had_sections);
    }
    assert!(without_sections >= 8, "only {without_sections} files without a section header table");
}

/// What eu-elflint says about a file, one line per complaint; empty for "No errors".
fn elflint(dir: &Path, name: &str) -> BTreeSet<String> {
    let elflint = tool("eu-elflint", "elfutils");
    let output = run(&elflint, &["--gnu-ld", name], dir);
    let all = format!("{}{}", text(&output.stdout), text(&output.stderr));
    let lines: BTreeSet<String> = all.lines().map(|l| l.replace(name, "FILE")).collect();
    if lines.len() == 1 && lines.contains("No errors") {
        assert!(output.status.success(), "{name}: eu-elflint says No errors but exits with {}", output.status);
        BTreeSet::new()
    } else {
        assert!(!lines.is_empty() && !lines.contains("No errors"), "{name}: eu-elflint said {all:?}");
        lines
    }
}

#[test]
fn eu_elflint_finds_nothing_new_to_complain_about() {
    let keys = keys("a");
    let scratch = Scratch::new();
    let (mut clean, mut clean_without_sections) = (0, 0);
    for pair in pairs(&scratch, &keys, everything()) {
        let name = pair.name.as_str();
        let before = elflint(&pair.dir, name);
        let after = elflint(&pair.signed_dir, name);
        let had_sections = goblin::elf::Elf::parse_header(&fs::read(pair.original()).unwrap()).unwrap().e_shoff != 0;
        // No exception for files without a section header table: they keep having none.
        let new: Vec<_> = after.difference(&before).cloned().collect();
        assert!(new.is_empty(), "{name}: eu-elflint has new complaints:\n{}", new.join("\n"));
        if before.is_empty() {
            assert!(after.is_empty(), "{name}: no longer passes eu-elflint");
            clean += 1;
            clean_without_sections += usize::from(!had_sections);
        }
    }
    assert!(clean > 30, "only {clean} files pass eu-elflint: is it working?");
    assert!(
        clean_without_sections >= 8,
        "only {clean_without_sections} files without a section header table pass eu-elflint"
    );
}

#[test]
fn objdump_disassembles_the_same_code() {
    let objdump = tool("objdump", "binutils");
    let keys = keys("a");
    let scratch = Scratch::new();
    for pair in pairs(&scratch, &keys, programs(&["ls", "bash"])) {
        let name = pair.name.as_str();
        let before = run(&objdump, &["-d", "-j", ".text", name], &pair.dir);
        let after = run(&objdump, &["-d", "-j", ".text", name], &pair.signed_dir);
        assert!(before.status.success() && after.status.success(), "{}", text(&after.stderr));
        let (before, after) = (text(&before.stdout), text(&after.stdout));
        assert!(before.lines().count() > 10_000, "{name}: the disassembly is suspiciously short");
        assert!(before == after, "{name}: the disassembly of .text changed");
        verify(&keys, &pair.signed()).success();
    }
}
