//! Files staged for an initramfs: read from the host (a program with the shared libraries it
//! loads), each at its path in the guest, and signed together, one `elfsig sign` per key.

use std::fs;
use std::path::{Path, PathBuf};

use elfsig_guest::image;

use crate::Result;
use crate::keys::KeyPair;

/// A file to put in an initramfs, signed with `key` when given.
pub struct Staged<'k> {
    /// Where it goes in the guest.
    pub guest_path: String,
    /// Its unsigned contents.
    pub bytes: Vec<u8>,
    /// The key to sign it with, if any.
    pub key: Option<&'k KeyPair>,
}

/// Reads a host file.
pub fn read(path: &Path) -> Result<Vec<u8>> {
    fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}

/// A program from the host's Debian packages.
pub fn system(name: &str) -> Result<PathBuf> {
    elfsig_fixtures::system_binary(name).ok_or_else(|| format!("{name} is not installed"))
}

/// Signs each staged file with its key (one `elfsig sign` per key, and one more for the
/// programs entitled to `jit`, [`image::ENTITLED_JIT`]) in `dir`, and returns every file's
/// final bytes.
pub fn sign_all(elfsig: &Path, staged: &[Staged<'_>], dir: &Path) -> Result<Vec<Vec<u8>>> {
    let _ = fs::remove_dir_all(dir);
    fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let mut by_key: Vec<((&KeyPair, bool), Vec<PathBuf>)> = Vec::new();
    let mut paths = Vec::new();
    for (i, file) in staged.iter().enumerate() {
        let path = dir.join(format!("{i:02}"));
        fs::write(&path, &file.bytes).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        if let Some(key) = file.key {
            let jit = image::ENTITLED_JIT.contains(&file.guest_path.as_str());
            match by_key.iter_mut().find(|((k, j), _)| k.key == key.key && *j == jit) {
                Some((_, files)) => files.push(path.clone()),
                None => by_key.push(((key, jit), vec![path.clone()])),
            }
        }
        paths.push(path);
    }
    for ((key, jit), files) in by_key {
        let entitle: &[&str] = if jit { &["--entitle", "jit"] } else { &[] };
        key.sign(elfsig).args(entitle).args(&files).run()?;
    }
    paths.iter().map(|p| read(p)).collect()
}

/// Stages `host` at `guest_path`, signed with `key`, and adds the shared libraries it loads to
/// `libraries`.
pub fn stage_program<'k>(
    staged: &mut Vec<Staged<'k>>,
    libraries: &mut Vec<String>,
    guest_path: String,
    host: &Path,
    key: &'k KeyPair,
) -> Result {
    libraries.extend(shared_libraries(host)?);
    staged.push(Staged { guest_path, bytes: read(host)?, key: Some(key) });
    Ok(())
}

/// Stages each of `libraries` once, at its own path, signed with `key`, as every library must
/// be under the mapping guard.
pub fn stage_libraries<'k>(staged: &mut Vec<Staged<'k>>, mut libraries: Vec<String>, key: &'k KeyPair) -> Result {
    libraries.sort();
    libraries.dedup();
    for library in libraries {
        let bytes = read(Path::new(&library))?;
        staged.push(Staged { guest_path: library, bytes, key: Some(key) });
    }
    Ok(())
}

/// The shared libraries `program` loads, as the paths `ldd` prints (also their paths in the
/// guest).
pub fn shared_libraries(program: &Path) -> Result<Vec<String>> {
    let output = std::process::Command::new("ldd").arg(program).output().map_err(|e| format!("cannot run ldd: {e}"))?;
    let text = String::from_utf8_lossy(&output.stdout);
    // A static program has no libraries; ldd says so and exits with 1.
    if String::from_utf8_lossy(&output.stderr).contains("not a dynamic executable")
        || text.contains("not a dynamic executable")
    {
        return Ok(Vec::new());
    }
    if !output.status.success() {
        return Err(format!("`ldd {}` failed ({})", program.display(), output.status));
    }
    Ok(text
        .lines()
        .filter_map(|l| l.split_once("=> ").map(|(_, rest)| rest))
        .filter_map(|rest| rest.split_whitespace().next())
        .filter(|p| p.starts_with('/'))
        .map(str::to_owned)
        .collect())
}
