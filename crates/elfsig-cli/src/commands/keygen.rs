//! `elfsig keygen`: a new key (RSA or ECDSA), in a file or on a PKCS#11 token, and its
//! self-signed code-signing certificate.

use std::fs::Permissions;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Arc;

use tempfile::NamedTempFile;

use crate::cli::KeygenArgs;
use crate::crypto::cert;
use crate::crypto::key::{self, PrivateKey};
use crate::crypto::pkcs11::TokenKey;
use crate::crypto::public_key::Algorithm;
use crate::error::Error;

/// RSA keys' size when `--bits` does not say.
const DEFAULT_RSA_BITS: usize = 3072;

/// Runs the command.
pub fn run(args: &KeygenArgs, quiet: bool) -> Result<(), Error> {
    let token = key::token_uri(&args.key)?;
    if token.is_none() && crate::replace::same_file(&args.key, &args.cert) {
        return Err(Error::Usage("--key and --cert must name different files".into()));
    }
    let subject = cert::parse_subject(&args.subject)?;
    if !args.force {
        let files = if token.is_some() { vec![&args.cert] } else { vec![&args.key, &args.cert] };
        for path in files {
            if path.symlink_metadata().is_ok() {
                return Err(Error::msg(format!("{} already exists; use --force to overwrite it", path.display())));
            }
        }
    }
    let bits = match (args.algorithm, args.bits) {
        (Algorithm::Rsa, bits) => bits.unwrap_or(DEFAULT_RSA_BITS),
        (_, Some(_)) => {
            return Err(Error::Usage("--bits is for RSA keys; an ECDSA key's size is its curve's".into()));
        }
        (_, None) => 0,
    };
    if let Some(uri) = token {
        // The pair is made on the token first; if its certificate cannot be written, the pair
        // goes again, so that a second try is not refused for a label already taken.
        let key = Arc::new(TokenKey::generate(&uri, args.algorithm, bits)?);
        let certify = || {
            let certificate = cert::self_signed(&PrivateKey::Token(key.clone()), subject.clone())?;
            place(staged(&args.cert, &certificate_bytes(&certificate, args.der)?, 0o644)?, &args.cert, args.force)?;
            Ok::<_, Error>(certificate)
        };
        let certificate = certify().map_err(|e| key.undo(e))?;
        if !quiet {
            eprintln!(
                "elfsig: made {} ({} private key; it stays on the token) and wrote {} ({})",
                key.describe(),
                key.public_key().name(),
                args.cert.display(),
                certificate.tbs_certificate.subject
            );
        }
        return Ok(());
    }
    let private_key = PrivateKey::generate(args.algorithm, bits)?;
    let certificate = cert::self_signed(&private_key, subject)?;
    let cert_bytes = certificate_bytes(&certificate, args.der)?;
    let key_pem = private_key.to_pem()?;

    // Both files are written in full before either appears, so that a failure leaves what was
    // there before: never a new key without its certificate, never a lost key.
    let key_file = staged(&args.key, key_pem.as_bytes(), 0o600)?;
    let cert_file = staged(&args.cert, &cert_bytes, 0o644)?;
    place(cert_file, &args.cert, args.force)?;
    if let Err(e) = place(key_file, &args.key, args.force) {
        if !args.force {
            let _ = std::fs::remove_file(&args.cert);
        }
        return Err(e);
    }
    if !quiet {
        eprintln!(
            "elfsig: wrote {} ({} private key; keep it secret) and {} ({})",
            args.key.display(),
            private_key.public_key().name(),
            args.cert.display(),
            certificate.tbs_certificate.subject
        );
    }
    Ok(())
}

/// The certificate as DER, or PEM.
fn certificate_bytes(certificate: &x509_cert::Certificate, der: bool) -> Result<Vec<u8>, Error> {
    Ok(if der { cert::to_der(certificate)? } else { cert::to_pem(certificate)?.into_bytes() })
}

/// `bytes` in a temporary file beside `path`, with `mode`, synced. tempfile creates files with
/// mode 0600, so a secret is private from the first byte.
fn staged(path: &Path, bytes: &[u8], mode: u32) -> Result<NamedTempFile, Error> {
    let fail = |e| Error::io("cannot write", path, e);
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let mut temp = tempfile::Builder::new().prefix(".elfsig-keygen.").tempfile_in(dir).map_err(fail)?;
    temp.write_all(bytes).map_err(fail)?;
    temp.as_file().set_permissions(Permissions::from_mode(mode)).map_err(fail)?;
    temp.as_file().sync_all().map_err(fail)?;
    Ok(temp)
}

/// Moves a staged file to `path`: replacing what is there with `force`, else only if nothing is.
fn place(temp: NamedTempFile, path: &Path, force: bool) -> Result<(), Error> {
    let placed = if force { temp.persist(path) } else { temp.persist_noclobber(path) };
    placed.map(|_| ()).map_err(|e| Error::io("cannot write", path, e.error))
}
