//! Proof by linker that elfsig-core cannot panic: compile it the way the kernel does (optimised,
//! overflow checks on, panic=abort) into an object file and look for references to any panic
//! or bounds-check failure routine. The kernel module repeats this check on the `.ko`.
//!
//! It works because the core's public API is, but for the verifier, not generic: every function
//! is compiled into the object, so every path that could panic shows up as an undefined symbol.
//! The verifier (`elfsig_core::verify`) is generic over its environment and is compiled where
//! it is instantiated: the check on the `.ko` (`xtask/src/kmod.rs`) covers the kernel's.

use crate::Result;
use crate::cmd::Cmd;
use crate::paths;

/// Symbols that mean "this code can panic".
const PANIC_MARKERS: &[&str] = &[
    "panic",
    "slice_index",
    "slice_end_index",
    "slice_start_index",
    "unwrap_failed",
    "expect_failed",
    "assert_failed",
];

/// Runs the check for each feature set the core is built with.
pub fn check() -> Result {
    for features in [&[][..], &["signer"][..]] {
        // A fresh build each time: cargo would not emit the object again for an unchanged core,
        // and the core has no dependencies, so this takes seconds.
        let target_dir = paths::target().join("nopanic");
        let _ = std::fs::remove_dir_all(&target_dir);
        let mut cmd = Cmd::cargo()
            .args(["rustc", "--quiet", "--package", "elfsig-core", "--lib", "--release", "--target-dir"])
            .arg(&target_dir)
            // The object is looked for in its deps/.
            .env("CARGO_BUILD_BUILD_DIR", &target_dir);
        if !features.is_empty() {
            cmd = cmd.arg("--features").arg(features.join(","));
        }
        cmd.args(["--", "--emit=obj", "-C", "overflow-checks=on", "-C", "panic=abort", "-C", "debuginfo=0"])
            .dir(&paths::root())
            .run()?;
        let deps = target_dir.join("release").join("deps");
        let objects: Vec<_> = std::fs::read_dir(&deps)
            .map_err(|e| format!("cannot list {}: {e}", deps.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.extension().is_some_and(|x| x == "o")
                    && p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("elfsig_core"))
            })
            .collect();
        if objects.is_empty() {
            return Err(format!("no elfsig_core object in {}", deps.display()));
        }
        for object in objects {
            let undefined = Cmd::new("nm").args(["--undefined-only", "--demangle"]).arg(&object).read()?;
            let panics: Vec<&str> = undefined.lines().filter(|l| PANIC_MARKERS.iter().any(|m| l.contains(m))).collect();
            if !panics.is_empty() {
                return Err(format!(
                    "elfsig-core (features {features:?}) can panic; {} refers to:\n  {}",
                    object.display(),
                    panics.join("\n  ")
                ));
            }
        }
        eprintln!("elfsig-core (features {features:?}): no panic paths");
    }
    Ok(())
}
