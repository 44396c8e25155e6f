//! Checking a package before dpkg installs it, as the kernel module will check its files once
//! installed ([`crate::tar_stream::check`]). The gate on hosts (APT's
//! `DPkg::Pre-Install-Pkgs`, dpkg's `debsig-verify`), which needs certificates only, no key.

use std::path::Path;

use crate::crypto::cert::TrustedCert;
use crate::error::Error;
use crate::tar_stream::check::{self as stream, Checked};
use crate::tar_stream::{Dialect, Reader};

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
    let decoder = compression.decoder(parts.members[index].data).map_err(|e| Error::msg(format!("data.tar: {e}")))?;
    stream::check(Reader::new(decoder, Dialect::Dpkg), "data.tar", path, &native, trusted)
}
