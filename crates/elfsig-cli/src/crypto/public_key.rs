//! Public keys, RSA and ECDSA (P-256, P-384), and the algorithms that name them, as certificates
//! carry them (SubjectPublicKeyInfo).

use const_oid::ObjectIdentifier;
use const_oid::db::rfc5912::{ID_EC_PUBLIC_KEY, RSA_ENCRYPTION, SECP_256_R_1, SECP_384_R_1};
use pkcs8::{DecodePublicKey, EncodePublicKey};
use rsa::RsaPublicKey;
use rsa::traits::PublicKeyParts;

use crate::error::Error;

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
pub(crate) fn key_type(oid: ObjectIdentifier, curve: Option<ObjectIdentifier>) -> Result<Algorithm, String> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_what_it_cannot_use() {
        assert_eq!(key_type(RSA_ENCRYPTION, None), Ok(Algorithm::Rsa));
        let p521 = const_oid::db::rfc5912::SECP_521_R_1;
        assert!(key_type(ID_EC_PUBLIC_KEY, Some(p521)).unwrap_err().contains("P-256 and P-384"));
        let ed25519 = const_oid::db::rfc8410::ID_ED_25519;
        assert!(key_type(ed25519, None).unwrap_err().contains("neither RSA nor EC"));
    }
}
