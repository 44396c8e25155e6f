//! A kernel update under enforce (`cargo xtask distro`'s upgrade boot, after elfsig's own
//! upgrade): the boot menu written by `update-grub`; the update's kernel
//! ([`DISTRO_KERNEL_UPDATE`]) installed without its module package fails in elfsig's kernel hook,
//! naming the package, and leaves `/boot` and the boot menu as they were; the module's package
//! completes it, every postinst and trigger running with no refusal, and the boot menu starts
//! the new kernel. The boot after (`elfsig_upgrade=upgraded`) goes through that menu, with
//! Secure Boot, into the new kernel: its module from its initramfs, enforcing, locked; and
//! another (`elfsig_upgrade=older`) into the kernel the system was made with, which stays
//! bootable and protected.

use std::path::Path;

use elfsig_guest::debian::{apt, run, succeeds, tail};
use elfsig_guest::harness::{Context, Outcome, Suite, ensure};
use elfsig_guest::image::{
    DISTRO_KERNEL, DISTRO_KERNEL_UPDATE, DISTRO_NEXT_CMDLINE, DISTRO_POLICY, DISTRO_UPGRADE, elfsig_upgrade_version,
    modules_package,
};

use crate::upgrade::{initramfs_module_version, refusing_nothing};

/// The boot menu `update-grub` writes.
const MENU: &str = "/boot/grub/grub.cfg";

/// The cases of the upgrade boot, after elfsig's upgrade.
pub(crate) fn update(suite: &mut Suite<'_>) {
    suite.case("the boot menu: update-grub writes it under enforce, starting the running kernel", || {
        next_command_line()?;
        refusing_nothing(|| {
            // /boot/grub is grub-install's to make, which this system's boot (the ESP made on
            // the host) did without.
            succeeds("mkdir -p /boot/grub && update-grub")?;
            let first = first_kernel()?;
            ensure(first == DISTRO_KERNEL, || format!("the boot menu starts {first}"))
        })
    });
    suite.case(
        "a kernel without its module: its installation fails, naming the package; /boot and the boot menu stay",
        || {
            refusing_nothing(|| {
                let (_, menu) = run(&format!("sha256sum {MENU}"))?;
                let (ok, output) = run(&apt(&format!("install linux-image-{DISTRO_KERNEL_UPDATE}")))?;
                let says = format!("install {}", modules_package(DISTRO_KERNEL_UPDATE));
                ensure(!ok && output.contains(&says), || {
                    format!("apt-get install of the kernel alone (exit ok: {ok}), expected {says:?}: {}", tail(&output))
                })?;
                for file in [
                    format!("/boot/vmlinuz-{DISTRO_KERNEL_UPDATE}"),
                    format!("/boot/initrd.img-{DISTRO_KERNEL_UPDATE}"),
                ] {
                    ensure(!Path::new(&file).exists(), || format!("{file} was made"))?;
                }
                let (_, after) = run(&format!("sha256sum {MENU}"))?;
                ensure(after == menu, || "the boot menu changed".into())?;
                let (state, failed) = elfsig_guest::debian::system_state()?;
                ensure(state == "running" && failed.is_empty(), || format!("systemd says {state:?}; failed: {failed}"))
            })
        },
    );
    suite.case(
        "with its module's package: every postinst and trigger runs, nothing refused, the menu starts the new kernel",
        || {
            refusing_nothing(|| {
                let package = modules_package(DISTRO_KERNEL_UPDATE);
                let (ok, output) = run(&apt(&format!("install {package}")))?;
                elfsig_guest::harness::diagnostic(format_args!("apt-get install {package}: {}", tail(&output)));
                ensure(ok, || format!("apt-get install {package} failed: {}", tail(&output)))?;
                let (_, audit) = run("dpkg --audit")?;
                ensure(audit.trim().is_empty(), || format!("dpkg --audit: {}", tail(&audit)))?;
                let initramfs = format!("/boot/initrd.img-{DISTRO_KERNEL_UPDATE}");
                let unpacked = "/tmp/elfsig-initramfs-update";
                let version = initramfs_module_version(&initramfs, unpacked)?;
                let newer = elfsig_upgrade_version();
                ensure(version == newer, || format!("the new kernel's initramfs has elfsig {version}, not {newer}"))?;
                let (_, found) = run(&format!("find {unpacked} -path '*{DISTRO_POLICY}'"))?;
                let inside = found.lines().next().ok_or("no policy in the new kernel's initramfs")?.to_owned();
                succeeds(&format!("cmp {inside} {DISTRO_POLICY}"))?;
                let first = first_kernel()?;
                ensure(first == DISTRO_KERNEL_UPDATE, || format!("the boot menu starts {first}"))
            })
        },
    );
    suite.case("a module's package rebuilds its own kernel's initramfs, not only the newest kernel's", || {
        // initramfs-tools' trigger would rebuild the newest only (the update's, now).
        let [older, newest] = [DISTRO_KERNEL, DISTRO_KERNEL_UPDATE].map(|r| format!("sha256sum /boot/initrd.img-{r}"));
        let (_, older_before) = run(&older)?;
        let (_, newest_before) = run(&newest)?;
        succeeds(&apt(&format!("install --reinstall {}", modules_package(DISTRO_KERNEL))))?;
        let (_, older_after) = run(&older)?;
        let (_, newest_after) = run(&newest)?;
        ensure(older_after != older_before, || format!("{DISTRO_KERNEL}'s initramfs was not rebuilt"))?;
        ensure(newest_after == newest_before, || format!("{DISTRO_KERNEL_UPDATE}'s initramfs was rebuilt too"))
    });
}

/// The cases of a boot after: into the update's kernel, through the menu; or into `release`,
/// the kernel the system was made with, which stays bootable and protected.
pub(crate) fn rebooted(suite: &mut Suite<'_>, release: &str) {
    let release = release.to_owned();
    suite.case(format!("the boot started {release}"), move || {
        let (_, running) = run("uname -r")?;
        ensure(running.trim() == release, || format!("running {}", running.trim()))
    });
    suite.case("Secure Boot: enforced by the firmware, the kernel locked down", crate::secure_boot::enforced);
    suite.case(
        "Secure Boot: this kernel's module, signed with the pipeline's MOK key, loaded; an unsigned module refused",
        crate::secure_boot::module_signed_by_the_mok,
    );
    suite.case("the boot menu keeps the kernel the system was made with", || {
        let menu = std::fs::read_to_string(MENU).context(MENU)?;
        ensure(menu.contains(&format!("/boot/vmlinuz-{DISTRO_KERNEL} ")), || {
            format!("{MENU} has no entry for {DISTRO_KERNEL}")
        })
    });
}

/// Writes the kernel command line of the boot after this one where `update-grub` takes it:
/// this boot's, its root given by the menu (by UUID) and its checks those of the boot after.
fn next_command_line() -> Outcome {
    let cmdline = std::fs::read_to_string("/proc/cmdline").context("/proc/cmdline")?;
    // grub's scripts source the file: nothing there may be read as shell.
    ensure(!cmdline.contains(['"', '$', '`', '\\']), || format!("a command line grub cannot take: {cmdline}"))?;
    let words: Vec<String> =
        cmdline
            .split_whitespace()
            .filter(|w| !w.starts_with("BOOT_IMAGE=") && !w.starts_with("root="))
            .map(|w| {
                if w == format!("{DISTRO_UPGRADE}=upgrade") {
                    format!("{DISTRO_UPGRADE}=upgraded")
                } else {
                    w.to_owned()
                }
            })
            .collect();
    std::fs::create_dir_all("/etc/default/grub.d").context("/etc/default/grub.d")?;
    // No wait at the menu, on the serial console the checks report on.
    std::fs::write(
        DISTRO_NEXT_CMDLINE,
        format!(
            "GRUB_CMDLINE_LINUX=\"{}\"\nGRUB_CMDLINE_LINUX_DEFAULT=\"\"\nGRUB_TIMEOUT=0\nGRUB_TERMINAL=console\n",
            words.join(" ")
        ),
    )
    .context(DISTRO_NEXT_CMDLINE)
}

/// The release of the kernel the boot menu's first entry starts.
fn first_kernel() -> Result<String, String> {
    let menu = std::fs::read_to_string(MENU).context(MENU)?;
    menu.lines()
        .map(str::trim)
        .filter(|l| l.starts_with("linux"))
        .find_map(|l| l.split_whitespace().nth(1)?.strip_prefix("/boot/vmlinuz-").map(str::to_owned))
        .ok_or_else(|| format!("{MENU} starts no kernel"))
}
