//! `elfsig verify`: a file passes only with a well-formed signature, by a trusted certificate,
//! over exactly this file.

use std::path::Path;
use std::process::ExitCode;

use elfsig_core::{Rejection, SignatureError};
use sha2::{Digest, Sha256};

use crate::cli::VerifyArgs;
use crate::crypto::cert::{self, TrustedCert};
use crate::crypto::cms::{self, Untrusted};
use crate::elf_file::{self, OpenFile};
use crate::error::Error;
use crate::output::{self, Outcome, Verbosity};
use crate::stream;
use crate::walk;

/// Runs the command.
pub fn run(args: &VerifyArgs, quiet: bool) -> Result<ExitCode, Error> {
    let mut trusted = Vec::new();
    for path in &args.cert {
        trusted.extend(cert::load(path)?);
    }
    let (targets, explicit) = walk::targets(&args.files, &args.recursive)?;
    Ok(output::run_all(&targets, Verbosity::from_quiet(quiet), "verified", |index, path| {
        if index >= explicit && !elf_file::has_elf_magic(path) {
            return Outcome::Skipped;
        }
        match verify_file(path, &trusted) {
            Ok(verified) => Outcome::Done {
                line: Some(format!("{}: OK (signed by {})", path.display(), verified.signer.subject())),
                notes: Vec::new(),
            },
            Err(e) => Outcome::Failed(e, None),
        }
    }))
}

/// A file that verified.
#[derive(Debug)]
pub struct Verified<'c> {
    /// The certificate whose key signed it.
    pub signer: &'c TrustedCert,
    /// The digest it was signed with.
    pub digest: [u8; 32],
}

/// Verifies one file against the trusted certificates.
///
/// The checks run cheapest and most telling first: structure, then the signature over the
/// record (which needs no hashing), then the record's binding to this file, then the digest.
pub fn verify_file<'c>(path: &Path, trusted: &'c [TrustedCert]) -> Result<Verified<'c>, Error> {
    let file = OpenFile::open(path)?;
    let analysis = elf_file::analyze(&file)?;
    let Some(signature) = analysis.signature else {
        return Err(Error::rejected(Rejection::Unsigned));
    };
    let parts = signature.parts()?;
    let parsed = cms::parse(parts.cms)
        .map_err(|detail| Error::rejected_with(Rejection::MalformedSignature(SignatureError::BadCms), detail))?;
    let signer = parsed.verify(parts.record_bytes, trusted).map_err(|why| match why {
        Untrusted::UnknownKey => Error::rejected_with(Rejection::UnknownKey, format!("signer is {}", parsed.signer)),
        Untrusted::BadSignature => Error::rejected(Rejection::BadSignature),
    })?;
    let record = signature.record;
    if !record.matches(&signature.location) {
        return Err(Error::rejected_with(
            Rejection::Modified,
            "its length or signature position is not what was signed",
        ));
    }
    let mut hasher = Sha256::new();
    let mut reader = file.reader();
    stream::hash_ranges(&mut reader, &signature.location.hashed_ranges(), &mut hasher, &mut Vec::new())
        .map_err(|e| file.stream_error(e, &mut reader, path))?;
    let digest: [u8; 32] = hasher.finalize().into();
    if digest != record.digest {
        return Err(Error::rejected_with(Rejection::Modified, "digest mismatch"));
    }
    Ok(Verified { signer, digest })
}
