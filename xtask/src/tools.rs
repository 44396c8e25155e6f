//! Building the project's own programs that tasks use: the `elfsig` CLI and the VM guest.

use std::path::PathBuf;

use crate::Result;
use crate::cmd::Cmd;
use crate::paths;

/// Builds the release `elfsig` binary and returns its path.
pub fn build_cli() -> Result<PathBuf> {
    Cmd::cargo().args(["build", "--quiet", "--release", "--package", "elfsig-cli"]).dir(&paths::root()).run()?;
    Ok(paths::target().join("release/elfsig"))
}

/// Builds the release `elfsig-guard` binary (the mapping guard's loader) and returns its path.
pub fn build_guard() -> Result<PathBuf> {
    Cmd::cargo().args(["build", "--quiet", "--release", "--package", "elfsig-guard"]).dir(&paths::root()).run()?;
    Ok(paths::target().join("release/elfsig-guard"))
}

/// Builds `package` (whose binary has the same name) as a static executable, as a VM's init
/// must be, with no libraries around; returns its path.
pub fn build_static(package: &str) -> Result<PathBuf> {
    let triple = "x86_64-unknown-linux-gnu";
    Cmd::cargo()
        .args(["build", "--quiet", "--release", "--package", package, "--target", triple])
        .env("RUSTFLAGS", "-C target-feature=+crt-static")
        .dir(&paths::root())
        .run()?;
    Ok(paths::target().join(triple).join("release").join(package))
}
