//! Real software in the test VM, for the mapping guard to run under: bash, python3 with its C
//! extension `_ctypes` (and the standard library it needs to start and `import ctypes`), strace
//! (a debugger), and the Go and Rust fixture programs. Every ELF file is staged to be signed; the Python sources are
//! data.

use std::fs;
use std::path::{Path, PathBuf};

use elfsig_fixtures::Built;
use elfsig_guest::image;

use crate::Result;
use crate::keys::KeyPair;
use crate::vm::cpio::Cpio;
use crate::vm::staged::{Staged, read, stage_program, system};

/// Where Debian's Python 3.11 keeps its standard library.
const PYTHON_LIB: &str = "/usr/lib/python3.11";
/// The pure-Python parts of the standard library that `python3 -S -c 'import ctypes'` reads
/// (`sys.modules` after it, on Debian 12).
const PYTHON_SOURCES: &[&str] = &[
    "encodings",
    "ctypes",
    "importlib",
    "_collections_abc.py",
    "abc.py",
    "codecs.py",
    "genericpath.py",
    "io.py",
    "os.py",
    "posixpath.py",
    "stat.py",
    "struct.py",
    "types.py",
    "zipimport.py",
];

/// Stages the programs (signed with `key`), puts the Python sources in `cpio`, and adds the
/// shared libraries everything needs to `libraries`. Fixture programs print a known line, which
/// goes to [`image::EXPECTED`].
pub fn add<'k>(staged: &mut Vec<Staged<'k>>, cpio: &mut Cpio, libraries: &mut Vec<String>, key: &'k KeyPair) -> Result {
    let mut program = |guest_path: &str, host: &Path| stage_program(staged, libraries, guest_path.into(), host, key);
    program(image::BASH, &system("bash")?)?;
    program(image::PYTHON, &python()?)?;
    program(image::STRACE, &system("strace")?)?;
    let extension = python_extension("_ctypes");
    program(&extension.display().to_string(), &extension)?;
    for (built, name) in [(Built::Go, "go"), (Built::Rust, "rust")] {
        // Go is optional, as in the host tests: without it the guest has no Go program to run.
        let path = match elfsig_fixtures::build(built) {
            Ok(path) => path,
            Err(e) if built == Built::Go => {
                eprintln!("xtask: the VM gets no Go program: {e}");
                continue;
            }
            Err(e) => return Err(e),
        };
        program(&format!("{}/{name}", image::SIGNED), &path)?;
        if let Some(expected) = elfsig_fixtures::expected_output(built) {
            cpio.file(&format!("{}/{name}", image::EXPECTED), 0o644, expected);
        }
    }
    python_sources(cpio)
}

/// Debian's Python 3.11.
pub fn python() -> Result<PathBuf> {
    let python = Path::new("/usr/bin/python3.11");
    if python.exists() {
        Ok(python.to_owned())
    } else {
        Err("/usr/bin/python3.11 is missing (Debian package python3.11-minimal)".into())
    }
}

/// Where Debian's Python keeps extension module `module` (see [`image::python_extension_file`]).
pub fn python_extension(module: &str) -> PathBuf {
    Path::new(PYTHON_LIB).join("lib-dynload").join(image::python_extension_file(module))
}

/// Puts the standard library's sources `python3 -S` needs (and `ctypes`) in `cpio`.
pub fn python_sources(cpio: &mut Cpio) -> Result {
    PYTHON_SOURCES.iter().try_for_each(|source| add_sources(cpio, &Path::new(PYTHON_LIB).join(source)))
}

/// `path` if it is a `.py` file, or every `.py` file under it (no tests, no bytecode).
fn add_sources(cpio: &mut Cpio, path: &Path) -> Result {
    if path.is_dir() {
        let entries = fs::read_dir(path).map_err(|e| format!("cannot list {}: {e}", path.display()))?;
        for entry in entries {
            let entry = entry.map_err(|e| format!("cannot list {}: {e}", path.display()))?.path();
            let name = entry.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            if entry.is_dir() && name != "test" && name != "__pycache__" {
                add_sources(cpio, &entry)?;
            } else if name.ends_with(".py") {
                cpio.file(&entry.display().to_string(), 0o644, &read(&entry)?);
            }
        }
        Ok(())
    } else {
        cpio.file(&path.display().to_string(), 0o644, &read(path)?);
        Ok(())
    }
}
