//! X.509 certificates: the self-signed code-signing certificate `keygen` makes, and loading
//! certificates (PEM or DER) for signing and verifying.

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::{Duration, SystemTime};

use der::asn1::{BitString, GeneralizedTime, OctetString, UtcTime};
use der::{Decode, Encode, EncodePem};
use pkcs8::LineEnding;
use sha1::{Digest, Sha1};
use spki::SubjectPublicKeyInfoOwned;
use x509_cert::certificate::{Certificate, TbsCertificate, Version};
use x509_cert::ext::pkix::{
    AuthorityKeyIdentifier, BasicConstraints, ExtendedKeyUsage, KeyUsage, KeyUsages, SubjectKeyIdentifier,
};
use x509_cert::ext::{AsExtension, Extension};
use x509_cert::name::Name;
use x509_cert::serial_number::SerialNumber;
use x509_cert::time::{Time, Validity};

use crate::crypto::key::PrivateKey;
use crate::crypto::public_key::PublicKey;
use crate::error::Error;

/// Subject used when `keygen` is given none.
pub const DEFAULT_SUBJECT: &str = "CN=elfsig signing key";

/// A certificate with the parts verification needs, decoded once.
#[derive(Clone, Debug)]
pub struct TrustedCert {
    /// Where it was loaded from.
    pub path: PathBuf,
    /// The certificate.
    pub cert: Certificate,
    /// DER of the issuer name, compared byte for byte with a signature's issuer.
    pub issuer_der: Vec<u8>,
    /// The subject key identifier extension, if present.
    pub key_id: Option<Vec<u8>>,
    /// The public key.
    pub public_key: PublicKey,
}

impl TrustedCert {
    fn new(path: &Path, cert: Certificate) -> Result<Self, Error> {
        let bad = |what: String| Error::msg(format!("{}: {what}", path.display()));
        let tbs = &cert.tbs_certificate;
        let spki_der = tbs.subject_public_key_info.to_der().map_err(|e| bad(e.to_string()))?;
        let public_key =
            PublicKey::from_spki_der(&spki_der).map_err(|e| bad(format!("the certificate's key is {e}")))?;
        let issuer_der = tbs.issuer.to_der().map_err(|e| bad(e.to_string()))?;
        let key_id = tbs
            .get::<SubjectKeyIdentifier>()
            .map_err(|e| bad(format!("bad subject key identifier: {e}")))?
            .map(|(_, skid)| skid.0.as_bytes().to_vec());
        Ok(TrustedCert { path: path.to_owned(), cert, issuer_der, key_id, public_key })
    }

    /// The subject, as an RFC 4514 string.
    pub fn subject(&self) -> String {
        self.cert.tbs_certificate.subject.to_string()
    }

    /// The serial number's bytes.
    pub fn serial(&self) -> &[u8] {
        self.cert.tbs_certificate.serial_number.as_bytes()
    }
}

/// Loads every certificate in a PEM file (one or more `BEGIN CERTIFICATE` blocks) or a DER file.
pub fn load(path: &Path) -> Result<Vec<TrustedCert>, Error> {
    let bytes = std::fs::read(path).map_err(|e| Error::io("cannot read the certificate", path, e))?;
    let bad = |what: String| Error::msg(format!("{}: {what}", path.display()));
    let is_pem = bytes.windows(10).any(|w| w == b"-----BEGIN");
    let certs = if !is_pem {
        vec![Certificate::from_der(&bytes).map_err(|e| bad(format!("not a DER certificate: {e}")))?]
    } else {
        let certs = Certificate::load_pem_chain(&bytes).map_err(|e| bad(format!("not a PEM certificate: {e}")))?;
        if certs.is_empty() {
            return Err(bad("no certificate in the file".into()));
        }
        certs
    };
    certs.into_iter().map(|cert| TrustedCert::new(path, cert)).collect()
}

/// Loads exactly one certificate.
pub fn load_one(path: &Path) -> Result<TrustedCert, Error> {
    let mut certs = load(path)?;
    if certs.len() != 1 {
        return Err(Error::msg(format!("{}: expected one certificate, found {}", path.display(), certs.len())));
    }
    Ok(certs.remove(0))
}

/// Parses `--subject`: an RFC 4514 name (`CN=...,O=...`), or a bare string taken as the CN.
pub fn parse_subject(subject: &str) -> Result<Name, Error> {
    if subject.trim().is_empty() {
        return Err(Error::Usage("--subject must not be empty".into()));
    }
    let rfc4514 = if subject.contains('=') { subject.to_owned() } else { format!("CN={}", escape_rdn(subject)) };
    Name::from_str(&rfc4514).map_err(|e| Error::Usage(format!("invalid --subject {subject:?}: {e}")))
}

fn escape_rdn(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for (i, c) in value.chars().enumerate() {
        let leading = i == 0 && (c == ' ' || c == '#');
        if leading || matches!(c, ',' | '+' | '"' | '\\' | '<' | '>' | ';') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Key identifier as RFC 5280 method 1 and the kernel's `subjectKeyIdentifier=hash` compute it:
/// SHA-1 of the subjectPublicKey BIT STRING's contents.
fn key_identifier(spki: &SubjectPublicKeyInfoOwned) -> Vec<u8> {
    Sha1::digest(spki.subject_public_key.raw_bytes()).to_vec()
}

fn extension<E: AsExtension>(value: &E, critical: bool) -> Result<Extension, Error> {
    let encoded = value.to_der().map_err(|e| Error::msg(format!("cannot encode an extension: {e}")))?;
    Ok(Extension {
        extn_id: E::OID,
        critical,
        extn_value: OctetString::new(encoded).map_err(|e| Error::msg(e.to_string()))?,
    })
}

/// Makes the self-signed certificate for `key`: what the kernel's `certs/default_x509.genkey`
/// asks of a code-signing key (CA:FALSE, digitalSignature, subject and authority key
/// identifiers), plus the codeSigning extended key usage.
pub fn self_signed(key: &PrivateKey, subject: Name) -> Result<Certificate, Error> {
    let encode_err = |e: der::Error| Error::msg(format!("cannot encode the certificate: {e}"));
    let spki_der = key.public_key().to_spki_der()?;
    let spki = SubjectPublicKeyInfoOwned::from_der(&spki_der).map_err(encode_err)?;
    let key_id = key_identifier(&spki);

    let mut serial = [0u8; 16];
    rand::RngCore::fill_bytes(&mut rand::rngs::OsRng, &mut serial);
    serial[0] = (serial[0] & 0x7f) | 0x40; // positive, and 16 bytes long
    let serial = SerialNumber::new(&serial).map_err(encode_err)?;

    // RFC 5280 4.1.2.5: dates through 2049 are UTCTime, later ones GeneralizedTime. The kernel's
    // X.509 parser refuses anything else (OpenSSL is lenient), so adjust what x509-cert makes.
    let now = SystemTime::now();
    let not_before = match UtcTime::from_system_time(now) {
        Ok(utc) => Time::UtcTime(utc),
        Err(_) => Time::try_from(now).map_err(encode_err)?,
    };
    // RFC 5280 4.1.2.5: 99991231235959Z means "no well-defined expiration date". The kernel does
    // not check validity dates, and signatures must outlive any date picked here.
    let not_after = Time::GeneralTime(
        GeneralizedTime::from_unix_duration(Duration::from_secs(253_402_300_799)).map_err(encode_err)?,
    );

    let signature_algorithm = key.certificate_algorithm();
    let extensions = vec![
        extension(&BasicConstraints { ca: false, path_len_constraint: None }, true)?,
        extension(&KeyUsage(KeyUsages::DigitalSignature.into()), true)?,
        extension(&SubjectKeyIdentifier(OctetString::new(key_id.clone()).map_err(encode_err)?), false)?,
        extension(
            &AuthorityKeyIdentifier {
                key_identifier: Some(OctetString::new(key_id).map_err(encode_err)?),
                authority_cert_issuer: None,
                authority_cert_serial_number: None,
            },
            false,
        )?,
        extension(&ExtendedKeyUsage(vec![const_oid::db::rfc5280::ID_KP_CODE_SIGNING]), false)?,
    ];
    let tbs = TbsCertificate {
        version: Version::V3,
        serial_number: serial,
        signature: signature_algorithm.clone(),
        issuer: subject.clone(),
        validity: Validity { not_before, not_after },
        subject,
        subject_public_key_info: spki,
        issuer_unique_id: None,
        subject_unique_id: None,
        extensions: Some(extensions),
    };
    let tbs_der = tbs.to_der().map_err(encode_err)?;
    let signature = key.sign(&tbs_der)?;
    Ok(Certificate {
        tbs_certificate: tbs,
        signature_algorithm,
        signature: BitString::from_bytes(&signature).map_err(encode_err)?,
    })
}

/// The certificate as PEM.
pub fn to_pem(cert: &Certificate) -> Result<String, Error> {
    cert.to_pem(LineEnding::LF).map_err(|e| Error::msg(format!("cannot encode the certificate: {e}")))
}

/// The certificate as DER.
pub fn to_der(cert: &Certificate) -> Result<Vec<u8>, Error> {
    cert.to_der().map_err(|e| Error::msg(format!("cannot encode the certificate: {e}")))
}
