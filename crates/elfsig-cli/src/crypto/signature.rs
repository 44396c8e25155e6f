//! The signature values elfsig accepts: RSA PKCS#1 v1.5 over SHA-512 (over SHA-256 until
//! December 2026, which it still accepts), and ECDSA over SHA-256 in the one
//! encoding of [`super::ecdsa`]; their algorithms as PKCS#7 names them, their lengths, and
//! checking them with a public key.

use const_oid::ObjectIdentifier;
use const_oid::db::rfc5912::{ECDSA_WITH_SHA_256, ID_SHA_256, ID_SHA_512, RSA_ENCRYPTION};
use der::Any;
use p256::ecdsa::signature::hazmat::PrehashVerifier;
use rsa::pkcs1v15::{Signature as RsaSignature, VerifyingKey};
use rsa::signature::Verifier as _;
use rsa::traits::PublicKeyParts;
use sha2::{Digest, Sha256, Sha512};
use spki::AlgorithmIdentifierOwned;

use super::ecdsa::{P256_LEN, P384_LEN};
use super::public_key::PublicKey;

/// The hash a signature value covers, as a SignerInfo's `digestAlgorithm` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hash {
    /// SHA-256: ECDSA's (`ecdsa-with-SHA256` names it), and RSA's until December 2026.
    Sha256,
    /// SHA-512: RSA's. Linux self-tests `pkcs1(rsa,sha256)` with an RSA private-key operation
    /// when the first RSA/SHA-256 signature after boot instantiates it (crypto/testmgr.c; 67
    /// million instructions, a fifth of what loading elfsig costs a boot), and tests
    /// `pkcs1(rsa,sha512)` with nothing: the module's certificates and every signature elfsig makes now
    /// are RSA/SHA-512 so that no boot pays that test for elfsig. SHA-512 hashes only the record
    /// and the certificates, not the files (their digest in the record is SHA-256).
    Sha512,
}

impl Hash {
    /// The SignerInfo's `digestAlgorithm` (RFC 5754: parameters absent).
    pub fn identifier(self) -> AlgorithmIdentifierOwned {
        let oid = match self {
            Hash::Sha256 => ID_SHA_256,
            Hash::Sha512 => ID_SHA_512,
        };
        AlgorithmIdentifierOwned { oid, parameters: None }
    }

    /// The hash a `digestAlgorithm` OID names, if elfsig accepts it.
    pub fn from_oid(oid: ObjectIdentifier) -> Option<Hash> {
        match oid {
            ID_SHA_256 => Some(Hash::Sha256),
            ID_SHA_512 => Some(Hash::Sha512),
            _ => None,
        }
    }

    /// `message`'s digest.
    pub fn digest(self, message: &[u8]) -> Vec<u8> {
        match self {
            Hash::Sha256 => Sha256::digest(message).to_vec(),
            Hash::Sha512 => Sha512::digest(message).to_vec(),
        }
    }

    /// How `inspect` names it.
    pub fn name(self) -> &'static str {
        match self {
            Hash::Sha256 => "SHA-256",
            Hash::Sha512 => "SHA-512",
        }
    }
}

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

    /// The hash elfsig signs with under this algorithm.
    pub fn hash(self) -> Hash {
        match self {
            SignatureAlgorithm::Rsa => Hash::Sha512,
            SignatureAlgorithm::Ecdsa => Hash::Sha256,
        }
    }

    /// Whether elfsig accepts a signature of this algorithm over `hash`: RSA over SHA-512 or
    /// over SHA-256 (what elfsig signed with until December 2026), ECDSA over SHA-256 only (its
    /// `signatureAlgorithm` says so).
    pub fn accepts(self, hash: Hash) -> bool {
        match self {
            SignatureAlgorithm::Rsa => true,
            SignatureAlgorithm::Ecdsa => hash == Hash::Sha256,
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

    /// How `inspect` describes the scheme of a signature over `hash`, after the key's name.
    pub fn scheme(self, hash: Hash) -> String {
        match self {
            SignatureAlgorithm::Rsa => format!("PKCS#1 v1.5 over {}", hash.name()),
            SignatureAlgorithm::Ecdsa => format!("with {}", hash.name()),
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

    /// Whether `value` is a signature of `algorithm` over `hash` by this key over `message`, in
    /// elfsig's one encoding (for ECDSA: strict DER, low S, the curve's fixed length).
    pub fn verifies(&self, algorithm: SignatureAlgorithm, hash: Hash, message: &[u8], value: &[u8]) -> bool {
        if !algorithm.accepts(hash) {
            return false;
        }
        match (self, algorithm) {
            (PublicKey::Rsa(key), SignatureAlgorithm::Rsa) => RsaSignature::try_from(value).is_ok_and(|s| match hash {
                Hash::Sha256 => VerifyingKey::<Sha256>::new(key.clone()).verify(message, &s).is_ok(),
                Hash::Sha512 => VerifyingKey::<Sha512>::new(key.clone()).verify(message, &s).is_ok(),
            }),
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
