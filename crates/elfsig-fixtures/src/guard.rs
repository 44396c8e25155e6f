//! The mapping guard's test programs, built with gcc from `programs/guard-*.c` and cached like
//! [`build`](crate::build)'s: a shared library, a program that needs it, and a probe that
//! maps files the ways software does (`dlopen`, `mmap`, `mprotect`).

use std::path::PathBuf;
use std::process::Command;

use crate::built::{gcc, run, version, write_source};
use crate::cache::{Key, cached};

const LIBRARY_C: &str = include_str!("programs/guard-lib.c");
const USER_C: &str = include_str!("programs/guard-user.c");
const PROBE_C: &str = include_str!("programs/guard-probe.c");

/// The library's file name (and `DT_SONAME`).
pub const GUARD_LIBRARY: &str = "libelfsig-guard.so";
/// What the library prints when it is loaded (its constructor).
pub const GUARD_LIBRARY_LOADED: &[u8] = b"libelfsig-guard loaded\n";
/// What the program that needs the library prints.
pub const GUARD_USER_OUTPUT: &[u8] = b"libelfsig-guard loaded\nhello from libelfsig-guard: counter=42\n";

/// The built programs.
#[derive(Clone, Debug)]
pub struct GuardPrograms {
    /// [`GUARD_LIBRARY`].
    pub library: PathBuf,
    /// A program with the library in `DT_NEEDED` and the `runpath` given in `DT_RUNPATH`.
    pub user: PathBuf,
    /// `guard-probe dlopen PATH...`, `guard-probe mmap|mprotect PATH`, `guard-probe anon`.
    pub probe: PathBuf,
}

/// Builds the programs (once; cached); `runpath` is the user program's `DT_RUNPATH`.
pub fn guard_programs(runpath: &str) -> Result<GuardPrograms, String> {
    let gcc = gcc()?;
    let gcc_version = version(&gcc, &["--version"])?;
    let key = |name: &str| Key::new().add(name).add(&gcc_version);
    let library = cached("guard-lib", &key("guard-lib").add(LIBRARY_C), "", |work| {
        write_source(work, "lib.c", LIBRARY_C)?;
        let soname = format!("-Wl,-soname,{GUARD_LIBRARY}");
        run(
            Command::new(&gcc).args([
                "-O2",
                "-Wall",
                "-Werror",
                "-fPIC",
                "-shared",
                &soname,
                "-o",
                GUARD_LIBRARY,
                "lib.c",
            ]),
            work,
        )?;
        Ok(work.join(GUARD_LIBRARY))
    })?;
    let user = cached("guard-user", &key("guard-user").add(LIBRARY_C).add(USER_C).add(runpath), "", |work| {
        write_source(work, "user.c", USER_C)?;
        std::fs::copy(&library, work.join(GUARD_LIBRARY)).map_err(|e| format!("cannot copy the library: {e}"))?;
        let rpath = format!("-Wl,-rpath,{runpath}");
        run(
            Command::new(&gcc).args([
                "-O2",
                "-Wall",
                "-Werror",
                "-o",
                "user",
                "user.c",
                "-L.",
                "-lelfsig-guard",
                &rpath,
                "-Wl,--enable-new-dtags",
            ]),
            work,
        )?;
        Ok(work.join("user"))
    })?;
    let probe = cached("guard-probe", &key("guard-probe").add(PROBE_C), "", |work| {
        write_source(work, "probe.c", PROBE_C)?;
        run(Command::new(&gcc).args(["-O2", "-Wall", "-Werror", "-o", "probe", "probe.c"]), work)?;
        Ok(work.join("probe"))
    })?;
    Ok(GuardPrograms { library, user, probe })
}
