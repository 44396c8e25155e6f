//! Real software in the test VM, for the mapping guard to run under: bash, python3 with its C
//! extension `_ctypes` (and the standard library it needs to start and `import ctypes`), and the
//! Go and Rust fixture programs. Every ELF file is staged to be signed; the Python sources are
//! data.

use std::fs;
use std::path::Path;

use elfsig_fixtures::Built;
use elfsig_guest::image;

use crate::Result;
use crate::keys::KeyPair;
use crate::vm::cpio::Cpio;
use crate::vm::initramfs::{Staged, read, shared_libraries, system};

/// Where Debian's Python 3.11 keeps its standard library.
const PYTHON_LIB: &str = "/usr/lib/python3.11";
/// The `_ctypes` C extension.
const CTYPES_EXTENSION: &str = "lib-dynload/_ctypes.cpython-311-x86_64-linux-gnu.so";
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
    let mut program = |guest_path: &str, host: &Path| -> Result {
        libraries.extend(shared_libraries(host)?);
        staged.push(Staged { guest_path: guest_path.to_owned(), bytes: read(host)?, key: Some(key) });
        Ok(())
    };
    program(image::BASH, &system("bash")?)?;
    let python = Path::new("/usr/bin/python3.11");
    if !python.exists() {
        return Err("/usr/bin/python3.11 is missing (Debian package python3.11-minimal)".into());
    }
    program(image::PYTHON, python)?;
    let extension = Path::new(PYTHON_LIB).join(CTYPES_EXTENSION);
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
    for source in PYTHON_SOURCES {
        add_sources(cpio, &Path::new(PYTHON_LIB).join(source))?;
    }
    Ok(())
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
