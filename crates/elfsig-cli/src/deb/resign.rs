//! Re-signing a package: its `data.tar`'s ELF files signed in the stream
//! ([`crate::tar_stream::resign`]), the stream compressed again as it was; `control.tar` gets
//! the new `md5sums` and `Installed-Size`. Every other byte of the package is kept. A package
//! without an ELF file to sign, or whose files were signed so already, is left exactly as it
//! was.

use std::io::Write;
use std::path::Path;

use super::ar;
use super::compression::Compression;
use super::control;
use crate::crypto::cms::RecordSigner;
use crate::error::Error;
use crate::replace::{Keep, Replacement, same_file};
use crate::tar_stream::resign::{self as stream, Grants, Resigned};
use crate::tar_stream::{Dialect, Reader};

/// Re-signs the package `input` into `output` (which may be `input`: it is then replaced
/// atomically), for hosts of `default_architecture` where the package is for all, granting
/// what `grants` says.
pub fn resign(
    input: &Path,
    output: &Path,
    signer: &RecordSigner,
    default_architecture: &str,
    grants: &Grants,
) -> Result<Resigned, Error> {
    let bytes = super::read(input)?;
    let (resigned, package) = resign_bytes(&bytes, input, signer, default_architecture, grants)?;
    if package.is_some() || !same_file(input, output) {
        write(input, output, package.as_deref().unwrap_or(&bytes))?;
    }
    Ok(resigned)
}

/// Re-signs the package `bytes`, which messages call `input`: how it went, and the new
/// package if it changed.
pub fn resign_bytes(
    bytes: &[u8],
    input: &Path,
    signer: &RecordSigner,
    default_architecture: &str,
    grants: &Grants,
) -> Result<(Resigned, Option<Vec<u8>>), Error> {
    let (parts, control_tar, native) = super::take_apart(bytes, default_architecture)?;
    let (data_index, compression) = parts.data;
    let data = parts.members[data_index].data;
    let mut resigned = Resigned::default();
    let failed = |e: &dyn std::fmt::Display| Error::msg(format!("data.tar: {e}"));
    let decoded = || compression.decoder(data).map(|d| Reader::new(d, Dialect::Dpkg)).map_err(|e| failed(&e));
    let rewritten = if stream::holds_elf_to_sign(decoded()?, "data.tar", input, &native)? {
        let mut out = compression.encoder().map_err(|e| failed(&e))?;
        let changes = stream::rewrite(decoded()?, &mut out, "data.tar", input, &native, signer, grants, &mut resigned)?;
        let new_data = out.finish().map_err(|e| failed(&e))?;
        Some((new_data, changes)).filter(|(_, changes)| !changes.md5.is_empty())
    } else {
        None
    };
    let package = match rewritten {
        None => None,
        Some((new_data, changes)) => {
            resigned.changed = true;
            let (control_index, control_compression) = parts.control;
            let new_control =
                compress(control_compression, &control::rewrite(&control_tar, &changes).map_err(Error::msg)?)
                    .map_err(|e| Error::msg(format!("control.tar: {e}")))?;
            let mut out = ar::MAGIC.to_vec();
            for (index, member) in parts.members.iter().enumerate() {
                let new = match index {
                    i if i == data_index => &new_data,
                    i if i == control_index => &new_control,
                    // Every other member as it was, its header and padding too.
                    _ => {
                        out.extend_from_slice(member.raw);
                        continue;
                    }
                };
                ar::append(&mut out, member.header, new).map_err(Error::msg)?;
            }
            Some(out)
        }
    };
    Ok((resigned, package))
}

fn compress(compression: Compression, bytes: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut encoder = compression.encoder()?;
    encoder.write_all(bytes)?;
    encoder.finish()
}

/// Writes `bytes` to `output` atomically, with `input`'s mode (and owner, in place).
fn write(input: &Path, output: &Path, bytes: &[u8]) -> Result<(), Error> {
    let source = std::fs::File::open(input).map_err(|e| Error::io("cannot open", input, e))?;
    let meta = source.metadata().map_err(|e| Error::io("cannot stat", input, e))?;
    let keep = if same_file(input, output) { Keep::Everything } else { Keep::ModeAndXattrs };
    let mut replacement = Replacement::new(output)?;
    replacement.writer().write_all(bytes).map_err(|e| Error::io("cannot write", output, e))?;
    replacement.commit(&source, &meta, keep)
}
