//! RSA private keys: generation and loading.

use std::path::Path;

use pkcs8::{DecodePrivateKey, EncodePrivateKey, LineEnding};
use rsa::RsaPrivateKey;
use zeroize::Zeroizing;

use crate::error::Error;

/// Key sizes `keygen` offers.
pub const KEY_BITS: [usize; 3] = [2048, 3072, 4096];

/// Generates an RSA key of `bits` bits with exponent 65537.
pub fn generate(bits: usize) -> Result<RsaPrivateKey, Error> {
    let mut rng = rand::rngs::OsRng;
    RsaPrivateKey::new(&mut rng, bits).map_err(|e| Error::msg(format!("cannot generate an RSA-{bits} key: {e}")))
}

/// The key as PKCS#8 PEM.
pub fn to_pem(key: &RsaPrivateKey) -> Result<Zeroizing<String>, Error> {
    key.to_pkcs8_pem(LineEnding::LF).map_err(|e| Error::msg(format!("cannot encode the private key: {e}")))
}

/// Loads an RSA private key: PKCS#8 PEM (what `keygen` writes and `openssl genpkey` makes),
/// PKCS#1 PEM (`BEGIN RSA PRIVATE KEY`), or PKCS#8 DER.
pub fn load(path: &Path) -> Result<RsaPrivateKey, Error> {
    let bytes = Zeroizing::new(std::fs::read(path).map_err(|e| Error::io("cannot read the private key", path, e))?);
    let bad = |what: &str| Error::msg(format!("{}: {what}", path.display()));
    if bytes.windows(10).any(|w| w == b"-----BEGIN") {
        let text = std::str::from_utf8(&bytes).map_err(|_| bad("not a PEM file"))?;
        if text.contains("BEGIN ENCRYPTED PRIVATE KEY") {
            return Err(bad("encrypted private keys are not supported; decrypt it with `openssl pkcs8`"));
        }
        if text.contains("BEGIN RSA PRIVATE KEY") {
            use pkcs1::DecodeRsaPrivateKey;
            return RsaPrivateKey::from_pkcs1_pem(text).map_err(|e| bad(&format!("not an RSA private key: {e}")));
        }
        return RsaPrivateKey::from_pkcs8_pem(text).map_err(|e| bad(&format!("not an RSA private key: {e}")));
    }
    RsaPrivateKey::from_pkcs8_der(&bytes).map_err(|e| bad(&format!("not an RSA private key: {e}")))
}
