//! `cargo xtask build-kmod`: the kernel module, against the test kernel (built and cached on
//! first use) or, with `--kdir`, any prepared Rust-enabled 6.12+ tree, the way DKMS builds
//! out-of-tree modules. `--cert CERT` (repeatable, PEM or DER) embeds certificates in the
//! module's own keyring, `--policy-cert CERT` those of the keys that sign policies.

use std::fs;
use std::path::{Path, PathBuf};

use crate::cmd::Cmd;
use crate::kernel::{self, Flavor, Kernel};
use crate::{Result, flags, keys, paths, tools};

/// Runs the task.
pub fn run(options: &flags::BuildKmod) -> Result {
    // Before any kernel build: a typo in a path should not cost minutes.
    let certs = Embedded::from_files(&options.cert, &options.policy_cert)?;
    let tree = match &options.kdir {
        Some(kdir) => {
            let tree = kdir.clone();
            kernel::check_prepared(&tree)?;
            deps_for_modules()?;
            tree
        }
        None => {
            // The test keys need openssl, which the kernel tools bring.
            deps_for_modules()?;
            let elfsig = tools::build_cli()?;
            let keys = keys::test_keys(&elfsig)?;
            kernel::test_kernel(Flavor::Release, &keys.kernel.cert)?.tree
        }
    };
    let ko = build(&tree, &certs, Lints::Warn)?;
    eprintln!("xtask: built {}", ko.display());
    Ok(())
}

/// How the module's own code is held to the kernel's rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lints {
    /// Compiler warnings are warnings: any tree, any toolchain (`--kdir`, DKMS).
    Warn,
    /// The tests: formatted with the kernel's rustfmt configuration, linted with the kernel's
    /// clippy set (`CLIPPY=1`), and any warning of rustc, clippy or the C compiler fails.
    Deny,
}

fn deps_for_modules() -> Result {
    crate::deps::ensure(kernel::KERNEL_TOOLS)
}

/// Certificates a module embeds, each kind as concatenated DER.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Embedded {
    /// Of the keys trusted to sign programs: the module's own keyring.
    pub programs: Vec<u8>,
    /// Of the keys trusted to sign policies: `.elfsig_policy`.
    pub policies: Vec<u8>,
}

impl Embedded {
    /// The certificates in the files `programs` and `policies` (PEM or DER).
    pub fn from_files(programs: &[PathBuf], policies: &[PathBuf]) -> Result<Embedded> {
        Ok(Embedded { programs: der_certificates(programs)?, policies: der_certificates(policies)? })
    }
}

/// Builds `kmod/` against `tree`, embedding `certs`; returns the module's path under
/// `target/kmod/`.
pub fn build(tree: &Path, certs: &Embedded, lints: Lints) -> Result<PathBuf> {
    let kmod = paths::root().join("kmod");
    let out = paths::target().join("kmod");
    fs::create_dir_all(&out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    let certs_der = out.join("embedded-certs.der");
    fs::write(&certs_der, &certs.programs).map_err(|e| format!("cannot write {}: {e}", certs_der.display()))?;
    let policy_der = out.join("embedded-policy-certs.der");
    fs::write(&policy_der, &certs.policies).map_err(|e| format!("cannot write {}: {e}", policy_der.display()))?;
    // Kbuild does not know certs.o depends on that file's contents: always reassemble and relink.
    for stale in ["certs.o", "elfsig.o", "elfsig.ko"] {
        let _ = fs::remove_file(kmod.join(stale));
    }
    let mut args = vec![
        format!("M={}", kmod.display()),
        format!("ELFSIG_CERTS={}", certs_der.display()),
        format!("ELFSIG_POLICY_CERTS={}", policy_der.display()),
        // elfsig's version: the workspace's, which DKMS's tree says too.
        format!("ELFSIG_VERSION={}", env!("CARGO_PKG_VERSION")),
        // The module's BTF without a distilled base, as kmod/dkms/build makes it (it says why).
        "MODULE_PAHOLE_FLAGS=".to_owned(),
        "RESOLVE_BTFIDS_FLAGS=".to_owned(),
        "modules".to_owned(),
    ];
    // Debug information for the kfuncs alone (kmod/shim/kfuncs.c says why); against a test
    // kernel, its C flags for BTF (kernel.rs).
    let mut kcflags = "-g0".to_owned();
    if kernel::is_test_kernel(tree) {
        kcflags = format!("{kcflags} {}", kernel::NO_BTF_TYPE_TAGS);
    }
    if lints == Lints::Deny {
        check_format(tree, &kmod)?;
        // Clippy's verdicts are cached with the object: recompile the Rust crate to see them.
        let _ = fs::remove_file(kmod.join("elfsig_main.o"));
        args.extend(["CLIPPY=1", "KRUSTFLAGS=-Dwarnings"].map(str::to_owned));
        kcflags.push_str(" -Werror");
    }
    args.push(format!("KCFLAGS={kcflags}"));
    kernel::make(tree, &args.iter().map(String::as_str).collect::<Vec<_>>())?;
    let ko = kmod.join("elfsig.ko");
    check_no_panics(&ko)?;
    let copy = out.join("elfsig.ko");
    fs::copy(&ko, &copy).map_err(|e| format!("cannot copy {}: {e}", ko.display()))?;
    Ok(copy)
}

/// The certificates as concatenated DER.
pub fn der_certificates(certs: &[PathBuf]) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    for cert in certs {
        fs::File::open(cert).map_err(|e| format!("cannot read certificate {}: {e}", cert.display()))?;
        let as_der = |inform: &str| {
            Cmd::new("openssl").args(["x509", "-inform", inform, "-outform", "DER", "-in"]).arg(cert).read_bytes()
        };
        let der = as_der("PEM")
            .or_else(|_| as_der("DER"))
            .map_err(|_| format!("{} is neither a PEM nor a DER certificate", cert.display()))?;
        out.extend_from_slice(&der);
    }
    Ok(out)
}

/// The module's Rust, formatted as the kernel formats its own (`make rustfmtcheck` covers only
/// the kernel tree): rustfmt with the tree's configuration, from the crate root down. The
/// included elfsig-core is skipped (`#[rustfmt::skip]`): the workspace formats it.
fn check_format(tree: &Path, kmod: &Path) -> Result {
    Cmd::new("rustfmt")
        .args(["--check", "--edition", "2021", "--config-path"])
        .arg(tree.join(".rustfmt.toml"))
        .arg(kmod.join("elfsig_main.rs"))
        .run()
}

/// A panic in the kernel is a BUG(): the module must not refer to any panic routine.
pub fn check_no_panics(ko: &Path) -> Result {
    let undefined = Cmd::new("nm").arg("-u").arg(ko).read()?;
    let panics: Vec<&str> = undefined.lines().filter(|l| l.to_ascii_lowercase().contains("panic")).collect();
    if panics.is_empty() {
        Ok(())
    } else {
        Err(format!("{} refers to panic symbols:\n  {}", ko.display(), panics.join("\n  ")))
    }
}

/// A module built for `release`: no panic symbol, and that exact release in its vermagic.
pub fn check_built_for(ko: &Path, release: &str) -> Result {
    check_no_panics(ko)?;
    let vermagic = Cmd::new("modinfo").args(["-F", "vermagic"]).arg(ko).read()?;
    if vermagic.starts_with(&format!("{release} ")) {
        Ok(())
    } else {
        Err(format!("{} is for {vermagic:?}, not {release}", ko.display()))
    }
}

/// A module built for tests: its flavor of kernel, the certificates it embeds, the kernel, the
/// module.
type Built = (Flavor, Embedded, Kernel, PathBuf);

/// The test kernel of `flavor` and the module built for it (embedding the module's and the
/// ECDSA test keys). Built once per process: `cargo xtask test` asks for it in several parts.
pub fn for_tests(flavor: Flavor, keys: &keys::TestKeys) -> Result<(Kernel, PathBuf)> {
    static BUILT: std::sync::Mutex<Vec<Built>> = std::sync::Mutex::new(Vec::new());
    let certs = Embedded::from_files(&keys.embedded(), std::slice::from_ref(&keys.policy.cert))?;
    let mut built = BUILT.lock().map_err(|_| "a thread building the module panicked")?;
    if let Some((_, _, kernel, ko)) = built.iter().find(|(f, c, _, _)| *f == flavor && *c == certs) {
        return Ok((kernel.clone(), ko.clone()));
    }
    let kernel = kernel::test_kernel(flavor, &keys.kernel.cert)?;
    let built_ko = build(&kernel.tree, &certs, Lints::Deny)?;
    crate::btf::check_module_deduplicated(&built_ko)?;
    // Its own copy: the next build, of the other flavor, writes the same path. A flavor's
    // copy is overwritten by its next build (other certificates), so only that one is kept.
    built.retain(|(f, _, _, _)| *f != flavor);
    let ko = paths::target().join(format!("kmod/{flavor:?}/elfsig.ko").to_lowercase());
    let dir = ko.parent().ok_or("no directory for the module")?;
    fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    fs::copy(&built_ko, &ko).map_err(|e| format!("cannot copy {}: {e}", built_ko.display()))?;
    built.push((flavor, certs, kernel.clone(), ko.clone()));
    Ok((kernel, ko))
}
