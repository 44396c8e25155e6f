//! The CLI's error type: what went wrong with one file or with the command as a whole.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use elfsig_core::Rejection;

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
    Rejected {
        /// Why, in the vocabulary the kernel module shares.
        rejection: Rejection,
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
    pub fn rejected(rejection: Rejection) -> Self {
        Error::Rejected { rejection, detail: None }
    }

    /// A refusal with detail.
    pub fn rejected_with(rejection: Rejection, detail: impl Into<String>) -> Self {
        Error::Rejected { rejection, detail: Some(detail.into()) }
    }

    /// A short, stable name for the kind of error, used in `--json` output.
    pub fn kind(&self) -> &'static str {
        match self {
            Error::Io { .. } => "io",
            Error::Rejected { rejection, .. } => match rejection {
                Rejection::Unsigned => "unsigned",
                Rejection::MalformedElf(_) => "malformed-elf",
                Rejection::MalformedSignature(_) => "malformed-signature",
                Rejection::UnknownKey => "unknown-key",
                Rejection::BadSignature => "bad-signature",
                Rejection::Modified => "modified",
                Rejection::Revoked => "revoked",
                Rejection::Io => "io",
            },
            Error::Usage(_) => "usage",
            Error::Msg(_) => "error",
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io { action, path, source } => write!(f, "{action} {}: {source}", path.display()),
            Error::Rejected { rejection, detail: None } => write!(f, "{rejection}"),
            Error::Rejected { rejection, detail: Some(detail) } => write!(f, "{rejection}: {detail}"),
            Error::Usage(message) | Error::Msg(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for Error {}

impl From<elfsig_core::Error> for Error {
    fn from(error: elfsig_core::Error) -> Self {
        Error::rejected(error.into())
    }
}
