//! Where things are: the workspace, its target directory, and the cache outside the repository.

use std::path::PathBuf;

/// The workspace root.
pub fn root() -> PathBuf {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().map(PathBuf::from).unwrap_or(manifest)
}

/// The workspace's target directory.
pub fn target() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| root().join("target"))
}

/// A cache outside the repository that survives fresh clones: `$XDG_CACHE_HOME/elfsig` or
/// `~/.cache/elfsig`. The test kernel and the test keys live here.
pub fn cache() -> PathBuf {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(|| PathBuf::from("/var/tmp"));
    base.join("elfsig")
}

/// Where cargo's intermediate files go when xtask runs it, for this checkout (see
/// [`crate::cmd::Cmd::cargo`]): `cargo-build/` in the cache, then the workspace's path with
/// every character but letters and digits made `-` (`/work/elfsig` gives `-work-elfsig`).
pub fn cargo_build() -> PathBuf {
    let checkout: String =
        root().to_string_lossy().chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
    cache().join("cargo-build").join(checkout)
}
