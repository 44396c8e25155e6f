//! What can go wrong talking to the module, with the message an administrator acts on.

use std::fmt;
use std::io;
use std::path::PathBuf;

/// An error reading or writing a control file.
#[derive(Debug)]
pub enum Error {
    /// The control directory does not exist.
    NotLoaded {
        /// The directory looked for.
        dir: PathBuf,
        /// Whether securityfs, where it would be, is mounted at all.
        securityfs_mounted: bool,
    },
    /// Opening a control file was refused: the files are root's, and writing needs
    /// CAP_SYS_ADMIN too.
    NotRoot {
        /// "reading" or "changing".
        action: &'static str,
        /// The file.
        file: PathBuf,
    },
    /// The module is locked and refuses the change until reboot.
    Locked {
        /// What was asked, as a phrase ("switching to permissive").
        change: String,
    },
    /// The module refused what was written for another reason.
    Refused {
        /// The file.
        file: PathBuf,
        /// What was written.
        value: String,
        /// The module's error.
        source: io::Error,
    },
    /// The module refused a policy.
    PolicyRefused {
        /// Why, from its errno.
        why: &'static str,
        /// The module's error.
        source: io::Error,
    },
    /// A file read back something this version does not understand.
    Unexpected {
        /// The file.
        file: PathBuf,
        /// The line, or the part of it, not understood.
        content: String,
    },
    /// Any other failure of the system.
    Io {
        /// What was being done ("cannot read").
        action: &'static str,
        /// On which file.
        file: PathBuf,
        /// The system's error.
        source: io::Error,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::NotLoaded { dir, securityfs_mounted: true } => {
                write!(f, "the elfsig module is not loaded (no {})", dir.display())
            }
            Error::NotLoaded { dir, securityfs_mounted: false } => write!(
                f,
                "no {}: securityfs is not mounted (mount -t securityfs securityfs /sys/kernel/security), \
                 or the elfsig module is not loaded",
                dir.display()
            ),
            Error::NotRoot { action, file } => {
                write!(f, "{action} {} needs root (CAP_SYS_ADMIN)", file.display())
            }
            Error::Locked { change } => {
                write!(f, "the module is locked until reboot and refuses {change}")
            }
            Error::Refused { file, value, source } => {
                write!(f, "the module refused {value:?} written to {}: {source}", file.display())
            }
            Error::PolicyRefused { why, source } => {
                write!(f, "the module refused the policy: {why} ({source}; the kernel log says more)")
            }
            Error::Unexpected { file, content } => write!(
                f,
                "{} says {content:?}, which this version of elfsig does not understand (is the module newer?)",
                file.display()
            ),
            Error::Io { action, file, source } => write!(f, "{action} {}: {source}", file.display()),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Refused { source, .. } | Error::PolicyRefused { source, .. } | Error::Io { source, .. } => {
                Some(source)
            }
            _ => None,
        }
    }
}
