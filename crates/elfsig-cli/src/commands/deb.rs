//! `elfsig deb sign` and `elfsig deb verify`: Debian packages, one per core at a time.

use std::collections::{BTreeMap, BTreeSet};
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::architecture::Machines;
use crate::cli::{DebArgs, DebCommand, DebSignArgs, DebVerifyArgs};
use crate::crypto::cert;
use crate::crypto::cms::RecordSigner;
use crate::deb::{check, resign};
use crate::error::Error;
use crate::output::{self, Outcome, Verbosity};
use crate::tar_stream::resign::Grants;
use crate::walk;

/// Runs the command.
pub fn run(args: &DebArgs, quiet: bool) -> Result<ExitCode, Error> {
    match &args.command {
        DebCommand::Sign(args) => sign(args, quiet),
        DebCommand::Verify(args) => verify(args, quiet),
    }
}

fn sign(args: &DebSignArgs, quiet: bool) -> Result<ExitCode, Error> {
    known_architecture(&args.architecture)?;
    let grants = Grants::new(&args.entitle)?;
    let signer = RecordSigner::open(&args.signing.key, &args.signing.cert)?;
    let packages = packages(&args.packages)?;
    if let Some(dir) = &args.output_dir {
        let mut seen = BTreeMap::new();
        for (path, below) in &packages {
            if let Some(first) = seen.insert(below, path) {
                return Err(Error::Usage(format!(
                    "{} and {} would both be written to {}",
                    first.display(),
                    path.display(),
                    dir.join(below).display()
                )));
            }
        }
    }
    let paths: Vec<PathBuf> = packages.iter().map(|(path, _)| path.clone()).collect();
    let granted = std::sync::Mutex::new(BTreeSet::new());
    let any_failed = std::sync::atomic::AtomicBool::new(false);
    let status = output::run_all(&paths, Verbosity::from_quiet(quiet), "signed", |index, path| {
        let output = match &args.output_dir {
            Some(dir) => dir.join(&packages[index].1),
            None => path.to_owned(),
        };
        if let Some(parent) = output.parent().filter(|p| !p.as_os_str().is_empty()) {
            if let Err(e) = std::fs::create_dir_all(parent) {
                return Outcome::Failed(Error::io("cannot create directory", parent, e), None);
            }
        }
        let resigned = resign::resign(path, &output, &signer, &args.architecture, &grants);
        let notes: Vec<String> = match &resigned {
            Ok(resigned) => resigned
                .entitled
                .iter()
                .map(|(file, entitlements)| {
                    granted.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(file.clone());
                    let what = if entitlements.is_empty() { "nothing".to_owned() } else { entitlements.to_string() };
                    format!("/{}: entitled to {what}", String::from_utf8_lossy(file))
                })
                .collect(),
            Err(_) => {
                any_failed.store(true, std::sync::atomic::Ordering::Relaxed);
                Vec::new()
            }
        };
        match resigned {
            Ok(resigned) if !resigned.changed && resigned.signed == 0 => Outcome::Done {
                line: Some(format!(
                    "{}: no ELF file to sign{}; unchanged",
                    output.display(),
                    output::left_alone(&resigned.skipped)
                )),
                notes,
            },
            Ok(resigned) => Outcome::Done {
                line: Some(format!(
                    "{}: {} ELF {} signed{}{}",
                    output.display(),
                    resigned.signed,
                    if resigned.signed == 1 { "file" } else { "files" },
                    output::left_alone(&resigned.skipped),
                    if resigned.changed { "" } else { " (signed so already; unchanged)" }
                )),
                notes,
            },
            Err(e) => Outcome::Failed(e, None),
        }
    });
    // A grant that found no file would leave the program it meant without it, unseen. (When a
    // package failed, its files are not known: the failure is said already.)
    let granted = granted.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner);
    let missed: Vec<String> = grants.missing(&granted).collect();
    if missed.is_empty() || any_failed.into_inner() {
        return Ok(status);
    }
    for file in &missed {
        eprintln!("elfsig: --entitle {file}: no package given holds it as an ELF file to sign (the rest are signed)");
    }
    Ok(ExitCode::FAILURE)
}

fn verify(args: &DebVerifyArgs, quiet: bool) -> Result<ExitCode, Error> {
    known_architecture(&args.architecture)?;
    let mut trusted = Vec::new();
    for path in &args.cert {
        trusted.extend(cert::load(path)?);
    }
    let mut named = args.packages.clone();
    if args.apt_hook {
        named.extend(apt_hook_packages(std::io::stdin().lock())?);
    }
    let packages = packages(&named)?;
    let paths: Vec<PathBuf> = packages.into_iter().map(|(path, _)| path).collect();
    Ok(output::run_all(&paths, Verbosity::from_quiet(quiet), "verified", |_, path| {
        match check::check(path, &trusted, &args.architecture) {
            Ok(checked) => checked.outcome(path),
            Err(e) => Outcome::Failed(e, None),
        }
    }))
}

/// The packages APT's `DPkg::Pre-Install-Pkgs` hook gives on standard input (its protocol's
/// version 1): one file name per line.
fn apt_hook_packages(input: impl BufRead) -> Result<Vec<PathBuf>, Error> {
    let mut packages = Vec::new();
    for line in input.lines() {
        let line = line.map_err(|e| Error::msg(format!("cannot read the package list from APT: {e}")))?;
        let line = line.trim_end();
        if line.starts_with("VERSION ") {
            return Err(Error::Usage(
                "APT speaks a newer version of the Pre-Install-Pkgs protocol to this hook: configure version 1".into(),
            ));
        }
        if !line.is_empty() {
            packages.push(PathBuf::from(line));
        }
    }
    Ok(packages)
}

/// The packages named, each with where it goes below an output directory: a file as its name,
/// every `.deb` under a directory as its path below it.
fn packages(named: &[PathBuf]) -> Result<Vec<(PathBuf, PathBuf)>, Error> {
    let mut packages = Vec::new();
    for path in named {
        if path.is_dir() {
            for file in walk::regular_files(path)? {
                if file.extension().is_some_and(|e| e == "deb") {
                    let below = file.strip_prefix(path).map(Path::to_path_buf).unwrap_or_else(|_| file.clone());
                    packages.push((file, below));
                }
            }
        } else {
            let name = path.file_name().map(PathBuf::from).unwrap_or_else(|| path.clone());
            packages.push((path.clone(), name));
        }
    }
    Ok(packages)
}

fn known_architecture(architecture: &str) -> Result<(), Error> {
    if architecture != "all" && Machines::of_debian(architecture).is_some() {
        return Ok(());
    }
    Err(Error::Usage(format!("--architecture: {architecture:?} is not a Debian architecture elfsig knows")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_apt_hook_reads_one_package_per_line() {
        let given = b"/var/cache/apt/archives/a_1_amd64.deb\n\n/var/cache/apt/archives/b_2_all.deb\n";
        let packages = apt_hook_packages(&given[..]).unwrap();
        assert_eq!(
            packages,
            [PathBuf::from("/var/cache/apt/archives/a_1_amd64.deb"), "/var/cache/apt/archives/b_2_all.deb".into()]
        );
        assert!(apt_hook_packages(&b"VERSION 2\n"[..]).is_err());
    }
}
