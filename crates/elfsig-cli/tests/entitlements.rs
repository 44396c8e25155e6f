//! Entitlements in the signature: granted with `sign --entitle`, shown by `inspect` and
//! `verify`, covered by the signature, kept by a re-sign that says nothing and replaced by one
//! that does; a signature without them is the version 1 record every verifier reads.

#[allow(unreachable_pub)]
mod common;

use std::fs;
use std::path::Path;

use common::layout::{u16_at, u32_at};
use common::{Scratch, elfsig, keys, payload, sign, verify};
use predicates::str::contains;

/// Signs `file` with key `a`, granting `entitle` (each an `--entitle` word).
fn sign_entitled(file: &Path, entitle: &[&str]) -> assert_cmd::assert::Assert {
    let keys = keys("a");
    let mut cmd = elfsig();
    cmd.arg("sign").arg("--key").arg(&keys.key).arg("--cert").arg(&keys.cert);
    for word in entitle {
        cmd.args(["--entitle", word]);
    }
    cmd.arg(file).assert()
}

/// The record's format version and entitlement bits.
fn record_fields(file: &Path) -> (u16, u32) {
    let bytes = fs::read(file).unwrap();
    let (offset, _) = payload(file);
    (u16_at(&bytes, offset + 8), u32_at(&bytes, offset + 12))
}

fn inspect_json(file: &Path) -> serde_json::Value {
    let out = elfsig().args(["inspect", "--json"]).arg(file).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn program(scratch: &Scratch) -> std::path::PathBuf {
    scratch.copy(&elfsig_fixtures::system_binary("true").expect("true is installed"), "true")
}

#[test]
fn granted_entitlements_are_signed_shown_and_verified() {
    let scratch = Scratch::new();
    let file = program(&scratch);
    sign_entitled(&file, &["jit", "debugger"]).success();
    assert_eq!(record_fields(&file), (2, 3), "a version 2 record with both bits");
    let json = inspect_json(&file);
    assert_eq!(json["signature"]["format_version"], 2);
    assert_eq!(json["signature"]["entitlements"], serde_json::json!(["jit", "debugger"]));
    let text = elfsig().arg("inspect").arg(&file).output().unwrap();
    assert!(String::from_utf8_lossy(&text.stdout).contains("  entitlements:   jit, debugger\n"));
    verify(&keys("a"), &file)
        .success()
        .stdout(contains("OK (signed by CN=elfsig test key a, entitled to jit,debugger)"));
    // The program still runs as it did.
    assert!(std::process::Command::new(&file).status().unwrap().success());
}

#[test]
fn without_entitlements_the_record_is_version_1() {
    let scratch = Scratch::new();
    let file = program(&scratch);
    sign(&keys("a"), &file);
    assert_eq!(record_fields(&file), (1, 0));
    assert_eq!(inspect_json(&file)["signature"]["entitlements"], serde_json::json!([]));
    verify(&keys("a"), &file).success().stdout(contains("OK (signed by CN=elfsig test key a)\n"));
}

#[test]
fn re_signing_keeps_entitlements_unless_told_otherwise() {
    let scratch = Scratch::new();
    let file = program(&scratch);
    sign_entitled(&file, &["jit"]).success();
    let entitled = fs::read(&file).unwrap();
    sign(&keys("a"), &file);
    assert_eq!(fs::read(&file).unwrap(), entitled, "a re-sign that says nothing keeps the grant, byte for byte");
    sign_entitled(&file, &["debugger"]).success();
    assert_eq!(record_fields(&file), (2, 2), "--entitle replaces what was granted");
    sign_entitled(&file, &["none"]).success();
    assert_eq!(record_fields(&file), (1, 0), "--entitle none takes it away");
    elfsig().arg("remove").arg(&file).assert().success();
    assert_eq!(fs::read(&file).unwrap(), fs::read(elfsig_fixtures::system_binary("true").unwrap()).unwrap());
}

#[test]
fn the_signature_covers_the_entitlements() {
    let scratch = Scratch::new();
    let file = program(&scratch);
    sign(&keys("a"), &file);
    let mut bytes = fs::read(&file).unwrap();
    let (offset, _) = payload(&file);
    // Granting jit by hand: a valid version 2 record, which the signature does not cover.
    bytes[offset + 8] = 2;
    bytes[offset + 12] = 1;
    fs::write(&file, &bytes).unwrap();
    verify(&keys("a"), &file).failure().stderr(contains("bad signature"));
    // A bit no entitlement has is malformed, not ignored.
    bytes[offset + 12] = 4;
    fs::write(&file, &bytes).unwrap();
    verify(&keys("a"), &file).failure().stderr(contains("unknown entitlements 0x4"));
}

#[test]
fn unknown_or_mixed_words_are_refused() {
    let scratch = Scratch::new();
    let file = program(&scratch);
    sign_entitled(&file, &["allow-jit"]).failure().stderr(contains("must be one of jit, debugger, or none"));
    sign_entitled(&file, &["none", "jit"]).failure().stderr(contains("--entitle none grants nothing"));
    assert_eq!(fs::read(&file).unwrap(), fs::read(elfsig_fixtures::system_binary("true").unwrap()).unwrap());
}
