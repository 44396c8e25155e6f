//! Signing the ELF files of a tar stream (a package's `data.tar`, an image's layer): each ELF
//! file `sign --recursive` would sign is signed (re-signed if it was), in the stream; every
//! other byte is copied as it was read, padding included. A file keeps what its signature
//! granted, unless `--entitle` names it ([`Grants`]).

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::path::Path;

use elfsig_core::Entitlements;

use super::files::{self, Found, Md5Writer};
use super::{Kind, Reader};
use crate::architecture::Machines;
use crate::commands::sign;
use crate::crypto::cms::RecordSigner;
use crate::error::Error;
use crate::skip::Skip;

/// What signing changed in a stream's files.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Changes {
    /// The MD5 of every changed file, by its path relative to the root (as `md5sums` names it).
    pub md5: BTreeMap<Vec<u8>, [u8; 16]>,
    /// How the installed size changes, in KiB: the sum over the changed files of their new size
    /// in KiB, rounded up, less their old (dpkg-gencontrol counts each file so).
    pub installed_kib: i64,
}

/// How a package or layer went.
#[derive(Debug, Default)]
pub struct Resigned {
    /// ELF files signed.
    pub signed: usize,
    /// ELF files left alone, and why.
    pub skipped: BTreeMap<Skip, usize>,
    /// Whether the package or image changed (false: it was written, or left, as it was).
    pub changed: bool,
    /// The files signed with what `--entitle` granted them, by path in the package.
    pub entitled: Vec<(Vec<u8>, Entitlements)>,
}

/// What `--entitle` grants, by the path a file is installed at, in the form a tar listing
/// gives it without its leading `./` (`usr/bin/python3.13`).
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
            let path = super::relative(file.as_os_str().as_encoded_bytes())
                .ok_or_else(|| Error::Usage(format!("--entitle {}: a path that climbs (..)", file.display())))?;
            if grants.insert(path, entitlements).is_some() {
                return Err(Error::Usage(format!("--entitle names {} twice", file.display())));
            }
        }
        Ok(Grants(grants))
    }

    /// What a file installed at `path` is signed with.
    pub fn entitle(&self, path: &[u8]) -> sign::Entitle {
        self.0.get(path).map_or(sign::Entitle::Keep, |&entitlements| sign::Entitle::Exactly(entitlements))
    }

    /// Whether a grant of the hard link `link` (a second name of `target`, which the package
    /// lists, and so signed, first) holds: `target` got the same; an error says which name to
    /// give otherwise.
    pub fn check_link(&self, link: &[u8], target: &[u8], resigned: &mut Resigned) -> Result<(), String> {
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

/// Whether the stream holds an ELF file to sign, or a name that signing must refuse (another
/// name of a file left alone): only then is it read again to be rewritten. A stream whose ELF
/// files are all left alone (a kernel's modules) is not decompressed and compressed again for
/// nothing.
pub fn holds_elf_to_sign<R: Read>(
    mut reader: Reader<R>,
    stream: &str,
    package: &Path,
    native: &Machines,
) -> Result<bool, Error> {
    let failed = |e: &dyn std::fmt::Display| Error::msg(format!("{stream}: {e}"));
    let mut left_by_place = files::LeftByPlace::default();
    while let Some(entry) = reader.next_entry(&mut Vec::new()).map_err(|e| failed(&e))? {
        match entry.kind {
            Kind::HardLink if left_by_place.unsigned_name(&entry).is_some() => return Ok(true),
            Kind::Regular => match files::examine(&mut reader, &entry, package, native)? {
                Found::Elf { skip: None, .. } => return Ok(true),
                Found::Elf { skip: Some(skip), .. } => left_by_place.note(&entry, skip),
                Found::Other(_) => {}
            },
            _ => {}
        }
    }
    Ok(false)
}

/// Writes the stream `reader` reads to `out` with its ELF files for `native` machines signed,
/// and says what changed. `stream` names the stream in messages (`data.tar`), `package` the
/// file that holds it (files are named `PACKAGE:PATH`).
#[allow(clippy::too_many_arguments)]
pub fn rewrite<R: Read>(
    mut reader: Reader<R>,
    out: &mut impl Write,
    stream: &str,
    package: &Path,
    native: &Machines,
    signer: &RecordSigner,
    grants: &Grants,
    resigned: &mut Resigned,
) -> Result<Changes, Error> {
    let failed = |e: &dyn std::fmt::Display| Error::msg(format!("{stream}: {e}"));
    let mut out = out;
    let mut changes = Changes::default();
    let mut left_by_place = files::LeftByPlace::default();
    let mut end = Vec::new();
    while let Some(mut entry) = reader.next_entry(&mut end).map_err(|e| failed(&e))? {
        let written = match entry.kind {
            Kind::Other | Kind::Global => super::write_head(&mut out, &entry).and_then(|()| reader.copy_rest(&mut out)),
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
                super::write_head(&mut out, &entry).and_then(|()| reader.copy_rest(&mut out))
            }
            Kind::Regular => match files::examine(&mut reader, &entry, package, native)? {
                Found::Other(first) => super::write_head(&mut out, &entry)
                    .and_then(|()| out.write_all(&first))
                    .and_then(|()| reader.copy_rest(&mut out)),
                Found::Elf { mut file, skip: Some(skip), .. } => {
                    *resigned.skipped.entry(skip).or_default() += 1;
                    left_by_place.note(&entry, skip);
                    files::rewound(&mut file.file, &file.path)?;
                    super::write_head(&mut out, &entry)
                        .and_then(|()| std::io::copy(&mut file.file, &mut out).map(|_| ()))
                        .and_then(|()| reader.copy_rest(&mut out))
                }
                Found::Elf { file, md5, skip: None } => {
                    let mut signed = files::scratch(&file.path)?;
                    let mut hashing = Md5Writer::new(&mut signed);
                    let entitle = grants.entitle(entry.relative_path());
                    sign::sign_open(&file, signer, entitle, &mut hashing, &file.path)?;
                    let (len, new_md5): (u64, [u8; 16]) = (hashing.len, hashing.finish().1.into());
                    resigned.signed += 1;
                    if let sign::Entitle::Exactly(entitlements) = entitle {
                        resigned.entitled.push((entry.relative_path().to_vec(), entitlements));
                    }
                    files::rewound(&mut signed, &file.path)?;
                    if len == entry.size && new_md5 == md5 {
                        // Signed so already: as it was, padding and all.
                        super::write_head(&mut out, &entry)
                            .and_then(|()| std::io::copy(&mut signed, &mut out).map(|_| ()))
                            .and_then(|()| reader.copy_rest(&mut out))
                    } else {
                        changes.md5.insert(entry.relative_path().to_vec(), new_md5);
                        changes.installed_kib += files::kib(len) - files::kib(entry.size);
                        entry.set_size(len).map_err(|e| failed(&format!("{}: {e}", entry.display())))?;
                        super::write_entry(&mut out, &entry, &mut signed)
                    }
                }
            },
        };
        written.map_err(|e| failed(&format!("{}: {e}", entry.display())))?;
    }
    out.write_all(&end).map_err(|e| failed(&e))?;
    reader.rest(&mut out).map_err(|e| failed(&e))?;
    Ok(changes)
}
