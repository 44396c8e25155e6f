//! The Debian 12 system elfsig signs and boots: a root file system `mmdebstrap` makes from the
//! Debian archive this machine's apt uses, cached outside the repository and named after its
//! package list and archive, so that a repeat run copies it instead of downloading it again.

use std::fs;
use std::path::{Path, PathBuf};

use crate::deps::{self, Need};
use crate::kernel::Fnv;
use crate::{Result, chroot, paths};

/// What the system holds: what the issue names (systemd, udev, python3, procps, iproute2,
/// less, e2fsprogs, kmod, sudo, ping with its file capability, ssh), and what booting it the
/// way users do takes (initramfs-tools and dracut for the module's early-boot hooks, setcap for
/// ping's capability), and binutils, whose `strip` dracut uses when it finds it.
const PACKAGES: &[&str] = &[
    "systemd-sysv",
    "udev",
    "python3",
    "procps",
    "iproute2",
    "less",
    "e2fsprogs",
    "kmod",
    "sudo",
    "iputils-ping",
    "libcap2-bin",
    "openssh-client",
    "initramfs-tools",
    "dracut-core",
    "binutils",
];

/// The release.
const SUITE: &str = "bookworm";

/// What making it needs on this machine.
pub const HOST_TOOLS: &[Need] = &[Need::Deb("mmdebstrap"), Need::Deb("e2fsprogs"), Need::Deb("util-linux")];

/// Where apt on this machine gets Debian from (deb822 or one-line format); mmdebstrap copies
/// the file into the new system. `ELFSIG_DEBIAN_MIRROR` names a mirror instead.
fn archive() -> Result<String> {
    if let Ok(mirror) = std::env::var("ELFSIG_DEBIAN_MIRROR") {
        return Ok(format!("deb {mirror} {SUITE} main"));
    }
    for file in ["/etc/apt/sources.list.d/debian.sources", "/etc/apt/sources.list"] {
        if fs::read_to_string(file).is_ok_and(|text| text.contains(SUITE)) {
            return Ok(file.to_owned());
        }
    }
    Ok(format!("deb http://deb.debian.org/debian {SUITE} main"))
}

/// The pristine root file system, made if not cached. Never modify it: copy it.
pub fn pristine() -> Result<PathBuf> {
    if !deps::is_root() {
        return Err("making the Debian system's image (mmdebstrap, chroot, file ownership) needs root".into());
    }
    deps::ensure(HOST_TOOLS)?;
    let archive = archive()?;
    let mut key = Fnv::new();
    key.add(SUITE.as_bytes()).add(archive.as_bytes());
    if Path::new(&archive).exists() {
        key.add(&fs::read(&archive).map_err(|e| format!("cannot read {archive}: {e}"))?);
    }
    for package in PACKAGES {
        key.add(package.as_bytes());
    }
    chroot::cached_root(
        &paths::cache().join("distro"),
        &format!("{SUITE}-{:016x}", key.finish()),
        &format!("the Debian {SUITE} system"),
        &["--variant=apt".into(), "--quiet".into(), format!("--include={}", PACKAGES.join(","))],
        SUITE,
        &[archive],
    )
}
