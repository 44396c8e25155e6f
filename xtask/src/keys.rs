//! The test signing keys, made once with `elfsig keygen` and kept in the cache: the kernel's
//! built-in key (its certificate is compiled into the test kernel), the key embedded in the
//! module, a key nobody trusts, a key whose certificate the kernel key issues, which the
//! tests add to the secondary trusted keyring at run time, ECDSA keys (P-256, P-384), and an
//! RSA and an ECDSA key on a SoftHSM2 token (made there by `elfsig keygen`, never leaving it),
//! which the module embeds too.

use std::path::{Path, PathBuf};

use elfsig_fixtures::softhsm::SoftToken;

use crate::Result;
use crate::cmd::Cmd;
use crate::deps::{self, Need};
use crate::paths;

/// A key pair.
#[derive(Clone, Debug)]
pub struct KeyPair {
    /// PKCS#8 PEM private key, or the `pkcs11:` URI of a key on [`Self::token`].
    pub key: PathBuf,
    /// PEM certificate.
    pub cert: PathBuf,
    /// The SoftHSM2 configuration (`SOFTHSM2_CONF`) of the token the key is on.
    pub token: Option<PathBuf>,
}

impl KeyPair {
    /// `elfsig sign` with this key: `--key`, `--cert` and the token's configuration.
    pub fn sign(&self, elfsig: &Path) -> Cmd {
        self.signing(elfsig, &["sign"])
    }

    /// `elfsig -q COMMAND` (`sign`, `deb sign`) with this key.
    pub fn signing(&self, elfsig: &Path, command: &[&str]) -> Cmd {
        let mut sign =
            Cmd::new(elfsig).arg("-q").args(command).arg("--key").arg(&self.key).arg("--cert").arg(&self.cert);
        if let Some(conf) = &self.token {
            sign = sign.env("SOFTHSM2_CONF", conf);
        }
        sign
    }
}

/// The test keys.
#[derive(Clone, Debug)]
pub struct TestKeys {
    /// Trusted through the kernel's built-in keyring.
    pub kernel: KeyPair,
    /// Trusted through the module's own keyring.
    pub module: KeyPair,
    /// Trusted by nobody.
    pub other: KeyPair,
    /// Certified by the kernel key (`cert` is DER): trusted once added to the secondary
    /// trusted keyring.
    pub added: KeyPair,
    /// ECDSA on P-256, trusted through the module's own keyring.
    pub ecdsa_p256: KeyPair,
    /// ECDSA on P-384, trusted through the module's own keyring.
    pub ecdsa_p384: KeyPair,
    /// Trusted to sign policies (`.elfsig_policy`), and nothing else.
    pub policy: KeyPair,
    /// RSA-3072 on a SoftHSM2 token, trusted through the module's own keyring.
    pub token_rsa: KeyPair,
    /// ECDSA P-256 on the same token, trusted through the module's own keyring.
    pub token_ecdsa: KeyPair,
}

impl TestKeys {
    /// The certificates the test module embeds: the module key's, the ECDSA keys' and the
    /// token keys'.
    pub fn embedded(&self) -> Vec<PathBuf> {
        // As many as the guest expects, or this does not compile.
        let embedded: [&KeyPair; elfsig_guest::image::EMBEDDED_CERTS] =
            [&self.module, &self.ecdsa_p256, &self.ecdsa_p384, &self.token_rsa, &self.token_ecdsa];
        embedded.map(|pair| pair.cert.clone()).to_vec()
    }
}

/// What `elfsig keygen` makes, as far as the cached keys depend on it: keys made by an older
/// one are made again, with everything issued from them. Version 2: RSA certificates signed
/// with SHA-512, as elfsig signs with RSA keys (which the module's certificates must be for no
/// boot to pay the kernel's self-test of RSA/SHA-256; crates/elfsig-cli/src/crypto/signature.rs).
const KEYGEN_FORMAT: &str = "2\n";

/// The test keys, made on first use.
pub fn test_keys(elfsig: &Path) -> Result<TestKeys> {
    let dir = paths::cache().join("test-keys");
    let format = dir.join("format");
    if std::fs::read_to_string(&format).ok().as_deref() != Some(KEYGEN_FORMAT) && dir.exists() {
        eprintln!("xtask: making the test keys again in {}: an older elfsig keygen made them", dir.display());
        std::fs::remove_dir_all(&dir).map_err(|e| format!("cannot remove the older keys in {}: {e}", dir.display()))?;
    }
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let make_as = |name: &str, algorithm: &str| -> Result<KeyPair> {
        let pair = KeyPair { key: dir.join(format!("{name}.key")), cert: dir.join(format!("{name}.crt")), token: None };
        if !pair.key.exists() || !pair.cert.exists() {
            keygen(elfsig, &pair, algorithm, &format!("CN=elfsig test {name} key"))?;
        }
        Ok(pair)
    };
    // RSA-3072, the default.
    let make = |name: &str| make_as(name, "rsa");
    let kernel = make("kernel")?;
    let added = issued_by(&make("added-self-signed")?, &kernel, &dir.join("added.der"))?;
    let keys = TestKeys {
        kernel,
        module: make("module")?,
        other: make("other")?,
        policy: make("policy")?,
        added,
        ecdsa_p256: make_as("ecdsa-p256", "ecdsa-p256")?,
        ecdsa_p384: make_as("ecdsa-p384", "ecdsa-p384")?,
        token_rsa: on_token(elfsig, &dir, "rsa")?,
        token_ecdsa: on_token(elfsig, &dir, "ecdsa-p256")?,
    };
    std::fs::write(&format, KEYGEN_FORMAT).map_err(|e| format!("cannot write {}: {e}", format.display()))?;
    Ok(keys)
}

/// The key of `algorithm` on the test token (made, with the token, on first use).
fn on_token(elfsig: &Path, dir: &Path, algorithm: &str) -> Result<KeyPair> {
    deps::ensure(&[Need::Deb("softhsm2")])?;
    let exe = std::env::current_exe().map_err(|e| format!("where is xtask? {e}"))?;
    let token_dir = dir.join("softhsm");
    let token = SoftToken::create(&token_dir, "elfsig-test", "elfsig-test-pin", std::process::Command::new(exe))?;
    let pair = KeyPair {
        key: PathBuf::from(token.uri(algorithm)),
        // Beside the token: they go together.
        cert: token_dir.join(format!("{algorithm}.crt")),
        token: Some(token.conf.clone()),
    };
    if !pair.cert.exists() {
        keygen(elfsig, &pair, algorithm, &format!("CN=elfsig test token {algorithm} key"))?;
    }
    Ok(pair)
}

/// `elfsig keygen` for `pair` (on its token, if it has one; over what is there, if not).
fn keygen(elfsig: &Path, pair: &KeyPair, algorithm: &str, subject: &str) -> Result {
    let mut keygen = Cmd::new(elfsig).args(["keygen", "--force", "--algorithm", algorithm, "--subject", subject]);
    if let Some(conf) = &pair.token {
        keygen = keygen.env("SOFTHSM2_CONF", conf);
    }
    keygen.arg("--key").arg(&pair.key).arg("--cert").arg(&pair.cert).run()
}

/// A certificate (DER, at `out`) for `subject`'s key, issued by `issuer`, as the kernel wants
/// it to link the key into the secondary trusted keyring.
fn issued_by(subject: &KeyPair, issuer: &KeyPair, out: &std::path::Path) -> Result<KeyPair> {
    let pair = KeyPair { key: subject.key.clone(), cert: out.to_owned(), token: None };
    if pair.cert.exists() {
        return Ok(pair);
    }
    let (csr, extensions) = (out.with_extension("csr"), out.with_extension("ext"));
    std::fs::write(
        &extensions,
        "[v3]\nbasicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\n\
         extendedKeyUsage=codeSigning\nsubjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid\n",
    )
    .map_err(|e| format!("cannot write {}: {e}", extensions.display()))?;
    Cmd::new("openssl")
        .args(["req", "-new", "-subj", "/CN=elfsig test added key", "-key"])
        .arg(&subject.key)
        .arg("-out")
        .arg(&csr)
        .run()?;
    let tmp = out.with_extension("tmp");
    Cmd::new("openssl")
        .args([
            "x509",
            "-req",
            "-sha512",
            "-days",
            "3650",
            "-set_serial",
            "0x51",
            "-extensions",
            "v3",
            "-outform",
            "DER",
        ])
        .arg("-extfile")
        .arg(&extensions)
        .arg("-in")
        .arg(&csr)
        .arg("-CA")
        .arg(&issuer.cert)
        .arg("-CAkey")
        .arg(&issuer.key)
        .arg("-out")
        .arg(&tmp)
        .run()?;
    std::fs::rename(&tmp, &pair.cert).map_err(|e| format!("cannot write {}: {e}", pair.cert.display()))?;
    Ok(pair)
}
