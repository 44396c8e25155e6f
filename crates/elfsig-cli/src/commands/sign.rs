//! `elfsig sign`: sign files in place or into `--output`, re-signing replaces a signature.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use elfsig_core::record::HashAlgorithm;
use elfsig_core::view::SignedView;
use elfsig_core::{Entitlements, Payload, ReadAt, SignedLayout};
use sha2::{Digest, Sha256};

use crate::cli::{SignArgs, TargetArgs};
use crate::crypto::cms::RecordSigner;
use crate::elf_file::{self, OpenFile, Signature};
use crate::error::Error;
use crate::links::Names;
use crate::output::{self, Outcome, Verbosity};
use crate::replace::{Keep, Replacement};
use crate::skip::Skip;
use crate::stream::{self, StreamError};
use crate::walk;

/// What a signature grants.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Entitle {
    /// What the file's current signature grants (nothing, when it has none): re-signing does
    /// not take away what a signer granted.
    Keep,
    /// Exactly these.
    Exactly(Entitlements),
}

impl Entitle {
    /// What `--entitle` asked for: nothing said keeps; `none` alone grants nothing.
    pub fn from_args(words: &[Option<elfsig_core::Entitlement>]) -> Result<Self, Error> {
        if words.is_empty() {
            return Ok(Entitle::Keep);
        }
        if words.contains(&None) && words.len() > 1 {
            return Err(Error::Usage("--entitle none grants nothing: it goes alone".into()));
        }
        Ok(Entitle::Exactly(words.iter().flatten().copied().collect()))
    }
}

/// Runs the command.
pub fn run(args: &SignArgs, quiet: bool) -> Result<ExitCode, Error> {
    let TargetArgs { recursive, files } = &args.targets;
    if args.output.is_some() && (files.len() != 1 || !recursive.is_empty()) {
        return Err(Error::Usage("--output takes exactly one FILE and no --recursive".into()));
    }
    let entitle = Entitle::from_args(&args.entitle)?;
    let signer = RecordSigner::open(&args.signing.key, &args.signing.cert)?;
    let (targets, explicit) = walk::targets(files, recursive)?;
    // Several names of one file are signed once, under the first; the others are linked to the
    // signed file afterwards.
    let names = args.output.is_none().then(|| Names::of(&targets));
    let status = output::run_all(&targets, Verbosity::from_quiet(quiet), "signed", |index, path| {
        if let Some(skip) = (index >= explicit).then(|| Skip::classify(path)).flatten() {
            return Outcome::Skipped(skip);
        }
        if names.as_ref().is_some_and(|n| n.first_of(index).is_some()) {
            return Outcome::Skipped(Skip::OtherName);
        }
        match sign_file(path, args.output.as_deref(), &signer, entitle) {
            // Every name is here and gets the signed file: no name is left behind.
            Ok(_) if names.as_ref().is_some_and(|n| n.covers_every_name(index)) => Outcome::done(),
            Ok(notes) => Outcome::Done { line: None, notes },
            Err(e) => Outcome::Failed(e, None),
        }
    });
    let mut failed = false;
    for (path, result) in names.map(|n| n.relink(&targets)).unwrap_or_default() {
        match result {
            Ok(note) if !quiet => output::note_about(&path, note),
            Ok(_) => {}
            Err(e) => {
                failed = true;
                output::fail_about(&path, &e);
            }
        }
    }
    Ok(if failed { ExitCode::FAILURE } else { status })
}

/// Signs `path` into `output`, or in place. Returns notes for the user.
pub fn sign_file(
    path: &Path,
    output: Option<&Path>,
    signer: &RecordSigner,
    entitle: Entitle,
) -> Result<Vec<String>, Error> {
    // Replace the file a symbolic link points to, not the link.
    let target = path.canonicalize().map_err(|e| Error::io("cannot open", path, e))?;
    let file = OpenFile::open(&target)?;
    let out_path = output.map_or_else(|| target.clone(), Path::to_path_buf);
    let mut replacement = Replacement::new(&out_path)?;
    sign_open(&file, signer, entitle, replacement.writer(), &out_path)?;
    let keep = if output.is_some() { Keep::ModeAndXattrs } else { Keep::Everything };
    replacement.commit(&file.file, &file.meta, keep)?;

    let replaced_in_place = output.is_none();
    Ok(crate::replace::hard_link_note(&file.meta, "signed").filter(|_| replaced_in_place).into_iter().collect())
}

/// Writes the signed file for `file` (signed already or not) into `out`, which messages call
/// `out_path`, its signature granting what `entitle` says.
pub fn sign_open(
    file: &OpenFile,
    signer: &RecordSigner,
    entitle: Entitle,
    out: &mut dyn Write,
    out_path: &Path,
) -> Result<(), Error> {
    let analysis = elf_file::analyze(file)?;
    let original = match &analysis.signature {
        None => analysis.elf,
        Some(signature) => elf_file::recover_original(file, signature)?,
    };
    let entitlements = match entitle {
        Entitle::Exactly(entitlements) => entitlements,
        Entitle::Keep => analysis.signature.as_ref().map_or(Entitlements::NONE, |s| s.record.entitlements),
    };
    let payload_len = Payload::encoded_len(signer.encoded_len()).ok_or_else(|| Error::msg("signature too large"))?;
    let layout = SignedLayout::plan(&original, payload_len as u64)?;
    let signing = Signing { layout, signer, entitlements };
    write_signed(file, analysis.signature.as_ref(), &signing, out, out_path)
}

/// What a new signature is made of.
struct Signing<'a> {
    layout: SignedLayout,
    signer: &'a RecordSigner,
    entitlements: Entitlements,
}

/// Why streaming the signed file failed.
enum WriteError {
    Stream(StreamError),
    Other(Error),
}

impl From<StreamError> for WriteError {
    fn from(e: StreamError) -> Self {
        WriteError::Stream(e)
    }
}

impl From<Error> for WriteError {
    fn from(e: Error) -> Self {
        WriteError::Other(e)
    }
}

impl From<elfsig_core::Error> for WriteError {
    fn from(e: elfsig_core::Error) -> Self {
        WriteError::Other(e.into())
    }
}

/// Writes the signed file for the original read through `file` (directly, or through the
/// original view of its current signature) into `out`.
fn write_signed(
    file: &OpenFile,
    signature: Option<&Signature>,
    signing: &Signing<'_>,
    out: &mut dyn Write,
    out_path: &Path,
) -> Result<(), Error> {
    let mut reader = file.reader();
    let result = match signature {
        None => stream_signed(&mut reader, signing, out),
        Some(signature) => match elf_file::original_view(&mut reader, signature) {
            Ok(mut original) => stream_signed(&mut original, signing, out),
            Err(e) => Err(e.into()),
        },
    };
    match result {
        Ok(()) => Ok(()),
        Err(WriteError::Stream(e)) => Err(file.stream_error(e, out_path)),
        Err(WriteError::Other(e)) => Err(e),
    }
}

/// Streams the signed file into `out`: everything before the payload (hashing it on the way),
/// then the payload, then the section header table. One pass over the original's bytes; the
/// table after the payload is small and is read twice, once to hash it and once to write it.
fn stream_signed(original: &mut dyn ReadAt, signing: &Signing<'_>, out: &mut dyn Write) -> Result<(), WriteError> {
    let layout = signing.layout;
    let mut signed = SignedView::new(original, layout, &[])?;
    let [before, after] = layout.payload.around(layout.file_len);
    let mut hasher = Sha256::new();
    let mut buf = Vec::new();
    stream::copy_range(&mut signed, before, out, Some(&mut hasher), &mut buf)?;
    stream::hash_ranges(&mut signed, &[after], &mut hasher, &mut buf)?;
    let record = layout.record(HashAlgorithm::Sha256, hasher.finalize().into(), signing.entitlements).encode();
    let cms = signing.signer.sign(&record)?;
    out.write_all(&record).map_err(StreamError::Write)?;
    out.write_all(&cms).map_err(StreamError::Write)?;
    stream::copy_range(&mut signed, after, out, None, &mut buf)?;
    Ok(())
}
