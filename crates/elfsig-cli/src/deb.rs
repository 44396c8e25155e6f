//! Debian packages (deb(5)): taking one apart, re-signing the ELF files in it faithfully
//! (`resign`), and checking them as the kernel module would before dpkg installs them
//! (`check`, the gate on hosts).
//!
//! A package is an `ar` archive of `debian-binary`, `control.tar.*` and `data.tar.*`. The files
//! a package installs are in `data.tar`: each ELF file `sign --recursive` would sign is signed
//! there, in the tar stream, and nothing else changes, not an owner, mode, link, name, order or
//! time; `control.tar`'s `md5sums` and `Installed-Size` follow.

pub mod ar;
pub mod check;
pub mod compression;
pub mod control;
pub mod resign;

use std::io::Read;
use std::path::Path;

use crate::architecture::Machines;
use crate::error::Error;
use compression::Compression;

/// A package's members, found.
#[derive(Debug)]
pub struct Parts<'a> {
    /// Every member, in order.
    pub members: Vec<ar::Member<'a>>,
    /// Which is `control.tar.*`, and its compression.
    pub control: (usize, Compression),
    /// Which is `data.tar.*`, and its compression.
    pub data: (usize, Compression),
}

impl<'a> Parts<'a> {
    /// Takes the package `bytes` apart.
    pub fn of(bytes: &'a [u8]) -> Result<Parts<'a>, String> {
        let members = ar::members(bytes)?;
        match members.first() {
            Some(first) if first.name == "debian-binary" && first.data.starts_with(b"2.") => {}
            _ => return Err("not a Debian package: debian-binary is not the first member, or not format 2.x".into()),
        }
        let (mut control, mut data) = (None, None);
        for (index, member) in members.iter().enumerate() {
            if let Some(compression) = Compression::of(member.name, "control.tar")? {
                control = control.or(Some((index, compression)));
            }
            if let Some(compression) = Compression::of(member.name, "data.tar")? {
                data = data.or(Some((index, compression)));
            }
        }
        let control = control.ok_or("not a Debian package: no control.tar member")?;
        let data = data.ok_or("not a Debian package: no data.tar member")?;
        Ok(Parts { members, control, data })
    }

    /// The uncompressed `control.tar`.
    pub fn control_tar(&self) -> Result<Vec<u8>, String> {
        let (index, compression) = self.control;
        let mut out = Vec::new();
        compression
            .decoder(self.members[index].data)
            .and_then(|decoder| decoder.take(MAX_CONTROL_TAR).read_to_end(&mut out))
            .map_err(|e| format!("control.tar: {e}"))?;
        if out.len() as u64 >= MAX_CONTROL_TAR {
            return Err(format!("control.tar: more than {MAX_CONTROL_TAR} bytes uncompressed"));
        }
        Ok(out)
    }
}

/// A package taken apart for hosts of `hosts` (a Debian architecture): its members, its
/// uncompressed `control.tar`, and the machines whose code it holds natively.
pub fn take_apart<'a>(bytes: &'a [u8], hosts: &str) -> Result<(Parts<'a>, Vec<u8>, Machines), Error> {
    let parts = Parts::of(bytes).map_err(Error::msg)?;
    let control_tar = parts.control_tar().map_err(Error::msg)?;
    let architecture = control::architecture(&control_tar).map_err(Error::msg)?;
    let native = native(&architecture, hosts).map_err(Error::msg)?;
    Ok((parts, control_tar, native))
}

/// The most bytes `control.tar` may hold uncompressed.
const MAX_CONTROL_TAR: u64 = 64 << 20;

/// Reads the package at `path`.
pub fn read(path: &Path) -> Result<Vec<u8>, Error> {
    std::fs::read(path).map_err(|e| Error::io("cannot read", path, e))
}

/// The machines whose code a package for `architecture` holds natively, on hosts of `hosts`:
/// the hosts' own, whatever the package says it is for, and the package's architecture's.
fn native(architecture: &str, hosts: &str) -> Result<Machines, String> {
    let unknown = |a: &str| format!("unknown architecture {a:?}");
    let hosts = Machines::of_debian(hosts).ok_or_else(|| unknown(hosts))?;
    if architecture == "all" {
        return Ok(hosts);
    }
    Ok(hosts.and(&Machines::of_debian(architecture).ok_or_else(|| unknown(architecture))?))
}
