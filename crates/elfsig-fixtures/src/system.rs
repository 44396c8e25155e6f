//! The machine the tests run on: where its programs are, where fixtures are cached, and how to
//! execute a freshly written file reliably.

use std::ffi::OsStr;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

/// The distribution's program directories, in order.
const STANDARD_DIRS: &[&str] = &["/usr/bin", "/bin", "/usr/sbin", "/sbin"];

/// Where toolchains installed outside the package manager usually live; searched last when
/// looking for a build tool.
const TOOLCHAIN_DIRS: &[&str] = &["/usr/local/bin", "/usr/local/go/bin"];

fn is_executable_file(path: &Path) -> bool {
    path.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Finds `name` in `PATH` then the standard directories then `extra`, or, with
/// `standard_first`, in the standard directories before `PATH`.
fn search(name: &str, extra: &[&str], standard_first: bool) -> Option<PathBuf> {
    if name.is_empty() {
        return None;
    }
    if name.contains('/') {
        let path = PathBuf::from(name);
        return is_executable_file(&path).then_some(path);
    }
    let path_dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).filter(|d| d.is_absolute()).collect())
        .unwrap_or_default();
    let standard: Vec<PathBuf> = STANDARD_DIRS.iter().map(PathBuf::from).collect();
    let (first, second) = if standard_first { (standard, path_dirs) } else { (path_dirs, standard) };
    first
        .into_iter()
        .chain(second)
        .chain(extra.iter().map(PathBuf::from))
        .map(|d| d.join(name))
        .find(|p| is_executable_file(p))
}

/// Absolute, canonical path (every symlink resolved) of the program `name` on this machine,
/// found by searching `/usr/bin`, `/bin`, `/usr/sbin` and `/sbin`, then `PATH`: the
/// distribution's own programs come first, not wrappers such as pyenv's shims that a `PATH` may
/// put ahead of them. A name containing a `/` is taken as a path. `None` if there is no such
/// executable file.
pub fn system_binary(name: &str) -> Option<PathBuf> {
    search(name, &[], true)?.canonicalize().ok()
}

/// Path to invoke a build tool by. Unlike [`system_binary`] this keeps symlinks: tools such as
/// rustup's proxies decide what to be from the name they were started by.
pub(crate) fn tool(name: &str) -> Option<PathBuf> {
    search(name, TOOLCHAIN_DIRS, false)
}

/// Directory where built fixtures are cached: `$CARGO_TARGET_DIR/elfsig-fixtures` when that
/// variable is set, else `target/elfsig-fixtures` at the workspace root. Created on demand.
///
/// # Panics
///
/// If the directory cannot be created.
pub fn cache_dir() -> PathBuf {
    // This crate lives at <workspace>/crates/elfsig-fixtures.
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let target = match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) if !dir.is_empty() => workspace.join(dir), // join keeps an absolute path as is
        _ => workspace.join("target"),
    };
    let dir = target.join("elfsig-fixtures");
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
    // Tidy `..` away so the paths in messages are readable.
    dir.canonicalize().unwrap_or(dir)
}

/// Writes `bytes` to `path` with mode 0755, replacing any existing file atomically (through a
/// temporary file in the same directory), so that a process already running the old file, or
/// another thread about to, is not disturbed.
pub fn write_executable(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let file_name = path.file_name().unwrap_or_else(|| OsStr::new("file"));
    let tmp = path.with_file_name(format!(".{}.tmp-{}-{}", file_name.to_string_lossy(), std::process::id(), unique()));
    let result = std::fs::write(&tmp, bytes)
        .and_then(|()| std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755)))
        .and_then(|()| std::fs::rename(&tmp, path));
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// A number unique within this process, for temporary names.
pub(crate) fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// Runs `program` with `args` and collects its output, retrying while exec fails with `ETXTBSY`.
///
/// A test that writes an executable and runs it while other test threads spawn processes can hit
/// `ETXTBSY`: a child forked by another thread holds the write descriptor until it execs. The
/// condition is brief, so this retries for up to about five seconds.
pub fn run_program<S: AsRef<OsStr>>(program: &Path, args: &[S]) -> io::Result<Output> {
    let mut attempts = 0;
    loop {
        match Command::new(program).args(args).output() {
            Err(e) if e.kind() == io::ErrorKind::ExecutableFileBusy && attempts < 500 => {
                attempts += 1;
                std::thread::sleep(Duration::from_millis(10));
            }
            result => return result,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_sh() {
        let sh = system_binary("sh").expect("every Unix has sh");
        assert!(sh.is_absolute());
        assert_eq!(sh.canonicalize().unwrap(), sh);
        assert!(system_binary("no-such-program-elfsig").is_none());
        assert!(system_binary("").is_none());
    }

    #[test]
    fn cache_dir_exists() {
        let dir = cache_dir();
        assert!(dir.is_dir());
        assert!(dir.ends_with("elfsig-fixtures"));
    }
}
