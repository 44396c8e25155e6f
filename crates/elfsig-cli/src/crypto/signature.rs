//! The signature values elfsig accepts, over SHA-256 for every key: RSA PKCS#1 v1.5, and ECDSA
//! in the one encoding of [`super::ecdsa`]; their algorithms as PKCS#7 names them, their
//! lengths, and checking them with a public key.

use const_oid::ObjectIdentifier;
use const_oid::db::rfc5912::{ECDSA_WITH_SHA_256, RSA_ENCRYPTION};
use der::Any;
use p256::ecdsa::signature::hazmat::PrehashVerifier;
use rsa::pkcs1v15::{Signature as RsaSignature, VerifyingKey};
use rsa::signature::Verifier as _;
use rsa::traits::PublicKeyParts;
use sha2::{Digest, Sha256};
use spki::AlgorithmIdentifierOwned;

use super::ecdsa::{P256_LEN, P384_LEN};
use super::public_key::PublicKey;

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
