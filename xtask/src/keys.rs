//! The test signing keys, made once with `elfsig keygen` and kept in the cache: the kernel's
//! built-in key (its certificate is compiled into the test kernel), the key embedded in the
//! module, a key nobody trusts, and a key whose certificate the kernel key issues, which the
//! tests add to the secondary trusted keyring at run time.

use std::path::PathBuf;

use crate::Result;
use crate::cmd::Cmd;
use crate::paths;

/// A key pair.
#[derive(Clone, Debug)]
pub struct KeyPair {
    /// PKCS#8 PEM private key.
    pub key: PathBuf,
    /// PEM certificate.
    pub cert: PathBuf,
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
}

/// The test keys, made on first use.
pub fn test_keys(elfsig: &PathBuf) -> Result<TestKeys> {
    let dir = paths::cache().join("test-keys");
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let make = |name: &str| -> Result<KeyPair> {
        let pair = KeyPair { key: dir.join(format!("{name}.key")), cert: dir.join(format!("{name}.crt")) };
        if !pair.key.exists() || !pair.cert.exists() {
            Cmd::new(elfsig)
                .args(["keygen", "--force", "--bits", "3072", "--subject"])
                .arg(format!("CN=elfsig test {name} key"))
                .arg("--key")
                .arg(&pair.key)
                .arg("--cert")
                .arg(&pair.cert)
                .run()?;
        }
        Ok(pair)
    };
    let kernel = make("kernel")?;
    let added = issued_by(&make("added-self-signed")?, &kernel, &dir.join("added.der"))?;
    Ok(TestKeys { kernel, module: make("module")?, other: make("other")?, added })
}

/// A certificate (DER, at `out`) for `subject`'s key, issued by `issuer`, as the kernel wants
/// it to link the key into the secondary trusted keyring.
fn issued_by(subject: &KeyPair, issuer: &KeyPair, out: &std::path::Path) -> Result<KeyPair> {
    let pair = KeyPair { key: subject.key.clone(), cert: out.to_owned() };
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
        .args(["x509", "-req", "-days", "3650", "-set_serial", "0x51", "-extensions", "v3", "-outform", "DER"])
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
