//! Re-signing a package: every ELF file of its `data.tar` that `sign --recursive` would sign is
//! signed (re-signed if it was), in the tar stream; the stream is compressed again as it was;
//! `control.tar` gets the new `md5sums` and `Installed-Size`. Every other byte of the package
//! is kept. A package without an ELF file to sign, or whose files were signed so already, is
//! left exactly as it was. A file keeps what its signature granted, unless `--entitle` names it
//! ([`Grants`]).

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;

use elfsig_core::Entitlements;
use elfsig_core::elf::ELF_MAGIC;
use std::path::Path;

use super::ar;
use super::compression::Compression;
use super::control::{self, Changes};
use super::files::{self, Found, HashingWriter};
use super::tar::{self, Kind};
use crate::architecture::Machines;
use crate::commands::sign;
use crate::crypto::cms::RecordSigner;
use crate::error::Error;
use crate::replace::{Keep, Replacement, same_file};
use crate::skip::Skip;

/// How a package went.
#[derive(Debug, Default)]
pub struct Resigned {
    /// ELF files signed.
    pub signed: usize,
    /// ELF files left alone, and why.
    pub skipped: BTreeMap<Skip, usize>,
    /// Whether the package changed (false: it was written, or left, as it was).
    pub changed: bool,
    /// The files signed with what `--entitle` granted them, by path in the package.
    pub entitled: Vec<(Vec<u8>, Entitlements)>,
}

/// What `deb sign --entitle` grants, by the path a file is installed at, in the form the
/// package's listing gives it without its leading `./` (`usr/bin/python3.13`).
#[derive(Debug, Default)]
pub struct Grants(BTreeMap<Vec<u8>, Entitlements>);

impl Grants {
    /// The grants `--entitle` asked for, each an absolute path and its words; a file named
    /// twice, or `none` with other words, is a usage error.
    pub fn new(asked: &[(std::path::PathBuf, Vec<Option<elfsig_core::Entitlement>>)]) -> Result<Self, Error> {
        let mut grants = BTreeMap::new();
        for (file, words) in asked {
            let entitlements = match sign::Entitle::from_args(words)? {
                sign::Entitle::Exactly(entitlements) => entitlements,
                sign::Entitle::Keep => Entitlements::NONE,
            };
            let path = tar::relative(file.as_os_str().as_encoded_bytes()).to_vec();
            if grants.insert(path, entitlements).is_some() {
                return Err(Error::Usage(format!("--entitle names {} twice", file.display())));
            }
        }
        Ok(Grants(grants))
    }

    /// What a file installed at `path` is signed with.
    fn entitle(&self, path: &[u8]) -> sign::Entitle {
        self.0.get(path).map_or(sign::Entitle::Keep, |&entitlements| sign::Entitle::Exactly(entitlements))
    }

    /// Whether a grant of the hard link `link` (a second name of `target`, which the package
    /// lists, and so signed, first) holds: `target` got the same; an error says which name to
    /// give otherwise.
    fn check_link(&self, link: &[u8], target: &[u8], resigned: &mut Resigned) -> Result<(), String> {
        let Some(&wanted) = self.0.get(link) else {
            return Ok(());
        };
        let show = |path: &[u8]| format!("/{}", String::from_utf8_lossy(path));
        match resigned.entitled.iter().find(|(path, _)| path == target) {
            Some(&(_, given)) if given == wanted => {
                resigned.entitled.push((link.to_vec(), given));
                Ok(())
            }
            Some(_) => Err(format!("--entitle grants {} and {}, one file, differently", show(target), show(link))),
            None => Err(format!(
                "--entitle {}: another name of {}, which the package lists first: name that one",
                show(link),
                show(target)
            )),
        }
    }

    /// The files named that are not among `granted` (paths in the package), as installed
    /// (`/usr/bin/python3.13`).
    pub fn missing<'a>(&'a self, granted: &'a BTreeSet<Vec<u8>>) -> impl Iterator<Item = String> + 'a {
        self.0.keys().filter(|path| !granted.contains(*path)).map(|path| format!("/{}", String::from_utf8_lossy(path)))
    }
}

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
    let rewritten = if holds_elf(data, compression)? {
        let rewritten = rewrite_data(data, compression, input, &native, signer, grants, &mut resigned)?;
        Some(rewritten).filter(|(_, changes)| !changes.md5.is_empty())
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

/// Whether the tar stream holds a regular file that starts as ELF does: only then is it read
/// again to be rewritten.
fn holds_elf(data: &[u8], compression: Compression) -> Result<bool, Error> {
    let failed = |e: &dyn std::fmt::Display| Error::msg(format!("data.tar: {e}"));
    let mut reader = tar::Reader::new(compression.decoder(data).map_err(|e| failed(&e))?);
    while let Some(entry) = reader.next_entry(&mut Vec::new()).map_err(|e| failed(&e))? {
        if entry.kind == Kind::Regular && files::magic(&mut reader.contents()).map_err(|e| failed(&e))? == ELF_MAGIC {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The `data.tar` member with its ELF files signed, compressed as it was, and what changed.
/// What does not change is copied as it was read, padding included.
fn rewrite_data(
    data: &[u8],
    compression: Compression,
    package: &Path,
    native: &Machines,
    signer: &RecordSigner,
    grants: &Grants,
    resigned: &mut Resigned,
) -> Result<(Vec<u8>, Changes), Error> {
    let failed = |e: &dyn std::fmt::Display| Error::msg(format!("data.tar: {e}"));
    let mut reader = tar::Reader::new(compression.decoder(data).map_err(|e| failed(&e))?);
    let mut out = compression.encoder().map_err(|e| failed(&e))?;
    let mut changes = Changes::default();
    let mut left_by_place = files::LeftByPlace::default();
    let mut end = Vec::new();
    while let Some(mut entry) = reader.next_entry(&mut end).map_err(|e| failed(&e))? {
        let written = match entry.kind {
            Kind::Other => tar::write_head(&mut out, &entry).and_then(|()| reader.copy_rest(&mut out)),
            Kind::HardLink => {
                if let Some(why) = left_by_place.unsigned_name(&entry) {
                    return Err(Error::msg(format!("{}: {why}", files::name(package, &entry).display())));
                }
                grants
                    .check_link(entry.relative_path(), entry.relative_link(), resigned)
                    .map_err(|why| Error::msg(format!("{}: {why}", package.display())))?;
                // Another name of a signed file: md5sums lists it too.
                if let Some(sum) = changes.md5.get(entry.relative_link()).copied() {
                    changes.md5.insert(entry.relative_path().to_vec(), sum);
                }
                tar::write_head(&mut out, &entry).and_then(|()| reader.copy_rest(&mut out))
            }
            Kind::Regular => match files::examine(&mut reader, &entry, package, native)? {
                Found::Other(first) => tar::write_head(&mut out, &entry)
                    .and_then(|()| out.write_all(&first))
                    .and_then(|()| reader.copy_rest(&mut out)),
                Found::Elf { mut file, skip: Some(skip), .. } => {
                    *resigned.skipped.entry(skip).or_default() += 1;
                    left_by_place.note(&entry, skip);
                    files::rewound(&mut file.file, &file.path)?;
                    tar::write_head(&mut out, &entry)
                        .and_then(|()| std::io::copy(&mut file.file, &mut out).map(|_| ()))
                        .and_then(|()| reader.copy_rest(&mut out))
                }
                Found::Elf { file, md5, skip: None } => {
                    let mut signed = files::scratch(&file.path)?;
                    let mut hashing = HashingWriter::new(&mut signed);
                    let entitle = grants.entitle(entry.relative_path());
                    sign::sign_open(&file, signer, entitle, &mut hashing, &file.path)?;
                    let (len, new_md5) = (hashing.len, hashing.finish());
                    resigned.signed += 1;
                    if let sign::Entitle::Exactly(entitlements) = entitle {
                        resigned.entitled.push((entry.relative_path().to_vec(), entitlements));
                    }
                    files::rewound(&mut signed, &file.path)?;
                    if len == entry.size && new_md5 == md5 {
                        // Signed so already: as it was, padding and all.
                        tar::write_head(&mut out, &entry)
                            .and_then(|()| std::io::copy(&mut signed, &mut out).map(|_| ()))
                            .and_then(|()| reader.copy_rest(&mut out))
                    } else {
                        changes.md5.insert(entry.relative_path().to_vec(), new_md5);
                        changes.installed_kib += files::kib(len) - files::kib(entry.size);
                        entry.header.set_size(len);
                        entry.size = len;
                        tar::write_entry(&mut out, &entry, &mut signed)
                    }
                }
            },
        };
        written.map_err(|e| failed(&format!("{}: {e}", entry.display())))?;
    }
    out.write_all(&end).map_err(|e| failed(&e))?;
    reader.rest(&mut out).map_err(|e| failed(&e))?;
    Ok((out.finish().map_err(|e| failed(&e))?, changes))
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
