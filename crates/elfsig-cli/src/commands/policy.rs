//! `elfsig policy`: the signed policy (`elfsig_core::policy`) that revokes signed files and
//! certificates and trusts certificates beyond the module's own, with a serial number that only
//! grows. `create` writes one (signed at once, or unsigned for `sign` to sign where the policy
//! key is), `sign` signs or re-signs one, `inspect` shows what one says and, given the policy
//! certificates, checks its signature; `load` hands one to the module, `show` says which it
//! has, `clear` unloads it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use elfsig_core::policy::{self, Counts, DIGEST_LEN, Policy, SignedPolicy};
use serde::Serialize;
use x509_cert::Certificate;
use x509_cert::der::Decode;

use elfsig_control::{Control, LoadedPolicy};

use crate::cli::{
    PolicyArgs, PolicyCommand, PolicyCreateArgs, PolicyInspectArgs, PolicyLoadArgs, PolicyShowArgs, PolicySignArgs,
};
use crate::crypto::cert::{self, TrustedCert};
use crate::crypto::cms::{self, RecordSigner, SignerId};
use crate::elf_file::{self, OpenFile};
use crate::error::Error;
use crate::hex;

/// The JSON schema's version; bumped on any incompatible change.
pub const SCHEMA_VERSION: u32 = 1;

/// Runs `elfsig policy`.
pub fn run(args: &PolicyArgs, quiet: bool) -> Result<ExitCode, Error> {
    match &args.command {
        PolicyCommand::Create(args) => create(args, quiet),
        PolicyCommand::Sign(args) => sign(args, quiet),
        PolicyCommand::Inspect(args) => inspect(args),
        PolicyCommand::Load(args) => load(args, quiet),
        PolicyCommand::Show(args) => show(args),
        PolicyCommand::Clear => clear(quiet),
    }
    .map(|()| ExitCode::SUCCESS)
}

/// A policy file as read: signed, or a body alone.
struct Read {
    bytes: Vec<u8>,
    signed: bool,
}

impl Read {
    fn from(path: &Path) -> Result<Read, Error> {
        let bytes = std::fs::read(path).map_err(|e| Error::io("cannot read the policy", path, e))?;
        let bad = |e: policy::PolicyError| Error::msg(format!("{}: {}", path.display(), e.message()));
        let signed = match SignedPolicy::parse(&bytes) {
            Ok(_) => true,
            // Not signed: a body alone, as `create` writes without a key.
            Err(signed_error) => {
                Policy::parse(&bytes)
                    .map_err(|e| bad(if bytes.ends_with(&policy::SIGNATURE_MAGIC) { signed_error } else { e }))?;
                false
            }
        };
        Ok(Read { bytes, signed })
    }

    fn parts(&self) -> Result<Parts<'_>, Error> {
        let bad = |e: policy::PolicyError| Error::msg(e.message());
        if self.signed {
            let signed = SignedPolicy::parse(&self.bytes).map_err(bad)?;
            Ok(Parts { body: signed.body, signature: Some(signed.signature), policy: signed.policy })
        } else {
            Ok(Parts { body: &self.bytes, signature: None, policy: Policy::parse(&self.bytes).map_err(bad)? })
        }
    }
}

/// A policy's body, its signature if it has one, and what the body says.
struct Parts<'a> {
    body: &'a [u8],
    signature: Option<&'a [u8]>,
    policy: Policy<'a>,
}

fn create(args: &PolicyCreateArgs, quiet: bool) -> Result<(), Error> {
    let from = args.from.as_deref().map(Read::from).transpose()?;
    let base = match &from {
        Some(read) => Some(read.parts()?.policy),
        None => None,
    };
    let serial = match (args.serial, base.map(|p| p.serial)) {
        (Some(serial), Some(old)) if serial <= old => {
            return Err(Error::Usage(format!(
                "--serial {serial} is not above the serial of --from ({old}): the module refuses a policy that is not newer"
            )))
        }
        (Some(serial), _) => serial,
        (None, Some(old)) => old
            .checked_add(1)
            .ok_or_else(|| Error::Usage("the policy of --from has the highest serial there is".into()))?,
        (None, None) => {
            return Err(Error::Usage(
                "--serial is needed (or --from, whose serial plus one it then takes): the module only loads a policy whose serial is above the one loaded".into(),
            ))
        }
    };
    let mut digests: BTreeSet<[u8; DIGEST_LEN]> = base.iter().flat_map(|p| p.digests()).collect();
    for revoked in &args.revoke {
        digests.insert(digest_of(revoked)?);
    }
    let revoked = certificates(base.map(|p| p.revoked_certs().map(<[u8]>::to_vec).collect()), &args.revoke_cert)?;
    let trusted = certificates(base.map(|p| p.trusted_certs().map(<[u8]>::to_vec).collect()), &args.trust)?;
    if let Some(both) = revoked.iter().find(|c| trusted.contains(c)) {
        return Err(Error::Usage(format!("{} is both revoked and trusted", describe(both))));
    }
    let digests: Vec<[u8; DIGEST_LEN]> = digests.into_iter().collect();
    let revoked_refs: Vec<&[u8]> = revoked.iter().map(Vec::as_slice).collect();
    let trusted_refs: Vec<&[u8]> = trusted.iter().map(Vec::as_slice).collect();
    let count = |n: usize| u32::try_from(n).map_err(|_| Error::Usage("too many entries".into()));
    let counts = Counts {
        digests: count(digests.len())?,
        revoked_certs: count(revoked.len())?,
        trusted_certs: count(trusted.len())?,
    };
    let cert_bytes = revoked.iter().chain(&trusted).map(Vec::len).sum();
    let len =
        policy::body_len(counts, cert_bytes).ok_or_else(|| Error::Usage("the policy would be too large".into()))?;
    let mut body = vec![0u8; len];
    policy::write_body(&mut body, serial, &digests, &revoked_refs, &trusted_refs).ok_or_else(|| {
        Error::Usage(format!(
            "the policy cannot hold this: at most {} certificates of each kind, each one DER certificate of at most {} bytes",
            policy::MAX_CERTS,
            policy::MAX_CERT_LEN
        ))
    })?;
    let bytes = match (&args.key, &args.cert) {
        (Some(key), Some(cert)) => signed(&body, key, cert)?,
        (None, None) => body,
        _ => return Err(Error::Usage("--key and --cert go together".into())),
    };
    write(&args.output, &bytes)?;
    if !quiet {
        let how = if args.key.is_some() { "signed" } else { "unsigned: sign it with `elfsig policy sign`" };
        eprintln!(
            "elfsig: wrote {}: serial {serial}, {} revoked digests, {} revoked and {} trusted certificates ({how})",
            args.output.display(),
            counts.digests,
            counts.revoked_certs,
            counts.trusted_certs
        );
    }
    Ok(())
}

fn sign(args: &PolicySignArgs, quiet: bool) -> Result<(), Error> {
    let read = Read::from(&args.policy)?;
    let Parts { body, policy, .. } = read.parts()?;
    let bytes = signed(body, &args.signing.key, &args.signing.cert)?;
    let output = args.output.as_deref().unwrap_or(&args.policy);
    write(output, &bytes)?;
    if !quiet {
        eprintln!("elfsig: signed {} (serial {})", output.display(), policy.serial);
    }
    Ok(())
}

/// `body`, its detached signature by `key` for `cert`, and the trailer.
fn signed(body: &[u8], key_path: &Path, cert_path: &Path) -> Result<Vec<u8>, Error> {
    let signer = RecordSigner::open(key_path, cert_path)?;
    let signature = signer.sign(body)?;
    let trailer =
        policy::write_trailer(signature.len()).ok_or_else(|| Error::msg("the signature is too long for a policy"))?;
    let mut bytes = Vec::with_capacity(body.len() + signature.len() + trailer.len());
    bytes.extend_from_slice(body);
    bytes.extend_from_slice(&signature);
    bytes.extend_from_slice(&trailer);
    // What the module will parse, parsed here first.
    SignedPolicy::parse(&bytes)
        .map_err(|e| Error::msg(format!("the signed policy does not parse: {}", e.message())))?;
    Ok(bytes)
}

/// Writes `bytes` to `path` through a temporary file in the same directory, renamed over it: a
/// policy is never seen half written.
fn write(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    let name = path.file_name().ok_or_else(|| Error::Usage(format!("{}: not a file name", path.display())))?;
    let mut temporary = path.to_owned();
    temporary.set_file_name(format!(".{}.elfsig-tmp", name.to_string_lossy()));
    std::fs::write(&temporary, bytes).map_err(|e| Error::io("cannot write", &temporary, e))?;
    std::fs::rename(&temporary, path).map_err(|e| {
        let _ = std::fs::remove_file(&temporary);
        Error::io("cannot write", path, e)
    })
}

/// The digest `--revoke` names: `sha256:HEX`, or a signed file's (the digest its signature
/// covers, which `elfsig inspect` shows).
fn digest_of(revoked: &str) -> Result<[u8; DIGEST_LEN], Error> {
    if let Some(text) = revoked.strip_prefix("sha256:") {
        return hex::decode(text)
            .and_then(|bytes| <[u8; DIGEST_LEN]>::try_from(bytes).ok())
            .ok_or_else(|| Error::Usage(format!("--revoke {revoked}: expected sha256: and 64 hex digits")));
    }
    let path = Path::new(revoked);
    let file = OpenFile::open(path)?;
    let analysis = elf_file::analyze(&file)?;
    let signature = analysis.signature.ok_or_else(|| {
        Error::Usage(format!(
            "--revoke {revoked}: the file is not signed, so the module refuses it already; revoke the signed file, or give its digest as sha256:HEX"
        ))
    })?;
    Ok(signature.record.digest)
}

/// The DER certificates of `base` (a policy's list) and of `files`, each once, in order.
fn certificates(base: Option<Vec<Vec<u8>>>, files: &[PathBuf]) -> Result<Vec<Vec<u8>>, Error> {
    let mut all = base.unwrap_or_default();
    for path in files {
        for trusted in cert::load(path)? {
            let der = cert::to_der(&trusted.cert)?;
            if !all.contains(&der) {
                all.push(der);
            }
        }
    }
    Ok(all)
}

/// A certificate as people read it: its subject and serial number.
fn describe(der: &[u8]) -> String {
    match Certificate::from_der(der) {
        Ok(cert) => format!(
            "{} (serial {})",
            cert.tbs_certificate.subject,
            hex::encode(cert.tbs_certificate.serial_number.as_bytes())
        ),
        Err(e) => format!("a certificate that does not parse ({e})"),
    }
}

#[derive(Debug, Serialize)]
struct Report {
    schema: u32,
    file: String,
    serial: u64,
    signed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    signer: Option<String>,
    /// With `--cert`: whether the signature verified.
    #[serde(skip_serializing_if = "Option::is_none")]
    verified: Option<bool>,
    /// The certificate that verified it.
    #[serde(skip_serializing_if = "Option::is_none")]
    verified_by: Option<String>,
    /// Why it did not verify.
    #[serde(skip_serializing_if = "Option::is_none")]
    not_verified: Option<String>,
    revoked_digests: Vec<String>,
    revoked_certs: Vec<CertReport>,
    trusted_certs: Vec<CertReport>,
}

#[derive(Debug, Serialize)]
struct CertReport {
    certificate: String,
    sha256: String,
}

fn cert_report(der: &[u8]) -> CertReport {
    use sha2::Digest as _;
    CertReport { certificate: describe(der), sha256: hex::encode(&sha2::Sha256::digest(der)) }
}

fn inspect(args: &PolicyInspectArgs) -> Result<(), Error> {
    let read = Read::from(&args.policy)?;
    let Parts { body, signature, policy } = read.parts()?;
    let parsed =
        signature.map(cms::parse).transpose().map_err(|e| Error::msg(format!("the policy's signature: {e}")))?;
    let signer = parsed.as_ref().map(|p| match &p.signer {
        SignerId::IssuerAndSerial { issuer, serial } => {
            format!("{}, issuer {issuer}, serial {}", p.key_name(), hex::encode(serial.as_bytes()))
        }
        SignerId::KeyId(id) => format!("{}, key id {}", p.key_name(), hex::encode(id)),
    });
    let verified = if args.cert.is_empty() {
        None
    } else {
        let trusted: Vec<TrustedCert> = args
            .cert
            .iter()
            .map(|path| cert::load(path))
            .collect::<Result<Vec<_>, _>>()?
            .into_iter()
            .flatten()
            .collect();
        Some(match &parsed {
            None => Err("unsigned".to_owned()),
            Some(parsed) => match parsed.verify(body, &trusted) {
                Ok(cert) => Ok(cert.subject()),
                Err(cms::Untrusted::UnknownKey) => Err("signed by none of the certificates given".to_owned()),
                Err(cms::Untrusted::BadSignature) => Err("the signature does not verify".to_owned()),
            },
        })
    };
    let report = Report {
        schema: SCHEMA_VERSION,
        file: args.policy.display().to_string(),
        serial: policy.serial,
        signed: read.signed,
        signer,
        verified: verified.as_ref().map(Result::is_ok),
        verified_by: verified.clone().and_then(Result::ok),
        not_verified: verified.clone().and_then(Result::err),
        revoked_digests: policy.digests().map(|d| format!("sha256:{}", hex::encode(&d))).collect(),
        revoked_certs: policy.revoked_certs().map(cert_report).collect(),
        trusted_certs: policy.trusted_certs().map(cert_report).collect(),
    };
    if args.json {
        println!("{}", serde_json::to_string(&report).map_err(|e| Error::msg(e.to_string()))?);
    } else {
        print!("{}", text(&report));
    }
    match verified {
        Some(Err(why)) => Err(Error::msg(format!("{}: {why}", args.policy.display()))),
        _ => Ok(()),
    }
}

fn text(report: &Report) -> String {
    let mut out = format!("{}: elfsig policy, serial {}\n", report.file, report.serial);
    out.push_str(&match (&report.signer, &report.verified_by, &report.not_verified) {
        (None, _, _) => "  unsigned\n".to_owned(),
        (Some(signer), Some(by), _) => format!("  signed: {signer}, verified by {by}\n"),
        (Some(signer), None, Some(why)) => format!("  signed: {signer}: {why}\n"),
        (Some(signer), None, None) => format!("  signed: {signer} (not checked: give --cert)\n"),
    });
    out.push_str(&format!("  revoked digests: {}\n", report.revoked_digests.len()));
    for digest in &report.revoked_digests {
        out.push_str(&format!("    {digest}\n"));
    }
    for (what, certs) in [("revoked", &report.revoked_certs), ("trusted", &report.trusted_certs)] {
        out.push_str(&format!("  {what} certificates: {}\n", certs.len()));
        for cert in certs {
            out.push_str(&format!("    {} sha256:{}\n", cert.certificate, cert.sha256));
        }
    }
    out
}

fn load(args: &PolicyLoadArgs, quiet: bool) -> Result<(), Error> {
    let read = Read::from(&args.policy)?;
    if !read.signed {
        return Err(Error::Usage(format!(
            "{} is not signed: sign it with `elfsig policy sign`; the module takes signed policies only",
            args.policy.display()
        )));
    }
    let serial = read.parts()?.policy.serial;
    let control = Control::system();
    control.load_policy(&read.bytes).map_err(|e| Error::msg(format!("{}: {e}", args.policy.display())))?;
    if !quiet {
        eprintln!("elfsig: loaded {} (serial {serial})", args.policy.display());
    }
    Ok(())
}

fn clear(quiet: bool) -> Result<(), Error> {
    Control::system().clear_policy().map_err(|e| Error::msg(e.to_string()))?;
    if !quiet {
        eprintln!("elfsig: the module has no policy now");
    }
    Ok(())
}

#[derive(Debug, Serialize)]
struct Loaded {
    schema: u32,
    loaded: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    serial: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    sha256: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    revoked_digests: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    revoked_certs: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    trusted_certs: Option<u64>,
}

fn show(args: &PolicyShowArgs) -> Result<(), Error> {
    let loaded = Control::system().policy().map_err(|e| Error::msg(e.to_string()))?;
    if args.json {
        let report = Loaded {
            schema: SCHEMA_VERSION,
            loaded: loaded.is_some(),
            serial: loaded.as_ref().map(|p| p.serial),
            sha256: loaded.as_ref().map(|p| p.sha256.clone()),
            revoked_digests: loaded.as_ref().map(|p| p.revoked_digests),
            revoked_certs: loaded.as_ref().map(|p| p.revoked_certs),
            trusted_certs: loaded.as_ref().map(|p| p.trusted_certs),
        };
        println!("{}", serde_json::to_string(&report).map_err(|e| Error::msg(e.to_string()))?);
        return Ok(());
    }
    match loaded {
        None => println!("no policy loaded"),
        Some(p) => println!("{}", describe_loaded(&p)),
    }
    Ok(())
}

/// The loaded policy in one line, as `show` and `status` say it.
pub fn describe_loaded(p: &LoadedPolicy) -> String {
    format!(
        "serial {}, {} digests and {} certificates revoked, {} certificates trusted (sha256:{})",
        p.serial, p.revoked_digests, p.revoked_certs, p.trusted_certs, p.sha256
    )
}
