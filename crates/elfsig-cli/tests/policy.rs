//! `elfsig policy create|sign|inspect`: what a policy holds, its serial rules, signing at once or
//! later, OpenSSL as the oracle of the detached signature the kernel checks, and refusals of
//! whatever is not exactly a signed policy.

#[allow(unreachable_pub)]
mod common;

use std::path::Path;
use std::process::Command;

use common::{Scratch, elfsig, keys, sign};
use predicates::prelude::PredicateBooleanExt;
use predicates::str::contains;

/// The parts of a signed policy: body, signature, by the trailer's length field.
fn split(bytes: &[u8]) -> (&[u8], &[u8]) {
    let trailer = &bytes[bytes.len() - 12..];
    assert_eq!(&trailer[4..], b"ELFSIGPS");
    let sig_len = u32::from_le_bytes(trailer[..4].try_into().unwrap()) as usize;
    let body_end = bytes.len() - 12 - sig_len;
    (&bytes[..body_end], &bytes[body_end..bytes.len() - 12])
}

fn inspect_json(policy: &Path, cert: Option<&Path>) -> serde_json::Value {
    let mut cmd = elfsig();
    cmd.args(["policy", "inspect", "--json"]);
    if let Some(cert) = cert {
        cmd.arg("--cert").arg(cert);
    }
    let out = cmd.arg(policy).output().unwrap();
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)))
}

#[test]
fn a_policy_revokes_files_and_certificates_and_trusts_certificates_signed_by_the_policy_key() {
    let scratch = Scratch::new();
    let (policy_key, program_key, other) = (keys("policy"), keys("program"), keys("other"));
    let program = scratch.copy(&elfsig_fixtures::system_binary("true").unwrap(), "true");
    sign(&program_key, &program);
    let record_digest = {
        let out = elfsig().args(["inspect", "--json"]).arg(&program).output().unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        v["signature"]["digest"].as_str().unwrap().to_owned()
    };
    let policy = scratch.path("policy");
    elfsig()
        .args(["policy", "create", "--serial", "7"])
        .arg("--revoke")
        .arg(&program)
        .args(["--revoke", &format!("sha256:{}", "AB".repeat(32))])
        .arg("--revoke-cert")
        .arg(&other.cert)
        .arg("--trust")
        .arg(&program_key.cert)
        .arg("--key")
        .arg(&policy_key.key)
        .arg("--cert")
        .arg(&policy_key.cert)
        .arg("-o")
        .arg(&policy)
        .assert()
        .success();
    let v = inspect_json(&policy, Some(&policy_key.cert));
    assert_eq!(v["serial"], 7);
    assert_eq!(v["signed"], true);
    assert_eq!(v["verified"], true, "{v}");
    // Ascending, as the format wants them; the file's digest is the one its signature covers.
    let mut expected = vec![format!("sha256:{record_digest}"), format!("sha256:{}", "ab".repeat(32))];
    expected.sort();
    assert_eq!(v["revoked_digests"], serde_json::json!(expected));
    assert!(v["revoked_certs"][0]["certificate"].as_str().unwrap().contains("elfsig test key other"));
    assert!(v["trusted_certs"][0]["certificate"].as_str().unwrap().contains("elfsig test key program"));

    // OpenSSL, the oracle of what the kernel checks: a detached PKCS#7 over the body, by the
    // policy key; and not by any other.
    let bytes = std::fs::read(&policy).unwrap();
    let (body, signature) = split(&bytes);
    let (body_file, sig_file) = (scratch.path("body"), scratch.path("sig.der"));
    std::fs::write(&body_file, body).unwrap();
    std::fs::write(&sig_file, signature).unwrap();
    let openssl = |cert: &Path| {
        Command::new("openssl")
            .args(["smime", "-verify", "-binary", "-noverify", "-inform", "DER", "-in"])
            .arg(&sig_file)
            .arg("-content")
            .arg(&body_file)
            .arg("-certfile")
            .arg(cert)
            .arg("-nointern")
            .arg("-out")
            .arg("/dev/null")
            .output()
            .unwrap()
            .status
            .success()
    };
    assert!(openssl(&policy_key.cert));
    assert!(!openssl(&program_key.cert));

    // Checked against a certificate that did not sign it: exit status 1, said.
    elfsig()
        .args(["policy", "inspect", "--cert"])
        .arg(&program_key.cert)
        .arg(&policy)
        .assert()
        .failure()
        .stderr(contains("signed by none of the certificates given"));
    // Text, for people.
    elfsig()
        .args(["policy", "inspect"])
        .arg(&policy)
        .assert()
        .success()
        .stdout(contains("serial 7").and(contains("revoked digests: 2")).and(contains("not checked")));
}

#[test]
fn serials_only_grow_and_from_adds_to_a_policy() {
    let scratch = Scratch::new();
    let policy_key = keys("policy");
    let first = scratch.path("first");
    elfsig().args(["policy", "create", "--serial", "3", "-o"]).arg(&first).assert().success();
    // Without --serial or --from: said why.
    elfsig().args(["policy", "create", "-o"]).arg(scratch.path("x")).assert().code(2).stderr(contains("--serial"));
    // --from with a serial not above its own.
    for serial in ["3", "2"] {
        elfsig()
            .args(["policy", "create", "--serial", serial, "--from"])
            .arg(&first)
            .arg("-o")
            .arg(scratch.path("x"))
            .assert()
            .code(2)
            .stderr(contains("not above"));
    }
    let second = scratch.path("second");
    elfsig()
        .args(["policy", "create", "--from"])
        .arg(&first)
        .args(["--revoke", &format!("sha256:{}", "01".repeat(32))])
        .arg("-o")
        .arg(&second)
        .assert()
        .success();
    let third = scratch.path("third");
    elfsig()
        .args(["policy", "create", "--from"])
        .arg(&second)
        .args(["--revoke", &format!("sha256:{}", "00".repeat(32))])
        .args(["--revoke", &format!("sha256:{}", "01".repeat(32))])
        .arg("-o")
        .arg(&third)
        .assert()
        .success();
    let v = inspect_json(&third, None);
    assert_eq!(v["serial"], 5);
    assert_eq!(v["signed"], false);
    assert_eq!(v["revoked_digests"].as_array().unwrap().len(), 2);
    // Signed later, where the policy key is; then signed again, the same body.
    let signed = scratch.path("signed");
    elfsig()
        .args(["policy", "sign", "--key"])
        .arg(&policy_key.key)
        .arg("--cert")
        .arg(&policy_key.cert)
        .arg("-o")
        .arg(&signed)
        .arg(&third)
        .assert()
        .success();
    assert_eq!(inspect_json(&signed, Some(&policy_key.cert))["verified"], true);
    let body = std::fs::read(&third).unwrap();
    assert_eq!(split(&std::fs::read(&signed).unwrap()).0, &body[..]);
    let other = keys("other");
    elfsig()
        .args(["policy", "sign", "--key"])
        .arg(&other.key)
        .arg("--cert")
        .arg(&other.cert)
        .arg(&signed)
        .assert()
        .success();
    assert_eq!(split(&std::fs::read(&signed).unwrap()).0, &body[..]);
    assert_eq!(inspect_json(&signed, Some(&policy_key.cert))["verified"], false);
}

#[test]
fn what_is_not_exactly_a_policy_is_refused() {
    let scratch = Scratch::new();
    let policy_key = keys("policy");
    let policy = scratch.path("policy");
    elfsig()
        .args(["policy", "create", "--serial", "1", "--revoke", &format!("sha256:{}", "02".repeat(32)), "--key"])
        .arg(&policy_key.key)
        .arg("--cert")
        .arg(&policy_key.cert)
        .arg("-o")
        .arg(&policy)
        .assert()
        .success();
    let bytes = std::fs::read(&policy).unwrap();
    // Truncated anywhere, or with a byte more: neither a signed policy nor a body.
    for len in (0..bytes.len()).step_by(7).chain([bytes.len() - 1]) {
        let cut = scratch.path("cut");
        std::fs::write(&cut, &bytes[..len]).unwrap();
        elfsig().args(["policy", "inspect"]).arg(&cut).assert().failure();
    }
    let mut longer = bytes.clone();
    longer.push(0);
    std::fs::write(scratch.path("longer"), &longer).unwrap();
    elfsig().args(["policy", "inspect"]).arg(scratch.path("longer")).assert().failure();
    // A body byte changed: still a policy, but the signature no longer verifies.
    let mut changed = bytes.clone();
    changed[40] ^= 1;
    std::fs::write(scratch.path("changed"), &changed).unwrap();
    elfsig()
        .args(["policy", "inspect", "--cert"])
        .arg(&policy_key.cert)
        .arg(scratch.path("changed"))
        .assert()
        .failure()
        .stderr(contains("does not verify"));
    // Bad arguments, said.
    for (revoke, said) in [("sha256:12", "64 hex digits"), ("sha256:zz", "64 hex digits")] {
        elfsig()
            .args(["policy", "create", "--serial", "1", "--revoke", revoke, "-o"])
            .arg(scratch.path("x"))
            .assert()
            .code(2)
            .stderr(contains(said));
    }
    let unsigned = scratch.copy(&elfsig_fixtures::system_binary("true").unwrap(), "unsigned");
    elfsig()
        .args(["policy", "create", "--serial", "1", "--revoke"])
        .arg(&unsigned)
        .arg("-o")
        .arg(scratch.path("x"))
        .assert()
        .code(2)
        .stderr(contains("not signed"));
    elfsig()
        .args(["policy", "create", "--serial", "1", "--trust"])
        .arg(&policy_key.cert)
        .arg("--revoke-cert")
        .arg(&policy_key.cert)
        .arg("-o")
        .arg(scratch.path("x"))
        .assert()
        .code(2)
        .stderr(contains("both revoked and trusted"));
    assert!(!scratch.path("x").exists());
}
