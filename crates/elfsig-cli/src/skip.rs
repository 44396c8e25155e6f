//! What `--recursive` leaves alone in a real tree, and why: files that are not programs or
//! libraries the kernel runs or maps, or whose last bytes belong to someone else. Files named
//! on the command line are never skipped: asking for a file by name gets its error.

use std::os::unix::fs::FileExt;
use std::path::Path;

use elfsig_core::elf::{SHT_NOBITS, SHT_PROGBITS};
use elfsig_core::{FileHeader, SectionTable};

use crate::architecture::Machines;
use crate::elf_file::OpenFile;

/// `e_type` of relocatable objects (`.o`, kernel modules).
const ET_REL: u16 = 1;
/// `e_type` of core dumps.
const ET_CORE: u16 = 4;
/// Section flag: holds machine code.
const SHF_EXECINSTR: u64 = 4;
/// How many section headers are looked at to tell a debug file.
const MAX_SECTIONS: u64 = 4096;

/// Where a file is found, which some of the reasons to leave it alone depend on.
#[derive(Clone, Copy, Debug)]
pub enum Place<'a> {
    /// In a tree `--recursive` walks, which may be a system's copy (`./root/usr/...`): firmware
    /// is whatever a `lib/firmware` directory holds.
    Tree(&'a Path),
    /// In a package, by the path it is installed at, relative to `/`: firmware and debug files
    /// count as such only where Debian installs them (`lib/firmware`, `usr/lib/firmware`,
    /// `usr/lib/debug`), so that a package cannot have a program left alone by where it puts it.
    Installed(&'a Path),
    /// In a container image's layer, by its path in the image's root: nothing is left alone
    /// by where it is (a directory of a lower layer may be a symbolic link that puts a file of
    /// `lib/firmware` elsewhere); debug files by what they hold, as in a tree.
    Image(&'a Path),
}

/// Why a file found while walking a directory is left alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Skip {
    /// Not ELF at all: scripts, data, archives (`.a`), compressed kernel modules.
    NotElf,
    /// A kernel module (`.ko`): the kernel's own signature is appended to it and must stay
    /// last; `scripts/sign-file` signs it.
    KernelModule,
    /// A relocatable object (`.o`): linked into programs, never run or mapped.
    Object,
    /// A separate debug file (`/usr/lib/debug/...`): sections without code, never run.
    DebugFile,
    /// A core dump.
    CoreDump,
    /// Firmware (`/lib/firmware`): loaded by the kernel or a device, never run; some checks
    /// its own headers (Qualcomm's `.mdt`), which signing would change.
    Firmware,
    /// Code for another architecture, which this kernel runs only through an emulator
    /// (binfmt_misc and qemu-user): sign it by name to run it so.
    Foreign,
    /// Another name (hard link) of a file signed under its first name: linked to the signed
    /// file afterwards (see `links.rs`).
    OtherName,
}

impl Skip {
    /// Why, for the note about the file.
    pub fn why(self) -> &'static str {
        match self {
            Skip::NotElf => "not an ELF file",
            Skip::KernelModule => {
                "a kernel module, whose own signature must stay last (sign it with the kernel's sign-file)"
            }
            Skip::Object => "a relocatable object, never run or mapped",
            Skip::DebugFile => "a separate debug file, without code",
            Skip::CoreDump => "a core dump",
            Skip::Firmware => "firmware, which the kernel loads but never runs",
            Skip::Foreign => "code for another architecture (sign it by name to run it under an emulator)",
            Skip::OtherName => "another name of a file signed under its first name",
        }
    }

    /// What the summary calls `count` of them: "1 kernel module", "2 kernel modules".
    pub fn counted(self, count: usize) -> String {
        let plural = self.plural();
        let singular = match self {
            Skip::KernelModule | Skip::Object | Skip::DebugFile | Skip::CoreDump | Skip::Firmware => {
                plural.strip_suffix('s').unwrap_or(plural)
            }
            Skip::OtherName => "other name of a signed file",
            _ => plural,
        };
        format!("{count} {}", if count == 1 { singular } else { plural })
    }

    /// What the summary calls a number of them.
    pub fn plural(self) -> &'static str {
        match self {
            Skip::NotElf => "not ELF",
            Skip::KernelModule => "kernel modules",
            Skip::Object => "objects",
            Skip::DebugFile => "debug files",
            Skip::CoreDump => "core dumps",
            Skip::Firmware => "firmware files",
            Skip::Foreign => "for other architectures",
            Skip::OtherName => "other names of signed files",
        }
    }

    /// What an installed path (relative to `/`) may hold that is left alone by where it is:
    /// firmware, or debug files.
    pub fn at(path: &Path) -> Option<Skip> {
        if path.starts_with("lib/firmware") || path.starts_with("usr/lib/firmware") {
            Some(Skip::Firmware)
        } else if path.starts_with("usr/lib/debug") {
            Some(Skip::DebugFile)
        } else {
            None
        }
    }

    /// Whether every such file gets a note here (files that are not ELF are only counted: a
    /// system's tree holds thousands; other names get theirs once linked).
    pub fn noted(self) -> bool {
        !matches!(self, Skip::NotElf | Skip::OtherName)
    }

    /// Why `path` is left alone, if it is, on this machine (whose architecture says which
    /// machines' code is foreign). A file that cannot be read or parsed is not skipped: signing
    /// or verifying it reports what is wrong.
    pub fn classify(path: &Path) -> Option<Skip> {
        // A file that cannot be opened or read is not skipped: signing or verifying it says why.
        let file = OpenFile::open(path).ok()?;
        Skip::classify_open(&file, Place::Tree(path), &Machines::host())
    }

    /// Why `file`, found at `place` for an architecture running `native`, is left alone, if
    /// it is.
    pub fn classify_open(file: &OpenFile, place: Place<'_>, native: &Machines) -> Option<Skip> {
        let mut magic = [0u8; 4];
        match file.file.read_exact_at(&mut magic, 0) {
            Ok(()) if magic == *b"\x7fELF" => {}
            Ok(()) => return Some(Skip::NotElf),
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Some(Skip::NotElf),
            Err(_) => return None,
        }
        let path = match place {
            Place::Tree(path) if path.iter().zip(path.iter().skip(1)).any(|(a, b)| a == "lib" && b == "firmware") => {
                return Some(Skip::Firmware);
            }
            Place::Installed(path) if Skip::at(path) == Some(Skip::Firmware) => return Some(Skip::Firmware),
            Place::Tree(path) | Place::Installed(path) | Place::Image(path) => path,
        };
        let mut reader = file.reader();
        let header = FileHeader::read(&mut reader, file.size()).ok()?;
        if !native.runs(header.e_machine) {
            return Some(Skip::Foreign);
        }
        match header.e_type {
            ET_REL if path.extension().is_some_and(|e| e == "ko") => Some(Skip::KernelModule),
            ET_REL => Some(Skip::Object),
            ET_CORE => Some(Skip::CoreDump),
            _ => {
                // A debug file made by `objcopy --only-keep-debug` keeps the section headers
                // of the code, as NOBITS; a program or library has the code itself.
                let table = SectionTable::read(&header, &mut reader, file.size()).ok()??;
                let (mut code, mut code_left_out) = (false, false);
                // Debug files have tens of sections; a table of thousands is no debug file.
                for index in 1..=table.last_index().min(MAX_SECTIONS) {
                    let section = table.entry(&mut reader, index).ok()?;
                    if section.sh_flags & SHF_EXECINSTR != 0 {
                        code |= section.sh_type == SHT_PROGBITS;
                        code_left_out |= section.sh_type == SHT_NOBITS;
                    }
                }
                let debug_place = match place {
                    Place::Tree(_) | Place::Image(_) => true,
                    Place::Installed(path) => Skip::at(path) == Some(Skip::DebugFile),
                };
                (code_left_out && !code && debug_place).then_some(Skip::DebugFile)
            }
        }
    }
}
