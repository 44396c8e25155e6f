// SPDX-License-Identifier: GPL-2.0

//! The control files in `/sys/kernel/security/elfsig/`: one table says which files there are,
//! their modes, what reading them shows and what writing them does. The shim creates the files
//! from it (`glue/securityfs.rs`), refuses opening one for writing without CAP_SYS_ADMIN, and
//! takes a readable file's contents once, when it is opened. The module parameters take the
//! same words as the files ([`configure`]).

use core::fmt::{self, Write};

use kernel::prelude::*;

use crate::cache;
use crate::elfsig_core::control::{trim, Toggle, LOADER, MODE, RUNTIME, UNTRUSTED};
use crate::elfsig_core::filesystem::{self, Untrusted};
use crate::glue::module::Params;
use crate::glue::{file, records};
use crate::guard::Status;
use crate::pending;
use crate::policy;
use crate::state::STATE;
use crate::text::Cursor;

/// A control file.
pub(crate) struct ControlFile {
    /// Its name in the directory.
    pub(crate) name: &'static core::ffi::CStr,
    /// Its permission bits.
    pub(crate) mode: u16,
    /// What reading it shows, if it can be read.
    read: Option<fn(&mut Cursor<'_>) -> fmt::Result>,
    /// What writing to it does, if it can be written.
    write: Option<Writes>,
}

/// What a control file takes.
#[derive(Clone, Copy)]
enum Writes {
    /// A word, surrounding whitespace ignored, of at most [`WORD`] bytes.
    Word(fn(&[u8]) -> Result),
    /// Bytes as written, at most this many, in one write.
    Bytes(fn(&[u8]) -> Result, usize),
}

/// What a word written to a setting may be long.
const WORD: usize = 63;

/// The control directory's name.
pub(crate) const DIR: &core::ffi::CStr = c"elfsig";

/// Every control file. The index of an entry is how the shim names it.
pub(crate) static FILES: [ControlFile; 10] = [
    // `enforce` or `permissive`; writable unless locked.
    ControlFile {
        name: c"mode",
        mode: 0o600,
        read: Some(read_mode),
        write: Some(Writes::Word(write_mode)),
    },
    // `1` once enforce is locked until reboot (which also refuses unloading); write `1`.
    ControlFile {
        name: c"lock",
        mode: 0o600,
        read: Some(read_lock),
        write: Some(Writes::Word(write_lock)),
    },
    // The counters, `name value` per line.
    ControlFile {
        name: c"stats",
        mode: 0o400,
        read: Some(read_stats),
        write: None,
    },
    // Write anything to empty the verdict cache (after removing a trusted key).
    ControlFile {
        name: c"flush",
        mode: 0o200,
        read: None,
        write: Some(Writes::Word(write_flush)),
    },
    // `deny` refuses running the dynamic loader directly, `allow` (the default) lets it run;
    // `allow` is refused while locked.
    ControlFile {
        name: c"loader",
        mode: 0o600,
        read: Some(read_loader),
        write: Some(Writes::Word(write_loader)),
    },
    // The mapping guard: `active`, `attached`, `detached` or `unavailable: <why>`. elfsig-guard
    // writes `attach FD...` (its BPF links); `release` drops them, refused while locked.
    ControlFile {
        name: c"guard",
        mode: 0o600,
        read: Some(read_guard),
        // Words, and more of them than a setting takes: a descriptor for each hook.
        write: Some(Writes::Bytes(write_guard, 255)),
    },
    // Files on mounts the kernel does not trust (a user namespace's, FUSE): `refuse` (the
    // default) or `verify` (every time, never cached); `verify` is refused while locked.
    ControlFile {
        name: c"untrusted",
        mode: 0o600,
        read: Some(read_untrusted),
        write: Some(Writes::Word(write_untrusted)),
    },
    // What applies where: the filesystems whose verdicts are cached, the rest verified every
    // time, untrusted mounts, memfds (elfsig-core's filesystem.rs).
    ControlFile {
        name: c"filesystems",
        mode: 0o400,
        read: Some(read_filesystems),
        write: None,
    },
    // The signed policy (policy.rs): `none` or the loaded one's serial, digest and counts;
    // write a signed policy, in one write, to load it, or `clear` (refused while locked) to
    // unload it.
    ControlFile {
        name: c"policy",
        mode: 0o600,
        read: Some(policy::read),
        write: Some(Writes::Bytes(
            policy::write,
            crate::elfsig_core::policy::MAX_POLICY_LEN,
        )),
    },
    // The run-time rules (runtime.rs), with the mapping guard: `enforce` (the default: no
    // executable memory but signed files' without the `jit` entitlement) or `off`, refused
    // while locked.
    ControlFile {
        name: c"runtime",
        mode: 0o600,
        read: Some(read_runtime),
        write: Some(Writes::Word(write_runtime)),
    },
];

/// Shows a setting as one of its two words.
fn show(out: &mut Cursor<'_>, toggle: Toggle, on: bool) -> fmt::Result {
    writeln!(out, "{}", toggle.word(on))
}

/// Which of a setting's two words `word` is: `true` for the first.
fn parse(toggle: Toggle, word: &[u8]) -> Result<bool> {
    toggle.parse(word).ok_or(EINVAL)
}

/// Applies the `mode`, `untrusted`, `runtime` and `deny_loader` module parameters (`lock` is applied
/// last, by module init).
pub(crate) fn configure(params: &Params) -> Result {
    let enforce = parse(MODE, params.mode)
        .inspect_err(|_| pr_err!("mode must be enforce or permissive\n"))?;
    STATE.set_enforcing(enforce)?;
    let refuse = parse(UNTRUSTED, params.untrusted)
        .inspect_err(|_| pr_err!("untrusted must be refuse or verify\n"))?;
    STATE.set_untrusted(if refuse {
        Untrusted::Refuse
    } else {
        Untrusted::Verify
    })?;
    let runtime = parse(RUNTIME, params.runtime)
        .inspect_err(|_| pr_err!("runtime must be enforce or off\n"))?;
    STATE.set_runtime_rules(runtime)?;
    STATE.set_deny_loader(params.deny_loader)
}

fn read_mode(out: &mut Cursor<'_>) -> fmt::Result {
    show(out, MODE, STATE.enforcing())
}

fn write_mode(word: &[u8]) -> Result {
    STATE.set_enforcing(parse(MODE, word)?)
}

fn read_lock(out: &mut Cursor<'_>) -> fmt::Result {
    out.write_str(if STATE.locked() { "1\n" } else { "0\n" })
}

fn write_lock(word: &[u8]) -> Result {
    match word {
        b"1" => {
            STATE.lock();
            Ok(())
        }
        b"0" if STATE.locked() => Err(EPERM),
        b"0" => Ok(()),
        _ => Err(EINVAL),
    }
}

fn read_stats(out: &mut Cursor<'_>) -> fmt::Result {
    STATE.stats.snapshot().write_to(out)?;
    writeln!(out, "cache_entries {}", cache::ENTRIES)?;
    writeln!(out, "cache_used {}", STATE.cache.used())?;
    let active = STATE.guard.status() == Status::Active;
    writeln!(out, "mmap_guard_active {}", u8::from(active))?;
    writeln!(out, "execs_pending {}", pending::count())?;
    writeln!(out, "mapped_writes_held {}", file::write_denials_held())?;
    writeln!(out, "tasks_recorded {}", records::count())
}

fn read_untrusted(out: &mut Cursor<'_>) -> fmt::Result {
    show(out, UNTRUSTED, STATE.untrusted() == Untrusted::Refuse)
}

fn write_untrusted(word: &[u8]) -> Result {
    STATE.set_untrusted(if parse(UNTRUSTED, word)? {
        Untrusted::Refuse
    } else {
        Untrusted::Verify
    })
}

fn read_filesystems(out: &mut Cursor<'_>) -> fmt::Result {
    filesystem::describe(out, STATE.untrusted())
}

fn write_flush(_: &[u8]) -> Result {
    STATE.cache.flush();
    Ok(())
}

fn read_loader(out: &mut Cursor<'_>) -> fmt::Result {
    show(out, LOADER, STATE.denying_loader())
}

fn write_loader(word: &[u8]) -> Result {
    STATE.set_deny_loader(parse(LOADER, word)?)
}

fn read_runtime(out: &mut Cursor<'_>) -> fmt::Result {
    show(out, RUNTIME, STATE.runtime_rules())
}

fn write_runtime(word: &[u8]) -> Result {
    STATE.set_runtime_rules(parse(RUNTIME, word)?)
}

fn read_guard(out: &mut Cursor<'_>) -> fmt::Result {
    writeln!(out, "{}", STATE.guard.status())
}

fn write_guard(input: &[u8]) -> Result {
    STATE.guard.command(input, STATE.locked())
}

fn file(which: u32) -> Result<&'static ControlFile> {
    FILES
        .get(usize::try_from(which).map_err(|_| EINVAL)?)
        .ok_or(EINVAL)
}

/// Fills `out` with the contents of control file `which`; returns the length.
pub(crate) fn read(which: u32, out: &mut [u8]) -> Result<usize> {
    let show = file(which)?.read.ok_or(EINVAL)?;
    let mut cursor = Cursor::new(out);
    show(&mut cursor).map_err(|_| ENOSPC)?;
    Ok(cursor.len())
}

/// The most bytes one write to control file `which` may bring.
pub(crate) fn write_max(which: u32) -> usize {
    match file(which).map(|f| f.write) {
        Ok(Some(Writes::Word(_))) => WORD,
        Ok(Some(Writes::Bytes(_, max))) => max,
        _ => 0,
    }
}

/// Applies what was written to control file `which`.
pub(crate) fn write(which: u32, input: &[u8]) -> Result {
    match file(which)?.write.ok_or(EINVAL)? {
        Writes::Word(apply) => apply(trim(input)),
        Writes::Bytes(apply, _) => apply(input),
    }
}
