// SPDX-License-Identifier: GPL-2.0

//! Refusals: why a file is refused, in elfsig-core's vocabulary with what the kernel adds
//! ([`Failure`]), what it was refused for ([`Access`]), and reporting one: counted, logged and
//! audited, or in permissive mode all of that and allowed ([`report`]).

use core::fmt;

use kernel::error::Error;

use crate::elfsig_core::{Detail, Reason, Refused};
use crate::glue::audit;
use crate::glue::file::FileRef;
use crate::state::STATE;
use crate::text::Message;

/// What the kernel adds to a refusal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum KernelDetail {
    /// The kernel call behind it failed with this errno.
    Errno(i32),
    /// The ELF interpreter binfmt_elf mapped is not the file checked for the exec.
    Replaced,
    /// An overlayfs file opened before its copy-up: it maps the file it opened, not the copy
    /// it reads.
    CopiedUp,
    /// The file's SHA-256 digest is revoked: it is in `.blacklist`, or the policy lists it.
    Revoked([u8; 32]),
    /// Signed by a certificate the policy revokes.
    RevokedKey,
    /// A program whose exec would make its stack executable.
    ExecutableStack,
    /// Memory that is no file's content asked to be executable.
    AnonymousExecutable,
    /// A mapping asked to be writable and executable at once.
    WritableExecutable,
    /// Memory placed under the `READ_IMPLIES_EXEC` personality.
    ReadImpliesExec,
    /// A userfaultfd made.
    Userfaultfd,
    /// Another process traced (`ptrace` attach, `PTRACE_TRACEME` for the parent) or its
    /// memory read or written (`process_vm_readv`, `process_vm_writev`).
    Ptrace,
    /// A process's memory opened for writing through `/proc/PID/mem`.
    ProcMem,
}

impl KernelDetail {
    /// The file's digest, where the refusal knows it.
    pub(crate) fn digest(&self) -> Option<&[u8; 32]> {
        match self {
            KernelDetail::Revoked(digest) => Some(digest),
            _ => None,
        }
    }
}

impl fmt::Display for KernelDetail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KernelDetail::Errno(errno) => write!(f, "errno {errno}"),
            KernelDetail::Replaced => {
                f.write_str("not the file checked: replaced before binfmt_elf mapped it")
            }
            KernelDetail::CopiedUp => f.write_str(
                "opened before its copy-up: maps the file it opened, not the copy it reads",
            ),
            KernelDetail::RevokedKey => f.write_str("signed by a certificate the policy revokes"),
            KernelDetail::ExecutableStack => f.write_str("executable stack"),
            KernelDetail::AnonymousExecutable => f.write_str("anonymous memory"),
            KernelDetail::WritableExecutable => f.write_str("writable and executable"),
            KernelDetail::ReadImpliesExec => f.write_str("READ_IMPLIES_EXEC"),
            KernelDetail::Userfaultfd => f.write_str("userfaultfd"),
            KernelDetail::Ptrace => f.write_str("ptrace"),
            KernelDetail::ProcMem => f.write_str("/proc/PID/mem opened for writing"),
            KernelDetail::Revoked(digest) => {
                f.write_str("sha256:")?;
                digest.iter().try_for_each(|b| write!(f, "{b:02x}"))
            }
        }
    }
}

/// A refusal, with what the kernel adds.
pub(crate) type Refusal = Refused<KernelDetail>;

/// Why a file is refused, and whether it is the ELF interpreter rather than the program.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Failure {
    /// Why, in elfsig-core's vocabulary.
    pub(crate) refused: Refusal,
    /// Whether the failure is the ELF interpreter's.
    pub(crate) interpreter: bool,
}

impl Failure {
    /// A failure for `reason`, with nothing more to say.
    pub(crate) fn new(reason: Reason) -> Self {
        Failure::from(Refused::new(reason))
    }

    /// Verification could not run: a kernel call failed.
    pub(crate) fn error(error: Error) -> Self {
        Failure::from(Refused::by_trust(
            Reason::Error,
            KernelDetail::Errno(error.to_errno()),
        ))
    }

    /// The file mapped is not the file read, as the kernel tells.
    pub(crate) fn modified(detail: KernelDetail) -> Self {
        Failure::from(Refused::by_trust(Reason::Modified, detail))
    }

    /// Executable memory the process's program is not entitled to (`runtime.rs`).
    pub(crate) fn runtime(detail: KernelDetail) -> Self {
        Failure::from(Refused::by_trust(Reason::NeedsJit, detail))
    }

    /// Another process's memory (or its own, through `/proc`) the process's program is not
    /// entitled to (`runtime.rs`).
    pub(crate) fn injection(detail: KernelDetail) -> Self {
        Failure::from(Refused::by_trust(Reason::NeedsDebugger, detail))
    }

    /// A file that could not be read.
    pub(crate) fn io(error: Error) -> Self {
        Failure::from(Refused::by_trust(
            Reason::IoError,
            KernelDetail::Errno(error.to_errno()),
        ))
    }

    /// The same failure, about the ELF interpreter.
    pub(crate) fn in_interpreter(self) -> Self {
        Failure {
            interpreter: true,
            ..self
        }
    }
}

impl From<Refusal> for Failure {
    fn from(refused: Refusal) -> Self {
        Failure {
            refused,
            interpreter: false,
        }
    }
}

/// What the log says: `[ELF interpreter: ]<reason>[ (<detail>)]`, the reason by its name.
impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.interpreter {
            f.write_str("ELF interpreter: ")?;
        }
        f.write_str(self.refused.reason.name())?;
        match self.refused.detail {
            Detail::None => Ok(()),
            ref detail => write!(f, " ({detail})"),
        }
    }
}

/// What a refusal refuses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Access {
    /// Running the file (or a program naming it as ELF interpreter).
    Exec,
    /// Asking whether it may run (`execveat(AT_EXECVE_CHECK)`).
    Check,
    /// Mapping it executable.
    Mmap,
    /// Making a mapping of it executable.
    Mprotect,
    /// Making memory executable at run time (no file: the current process is named).
    Memory,
    /// Tracing a process, or writing a process's memory (the current process is named).
    Inject,
}

impl Access {
    /// The audit record's `op`.
    fn op(self) -> &'static core::ffi::CStr {
        match self {
            Access::Exec => c"elfsig_exec",
            Access::Check => c"elfsig_execve_check",
            Access::Mmap => c"elfsig_mmap",
            Access::Mprotect => c"elfsig_mprotect",
            Access::Memory => c"elfsig_memory",
            Access::Inject => c"elfsig_ptrace",
        }
    }

    /// What the log puts before the file's path.
    fn prefix(self) -> &'static core::ffi::CStr {
        match self {
            Access::Exec => c"",
            Access::Check => c"execveat(AT_EXECVE_CHECK) of ",
            Access::Mmap => c"mmap of ",
            Access::Mprotect => c"mprotect of ",
            Access::Memory => c"executable memory in ",
            Access::Inject => c"another process's memory to ",
        }
    }
}

/// Counts, logs and audits a refusal; returns whether it is enforced.
pub(crate) fn report(file: FileRef<'_>, failure: Failure, access: Access) -> bool {
    let reason = failure.refused.reason;
    STATE.stats.refused_for(reason);
    let enforced = STATE.enforcing();
    file.log_refusal(access.prefix(), Message::new(&failure).as_cstr(), enforced);
    let digest = match &failure.refused.detail {
        Detail::Trust(detail) => detail.digest(),
        _ => None,
    };
    let cause = Message::new(&reason.name());
    audit::refusal(file, access.op(), cause.as_cstr(), digest, enforced);
    enforced
}

/// Counts, logs and audits a refusal of what the current process asks of memory (`Memory`,
/// `Inject`); returns whether it is enforced. The log names the process, the audit record its
/// program.
pub(crate) fn report_process(failure: Failure, access: Access) -> bool {
    let reason = failure.refused.reason;
    STATE.stats.refused_for(reason);
    let enforced = STATE.enforcing();
    audit::task_log_refusal(access.prefix(), Message::new(&failure).as_cstr(), enforced);
    let cause = Message::new(&reason.name());
    audit::task_refusal(access.op(), cause.as_cstr(), enforced);
    enforced
}

/// Counts, logs and audits opening for writing a file that a process maps executable; returns
/// whether the refusal is enforced.
pub(crate) fn report_write(file: FileRef<'_>) -> bool {
    crate::stats::Stats::add(&STATE.stats.writes_refused, 1);
    let enforced = STATE.enforcing();
    file.log_refusal(c"opening for writing ", c"mapped executable", enforced);
    audit::refusal(file, c"elfsig_write", c"mapped_executable", None, enforced);
    enforced
}
