//! Debian's own kernel, next to the 6.12 test kernel: Linux 7.2 from trixie-backports, built by
//! Debian with gcc, `CONFIG_RUST=y`, BTF and the BPF LSM. Nothing of it is rebuilt: the module is
//! built for it and the VM boots its unmodified `vmlinuz`.
//!
//! Everything happens in a Debian 13 root that `mmdebstrap` makes once (cached outside the
//! repository, named after what goes into it): the kernel's packages, its headers and source,
//! and the very toolchain Debian built the kernel with (trixie's gcc-14, rustc 1.85.1, bindgen),
//! which README's Debian 13 section has a user install; and a system's own packages (systemd,
//! initramfs-tools...). That root is what a Debian user's machine has after `apt install`, so
//! the module is built there as DKMS builds it for them, through `kmod/dkms/build`, which makes
//! the Rust build artifacts Debian's headers leave out from `linux-source-7.2`
//! (`kmod/dkms/rust-tree`); and the signed Debian system (`cargo xtask distro`) is a copy of it.

use std::fs;
use std::path::PathBuf;

use crate::chroot::{self, run_in};
use crate::cmd::Cmd;
use crate::deps::{self, Need};
use crate::kernel::Fnv;
use crate::{Result, dkms, kmod, paths};

/// The kernel: its release (`uname -r`), and the version of its packages.
pub const RELEASE: &str = elfsig_guest::image::DISTRO_KERNEL;
const PACKAGE_VERSION: &str = "7.2.12-1~bpo13+1";
/// How tasks and reports name it.
pub const NAME: &str = "debian-7.2";

/// The kernel update the signed Debian system takes under enforce (`cargo xtask distro`): what
/// `linux-image-amd64` from trixie-backports installs, built like the 7.2 kernel (gcc-14,
/// rustc 1.85.1, BTF, the BPF LSM among its LSMs). The archive carries it and the module built
/// for it; the build root has its headers and source, to build that module.
pub const UPDATE_RELEASE: &str = elfsig_guest::image::DISTRO_KERNEL_UPDATE;
const UPDATE_PACKAGE_VERSION: &str = "7.3.4-1~bpo13+1";
/// The source package of the update's kernel (the module's Rust build artifacts come from it).
const UPDATE_SOURCE: &str = "linux-source-7.3";

/// What the archive's mirror downloads for the kernel update (its dependencies come along).
pub fn update_image_package() -> String {
    format!("linux-image-{UPDATE_RELEASE}={UPDATE_PACKAGE_VERSION}")
}

/// The archive; `ELFSIG_DEBIAN_MIRROR` overrides it.
pub const MIRROR: &str = "http://deb.debian.org/debian";

/// What the build root needs on this machine (modinfo, from kmod, reads the module built there).
pub const HOST_TOOLS: &[Need] = &[Need::Deb("mmdebstrap"), Need::Deb("util-linux"), Need::Deb("kmod")];

/// README's Debian 13 section, its first `apt install` (from trixie-backports): the kernel, its
/// headers and its source (Debian's headers lack the Rust build artifacts, which
/// `kmod/dkms/rust-tree` makes from the source). The kernel's package pulls in its modules, among
/// them the filesystems the VM suite's unprivileged cases mount.
fn kernel_packages() -> [String; 3] {
    [format!("linux-image-{RELEASE}"), format!("linux-headers-{RELEASE}"), "linux-source-7.2".to_owned()]
}

/// README's Debian 13 section, its second `apt install`: DKMS and the toolchain Debian built the
/// kernel with (the kernel's .config names gcc-14, rustc 1.85.1 and bindgen 0.71.1, which are
/// trixie's), and what a kernel module build needs besides.
const BUILD_PACKAGES: &[&str] = &[
    "dkms",
    "rustc",
    "rust-src",
    "bindgen",
    "libclang-dev",
    "dwarves",
    "bc",
    "bison",
    "flex",
    "libelf-dev",
    "libssl-dev",
];

/// What the system holds besides: what the signed system's checks use (systemd, udev, python3,
/// procps, iproute2, less, e2fsprogs, sudo, ping, setcap, ssh), what booting it the way users
/// do takes (initramfs-tools, and dracut for the module's early-boot hooks; zstd, which both
/// compress with), and what the build root had beside the build's own tools (openssl, kmod,
/// cpio, xz-utils), which a Debian system has; what a Debian host with Secure Boot boots through
/// (Debian's signed shim and grub, and mokutil, with which an administrator enrols DKMS's key),
/// and virt-fw-vars (python3-virt-firmware), with which the test enrols it in the firmware's
/// variables instead of MokManager's screen.
const SYSTEM_PACKAGES: &[&str] = &[
    "systemd-sysv",
    "udev",
    "python3",
    "procps",
    "iproute2",
    "less",
    "e2fsprogs",
    "sudo",
    "iputils-ping",
    "libcap2-bin",
    "openssh-client",
    "initramfs-tools",
    "dracut-core",
    "zstd",
    "openssl",
    "kmod",
    "cpio",
    "xz-utils",
    "shim-signed",
    "grub-efi-amd64-signed",
    "mokutil",
    "python3-virt-firmware",
];

/// README's Debian 13 section's two `apt install` commands, which make the root what it is.
#[cfg(test)]
pub fn readme_install_commands() -> [String; 2] {
    [
        format!("apt install -t trixie-backports {}", kernel_packages().join(" ")),
        format!("apt install {}", BUILD_PACKAGES.join(" ")),
    ]
}

/// Everything the root holds, the kernel's packages pinned to the version tested.
fn packages() -> Vec<String> {
    let mut packages: Vec<String> = kernel_packages().map(|p| format!("{p}={PACKAGE_VERSION}")).to_vec();
    // What README's `-t trixie-backports` does for the kernel's dependencies: its package
    // needs a newer linux-base than trixie's.
    packages.push("linux-base/trixie-backports".to_owned());
    // What the pipeline builds the update's module with (README, "elfsig's own packages").
    packages.extend(
        [format!("linux-headers-{UPDATE_RELEASE}"), UPDATE_SOURCE.to_owned()]
            .map(|p| format!("{p}={UPDATE_PACKAGE_VERSION}")),
    );
    packages.extend(BUILD_PACKAGES.iter().chain(SYSTEM_PACKAGES).map(|p| (*p).to_owned()));
    packages
}

/// Debian's kernel, ready to build modules for and to boot.
#[derive(Clone, Debug)]
pub struct DebianKernel {
    /// The Debian 13 root (never modified but by the module's builds: copy it).
    pub root: PathBuf,
    /// The kernel image, as Debian ships it.
    pub vmlinuz: PathBuf,
}

/// The Debian 13 root, made if not cached.
pub fn kernel() -> Result<DebianKernel> {
    if !deps::is_root() {
        return Err(format!(
            "building for Debian's {RELEASE} kernel makes a Debian 13 root (mmdebstrap, chroot): run as root"
        ));
    }
    deps::ensure(HOST_TOOLS)?;
    let mirror = std::env::var("ELFSIG_DEBIAN_MIRROR").unwrap_or_else(|_| MIRROR.to_owned());
    let packages = packages();
    let mut key = Fnv::new();
    key.add(mirror.as_bytes());
    for package in &packages {
        key.add(package.as_bytes());
    }
    let root = chroot::cached_root(
        &paths::cache().join("debian-kernel"),
        &format!("{RELEASE}-{:016x}", key.finish()),
        &format!("the Debian 13 root with Debian's {RELEASE}"),
        &["--variant=buildd".into(), "--quiet".into(), format!("--include={}", packages.join(","))],
        "trixie",
        &[format!("deb {mirror} trixie main"), format!("deb {mirror} trixie-backports main")],
    )?;
    let vmlinuz = root.join(format!("usr/lib/modules/{RELEASE}/vmlinuz"));
    if !vmlinuz.exists() {
        return Err(format!("the Debian 13 root has no {}", vmlinuz.display()));
    }
    Ok(DebianKernel { root, vmlinuz })
}

/// The filesystems the VM suite's unprivileged cases mount, which Debian's kernel builds as
/// modules (crates/elfsig-guest/src/unprivileged.rs).
const FILESYSTEM_MODULES: &[&str] =
    &["overlay", "loop", "vfat", "nls_cp437", "nls_iso8859_1", "btrfs", "fuse", "binfmt_misc"];

/// [`FILESYSTEM_MODULES`] and every module they need, in an order they load in, decompressed
/// under target/vm/debian-modules/ (Debian signs and xz-compresses them; the guest loads them
/// with `finit_module`, unsigned modules being allowed without lockdown).
pub fn filesystem_modules(kernel: &DebianKernel) -> Result<Vec<PathBuf>> {
    let modules = kernel.root.join(format!("usr/lib/modules/{RELEASE}"));
    let dep_file = modules.join("modules.dep");
    let deps = fs::read_to_string(&dep_file).map_err(|e| format!("cannot read {}: {e}", dep_file.display()))?;
    // `path: dependency paths...`, every dependency listed, direct or not.
    let table: Vec<(&str, Vec<&str>)> = deps
        .lines()
        .filter_map(|line| line.split_once(':'))
        .map(|(path, needs)| (path, needs.split_whitespace().collect()))
        .collect();
    let name_of = |path: &str| {
        let file = path.rsplit('/').next().unwrap_or(path);
        file.split(".ko").next().unwrap_or(file).replace('-', "_")
    };
    fn visit<'a>(path: &'a str, table: &[(&'a str, Vec<&'a str>)], order: &mut Vec<&'a str>) {
        if order.contains(&path) {
            return;
        }
        if let Some((_, needs)) = table.iter().find(|(p, _)| *p == path) {
            for need in needs {
                visit(need, table, order);
            }
        }
        order.push(path);
    }
    // Built into the kernel: nothing to load.
    let builtin_list = modules.join("modules.builtin");
    let builtin =
        fs::read_to_string(&builtin_list).map_err(|e| format!("cannot read {}: {e}", builtin_list.display()))?;
    let mut order = Vec::new();
    for wanted in FILESYSTEM_MODULES {
        match table.iter().find(|(path, _)| name_of(path) == *wanted) {
            Some((path, _)) => visit(path, &table, &mut order),
            None if builtin.lines().any(|path| name_of(path) == *wanted) => {}
            None => return Err(format!("Debian's {RELEASE} has no module {wanted}")),
        }
    }
    let out = paths::target().join("vm/debian-modules");
    let _ = fs::remove_dir_all(&out);
    fs::create_dir_all(&out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    order
        .iter()
        .map(|path| {
            let ko = out.join(format!("{}.ko", name_of(path)));
            let bytes = Cmd::new("xz").args(["-d", "-c"]).arg(modules.join(path)).read_bytes()?;
            fs::write(&ko, bytes).map_err(|e| format!("cannot write {}: {e}", ko.display()))?;
            Ok(ko)
        })
        .collect()
}

/// Where the module's DKMS source tree goes in the root, as `cargo xtask dkms` puts it.
pub fn source_dir() -> String {
    format!("/usr/src/elfsig-{}", dkms::VERSION)
}

/// Builds the module for Debian's kernel with `certs` (concatenated DER) embedded, through the
/// DKMS build step a Debian user's `dkms install` runs, with warnings as errors; returns it
/// under target/kmod/debian-7.2/.
pub fn build_module(kernel: &DebianKernel, certs: &crate::kmod::Embedded) -> Result<PathBuf> {
    build_module_as(kernel, RELEASE, certs, dkms::VERSION)
}

/// As [`build_module`], for the kernel `release` (one whose headers the root has), the module
/// saying it is elfsig `version`.
pub fn build_module_as(
    kernel: &DebianKernel,
    release: &str,
    certs: &crate::kmod::Embedded,
    version: &str,
) -> Result<PathBuf> {
    // Built once per process for the same kernel, certificates and version: `cargo xtask test`
    // asks twice. One path for every build of a kernel: only the last is kept.
    type Built = (String, crate::kmod::Embedded, String, PathBuf);
    static BUILT: std::sync::Mutex<Option<Built>> = std::sync::Mutex::new(None);
    let mut memo = BUILT.lock().map_err(|_| "a thread building the module panicked")?;
    if let Some((_, _, _, ko)) = memo.as_ref().filter(|(r, c, v, _)| r == release && c == certs && v == version) {
        return Ok(ko.clone());
    }
    let source = source_dir();
    let staged = kernel.root.join(source.trim_start_matches('/'));
    dkms::stage_as(&staged, certs, version)?;
    run_in(
        &kernel.root,
        &format!(
            "sh {source}/kmod/dkms/build /usr/src/linux-headers-{release} KCFLAGS='-g0 -Werror' KRUSTFLAGS=-Dwarnings"
        ),
    )?;
    let built = staged.join("kmod/elfsig.ko");
    kmod::check_built_for(&built, release)?;
    let name = if release == RELEASE { NAME.to_owned() } else { format!("debian-{release}") };
    let out = paths::target().join(format!("kmod/{name}"));
    fs::create_dir_all(&out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    let ko = out.join("elfsig.ko");
    fs::copy(&built, &ko).map_err(|e| format!("cannot copy {}: {e}", built.display()))?;
    eprintln!("xtask: built {} (elfsig {version}) for Debian's {release}", ko.display());
    *memo = Some((release.to_owned(), certs.clone(), version.to_owned(), ko.clone()));
    Ok(ko)
}

/// What a Debian user does: `dkms add` and `dkms build` of the staged tree (left there by
/// [`build_module`]) for Debian's kernel, with Debian's own dkms, in the build root.
pub fn dkms_test(kernel: &DebianKernel) -> Result {
    let version = dkms::VERSION;
    run_in(
        &kernel.root,
        &format!(
            "dkms remove elfsig/{version} --all >/dev/null 2>&1; \
             dkms add elfsig/{version} && dkms build elfsig/{version} -k {RELEASE}"
        ),
    )?;
    let dir = kernel.root.join(format!("var/lib/dkms/elfsig/{version}/{RELEASE}/x86_64/module"));
    // Debian's kernel compresses its modules (CONFIG_MODULE_COMPRESS_XZ), and DKMS follows it.
    let compressed = dir.join("elfsig.ko.xz");
    let ko = dir.join("elfsig.ko");
    if compressed.exists() {
        let _ = fs::remove_file(&ko);
        Cmd::new("xz").args(["-d", "-k"]).arg(&compressed).run()?;
    }
    if !ko.exists() {
        return Err(format!("dkms build reported success but left no module in {}", dir.display()));
    }
    kmod::check_built_for(&ko, RELEASE)?;
    eprintln!("xtask: Debian's dkms built the module for {RELEASE}");
    Ok(())
}
