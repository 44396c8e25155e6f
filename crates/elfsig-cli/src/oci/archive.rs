//! OCI archives: an image layout in a tar (`podman save --format oci-archive`, skopeo's
//! `oci-archive:`). Read into a layout in a scratch directory, taking the layout's files only
//! (`oci-layout`, `index.json`, `blobs/ALGORITHM/DIGEST`) and refusing links; written back from
//! a layout with the blobs its index refers to, in a fixed order with fixed owners, modes and
//! times, so that the same image gives the same archive.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Write};
use std::path::{Component, Path, PathBuf};

use oci_spec::image::Digest;

use super::layout::Layout;
use crate::error::Error;
use crate::replace::{Keep, Replacement};

/// Unpacks the layout in the archive at `archive` into the directory `into`; names of what was
/// left out (files that are not the layout's) are returned, for a note.
pub fn extract(archive: &Path, into: &Path) -> Result<Vec<String>, Error> {
    let file = File::open(archive).map_err(|e| Error::io("cannot open", archive, e))?;
    let failed = |e: io::Error| Error::msg(format!("{}: {e}", archive.display()));
    let mut tar = tar::Archive::new(BufReader::with_capacity(1 << 16, file));
    let mut left_out = Vec::new();
    for entry in tar.entries().map_err(failed)? {
        let mut entry = entry.map_err(failed)?;
        let name = entry.path().map_err(failed)?.into_owned();
        let kind = entry.header().entry_type();
        if kind.is_dir() {
            continue;
        }
        let Some(place) = layout_file(&name) else {
            left_out.push(name.display().to_string());
            continue;
        };
        if !kind.is_file() {
            return Err(Error::msg(format!(
                "{}: {} is not a regular file: not an OCI archive elfsig reads",
                archive.display(),
                name.display()
            )));
        }
        let to = into.join(&place);
        if let Some(dir) = to.parent() {
            std::fs::create_dir_all(dir).map_err(|e| Error::io("cannot create directory", dir, e))?;
        }
        // A second copy of a name would leave one reader with one file and another with the
        // other.
        let mut out =
            File::options().write(true).create_new(true).open(&to).map_err(|e| Error::io("cannot create", &to, e))?;
        io::copy(&mut entry, &mut out).map_err(|e| Error::io("cannot write", &to, e))?;
    }
    Ok(left_out)
}

/// Where a file of an archive goes in the layout, if it is one of the layout's files.
fn layout_file(name: &Path) -> Option<PathBuf> {
    let parts: Vec<&str> = name
        .components()
        .filter(|c| !matches!(c, Component::CurDir))
        .map(|c| match c {
            Component::Normal(part) => part.to_str(),
            _ => None,
        })
        .collect::<Option<_>>()?;
    match parts.as_slice() {
        ["oci-layout"] | ["index.json"] => Some(PathBuf::from(parts[0])),
        ["blobs", algorithm, hex] => {
            let digest: Digest = format!("{algorithm}:{hex}").parse().ok()?;
            (digest.algorithm().digest_hexlen().is_some() && hex.bytes().all(|b| b.is_ascii_hexdigit()))
                .then(|| ["blobs", algorithm, hex].iter().collect())
        }
        _ => None,
    }
}

/// Writes the archive `to` (atomically, replacing `input`'s if it is the same file) from
/// `layout`: `oci-layout`, `index.json` and `blobs`.
pub fn write(layout: &Layout, blobs: &BTreeSet<String>, input: &Path, to: &Path) -> Result<(), Error> {
    let source = File::open(input).map_err(|e| Error::io("cannot open", input, e))?;
    let meta = source.metadata().map_err(|e| Error::io("cannot stat", input, e))?;
    let keep = if crate::replace::same_file(input, to) { Keep::Everything } else { Keep::ModeAndXattrs };
    let mut replacement = Replacement::new(to)?;
    {
        let failed = |e: io::Error| Error::io("cannot write", to, e);
        let mut tar = tar::Builder::new(BufWriter::with_capacity(1 << 16, replacement.writer()));
        tar.mode(tar::HeaderMode::Deterministic);
        let mut add = |name: &str, path: Option<&Path>| -> Result<(), Error> {
            let mut header = tar::Header::new_ustar();
            header.set_mtime(0);
            header.set_uid(0);
            header.set_gid(0);
            match path {
                None => {
                    header.set_entry_type(tar::EntryType::Directory);
                    header.set_mode(0o755);
                    header.set_size(0);
                    tar.append_data(&mut header, name, io::empty()).map_err(failed)
                }
                Some(path) => {
                    let file = File::open(path).map_err(|e| Error::io("cannot open", path, e))?;
                    let size = file.metadata().map_err(|e| Error::io("cannot stat", path, e))?.len();
                    header.set_entry_type(tar::EntryType::Regular);
                    header.set_mode(0o644);
                    header.set_size(size);
                    tar.append_data(&mut header, name, BufReader::with_capacity(1 << 16, file)).map_err(failed)
                }
            }
        };
        add("oci-layout", Some(&layout.root().join("oci-layout")))?;
        add("index.json", Some(&layout.root().join("index.json")))?;
        add("blobs/", None)?;
        let mut algorithms = BTreeSet::new();
        let mut present = Vec::new();
        for blob in blobs {
            let Ok(digest) = blob.parse::<Digest>() else {
                continue;
            };
            if layout.has(&digest) {
                algorithms.insert(digest.algorithm().to_string());
                present.push(digest);
            }
        }
        for algorithm in &algorithms {
            add(&format!("blobs/{algorithm}/"), None)?;
        }
        present.sort_by_key(|d| (d.algorithm().to_string(), d.digest().to_owned()));
        for digest in &present {
            let name = format!("blobs/{}/{}", digest.algorithm(), digest.digest());
            add(&name, Some(&layout.blob_path(digest)?))?;
        }
        let mut out = tar.into_inner().map_err(failed)?;
        out.flush().map_err(failed)?;
    }
    replacement.commit(&source, &meta, keep)
}
