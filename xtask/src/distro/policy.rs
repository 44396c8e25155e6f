//! The signed Debian system's policies (docs/POLICY.md), as an administrator keeps them: serial
//! 1 in the image, which its initramfs loads after the module, revoking one signed program; and
//! serial 2 in the archive, as the package `elfsig-policy`, whose postinst loads it and whose
//! trigger rebuilds the initramfs, revoking a second program too. Both programs are `true` with
//! bytes of their own after it (so that their digests are theirs alone), signed like the rest
//! of the system; the policies are signed with the policy key, whose certificate the module
//! embeds as a policy key.

use std::fs;
use std::path::{Path, PathBuf};

use elfsig_guest::image::{
    DISTRO_POLICY, DISTRO_POLICY_PACKAGE, DISTRO_POLICY_PACKAGED_SERIAL, DISTRO_POLICY_SERIAL, DISTRO_REVOKED,
    DISTRO_REVOKED_LATER,
};

use super::files::{copy, package_built, parent_made, write, write_script};
use crate::Result;
use crate::keys::KeyPair;

/// The programs the policies revoke, signed, and the image's policy.
#[derive(Clone, Debug)]
pub struct Policies {
    /// Revoked by the image's policy ([`DISTRO_REVOKED`]).
    revoked: PathBuf,
    /// Revoked by the archive's too ([`DISTRO_REVOKED_LATER`]).
    revoked_later: PathBuf,
    /// The image's policy, serial [`DISTRO_POLICY_SERIAL`].
    first: PathBuf,
}

/// Makes the programs and both policies in `dir`; the package goes into `packages` (a
/// directory of packages to publish). `key` signs the programs, `policy_key` the policies.
pub fn make(
    dir: &Path,
    packages: &Path,
    debian_root: &Path,
    elfsig: &Path,
    key: &KeyPair,
    policy_key: &KeyPair,
) -> Result<Policies> {
    fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let original = fs::read(debian_root.join("usr/bin/true")).map_err(|e| format!("cannot read true: {e}"))?;
    let program = |name: &str, mark: &[u8]| -> Result<PathBuf> {
        let path = dir.join(name);
        fs::write(&path, [&original[..], mark].concat())
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        key.sign(elfsig).arg(&path).run()?;
        Ok(path)
    };
    let revoked = program("revoked", b"revoked by the system's policy")?;
    let revoked_later = program("revoked-later", b"revoked by the archive's policy")?;
    let first = dir.join("policy-1");
    create(elfsig, policy_key, DISTRO_POLICY_SERIAL, &[&revoked], &first)?;
    let second = dir.join("policy-2");
    create(elfsig, policy_key, DISTRO_POLICY_PACKAGED_SERIAL, &[&revoked, &revoked_later], &second)?;
    package(&dir.join("package"), &second, packages)?;
    Ok(Policies { revoked, revoked_later, first })
}

/// `elfsig policy create` of a policy with `serial` revoking the signed files `revoke`, signed
/// with `policy_key`, into `out`.
fn create(elfsig: &Path, policy_key: &KeyPair, serial: u64, revoke: &[&Path], out: &Path) -> Result {
    let mut cmd = policy_key.signing(elfsig, &["policy", "create"]);
    cmd = cmd.args(["--serial", &serial.to_string()]);
    for file in revoke {
        cmd = cmd.arg("--revoke").arg(file);
    }
    cmd.arg("-o").arg(out).run()
}

/// The package `elfsig-policy` holding `policy` in [`DISTRO_POLICY`], built into `packages`.
fn package(tree: &Path, policy: &Path, packages: &Path) -> Result {
    let _ = fs::remove_dir_all(tree);
    copy(policy, &tree.join(DISTRO_POLICY.trim_start_matches('/')), 0o644)?;
    let control = tree.join("DEBIAN");
    write(
        &control.join("control"),
        &format!(
            "Package: {DISTRO_POLICY_PACKAGE}\nVersion: {DISTRO_POLICY_PACKAGED_SERIAL}\nArchitecture: all\n\
             Maintainer: elfsig tests <elfsig@example.invalid>\n\
             Description: the organisation's elfsig policy\n The signed policy every host loads: \
             revoked programs and keys, keys trusted.\n"
        ),
    )?;
    // Loaded at once when the module is there (a host booted with elfsig=off has none); the
    // initramfs, which loads it at every boot, rebuilt by initramfs-tools' trigger.
    write_script(
        &control.join("postinst"),
        &format!(
            "#!/bin/sh\nset -e\nif [ \"$1\" = configure ] && [ -d /sys/kernel/security/elfsig ]; then\n\
             \telfsig -q policy load {DISTRO_POLICY}\nfi\n"
        ),
    )?;
    write(&control.join("triggers"), "activate-noawait update-initramfs\n")?;
    package_built(tree, packages)
}

/// Puts the programs and the first policy into the system `root`.
pub fn install(root: &Path, policies: &Policies) -> Result {
    let inside = |path: &str| root.join(path.trim_start_matches('/'));
    for (from, to) in [(&policies.revoked, DISTRO_REVOKED), (&policies.revoked_later, DISTRO_REVOKED_LATER)] {
        copy(from, &inside(to), 0o755)?;
    }
    parent_made(&inside(DISTRO_POLICY))?;
    copy(&policies.first, &inside(DISTRO_POLICY), 0o644)
}
