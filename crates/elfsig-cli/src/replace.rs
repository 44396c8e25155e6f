//! Replacing a file atomically: write a temporary file in the same directory, give it the
//! original's owner, mode and extended attributes, fsync it, rename it over the original, fsync
//! the directory. Until the rename nothing visible changes; an error or an interruption leaves
//! the original as it was.

use std::fs::{File, Metadata, Permissions};
use std::io;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use tempfile::NamedTempFile;

use crate::error::Error;

/// What of the original's metadata the replacement keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Keep {
    /// Owner, group, mode (including set-id bits) and extended attributes: replacing in place.
    Everything,
    /// Mode (without set-id bits) and extended attributes, not ownership: writing a new file
    /// elsewhere.
    ModeAndXattrs,
}

/// A replacement being written.
#[derive(Debug)]
pub struct Replacement {
    temp: NamedTempFile,
    target: PathBuf,
}

impl Replacement {
    /// Starts a replacement for `target` (which need not exist yet).
    pub fn new(target: &Path) -> Result<Self, Error> {
        let dir = match target.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir,
            _ => Path::new("."),
        };
        let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let temp = tempfile::Builder::new()
            .prefix(&format!(".{name}."))
            .suffix(".elfsig-tmp")
            .tempfile_in(dir)
            .map_err(|e| Error::io("cannot create a temporary file in", dir, e))?;
        Ok(Replacement { temp, target: target.to_owned() })
    }

    /// The file being written.
    pub fn writer(&mut self) -> &mut File {
        self.temp.as_file_mut()
    }

    /// Gives the replacement `source`'s metadata, makes it durable and renames it over the
    /// target.
    pub fn commit(self, source: &File, source_meta: &Metadata, keep: Keep) -> Result<(), Error> {
        let path = self.temp.path().to_owned();
        let fail = |action: &'static str| {
            let path = path.clone();
            move |e: io::Error| Error::io(action, &path, e)
        };
        let file = self.temp.as_file();
        if keep == Keep::Everything {
            std::os::unix::fs::fchown(file, Some(source_meta.uid()), Some(source_meta.gid()))
                .map_err(fail("cannot give the original's owner to"))?;
        }
        // After chown, which may clear set-id bits and file capabilities. A copy that does not
        // keep the owner does not keep set-id bits either, as cp(1) does: a set-user-ID file
        // owned by whoever ran elfsig is not what the original's owner made.
        let mode = match keep {
            Keep::Everything => source_meta.mode() & 0o7777,
            Keep::ModeAndXattrs => source_meta.mode() & 0o1777,
        };
        file.set_permissions(Permissions::from_mode(mode)).map_err(fail("cannot give the original's mode to"))?;
        copy_xattrs(source, file).map_err(fail("cannot copy extended attributes to"))?;
        file.sync_all().map_err(fail("cannot sync"))?;

        let target = self.target.clone();
        self.temp.persist(&target).map_err(|e| Error::io("cannot replace", &target, e.error))?;
        if let Some(dir) = target.parent().filter(|d| !d.as_os_str().is_empty()) {
            File::open(dir).and_then(|d| d.sync_all()).map_err(|e| Error::io("cannot sync directory", dir, e))?;
        }
        Ok(())
    }
}

fn copy_xattrs(source: &File, target: &File) -> io::Result<()> {
    use xattr::FileExt;
    let names = match source.list_xattr() {
        Ok(names) => names,
        // Filesystems without extended attributes have none to lose.
        Err(e) if e.raw_os_error() == Some(libc_enotsup()) => return Ok(()),
        Err(e) => return Err(e),
    };
    for name in names {
        if let Some(value) = source.get_xattr(&name)? {
            target
                .set_xattr(&name, &value)
                .map_err(|e| io::Error::new(e.kind(), format!("extended attribute {}: {e}", name.to_string_lossy())))?;
        }
    }
    Ok(())
}

/// `EOPNOTSUPP` on Linux.
const fn libc_enotsup() -> i32 {
    95
}

/// The note for replacing one name of a file that has several: the other names keep the old
/// contents, which the user may not expect. `what` says what the new file is ("signed", ...).
pub fn hard_link_note(meta: &Metadata, what: &str) -> Option<String> {
    (meta.nlink() > 1).then(|| format!("has {} hard links; only this name now refers to the {what} file", meta.nlink()))
}

/// Whether two paths name the same file, however they are spelled: the same inode if both exist,
/// else the same name in the same (canonical) directory.
pub fn same_file(a: &Path, b: &Path) -> bool {
    if let (Ok(ma), Ok(mb)) = (a.metadata(), b.metadata()) {
        return ma.dev() == mb.dev() && ma.ino() == mb.ino();
    }
    let place = |p: &Path| -> Option<(PathBuf, std::ffi::OsString)> {
        let dir = p.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        Some((dir.canonicalize().ok()?, p.file_name()?.to_owned()))
    };
    match (place(a), place(b)) {
        (Some(pa), Some(pb)) => pa == pb,
        _ => a == b,
    }
}
