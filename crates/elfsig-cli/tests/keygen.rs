//! `elfsig keygen` and the keys `sign` accepts: file modes, refusing to overwrite, `--force`,
//! `--der`, the certificate's contents as OpenSSL reads them, and keys made by OpenSSL.

#[allow(unreachable_pub)]
mod common;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

use common::{Keys, Scratch, elfsig, keys, sign, verify};
use predicates::str::contains;

fn stderr_of(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Runs `openssl` with `args`, asserting success; returns stdout.
fn openssl(args: &[&std::ffi::OsStr]) -> String {
    let out = Command::new("openssl").args(args).output().expect("openssl is installed");
    assert!(out.status.success(), "openssl {args:?}: {}", stderr_of(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `elfsig keygen --bits 2048 --key KEY --cert CERT` plus `extra`.
fn keygen(key: &Path, cert: &Path, extra: &[&str]) -> assert_cmd::Command {
    let mut cmd = elfsig();
    cmd.args(["keygen", "--bits", "2048"]).args(extra).arg("--key").arg(key).arg("--cert").arg(cert);
    cmd
}

fn mode(path: &Path) -> u32 {
    fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

/// Signs a copy of `true` with `key` and `cert` and verifies it with `cert`.
fn signs_and_verifies(scratch: &Scratch, name: &str, key: &Path, cert: &Path) {
    let file = scratch.copy(&elfsig_fixtures::system_binary("true").unwrap(), name);
    let keys = Keys { key: key.to_owned(), cert: cert.to_owned() };
    sign(&keys, &file);
    verify(&keys, &file).success();
}

/// The (trimmed) line after the first line containing `heading`.
fn line_after<'t>(text: &'t str, heading: &str) -> &'t str {
    let mut lines = text.lines();
    lines.by_ref().find(|l| l.contains(heading)).unwrap_or_else(|| panic!("no {heading:?} in:\n{text}"));
    lines.next().unwrap_or_else(|| panic!("nothing after {heading:?}")).trim()
}

#[test]
fn the_key_is_private_even_with_umask_0() {
    let scratch = Scratch::new();
    let (key, cert) = (scratch.path("k.pem"), scratch.path("c.pem"));
    let bin = assert_cmd::cargo::cargo_bin("elfsig");
    let with_umask_0 = |extra: &[&str]| {
        Command::new("sh")
            .arg("-c")
            .arg(r#"umask 0; exec "$0" "$@""#)
            .arg(&bin)
            .args(["keygen", "--bits", "2048"])
            .args(extra)
            .arg("--key")
            .arg(&key)
            .arg("--cert")
            .arg(&cert)
            .output()
            .unwrap()
    };
    let out = with_umask_0(&[]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(mode(&key), 0o600, "key mode");
    assert_eq!(mode(&cert) & 0o444, 0o444, "the certificate is readable by everyone");
    assert_eq!(mode(&cert) & 0o133, 0, "the certificate is not executable or writable by others");
    assert!(fs::read_to_string(&key).unwrap().starts_with("-----BEGIN PRIVATE KEY-----\n"), "PKCS#8 PEM");
    assert!(fs::read_to_string(&cert).unwrap().starts_with("-----BEGIN CERTIFICATE-----\n"));

    // Replacing a key that was world-readable gives a private key too.
    fs::set_permissions(&key, fs::Permissions::from_mode(0o666)).unwrap();
    let out = with_umask_0(&["--force"]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(mode(&key), 0o600, "key mode after --force");
    assert_eq!(scratch.dir.path().read_dir().unwrap().count(), 2, "no temporary file left");
}

#[test]
fn existing_files_are_kept_unless_forced() {
    let scratch = Scratch::new();
    let (key, cert) = (scratch.path("k.pem"), scratch.path("c.pem"));

    // KEY exists.
    fs::write(&key, "old key").unwrap();
    keygen(&key, &cert, &[])
        .assert()
        .code(1)
        .stderr(contains(format!("{} already exists; use --force to overwrite it", key.display())));
    assert_eq!(fs::read_to_string(&key).unwrap(), "old key");
    assert!(!cert.exists(), "the certificate was not created");

    // CERT exists.
    fs::remove_file(&key).unwrap();
    fs::write(&cert, "old cert").unwrap();
    keygen(&key, &cert, &[])
        .assert()
        .code(1)
        .stderr(contains(format!("{} already exists; use --force to overwrite it", cert.display())));
    assert_eq!(fs::read_to_string(&cert).unwrap(), "old cert");
    assert!(!key.exists(), "the key was not created");

    // A dangling symbolic link counts as existing.
    std::os::unix::fs::symlink("nowhere", &key).unwrap();
    keygen(&key, &scratch.path("other.pem"), &[]).assert().code(1).stderr(contains("already exists"));
    fs::remove_file(&key).unwrap();

    // Both exist; --force replaces both with a working pair.
    fs::write(&key, "old key").unwrap();
    keygen(&key, &cert, &["--force"]).assert().success();
    assert!(fs::read_to_string(&key).unwrap().starts_with("-----BEGIN PRIVATE KEY-----"));
    assert!(fs::read_to_string(&cert).unwrap().starts_with("-----BEGIN CERTIFICATE-----"));
    assert_eq!(mode(&key), 0o600);
    signs_and_verifies(&scratch, "true", &key, &cert);
    let mut names: Vec<_> = fs::read_dir(scratch.dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    names.sort();
    assert_eq!(names, ["c.pem", "k.pem", "true"], "no temporary file left");
}

/// `--force` must not destroy the existing key when the new certificate cannot be written:
/// the user would be left with a new key and the old (non-matching) certificate.
#[test]
fn a_failed_forced_keygen_keeps_the_existing_key() {
    let scratch = Scratch::new();
    let (key, cert) = (scratch.path("k.pem"), scratch.path("c.pem"));
    keygen(&key, &cert, &[]).assert().success();
    let old_key = fs::read(&key).unwrap();
    let unwritable = scratch.path("no-such-dir/c.pem");
    keygen(&key, &unwritable, &["--force"]).assert().code(1).stderr(contains("no-such-dir"));
    assert!(fs::read(&key).unwrap() == old_key, "the existing key was replaced although keygen failed");
    signs_and_verifies(&scratch, "true", &key, &cert);
}

/// `--key` and `--cert` naming the same file in different spellings is the same usage error as
/// spelling it the same way; in particular `--force` must not write the key and then overwrite
/// it with the certificate.
#[test]
fn the_same_file_spelled_differently_is_a_usage_error() {
    let scratch = Scratch::new();
    for force in [true, false] {
        let extra: &[&str] = if force { &["--force"] } else { &[] };
        let out = elfsig()
            .current_dir(scratch.dir.path())
            .args(["keygen", "--bits", "2048", "--key", "same.pem", "--cert", "./same.pem"])
            .args(extra)
            .output()
            .unwrap();
        let stderr = stderr_of(&out);
        let found = fs::read_to_string(scratch.path("same.pem")).ok();
        assert_eq!(
            out.status.code(),
            Some(2),
            "keygen {extra:?} --key same.pem --cert ./same.pem: stderr {stderr:?}, same.pem now starts {:?}",
            found.as_deref().map(|s| s.lines().next())
        );
        assert!(stderr.contains("--key and --cert must name different files"), "{stderr}");
        assert!(found.is_none(), "nothing written");
    }
}

#[test]
fn certificate_contents_as_openssl_reads_them() {
    let scratch = Scratch::new();
    // The default key size, 3072 bits, once (it takes a few seconds).
    let (key, cert) = (scratch.path("k.pem"), scratch.path("c.pem"));
    elfsig()
        .args(["keygen", "--subject", "CN=x,O=y", "--key"])
        .arg(&key)
        .arg("--cert")
        .arg(&cert)
        .assert()
        .success()
        .stdout("")
        .stderr(contains("RSA-3072"));
    let text = openssl(&["x509".as_ref(), "-in".as_ref(), cert.as_os_str(), "-noout".as_ref(), "-text".as_ref()]);
    assert!(text.contains("Version: 3 (0x2)"), "{text}");
    assert_eq!(line_after(&text, "X509v3 Basic Constraints: critical"), "CA:FALSE", "{text}");
    assert_eq!(line_after(&text, "X509v3 Key Usage: critical"), "Digital Signature", "{text}");
    assert_eq!(line_after(&text, "X509v3 Extended Key Usage"), "Code Signing", "{text}");
    let skid = line_after(&text, "X509v3 Subject Key Identifier");
    let akid = line_after(&text, "X509v3 Authority Key Identifier");
    assert_eq!(skid.len(), 59, "a 20-byte SHA-1 key identifier: {skid}");
    assert_eq!(akid.trim_start_matches("keyid:"), skid, "authority key identifier = subject key identifier");
    assert_eq!(text.matches("sha512WithRSAEncryption").count(), 2, "TBS and outer algorithm: {text}");
    assert!(text.contains("Public-Key: (3072 bit)"), "{text}");
    assert!(text.contains("Exponent: 65537"), "{text}");
    assert!(text.contains("Not After : Dec 31 23:59:59 9999 GMT"), "{text}");
    // RFC 4514 lists the most specific RDN first: "CN=x,O=y" is O=y then CN=x in the
    // certificate, which OpenSSL's default format prints in that (DER) order.
    assert!(text.contains("Subject: O = y, CN = x\n"), "{text}");
    assert!(text.contains("Issuer: O = y, CN = x\n"), "self-signed: {text}");
    let names = openssl(&[
        "x509".as_ref(),
        "-in".as_ref(),
        cert.as_os_str(),
        "-noout".as_ref(),
        "-subject".as_ref(),
        "-issuer".as_ref(),
        "-nameopt".as_ref(),
        "RFC2253".as_ref(),
    ]);
    assert_eq!(names, "subject=CN=x,O=y\nissuer=CN=x,O=y\n", "the subject as given");
    // The certificate verifies with its own key.
    let verified = openssl(&["verify".as_ref(), "-CAfile".as_ref(), cert.as_os_str(), cert.as_os_str()]);
    assert!(verified.contains(": OK"), "{verified}");
    openssl(&["pkey".as_ref(), "-in".as_ref(), key.as_os_str(), "-noout".as_ref()]);

    // --bits 2048.
    let (key2, cert2) = (scratch.path("k2.pem"), scratch.path("c2.pem"));
    keygen(&key2, &cert2, &[]).assert().success();
    let text = openssl(&["x509".as_ref(), "-in".as_ref(), cert2.as_os_str(), "-noout".as_ref(), "-text".as_ref()]);
    assert!(text.contains("Public-Key: (2048 bit)"), "{text}");
    assert!(text.contains("Subject: CN = elfsig signing key\n"), "the default subject: {text}");
    let rsa = openssl(&["rsa".as_ref(), "-in".as_ref(), key2.as_os_str(), "-noout".as_ref(), "-text".as_ref()]);
    assert!(rsa.contains("Private-Key: (2048 bit, 2 primes)"), "{rsa}");
}

#[test]
fn a_plain_subject_becomes_the_common_name() {
    let scratch = Scratch::new();
    for (i, (subject, rfc2253)) in
        [("Build key", "CN=Build key"), ("Doe, John", r"CN=Doe\, John"), ("a+b <c>; d", r"CN=a\+b \<c\>\; d")]
            .into_iter()
            .enumerate()
    {
        let (key, cert) = (scratch.path(&format!("k{i}")), scratch.path(&format!("c{i}")));
        keygen(&key, &cert, &["--subject", subject]).assert().success();
        let names = openssl(&[
            "x509".as_ref(),
            "-in".as_ref(),
            cert.as_os_str(),
            "-noout".as_ref(),
            "-subject".as_ref(),
            "-nameopt".as_ref(),
            "RFC2253".as_ref(),
        ]);
        assert_eq!(names, format!("subject={rfc2253}\n"), "--subject {subject:?}");
        let oneline = openssl(&[
            "x509".as_ref(),
            "-in".as_ref(),
            cert.as_os_str(),
            "-noout".as_ref(),
            "-subject".as_ref(),
            "-nameopt".as_ref(),
            "sep_comma_plus,utf8,-esc_msb".as_ref(),
        ]);
        assert_eq!(oneline, format!("subject=CN={subject}\n"), "one RDN holding the whole string");
    }
    // A signature names its signer by that subject.
    let file = scratch.copy(&elfsig_fixtures::system_binary("true").unwrap(), "true");
    let keys = Keys { key: scratch.path("k1"), cert: scratch.path("c1") };
    sign(&keys, &file);
    verify(&keys, &file).success().stdout(format!("{}: OK (signed by CN=Doe\\, John)\n", file.display()));
}

#[test]
fn invalid_subjects_are_usage_errors() {
    let scratch = Scratch::new();
    let (key, cert) = (scratch.path("k"), scratch.path("c"));
    for subject in ["CN=x,=y", "NOSUCHATTRIBUTE=x"] {
        keygen(&key, &cert, &["--subject", subject]).assert().code(2).stderr(contains("invalid --subject"));
        assert!(!key.exists() && !cert.exists(), "nothing written for {subject:?}");
    }
    // An empty subject would make a certificate that names nobody.
    for subject in ["", "   "] {
        keygen(&key, &cert, &["--subject", subject])
            .assert()
            .code(2)
            .stdout("")
            .stderr("elfsig: --subject must not be empty\n");
        assert!(!key.exists() && !cert.exists(), "nothing written for {subject:?}");
    }
    assert_eq!(scratch.dir.path().read_dir().unwrap().count(), 0, "no temporary file left");
}

#[test]
fn der_certificates() {
    let scratch = Scratch::new();
    let (key, cert) = (scratch.path("k.pem"), scratch.path("c.der"));
    keygen(&key, &cert, &["--der", "--subject", "CN=der"]).assert().success();
    let der = fs::read(&cert).unwrap();
    assert_eq!(der[0], 0x30, "DER, not PEM");
    assert!(!der.windows(5).any(|w| w == b"-----"));
    let text = openssl(&[
        "x509".as_ref(),
        "-inform".as_ref(),
        "DER".as_ref(),
        "-in".as_ref(),
        cert.as_os_str(),
        "-noout".as_ref(),
        "-text".as_ref(),
    ]);
    assert!(text.contains("Subject: CN = der"), "{text}");
    assert!(text.contains("Code Signing"), "{text}");
    // sign and verify take the DER certificate, and its PEM form is the same certificate.
    signs_and_verifies(&scratch, "true", &key, &cert);
    let pem = scratch.path("c.pem");
    openssl(&[
        "x509".as_ref(),
        "-inform".as_ref(),
        "DER".as_ref(),
        "-in".as_ref(),
        cert.as_os_str(),
        "-out".as_ref(),
        pem.as_os_str(),
    ]);
    verify(&Keys { key: key.clone(), cert: pem }, &scratch.path("true")).success();
}

#[test]
fn keys_made_by_openssl_work() {
    let scratch = Scratch::new();
    for (name, genrsa, header) in [
        ("pkcs8", &["genrsa"][..], "-----BEGIN PRIVATE KEY-----"),
        ("pkcs1", &["genrsa", "-traditional"][..], "-----BEGIN RSA PRIVATE KEY-----"),
    ] {
        let (key, cert) = (scratch.path(&format!("{name}.key")), scratch.path(&format!("{name}.crt")));
        let mut args: Vec<&std::ffi::OsStr> = genrsa.iter().map(|a| a.as_ref()).collect();
        args.extend(["-out".as_ref(), key.as_os_str(), "2048".as_ref()]);
        openssl(&args);
        assert!(fs::read_to_string(&key).unwrap().starts_with(header), "{name}: {header}");
        openssl(&[
            "req".as_ref(),
            "-new".as_ref(),
            "-x509".as_ref(),
            "-key".as_ref(),
            key.as_os_str(),
            "-subj".as_ref(),
            "/CN=ossl".as_ref(),
            "-days".as_ref(),
            "1".as_ref(),
            "-out".as_ref(),
            cert.as_os_str(),
        ]);
        signs_and_verifies(&scratch, name, &key, &cert);
        verify(&Keys { key: key.clone(), cert: cert.clone() }, &scratch.path(name))
            .success()
            .stdout(contains("OK (signed by CN=ossl)"));
    }
}

#[test]
fn unusable_keys_and_certificates_are_refused() {
    let ours = keys("a");
    let other = keys("b");
    let scratch = Scratch::new();
    let file = scratch.copy(&elfsig_fixtures::system_binary("true").unwrap(), "true");
    let original = fs::read(&file).unwrap();
    let sign_with = |key: &Path, cert: &Path| {
        elfsig().arg("sign").arg("--key").arg(key).arg("--cert").arg(cert).arg(&file).assert()
    };

    // An encrypted key.
    let encrypted = scratch.path("encrypted.key");
    openssl(&[
        "genpkey".as_ref(),
        "-algorithm".as_ref(),
        "RSA".as_ref(),
        "-pkeyopt".as_ref(),
        "rsa_keygen_bits:2048".as_ref(),
        "-aes256".as_ref(),
        "-pass".as_ref(),
        "pass:x".as_ref(),
        "-out".as_ref(),
        encrypted.as_os_str(),
    ]);
    sign_with(&encrypted, &ours.cert)
        .code(1)
        .stderr(contains(format!("{}: encrypted private keys are not supported", encrypted.display())));

    // A key that does not belong to the certificate.
    sign_with(&other.key, &ours.cert)
        .code(1)
        .stderr(contains("the private key does not match the certificate"))
        .stderr(contains("CN=elfsig test key a"));

    // Certificate files without a certificate.
    let empty = scratch.write("empty.crt", b"");
    let text = scratch.write("text.crt", b"no certificate here\n");
    for (cert, expected) in [
        (&empty, "not a DER certificate"),
        (&text, "not a DER certificate"),
        (&ours.key, "not a PEM certificate"),
        (&scratch.path("missing.crt"), "cannot read the certificate"),
    ] {
        sign_with(&ours.key, cert).code(1).stderr(contains(format!("{}: ", cert.display()))).stderr(contains(expected));
        elfsig()
            .arg("verify")
            .arg("--cert")
            .arg(cert)
            .arg(&file)
            .assert()
            .code(1)
            .stdout("")
            .stderr(contains(expected));
    }
    // A key file that is not a key.
    sign_with(&text, &ours.cert).code(1).stderr(contains(format!("{}: not a private key", text.display())));

    assert!(fs::read(&file).unwrap() == original, "nothing was signed");
}

/// The kernel's X.509 parser follows RFC 5280 to the letter: a date through 2049 must be a
/// UTCTime (OpenSSL accepts a GeneralizedTime; the kernel refuses the certificate with EBADMSG).
#[test]
fn validity_dates_use_the_encoding_rfc_5280_requires() {
    let scratch = Scratch::new();
    let (key, cert) = (scratch.path("k"), scratch.path("c"));
    elfsig().args(["keygen", "--bits", "2048", "--key"]).arg(&key).arg("--cert").arg(&cert).assert().success();
    let out = std::process::Command::new("openssl").args(["asn1parse", "-in"]).arg(&cert).output().unwrap();
    assert!(out.status.success(), "openssl asn1parse failed");
    let text = String::from_utf8(out.stdout).unwrap();
    let times: Vec<&str> = text
        .lines()
        .filter_map(|l| {
            if l.contains("UTCTIME") {
                Some("UTCTIME")
            } else if l.contains("GENERALIZEDTIME") {
                Some("GENERALIZEDTIME")
            } else {
                None
            }
        })
        .collect();
    assert_eq!(
        times,
        ["UTCTIME", "GENERALIZEDTIME"],
        "notBefore (now) as UTCTime, notAfter (9999) as GeneralizedTime:\n{text}"
    );
}
