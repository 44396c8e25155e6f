//! Making the Debian 13 system's disk image from the Debian 13 root, as README's Debian 13
//! section has a user make theirs: the build root's compilers and DKMS removed (an enforced
//! host has none); elfsig's packages installed from the organisation's archive (`archive.rs`:
//! the tools, the early-boot hooks from `kmod/boot/`, and the module built for Debian's kernel
//! in the pipeline, signed with the MOK key); every ELF file signed with
//! `elfsig sign --recursive`; the initramfs made by Debian's `update-initramfs`, after the
//! signing, so that what it copies in is signed too; the ext4 image made by `mke2fs -d`, which
//! keeps owners, modes, hard links and extended attributes (file capabilities).
//!
//! Besides, for the checks only: the check program, a unit that starts it once the system is
//! up, and no getty on the serial console, where the checks report.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

use elfsig_guest::image::DISTRO_CHECK;

use super::files::{copy, is_elf, regular_files, size_mib, symlink, write};
use super::{archive, bench, containers, ext4, policy, secure_boot};
use crate::cmd::Cmd;
use crate::debian_kernel::{self, DebianKernel};
use crate::keys::KeyPair;
use crate::{Result, chroot, deps, paths};

/// What goes into the system besides Debian.
#[derive(Debug)]
pub struct Parts<'a> {
    /// The `elfsig` CLI, which signs the system.
    pub elfsig: &'a Path,
    /// The check program (`elfsig-guest distro`, static).
    pub guest: &'a Path,
    /// The `boot` bench's program (`elfsig-bench`, static).
    pub bench: &'a Path,
    /// The package archives (elfsig's packages among them) and gate, which the signed system
    /// is kept up to date from; the unsigned one takes elfsig's packages from there too.
    pub archives: &'a archive::Archives,
    /// The container images the signed system's checks run, with podman from the archive.
    pub containers: Option<&'a containers::Images>,
}

/// Which system.
#[derive(Clone, Copy, Debug)]
pub enum Variant<'k> {
    /// Every ELF file signed with this key; the module enforcing and locked.
    Signed(&'k KeyPair),
    /// Nothing signed; the module permissive, to find what is left to sign.
    Unsigned,
}

/// A bootable system.
#[derive(Clone, Debug)]
pub struct Image {
    /// Its kernel: Debian's `vmlinuz`, as its package installed it in the system.
    pub kernel: PathBuf,
    /// The ext4 image, the root file system.
    pub disk: PathBuf,
    /// Its initramfs, which `update-initramfs` made inside it.
    pub initrd: PathBuf,
    /// The same made by dracut, with `kmod/boot/dracut/` (the signed system's checks only).
    pub dracut_initrd: Option<PathBuf>,
    /// What the firmware needs to boot it with Secure Boot (the signed system's checks only).
    pub firmware: Option<secure_boot::Firmware>,
}

/// Where the check program goes.
const CHECK_PROGRAM: &str = "usr/local/libexec/elfsig-check";

/// Makes the image of `variant` from the Debian 13 root, in target/distro/; for the signed
/// system's checks (`for_checks`, not the bench), also dracut's initramfs and the firmware's
/// side of a Secure Boot.
pub fn make(debian: &DebianKernel, parts: &Parts<'_>, variant: Variant<'_>, for_checks: bool) -> Result<Image> {
    let name = match variant {
        Variant::Signed(_) => "signed",
        Variant::Unsigned => "unsigned",
    };
    let dir = paths::target().join("distro");
    let root = dir.join(format!("{name}-root"));
    if root.exists() {
        fs::remove_dir_all(&root).map_err(|e| format!("cannot remove {}: {e}", root.display()))?;
    }
    fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    // What this image replaces goes first: an earlier run's (the checks' before the bench's)
    // must not count against the space this one needs.
    for old in [format!("{name}.ext4"), format!("{name}-initrd.img"), format!("{name}-dracut.img")] {
        let _ = fs::remove_file(dir.join(old));
    }
    // At its peak the copy and its image (written as sparse as mke2fs makes it) are on disk
    // together: each at most the root's size, the build tree left out.
    let root_gib = size_mib(&debian.root, Some(&debian.root.join(KBUILD_CACHE)))?.div_ceil(1024);
    deps::ensure_space(&dir, 2 * root_gib + 1, "making the Debian 13 system's image")?;
    // A copy, owners (by number: the root's users are not this machine's), modes, hard links,
    // ACLs and extended attributes kept, without what the module's builds left there: its Rust
    // build tree (kmod/dkms/rust-tree's cache, 2 GB), its staged sources, DKMS's state.
    let excluded = [KBUILD_CACHE, "usr/src/elfsig-*", "var/lib/dkms"].map(|path| format!("--exclude=/{path}"));
    Cmd::new("rsync")
        .args(["-aHAX", "--numeric-ids"])
        .args(excluded)
        .arg(format!("{}/", debian.root.display()))
        .arg(&root)
        .run()?;
    let release = debian_kernel::RELEASE;
    remove_build_tools(&root)?;
    match variant {
        Variant::Signed(key) => archive::install(&root, parts.archives, &key.cert)?,
        Variant::Unsigned => archive::install_unsigned(&root, parts.archives)?,
    }
    if let (Variant::Signed(_), Some(images)) = (variant, parts.containers) {
        containers::install(&root, images)?;
    }
    install(&root, parts, variant)?;
    let firmware = match variant {
        Variant::Signed(_) if for_checks => Some(secure_boot::prepare(&root, &dir, name, &parts.archives.mok.cert)?),
        _ => None,
    };
    if let Variant::Signed(key) = variant {
        bench::install(&root, parts.bench, key)?;
        sign(&root, parts.elfsig, key)?;
        policy::install(&root, &parts.archives.policies)?;
        bench::sign(&root, key)?;
    }
    chroot::run_in(&root, &update_initramfs())?;
    let initrd = dir.join(format!("{name}-initrd.img"));
    fs::copy(root.join(format!("boot/initrd.img-{release}")), &initrd)
        .map_err(|e| format!("cannot copy the initramfs: {e}"))?;
    let dracut_initrd = match variant {
        Variant::Signed(_) if !for_checks => None,
        Variant::Signed(_) => Some(dracut_initramfs(&root, release, &dir.join(format!("{name}-dracut.img")))?),
        Variant::Unsigned => {
            hooks_refuse_a_kernel_without_the_module(&root, release)?;
            None
        }
    };
    let disk = dir.join(format!("{name}.ext4"));
    ext4::make(&root, &disk)?;
    // Everything is in the image now.
    fs::remove_dir_all(&root).map_err(|e| format!("cannot remove {}: {e}", root.display()))?;
    Ok(Image { kernel: debian.vmlinuz.clone(), disk, initrd, dracut_initrd, firmware })
}

/// README's command that makes the initramfs again, after the signing.
fn update_initramfs() -> String {
    "update-initramfs -u -k all".to_owned()
}

/// Where the Debian 13 root keeps the module's Rust build tree (`kmod/dkms/rust-tree`).
const KBUILD_CACHE: &str = "var/cache/elfsig";

/// What builds modules, which an enforced host does without (its module comes built and
/// signed from the archive): DKMS, the compilers, the assembler and linker (and, with them, the
/// kernels' headers, which depend on their gcc), the kernels' sources; what they alone pulled
/// in goes with them.
const BUILD_TOOLS: &[&str] = &[
    "dkms",
    "rustc",
    "rust-src",
    "bindgen",
    "libclang-dev",
    "gcc-14",
    "cpp-14",
    "binutils",
    "linux-source-7.2",
    "linux-source-7.3",
];

/// Removes [`BUILD_TOOLS`] from the system `root`.
fn remove_build_tools(root: &Path) -> Result {
    chroot::run_in(root, &format!("apt-get -qq -y purge --auto-remove {} >/dev/null", BUILD_TOOLS.join(" ")))
}

/// What the system has besides elfsig's packages: a file capability, the module's parameters
/// of the unsigned system, the checks.
fn install(root: &Path, parts: &Parts<'_>, variant: Variant<'_>) -> Result {
    // A file capability to keep through signing and the image (Debian 12's ping had this one;
    // Debian 13's relies on ping_group_range instead).
    chroot::run_in(root, "setcap cap_net_raw+ep /usr/bin/ping")?;

    // The elfsig package's parameters (lock=1), permissive in the unsigned system, which lists
    // what is left to sign.
    if let Variant::Unsigned = variant {
        write(&root.join("etc/modprobe.d/elfsig.conf"), "options elfsig mode=permissive\n")?;
    }
    let units = root.join("etc/systemd/system");
    // The checks, once the system is up; they report on the serial console.
    copy(parts.guest, &root.join(CHECK_PROGRAM), 0o755)?;
    write(
        &units.join("elfsig-check.service"),
        &format!(
            "[Unit]\nDescription=elfsig's checks of the Debian system\nConditionKernelCommandLine={DISTRO_CHECK}\n\n[Service]\nType=exec\n\
             ExecStart=/{CHECK_PROGRAM} distro\nStandardOutput=tty\nStandardError=tty\nTTYPath=/dev/ttyS0\n"
        ),
    )?;
    symlink("../elfsig-check.service", &units.join("multi-user.target.wants/elfsig-check.service"))?;
    symlink("/dev/null", &units.join("serial-getty@ttyS0.service"))?;
    write(&root.join("etc/hostname"), "elfsig-distro\n")
}

/// The initramfs dracut makes with `kmod/boot/dracut/` installed (by [`install`]), as on Fedora
/// or RHEL: generic (not for this build host's devices).
fn dracut_initramfs(root: &Path, release: &str, out: &Path) -> Result<PathBuf> {
    let built = format!("/boot/initrd.dracut-{release}");
    chroot::run_in(
        root,
        &format!("dracut --quiet --force --no-hostonly --add elfsig --kver {release} {built} {release}"),
    )?;
    fs::copy(root.join(built.trim_start_matches('/')), out)
        .map_err(|e| format!("cannot copy dracut's initramfs: {e}"))?;
    Ok(out.to_owned())
}

/// The elfsig package's kernel hook fails a kernel's installation when the kernel has no elfsig
/// module, and both early-boot hooks fail its initramfs build, each naming the package to
/// install, and make no initramfs (a second kernel release is installed without the module);
/// dracut's also refuses to strip the signed programs it would copy in (`--strip`). The kernel
/// hook passes Debian's kernel, which has its module.
fn hooks_refuse_a_kernel_without_the_module(root: &Path, release: &str) -> Result {
    let without = "7.2.0-without-elfsig";
    let modules = root.join("usr/lib/modules").join(without);
    let kernel = root.join("usr/lib/modules").join(release);
    for file in ["modules.builtin", "modules.builtin.modinfo", "config"] {
        copy(&kernel.join(file), &modules.join(file), 0o644)?;
    }
    copy(&kernel.join("config"), &root.join(format!("boot/config-{without}")), 0o644)?;
    Cmd::new("depmod").arg("-b").arg(root).arg(without).run()?;
    let no_module =
        format!("no elfsig module for kernel {without}: install {}", elfsig_guest::image::modules_package(without));
    let kernel_hook = |kernel: &str| format!("/usr/share/kernel/postinst.d/00-elfsig {kernel} /boot/vmlinuz-{kernel}");
    chroot::run_in(root, &kernel_hook(release))?;
    let dracut = |options: &str, kernel: &str| {
        format!("dracut --force --no-hostonly {options} --add elfsig --kver {kernel} /boot/refused.img {kernel}")
    };
    for (what, build, says) in [
        ("the kernel hook, a kernel without the module", kernel_hook(without), &no_module[..]),
        ("mkinitramfs, a kernel without the module", format!("mkinitramfs -o /boot/refused.img {without}"), &no_module),
        ("dracut, a kernel without the module", dracut("", without), &no_module),
        ("dracut --strip", dracut("--strip", release), "would strip the signed programs"),
    ] {
        let out = chroot::output_in(root, &format!("{build} 2>&1"))?;
        let said = String::from_utf8_lossy(&out.stdout);
        // mkinitramfs creates its output empty before it runs the hooks (update-initramfs,
        // which users run, builds into a temporary name); a refusal leaves it empty.
        let refused = root.join("boot/refused.img");
        let made = fs::metadata(&refused).is_ok_and(|m| m.len() > 0);
        let _ = fs::remove_file(&refused);
        if out.status.success() || made || !said.contains(says) {
            return Err(format!(
                "{what}: {} (initramfs made: {made}), expected a refusal saying {says:?}:\n{said}",
                out.status
            ));
        }
        eprintln!("xtask: refused, as it must: {what}");
    }
    let _ = fs::remove_file(root.join(format!("boot/config-{without}")));
    fs::remove_dir_all(&modules).map_err(|e| format!("cannot remove {}: {e}", modules.display()))
}

/// Signs every ELF file in the system, on all cores, and reports how fast: the files elfsig
/// says it signed, and the bytes of the ELF files in the tree.
fn sign(root: &Path, elfsig: &Path, key: &KeyPair) -> Result {
    let bytes = elf_bytes(root)?;
    let started = Instant::now();
    let out = std::process::Command::new(elfsig)
        .args(["sign", "--key"])
        .arg(&key.key)
        .arg("--cert")
        .arg(&key.cert)
        .arg("--recursive")
        .arg(root)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", elfsig.display()))?;
    let seconds = started.elapsed().as_secs_f64();
    let stderr = String::from_utf8_lossy(&out.stderr);
    for line in stderr.lines() {
        eprintln!("  {line}");
    }
    if !out.status.success() {
        return Err(format!("elfsig sign --recursive {} failed", root.display()));
    }
    let signed: u64 = stderr
        .lines()
        .find_map(|l| l.strip_prefix("elfsig: signed: ")?.split_once(" done")?.0.parse().ok())
        .ok_or("elfsig sign --recursive printed no summary")?;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    eprintln!(
        "xtask: signed the system: {signed} files ({:.1} MiB of ELF files), in {seconds:.1} s: {:.0} files/s on {cores} cores",
        bytes as f64 / (1 << 20) as f64,
        signed as f64 / seconds
    );
    entitle(root, elfsig, key)
}

/// The programs of the Debian 13 system that must make memory executable at run time, and
/// why: signed again, with the `jit` entitlement, once the system is signed.
const ENTITLED_JIT: [(&str, &str); 1] =
    [("usr/bin/python3.13", "ctypes puts its callbacks (one made at import) in writable and executable memory")];

/// Signs again, entitled, the programs of [`ENTITLED_JIT`], and says so.
fn entitle(root: &Path, elfsig: &Path, key: &KeyPair) -> Result {
    for (path, why) in ENTITLED_JIT {
        key.sign(elfsig).args(["--entitle", "jit"]).arg(root.join(path)).run()?;
        eprintln!("xtask: entitled to jit: /{path} ({why})");
    }
    Ok(())
}

/// The bytes of the tree's ELF files.
fn elf_bytes(dir: &Path) -> Result<u64> {
    Ok(regular_files(dir)?.iter().filter(|(path, _)| is_elf(path)).map(|(_, meta)| meta.len()).sum())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// README tells a user to run the commands the image is made with: the packages of the
    /// Debian 13 root (the pipeline's build root), elfsig's packages, the initramfs.
    #[test]
    fn readme_runs_what_the_image_is_made_with() {
        let readme = include_str!("../../../README.md");
        let [kernel, build] = debian_kernel::readme_install_commands();
        // A host's, from the archive (the system pins the version: the archive has two).
        let elfsig = format!(
            "apt install {} {}$(uname -r)",
            elfsig_guest::image::ELFSIG_PACKAGE,
            elfsig_guest::image::MODULES_PACKAGE_PREFIX
        );
        for command in [kernel, build, elfsig, update_initramfs()] {
            // The command exactly, its comment aside.
            let said = |l: &str| l.split('#').next().map(str::trim) == Some(command.as_str());
            assert!(readme.lines().any(said), "README.md does not run {command:?}");
        }
    }
}
