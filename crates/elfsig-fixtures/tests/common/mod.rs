//! Helpers shared by the integration tests: a scratch directory, a minimal ELF header reader
//! (independent of the generator, so the tests do not check the code against itself), and
//! wrappers for readelf and eu-elflint.
#![allow(dead_code)] // each test file uses a different subset

use std::path::{Path, PathBuf};
use std::process::Command;

use elfsig_fixtures::{cache_dir, system_binary};

/// A directory under the fixture cache, removed when dropped.
pub(crate) struct Scratch(PathBuf);

impl Scratch {
    pub(crate) fn new(name: &str) -> Scratch {
        let dir = cache_dir().join("scratch").join(format!("{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    pub(crate) fn path(&self) -> &Path {
        &self.0
    }

    /// Writes an executable file and returns its path.
    pub(crate) fn write(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let path = self.0.join(name);
        elfsig_fixtures::write_executable(&path, bytes).unwrap();
        path
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The program, or `None` after printing why the calling test skips.
pub(crate) fn tool_or_skip(name: &str, package: &str) -> Option<PathBuf> {
    let found = system_binary(name);
    if found.is_none() {
        eprintln!("skipped: {name} is not installed (Debian package {package})");
    }
    found
}

/// Runs `readelf -a -W` and panics if it writes anything to stderr or a stdout line contains one
/// of `bad` (readelf's diagnostics say "Warning" or "Error"; real binaries have symbols with
/// such words in their names, so tests of those pass "Warning:" and "Error:").
pub(crate) fn assert_readelf_clean(readelf: &Path, file: &Path, bad: &[&str]) {
    let out = Command::new(readelf).args(["-a", "-W"]).arg(file).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{}: readelf failed: {stderr}", file.display());
    assert!(stderr.is_empty(), "{}: readelf stderr: {stderr}", file.display());
    for bad in bad {
        if let Some(line) = stdout.lines().find(|l| l.contains(bad)) {
            panic!("{}: readelf says {line:?}", file.display());
        }
    }
}

/// Runs `eu-elflint` (default, non-strict mode) and returns its exit status and output lines.
pub(crate) fn elflint(elflint: &Path, file: &Path, extra: &[&str]) -> (bool, Vec<String>) {
    let out = Command::new(elflint).args(extra).arg(file).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), text.lines().map(str::to_string).collect())
}

/// The ELF header fields the tests look at, read by hand.
#[derive(Debug)]
pub(crate) struct Header {
    pub(crate) is64: bool,
    pub(crate) big: bool,
    pub(crate) e_type: u16,
    pub(crate) e_machine: u16,
    pub(crate) e_entry: u64,
    pub(crate) e_phoff: u64,
    pub(crate) e_shoff: u64,
    pub(crate) e_ehsize: u16,
    pub(crate) e_phentsize: u16,
    pub(crate) e_phnum: u16,
    pub(crate) e_shentsize: u16,
    pub(crate) e_shnum: u16,
    pub(crate) e_shstrndx: u16,
}

/// One program header.
#[derive(Debug)]
pub(crate) struct Phdr {
    pub(crate) p_type: u32,
    pub(crate) p_flags: u32,
    pub(crate) p_offset: u64,
    pub(crate) p_vaddr: u64,
    pub(crate) p_filesz: u64,
    pub(crate) p_memsz: u64,
    pub(crate) p_align: u64,
}

/// Reads fields of an ELF image in its own class and byte order.
pub(crate) struct Elf<'a> {
    pub(crate) bytes: &'a [u8],
    pub(crate) h: Header,
}

impl<'a> Elf<'a> {
    pub(crate) fn parse(bytes: &'a [u8]) -> Elf<'a> {
        assert_eq!(&bytes[..4], b"\x7fELF");
        let is64 = match bytes[4] {
            1 => false,
            2 => true,
            c => panic!("bad class {c}"),
        };
        let big = match bytes[5] {
            1 => false,
            2 => true,
            d => panic!("bad data {d}"),
        };
        let mut e = Elf {
            bytes,
            h: Header {
                is64,
                big,
                e_type: 0,
                e_machine: 0,
                e_entry: 0,
                e_phoff: 0,
                e_shoff: 0,
                e_ehsize: 0,
                e_phentsize: 0,
                e_phnum: 0,
                e_shentsize: 0,
                e_shnum: 0,
                e_shstrndx: 0,
            },
        };
        e.h.e_type = e.u16(16);
        e.h.e_machine = e.u16(18);
        let w = if is64 { 8 } else { 4 };
        e.h.e_entry = e.word(24);
        e.h.e_phoff = e.word(24 + w);
        e.h.e_shoff = e.word(24 + 2 * w);
        let rest = 24 + 3 * w + 4; // after e_flags
        e.h.e_ehsize = e.u16(rest);
        e.h.e_phentsize = e.u16(rest + 2);
        e.h.e_phnum = e.u16(rest + 4);
        e.h.e_shentsize = e.u16(rest + 6);
        e.h.e_shnum = e.u16(rest + 8);
        e.h.e_shstrndx = e.u16(rest + 10);
        e
    }

    fn take<const N: usize>(&self, at: u64) -> [u8; N] {
        let at = usize::try_from(at).unwrap();
        self.bytes[at..at + N].try_into().unwrap()
    }

    pub(crate) fn u16(&self, at: u64) -> u16 {
        let b = self.take(at);
        if self.h.big { u16::from_be_bytes(b) } else { u16::from_le_bytes(b) }
    }

    pub(crate) fn u32(&self, at: u64) -> u32 {
        let b = self.take(at);
        if self.h.big { u32::from_be_bytes(b) } else { u32::from_le_bytes(b) }
    }

    pub(crate) fn u64(&self, at: u64) -> u64 {
        let b = self.take(at);
        if self.h.big { u64::from_be_bytes(b) } else { u64::from_le_bytes(b) }
    }

    pub(crate) fn word(&self, at: u64) -> u64 {
        if self.h.is64 { self.u64(at) } else { u64::from(self.u32(at)) }
    }

    pub(crate) fn phdrs(&self) -> Vec<Phdr> {
        (0..u64::from(self.h.e_phnum))
            .map(|i| {
                let at = self.h.e_phoff + i * u64::from(self.h.e_phentsize);
                if self.h.is64 {
                    Phdr {
                        p_type: self.u32(at),
                        p_flags: self.u32(at + 4),
                        p_offset: self.u64(at + 8),
                        p_vaddr: self.u64(at + 16),
                        p_filesz: self.u64(at + 32),
                        p_memsz: self.u64(at + 40),
                        p_align: self.u64(at + 48),
                    }
                } else {
                    Phdr {
                        p_type: self.u32(at),
                        p_offset: u64::from(self.u32(at + 4)),
                        p_vaddr: u64::from(self.u32(at + 8)),
                        p_filesz: u64::from(self.u32(at + 16)),
                        p_memsz: u64::from(self.u32(at + 20)),
                        p_flags: self.u32(at + 24),
                        p_align: u64::from(self.u32(at + 28)),
                    }
                }
            })
            .collect()
    }

    /// `(sh_size, sh_link)` of section 0, where extended numbering keeps the real counts.
    pub(crate) fn section0_size_link(&self) -> (u64, u32) {
        let at = self.h.e_shoff;
        if self.h.is64 {
            (self.u64(at + 32), self.u32(at + 40))
        } else {
            (u64::from(self.u32(at + 20)), self.u32(at + 24))
        }
    }

    /// Number of section headers, following extended numbering.
    pub(crate) fn section_count(&self) -> u64 {
        if self.h.e_shoff == 0 {
            0
        } else if self.h.e_shnum == 0 {
            self.section0_size_link().0
        } else {
            u64::from(self.h.e_shnum)
        }
    }

    /// End of the last byte any segment's file image covers.
    pub(crate) fn segments_end(&self) -> u64 {
        self.phdrs().iter().map(|p| p.p_offset + p.p_filesz).max().unwrap_or(0)
    }
}

pub(crate) const PT_LOAD: u32 = 1;
pub(crate) const PT_INTERP: u32 = 3;
pub(crate) const ET_REL: u16 = 1;
pub(crate) const ET_EXEC: u16 = 2;
pub(crate) const ET_DYN: u16 = 3;
