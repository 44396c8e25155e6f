//! ECDSA keys end to end: `keygen --algorithm ecdsa-p256|ecdsa-p384`, signing, verifying, what
//! `inspect` names, keys made by OpenSSL (PKCS#8 and SEC1), and the refusals: a changed file, a
//! key of another curve or kind than the certificate's, `--bits` with ECDSA, a curve elfsig does
//! not sign with, an encrypted key, a certificate given as the key. OpenSSL's view of the same signatures is `oracle.rs`.

#[allow(unreachable_pub)]
mod common;

use std::fs;
use std::process::Command;

use common::{Scratch, elfsig, keys, sign, verify};
use elfsig_fixtures::{Class, Endian, Spec, synth};
use predicates::str::contains;

fn program(scratch: &Scratch, name: &str) -> std::path::PathBuf {
    scratch.write(name, &synth(&Spec::new(Class::Elf64, Endian::Little)))
}

#[test]
fn ecdsa_keys_sign_and_verify_and_inspect_names_them() {
    for (kind, name, bits) in [("ecdsa-p256", "ECDSA P-256", "256"), ("ecdsa-p384", "ECDSA P-384", "384")] {
        let scratch = Scratch::new();
        let (key, cert) = (scratch.path("k.pem"), scratch.path("c.pem"));
        elfsig()
            .args(["keygen", "--algorithm", kind, "--key"])
            .arg(&key)
            .arg("--cert")
            .arg(&cert)
            .assert()
            .success()
            .stderr(contains(format!("({name} private key; keep it secret)")));
        let text = Command::new("openssl").args(["x509", "-noout", "-text", "-in"]).arg(&cert).output().unwrap();
        let text = String::from_utf8_lossy(&text.stdout).into_owned();
        assert!(text.contains("ecdsa-with-SHA256") && text.contains("id-ecPublicKey"), "{text}");
        assert!(text.contains("Code Signing"), "{text}");

        let keys = common::Keys { key, cert };
        let file = program(&scratch, "prog");
        sign(&keys, &file);
        verify(&keys, &file).success();
        elfsig()
            .arg("inspect")
            .arg(&file)
            .assert()
            .success()
            .stdout(contains(format!("signature:      {name} with SHA-256, PKCS#7 detached")));
        elfsig()
            .args(["inspect", "--json"])
            .arg(&file)
            .assert()
            .success()
            .stdout(contains(r#""signature_algorithm":"ecdsa""#))
            .stdout(contains(format!(r#""key":"{name}","key_bits":{bits}"#)));

        // One changed byte of the program: refused.
        let mut bytes = fs::read(&file).unwrap();
        bytes[0x40] ^= 1;
        let changed = scratch.write("changed", &bytes);
        verify(&keys, &changed).code(1);
    }
}

#[test]
fn keys_openssl_makes_are_loaded() {
    let scratch = Scratch::new();
    for (curve, format) in [("prime256v1", "pkcs8"), ("secp384r1", "sec1")] {
        let key = scratch.path(&format!("{curve}.key"));
        let cert = scratch.path(&format!("{curve}.crt"));
        // `ecparam -genkey` writes SEC1 with an EC PARAMETERS block first; `pkcs8 -topk8` PKCS#8.
        let sec1 = Command::new("openssl").args(["ecparam", "-name", curve, "-genkey"]).output().unwrap();
        assert!(sec1.status.success());
        if format == "sec1" {
            fs::write(&key, &sec1.stdout).unwrap();
        } else {
            let sec1_path = scratch.write("sec1.pem", &sec1.stdout);
            let out = Command::new("openssl")
                .args(["pkcs8", "-topk8", "-nocrypt", "-in"])
                .arg(&sec1_path)
                .arg("-out")
                .arg(&key)
                .output()
                .unwrap();
            assert!(out.status.success());
        }
        let out = Command::new("openssl")
            .args(["req", "-new", "-x509", "-subj", "/CN=openssl ec", "-days", "2", "-key"])
            .arg(&key)
            .arg("-out")
            .arg(&cert)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let keys = common::Keys { key, cert };
        let file = program(&scratch, &format!("{curve}-prog"));
        sign(&keys, &file);
        verify(&keys, &file).success();
    }
}

#[test]
fn mismatched_and_unusable_keys_are_refused_and_nothing_is_written() {
    let scratch = Scratch::new();
    let file = program(&scratch, "prog");
    let original = fs::read(&file).unwrap();
    let (p256, p384, rsa) = (keys("ecdsa-p256-x"), keys("ecdsa-p384-x"), keys("x"));
    for (key, cert) in [(&p256.key, &p384.cert), (&p256.key, &rsa.cert), (&rsa.key, &p256.cert)] {
        elfsig()
            .arg("sign")
            .arg("--key")
            .arg(key)
            .arg("--cert")
            .arg(cert)
            .arg(&file)
            .assert()
            .code(1)
            .stderr(contains("the private key does not match the certificate"));
    }
    // A P-256 signature does not verify with another P-256 certificate, nor with RSA's.
    let signed = scratch.write("signed", &original);
    sign(&p256, &signed);
    verify(&keys("ecdsa-p256-y"), &signed).code(1);
    verify(&rsa, &signed).code(1);

    // P-521: OpenSSL makes it, the kernel would verify it, elfsig does not sign with it (yet).
    let p521 = scratch.path("p521.key");
    let out = Command::new("openssl")
        .args(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:secp521r1", "-out"])
        .arg(&p521)
        .output()
        .unwrap();
    assert!(out.status.success());
    elfsig()
        .arg("sign")
        .arg("--key")
        .arg(&p521)
        .arg("--cert")
        .arg(&p256.cert)
        .arg(&file)
        .assert()
        .code(1)
        .stderr(contains("elfsig signs with P-256 and P-384"));

    // An encrypted SEC1 key, and a certificate given as the key: refused, saying what they are.
    let encrypted = scratch.path("encrypted.key");
    let made = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "openssl ecparam -name prime256v1 -genkey -noout | openssl ec -aes128 -passout pass:x -out {}",
            encrypted.display()
        ))
        .output()
        .unwrap();
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    for (key, says) in
        [(&encrypted, "encrypted private keys are not supported"), (&p256.cert, "a PEM CERTIFICATE, not a private key")]
    {
        elfsig()
            .arg("sign")
            .arg("--key")
            .arg(key)
            .arg("--cert")
            .arg(&p256.cert)
            .arg(&file)
            .assert()
            .code(1)
            .stderr(contains(format!("{}: {says}", key.display())));
    }

    // --bits is RSA's.
    elfsig()
        .args(["keygen", "--algorithm", "ecdsa-p256", "--bits", "2048", "--key"])
        .arg(scratch.path("k"))
        .arg("--cert")
        .arg(scratch.path("c"))
        .assert()
        .code(2)
        .stderr(contains("--bits is for RSA keys"));
    assert!(!scratch.path("k").exists() && !scratch.path("c").exists());
    assert_eq!(fs::read(&file).unwrap(), original, "nothing was signed");
}
