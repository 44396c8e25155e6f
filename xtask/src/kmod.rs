//! `cargo xtask build-kmod`: the kernel module, against the test kernel (built and cached on
//! first use) or, with `--kdir`, any prepared Rust-enabled 6.12+ tree, the way DKMS builds
//! out-of-tree modules. `--cert CERT` (repeatable, PEM or DER) embeds certificates in the
//! module's own keyring.

use std::fs;
use std::path::{Path, PathBuf};

use crate::cmd::Cmd;
use crate::kernel::{self, Flavor, Kernel};
use crate::{Result, keys, parse_options, paths, tools};

/// Runs the task.
pub fn run(args: &[String]) -> Result {
    let options = parse_options(args, &[], &["--kdir", "--cert"])?;
    let certs: Vec<PathBuf> = options.values("--cert").map(PathBuf::from).collect();
    // Before any kernel build: a typo in a path should not cost minutes.
    let certs = der_certificates(&certs)?;
    let tree = match options.value("--kdir") {
        Some(kdir) => {
            let tree = PathBuf::from(kdir);
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
    let ko = build(&tree, &certs)?;
    eprintln!("xtask: built {}", ko.display());
    Ok(())
}

fn deps_for_modules() -> Result {
    crate::deps::ensure(kernel::KERNEL_TOOLS)
}

/// Builds `kmod/` against `tree`, embedding `certs` (concatenated DER); returns the module's
/// path under `target/kmod/`.
pub fn build(tree: &Path, certs: &[u8]) -> Result<PathBuf> {
    let kmod = paths::root().join("kmod");
    let out = paths::target().join("kmod");
    fs::create_dir_all(&out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    let certs_der = out.join("embedded-certs.der");
    fs::write(&certs_der, certs).map_err(|e| format!("cannot write {}: {e}", certs_der.display()))?;
    // Kbuild does not know certs.o depends on that file's contents: always reassemble and relink.
    for stale in ["certs.o", "elfsig.o", "elfsig.ko"] {
        let _ = fs::remove_file(kmod.join(stale));
    }
    kernel::make(
        tree,
        &[&format!("M={}", kmod.display()), &format!("ELFSIG_CERTS={}", certs_der.display()), "modules"],
    )?;
    let ko = kmod.join("elfsig.ko");
    check_no_panics(&ko)?;
    let copy = out.join("elfsig.ko");
    fs::copy(&ko, &copy).map_err(|e| format!("cannot copy {}: {e}", ko.display()))?;
    Ok(copy)
}

/// The certificates as concatenated DER.
fn der_certificates(certs: &[PathBuf]) -> Result<Vec<u8>> {
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

/// A panic in the kernel is a BUG(): the module must not refer to any panic routine.
fn check_no_panics(ko: &Path) -> Result {
    let undefined = Cmd::new("nm").arg("-u").arg(ko).read()?;
    let panics: Vec<&str> = undefined.lines().filter(|l| l.to_ascii_lowercase().contains("panic")).collect();
    if panics.is_empty() {
        Ok(())
    } else {
        Err(format!("{} refers to panic symbols:\n  {}", ko.display(), panics.join("\n  ")))
    }
}

/// The test kernel of `flavor` and the module built for it (embedding the module test key).
pub fn for_tests(flavor: Flavor, keys: &keys::TestKeys) -> Result<(Kernel, PathBuf)> {
    let kernel = kernel::test_kernel(flavor, &keys.kernel.cert)?;
    let ko = build(&kernel.tree, &der_certificates(std::slice::from_ref(&keys.module.cert))?)?;
    Ok((kernel, ko))
}
