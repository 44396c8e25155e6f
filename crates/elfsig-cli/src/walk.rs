//! Walking directories for `--recursive`: every regular file below, symbolic links not followed
//! (what they point to is either inside the tree and found there, or not ours to touch).

use std::fs;
use std::path::{Path, PathBuf};

use crate::error::Error;

/// Regular files under `dir`, sorted.
pub fn regular_files(dir: &Path) -> Result<Vec<PathBuf>, Error> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_owned()];
    while let Some(dir) = pending.pop() {
        let entries = fs::read_dir(&dir).map_err(|e| Error::io("cannot read directory", &dir, e))?;
        for entry in entries {
            let entry = entry.map_err(|e| Error::io("cannot read directory", &dir, e))?;
            let kind = entry.file_type().map_err(|e| Error::io("cannot stat", &entry.path(), e))?;
            if kind.is_dir() {
                pending.push(entry.path());
            } else if kind.is_file() {
                files.push(entry.path());
            }
        }
    }
    files.sort();
    Ok(files)
}

/// The explicit files followed by the files under each directory, and how many are explicit.
pub fn targets(files: &[PathBuf], dirs: &[PathBuf]) -> Result<(Vec<PathBuf>, usize), Error> {
    let mut all = files.to_vec();
    for dir in dirs {
        all.extend(regular_files(dir)?);
    }
    Ok((all, files.len()))
}
