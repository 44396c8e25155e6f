//! Building the project's own programs that tasks use: the `elfsig` CLI and the VM guest.

use std::path::PathBuf;

use crate::Result;
use crate::cmd::Cmd;
use crate::paths;

/// Builds the release `elfsig` binary and returns its path.
pub fn build_cli() -> Result<PathBuf> {
    Cmd::new("cargo").args(["build", "--quiet", "--release", "--package", "elfsig-cli"]).dir(&paths::root()).run()?;
    Ok(paths::target().join("release/elfsig"))
}

/// Builds `elfsig-guest` as a static executable (it is the VM's init, with no libraries
/// around) and returns its path.
pub fn build_guest() -> Result<PathBuf> {
    let triple = "x86_64-unknown-linux-gnu";
    Cmd::new("cargo")
        .args(["build", "--quiet", "--release", "--package", "elfsig-guest", "--target", triple])
        .env("RUSTFLAGS", "-C target-feature=+crt-static")
        .dir(&paths::root())
        .run()?;
    Ok(paths::target().join(triple).join("release/elfsig-guest"))
}
