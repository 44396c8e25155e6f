//! `cargo xtask dkms [--dest DIR] [--cert CERT]...`: stages the kernel module's DKMS source tree
//! (`/usr/src/elfsig-VERSION` by default): `dkms.conf` at its top, `kmod/`, and the elfsig-core
//! sources the module compiles in, so that `dkms install elfsig/VERSION` builds the module for
//! every installed kernel with Rust support, and again for each new one. `cargo xtask test` runs
//! `dkms build` on such a tree against the cached test kernel, with DKMS trees of its own, and
//! checks that the build step says plainly why not for kernels that cannot build it.

use std::fs;
use std::path::{Path, PathBuf};

use crate::cmd::Cmd;
use crate::deps::{self, Need};
use crate::{Result, flags, kmod, paths};

/// The module's version, as DKMS knows it.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// What `dkms` needs.
pub const DKMS_PACKAGES: &[Need] = &[Need::Deb("dkms")];

/// Runs the task.
pub fn run(options: &flags::Dkms) -> Result {
    let certs = kmod::Embedded::from_files(&options.cert, &options.policy_cert)?;
    let dest = options.dest.clone().unwrap_or_else(|| PathBuf::from(format!("/usr/src/elfsig-{VERSION}")));
    stage(&dest, &certs)?;
    eprintln!("xtask: staged {}; now, as root:", dest.display());
    eprintln!("  dkms install elfsig/{VERSION}        # builds and installs it for the running kernel");
    eprintln!("  dkms autoinstall                      # and for every other installed kernel");
    Ok(())
}

/// Copies what DKMS builds from into `dest` (emptied first): the sources only, never build
/// products, and `dkms.conf` with this version.
pub fn stage(dest: &Path, certs: &kmod::Embedded) -> Result {
    stage_as(dest, certs, VERSION)
}

/// As [`stage`], the tree saying it is elfsig `version` (which the module built from it
/// reports): what the archive's test of an elfsig upgrade builds a newer module from.
pub fn stage_as(dest: &Path, certs: &kmod::Embedded, version: &str) -> Result {
    let root = paths::root();
    if dest.exists() {
        fs::remove_dir_all(dest).map_err(|e| format!("cannot empty {}: {e}", dest.display()))?;
    }
    copy_sources(&root.join("kmod"), &dest.join("kmod"), &["rs", "c", "h", "S"], &["Kbuild", "build", "rust-tree"])?;
    copy_sources(&root.join("crates/elfsig-core/src"), &dest.join("crates/elfsig-core/src"), &["rs"], &[])?;
    let conf = fs::read_to_string(root.join("kmod/dkms/dkms.conf"))
        .map_err(|e| format!("cannot read kmod/dkms/dkms.conf: {e}"))?
        .replace("@VERSION@", version);
    write(&dest.join("dkms.conf"), conf.as_bytes())?;
    if !certs.programs.is_empty() {
        write(&dest.join("kmod/dkms/certs.der"), &certs.programs)?;
    }
    if !certs.policies.is_empty() {
        write(&dest.join("kmod/dkms/policy-certs.der"), &certs.policies)?;
    }
    Ok(())
}

fn write(path: &Path, bytes: &[u8]) -> Result {
    fs::write(path, bytes).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Copies, recursively, the files of `from` whose extension is in `extensions` or whose name is
/// in `names`.
fn copy_sources(from: &Path, to: &Path, extensions: &[&str], names: &[&str]) -> Result {
    fs::create_dir_all(to).map_err(|e| format!("cannot create {}: {e}", to.display()))?;
    let entries = fs::read_dir(from).map_err(|e| format!("cannot read {}: {e}", from.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("cannot read {}: {e}", from.display()))?;
        let (path, name) = (entry.path(), entry.file_name());
        if path.is_dir() {
            copy_sources(&path, &to.join(&name), extensions, names)?;
            continue;
        }
        let wanted =
            path.extension().is_some_and(|e| extensions.iter().any(|x| e == *x)) || names.iter().any(|n| name == *n);
        // Kbuild's generated `elfsig.mod.c` is a build product.
        if wanted && !name.to_string_lossy().ends_with(".mod.c") {
            fs::copy(&path, to.join(&name)).map_err(|e| format!("cannot copy {}: {e}", path.display()))?;
        }
    }
    Ok(())
}

/// The test: `dkms add` and `dkms build` against the kernel in `tree`, in DKMS trees under
/// target/; then the build step against trees that cannot build a Rust module.
pub fn test(tree: &Path) -> Result {
    deps::ensure(DKMS_PACKAGES)?;
    let work = paths::target().join("dkms-test");
    if work.exists() {
        fs::remove_dir_all(&work).map_err(|e| format!("cannot empty {}: {e}", work.display()))?;
    }
    let (sources, dkms_tree, install) = (work.join("src"), work.join("dkms"), work.join("install"));
    for dir in [&dkms_tree, &install] {
        fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    stage(&sources.join(format!("elfsig-{VERSION}")), &kmod::Embedded::default())?;
    let release = crate::kernel::release(tree)?;
    let release = release.as_str();
    let dkms = |action: &str| {
        Cmd::new("dkms")
            .env("PATH", deps::path_with_cargo_bin())
            .arg("--dkmstree")
            .arg(&dkms_tree)
            .arg("--sourcetree")
            .arg(&sources)
            .arg("--installtree")
            .arg(&install)
            .args([action, "-m", "elfsig", "-v", VERSION])
    };
    dkms("add").run()?;
    dkms("build").args(["-k", release, "--kernelsourcedir"]).arg(tree).run()?;
    let ko = dkms_tree.join(format!("elfsig/{VERSION}/{release}/{}/module/elfsig.ko", std::env::consts::ARCH));
    if !ko.exists() {
        return Err(format!("dkms build reported success but left no {}", ko.display()));
    }
    kmod::check_built_for(&ko, release)?;
    eprintln!("xtask: dkms built {} for {release}", ko.display());
    refuses_kernels_that_cannot_build_it(&work, tree)
}

/// The build step says why, and fails, for a tree without `.config`, without Rust, without
/// Rust build artifacts and a source to make them from, with a source of another version, or
/// built with another rustc.
fn refuses_kernels_that_cannot_build_it(work: &Path, tree: &Path) -> Result {
    let config = fs::read_to_string(tree.join(".config")).map_err(|e| format!("cannot read .config: {e}"))?;
    let fake = work.join("fake-kernel");
    // Without a source to make the Rust artifacts from (this machine has the test kernel's), or
    // with the source of another version.
    let no_source = work.join("no-such-source.tar.xz");
    let other_source = work.join("linux-source-1.2.tar.xz");
    let unpacked = work.join("other-source/linux-source-1.2");
    fs::create_dir_all(&unpacked).map_err(|e| format!("cannot create {}: {e}", unpacked.display()))?;
    write(&unpacked.join("Makefile"), b"VERSION = 1\nPATCHLEVEL = 2\nSUBLEVEL = 3\n")?;
    Cmd::new("tar")
        .arg("-cJf")
        .arg(&other_source)
        .arg("-C")
        .arg(work.join("other-source"))
        .arg("linux-source-1.2")
        .run()?;
    let cases: [(&str, Option<String>, bool, &Path, &str); 5] = [
        ("no .config", None, false, &no_source, "it has no .config"),
        (
            "no Rust",
            Some(config.replace("CONFIG_RUST=y", "# CONFIG_RUST is not set")),
            true,
            &no_source,
            "without Rust support",
        ),
        (
            "no Rust artifacts",
            Some(config.clone()),
            false,
            &no_source,
            "no Rust build artifacts (rust/), and there is no",
        ),
        (
            "a source of another version",
            Some(config.clone()),
            false,
            &other_source,
            "linux-source-1.2.tar.xz is Linux 1.2.3, the kernel is 6.12.117",
        ),
        (
            "another rustc",
            Some(
                config
                    .lines()
                    .map(|l| {
                        if l.starts_with("CONFIG_RUSTC_VERSION_TEXT=") {
                            "CONFIG_RUSTC_VERSION_TEXT=\"rustc 1.0.0\""
                        } else {
                            l
                        }
                    })
                    .collect::<Vec<_>>()
                    .join("\n"),
            ),
            true,
            &no_source,
            "was built with rustc 1.0.0 and this machine's rustc is rustc ",
        ),
    ];
    let cache = work.join("kbuild");
    let build = work.join(format!("src/elfsig-{VERSION}/kmod/dkms/build"));
    for (what, config, artifacts, source, expected) in cases {
        let _ = fs::remove_dir_all(&fake);
        fs::create_dir_all(fake.join("rust")).map_err(|e| format!("cannot create {}: {e}", fake.display()))?;
        if let Some(config) = config {
            write(&fake.join(".config"), config.as_bytes())?;
        }
        fs::create_dir_all(fake.join("include/config"))
            .map_err(|e| format!("cannot create {}: {e}", fake.display()))?;
        write(&fake.join("include/config/kernel.release"), b"6.12.117-fake\n")?;
        write(&fake.join("Module.symvers"), b"")?;
        if artifacts {
            for name in ["rust/libkernel.rmeta", "rust/libmacros.so"] {
                write(&fake.join(name), b"")?;
            }
        }
        let out = std::process::Command::new("sh")
            .arg(&build)
            .arg(&fake)
            .env("PATH", deps::path_with_cargo_bin())
            .env("ELFSIG_KERNEL_SOURCE", source)
            .env("ELFSIG_KBUILD_CACHE", &cache)
            .output()
            .map_err(|e| format!("cannot run {}: {e}", build.display()))?;
        let stderr = String::from_utf8_lossy(&out.stderr);
        let said = format!("elfsig: cannot build for the kernel in {}: ", fake.display());
        if out.status.success() || !stderr.starts_with(&said) || !stderr.contains(expected) {
            return Err(format!("dkms build step, {what}: {} and said {stderr:?}, expected {expected:?}", out.status));
        }
        // A refused source leaves no half-made tree behind.
        if cache.join("6.12.117-fake").exists() || cache.join("6.12.117-fake.new").exists() {
            return Err(format!("dkms build step, {what}: left a Rust build tree in {}", cache.display()));
        }
    }
    eprintln!("xtask: the dkms build step refuses, saying why, kernels that cannot build the module");
    Ok(())
}
