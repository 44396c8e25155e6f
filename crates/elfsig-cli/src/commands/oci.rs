//! `elfsig oci sign` and `elfsig oci verify`: an image's layers, one per core at a time.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Mutex;

use crate::cli::{OciArgs, OciCommand, OciSignArgs, OciVerifyArgs};
use crate::crypto::cert;
use crate::crypto::cms::RecordSigner;
use crate::error::Error;
use crate::oci::archive;
use crate::oci::image::{self, NewLayers};
use crate::oci::layer::{self, Layer};
use crate::oci::layout::Layout;
use crate::oci::platform::{self, Platforms};
use crate::output::{self, Outcome, Verbosity};
use crate::replace::same_file;
use crate::tar_stream::resign::Grants;

/// Runs the command.
pub fn run(args: &OciArgs, quiet: bool) -> Result<ExitCode, Error> {
    match &args.command {
        OciCommand::Sign(args) => sign(args, quiet),
        OciCommand::Verify(args) => verify(args, quiet),
    }
}

/// A layer to sign or check, once however many images share it.
struct Job<'a> {
    layer: &'a image::ImageLayer,
    architecture: &'a str,
    native: crate::architecture::Machines,
    /// `IMAGE layer sha256:0123456789ab`.
    name: PathBuf,
}

/// The layers of `images`, each once per architecture.
fn jobs<'a>(image: &Path, images: &[&'a image::Image]) -> Result<Vec<Job<'a>>, Error> {
    if images.is_empty() {
        return Err(Error::msg(format!(
            "{}: no image for the architectures asked for (--architecture; this machine's is {})",
            image.display(),
            platform::host()
        )));
    }
    let mut seen = BTreeSet::new();
    let mut jobs = Vec::new();
    for each in images {
        let native = platform::machines(&each.architecture).ok_or_else(|| {
            Error::msg(format!(
                "{}: an image for {}, an architecture elfsig does not know",
                image.display(),
                each.architecture
            ))
        })?;
        for layer in &each.layers {
            let digest = layer.descriptor.digest().to_string();
            // Each image's diff_id is checked, should two images give one layer different ones.
            if seen.insert((digest.clone(), each.architecture.as_str(), layer.diff_id.as_str())) {
                let short = digest.get(..digest.find(':').map_or(0, |i| i + 13)).unwrap_or(&digest);
                jobs.push(Job {
                    layer,
                    architecture: &each.architecture,
                    native: native.clone(),
                    name: PathBuf::from(format!("{} layer {short}", image.display())),
                });
            }
        }
    }
    Ok(jobs)
}

impl Job<'_> {
    fn layer(&self) -> Layer<'_> {
        Layer {
            descriptor: &self.layer.descriptor,
            compression: self.layer.compression,
            diff_id: &self.layer.diff_id,
            native: &self.native,
            name: &self.name,
        }
    }
}

/// The layout an IMAGE argument names: the directory itself, or an archive's unpacked into a
/// scratch directory in `scratch_in` (kept as long as the returned guard).
fn open(image: &Path, scratch_in: &Path, quiet: bool) -> Result<(Layout, Option<tempfile::TempDir>), Error> {
    let meta = std::fs::metadata(image).map_err(|e| Error::io("cannot open", image, e))?;
    if meta.is_dir() {
        return Ok((Layout::open(image)?, None));
    }
    let scratch = tempfile::Builder::new()
        .prefix(".elfsig-oci-")
        .tempdir_in(scratch_in)
        .map_err(|e| Error::io("cannot create a scratch directory in", scratch_in, e))?;
    for name in archive::extract(image, scratch.path())? {
        if !quiet {
            output::note_about(image, format_args!("{name}: not part of the image layout; left out"));
        }
    }
    Ok((Layout::open(scratch.path())?, Some(scratch)))
}

fn sign(args: &OciSignArgs, quiet: bool) -> Result<ExitCode, Error> {
    let grants = Grants::new(&args.entitle)?;
    let platforms = Platforms::new(&args.architectures)?;
    let signer = RecordSigner::open(&args.signing.key, &args.signing.cert)?;
    let output = args.output.clone().unwrap_or_else(|| args.image.clone());
    let output_dir = output.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let (from, scratch) = open(&args.image, output_dir, quiet)?;
    let is_archive = scratch.is_some();
    let in_place = is_archive || same_file(&args.image, &output);
    let created;
    let to = if in_place {
        &from
    } else {
        created = Layout::create(&output)?;
        &created
    };
    let signed = sign_layout(&args.image, &from, to, &platforms, &signer, &grants, quiet).and_then(|signed| {
        if let Some(signed) = signed.as_ref().filter(|s| is_archive && (s.changed || !same_file(&args.image, &output)))
        {
            archive::write(&from, &signed.blobs, &args.image, &output)?;
        }
        Ok(signed)
    });
    let signed = match signed {
        Ok(Some(signed)) => signed,
        failed => {
            // Nothing written stays: the blobs written, and the new layout (empty before).
            to.discard_written();
            if !in_place {
                let _ = std::fs::remove_dir_all(&output);
            }
            return failed.map(|_| ExitCode::FAILURE);
        }
    };
    let missed: Vec<String> = grants.missing(&signed.granted).collect();
    for file in &missed {
        eprintln!("elfsig: --entitle {file}: no layer holds it as an ELF file to sign (the rest are signed)");
    }
    if !quiet {
        let what = match (signed.changed, signed.files) {
            (true, _) => "signed",
            (false, 0) => "no ELF file to sign; unchanged",
            (false, _) => "signed so already; unchanged",
        };
        println!("{}: {what}", output.display());
    }
    Ok(if missed.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// What signing a layout did.
struct Signed {
    /// Every blob the new image refers to.
    blobs: BTreeSet<String>,
    /// Whether the image changed.
    changed: bool,
    /// How many ELF files were signed (changed or not).
    files: usize,
    /// The files `--entitle` granted, by path in the image.
    granted: BTreeSet<Vec<u8>>,
}

/// Signs the images of `from` for `platforms` into `to` (the same layout, or a new one that
/// gets every blob the image needs); `None` when a layer failed (said already).
fn sign_layout(
    image: &Path,
    from: &Layout,
    to: &Layout,
    platforms: &Platforms,
    signer: &RecordSigner,
    grants: &Grants,
    quiet: bool,
) -> Result<Option<Signed>, Error> {
    let (index, nodes) = image::read(from, platforms)?;
    let images = image::images(&nodes);
    let jobs = jobs(image, &images)?;
    let names: Vec<PathBuf> = jobs.iter().map(|job| job.name.clone()).collect();
    let new_layers = Mutex::new(NewLayers::new());
    let granted = Mutex::new(BTreeSet::new());
    let failed = std::sync::atomic::AtomicBool::new(false);
    let files = std::sync::atomic::AtomicUsize::new(0);
    let status = output::run_all(&names, Verbosity::from_quiet(quiet), "signed", |index, _| {
        let job = &jobs[index];
        match layer::resign(&job.layer(), from, to, signer, grants) {
            Ok((resigned, new)) => {
                files.fetch_add(resigned.signed, std::sync::atomic::Ordering::Relaxed);
                let mut notes = Vec::new();
                for (file, entitlements) in &resigned.entitled {
                    granted.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(file.clone());
                    let what = if entitlements.is_empty() { "nothing".to_owned() } else { entitlements.to_string() };
                    notes.push(format!("/{}: entitled to {what}", String::from_utf8_lossy(file)));
                }
                let line = match &new {
                    Some(new) => format!(
                        "{}: {} ELF {} signed{} -> {}",
                        job.name.display(),
                        resigned.signed,
                        if resigned.signed == 1 { "file" } else { "files" },
                        output::left_alone(&resigned.skipped),
                        new.digest
                    ),
                    None if resigned.signed > 0 => format!(
                        "{}: {} ELF {} signed so already{}; unchanged",
                        job.name.display(),
                        resigned.signed,
                        if resigned.signed == 1 { "file" } else { "files" },
                        output::left_alone(&resigned.skipped)
                    ),
                    None => format!(
                        "{}: no ELF file to sign{}; unchanged",
                        job.name.display(),
                        output::left_alone(&resigned.skipped)
                    ),
                };
                if let Some(new) = new {
                    let key = (job.layer.descriptor.digest().to_string(), job.architecture.to_owned());
                    new_layers.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(key, new);
                }
                Outcome::Done { line: Some(line), notes }
            }
            Err(e) => {
                failed.store(true, std::sync::atomic::Ordering::Relaxed);
                Outcome::Failed(e, None)
            }
        }
    });
    if failed.into_inner() || status != ExitCode::SUCCESS {
        return Ok(None);
    }
    let new_layers = new_layers.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut blobs = BTreeSet::new();
    let (new_index, changed) = image::rebuild(&index, &nodes, &new_layers, from, to, &mut blobs)?;
    let separate = !std::ptr::eq(from, to);
    if separate {
        for blob in &blobs {
            if let Ok(digest) = blob.parse() {
                if from.has(&digest) {
                    to.copy_blob(from, &digest)?;
                }
            }
        }
    }
    if changed || separate {
        to.write_index(&new_index)?;
    }
    let granted = granted.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner);
    Ok(Some(Signed { blobs, changed, files: files.into_inner(), granted }))
}

fn verify(args: &OciVerifyArgs, quiet: bool) -> Result<ExitCode, Error> {
    let platforms = Platforms::new(&args.architectures)?;
    let mut trusted = Vec::new();
    for path in &args.cert {
        trusted.extend(cert::load(path)?);
    }
    let (layout, _scratch) = open(&args.image, &std::env::temp_dir(), quiet)?;
    let (_, nodes) = image::read(&layout, &platforms)?;
    let images = image::images(&nodes);
    let jobs = jobs(&args.image, &images)?;
    let names: Vec<PathBuf> = jobs.iter().map(|job| job.name.clone()).collect();
    Ok(output::run_all(&names, Verbosity::from_quiet(quiet), "verified", |index, _| {
        let job = &jobs[index];
        match layer::check(&job.layer(), &layout, &trusted) {
            Ok(checked) => checked.outcome(&job.name),
            Err(e) => Outcome::Failed(e, None),
        }
    }))
}
