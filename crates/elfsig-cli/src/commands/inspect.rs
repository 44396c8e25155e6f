//! `elfsig inspect`: what a file's signature says, as text or as JSON (one object per line,
//! schema in docs/FORMAT.md). Nothing is verified: that needs a certificate and is `verify`'s
//! job.

use std::path::Path;
use std::process::ExitCode;

use elfsig_core::{Anchor, Class, Endian, Entitlement, Reason};
use serde::Serialize;

use crate::cli::InspectArgs;
use crate::crypto::cms::{self, SignerId};
use crate::crypto::trust;
use crate::elf_file::{self, OpenFile};
use crate::error::Error;
use crate::hex;
use crate::output::{self, Outcome, Verbosity};

/// The JSON schema's version; bumped on any incompatible change.
pub const SCHEMA_VERSION: u32 = 2;

/// Everything `inspect` reports about one file.
#[derive(Debug, Default, Serialize)]
struct Report {
    schema: u32,
    file: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    elf: Option<ElfInfo>,
    #[serde(skip_serializing_if = "Option::is_none")]
    signed: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    signature: Option<SignatureInfo>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<ErrorInfo>,
}

#[derive(Debug, Serialize)]
struct ElfInfo {
    class: &'static str,
    endian: &'static str,
    #[serde(rename = "type")]
    e_type: u16,
    machine: u16,
}

#[derive(Debug, Serialize)]
struct SignatureInfo {
    format_version: u16,
    hash_algorithm: &'static str,
    digest: String,
    signed_length: u64,
    original_length: u64,
    signature_algorithm: &'static str,
    #[serde(skip)]
    scheme: String,
    key: String,
    key_bits: usize,
    /// What the signer entitles the program to, by name (empty for none).
    entitlements: Vec<&'static str>,
    signer: SignerInfo,
    payload: PayloadInfo,
}

#[derive(Debug, Serialize)]
struct SignerInfo {
    #[serde(skip_serializing_if = "Option::is_none")]
    issuer: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    serial: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    key_id: Option<String>,
}

#[derive(Debug, Serialize)]
struct PayloadInfo {
    offset: u64,
    size: u64,
    /// What points at the payload: "section" (the `.elfsig` section) or "trailer".
    anchor: &'static str,
}

#[derive(Debug, Serialize)]
struct ErrorInfo {
    kind: &'static str,
    message: String,
}

/// Runs the command. Unsigned files are reported, not failed; unreadable or malformed files
/// fail.
pub fn run(args: &InspectArgs, quiet: bool) -> Result<ExitCode, Error> {
    Ok(output::run_all(
        &args.files,
        if quiet { Verbosity::ResultsOnly } else { Verbosity::Normal },
        "inspected",
        |_, path| {
            let mut report = Report { schema: SCHEMA_VERSION, file: path.display().to_string(), ..Report::default() };
            let result = fill(&mut report, path);
            if let Err(e) = &result {
                report.error = Some(ErrorInfo { kind: e.kind(), message: e.to_string() });
            }
            let line =
                if args.json { serde_json::to_string(&report).ok() } else { result.is_ok().then(|| text(&report)) };
            match result {
                Ok(()) => Outcome::Done { line, notes: Vec::new() },
                Err(e) => Outcome::Failed(e, line),
            }
        },
    ))
}

fn fill(report: &mut Report, path: &Path) -> Result<(), Error> {
    let file = OpenFile::open(path)?;
    let analysis = elf_file::analyze(&file)?;
    let header = analysis.elf.header;
    report.elf = Some(ElfInfo {
        class: match header.class {
            Class::Elf32 => "ELF32",
            Class::Elf64 => "ELF64",
        },
        endian: match header.endian {
            Endian::Little => "little",
            Endian::Big => "big",
        },
        e_type: header.e_type,
        machine: header.e_machine,
    });
    report.signed = Some(analysis.signature.is_some());
    let Some(signature) = analysis.signature else {
        return Ok(());
    };
    let parts = signature.parts()?;
    let parsed = cms::parse(parts.cms)
        .map_err(|detail| Error::refused_with(Reason::MalformedSignature, trust::bad_cms(&detail)))?;
    let record = signature.record;
    let signer = match &parsed.signer {
        SignerId::IssuerAndSerial { issuer, serial } => {
            SignerInfo { issuer: Some(issuer.to_string()), serial: Some(hex::encode(serial.as_bytes())), key_id: None }
        }
        SignerId::KeyId(id) => SignerInfo { issuer: None, serial: None, key_id: Some(hex::encode(id)) },
    };
    report.signature = Some(SignatureInfo {
        format_version: record.version(),
        hash_algorithm: record.hash.name(),
        digest: hex::encode(&record.digest),
        signed_length: record.signed_len,
        original_length: record.original.len,
        signature_algorithm: parsed.algorithm.name(),
        scheme: parsed.scheme(),
        key: parsed.key_name(),
        key_bits: parsed.key_bits(),
        entitlements: record.entitlements.iter().map(Entitlement::name).collect(),
        signer,
        payload: PayloadInfo {
            offset: signature.location.payload.offset,
            size: signature.location.payload.len,
            anchor: match signature.location.anchor {
                Anchor::Section { .. } => "section",
                Anchor::Trailer { .. } => "trailer",
            },
        },
    });
    Ok(())
}

fn text(report: &Report) -> String {
    let Some(s) = &report.signature else {
        return format!("{}: not signed", report.file);
    };
    let signer = match (&s.signer.issuer, &s.signer.serial, &s.signer.key_id) {
        (Some(issuer), Some(serial), _) => format!("{issuer} (serial {serial})"),
        (_, _, Some(key_id)) => format!("key id {key_id}"),
        _ => "unknown".into(),
    };
    format!(
        "{file}: signed\n  \
         signer:         {signer}\n  \
         signature:      {key} {scheme}, PKCS#7 detached, format v{version}\n  \
         entitlements:   {entitlements}\n  \
         digest:         {hash}:{digest}\n  \
         signed length:  {signed} bytes (original {original} bytes)\n  \
         payload:        {size} bytes at offset {offset:#x} ({anchor})",
        file = report.file,
        key = s.key,
        scheme = s.scheme,
        version = s.format_version,
        entitlements = if s.entitlements.is_empty() { "none".to_owned() } else { s.entitlements.join(", ") },
        hash = s.hash_algorithm,
        digest = s.digest,
        signed = s.signed_length,
        original = s.original_length,
        offset = s.payload.offset,
        size = s.payload.size,
        anchor = if s.payload.anchor == "section" { "section .elfsig" } else { "trailer" },
    )
}
