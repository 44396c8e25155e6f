//! Errors: why a file is not a well-formed ELF, why its signature cannot be parsed, and why a file
//! is refused.
//!
//! All of them are small `Copy` values so that the kernel can return them without allocating.

use core::fmt;

use super::IoError;

/// Any failure while parsing a file or its signature.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    /// Reading the file failed, or it ended before a range that its own headers promised.
    Io(IoError),
    /// The file is not a well-formed ELF file.
    Elf(ElfError),
    /// The file carries a signature section that is not well formed.
    Signature(SignatureError),
}

/// Why a file is not a well-formed ELF file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ElfError {
    /// The file does not start with the ELF magic `\x7fELF`.
    NotElf,
    /// The file is shorter than its ELF header.
    TruncatedHeader,
    /// `EI_CLASS` is neither ELFCLASS32 nor ELFCLASS64.
    BadClass(u8),
    /// `EI_DATA` is neither little- nor big-endian.
    BadEncoding(u8),
    /// `EI_VERSION` is not EV_CURRENT.
    BadVersion(u8),
    /// `e_phentsize` does not match the class.
    BadProgramHeaderSize(u16),
    /// `e_shentsize` does not match the class.
    BadSectionHeaderSize(u16),
    /// The program header table extends past the end of the file.
    ProgramHeadersOutOfBounds,
    /// The section header table extends past the end of the file.
    SectionHeadersOutOfBounds,
    /// `e_shoff`, `e_shnum`, `e_shstrndx` and section 0 contradict each other.
    InconsistentSectionCount,
    /// `e_phnum` is `PN_XNUM` but there is no section 0 to hold the real count.
    InconsistentSegmentCount,
    /// `e_shstrndx` names no section.
    BadNamesIndex,
    /// The section-name table is not of type `SHT_STRTAB`.
    NamesNotStringTable,
    /// A segment's file range extends past the end of the file.
    SegmentOutOfBounds {
        /// Index of the program header.
        index: u64,
    },
    /// A section's contents extend past the end of the file.
    SectionOutOfBounds {
        /// Index of the section header.
        index: u64,
    },
    /// A section's name lies outside the section-name table.
    SectionNameOutOfBounds {
        /// Index of the section header.
        index: u64,
    },
    /// Two of the ELF header, program header table and section header table overlap.
    TablesOverlap,
    /// A section's contents overlap the ELF header or the section header table.
    SectionOverlapsTable {
        /// Index of the section header.
        index: u64,
    },
    /// An offset or count does not fit the file's class (ELF32 offsets are 32-bit).
    TooLarge,
    /// The `PT_INTERP` segment is shorter than 2 bytes, longer than `PATH_MAX`, or extends past
    /// the end of the file.
    BadInterpreter,
}

/// Why a signature section cannot be parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SignatureError {
    /// The payload is smaller than [`super::MIN_PAYLOAD_LEN`] or larger than
    /// [`super::MAX_PAYLOAD_LEN`].
    PayloadSize,
    /// The payload extends past the end of the file (or into the trailer that points at it).
    PayloadOutOfBounds,
    /// The payload overlaps the ELF header, the program header table or the section header
    /// table.
    PayloadOverlapsHeaders,
    /// The record does not start with [`super::record::RECORD_MAGIC`].
    BadMagic,
    /// The record has a format version this parser does not know.
    UnsupportedVersion(u16),
    /// The record names a hash algorithm this parser does not know.
    UnsupportedHash(u16),
    /// A reserved field of the record is not zero.
    ReservedNotZero,
    /// A version 2 record names entitlements this parser does not know (these bits), or none.
    UnknownEntitlements(u32),
    /// The payload lies inside a segment, where a loader would map it.
    PayloadInSegment,
    /// The record contradicts itself (payload outside the signed length, original file longer
    /// than the part before the payload, ...).
    InconsistentRecord,
    /// The PKCS#7 blob is not one DER SEQUENCE filling the rest of the payload.
    BadCms,
    /// A signature section exists but is not the last section header.
    NotLast,
    /// More than one signature section exists.
    Duplicate,
}

/// Why a file is refused: one vocabulary for the CLI's messages and `--json` output, the kernel
/// module's counters and its log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    /// The file is a well-formed ELF without a signature.
    Unsigned,
    /// The file is not a well-formed ELF.
    MalformedElf,
    /// The signature cannot be parsed.
    MalformedSignature,
    /// The signature names a key that is not trusted.
    UnknownKey,
    /// The signature does not verify with the key it names.
    BadSignature,
    /// The signature is valid but the file is not what was signed.
    Modified,
    /// The signed content has been revoked.
    Revoked,
    /// The file could not be read.
    IoError,
    /// Verification could not run: out of memory, a failing hash or keyring.
    Error,
    /// A policy, not a verification, refuses it: the dynamic loader run directly while the
    /// kernel module's loader policy is `deny`.
    LoaderExec,
    /// A policy, not a verification, refuses it: a file mapping that was not executable asked
    /// to become executable (`mprotect`), which the kernel module's mapping guard refuses
    /// because it cannot read the file at that point to verify it.
    MadeExecutable,
    /// A policy, not a verification, refuses it: the file lives on a mount the kernel does
    /// not trust (a superblock a user namespace owns, FUSE), which the kernel module refuses
    /// unless its administrator allows such mounts.
    UntrustedMount,
    /// A policy, not a verification, refuses it: a file whose writers the kernel does not
    /// count (a memfd, SysV shared memory), not sealed against writes, shrinking and growing.
    Unsealed,
    /// A policy, not a verification, refuses it: someone has the file open for writing, so
    /// what was verified is not sure to be what runs.
    OpenForWriting,
    /// A policy, not a verification, refuses it: the program makes memory executable at run
    /// time (anonymous memory, a mapping writable and executable, an executable stack), which
    /// the kernel module allows only to programs signed with the `jit` entitlement.
    NeedsJit,
    /// A policy, not a verification, refuses it: the program traces another process or opens
    /// a process's memory for writing (`ptrace`, `process_vm_writev`, `/proc/PID/mem`), which
    /// the kernel module allows only to programs signed with the `debugger` entitlement.
    NeedsDebugger,
}

impl Reason {
    /// Every reason, in the order the kernel module's counters list them.
    pub const ALL: [Reason; 16] = [
        Reason::Unsigned,
        Reason::MalformedElf,
        Reason::MalformedSignature,
        Reason::UnknownKey,
        Reason::BadSignature,
        Reason::Modified,
        Reason::Revoked,
        Reason::IoError,
        Reason::Error,
        Reason::LoaderExec,
        Reason::MadeExecutable,
        Reason::UntrustedMount,
        Reason::Unsealed,
        Reason::OpenForWriting,
        Reason::NeedsJit,
        Reason::NeedsDebugger,
    ];

    /// The reason's name: the kernel module's counter and log word, and the CLI's `--json`
    /// error kind.
    pub fn name(self) -> &'static str {
        match self {
            Reason::Unsigned => "unsigned",
            Reason::MalformedElf => "malformed_elf",
            Reason::MalformedSignature => "malformed_signature",
            Reason::UnknownKey => "unknown_key",
            Reason::BadSignature => "bad_signature",
            Reason::Modified => "modified",
            Reason::Revoked => "revoked",
            Reason::IoError => "io_error",
            Reason::Error => "error",
            Reason::LoaderExec => "loader_exec",
            Reason::MadeExecutable => "made_executable",
            Reason::UntrustedMount => "untrusted_mount",
            Reason::Unsealed => "unsealed",
            Reason::OpenForWriting => "open_for_writing",
            Reason::NeedsJit => "needs_jit",
            Reason::NeedsDebugger => "needs_debugger",
        }
    }

    /// The reason for a file that cannot be parsed.
    pub fn of(error: Error) -> Self {
        match error {
            Error::Io(_) => Reason::IoError,
            Error::Elf(_) => Reason::MalformedElf,
            Error::Signature(_) => Reason::MalformedSignature,
        }
    }
}

impl Error {
    /// The file ended before a range its own headers promise.
    pub const END: Error = Error::Io(IoError::End);
}

impl From<ElfError> for Error {
    fn from(e: ElfError) -> Self {
        Error::Elf(e)
    }
}

impl From<SignatureError> for Error {
    fn from(e: SignatureError) -> Self {
        Error::Signature(e)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io(e) => write!(f, "{e}"),
            Error::Elf(e) => write!(f, "malformed ELF: {e}"),
            Error::Signature(e) => write!(f, "malformed signature: {e}"),
        }
    }
}

impl fmt::Display for ElfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ElfError::NotElf => f.write_str("not an ELF file"),
            ElfError::TruncatedHeader => f.write_str("file is shorter than its ELF header"),
            ElfError::BadClass(c) => write!(f, "unknown ELF class {c}"),
            ElfError::BadEncoding(d) => write!(f, "unknown ELF data encoding {d}"),
            ElfError::BadVersion(v) => write!(f, "unknown ELF version {v}"),
            ElfError::BadProgramHeaderSize(s) => write!(f, "program header size {s} does not match the class"),
            ElfError::BadSectionHeaderSize(s) => write!(f, "section header size {s} does not match the class"),
            ElfError::ProgramHeadersOutOfBounds => f.write_str("program header table extends past the end of the file"),
            ElfError::SectionHeadersOutOfBounds => f.write_str("section header table extends past the end of the file"),
            ElfError::InconsistentSectionCount => f.write_str("section count fields are inconsistent"),
            ElfError::InconsistentSegmentCount => f.write_str("extended program header count without a section 0"),
            ElfError::BadNamesIndex => f.write_str("section-name table index out of range"),
            ElfError::NamesNotStringTable => f.write_str("section-name table is not a string table"),
            ElfError::SegmentOutOfBounds { index } => write!(f, "segment {index} extends past the end of the file"),
            ElfError::SectionOutOfBounds { index } => write!(f, "section {index} extends past the end of the file"),
            ElfError::SectionNameOutOfBounds { index } => {
                write!(f, "name of section {index} lies outside the name table")
            }
            ElfError::TablesOverlap => f.write_str("ELF header, program headers and section headers overlap"),
            ElfError::SectionOverlapsTable { index } => {
                write!(f, "section {index} overlaps the ELF header or section header table")
            }
            ElfError::TooLarge => f.write_str("an offset or count does not fit the ELF class"),
            ElfError::BadInterpreter => {
                f.write_str("the interpreter's path (PT_INTERP) is empty, too long or past the end")
            }
        }
    }
}

impl fmt::Display for SignatureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            SignatureError::PayloadSize => f.write_str("signature payload size out of bounds"),
            SignatureError::PayloadOutOfBounds => {
                f.write_str("signature payload extends past the end of the file or into its trailer")
            }
            SignatureError::PayloadOverlapsHeaders => {
                f.write_str("signature payload overlaps the ELF header, program headers or section headers")
            }
            SignatureError::BadMagic => f.write_str("signed record has a bad magic"),
            SignatureError::UnsupportedVersion(v) => write!(f, "unsupported format version {v}"),
            SignatureError::UnsupportedHash(h) => write!(f, "unsupported hash algorithm {h}"),
            SignatureError::ReservedNotZero => f.write_str("reserved field of the signed record is not zero"),
            SignatureError::UnknownEntitlements(0) => f.write_str("version 2 signed record without entitlements"),
            SignatureError::UnknownEntitlements(bits) => {
                write!(f, "unknown entitlements {bits:#x} in the signed record")
            }
            SignatureError::PayloadInSegment => f.write_str("signature payload lies inside a loadable segment"),
            SignatureError::InconsistentRecord => f.write_str("signed record contradicts itself"),
            SignatureError::BadCms => f.write_str("PKCS#7 signature is not well formed"),
            SignatureError::NotLast => f.write_str("signature section is not the last section"),
            SignatureError::Duplicate => f.write_str("more than one signature section"),
        }
    }
}

impl fmt::Display for IoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            IoError::Errno(errno) => write!(f, "read error (errno {errno})"),
            IoError::End => f.write_str("file is shorter than its headers say"),
        }
    }
}

/// The sentence the CLI prints; [`Reason::name`] is the word machines read.
impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Reason::Unsigned => "not signed",
            Reason::MalformedElf => "malformed ELF",
            Reason::MalformedSignature => "malformed signature",
            Reason::UnknownKey => "signed by an unknown key",
            Reason::BadSignature => "bad signature (the signature does not verify)",
            Reason::Modified => "modified since it was signed",
            Reason::Revoked => "revoked",
            Reason::IoError => "read error",
            Reason::Error => "verification failed",
            Reason::LoaderExec => "the dynamic loader may not be run directly",
            Reason::MadeExecutable => "a file mapping may not be made executable",
            Reason::UntrustedMount => "on a mount the kernel does not trust (a user namespace's, FUSE)",
            Reason::Unsealed => "a memfd or shared memory not sealed against writes",
            Reason::OpenForWriting => "open for writing",
            Reason::NeedsJit => "makes memory executable without the jit entitlement",
            Reason::NeedsDebugger => "traces or writes process memory without the debugger entitlement",
        })
    }
}
