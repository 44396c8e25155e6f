//! Private keys, RSA and ECDSA (P-256, P-384), in files or on PKCS#11 tokens: generation,
//! loading, and signing in elfsig's one encoding.

use std::path::Path;
use std::sync::Arc;

use const_oid::db::rfc5912::SHA_512_WITH_RSA_ENCRYPTION;
use der::Any;
use p256::ecdsa::signature::hazmat::RandomizedPrehashSigner;
use pkcs8::{DecodePrivateKey, EncodePrivateKey, LineEnding};
use rsa::RsaPrivateKey;
use rsa::signature::{SignatureEncoding, Signer as _};
use rsa::traits::PublicKeyParts;
use sha2::{Digest, Sha256, Sha512};
use spki::AlgorithmIdentifierOwned;
use zeroize::Zeroizing;

use crate::crypto::ecdsa::{P256_LEN, P384_LEN, fixed_len, p256_value, p384_value};
use crate::crypto::pkcs11::{Pkcs11Uri, TokenKey};
use crate::crypto::public_key::{Algorithm, PublicKey, key_type};
#[cfg(doc)]
use crate::crypto::signature::Hash;
use crate::crypto::signature::SignatureAlgorithm;
use crate::error::Error;

/// Key sizes `keygen` offers for RSA.
pub const KEY_BITS: [usize; 3] = [2048, 3072, 4096];

/// A private key, ready to sign (made once, not for every signature): in memory, or on a PKCS#11
/// token.
#[derive(Clone, Debug)]
pub enum PrivateKey {
    /// RSA, PKCS#1 v1.5 with SHA-512 ([`Hash::Sha512`] says why; boxed: it is ten times the
    /// size of an EC key).
    Rsa(Box<rsa::pkcs1v15::SigningKey<Sha512>>),
    /// ECDSA on P-256.
    P256(p256::ecdsa::SigningKey),
    /// ECDSA on P-384.
    P384(p384::ecdsa::SigningKey),
    /// A key on a token, of either kind.
    Token(Arc<TokenKey>),
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

    /// The signature values' algorithm.
    pub fn signature_algorithm(&self) -> SignatureAlgorithm {
        match self {
            PrivateKey::Rsa(_) => SignatureAlgorithm::Rsa,
            PrivateKey::P256(_) | PrivateKey::P384(_) => SignatureAlgorithm::Ecdsa,
            PrivateKey::Token(key) => key.public_key().signature_algorithm(),
        }
    }

    /// The length of every signature value [`Self::sign`] makes.
    pub fn signature_len(&self) -> usize {
        match self {
            PrivateKey::Rsa(key) => (**key).as_ref().size(),
            PrivateKey::P256(_) => P256_LEN,
            PrivateKey::P384(_) => P384_LEN,
            PrivateKey::Token(key) => key.public_key().signature_len(),
        }
    }

    /// Signs `message` (hashed as [`SignatureAlgorithm::hash`] says: SHA-512 for RSA, SHA-256
    /// for ECDSA) in elfsig's one encoding.
    pub fn sign(&self, message: &[u8]) -> Result<Vec<u8>, Error> {
        let failed = |e: rsa::signature::Error| Error::msg(format!("signing failed: {e}"));
        let mut rng = rand::rngs::OsRng;
        match self {
            PrivateKey::Rsa(key) => Ok(key.try_sign(message).map_err(failed)?.to_vec()),
            PrivateKey::P256(key) => {
                let digest = Sha256::digest(message);
                fixed_len(P256_LEN, || Ok(p256_value(key.sign_prehash_with_rng(&mut rng, &digest).map_err(failed)?)))
            }
            PrivateKey::P384(key) => {
                let digest = Sha256::digest(message);
                fixed_len(P384_LEN, || Ok(p384_value(key.sign_prehash_with_rng(&mut rng, &digest).map_err(failed)?)))
            }
            PrivateKey::Token(key) => key.sign(message),
        }
    }

    /// The certificate signature algorithm for this key, as [`Self::sign`] signs:
    /// `sha512WithRSAEncryption` or `ecdsa-with-SHA256`.
    pub fn certificate_algorithm(&self) -> AlgorithmIdentifierOwned {
        match self.signature_algorithm() {
            SignatureAlgorithm::Rsa => {
                AlgorithmIdentifierOwned { oid: SHA_512_WITH_RSA_ENCRYPTION, parameters: Some(Any::null()) }
            }
            SignatureAlgorithm::Ecdsa => SignatureAlgorithm::Ecdsa.identifier(),
        }
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
    use crate::crypto::signature::Hash;

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
    fn every_key_signs_at_its_fixed_length_and_verifies() {
        for algorithm in [Algorithm::Rsa, Algorithm::EcdsaP256, Algorithm::EcdsaP384] {
            let key = PrivateKey::generate(algorithm, 2048).unwrap();
            let public = key.public_key();
            for i in 0..20u8 {
                let message = [i; 40];
                let value = key.sign(&message).unwrap();
                assert_eq!(value.len(), key.signature_len(), "{algorithm:?}");
                let (algorithm, hash) = (key.signature_algorithm(), key.signature_algorithm().hash());
                assert!(public.verifies(algorithm, hash, &message, &value));
                assert!(!public.verifies(algorithm, hash, &[i; 41], &value));
            }
        }
    }

    #[test]
    fn ecdsa_refuses_high_s_and_the_wrong_algorithm() {
        let key = PrivateKey::generate(Algorithm::EcdsaP256, 0).unwrap();
        let value = key.sign(b"record").unwrap();
        let signature = p256::ecdsa::Signature::from_der(&value).unwrap();
        // The same signature with n - s: valid ECDSA, not elfsig's encoding.
        let (r, s) = signature.split_scalars();
        let high = p256::ecdsa::Signature::from_scalars(r, -*s).unwrap();
        let high = high.to_der().as_bytes().to_vec();
        assert!(!key.public_key().verifies(SignatureAlgorithm::Ecdsa, Hash::Sha256, b"record", &high));
        assert!(!key.public_key().verifies(SignatureAlgorithm::Rsa, Hash::Sha256, b"record", &value));
    }

    #[test]
    fn rsa_signs_over_sha512_and_what_it_signed_over_sha256_still_verifies() {
        let key = PrivateKey::generate(Algorithm::Rsa, 2048).unwrap();
        let public = key.public_key();
        assert_eq!(key.signature_algorithm().hash(), Hash::Sha512);
        let value = key.sign(b"record").unwrap();
        assert!(public.verifies(SignatureAlgorithm::Rsa, Hash::Sha512, b"record", &value));
        // The hash is in the signed DigestInfo: the same value does not pass for SHA-256.
        assert!(!public.verifies(SignatureAlgorithm::Rsa, Hash::Sha256, b"record", &value));
        let PrivateKey::Rsa(signing) = &key else { unreachable!() };
        let older = rsa::pkcs1v15::SigningKey::<Sha256>::new((**signing).as_ref().clone());
        let value = older.try_sign(b"record").unwrap().to_vec();
        assert!(public.verifies(SignatureAlgorithm::Rsa, Hash::Sha256, b"record", &value));
        assert!(!public.verifies(SignatureAlgorithm::Rsa, Hash::Sha512, b"record", &value));
    }

    #[test]
    fn ecdsa_is_over_sha256_only() {
        let key = PrivateKey::generate(Algorithm::EcdsaP256, 0).unwrap();
        let value = key.sign(b"record").unwrap();
        assert!(key.public_key().verifies(SignatureAlgorithm::Ecdsa, Hash::Sha256, b"record", &value));
        assert!(!key.public_key().verifies(SignatureAlgorithm::Ecdsa, Hash::Sha512, b"record", &value));
    }
}
