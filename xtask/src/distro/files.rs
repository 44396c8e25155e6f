//! Files into and out of a system's tree, for every part that fills it: copies with a mode,
//! written files, scripts and symbolic links, each with its directory made first; a package's
//! tree built into a package; and the tree's regular files read back, and which of them are ELF
//! files.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::Result;
use crate::cmd::Cmd;

/// Makes the directory `path` goes in.
pub(super) fn parent_made(path: &Path) -> Result {
    match path.parent() {
        Some(dir) => fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display())),
        None => Ok(()),
    }
}

/// Copies `from` to `to`, with `mode`.
pub(super) fn copy(from: &Path, to: &Path, mode: u32) -> Result {
    parent_made(to)?;
    fs::copy(from, to).map_err(|e| format!("cannot copy {} to {}: {e}", from.display(), to.display()))?;
    fs::set_permissions(to, fs::Permissions::from_mode(mode)).map_err(|e| format!("cannot chmod {}: {e}", to.display()))
}

/// Copies the program `from` to `to` with `mode`, its debug information stripped (its symbols
/// stay, for backtraces), as Debian's packages ship their programs (dh_strip): the module
/// hashes the whole file at its first exec on every host, and the initramfs carries it.
pub(super) fn copy_stripped(from: &Path, to: &Path, mode: u32) -> Result {
    copy(from, to, mode)?;
    Cmd::new("strip").arg("--strip-debug").arg(to).run()
}

/// Writes `text` to `to`.
pub(super) fn write(to: &Path, text: &str) -> Result {
    parent_made(to)?;
    fs::write(to, text).map_err(|e| format!("cannot write {}: {e}", to.display()))
}

/// Writes `text` to `to`, executable (a maintainer script).
pub(super) fn write_script(to: &Path, text: &str) -> Result {
    write(to, text)?;
    fs::set_permissions(to, fs::Permissions::from_mode(0o755))
        .map_err(|e| format!("cannot chmod {}: {e}", to.display()))
}

/// Builds the package whose tree (`DEBIAN/` and the files) is `tree` into the directory
/// `packages`, owned by root, then removes `tree`.
pub(super) fn package_built(tree: &Path, packages: &Path) -> Result {
    Cmd::new("dpkg-deb").args(["--root-owner-group", "--build", "-Zxz"]).arg(tree).arg(packages).run()?;
    fs::remove_dir_all(tree).map_err(|e| format!("cannot remove {}: {e}", tree.display()))
}

/// Makes `link` a symbolic link to `target`, in place of whatever was there.
pub(super) fn symlink(target: &str, link: &Path) -> Result {
    parent_made(link)?;
    let _ = fs::remove_file(link);
    std::os::unix::fs::symlink(target, link).map_err(|e| format!("cannot link {}: {e}", link.display()))
}

/// The space the files under `dir` take, in MiB (`du`'s count), without those under `excluded`.
pub(super) fn size_mib(dir: &Path, excluded: Option<&Path>) -> Result<u64> {
    let excluded = excluded.map(|path| format!("--exclude={}", path.display()));
    Cmd::new("du")
        .args(["-s", "--block-size=1M"])
        .args(excluded)
        .arg(dir)
        .read()?
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| format!("cannot read du's answer for {}", dir.display()))
}

/// Whether `path` starts like an ELF file.
pub(super) fn is_elf(path: &Path) -> bool {
    let mut magic = [0u8; 4];
    fs::File::open(path)
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut magic))
        .is_ok_and(|()| magic == *b"\x7fELF")
}

/// The regular files under `dir`, with their metadata (symbolic links not followed).
pub(super) fn regular_files(dir: &Path) -> Result<Vec<(PathBuf, fs::Metadata)>> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_owned()];
    while let Some(dir) = pending.pop() {
        for entry in fs::read_dir(&dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))? {
            let entry = entry.map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
            let meta = entry.metadata().map_err(|e| format!("cannot stat {}: {e}", entry.path().display()))?;
            if meta.is_dir() {
                pending.push(entry.path());
            } else if meta.is_file() {
                files.push((entry.path(), meta));
            }
        }
    }
    Ok(files)
}
