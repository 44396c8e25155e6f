// SPDX-License-Identifier: GPL-2.0

//! The hooks: what the module decides on an exec (the program and its ELF interpreter), an
//! `execveat(AT_EXECVE_CHECK)`, and, with the mapping guard, memory mapped executable, a
//! mapping made executable, a file opened for writing while mapped executable, and a
//! revocation. Each builds what it needs, asks the verdict (`verdict.rs`), and refuses or, in
//! permissive mode, reports and allows (`refusal.rs`). Called from C through
//! `glue/callbacks.rs` alone.

use kernel::ffi::c_int;
use kernel::prelude::*;

use crate::elfsig_core::script::{self, HEAD_LEN, MAX_NESTING};
use crate::elfsig_core::{Entitlements, ReadSomeAt, Reason};
use crate::glue::exec_end::{self, Exec};
use crate::glue::file::{ExecFile, Facts, FileRef};
use crate::pending::{self, Expected, Expecting};
use crate::refusal::{report, report_write, Access, Failure};
use crate::runtime::{self, Memory};
use crate::state::STATE;
use crate::stats::Stats;
use crate::verdict::{self, Ahead};

/// Decides an exec. Returns `-ENOEXEC` to let it proceed (the next handler, binfmt_elf, loads
/// the file) and `-EACCES` to refuse it. Files that are not ELF pass through: scripts reach this
/// handler again with their interpreter.
pub(crate) fn check_exec(file: FileRef<'_>, head: &[u8]) -> c_int {
    if !head.starts_with(b"\x7fELF") {
        return ENOEXEC.to_errno();
    }
    let exec = exec_end::current_exec();
    let (mut name, mut unverified_name) = (KVec::new(), KVec::new());
    let mut ahead = Ahead::none();
    let (interpreter, program) = match verdict::check_program(file, &mut name, &mut ahead) {
        Ok(program) => {
            if let Err(failure) = runtime::check_exec(program.runtime) {
                if report(file, failure, Access::Exec) {
                    return refuse(exec);
                }
            }
            (program.interpreter, Some(program))
        }
        Err(failure) if report(file, failure, Access::Exec) => return refuse(exec),
        // Permissive: the interpreter is checked all the same, so that one run lists
        // everything that would be refused.
        Err(_) => (
            verdict::unverified_interpreter(file, &mut unverified_name),
            None,
        ),
    };
    let (expected, outcome) = verdict::check_interpreter(interpreter, ahead);
    if let Err(failure) = outcome {
        if report(file, failure.in_interpreter(), Access::Exec) {
            return refuse(exec);
        }
    }
    let expecting = Expecting {
        interpreter: expected.map_or(Expected::None, Expected::File),
        stacked_program: program
            .as_ref()
            .map(|program| program.id)
            .filter(|id| id.has(Facts::STACKED)),
        entitlements: program.map_or(Entitlements::NONE, |program| program.runtime.entitlements),
    };
    if let Err(e) = pending::expect(exec, &expecting) {
        // What an earlier exec of the task left must not pass for this one's.
        pending::forget(exec.task);
        // No memory to keep track of what the exec is to map: refuse.
        if report(file, Failure::error(e), Access::Exec) {
            return refuse(exec);
        }
    }
    Stats::add(&STATE.stats.allowed, 1);
    ENOEXEC.to_errno()
}

/// Refuses the current exec, forgetting what an earlier exec of its task left.
fn refuse(exec: Exec) -> c_int {
    pending::forget(exec.task);
    Stats::add(&STATE.stats.denied, 1);
    EACCES.to_errno()
}

/// What execve returns for scripts nested deeper (`-ELOOP`, which the kernel crate lacks).
const ELOOP: c_int = -40;

/// Decides an `execveat(AT_EXECVE_CHECK)` of `file` (the guard's `bprm_creds_for_exec`
/// program): what an `execve` of it would meet. The kernel runs no binfmt handler for it, so the
/// checks are the handler's, without recording anything for an exec end that will not come: an
/// ELF program and the interpreter it names; for a `#!` script, the interpreter it names, as
/// binfmt_script finds it (nested scripts too); anything else passes, as the handler lets it
/// pass. 0 when `execve` would run it, else an errno (`EACCES` for a refusal).
pub(crate) fn check_exec_query(file: FileRef<'_>) -> c_int {
    let mut script_interpreter: Option<ExecFile> = None;
    let mut depth = 0u32;
    loop {
        let current = script_interpreter.as_ref().map_or(file, ExecFile::file);
        let mut head = [0u8; HEAD_LEN];
        let mut reader = current;
        let len = match reader.read_some_at(0, &mut head) {
            Ok(len) => len,
            Err(_) => return EIO.to_errno(),
        };
        let head = head.get(..len).unwrap_or(&[]);
        if head.starts_with(b"\x7fELF") {
            return check_queried_program(current);
        }
        let mut path = [0u8; HEAD_LEN];
        let Some(path) = script::interpreter(head, &mut path) else {
            return 0;
        };
        if depth >= MAX_NESTING {
            return ELOOP;
        }
        depth = depth.saturating_add(1);
        match ExecFile::open(path) {
            Ok(next) => script_interpreter = Some(next),
            Err(e) => return e.to_errno(),
        }
    }
}

/// The program of an `execveat(AT_EXECVE_CHECK)`: checked as the exec handler checks one.
fn check_queried_program(file: FileRef<'_>) -> c_int {
    let mut name = KVec::new();
    let mut ahead = Ahead::none();
    let outcome = verdict::check_program(file, &mut name, &mut ahead).and_then(|program| {
        verdict::check_interpreter(program.interpreter, ahead)
            .1
            .map_err(Failure::in_interpreter)?;
        runtime::check_exec(program.runtime)
    });
    match outcome {
        Err(failure) if report(file, failure, Access::Check) => EACCES.to_errno(),
        _ => 0,
    }
}

/// Decides memory mapped with `PROT_EXEC` (the guard's `mmap_file` program, before the
/// mapping exists) by the current process: 0 allows it, `-EACCES` refuses it. Anonymous
/// memory (no file, or a device's) and a mapping writable too are the run-time rules'
/// (`runtime.rs`). A file must verify as a program would, through the same cache; a dynamic
/// loader is mapped like any library. Writers to it are refused before it is looked at and,
/// once it verified, until the file is released (the mapping holds it), as exec refuses them
/// to a program: no writer can appear between the verdict and the mapping, whatever the
/// scheduler does. In permissive mode the refusal ends with the check, and the `file_open`
/// program logs and allows the writers that come after. Device files are not file contents,
/// and are left alone as IMA leaves them.
pub(crate) fn check_mapping(file: Option<FileRef<'_>>, writable: bool) -> c_int {
    if STATE.guard.seen() {
        // The guard runs from now on, its key hook with it: what was cached before may have
        // been revoked unseen.
        STATE.cache.flush();
    }
    let Some(file) = file.filter(FileRef::is_regular) else {
        return runtime::check_memory(Memory::Anonymous);
    };
    let stats = &STATE.stats;
    Stats::add(&stats.mmap_checked, 1);
    let mut name = KVec::new();
    let outcome = file
        .deny_writes()
        .map_err(|_| Failure::new(Reason::OpenForWriting))
        .and_then(|writers_refused| {
            verdict::check_file(file, &mut name)?;
            if !STATE.enforcing() {
                return Ok(());
            }
            writers_refused
                .hold_until_released()
                .map_err(Failure::error)
        });
    if let Err(failure) = outcome {
        if report(file, failure, Access::Mmap) {
            Stats::add(&stats.mmap_denied, 1);
            return EACCES.to_errno();
        }
    }
    // A file that verified, mapped writable too: the run-time rules' (what does not verify is
    // refused as such first).
    if writable {
        let refused = runtime::check_memory(Memory::WritableExecutable);
        if refused != 0 {
            return refused;
        }
    }
    Stats::add(&stats.mmap_allowed, 1);
    0
}

/// Decides a mapping asking for `PROT_EXEC` (`mprotect`) by the current process, when it
/// is not executable yet (`executable` false) or asks to be writable too: 0 allows it,
/// `-EACCES` refuses it. A file mapping that is not executable is refused to everyone, as IMA
/// refuses it, since the hook runs under `mmap_lock`, where the file cannot be read to verify
/// it; nothing real software does needs it: loaders map code executable from the start.
/// Anonymous memory made executable, and a mapping made writable and executable, are the
/// run-time rules'.
pub(crate) fn check_mprotect(file: Option<FileRef<'_>>, executable: bool, writable: bool) -> c_int {
    let file = file.filter(FileRef::is_regular);
    if !executable {
        let Some(file) = file else {
            return runtime::check_memory(Memory::Anonymous);
        };
        if report(file, Failure::new(Reason::MadeExecutable), Access::Mprotect) {
            Stats::add(&STATE.stats.mmap_denied, 1);
            return EACCES.to_errno();
        }
        return 0;
    }
    if writable {
        return runtime::check_memory(Memory::WritableExecutable);
    }
    0
}

/// Decides opening `file` for writing while a process maps it executable (the guard's
/// `file_open` program): refused with `ETXTBSY`, as writing a running program is, so that no
/// one changes the code of a library or a program under the processes that run it (in
/// permissive mode, logged and allowed).
pub(crate) fn check_write(file: FileRef<'_>) -> c_int {
    if report_write(file) {
        ETXTBSY.to_errno()
    } else {
        0
    }
}

/// A key was added to `.blacklist` (seen by the guard's key hook): every cached verdict is
/// checked again, revocation included.
pub(crate) fn revocation_added() {
    STATE.cache.flush();
}
