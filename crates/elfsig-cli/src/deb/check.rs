//! Checking a package before dpkg installs it, as the kernel module will check its files once
//! installed: every ELF file `sign --recursive` would sign must carry a valid signature by a
//! trusted certificate. The gate on hosts (APT's `DPkg::Pre-Install-Pkgs`, dpkg's
//! `debsig-verify`), which needs certificates only, no key.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::files::{self, Found};
use super::tar::{self, Kind};
use crate::commands::verify;
use crate::crypto::cert::TrustedCert;
use crate::error::Error;
use crate::skip::Skip;

/// What checking a package found.
#[derive(Debug, Default)]
pub struct Checked {
    /// ELF files that verified.
    pub verified: usize,
    /// ELF files left alone, and why.
    pub skipped: BTreeMap<Skip, usize>,
    /// ELF files the module would refuse, each named `PACKAGE:PATH`, and why.
    pub refused: Vec<(PathBuf, Error)>,
}

/// Checks the package at `path` against `trusted`, for hosts of `default_architecture` where
/// the package is for all.
pub fn check(path: &Path, trusted: &[TrustedCert], default_architecture: &str) -> Result<Checked, Error> {
    check_bytes(&super::read(path)?, path, trusted, default_architecture)
}

/// Checks the package `bytes`, which messages call `path`.
pub fn check_bytes(
    bytes: &[u8],
    path: &Path,
    trusted: &[TrustedCert],
    default_architecture: &str,
) -> Result<Checked, Error> {
    let (parts, _, native) = super::take_apart(bytes, default_architecture)?;
    let (index, compression) = parts.data;
    let failed = |e: &dyn std::fmt::Display| Error::msg(format!("data.tar: {e}"));
    let mut reader = tar::Reader::new(compression.decoder(parts.members[index].data).map_err(|e| failed(&e))?);
    let mut checked = Checked::default();
    let mut left_by_place = files::LeftByPlace::default();
    while let Some(entry) = reader.next_entry(&mut Vec::new()).map_err(|e| failed(&e))? {
        match entry.kind {
            Kind::Other => {}
            Kind::HardLink => {
                if let Some(why) = left_by_place.unsigned_name(&entry) {
                    checked.refused.push((files::name(path, &entry), Error::msg(why)));
                }
            }
            Kind::Regular => match files::examine(&mut reader, &entry, path, &native)? {
                Found::Other(_) => {}
                Found::Elf { skip: Some(skip), .. } => {
                    *checked.skipped.entry(skip).or_default() += 1;
                    left_by_place.note(&entry, skip);
                }
                Found::Elf { file, skip: None, .. } => match verify::verify_open(&file, trusted) {
                    Ok(_) => checked.verified += 1,
                    Err(e) => checked.refused.push((file.path.clone(), e)),
                },
            },
        }
    }
    Ok(checked)
}
