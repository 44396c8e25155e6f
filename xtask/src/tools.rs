//! Building the project's own programs that tasks use: the `elfsig` CLI and the VM guest.

use std::path::PathBuf;

use crate::Result;
use crate::cmd::Cmd;
use crate::paths;

/// Whether this process builds the tools with the test profile (`dev`, dependencies at
/// opt-level 3, as the workspace's tests build them) instead of `release`: set by
/// `cargo xtask test`, whose parts use the tools without timing them. Its workspace tests have
/// compiled nearly every dependency in that profile already; a release build compiles them all
/// again (143 units for the CLI and more for the guard).
static TEST_PROFILE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// From now on, this process builds the tools with the test profile.
pub fn use_test_profile() {
    TEST_PROFILE.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Builds `package`'s binary `name` in the profile this process uses; returns its path.
fn build(package: &str, name: &str) -> Result<PathBuf> {
    let (flag, dir) = if TEST_PROFILE.load(std::sync::atomic::Ordering::Relaxed) {
        (None, "debug")
    } else {
        (Some("--release"), "release")
    };
    Cmd::cargo().args(["build", "--quiet"]).args(flag).args(["--package", package]).dir(&paths::root()).run()?;
    Ok(paths::target().join(dir).join(name))
}

/// Builds the `elfsig` binary and returns its path.
pub fn build_cli() -> Result<PathBuf> {
    build("elfsig-cli", "elfsig")
}

/// Builds the `elfsig-guard` binary (the mapping guard's loader) and returns its path.
pub fn build_guard() -> Result<PathBuf> {
    build("elfsig-guard", "elfsig-guard")
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
