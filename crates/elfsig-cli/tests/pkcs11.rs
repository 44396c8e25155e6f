//! Keys on a real PKCS#11 token (SoftHSM2, initialised per test in a scratch directory):
//! `keygen` makes the pair on the token (RSA, ECDSA P-256 and P-384) and writes only the
//! certificate; `sign` signs through it, one file and a tree; `verify` and `inspect` see the
//! same signatures as from a key file, and so does OpenSSL. And the refusals, each with files untouched and no PIN in
//! any message: a wrong PIN, a missing object, token or module, no PIN at all, a locked PIN,
//! a key that is not the certificate's, a label already taken, a PIN file that is not UTF-8, two
//! tokens with one label, a key of another kind than the certificate's, an upper-case scheme.
//! A key made for a certificate that cannot be written goes again. PINs come from files or the environment, never the command line.

#[allow(unreachable_pub)]
mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::layout::RECORD_DIGEST;
use common::oracle::{openssl_verify, record_and_blob, text};
use common::{Scratch, elfsig};
use elfsig_fixtures::softhsm::{self, SoftToken};
use elfsig_fixtures::{Class, Endian, Spec, synth};
use predicates::prelude::*;
use predicates::str::contains;

/// The user PIN of every test token: distinctive, so that a message quoting it is caught.
const PIN: &str = "elfsig-pin-4711";

/// The child process [`SoftToken::create`] runs to initialise a token (SoftHSM2 reads its
/// configuration from the environment, which a test must not change in its own process).
#[test]
#[ignore = "run by the other tests, in a child process, to initialise a SoftHSM2 token"]
fn softhsm_child() {
    if let Some(result) = softhsm::init_from_env() {
        result.unwrap();
    }
}

/// A fresh token in `scratch`.
fn token(scratch: &Scratch) -> SoftToken {
    token_in(&scratch.path("hsm"))
}

/// A fresh token labelled `elfsig-test` in `dir`.
fn token_in(dir: &Path) -> SoftToken {
    let mut child = Command::new(std::env::current_exe().unwrap());
    child.args(["softhsm_child", "--exact", "--ignored", "--quiet"]).stdout(Stdio::null());
    SoftToken::create(dir, "elfsig-test", PIN, child).unwrap()
}

/// `elfsig` with the token's configuration, run in the scratch directory (where a URI taken for
/// a file name would be written).
fn with_token(token: &SoftToken) -> assert_cmd::Command {
    let mut command = elfsig();
    command.env("SOFTHSM2_CONF", &token.conf).env_remove("ELFSIG_PKCS11_PIN").env_remove("ELFSIG_PKCS11_MODULE");
    command.current_dir(token.conf.parent().and_then(Path::parent).unwrap());
    command
}

/// `elfsig sign --key uri --cert cert file` with the token's configuration.
fn sign(token: &SoftToken, uri: &str, cert: &Path, file: &Path) -> assert_cmd::assert::Assert {
    with_token(token).args(["sign", "--key", uri, "--cert"]).arg(cert).arg(file).assert()
}

/// What `elfsig` wrote in the scratch directory that is named like a URI.
fn uri_named_files(scratch: &Scratch) -> Vec<std::ffi::OsString> {
    let names = fs::read_dir(scratch.dir.path()).unwrap().map(|e| e.unwrap().file_name());
    names.filter(|n| n.to_string_lossy().to_ascii_lowercase().starts_with("pkcs11")).collect()
}

/// Makes the key labelled `object` on the token, its certificate at `cert`.
fn keygen(token: &SoftToken, algorithm: &str, object: &str, cert: &Path) -> assert_cmd::assert::Assert {
    with_token(token)
        .args(["keygen", "--algorithm", algorithm, "--subject", &format!("CN=token {object}"), "--key"])
        .arg(token.uri(object))
        .arg("--cert")
        .arg(cert)
        .assert()
}

fn program(scratch: &Scratch, name: &str) -> PathBuf {
    scratch.write(name, &synth(&Spec::new(Class::Elf64, Endian::Little)))
}

fn no_pin() -> impl Predicate<str> {
    contains(PIN).not()
}

#[test]
fn keys_made_on_the_token_sign_what_verify_accepts() {
    let scratch = Scratch::new();
    let token = token(&scratch);
    for (algorithm, name) in [("rsa", "RSA-3072"), ("ecdsa-p256", "ECDSA P-256"), ("ecdsa-p384", "ECDSA P-384")] {
        let cert = scratch.path(&format!("{algorithm}.crt"));
        keygen(&token, algorithm, algorithm, &cert)
            .success()
            .stderr(contains(format!("({name} private key; it stays on the token)")));
        // Only the certificate is written: nothing named like the URI, no key file.
        assert_eq!(uri_named_files(&scratch), Vec::<std::ffi::OsString>::new());

        let file = program(&scratch, &format!("prog-{algorithm}"));
        sign(&token, &token.uri(algorithm), &cert, &file).success();
        elfsig().arg("verify").arg("--cert").arg(&cert).arg(&file).assert().success();
        elfsig().arg("inspect").arg(&file).assert().success().stdout(contains(format!("signature:      {name} ")));
        // OpenSSL, which shares no code with elfsig, accepts what the token signed, and not
        // over another record.
        let (record, blob) = record_and_blob(&file);
        let verdict = openssl_verify(scratch.dir.path(), &record, &blob, &cert);
        assert!(verdict.status.success(), "{name}: openssl refuses the token's signature: {}", text(&verdict.stderr));
        let mut changed = record.clone();
        changed[RECORD_DIGEST] ^= 1;
        let verdict = openssl_verify(scratch.dir.path(), &changed, &blob, &cert);
        assert!(text(&verdict.stderr).contains("Verification failure"), "{name}: {}", text(&verdict.stderr));
        // Another key's certificate does not verify it.
        let other = common::keys("ecdsa-p256-other");
        elfsig().arg("verify").arg("--cert").arg(&other.cert).arg(&file).assert().failure();
    }
}

#[test]
fn a_tree_is_signed_through_one_login() {
    let scratch = Scratch::new();
    let token = token(&scratch);
    let cert = scratch.path("tree.crt");
    keygen(&token, "ecdsa-p256", "tree", &cert).success();
    let tree = scratch.path("tree");
    fs::create_dir_all(tree.join("sub")).unwrap();
    let files: Vec<PathBuf> = (0..24)
        .map(|i| {
            let path = tree.join(if i % 2 == 0 { format!("p{i}") } else { format!("sub/p{i}") });
            fs::write(&path, synth(&Spec::new(Class::Elf64, Endian::Little).trailing(format!("{i}").as_bytes())))
                .unwrap();
            path
        })
        .collect();
    // The PIN from the environment this time, and the module's default too.
    with_token(&token)
        .env("ELFSIG_PKCS11_PIN", PIN)
        .env("ELFSIG_PKCS11_MODULE", softhsm::MODULE)
        .args(["sign", "-q", "--key", "pkcs11:token=elfsig-test;object=tree", "--cert"])
        .arg(&cert)
        .arg("--recursive")
        .arg(&tree)
        .assert()
        .success();
    elfsig().arg("verify").arg("--cert").arg(&cert).args(&files).assert().success();
}

/// Every way a token key can be refused: a clear message naming what was not found, no PIN in
/// it, and the file as it was.
#[test]
fn refusals_name_what_is_wrong_and_leave_files_untouched() {
    let scratch = Scratch::new();
    let token = token(&scratch);
    let cert = scratch.path("k.crt");
    keygen(&token, "rsa", "k", &cert).success();
    let file = program(&scratch, "prog");
    let before = fs::read(&file).unwrap();
    let wrong_pin = token.pin_file("wrong-pin", "not-the-pin").unwrap();
    let module = softhsm::MODULE;
    let pin = token.pin_file.display().to_string();
    let not_utf8 = scratch.write("latin1-pin", b"elfsig-pin-\xe94711\n");
    let cases: Vec<(String, &str)> = vec![
        (
            format!("pkcs11:token=elfsig-test;object=k?pin-source={}&module-path={module}", wrong_pin.display()),
            "wrong PIN for token 'elfsig-test'",
        ),
        (
            format!("pkcs11:token=elfsig-test;object=gone?pin-source={pin}&module-path={module}"),
            "no private key object=gone on token 'elfsig-test' (its private keys: 'k')",
        ),
        (
            format!("pkcs11:token=elfsig-test;object=k;id=%99?pin-source={pin}&module-path={module}"),
            "no private key object=k;id=%99",
        ),
        (
            format!("pkcs11:token=absent;object=k?pin-source={pin}&module-path={module}"),
            "no token matches token=absent; /usr/lib/softhsm/libsofthsm2.so has 'elfsig-test'",
        ),
        (
            format!("pkcs11:token=elfsig-test;object=k?pin-source={pin}&module-path=/usr/lib/no-such-pkcs11.so"),
            "PKCS#11 module /usr/lib/no-such-pkcs11.so does not exist",
        ),
        (
            format!("pkcs11:token=elfsig-test;object=k?pin-source={pin}&module-path=/etc/hostname"),
            "cannot load the PKCS#11 module /etc/hostname",
        ),
        ("pkcs11:token=elfsig-test;object=k".to_owned(), "which PKCS#11 module?"),
        (format!("pkcs11:token=elfsig-test;object=k?module-path={module}"), "token 'elfsig-test' needs its PIN"),
        (
            format!(
                "pkcs11:token=elfsig-test;object=k?pin-source={}/absent&module-path={module}",
                scratch.dir.path().display()
            ),
            "cannot read the PIN from",
        ),
        (format!("pkcs11:token=elfsig-test;object=k?pin-source=relative&module-path={module}"), "absolute path"),
        (
            format!("pkcs11:token=elfsig-test;object=k?pin-source={}&module-path={module}", not_utf8.display()),
            "is not UTF-8",
        ),
    ];
    for (uri, says) in cases {
        sign(&token, &uri, &cert, &file).failure().stderr(contains(says).and(no_pin()));
        assert_eq!(fs::read(&file).unwrap(), before, "{uri}");
    }
    // The PIN from the environment: wrong, or set but empty (taken as unset, not as a try).
    for (pin, says) in [("not-the-pin", "wrong PIN for token 'elfsig-test'"), ("", "token 'elfsig-test' needs its PIN")]
    {
        with_token(&token)
            .env("ELFSIG_PKCS11_PIN", pin)
            .args(["sign", "--key", &format!("pkcs11:token=elfsig-test;object=k?module-path={module}"), "--cert"])
            .arg(&cert)
            .arg(&file)
            .assert()
            .failure()
            .stderr(contains(says).and(no_pin()));
    }
    // The token's key with another RSA key's certificate, and with an ECDSA key's.
    for (other, says) in [
        (common::keys("other"), "object=k on token 'elfsig-test' does not match the certificate's public key"),
        (
            common::keys("ecdsa-p256-other"),
            "object=k on token 'elfsig-test' is an RSA key, which does not match the certificate's ECDSA P-256 key",
        ),
    ] {
        sign(&token, &token.uri("k"), &other.cert, &file).failure().stderr(contains(says).and(no_pin()));
    }
    assert_eq!(fs::read(&file).unwrap(), before);
    // A PIN with an unencoded `&`: the rest is not named, as it may be part of the PIN. (Not
    // the token's PIN, which no argv holds: a stand-in for its second half.)
    sign(&token, "pkcs11:token=elfsig-test;object=k?pin-value=47&half-of-a-pin=11", &cert, &file)
        .failure()
        .stderr(contains("unknown PKCS#11 URI query attribute (not named here").and(contains("half-of-a-pin").not()));
    assert_eq!(fs::read(&file).unwrap(), before);
}

/// `PKCS11:` is a URI too (schemes are case-insensitive): the key is made on the token, never
/// written to a file named like the URI.
#[test]
fn an_upper_case_scheme_is_a_token_not_a_file() {
    let scratch = Scratch::new();
    let token = token(&scratch);
    let cert = scratch.path("k.crt");
    with_token(&token)
        .args(["keygen", "--algorithm", "ecdsa-p256", "--key", &token.uri("k").replacen("pkcs11:", "PKCS11:", 1)])
        .arg("--cert")
        .arg(&cert)
        .assert()
        .success()
        .stderr(contains("it stays on the token"));
    assert_eq!(uri_named_files(&scratch), Vec::<std::ffi::OsString>::new());
    let file = program(&scratch, "prog");
    sign(&token, &token.uri("k").replacen("pkcs11:", "Pkcs11:", 1), &cert, &file).success();
    elfsig().arg("verify").arg("--cert").arg(&cert).arg(&file).assert().success();
}

/// Two tokens with one label (two HSMs set up alike, a token copied): elfsig picks neither,
/// lists both with their serials, and signs with the one `serial=` names.
#[test]
fn tokens_with_one_label_are_told_apart_by_serial() {
    let scratch = Scratch::new();
    let token = token(&scratch);
    let twin = token_in(&scratch.path("twin"));
    for dir in fs::read_dir(scratch.path("twin/tokens")).unwrap() {
        let dir = dir.unwrap().path();
        let copy = scratch.path("hsm/tokens").join(dir.file_name().unwrap());
        fs::create_dir(&copy).unwrap();
        for file in fs::read_dir(&dir).unwrap() {
            let file = file.unwrap().path();
            fs::copy(&file, copy.join(file.file_name().unwrap())).unwrap();
        }
    }
    drop(twin);
    let cert = scratch.path("k.crt");
    let refused = keygen(&token, "ecdsa-p256", "k", &cert)
        .failure()
        .stderr(contains("2 tokens match token=elfsig-test; tell them apart with token= or serial=").and(no_pin()));
    assert!(!cert.exists());
    let stderr = String::from_utf8_lossy(&refused.get_output().stderr).into_owned();
    let serials: Vec<&str> =
        stderr.split("serial ").skip(1).map(|rest| rest.split(')').next().unwrap_or_default()).collect();
    assert!(serials.len() == 2 && serials[0] != serials[1], "{stderr}");
    let uri = token.uri("k").replace(";object=k", &format!(";serial={};object=k", serials[1]));
    with_token(&token)
        .args(["keygen", "--algorithm", "ecdsa-p256", "--key", &uri, "--cert"])
        .arg(&cert)
        .assert()
        .success();
    let file = program(&scratch, "prog");
    sign(&token, &uri, &cert, &file).success();
    elfsig().arg("verify").arg("--cert").arg(&cert).arg(&file).assert().success();
    // The key is on that token only: the other serial has no such object.
    let other = token.uri("k").replace(";object=k", &format!(";serial={};object=k", serials[0]));
    sign(&token, &other, &cert, &file).failure().stderr(contains("no private key object=k"));
}

#[test]
fn keygen_on_a_token_refuses_to_replace_or_to_guess() {
    let scratch = Scratch::new();
    let token = token(&scratch);
    let cert = scratch.path("k.crt");
    keygen(&token, "ecdsa-p256", "k", &cert).success();
    let first = fs::read(&cert).unwrap();
    // The label is taken: the token keeps its key, the certificate stays.
    keygen(&token, "rsa", "k", &scratch.path("again.crt"))
        .failure()
        .stderr(contains("already holds objects with object=k").and(no_pin()));
    assert!(!scratch.path("again.crt").exists());
    keygen(&token, "rsa", "k2", &cert).failure().stderr(contains("already exists; use --force"));
    assert_eq!(fs::read(&cert).unwrap(), first);
    // A certificate that cannot be written takes its new pair away again: a second try works.
    keygen(&token, "rsa", "k3", &scratch.path("no-such-dir/k3.crt")).failure().stderr(contains("no-such-dir"));
    keygen(&token, "rsa", "k3", &scratch.path("k3.crt")).success();
    let unlabelled = token.uri("x").replace(";object=x", "");
    with_token(&token)
        .args(["keygen", "--key", &unlabelled, "--cert"])
        .arg(scratch.path("u.crt"))
        .assert()
        .failure()
        .stderr(contains("needs a label: add object=NAME"));
    with_token(&token)
        .args(["keygen", "--bits", "3072", "--algorithm", "ecdsa-p256", "--key", &token.uri("y"), "--cert"])
        .arg(scratch.path("y.crt"))
        .assert()
        .failure()
        .stderr(contains("--bits is for RSA keys"));
}

/// A token whose user PIN is locked, as an HSM reports after too many wrong PINs. SoftHSM2
/// counts no tries, so the test sets the flag in the token's own state file: the module then
/// reports CKF_USER_PIN_LOCKED like any locked token (though it would still take the PIN).
/// elfsig reads the token's state first and spends no try on a locked PIN. (What a token's
/// CKR_PIN_LOCKED answer to a login means is the unit test `says_what_a_refused_login_means`.)
#[test]
fn a_locked_token_is_named_and_not_tried() {
    let scratch = Scratch::new();
    let token = token(&scratch);
    let cert = scratch.path("k.crt");
    keygen(&token, "rsa", "k", &cert).success();
    lock_user_pin(&scratch.path("hsm/tokens"));
    let file = program(&scratch, "prog");
    let before = fs::read(&file).unwrap();
    sign(&token, &token.uri("k"), &cert, &file)
        .failure()
        .stderr(contains("the user PIN of token 'elfsig-test' is locked").and(no_pin()));
    assert_eq!(fs::read(&file).unwrap(), before);
}

/// Sets CKF_USER_PIN_LOCKED in the token flags SoftHSM2 keeps in `token.object`: the
/// attribute CKA_OS_TOKENFLAGS (0x8000534B), of kind 2 (an unsigned long), each a big-endian
/// 64-bit value, the flags after them.
fn lock_user_pin(tokens: &Path) {
    const FLAGS_ATTRIBUTE: [u8; 16] = [0, 0, 0, 0, 0x80, 0, 0x53, 0x4b, 0, 0, 0, 0, 0, 0, 0, 2];
    const LOCKED: u64 = 0x4_0000;
    let dir = fs::read_dir(tokens).unwrap().map(|e| e.unwrap().path()).find(|p| p.is_dir()).unwrap();
    let path = dir.join("token.object");
    let mut bytes = fs::read(&path).unwrap();
    let at: Vec<usize> =
        bytes.windows(24).enumerate().filter(|(_, w)| w[..16] == FLAGS_ATTRIBUTE).map(|(i, _)| i + 16).collect();
    assert_eq!(at.len(), 1, "the token flags in {}: {at:?}", path.display());
    let flags = u64::from_be_bytes(bytes[at[0]..at[0] + 8].try_into().unwrap());
    assert_eq!(flags & 0x40d, 0x40d, "not the flags of an initialised token with a user PIN: {flags:#x}");
    bytes[at[0]..at[0] + 8].copy_from_slice(&(flags | LOCKED).to_be_bytes());
    fs::write(&path, bytes).unwrap();
}

/// A policy signed through the token, made there or signed later, verifies with the
/// certificate, as one signed with a key file does (`tests/policy.rs`); OpenSSL agrees.
#[test]
fn policies_are_signed_through_the_token() {
    let scratch = Scratch::new();
    let token = token(&scratch);
    let cert = scratch.path("policy.crt");
    keygen(&token, "rsa", "policy", &cert).success();
    let uri = token.uri("policy");
    let created = scratch.path("created.policy");
    with_token(&token)
        .args(["policy", "create", "--serial", "3", "--revoke", &format!("sha256:{}", "0c".repeat(32)), "--key", &uri])
        .arg("--cert")
        .arg(&cert)
        .arg("-o")
        .arg(&created)
        .assert()
        .success()
        .stderr(no_pin());
    let body = scratch.path("later.policy");
    elfsig().args(["policy", "create", "--serial", "4", "-o"]).arg(&body).assert().success();
    with_token(&token).args(["policy", "sign", "--key", &uri, "--cert"]).arg(&cert).arg(&body).assert().success();
    for policy in [&created, &body] {
        elfsig()
            .args(["policy", "inspect", "--cert"])
            .arg(&cert)
            .arg(policy)
            .assert()
            .success()
            .stdout(contains("verified by CN=token policy"));
        // OpenSSL: the detached signature over the body.
        let bytes = fs::read(policy).unwrap();
        let sig_len = u32::from_le_bytes(bytes[bytes.len() - 12..][..4].try_into().unwrap()) as usize;
        let body_end = bytes.len() - 12 - sig_len;
        let verdict = openssl_verify(scratch.dir.path(), &bytes[..body_end], &bytes[body_end..bytes.len() - 12], &cert);
        assert!(verdict.status.success(), "openssl refuses the token's policy signature: {}", text(&verdict.stderr));
    }
}
