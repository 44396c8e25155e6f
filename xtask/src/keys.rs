//! The test signing keys, made once with `elfsig keygen` and kept in the cache: the kernel's
//! built-in key (its certificate is compiled into the test kernel), the key embedded in the
//! module, and a key nobody trusts.

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
    Ok(TestKeys { kernel: make("kernel")?, module: make("module")?, other: make("other")? })
}
