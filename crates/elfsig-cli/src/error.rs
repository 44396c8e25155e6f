//! The CLI's error type: what went wrong with one file or with the command as a whole.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use elfsig_core::{Detail, Reason, Refused};

/// An error, with the message the user sees.
#[derive(Debug)]
pub enum Error {
    /// A file operation failed.
    Io {
        /// What was being done ("cannot read", ...).
        action: &'static str,
        /// On which file.
        path: PathBuf,
        /// The system's error.
        source: io::Error,
    },
    /// A file was refused: unsigned, malformed, unknown key, bad signature, modified.
    Refused {
        /// Why, in the vocabulary the kernel module shares.
        reason: Reason,
        /// More detail, when there is any.
        detail: Option<String>,
    },
    /// The command line asks for something impossible (exit status 2).
    Usage(String),
    /// Anything else.
    Msg(String),
}

impl Error {
    /// An I/O error on `path`.
    pub fn io(action: &'static str, path: &Path, source: io::Error) -> Self {
        Error::Io { action, path: path.to_owned(), source }
    }

    /// An error with a plain message.
    pub fn msg(message: impl Into<String>) -> Self {
        Error::Msg(message.into())
    }

    /// A refusal without detail.
    pub fn refused(reason: Reason) -> Self {
        Error::Refused { reason, detail: None }
    }

    /// A refusal with detail.
    pub fn refused_with(reason: Reason, detail: impl Into<String>) -> Self {
        Error::Refused { reason, detail: Some(detail.into()) }
    }

    /// A refusal by elfsig-core's verifier, reading `path`: a failed read is an I/O error on it.
    pub fn from_refusal(refused: Refused<String>, path: &Path) -> Self {
        match refused.detail {
            Detail::Parse(elfsig_core::Error::Io(e)) => Error::io("cannot read", path, crate::reader::io_error(e)),
            Detail::None => Error::refused(refused.reason),
            Detail::Trust(detail) => Error::refused_with(refused.reason, detail),
            ref detail => Error::refused_with(refused.reason, detail.to_string()),
        }
    }

    /// A short, stable name for the kind of error, used in `--json` output: the [`Reason`]'s
    /// name for refusals.
    pub fn kind(&self) -> &'static str {
        match self {
            Error::Io { .. } => Reason::IoError.name(),
            Error::Refused { reason, .. } => reason.name(),
            Error::Usage(_) => "usage",
            Error::Msg(_) => Reason::Error.name(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io { action, path, source } => write!(f, "{action} {}: {source}", path.display()),
            Error::Refused { reason, detail: None } => write!(f, "{reason}"),
            Error::Refused { reason, detail: Some(detail) } => write!(f, "{reason}: {detail}"),
            Error::Usage(message) | Error::Msg(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for Error {}

/// The kernel module's control files: not loaded, not root, locked, ...
impl From<elfsig_control::Error> for Error {
    fn from(error: elfsig_control::Error) -> Self {
        Error::Msg(error.to_string())
    }
}

/// A file or signature that cannot be parsed. Where a read may have failed,
/// [`crate::elf_file::OpenFile::core_error`] names the file instead.
impl From<elfsig_core::Error> for Error {
    fn from(error: elfsig_core::Error) -> Self {
        Error::refused_with(Reason::of(error), Detail::<String>::Parse(error).to_string())
    }
}
