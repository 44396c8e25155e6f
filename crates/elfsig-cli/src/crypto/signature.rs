//! The signature values elfsig makes and accepts, over SHA-256 for every key: RSA PKCS#1 v1.5,
//! and ECDSA as a DER `ECDSA-Sig-Value` (what the kernel's "x962" encoding parses) in one
//! encoding only: S in its low half and a fixed length per curve. The fixed length lets the
//! blob's size be known before the record is (the layout needs it), and, with low S, leaves no
//! byte of a valid signature that can be changed into another valid one (ECDSA's (r, n - s)).

use const_oid::ObjectIdentifier;
use const_oid::db::rfc5912::{ECDSA_WITH_SHA_256, RSA_ENCRYPTION, SHA_256_WITH_RSA_ENCRYPTION};
use der::Any;
use p256::ecdsa::signature::hazmat::{PrehashVerifier, RandomizedPrehashSigner};
use rsa::pkcs1v15::{Signature as RsaSignature, VerifyingKey};
use rsa::signature::{SignatureEncoding, Signer as _, Verifier as _};
use rsa::traits::PublicKeyParts;
use sha2::{Digest, Sha256};
use spki::AlgorithmIdentifierOwned;

use super::key::{PrivateKey, PublicKey};
use crate::error::Error;

/// A signature's algorithm, as a PKCS#7 SignerInfo names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SignatureAlgorithm {
    /// `rsaEncryption` (parameters NULL), as the kernel's sign-file writes for RSA.
    Rsa,
    /// `ecdsa-with-SHA256` (parameters absent), as sign-file and OpenSSL write for ECDSA.
    Ecdsa,
}

impl SignatureAlgorithm {
    /// The SignerInfo's `signatureAlgorithm`.
    pub fn identifier(self) -> AlgorithmIdentifierOwned {
        match self {
            SignatureAlgorithm::Rsa => AlgorithmIdentifierOwned { oid: RSA_ENCRYPTION, parameters: Some(Any::null()) },
            SignatureAlgorithm::Ecdsa => AlgorithmIdentifierOwned { oid: ECDSA_WITH_SHA_256, parameters: None },
        }
    }

    /// The algorithm a SignerInfo's `signatureAlgorithm` OID names, if elfsig accepts it.
    pub fn from_oid(oid: ObjectIdentifier) -> Option<SignatureAlgorithm> {
        match oid {
            RSA_ENCRYPTION => Some(SignatureAlgorithm::Rsa),
            ECDSA_WITH_SHA_256 => Some(SignatureAlgorithm::Ecdsa),
            _ => None,
        }
    }

    /// How `inspect` describes the scheme after the key's name.
    pub fn scheme(self) -> &'static str {
        match self {
            SignatureAlgorithm::Rsa => "PKCS#1 v1.5",
            SignatureAlgorithm::Ecdsa => "with SHA-256",
        }
    }

    /// How `inspect --json` names it.
    pub fn name(self) -> &'static str {
        match self {
            SignatureAlgorithm::Rsa => "rsa-pkcs1v15",
            SignatureAlgorithm::Ecdsa => "ecdsa",
        }
    }
}

/// How many fresh signatures to try for one of the fixed length (each has about an even chance).
const TRIES: usize = 64;

/// The length of every ECDSA signature elfsig makes with `field_bytes`-byte scalars: r with its
/// top bit set (a zero byte first), low S with its top byte non-zero. About half of all
/// signatures have it.
const fn ecdsa_len(field_bytes: usize) -> usize {
    2 + (2 + field_bytes + 1) + (2 + field_bytes)
}

/// Every P-256 signature value's length.
const P256_LEN: usize = ecdsa_len(32);
/// Every P-384 signature value's length.
const P384_LEN: usize = ecdsa_len(48);

/// The curve's size in bits that an ECDSA value of `len` bytes belongs to, if any.
pub fn ecdsa_bits(len: usize) -> Option<usize> {
    match len {
        P256_LEN => Some(256),
        P384_LEN => Some(384),
        _ => None,
    }
}

impl PublicKey {
    /// The algorithm of the signature values this key verifies.
    pub fn signature_algorithm(&self) -> SignatureAlgorithm {
        match self {
            PublicKey::Rsa(_) => SignatureAlgorithm::Rsa,
            PublicKey::P256(_) | PublicKey::P384(_) => SignatureAlgorithm::Ecdsa,
        }
    }

    /// The length of every signature value made with its private key.
    pub fn signature_len(&self) -> usize {
        match self {
            PublicKey::Rsa(key) => key.size(),
            PublicKey::P256(_) => P256_LEN,
            PublicKey::P384(_) => P384_LEN,
        }
    }
}

impl PrivateKey {
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

    /// Signs `message` (hashed with SHA-256) in elfsig's one encoding.
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

    /// The certificate signature algorithm for this key: `sha256WithRSAEncryption` or
    /// `ecdsa-with-SHA256`.
    pub fn certificate_algorithm(&self) -> AlgorithmIdentifierOwned {
        match self.signature_algorithm() {
            SignatureAlgorithm::Rsa => {
                AlgorithmIdentifierOwned { oid: SHA_256_WITH_RSA_ENCRYPTION, parameters: Some(Any::null()) }
            }
            SignatureAlgorithm::Ecdsa => SignatureAlgorithm::Ecdsa.identifier(),
        }
    }
}

/// A P-256 signature in elfsig's encoding: low S, DER (its length is [`fixed_len`]'s to check).
pub(crate) fn p256_value(s: p256::ecdsa::Signature) -> Vec<u8> {
    s.normalize_s().unwrap_or(s).to_der().as_bytes().to_vec()
}

/// A P-384 signature in elfsig's encoding, as [`p256_value`].
pub(crate) fn p384_value(s: p384::ecdsa::Signature) -> Vec<u8> {
    s.normalize_s().unwrap_or(s).to_der().as_bytes().to_vec()
}

/// Signs with fresh randomness until the value has `len` bytes.
pub(crate) fn fixed_len(len: usize, mut sign: impl FnMut() -> Result<Vec<u8>, Error>) -> Result<Vec<u8>, Error> {
    for _ in 0..TRIES {
        let value = sign()?;
        if value.len() == len {
            return Ok(value);
        }
    }
    Err(Error::msg(format!("no ECDSA signature of {len} bytes in {TRIES} tries: the key or its randomness is broken")))
}

impl PublicKey {
    /// Whether `value` is a signature of `algorithm` by this key over `message`, in elfsig's one
    /// encoding (for ECDSA: strict DER, low S, the curve's fixed length).
    pub fn verifies(&self, algorithm: SignatureAlgorithm, message: &[u8], value: &[u8]) -> bool {
        match (self, algorithm) {
            (PublicKey::Rsa(key), SignatureAlgorithm::Rsa) => RsaSignature::try_from(value)
                .is_ok_and(|s| VerifyingKey::<Sha256>::new(key.clone()).verify(message, &s).is_ok()),
            (PublicKey::P256(key), SignatureAlgorithm::Ecdsa) => {
                value.len() == P256_LEN
                    && p256::ecdsa::Signature::from_der(value).is_ok_and(|s| {
                        s.normalize_s().is_none() && key.verify_prehash(&Sha256::digest(message), &s).is_ok()
                    })
            }
            (PublicKey::P384(key), SignatureAlgorithm::Ecdsa) => {
                value.len() == P384_LEN
                    && p384::ecdsa::Signature::from_der(value).is_ok_and(|s| {
                        s.normalize_s().is_none() && key.verify_prehash(&Sha256::digest(message), &s).is_ok()
                    })
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::key::Algorithm;

    #[test]
    fn every_key_signs_at_its_fixed_length_and_verifies() {
        for algorithm in [Algorithm::Rsa, Algorithm::EcdsaP256, Algorithm::EcdsaP384] {
            let key = PrivateKey::generate(algorithm, 2048).unwrap();
            let public = key.public_key();
            for i in 0..20u8 {
                let message = [i; 40];
                let value = key.sign(&message).unwrap();
                assert_eq!(value.len(), key.signature_len(), "{algorithm:?}");
                assert!(public.verifies(key.signature_algorithm(), &message, &value));
                assert!(!public.verifies(key.signature_algorithm(), &[i; 41], &value));
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
        assert!(!key.public_key().verifies(SignatureAlgorithm::Ecdsa, b"record", &high));
        assert!(!key.public_key().verifies(SignatureAlgorithm::Rsa, b"record", &value));
    }
}
