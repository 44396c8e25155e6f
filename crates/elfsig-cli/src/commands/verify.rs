//! `elfsig verify`: a file passes only with a well-formed signature, by a trusted certificate,
//! over exactly this file. The checks are elfsig-core's, the kernel module's too.

use std::path::Path;
use std::process::ExitCode;

use elfsig_core::Structure;

use crate::cli::VerifyArgs;
use crate::crypto::cert::{self, TrustedCert};
use crate::crypto::trust::{Certificates, Heap, Sha2};
use crate::elf_file::OpenFile;
use crate::error::Error;
use crate::output::{self, Outcome, Verbosity};
use crate::skip::Skip;
use crate::walk;

/// Runs the command.
pub fn run(args: &VerifyArgs, quiet: bool) -> Result<ExitCode, Error> {
    let mut trusted = Vec::new();
    for path in &args.cert {
        trusted.extend(cert::load(path)?);
    }
    let (targets, explicit) = walk::targets(&args.targets.files, &args.targets.recursive)?;
    Ok(output::run_all(&targets, Verbosity::from_quiet(quiet), "verified", |index, path| {
        if let Some(skip) = (index >= explicit).then(|| Skip::classify(path)).flatten() {
            return Outcome::Skipped(skip);
        }
        match verify_file(path, &trusted) {
            Ok(verified) => {
                let entitled = if verified.entitlements.is_empty() {
                    String::new()
                } else {
                    format!(", entitled to {}", verified.entitlements)
                };
                let line = format!("{}: OK (signed by {}{entitled})", path.display(), verified.signer.subject());
                Outcome::Done { line: Some(line), notes: Vec::new() }
            }
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
    /// What its signer entitles it to.
    pub entitlements: elfsig_core::Entitlements,
}

/// Verifies one file against the trusted certificates, after validating its whole layout.
pub fn verify_file<'c>(path: &Path, trusted: &'c [TrustedCert]) -> Result<Verified<'c>, Error> {
    verify_open(&OpenFile::open(path)?, trusted)
}

/// Verifies an open file against the trusted certificates, after validating its whole layout.
pub fn verify_open<'c>(file: &OpenFile, trusted: &'c [TrustedCert]) -> Result<Verified<'c>, Error> {
    let mut reader = file.reader();
    let verified =
        elfsig_core::verify::<Sha2, _, _>(&mut reader, Structure::ValidateAll, &mut Certificates(trusted), &mut Heap)
            .map_err(|refused| Error::from_refusal(refused, &file.path))?;
    Ok(Verified { signer: verified.signer, digest: verified.digest, entitlements: verified.entitlements })
}
