//! What the CLI gives elfsig-core's verifier: SHA-256 from the sha2 crate, buffers from the
//! heap, and trust in the certificates named on the command line. The steps themselves, and
//! their order, are the core's (`elfsig_core::verify`), the same the kernel module runs.

use elfsig_core::{Reason, Refused, Scratch, SignatureError, Trust};
use sha2::Digest;

use crate::crypto::cert::TrustedCert;
use crate::crypto::cms::{self, Untrusted};

/// SHA-256 from the sha2 crate; it cannot fail.
#[derive(Debug)]
pub struct Sha2(sha2::Sha256);

impl elfsig_core::Sha256 for Sha2 {
    fn start() -> Result<Self, i32> {
        Ok(Sha2(sha2::Sha256::new()))
    }

    fn update(&mut self, bytes: &[u8]) -> Result<(), i32> {
        self.0.update(bytes);
        Ok(())
    }

    fn finish(self) -> Result<[u8; 32], i32> {
        Ok(self.0.finalize().into())
    }
}

/// Buffers from the heap.
#[derive(Debug)]
pub struct Heap;

impl Scratch for Heap {
    type Buffer = Vec<u8>;

    fn buffer(&mut self, len: usize) -> Option<Vec<u8>> {
        Some(vec![0; len])
    }
}

/// The certificates given with `--cert`. Nothing is revoked: revocation lists live in the
/// kernel's `.blacklist` keyring, which the CLI does not read.
#[derive(Debug)]
pub struct Certificates<'c>(pub &'c [TrustedCert]);

impl<'c> Trust for Certificates<'c> {
    type Signer = &'c TrustedCert;
    type Detail = String;

    fn check_signature(&mut self, record: &[u8], blob: &[u8]) -> Result<&'c TrustedCert, Refused<String>> {
        let parsed =
            cms::parse(blob).map_err(|detail| Refused::by_trust(Reason::MalformedSignature, bad_cms(&detail)))?;
        parsed.verify(record, self.0).map_err(|why| match why {
            Untrusted::UnknownKey => Refused::by_trust(Reason::UnknownKey, format!("signer is {}", parsed.signer)),
            Untrusted::BadSignature => Refused::new(Reason::BadSignature),
        })
    }

    fn check_revocation(&mut self, _digest: &[u8; 32]) -> Result<(), Refused<String>> {
        Ok(())
    }
}

/// The detail of a PKCS#7 blob that does not parse: the core's words for it, then why.
pub fn bad_cms(why: &str) -> String {
    format!("{}: {why}", SignatureError::BadCms)
}
