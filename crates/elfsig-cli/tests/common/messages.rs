//! What `elfsig verify` says about a file it refuses (the other commands say the same about a
//! file they cannot read), and the check that `verify` refused a file with the right message.

use super::{Keys, Scratch, verify};

// The file is signed, but not as it is now, or not by a trusted key.
pub const MODIFIED: &str = "modified since it was signed: digest mismatch";
pub const MOVED: &str = "modified since it was signed: its length or signature position is not what was signed";
pub const BAD_SIGNATURE: &str = "bad signature (the signature does not verify)";
pub const NOT_SIGNED: &str = "not signed";
/// Followed by the signer's name.
pub const UNKNOWN_KEY: &str = "signed by an unknown key: signer is ";

/// The start of every message about a file that is not well-formed ELF.
pub const MALFORMED_ELF: &str = "malformed ELF: ";
pub const NOT_ELF: &str = "malformed ELF: not an ELF file";
pub const SHORTER_THAN_ELF_HEADER: &str = "malformed ELF: file is shorter than its ELF header";
pub const SECTION_TABLE_PAST_END: &str = "malformed ELF: section header table extends past the end of the file";
pub const PROGRAM_TABLE_PAST_END: &str = "malformed ELF: program header table extends past the end of the file";
pub const HEADERS_OVERLAP: &str = "malformed ELF: ELF header, program headers and section headers overlap";
pub const NAME_TABLE_INDEX: &str = "malformed ELF: section-name table index out of range";
pub const SECTION_COUNTS: &str = "malformed ELF: section count fields are inconsistent";

pub fn section_past_end(index: usize) -> String {
    format!("malformed ELF: section {index} extends past the end of the file")
}

pub fn section_over_headers(index: usize) -> String {
    format!("malformed ELF: section {index} overlaps the ELF header or section header table")
}

pub fn segment_past_end(index: usize) -> String {
    format!("malformed ELF: segment {index} extends past the end of the file")
}

pub fn unknown_class(class: u8) -> String {
    format!("malformed ELF: unknown ELF class {class}")
}

pub fn unknown_data_encoding(data: u8) -> String {
    format!("malformed ELF: unknown ELF data encoding {data}")
}

pub fn unknown_version(version: u8) -> String {
    format!("malformed ELF: unknown ELF version {version}")
}

/// The start of every message about a signature that is not well formed.
pub const MALFORMED_SIGNATURE: &str = "malformed signature: ";
/// The PKCS#7 blob is not one DER structure filling the rest of the payload (no detail: the
/// blob is not even parsed).
pub const BAD_CMS: &str = "malformed signature: PKCS#7 signature is not well formed";
pub const SIGNATURE_NOT_LAST: &str = "malformed signature: signature section is not the last section";
// What a trailer that no longer describes the payload gives.
pub const PAYLOAD_SIZE: &str = "malformed signature: signature payload size out of bounds";
pub const PAYLOAD_PAST_END: &str =
    "malformed signature: signature payload extends past the end of the file or into its trailer";
pub const PAYLOAD_OVER_HEADERS: &str =
    "malformed signature: signature payload overlaps the ELF header, program headers or section headers";
pub const BAD_RECORD_MAGIC: &str = "malformed signature: signed record has a bad magic";

pub fn unsupported_format_version(version: u16) -> String {
    format!("malformed signature: unsupported format version {version}")
}

/// Every message `verify` may give for a file it refuses (the core's `Reason` vocabulary).
pub const REJECTIONS: &[&str] = &[
    NOT_SIGNED,
    MALFORMED_ELF,
    MALFORMED_SIGNATURE,
    "signed by an unknown key",
    BAD_SIGNATURE,
    "modified since it was signed: ",
];

/// What `verify` must say about a file.
#[derive(Clone, Copy, Debug)]
pub enum Says {
    /// Exactly this message.
    Exactly(&'static str),
    /// A message starting with this.
    StartsWith(&'static str),
}

impl Says {
    pub fn matches(self, message: &str) -> bool {
        match self {
            Says::Exactly(expected) => message == expected,
            Says::StartsWith(expected) => message.starts_with(expected),
        }
    }
}

/// Writes `bytes` as `name` and checks that `verify` refuses it: exit status 1, nothing on
/// standard output, and one line on standard error, `elfsig: FILE: <message>`. Returns the
/// message.
pub fn refused(keys: &Keys, scratch: &Scratch, name: &str, bytes: &[u8], says: Says) -> String {
    let path = scratch.write(name, bytes);
    let assert = verify(keys, &path).code(1);
    let output = assert.get_output();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stdout.is_empty(), "{name}: verify printed {stdout:?}");
    let prefix = format!("elfsig: {}: ", path.display());
    let message = stderr
        .strip_suffix('\n')
        .and_then(|line| line.strip_prefix(&prefix))
        .filter(|m| !m.contains('\n'))
        .unwrap_or_else(|| panic!("{name}: unexpected standard error {stderr:?}"));
    match says {
        Says::Exactly(expected) => assert_eq!(message, expected, "{name}"),
        Says::StartsWith(expected) => {
            assert!(message.starts_with(expected), "{name}: {message:?} does not start with {expected:?}")
        }
    }
    assert!(says.matches(message));
    message.to_owned()
}
