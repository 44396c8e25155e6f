//! Real binaries built with this machine's toolchains from the sources in `src/programs/`.
//!
//! Each [`Built`] variant is one recipe. [`build`] runs it once and caches the result in
//! [`cache_dir`] under a key that hashes the source, the flags and the tool's
//! version, so a changed recipe or an upgraded compiler rebuilds and everything else is free.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::cache::{Key, cached};
use crate::strip::strip_section_headers;
use crate::system::{cache_dir, tool, write_executable};

/// A real binary [`build`] can produce.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Built {
    /// C, dynamically linked, not position-independent (`gcc -no-pie`): `ET_EXEC` with
    /// `PT_INTERP`. Built with `-g`, so it also has `.debug_*` sections.
    CDynamic,
    /// C, dynamically linked PIE (`gcc -pie`): `ET_DYN` with `PT_INTERP`.
    CPie,
    /// C, statically linked (`gcc -static`): `ET_EXEC` without `PT_INTERP`.
    CStatic,
    /// C, static PIE (`gcc -static-pie`): `ET_DYN` that relocates itself.
    CStaticPie,
    /// C for i386 (`gcc -m32`): 32-bit little-endian PIE. Needs the Debian package
    /// `gcc-multilib`.
    C32,
    /// Go, statically linked (`CGO_ENABLED=0 go build`).
    Go,
    /// Rust (`rustc`), dynamically linked PIE. Recent toolchains link it with their bundled
    /// `rust-lld` rather than GNU ld, so it also brings lld's layout (`.relro_padding`, ...).
    Rust,
    /// A relocatable object (`gcc -c -ffunction-sections -fdata-sections`) with more than 0xff00
    /// sections, so it uses real extended section numbering (`e_shnum` = 0, `e_shstrndx` =
    /// `SHN_XINDEX`, a `.symtab_shndx`).
    ManySectionsObject,
    /// A tiny static s390x program (64-bit big-endian), assembled and linked with the Debian
    /// package `binutils-s390x-linux-gnu`.
    BigEndian64,
    /// A tiny static 32-bit PowerPC program (big-endian), assembled and linked with the Debian
    /// package `binutils-powerpc-linux-gnu`.
    BigEndian32,
    /// [`Built::CStatic`] with its section header table removed by
    /// [`strip_section_headers`]: `e_shoff`, `e_shnum` and
    /// `e_shstrndx` are 0 and the file ends at the last byte a segment covers.
    NoSectionHeaders,
}

/// Every [`Built`] variant.
pub const ALL_BUILT: &[Built] = &[
    Built::CDynamic,
    Built::CPie,
    Built::CStatic,
    Built::CStaticPie,
    Built::C32,
    Built::Go,
    Built::Rust,
    Built::ManySectionsObject,
    Built::BigEndian64,
    Built::BigEndian32,
    Built::NoSectionHeaders,
];

impl Built {
    /// Short name, used for the cache entry: `c-dynamic`, `go`, `many-sections.o`, ...
    pub fn name(self) -> &'static str {
        match self {
            Built::CDynamic => "c-dynamic",
            Built::CPie => "c-pie",
            Built::CStatic => "c-static",
            Built::CStaticPie => "c-static-pie",
            Built::C32 => "c32",
            Built::Go => "go",
            Built::Rust => "rust",
            Built::ManySectionsObject => "many-sections",
            Built::BigEndian64 => "s390x",
            Built::BigEndian32 => "powerpc",
            Built::NoSectionHeaders => "c-static-no-section-headers",
        }
    }

    /// Whether the result is a relocatable object rather than a program.
    pub fn is_object(self) -> bool {
        self == Built::ManySectionsObject
    }
}

const HELLO_C: &str = include_str!("programs/hello.c");
const HELLO_GO: &str = include_str!("programs/hello.go");
const HELLO_RS: &str = include_str!("programs/hello.rs");
const HELLO_S390X: &str = include_str!("programs/hello-s390x.s");
const HELLO_PPC: &str = include_str!("programs/hello-ppc.s");

const C_OUTPUT: &[u8] = b"hello from an elfsig C fixture: counter=42\n";
const GO_OUTPUT: &[u8] = b"hello from an elfsig Go fixture: counter=42\n";
const RUST_OUTPUT: &[u8] = b"hello from an elfsig Rust fixture: counter=42\n";
const S390X_OUTPUT: &[u8] = b"hello from an elfsig s390x fixture\n";
const PPC_OUTPUT: &[u8] = b"hello from an elfsig powerpc fixture\n";

/// Bumped whenever [`strip_section_headers`] changes what it produces, to invalidate the cache.
const STRIP_VERSION: &str = "1";

/// Functions and variables in the many-sections object. Each function gets a `.text.fN` and a
/// `.rela.text.fN` (it references a global) and each variable a `.data.vN`: 66,000 sections in
/// all, beyond `SHN_LORESERVE` (65,280). Functions are the realistic part but cost cc1 about
/// 0.2 ms each, variables 0.005 ms, hence the mix: the object compiles in about a second.
const MANY_FUNCTIONS: usize = 1_000;
const MANY_VARIABLES: usize = 64_000;
const _: () = assert!(2 * MANY_FUNCTIONS + MANY_VARIABLES > 0xff00 + 100);

/// Expected standard output of running the built program with no arguments on this host; `None`
/// for the object and for the programs of other architectures (see [`emulated_output`]).
/// Running [`Built::C32`] also needs a kernel that runs i386 programs
/// ([`host_runs_i386`](crate::host_runs_i386)).
pub fn expected_output(what: Built) -> Option<&'static [u8]> {
    match what {
        Built::CDynamic | Built::CPie | Built::CStatic | Built::CStaticPie | Built::C32 | Built::NoSectionHeaders => {
            Some(C_OUTPUT)
        }
        Built::Go => Some(GO_OUTPUT),
        Built::Rust => Some(RUST_OUTPUT),
        Built::ManySectionsObject | Built::BigEndian64 | Built::BigEndian32 => None,
    }
}

/// For the programs of other architectures: the qemu user-mode emulator that runs them (from
/// the Debian package `qemu-user`) and their expected standard output.
pub fn emulated_output(what: Built) -> Option<(&'static str, &'static [u8])> {
    match what {
        Built::BigEndian64 => Some(("qemu-s390x", S390X_OUTPUT)),
        Built::BigEndian32 => Some(("qemu-ppc", PPC_OUTPUT)),
        _ => None,
    }
}

/// Builds `what` (once: the result is cached in [`cache_dir`]) and returns
/// its path. Safe to call from parallel threads and processes: the first caller builds while the
/// others wait, and the file appears atomically.
///
/// Fails with a message naming what is missing, such as `gcc-multilib is not installed`, when
/// this machine lacks a tool, or with the tool's output when the build itself fails.
pub fn build(what: Built) -> Result<PathBuf, String> {
    match what {
        Built::CDynamic => gcc_program(what, &["-no-pie", "-g"]),
        Built::CPie => gcc_program(what, &["-fPIE", "-pie"]),
        Built::CStatic => gcc_program(what, &["-static"]),
        Built::CStaticPie => gcc_program(what, &["-fPIE", "-static-pie"]),
        Built::C32 => {
            check_multilib()?;
            gcc_program(what, &["-m32"])
        }
        Built::Go => go_program(),
        Built::Rust => rust_program(),
        Built::ManySectionsObject => many_sections_object(),
        Built::BigEndian64 => cross_program(what, "s390x-linux-gnu", "binutils-s390x-linux-gnu", HELLO_S390X),
        Built::BigEndian32 => cross_program(what, "powerpc-linux-gnu", "binutils-powerpc-linux-gnu", HELLO_PPC),
        Built::NoSectionHeaders => no_section_headers(),
    }
}

/// Finds a build tool or names the Debian package that provides it.
fn require(name: &str, package: &str) -> Result<PathBuf, String> {
    tool(name).ok_or_else(|| format!("{name} is not installed (Debian package {package})"))
}

/// First line of `program args`' standard output, identifying the tool's version.
pub(crate) fn version(program: &Path, args: &[&str]) -> Result<String, String> {
    let out =
        Command::new(program).args(args).output().map_err(|e| format!("cannot run {}: {e}", program.display()))?;
    let text = String::from_utf8_lossy(&out.stdout);
    match text.lines().next() {
        Some(line) if out.status.success() => Ok(line.to_string()),
        _ => Err(format!("{} {} failed: {}", program.display(), args.join(" "), String::from_utf8_lossy(&out.stderr))),
    }
}

/// Runs a build step in `work`, turning failure into a message with its output.
pub(crate) fn run(cmd: &mut Command, work: &Path) -> Result<(), String> {
    let shown = format!("{cmd:?}");
    let out = cmd.current_dir(work).output().map_err(|e| format!("cannot run {shown}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{shown} failed ({}):\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

pub(crate) fn write_source(work: &Path, name: &str, text: &str) -> Result<(), String> {
    let path = work.join(name);
    std::fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// gcc, or an error naming its package.
pub(crate) fn gcc() -> Result<PathBuf, String> {
    require("gcc", "gcc")
}

fn gcc_program(what: Built, flags: &[&str]) -> Result<PathBuf, String> {
    let gcc = gcc()?;
    let mut key = Key::new().add(what.name()).add(HELLO_C).add(version(&gcc, &["--version"])?);
    for flag in flags {
        key = key.add(flag);
    }
    cached(what.name(), &key, "", |work| {
        write_source(work, "hello.c", HELLO_C)?;
        let prefix_map = format!("-ffile-prefix-map={}=.", work.display());
        run(
            Command::new(&gcc)
                .args(["-O2", "-Wall", "-Werror", &prefix_map])
                .args(flags)
                .args(["-o", "hello", "hello.c"]),
            work,
        )?;
        Ok(work.join("hello"))
    })
}

/// `gcc -m32` without gcc-multilib finds no 32-bit startup files; ask before compiling so the
/// error names the package rather than a missing header.
fn check_multilib() -> Result<(), String> {
    let gcc = require("gcc", "gcc")?;
    let crt1 = Command::new(&gcc)
        .args(["-m32", "-print-file-name=crt1.o"])
        .output()
        .map_err(|e| format!("cannot run {}: {e}", gcc.display()))?;
    let crt1 = String::from_utf8_lossy(&crt1.stdout).trim().to_string();
    // gcc echoes the bare name back when it does not find the file.
    if Path::new(&crt1).is_absolute() && Path::new(&crt1).is_file() {
        Ok(())
    } else {
        Err("gcc-multilib is not installed (gcc -m32 finds no 32-bit crt1.o)".into())
    }
}

fn go_program() -> Result<PathBuf, String> {
    let go = require("go", "golang-go")?;
    let key = Key::new().add(Built::Go.name()).add(HELLO_GO).add(version(&go, &["version"])?);
    cached(Built::Go.name(), &key, "", |work| {
        write_source(work, "hello.go", HELLO_GO)?;
        let mut cmd = Command::new(&go);
        cmd.args(["build", "-trimpath", "-ldflags=-buildid=", "-o", "hello", "hello.go"])
            .env("CGO_ENABLED", "0")
            .env("GOTOOLCHAIN", "local")
            .env("GOPROXY", "off")
            .env("GOFLAGS", "")
            .env("GO111MODULE", "");
        // Go insists on a build cache and a GOPATH; without a home directory, keep them here.
        if std::env::var_os("HOME").is_none() {
            if std::env::var_os("GOCACHE").is_none() {
                cmd.env("GOCACHE", cache_dir().join("go-build"));
            }
            if std::env::var_os("GOPATH").is_none() {
                cmd.env("GOPATH", cache_dir().join("gopath"));
            }
        }
        run(&mut cmd, work)?;
        Ok(work.join("hello"))
    })
}

/// The `rustc` to use: the one next to the `cargo` running the tests (the exact toolchain the
/// workspace builds with), else the first on `PATH`.
fn rustc() -> Result<PathBuf, String> {
    if let Some(cargo) = std::env::var_os("CARGO") {
        let sibling = Path::new(&cargo).with_file_name("rustc");
        if sibling.is_file() {
            return Ok(sibling);
        }
    }
    require("rustc", "rustc")
}

fn rust_program() -> Result<PathBuf, String> {
    let rustc = rustc()?;
    // rustc links through the C compiler driver.
    require("cc", "gcc")?;
    let key = Key::new().add(Built::Rust.name()).add(HELLO_RS).add(version(&rustc, &["-vV"])?);
    cached(Built::Rust.name(), &key, "", |work| {
        write_source(work, "hello.rs", HELLO_RS)?;
        let remap = format!("--remap-path-prefix={}=.", work.display());
        run(
            Command::new(&rustc).args([
                "--edition=2021",
                "--crate-name=hello",
                "-Copt-level=1",
                "-Cdebuginfo=0",
                &remap,
                "-o",
                "hello",
                "hello.rs",
            ]),
            work,
        )?;
        Ok(work.join("hello"))
    })
}

/// C source with [`MANY_FUNCTIONS`] functions and [`MANY_VARIABLES`] initialised variables.
fn many_sections_source() -> String {
    use std::fmt::Write;
    let mut src = String::from(
        "/* Generated by elfsig-fixtures: one section per function and per variable. */\n\
         int many_sections_counter = 1;\n",
    );
    for i in 0..MANY_FUNCTIONS {
        let _ = writeln!(src, "int f{i}(void) {{ return many_sections_counter + {i}; }}");
    }
    for i in 0..MANY_VARIABLES {
        let _ = writeln!(src, "int v{i} = {i};");
    }
    src
}

fn many_sections_object() -> Result<PathBuf, String> {
    let gcc = require("gcc", "gcc")?;
    let source = many_sections_source();
    let flags = ["-O0", "-c", "-ffunction-sections", "-fdata-sections"];
    let mut key = Key::new().add(Built::ManySectionsObject.name()).add(&source).add(version(&gcc, &["--version"])?);
    for flag in flags {
        key = key.add(flag);
    }
    cached(Built::ManySectionsObject.name(), &key, ".o", |work| {
        write_source(work, "many.c", &source)?;
        run(Command::new(&gcc).args(flags).args(["-o", "many.o", "many.c"]), work)?;
        Ok(work.join("many.o"))
    })
}

fn cross_program(what: Built, triple: &str, package: &str, source: &str) -> Result<PathBuf, String> {
    let as_ = require(&format!("{triple}-as"), package)?;
    let ld = require(&format!("{triple}-ld"), package)?;
    let key =
        Key::new().add(what.name()).add(source).add(version(&as_, &["--version"])?).add(version(&ld, &["--version"])?);
    cached(what.name(), &key, "", |work| {
        write_source(work, "hello.s", source)?;
        run(Command::new(&as_).args(["-o", "hello.o", "hello.s"]), work)?;
        run(Command::new(&ld).args(["-o", "hello", "hello.o"]), work)?;
        Ok(work.join("hello"))
    })
}

fn no_section_headers() -> Result<PathBuf, String> {
    let input = build(Built::CStatic)?;
    // The input's cache name already hashes everything it was built from.
    let key = Key::new()
        .add(Built::NoSectionHeaders.name())
        .add(input.file_name().unwrap_or_default().as_encoded_bytes())
        .add(STRIP_VERSION);
    cached(Built::NoSectionHeaders.name(), &key, "", |work| {
        let bytes = std::fs::read(&input).map_err(|e| format!("cannot read {}: {e}", input.display()))?;
        let stripped = strip_section_headers(&bytes)?;
        let out = work.join("hello");
        write_executable(&out, &stripped).map_err(|e| format!("cannot write {}: {e}", out.display()))?;
        Ok(out)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique() {
        let mut names: Vec<_> = ALL_BUILT.iter().map(|b| b.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), ALL_BUILT.len());
    }

    #[test]
    fn a_missing_tool_names_its_package() {
        let err = require("elfsig-no-such-tool", "elfsig-no-such-package").unwrap_err();
        assert_eq!(err, "elfsig-no-such-tool is not installed (Debian package elfsig-no-such-package)");
    }

    #[test]
    fn every_program_has_exactly_one_kind_of_expected_output() {
        for &what in ALL_BUILT {
            let native = expected_output(what).is_some();
            let emulated = emulated_output(what).is_some();
            assert!(!(native && emulated), "{what:?}");
            assert_eq!(what.is_object(), !native && !emulated, "{what:?}");
        }
    }

    #[test]
    fn many_sections_source_has_enough_sections() {
        let src = many_sections_source();
        assert!(src.contains("int f999(void)"));
        assert!(src.contains("int v63999 = 63999;"));
    }
}
