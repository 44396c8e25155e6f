//! elfsig's own packages, made where the keys are, as README's "Keeping hosts up to date" has
//! an organisation make them, so that hosts under enforce need neither DKMS nor a compiler
//! (DKMS cannot build there: what a build runs is unsigned):
//! - `elfsig`: the CLI and the guard (their debug information stripped, as Debian's programs
//!   are: 6 MB and 0.7 MB instead of 45 and 7, which the module hashes at their first exec and
//!   the initramfs carries), the early-boot hooks (`kmod/boot/`), the unit, and the kernel hook
//!   that fails the installation of a kernel without the module;
//! - `elfsig-modules-<release>`, for each kernel the archive carries (Debian's 7.2, and the 7.3
//!   the system updates to): the module built for
//!   exactly that kernel in the build root (the Debian 13 root, with the kernel's headers, as
//!   DKMS would build it), stripped of its debug information as Debian's own modules are (the
//!   kernel reads and hashes the whole file at every load: 0.5 MB instead of 2.7), signed with
//!   the Machine Owner Key the hosts' firmware holds, and left uncompressed (the kernel would
//!   decompress it at every load; `elfsig sign` leaves modules alone, so the archive's signing
//!   keeps the MOK signature intact).
//!
//! Both at elfsig's version, which the system is made with, and at a higher one
//! ([`ELFSIG_UPGRADE_SUFFIX`]), which its upgrade installs while the older module is loaded
//! and locked; the update's kernel, which comes after elfsig's upgrade, at the higher one only. Our own packages rather than `dkms mkbmdeb`: Debian 13's DKMS has none (it went
//! with DKMS 3), and a package of our own depends on exactly the kernel it was built for.

use std::fs;
use std::path::{Path, PathBuf};

use elfsig_guest::image::{ELFSIG_PACKAGE, elfsig_upgrade_version, modules_package};

use super::files::{copy, copy_stripped, package_built, symlink, write, write_script};
use crate::debian_kernel::{self, DebianKernel};
use crate::{Result, chroot, dkms, kmod, paths};

/// What goes into the packages.
#[derive(Debug)]
pub struct Contents<'a> {
    /// The `elfsig` CLI.
    pub elfsig: &'a Path,
    /// `elfsig-guard`.
    pub guard: &'a Path,
    /// The certificates the module embeds.
    pub certs: &'a kmod::Embedded,
}

/// The Machine Owner Key's certificate (DER) the modules are signed with: the one to enrol in
/// the hosts' firmware.
#[derive(Clone, Debug)]
pub struct Mok {
    pub cert: PathBuf,
}

/// The versions the archive carries: the system's, then the newer one.
pub fn versions() -> [String; 2] {
    [dkms::VERSION.to_owned(), elfsig_upgrade_version()]
}

/// Builds the packages of both versions into `packages` (a directory of packages to publish).
pub fn make(debian: &DebianKernel, contents: &Contents<'_>, packages: &Path) -> Result<Mok> {
    let work = paths::target().join("distro/packages");
    let _ = fs::remove_dir_all(&work);
    fs::create_dir_all(&work).map_err(|e| format!("cannot create {}: {e}", work.display()))?;
    let [older, newer] = versions();
    let builds =
        [(debian_kernel::RELEASE, &older), (debian_kernel::RELEASE, &newer), (debian_kernel::UPDATE_RELEASE, &newer)];
    for (release, version) in builds {
        let built = debian_kernel::build_module_as(debian, release, contents.certs, version)?;
        let ko = work.join(format!("elfsig-{release}-{version}.ko"));
        fs::copy(&built, &ko).map_err(|e| format!("cannot copy {}: {e}", built.display()))?;
        mok_sign(&debian.root, &ko, release)?;
        modules_package_made(&work.join("modules"), &ko, release, version, packages)?;
    }
    for version in [&older, &newer] {
        elfsig_package(&work.join("elfsig"), contents, version, packages)?;
    }
    let _ = fs::remove_dir_all(&work);
    Ok(Mok { cert: mok_dir().join("mok.der") })
}

/// Where the pipeline keeps its Machine Owner Key (made by `mok-sign` on first use).
fn mok_dir() -> PathBuf {
    paths::cache().join("distro-mok")
}

/// Strips `ko`'s debug information (its BTF stays) and signs it, built for `release`, with the
/// pipeline's Machine Owner Key through `kmod/boot/mok-sign`, in the build root (whose kernel
/// headers hold that kernel's `sign-file`, and whose binutils DKMS builds with).
fn mok_sign(build_root: &Path, ko: &Path, release: &str) -> Result {
    let work = paths::target().join("distro/mok-sign");
    let _ = fs::remove_dir_all(&work);
    let keys = mok_dir();
    fs::create_dir_all(&keys).map_err(|e| format!("cannot create {}: {e}", keys.display()))?;
    copy(&paths::root().join("kmod/boot/mok-sign"), &work.join("mok-sign"), 0o755)?;
    copy(ko, &work.join("elfsig.ko"), 0o644)?;
    let private = std::os::unix::fs::PermissionsExt::from_mode(0o700);
    let inside = work.join("mok");
    fs::create_dir_all(&inside).map_err(|e| format!("cannot create {}: {e}", inside.display()))?;
    fs::set_permissions(&inside, private).map_err(|e| format!("cannot chmod {}: {e}", inside.display()))?;
    for name in ["mok.key", "mok.der"] {
        if keys.join(name).exists() {
            copy(&keys.join(name), &inside.join(name), 0o600)?;
        }
    }
    chroot::run_in_with_bind(
        build_root,
        &work,
        "tmp/elfsig-mok-sign",
        &format!(
            "strip --strip-debug /tmp/elfsig-mok-sign/elfsig.ko && \
             KDIR=/usr/src/linux-headers-{release} ELFSIG_MOK_DIR=/tmp/elfsig-mok-sign/mok \
             sh /tmp/elfsig-mok-sign/mok-sign /tmp/elfsig-mok-sign/elfsig.ko >/dev/null"
        ),
    )?;
    let _ = fs::remove_dir(build_root.join("tmp/elfsig-mok-sign"));
    for name in ["mok.key", "mok.der"] {
        if !keys.join(name).exists() {
            copy(&inside.join(name), &keys.join(name), 0o600)?;
        }
    }
    fs::copy(work.join("elfsig.ko"), ko).map_err(|e| format!("cannot copy the signed module: {e}"))?;
    fs::remove_dir_all(&work).map_err(|e| format!("cannot remove {}: {e}", work.display()))?;
    Ok(())
}

/// The package `elfsig` at `version`, made in `tree`, into `packages`.
fn elfsig_package(tree: &Path, contents: &Contents<'_>, version: &str, packages: &Path) -> Result {
    let _ = fs::remove_dir_all(tree);
    let boot = paths::root().join("kmod/boot");
    for (from, to) in [(contents.elfsig, "usr/bin/elfsig"), (contents.guard, "usr/sbin/elfsig-guard")] {
        copy_stripped(from, &tree.join(to), 0o755)?;
    }
    let files: [(&Path, &str, u32); 9] = [
        (&boot.join("initramfs-tools/hooks/elfsig"), "usr/share/initramfs-tools/hooks/elfsig", 0o755),
        (
            &boot.join("initramfs-tools/scripts/init-top/elfsig"),
            "usr/share/initramfs-tools/scripts/init-top/elfsig",
            0o755,
        ),
        (
            &boot.join("initramfs-tools/scripts/init-top/elfsig-wait"),
            "usr/share/initramfs-tools/scripts/init-top/elfsig-wait",
            0o755,
        ),
        (&boot.join("dracut/90elfsig/module-setup.sh"), "usr/lib/dracut/modules.d/90elfsig/module-setup.sh", 0o755),
        (&boot.join("dracut/90elfsig/elfsig-load.sh"), "usr/lib/dracut/modules.d/90elfsig/elfsig-load.sh", 0o755),
        (&boot.join("dracut/90-elfsig.conf"), "etc/dracut.conf.d/90-elfsig.conf", 0o644),
        (&boot.join("modprobe.d/elfsig.conf"), "etc/modprobe.d/elfsig.conf", 0o644),
        (&boot.join("systemd/elfsig.service"), "usr/lib/systemd/system/elfsig.service", 0o644),
        (&boot.join("kernel/postinst.d/00-elfsig"), "usr/share/kernel/postinst.d/00-elfsig", 0o755),
    ];
    for (from, to, mode) in files {
        copy(from, &tree.join(to), mode)?;
    }
    symlink("../elfsig.service", &tree.join("usr/lib/systemd/system/sysinit.target.wants/elfsig.service"))?;
    let control = tree.join("DEBIAN");
    write(
        &control.join("control"),
        &format!(
            "Package: {ELFSIG_PACKAGE}\nVersion: {version}\nArchitecture: amd64\n\
             Maintainer: elfsig tests <elfsig@example.invalid>\n\
             Depends: kmod, initramfs-tools | dracut-core\n\
             Description: ELF code signing: the tools and the early-boot hooks\n \
             elfsig signs ELF files and checks them; its module (elfsig-modules-RELEASE, one for\n \
             each kernel) refuses unsigned code. This package puts the module and its mapping\n \
             guard in the initramfs, and refuses kernels that have no module.\n"
        ),
    )?;
    // No trigger: its module's package, which an upgrade upgrades with it, rebuilds the
    // initramfs, which takes the new hooks, guard and parameters.
    write(&control.join("conffiles"), "/etc/dracut.conf.d/90-elfsig.conf\n/etc/modprobe.d/elfsig.conf\n")?;
    package_built(tree, packages)
}

/// The package of the module `ko` (signed) for the kernel `release` at `version`, made in
/// `tree`, into `packages`.
fn modules_package_made(tree: &Path, ko: &Path, release: &str, version: &str, packages: &Path) -> Result {
    let _ = fs::remove_dir_all(tree);
    copy(ko, &tree.join(format!("usr/lib/modules/{release}/updates/elfsig.ko")), 0o644)?;
    let control = tree.join("DEBIAN");
    write(
        &control.join("control"),
        &format!(
            "Package: {}\nVersion: {version}\nArchitecture: amd64\n\
             Maintainer: elfsig tests <elfsig@example.invalid>\n\
             Depends: {ELFSIG_PACKAGE} (= {version}), linux-image-{release}\n\
             Description: elfsig's kernel module for Linux {release}\n \
             Built for this kernel alone and signed with the organisation's Machine Owner Key.\n",
            modules_package(release)
        ),
    )?;
    // modules.dep, for modprobe and the initramfs, after the module comes and goes; and that
    // kernel's initramfs, which takes the module, rebuilt (no trigger here: initramfs-tools'
    // rebuilds only the newest kernel's) unless it was built after the module was unpacked
    // (both change times), as the kernel's own installation beside this package builds it.
    let depmod = format!("if [ -d /usr/lib/modules/{release} ]; then\n\tdepmod -a {release}\nfi\n");
    let initramfs = format!(
        "initrd=/boot/initrd.img-{release}\n\
         if [ \"$1\" = configure ] && [ -e \"$initrd\" ] && command -v update-initramfs >/dev/null &&\n\
         \t[ -z \"$(find \"$initrd\" -newercc /usr/lib/modules/{release}/updates/elfsig.ko)\" ]; then\n\
         \tupdate-initramfs -u -k {release}\nfi\n"
    );
    write_script(&control.join("postinst"), &format!("#!/bin/sh\nset -e\n{depmod}{initramfs}"))?;
    write_script(&control.join("postrm"), &format!("#!/bin/sh\nset -e\n{depmod}"))?;
    package_built(tree, packages)
}
