// SPDX-License-Identifier: GPL-2.0

//! A first exec's ELF interpreter, checked on another CPU while the task verifies the program:
//! when the cache has neither, the exec costs about the longer of the two checks, not their sum
//! (ld.so, 215 KB, is hashed while tar's 530 KB are).
//!
//! The task does everything that depends on who asks: it reads the interpreter's name from the
//! program's headers and opens that path as binfmt_elf will, with its credentials, its root and
//! its mounts. The worker only checks the file the task opened, as `check_file` does in the
//! task (the cache, writers refused, the hash, the signature), and only a file whose bytes all
//! lie in the page cache of a local or memory file system (`FileRef::resident`): it makes no
//! I/O and allocates no page the task's cgroup should pay for. Its answer stands for the
//! interpreter the verified program names only when that is the name read here: the name was
//! read before the program verified, and is a guess until it has.
//!
//! With one CPU, or anything in the way, nothing is done ahead and `check_interpreter` checks
//! the interpreter in the task, after the program, as it always has.

use core::ffi::CStr;
use kernel::prelude::*;

use super::{admit, check_file, verify};
use crate::elfsig_core::filesystem::Keeping;
use crate::glue::file::{self, ExecFile, FileId, FileRef};
use crate::glue::workqueue::{self, Job, Running};
use crate::refusal::Failure;
use crate::state::STATE;
use crate::stats::Stats;

/// An interpreter being checked ahead, if one is.
pub(crate) struct Ahead(Option<Running<Check>>);

/// The check a worker makes.
struct Check {
    /// The interpreter's name as the program's headers gave it, NUL-terminated at `name_len`.
    name: KVec<u8>,
    name_len: usize,
    /// The file that name opened, in the task.
    file: ExecFile,
    /// What `check_file` answered, once it has.
    outcome: Option<Result<FileId, Failure>>,
}

impl Job for Check {
    fn run(&mut self) {
        let mut own_interpreter = KVec::new();
        self.outcome = Some(check_file(self.file.file(), &mut own_interpreter));
    }
}

impl Ahead {
    /// Nothing checked ahead.
    pub(crate) fn none() -> Self {
        Ahead(None)
    }

    /// Starts checking the interpreter `program` names, on a worker, when that can be done and
    /// is worth it: more than one CPU, an interpreter to verify (not cached), resident.
    pub(crate) fn start(program: FileRef<'_>) -> Self {
        if !workqueue::possible() {
            return Ahead::none();
        }
        let mut name = KVec::new();
        let Some(path) = verify::exec_info(program, &mut name)
            .ok()
            .and_then(|exec| exec.interpreter)
        else {
            return Ahead::none();
        };
        let name_len = path.to_bytes_with_nul().len();
        if settled(path) {
            return Ahead::none();
        }
        let Ok(file) = ExecFile::open(path) else {
            return Ahead::none();
        };
        if !file.file().resident() {
            return Ahead::none();
        }
        let check = Check {
            name,
            name_len,
            file,
            outcome: None,
        };
        match KBox::new(check, GFP_KERNEL).map(workqueue::start) {
            Ok(Ok(running)) => {
                Stats::add(&STATE.stats.interpreters_ahead, 1);
                Ahead(Some(running))
            }
            _ => Ahead::none(),
        }
    }

    /// Waits for the check, and gives its answer when it is about the interpreter `path`
    /// names (the verified program's). `None` when nothing was checked ahead, or another name.
    pub(crate) fn outcome_for(self, path: &CStr) -> Option<Result<FileId, Failure>> {
        let check = self.0?.wait();
        let guessed = check.name.get(..check.name_len)?;
        if guessed != path.to_bytes_with_nul() {
            return None;
        }
        check.outcome
    }
}

/// Whether checking the file `path` names needs no verification: the cache holds its verdict,
/// or it is the initramfs's own, trusted (`trust_initramfs`). Counts nothing: the check after
/// the program's counts what it finds.
fn settled(path: &CStr) -> bool {
    file::path_id(path).is_ok_and(|id| match admit(&id) {
        Ok(Keeping::Cache) => STATE.cache.lookup(&id, STATE.cache.epoch()).is_some(),
        Ok(Keeping::Initramfs) => true,
        _ => false,
    })
}
