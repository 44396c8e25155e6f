//! Hard links among the files a command works through: one file under several names (Debian's
//! `perl` and `perl5.36.0`). Replacing a file gives one name a new file; the other names are
//! then linked to it again, so that a tree keeps its links and every name gets the new file.

use std::collections::HashMap;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::error::Error;

/// The files' names grouped by file: for each path, the index of the first path naming the
/// same file, when it is not itself.
#[derive(Debug)]
pub struct Names {
    first: Vec<Option<usize>>,
    /// For each first name, its file.
    groups: HashMap<usize, Group>,
}

/// A file with several names among the paths.
#[derive(Debug)]
struct Group {
    /// How many of the paths name it.
    names: u64,
    /// Its inode when grouped (before it is replaced).
    ino: u64,
    /// Its link count then.
    nlink: u64,
}

impl Names {
    /// Groups `paths` by device and inode. Symbolic links, and a path given twice, stay alone
    /// (signing through a link replaces what it points to, and linking a name to a link would
    /// copy the link); so do paths that cannot be read, which report their error when worked
    /// on.
    pub fn of(paths: &[PathBuf]) -> Self {
        let mut seen: HashMap<(u64, u64), usize> = HashMap::new();
        let mut given = std::collections::HashSet::new();
        let mut first = Vec::with_capacity(paths.len());
        let mut groups = HashMap::new();
        for (index, path) in paths.iter().enumerate() {
            let meta = match fs::symlink_metadata(path) {
                Ok(meta) if meta.is_file() && meta.nlink() >= 2 && given.insert(path.clone()) => meta,
                _ => {
                    first.push(None);
                    continue;
                }
            };
            match seen.get(&(meta.dev(), meta.ino())) {
                Some(&earlier) => {
                    first.push(Some(earlier));
                    groups.entry(earlier).and_modify(|group: &mut Group| group.names += 1);
                }
                None => {
                    seen.insert((meta.dev(), meta.ino()), index);
                    groups.insert(index, Group { names: 1, ino: meta.ino(), nlink: meta.nlink() });
                    first.push(None);
                }
            }
        }
        Names { first, groups }
    }

    /// The first path naming the same file as path `index`, if that is another path.
    pub fn first_of(&self, index: usize) -> Option<usize> {
        self.first.get(index).copied().flatten()
    }

    /// Whether path `index` is the first of a file whose every name is among the paths (so
    /// none keeps the old file once the others are linked again).
    pub fn covers_every_name(&self, index: usize) -> bool {
        self.groups.get(&index).is_some_and(|group| group.names >= group.nlink)
    }

    /// Links every other name of a replaced file to the new file; returns, for each such name,
    /// the note or the error. A first name that was not replaced (it failed, or was left
    /// alone) leaves its other names as they are.
    pub fn relink(&self, paths: &[PathBuf]) -> Vec<(PathBuf, Result<String, Error>)> {
        let mut results = Vec::new();
        for (index, first) in self.first.iter().enumerate() {
            let (Some(first), Some(path)) = (*first, paths.get(index)) else { continue };
            let (Some(first_path), Some(group)) = (paths.get(first), self.groups.get(&first)) else {
                continue;
            };
            let replaced = fs::metadata(first_path).is_ok_and(|m| m.ino() != group.ino);
            let unchanged = fs::metadata(path).is_ok_and(|m| m.ino() == group.ino);
            if replaced && unchanged {
                let result = link_over(first_path, path)
                    .map(|()| format!("another name of {}: linked to the new file", first_path.display()));
                results.push((path.clone(), result));
            }
        }
        results
    }
}

/// Makes `name` another name of `file`, atomically: a link under a temporary name in the
/// same directory, renamed over `name`.
fn link_over(file: &Path, name: &Path) -> Result<(), Error> {
    let dir = name.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let base = name.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let temp = dir.join(format!(".{base}.{}.elfsig-link", std::process::id()));
    let _ = fs::remove_file(&temp);
    fs::hard_link(file, &temp).map_err(|e| Error::io("cannot link", &temp, e))?;
    fs::rename(&temp, name).map_err(|e| {
        let _ = fs::remove_file(&temp);
        Error::io("cannot replace", name, e)
    })?;
    fs::File::open(dir).and_then(|d| d.sync_all()).map_err(|e| Error::io("cannot sync directory", dir, e))
}
