//! Signing keys, RSA and ECDSA (P-256, P-384): generation, loading, and the public keys
//! certificates carry.

use std::path::Path;
use std::sync::Arc;

use const_oid::ObjectIdentifier;
use const_oid::db::rfc5912::{ID_EC_PUBLIC_KEY, RSA_ENCRYPTION, SECP_256_R_1, SECP_384_R_1};
use pkcs8::{DecodePrivateKey, DecodePublicKey, EncodePrivateKey, EncodePublicKey, LineEnding};
use rsa::traits::PublicKeyParts;
use rsa::{RsaPrivateKey, RsaPublicKey};
use sha2::Sha256;
use zeroize::Zeroizing;

use crate::crypto::pkcs11::{Pkcs11Uri, TokenKey};
use crate::error::Error;

/// Key sizes `keygen` offers for RSA.
pub const KEY_BITS: [usize; 3] = [2048, 3072, 4096];

/// What `keygen --algorithm` makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Algorithm {
    /// RSA, of `--bits` bits (3072 by default).
    Rsa,
    /// ECDSA on NIST P-256.
    #[value(name = "ecdsa-p256")]
    EcdsaP256,
    /// ECDSA on NIST P-384.
    #[value(name = "ecdsa-p384")]
    EcdsaP384,
}

/// A private key, ready to sign (made once, not for every signature): in memory, or on a PKCS#11
/// token.
#[derive(Clone, Debug)]
pub enum PrivateKey {
    /// RSA, PKCS#1 v1.5 with SHA-256 (boxed: it is ten times the size of an EC key).
    Rsa(Box<rsa::pkcs1v15::SigningKey<Sha256>>),
    /// ECDSA on P-256.
    P256(p256::ecdsa::SigningKey),
    /// ECDSA on P-384.
    P384(p384::ecdsa::SigningKey),
    /// A key on a token, of either kind.
    Token(Arc<TokenKey>),
}

/// A public key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PublicKey {
    /// RSA.
    Rsa(RsaPublicKey),
    /// ECDSA on P-256.
    P256(p256::ecdsa::VerifyingKey),
    /// ECDSA on P-384.
    P384(p384::ecdsa::VerifyingKey),
}

impl PrivateKey {
    fn rsa(key: RsaPrivateKey) -> PrivateKey {
        PrivateKey::Rsa(Box::new(rsa::pkcs1v15::SigningKey::new(key)))
    }

    /// A new key: RSA of `bits` bits with exponent 65537, or ECDSA on the named curve.
    pub fn generate(algorithm: Algorithm, bits: usize) -> Result<PrivateKey, Error> {
        let mut rng = rand::rngs::OsRng;
        Ok(match algorithm {
            Algorithm::Rsa => PrivateKey::rsa(
                RsaPrivateKey::new(&mut rng, bits)
                    .map_err(|e| Error::msg(format!("cannot generate an RSA-{bits} key: {e}")))?,
            ),
            Algorithm::EcdsaP256 => PrivateKey::P256(p256::ecdsa::SigningKey::random(&mut rng)),
            Algorithm::EcdsaP384 => PrivateKey::P384(p384::ecdsa::SigningKey::random(&mut rng)),
        })
    }

    /// The key as PKCS#8 PEM.
    pub fn to_pem(&self) -> Result<Zeroizing<String>, Error> {
        match self {
            PrivateKey::Rsa(key) => (**key).as_ref().to_pkcs8_pem(LineEnding::LF),
            PrivateKey::P256(key) => key.to_pkcs8_pem(LineEnding::LF),
            PrivateKey::P384(key) => key.to_pkcs8_pem(LineEnding::LF),
            PrivateKey::Token(key) => {
                return Err(Error::msg(format!("{} cannot leave its token", key.describe())));
            }
        }
        .map_err(|e| Error::msg(format!("cannot encode the private key: {e}")))
    }

    /// Its public key.
    pub fn public_key(&self) -> PublicKey {
        match self {
            PrivateKey::Rsa(key) => PublicKey::Rsa((**key).as_ref().to_public_key()),
            PrivateKey::P256(key) => PublicKey::P256(*key.verifying_key()),
            PrivateKey::P384(key) => PublicKey::P384(*key.verifying_key()),
            PrivateKey::Token(key) => key.public_key().clone(),
        }
    }
}

impl PublicKey {
    /// Decodes a SubjectPublicKeyInfo: an RSA key, or an EC key on P-256 or P-384 (the curves
    /// the kernel verifies; elfsig refuses P-521 and others).
    pub fn from_spki_der(der: &[u8]) -> Result<PublicKey, String> {
        let spki = spki::SubjectPublicKeyInfoRef::try_from(der).map_err(|e| format!("not a public key: {e}"))?;
        match key_type(spki.algorithm.oid, spki.algorithm.parameters_oid().ok())? {
            Algorithm::Rsa => RsaPublicKey::from_public_key_der(der).map(PublicKey::Rsa).map_err(|e| e.to_string()),
            Algorithm::EcdsaP256 => {
                p256::ecdsa::VerifyingKey::from_public_key_der(der).map(PublicKey::P256).map_err(|e| e.to_string())
            }
            Algorithm::EcdsaP384 => {
                p384::ecdsa::VerifyingKey::from_public_key_der(der).map(PublicKey::P384).map_err(|e| e.to_string())
            }
        }
    }

    /// The SubjectPublicKeyInfo, DER (EC points uncompressed, as the kernel requires).
    pub fn to_spki_der(&self) -> Result<Vec<u8>, Error> {
        match self {
            PublicKey::Rsa(key) => key.to_public_key_der(),
            PublicKey::P256(key) => key.to_public_key_der(),
            PublicKey::P384(key) => key.to_public_key_der(),
        }
        .map(|doc| doc.into_vec())
        .map_err(|e| Error::msg(format!("cannot encode the public key: {e}")))
    }

    /// Its algorithm.
    pub fn algorithm(&self) -> Algorithm {
        match self {
            PublicKey::Rsa(_) => Algorithm::Rsa,
            PublicKey::P256(_) => Algorithm::EcdsaP256,
            PublicKey::P384(_) => Algorithm::EcdsaP384,
        }
    }

    /// What the key is, as `inspect` and `keygen` name it: `RSA-3072`, `ECDSA P-256`.
    pub fn name(&self) -> String {
        match self {
            PublicKey::Rsa(key) => format!("RSA-{}", key.size() * 8),
            PublicKey::P256(_) => "ECDSA P-256".into(),
            PublicKey::P384(_) => "ECDSA P-384".into(),
        }
    }
}

/// The algorithm a key's OIDs name: rsaEncryption, or id-ecPublicKey on P-256 or P-384.
fn key_type(oid: ObjectIdentifier, curve: Option<ObjectIdentifier>) -> Result<Algorithm, String> {
    match (oid, curve) {
        (RSA_ENCRYPTION, _) => Ok(Algorithm::Rsa),
        (ID_EC_PUBLIC_KEY, Some(SECP_256_R_1)) => Ok(Algorithm::EcdsaP256),
        (ID_EC_PUBLIC_KEY, Some(SECP_384_R_1)) => Ok(Algorithm::EcdsaP384),
        (ID_EC_PUBLIC_KEY, curve) => Err(format!(
            "an EC key on {}: elfsig signs with P-256 and P-384",
            curve.map_or_else(|| "no named curve".into(), |c| c.to_string())
        )),
        (other, _) => Err(format!("a key of type {other}, neither RSA nor EC")),
    }
}

/// The key `--key` names: a `pkcs11:` URI (see [`TokenKey::open`]; `certified` is the public key
/// of the certificate it signs for), or a file [`load`] reads.
pub fn open(key: &Path, certified: Option<&PublicKey>) -> Result<PrivateKey, Error> {
    match token_uri(key)? {
        Some(uri) => Ok(PrivateKey::Token(Arc::new(TokenKey::open(&uri, certified)?))),
        None => load(key),
    }
}

/// The `pkcs11:` URI `key` is, if it is one.
pub fn token_uri(key: &Path) -> Result<Option<Pkcs11Uri>, Error> {
    if !Pkcs11Uri::is_uri(key.as_os_str()) {
        return Ok(None);
    }
    let text = key.to_str().ok_or_else(|| Error::Usage("a pkcs11: URI is text: percent-encode other bytes".into()))?;
    Pkcs11Uri::parse(text).map(Some).map_err(|e| Error::Usage(format!("--key: {e}")))
}

/// Loads a private key: PKCS#8 PEM (what `keygen` writes and `openssl genpkey` makes), PKCS#1
/// PEM (`BEGIN RSA PRIVATE KEY`), SEC1 PEM (`BEGIN EC PRIVATE KEY`, what `openssl ecparam
/// -genkey` makes), or PKCS#8 DER.
pub fn load(path: &Path) -> Result<PrivateKey, Error> {
    let bytes = Zeroizing::new(std::fs::read(path).map_err(|e| Error::io("cannot read the private key", path, e))?);
    let bad = |what: &str| Error::msg(format!("{}: {what}", path.display()));
    let pkcs8_der: Zeroizing<Vec<u8>> = if bytes.windows(10).any(|w| w == b"-----BEGIN") {
        let text = std::str::from_utf8(&bytes).map_err(|_| bad("not a PEM file"))?;
        if text.contains("BEGIN ENCRYPTED PRIVATE KEY") || text.contains("Proc-Type: 4,ENCRYPTED") {
            return Err(bad("encrypted private keys are not supported; decrypt it with `openssl pkcs8`"));
        }
        if text.contains("BEGIN RSA PRIVATE KEY") {
            use pkcs1::DecodeRsaPrivateKey;
            return RsaPrivateKey::from_pkcs1_pem(text)
                .map(PrivateKey::rsa)
                .map_err(|e| bad(&format!("not an RSA private key: {e}")));
        }
        if let Some(block) = pem_block(text, "EC PRIVATE KEY") {
            return sec1(block).map_err(|e| bad(&e));
        }
        let (label, der) = der::pem::decode_vec(text.as_bytes()).map_err(|e| bad(&format!("not a PEM file: {e}")))?;
        if label != "PRIVATE KEY" {
            return Err(bad(&format!("a PEM {label}, not a private key")));
        }
        Zeroizing::new(der)
    } else {
        Zeroizing::new(bytes.to_vec())
    };
    pkcs8(&pkcs8_der).map_err(|e| bad(&e))
}

/// A PKCS#8 private key, of whichever type its algorithm names.
fn pkcs8(der: &[u8]) -> Result<PrivateKey, String> {
    let info = pkcs8::PrivateKeyInfo::try_from(der).map_err(|e| format!("not a private key: {e}"))?;
    match key_type(info.algorithm.oid, info.algorithm.parameters_oid().ok())? {
        Algorithm::Rsa => RsaPrivateKey::from_pkcs8_der(der).map(PrivateKey::rsa).map_err(|e| e.to_string()),
        Algorithm::EcdsaP256 => {
            p256::ecdsa::SigningKey::from_pkcs8_der(der).map(PrivateKey::P256).map_err(|e| e.to_string())
        }
        Algorithm::EcdsaP384 => {
            p384::ecdsa::SigningKey::from_pkcs8_der(der).map(PrivateKey::P384).map_err(|e| e.to_string())
        }
    }
}

/// A SEC1 EC private key (PEM block), on P-256 or P-384.
fn sec1(block: &str) -> Result<PrivateKey, String> {
    if let Ok(key) = p256::SecretKey::from_sec1_pem(block) {
        return Ok(PrivateKey::P256(key.into()));
    }
    p384::SecretKey::from_sec1_pem(block)
        .map(|key| PrivateKey::P384(key.into()))
        .map_err(|_| "not an EC private key on P-256 or P-384".into())
}

/// The PEM block labelled `label` in `text` (which may hold others first, as `openssl ecparam
/// -genkey` writes `EC PARAMETERS` before the key).
fn pem_block<'t>(text: &'t str, label: &str) -> Option<&'t str> {
    let begin = format!("-----BEGIN {label}-----");
    let end = format!("-----END {label}-----");
    let start = text.find(&begin)?;
    let stop = start + text[start..].find(&end)? + end.len();
    text.get(start..stop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_algorithm_round_trips_through_pkcs8_pem() {
        let dir = tempfile::tempdir().unwrap();
        for algorithm in [Algorithm::Rsa, Algorithm::EcdsaP256, Algorithm::EcdsaP384] {
            let key = PrivateKey::generate(algorithm, 2048).unwrap();
            let path = dir.path().join("key.pem");
            std::fs::write(&path, key.to_pem().unwrap().as_bytes()).unwrap();
            let loaded = load(&path).unwrap();
            assert_eq!(loaded.public_key(), key.public_key(), "{algorithm:?}");
            let spki = key.public_key().to_spki_der().unwrap();
            assert_eq!(PublicKey::from_spki_der(&spki).unwrap(), key.public_key());
        }
    }

    #[test]
    fn names_what_it_cannot_use() {
        assert_eq!(key_type(RSA_ENCRYPTION, None), Ok(Algorithm::Rsa));
        let p521 = const_oid::db::rfc5912::SECP_521_R_1;
        assert!(key_type(ID_EC_PUBLIC_KEY, Some(p521)).unwrap_err().contains("P-256 and P-384"));
        let ed25519 = const_oid::db::rfc8410::ID_ED_25519;
        assert!(key_type(ed25519, None).unwrap_err().contains("neither RSA nor EC"));
    }
}
