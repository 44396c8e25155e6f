// SPDX-License-Identifier: GPL-2.0

//! The verdict on a file: whether it may be checked where it lives (elfsig-core's
//! `filesystem`), the verdict cache, and verification of what the cache misses, with writers
//! to its real inode refused meanwhile. One lookup serves every hook: a program, its ELF
//! interpreter, a file mapped executable. A program's interpreter may be checked on another
//! CPU while the program is verified (`ahead.rs`).

mod ahead;
mod verify;

use core::ffi::CStr;
use kernel::prelude::*;

pub(crate) use self::ahead::Ahead;
use self::verify::Verified;
use crate::cache::{Entry, Runtime};
use crate::elfsig_core::filesystem::{self, Keeping};
use crate::elfsig_core::{Entitlements, Reason};
use crate::glue::file::{self, ExecFile, Facts, FileId, FileRef};
use crate::refusal::{Failure, KernelDetail};
use crate::state::STATE;
use crate::stats::Stats;

/// A program that verified.
pub(crate) struct Program<'n> {
    /// The ELF interpreter it names in `PT_INTERP`, which binfmt_elf opens directly, past
    /// every binfmt handler.
    pub(crate) interpreter: Option<&'n CStr>,
    /// The identity of its real file as checked.
    pub(crate) id: FileId,
    /// What it does at run time.
    pub(crate) runtime: Runtime,
}

/// Checks a program. A cached program costs one lookup (and, when it is dynamically linked,
/// reading its interpreter's name); only what is not cached is read and hashed, its
/// interpreter checked meanwhile on another CPU where it can be (`ahead`, for
/// [`check_interpreter`]). A dynamic loader run directly is refused when the policy says so.
pub(crate) fn check_program<'n>(
    file: FileRef<'_>,
    name: &'n mut KVec<u8>,
    ahead: &mut Ahead,
) -> Result<Program<'n>, Failure> {
    Stats::add(&STATE.stats.checked, 1);
    match lookup(file)? {
        Lookup::Hit(entry, id) => {
            loader_allowed(entry.loader)?;
            let interpreter = if entry.has_interpreter {
                verify::exec_info(file, name)?.interpreter
            } else {
                None
            };
            Ok(Program {
                interpreter,
                id,
                runtime: entry.runtime,
            })
        }
        Lookup::Miss(miss) => {
            *ahead = Ahead::start(file);
            let (verified, id) = verify_into_cache(file, miss, name)?;
            loader_allowed(verified.exec.loader)?;
            Ok(Program {
                interpreter: verified.exec.interpreter,
                id,
                runtime: runtime_of(&verified),
            })
        }
        Lookup::Initramfs(id) => {
            let exec = verify::exec_info(file, name)?;
            loader_allowed(exec.loader)?;
            Ok(Program {
                interpreter: exec.interpreter,
                id,
                // No signature says more.
                runtime: Runtime {
                    entitlements: Entitlements::NONE,
                    executable_stack: exec.executable_stack,
                    writable_executable: exec.writable_executable,
                },
            })
        }
    }
}

/// Checks a file through the cache, as a program is checked but for the loader policy (an ELF
/// interpreter, a file mapped executable); returns the identity of its real file as checked.
pub(crate) fn check_file(file: FileRef<'_>, name: &mut KVec<u8>) -> Result<FileId, Failure> {
    match lookup(file)? {
        Lookup::Hit(_, id) | Lookup::Initramfs(id) => Ok(id),
        Lookup::Miss(miss) => verify_into_cache(file, miss, name).map(|(_, id)| id),
    }
}

/// Checks the ELF interpreter at `path` (with `None`, there is none to check). Returns the
/// identity of the file checked, which binfmt_elf is to map, with the verdict. A cache check
/// needs only the identity of the file the path names; the file is opened (and so protected
/// from writes while it is hashed) only to verify it. What `ahead` checked of the same path,
/// opened the same way, is the answer.
pub(crate) fn check_interpreter(
    path: Option<&CStr>,
    ahead: Ahead,
) -> (Option<FileId>, Result<(), Failure>) {
    let Some(path) = path else {
        return (None, Ok(()));
    };
    let stats = &STATE.stats;
    Stats::add(&stats.checked, 1);
    if let Some(outcome) = ahead.outcome_for(path) {
        return match outcome {
            Ok(id) => (Some(id), Ok(())),
            Err(failure) => (None, Err(failure)),
        };
    }
    if let Ok(id) = file::path_id(path) {
        // A file that may not be checked where it lives is refused below, once opened.
        if let Some(entry) = admit(&id)
            .ok()
            .and_then(|keeping| cache_hit(&id, keeping, STATE.cache.epoch()))
        {
            return (Some(id), not_revoked_since_cached(&entry.digest));
        }
    }
    let interpreter = match ExecFile::open(path) {
        Ok(file) => file,
        Err(e) => {
            Stats::add(&stats.cache_misses, 1);
            return (None, Err(Failure::io(e)));
        }
    };
    // Its own interpreter does not matter here (binfmt_elf does not follow a second one), but
    // the entry serves the interpreter run directly too.
    let mut name = KVec::new();
    match check_file(interpreter.file(), &mut name) {
        Ok(id) => (Some(id), Ok(())),
        Err(failure) => (None, Err(failure)),
    }
}

/// The ELF interpreter `file` names, read without verifying it: what a program refused in
/// permissive mode would have mapped, so that one run lists everything that would be refused.
pub(crate) fn unverified_interpreter<'n>(
    file: FileRef<'_>,
    name: &'n mut KVec<u8>,
) -> Option<&'n CStr> {
    verify::exec_info(file, name)
        .ok()
        .and_then(|exec| exec.interpreter)
}

/// Whether the end of an exec can rely on the identity and stamp of the file `id` names to tell
/// that what binfmt_elf mapped is what was checked: its stamp moves with every change (its
/// filesystem lets a verdict be kept), or the guard verified the mapping as it was made.
pub(crate) fn keeps_stamp(id: &FileId) -> bool {
    STATE.guard.active() || matches!(admit(id), Ok(Keeping::Cache | Keeping::Initramfs))
}

/// What the cache says of a file.
enum Lookup {
    /// It verified, and has not changed since.
    Hit(Entry, FileId),
    /// Not cached: verify it.
    Miss(Miss),
    /// The initramfs's own file, which the module trusts as it trusts what loaded it
    /// (`trust_initramfs`): not verified.
    Initramfs(FileId),
}

/// A file to verify: how its verdict may be kept, and the cache's epoch, taken before
/// verifying it.
struct Miss {
    keeping: Keeping,
    epoch: u64,
}

/// Looks `file` up in the verdict cache, where its filesystem lets a verdict be kept
/// ([`admit`], which refuses what may not be checked at all). A cached verdict stands unless
/// its digest has been revoked since.
fn lookup(file: FileRef<'_>) -> Result<Lookup, Failure> {
    let id = file.id();
    let keeping = admit(&id)?;
    if keeping == Keeping::Initramfs {
        Stats::add(&STATE.stats.initramfs_trusted, 1);
        return Ok(Lookup::Initramfs(id));
    }
    let epoch = STATE.cache.epoch();
    if let Some(entry) = cache_hit(&id, keeping, epoch) {
        not_revoked_since_cached(&entry.digest)?;
        return Ok(Lookup::Hit(entry, id));
    }
    Stats::add(&STATE.stats.cache_misses, 1);
    Ok(Lookup::Miss(Miss { keeping, epoch }))
}

/// The verdict cached for `id` in `epoch`, counted as a hit, where its filesystem lets one be
/// kept.
fn cache_hit(id: &FileId, keeping: Keeping, epoch: u64) -> Option<Entry> {
    if keeping != Keeping::Cache {
        return None;
    }
    let entry = STATE.cache.lookup(id, epoch)?;
    Stats::add(&STATE.stats.cache_hits, 1);
    Some(entry)
}

/// Whether the file `id` names may be checked at all where it lives, and how its verdict is
/// kept: elfsig-core's rules, applied to what the shim read off its real inode.
fn admit(id: &FileId) -> Result<Keeping, Failure> {
    use filesystem::Refusal;
    filesystem::admit(&id.admission(), STATE.untrusted()).map_err(|refusal| match refusal {
        Refusal::Unsealed => Failure::new(Reason::Unsealed),
        Refusal::CopiedUp => Failure::modified(KernelDetail::CopiedUp),
        Refusal::UntrustedMount => Failure::new(Reason::UntrustedMount),
        Refusal::OpenForWriting => Failure::new(Reason::OpenForWriting),
    })
}

/// Whether a cached verdict's digest is still not revoked. While the guard runs, its key hook
/// flushes the cache on every revocation (`hooks::revocation_added`), and the cache was
/// flushed when it started running, so a cached verdict was checked after the last
/// revocation: only without the guard is there a `.blacklist` lookup to make, on every hit.
fn not_revoked_since_cached(digest: &[u8; 32]) -> Result<(), Failure> {
    if STATE.guard.active() {
        Ok(())
    } else {
        verify::not_revoked(digest)
    }
}

/// Verifies a file the cache missed, with writers to its real inode refused meanwhile, and
/// caches the verdict where its filesystem lets it be kept. Returns it with the identity and
/// stamp the file had while it was verified.
fn verify_into_cache<'n>(
    file: FileRef<'_>,
    miss: Miss,
    name: &'n mut KVec<u8>,
) -> Result<(Verified<'n>, FileId), Failure> {
    // Exec denies writes to the inode it opened; under overlayfs the data is another inode's.
    let _writers_refused = file
        .deny_writes()
        .map_err(|_| Failure::new(Reason::OpenForWriting))?;
    // What the verdict is about: the file as it is now that no one can write it.
    let id = file.id();
    let keeping = admit(&id)?;
    // Where there is no dirty tracking, pages pinned for DMA (io_uring's registered buffers
    // over a shared mapping) may be written after the verdict, with no writer counted and no
    // stamp moved.
    if id.has(Facts::NO_WRITEBACK) && file.pinned() {
        return Err(Failure::new(Reason::OpenForWriting));
    }
    let verified = timed_verify(file, name)?;
    // A copy-up while it was read: reads follow the copy, mappings stay on the file the
    // overlay opened. Copy-up goes one way, so the real file being the same one after the
    // reading as before means every byte read came from it, with its writers refused.
    if id.has(Facts::STACKED) {
        let after = file.id();
        if after.has(Facts::STALE_OPEN) || !after.same_file(&id) {
            return Err(Failure::modified(KernelDetail::CopiedUp));
        }
    }
    if keeping == Keeping::Cache && miss.keeping == Keeping::Cache {
        let entry = Entry {
            digest: verified.digest,
            has_interpreter: verified.exec.interpreter.is_some(),
            loader: verified.exec.loader,
            runtime: runtime_of(&verified),
        };
        STATE.cache.insert(&id, miss.epoch, &entry);
    }
    Ok((verified, id))
}

/// What a file that verified does at run time.
fn runtime_of(verified: &Verified<'_>) -> Runtime {
    Runtime {
        entitlements: verified.entitlements,
        executable_stack: verified.exec.executable_stack,
        writable_executable: verified.exec.writable_executable,
    }
}

/// Refuses a dynamic loader run directly, when the policy says so.
fn loader_allowed(loader: bool) -> Result<(), Failure> {
    if loader && STATE.denying_loader() {
        Err(Failure::new(Reason::LoaderExec))
    } else {
        Ok(())
    }
}

/// Verifies `file`, counting the time it takes.
fn timed_verify<'n>(file: FileRef<'_>, name: &'n mut KVec<u8>) -> Result<Verified<'n>, Failure> {
    Stats::timed(&STATE.stats.verify_ns, || verify::verify_file(file, name))
}
