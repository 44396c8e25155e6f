//! The PKCS#7 / CMS `SignedData` that signs a record, in the shape the kernel's
//! `verify_pkcs7_signature()` accepts for module signatures: content type `data`, detached
//! content, no signed attributes, no certificates, one signer named by issuer and serial number,
//! RSA PKCS#1 v1.5 over SHA-512 (or over SHA-256, as elfsig signed until December 2026) or ECDSA
//! over SHA-256 (the values and why SHA-512: `signature.rs`, `ecdsa.rs`).

use std::path::Path;

use cms::cert::IssuerAndSerialNumber;
use cms::content_info::{CmsVersion, ContentInfo};
use cms::signed_data::{EncapsulatedContentInfo, SignedData, SignerIdentifier, SignerInfo, SignerInfos};
use const_oid::ObjectIdentifier;
use const_oid::db::rfc5911;
use der::asn1::{OctetString, SetOfVec};
use der::{Any, Decode, Encode};
use x509_cert::name::Name;
use x509_cert::serial_number::SerialNumber;

use crate::crypto::cert::{self, TrustedCert};
use crate::crypto::key::{self, PrivateKey};
use crate::crypto::signature::{Hash, SignatureAlgorithm};
use crate::error::Error;

const ID_SIGNED_DATA: ObjectIdentifier = rfc5911::ID_SIGNED_DATA;
const ID_DATA: ObjectIdentifier = rfc5911::ID_DATA;

/// Signs records with one key, on behalf of one certificate.
#[derive(Debug)]
pub struct RecordSigner {
    key: PrivateKey,
    signer: SignerIdentifier,
    encoded_len: usize,
}

impl RecordSigner {
    /// A signer for `key`, which must be the key `cert` certifies.
    pub fn new(key: PrivateKey, cert: &TrustedCert) -> Result<Self, Error> {
        if key.public_key() != cert.public_key {
            return Err(Error::msg(format!(
                "the private key does not match the certificate {} ({})",
                cert.path.display(),
                cert.subject()
            )));
        }
        let tbs = &cert.cert.tbs_certificate;
        let signer = SignerIdentifier::IssuerAndSerialNumber(IssuerAndSerialNumber {
            issuer: tbs.issuer.clone(),
            serial_number: tbs.serial_number.clone(),
        });
        let algorithm = key.signature_algorithm();
        let encoded_len = encode(&signer, algorithm, algorithm.hash(), vec![0; key.signature_len()])?.len();
        Ok(RecordSigner { key, signer, encoded_len })
    }

    /// The signer `--key` and `--cert` name: the certificate is read first, and the key (a file,
    /// or a key on a token) must be the one it certifies.
    pub fn open(key_path: &Path, cert_path: &Path) -> Result<Self, Error> {
        let certificate = cert::load_one(cert_path)?;
        RecordSigner::new(key::open(key_path, Some(&certificate.public_key))?, &certificate)
    }

    /// Length of every blob this signer makes: every signature value of a key has the same
    /// length (RSA's, the modulus; ECDSA's, made so), so the length is known before the record
    /// is, which the layout needs.
    pub fn encoded_len(&self) -> usize {
        self.encoded_len
    }

    /// Signs `record` (the encoded record bytes) and returns the DER `ContentInfo`.
    pub fn sign(&self, record: &[u8]) -> Result<Vec<u8>, Error> {
        let signature = self.key.sign(record)?;
        if signature.len() != self.key.signature_len() {
            return Err(Error::msg("the signature has an unexpected length"));
        }
        let algorithm = self.key.signature_algorithm();
        let blob = encode(&self.signer, algorithm, algorithm.hash(), signature)?;
        if blob.len() != self.encoded_len {
            return Err(Error::msg("PKCS#7 blob has an unexpected length"));
        }
        Ok(blob)
    }
}

/// The one encoding of a signature: `sign` writes it, and `parse` accepts nothing else, so that
/// no byte of the blob can change (the RSA signature covers only the record).
fn encode(
    signer: &SignerIdentifier,
    algorithm: SignatureAlgorithm,
    hash: Hash,
    signature: Vec<u8>,
) -> Result<Vec<u8>, Error> {
    let err = |e: der::Error| Error::msg(format!("cannot encode the PKCS#7 signature: {e}"));
    // RFC 5652: version 3 when the signer is named by key identifier, else 1.
    let version = match signer {
        SignerIdentifier::IssuerAndSerialNumber(_) => CmsVersion::V1,
        SignerIdentifier::SubjectKeyIdentifier(_) => CmsVersion::V3,
    };
    let signer_info = SignerInfo {
        version,
        sid: signer.clone(),
        digest_alg: hash.identifier(),
        signed_attrs: None,
        signature_algorithm: algorithm.identifier(),
        signature: OctetString::new(signature).map_err(err)?,
        unsigned_attrs: None,
    };
    let signed_data = SignedData {
        version,
        digest_algorithms: SetOfVec::try_from(vec![hash.identifier()]).map_err(err)?,
        encap_content_info: EncapsulatedContentInfo { econtent_type: ID_DATA, econtent: None },
        certificates: None,
        crls: None,
        signer_infos: SignerInfos(SetOfVec::try_from(vec![signer_info]).map_err(err)?),
    };
    let content_info =
        ContentInfo { content_type: ID_SIGNED_DATA, content: Any::encode_from(&signed_data).map_err(err)? };
    content_info.to_der().map_err(err)
}

/// Who a signature says signed it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SignerId {
    /// By issuer name and serial number, as `sign` writes.
    IssuerAndSerial {
        /// The issuer.
        issuer: Name,
        /// The serial number.
        serial: SerialNumber,
    },
    /// By subject key identifier.
    KeyId(Vec<u8>),
}

impl std::fmt::Display for SignerId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SignerId::IssuerAndSerial { issuer, serial } => {
                write!(f, "{issuer}, serial {}", crate::hex::encode(serial.as_bytes()))
            }
            SignerId::KeyId(id) => write!(f, "key id {}", crate::hex::encode(id)),
        }
    }
}

/// A parsed, well-formed signature blob.
#[derive(Clone, Debug)]
pub struct ParsedSignature {
    /// Who signed.
    pub signer: SignerId,
    /// The signature value's algorithm.
    pub algorithm: SignatureAlgorithm,
    /// The hash it covers.
    pub hash: Hash,
    /// The signature value.
    pub signature: Vec<u8>,
}

/// Parses a signature blob, refusing anything but exactly the encoding [`RecordSigner`] writes
/// (a signer named by key identifier is also accepted, as the kernel does, in its own canonical
/// encoding).
pub fn parse(blob: &[u8]) -> Result<ParsedSignature, String> {
    let content_info = ContentInfo::from_der(blob).map_err(|e| format!("not a PKCS#7 ContentInfo: {e}"))?;
    if content_info.content_type != ID_SIGNED_DATA {
        return Err(format!("content type {} is not signedData", content_info.content_type));
    }
    let signed_data: SignedData =
        content_info.content.decode_as().map_err(|e| format!("not a PKCS#7 SignedData: {e}"))?;
    if signed_data.encap_content_info.econtent_type != ID_DATA {
        return Err("signed content type is not data".into());
    }
    if signed_data.encap_content_info.econtent.is_some() {
        return Err("signature is not detached".into());
    }
    if signed_data.certificates.is_some() || signed_data.crls.is_some() {
        return Err("signature carries certificates or CRLs".into());
    }
    let infos = signed_data.signer_infos.0.into_vec();
    let [info] = <[SignerInfo; 1]>::try_from(infos).map_err(|v| format!("{} signers instead of one", v.len()))?;
    let hash = Hash::from_oid(info.digest_alg.oid)
        .ok_or_else(|| format!("digest algorithm {} is neither SHA-512 nor SHA-256", info.digest_alg.oid))?;
    let algorithm = SignatureAlgorithm::from_oid(info.signature_algorithm.oid).ok_or_else(|| {
        format!("signature algorithm {} is neither RSA nor ECDSA with SHA-256", info.signature_algorithm.oid)
    })?;
    if !algorithm.accepts(hash) {
        return Err(format!("a {} signature over {} is not one elfsig makes", algorithm.name(), hash.name()));
    }
    if info.signed_attrs.is_some() || info.unsigned_attrs.is_some() {
        return Err("signature carries attributes".into());
    }
    let signature = info.signature.into_bytes();
    // Every other field must be what the canonical encoding says: re-encode and compare.
    let canonical = encode(&info.sid, algorithm, hash, signature.clone()).map_err(|e| e.to_string())?;
    if canonical != blob {
        return Err("not the canonical encoding of an elfsig signature".into());
    }
    let signer = match info.sid {
        SignerIdentifier::IssuerAndSerialNumber(id) => {
            SignerId::IssuerAndSerial { issuer: id.issuer, serial: id.serial_number }
        }
        SignerIdentifier::SubjectKeyIdentifier(id) => SignerId::KeyId(id.0.as_bytes().to_vec()),
    };
    Ok(ParsedSignature { signer, algorithm, hash, signature })
}

/// Why a parsed signature was not accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Untrusted {
    /// No trusted certificate matches the signer.
    UnknownKey,
    /// The matching certificate's key does not verify the signature.
    BadSignature,
}

impl ParsedSignature {
    /// The trusted certificate the signature names, if any.
    pub fn find_cert<'c>(&self, trusted: &'c [TrustedCert]) -> Option<&'c TrustedCert> {
        trusted.iter().find(|cert| match &self.signer {
            SignerId::IssuerAndSerial { issuer, serial } => {
                cert.cert.tbs_certificate.serial_number == *serial
                    && issuer.to_der().is_ok_and(|der| der == cert.issuer_der)
            }
            SignerId::KeyId(id) => cert.key_id.as_deref() == Some(id.as_slice()),
        })
    }

    /// Checks the signature over `record` against the trusted certificates; returns the one
    /// that verified it.
    pub fn verify<'c>(&self, record: &[u8], trusted: &'c [TrustedCert]) -> Result<&'c TrustedCert, Untrusted> {
        let cert = self.find_cert(trusted).ok_or(Untrusted::UnknownKey)?;
        if cert.public_key.verifies(self.algorithm, self.hash, record, &self.signature) {
            Ok(cert)
        } else {
            Err(Untrusted::BadSignature)
        }
    }

    /// The size of the signing key in bits, as the signature value shows it: an RSA value is as
    /// long as the modulus; each curve's ECDSA values have their own fixed length (0: none of
    /// them).
    pub fn key_bits(&self) -> usize {
        match self.algorithm {
            SignatureAlgorithm::Rsa => self.signature.len().saturating_mul(8),
            SignatureAlgorithm::Ecdsa => crate::crypto::ecdsa::ecdsa_bits(self.signature.len()).unwrap_or(0),
        }
    }

    /// How `inspect` describes its scheme: `PKCS#1 v1.5 over SHA-512`, `with SHA-256`.
    pub fn scheme(&self) -> String {
        self.algorithm.scheme(self.hash)
    }

    /// What the signature value says of its key: `RSA-3072`, `ECDSA P-256`.
    pub fn key_name(&self) -> String {
        match (self.algorithm, self.key_bits()) {
            (SignatureAlgorithm::Rsa, bits) => format!("RSA-{bits}"),
            (SignatureAlgorithm::Ecdsa, 0) => "ECDSA".into(),
            (SignatureAlgorithm::Ecdsa, bits) => format!("ECDSA P-{bits}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use x509_cert::ext::pkix::SubjectKeyIdentifier;

    fn signer() -> SignerIdentifier {
        SignerIdentifier::SubjectKeyIdentifier(SubjectKeyIdentifier(OctetString::new(vec![7; 20]).unwrap()))
    }

    #[test]
    fn rsa_blobs_over_either_hash_parse_as_such() {
        for hash in [Hash::Sha512, Hash::Sha256] {
            let blob = encode(&signer(), SignatureAlgorithm::Rsa, hash, vec![1; 384]).unwrap();
            let parsed = parse(&blob).unwrap();
            assert_eq!((parsed.algorithm, parsed.hash), (SignatureAlgorithm::Rsa, hash));
        }
    }

    #[test]
    fn ecdsa_over_sha512_and_other_digests_are_refused() {
        let blob = encode(&signer(), SignatureAlgorithm::Ecdsa, Hash::Sha512, vec![0x30; 71]).unwrap();
        let refused = parse(&blob).unwrap_err();
        assert!(refused.contains("not one elfsig makes"), "{refused}");
        // SHA-384 (2.16.840.1.101.3.4.2.2) in both places: a digest elfsig does not sign with.
        let mut blob = encode(&signer(), SignatureAlgorithm::Rsa, Hash::Sha512, vec![1; 384]).unwrap();
        let oid = [0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x03];
        let at: Vec<usize> = (0..blob.len() - oid.len()).filter(|&i| blob[i..i + oid.len()] == oid).collect();
        assert_eq!(at.len(), 2);
        at.iter().for_each(|&i| blob[i + oid.len() - 1] = 0x02);
        let refused = parse(&blob).unwrap_err();
        assert!(refused.contains("neither SHA-512 nor SHA-256"), "{refused}");
    }
}
