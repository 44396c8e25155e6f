//! `cargo xtask distro`: a whole Debian 13 system under elfsig, as a user would run it, on
//! Debian's own 7.2 kernel. The system is the Debian 13 root Debian's kernel is tested in
//! (`debian_kernel`: the kernel's packages, what README's Debian 13 section installs, and a
//! system's packages), without its compilers and DKMS, with elfsig's packages installed from
//! the organisation's archive (the module among them, built in the pipeline for Debian's kernel
//! and signed with the MOK key), signed
//! with `elfsig sign --recursive`, and booted on Debian's `vmlinuz` with the initramfs Debian's
//! `update-initramfs` makes, which loads the module by the hook in `kmod/boot/` (enforcing,
//! locked) and attaches the mapping guard; systemd boots it, and a unit runs the checks (a
//! workload, then the refusals: crates/elfsig-guest/src/distro.rs), and again with the
//! initramfs dracut makes with `kmod/boot/dracut/`. The first of the two boots as a Debian host
//! with Secure Boot does (`secure_boot`): UEFI firmware, Debian's signed shim and grub, the
//! kernel locked down, the module loaded because the pipeline signed it with the MOK key the
//! firmware holds. Then the same system unsigned boots in permissive mode, and every file that would
//! have been refused is listed: what an administrator does before switching to enforce.

mod archive;
mod bench;
mod containers;
mod ext4;
mod files;
pub mod image;
mod packages;
mod policy;
mod secure_boot;

use std::fs;
use std::path::{Path, PathBuf};

use elfsig_guest::image::{DISTRO_CHECK, DISTRO_INITRAMFS, DISTRO_SECURE_BOOT, DISTRO_UPGRADE, TO_SIGN};

use crate::debian_kernel::{self, DebianKernel};
use crate::keys::TestKeys;
use crate::vm::qemu;
use crate::{Result, deps, flags, keys, kmod, paths, tools, vm};

/// Runs the task.
pub fn run(_options: &flags::Distro) -> Result {
    test()
}

/// What the images are made of, built or reused.
struct Inputs {
    debian: DebianKernel,
    keys: TestKeys,
    /// What the module embeds: the certificate the system is signed with, and the policies'.
    certs: kmod::Embedded,
    elfsig: PathBuf,
    guard: PathBuf,
    guest: PathBuf,
    bench: PathBuf,
}

impl Inputs {
    fn build() -> Result<Inputs> {
        deps::ensure(vm::VM_PACKAGES)?;
        deps::ensure(bench::HOST_TOOLS)?;
        deps::ensure(HOST_TOOLS)?;
        let debian = debian_kernel::kernel()?;
        let elfsig = tools::build_cli()?;
        let keys = keys::test_keys(&elfsig)?;
        let certs = kmod::Embedded::from_files(
            std::slice::from_ref(&keys.kernel.cert),
            std::slice::from_ref(&keys.policy.cert),
        )?;
        let guard = tools::build_guard()?;
        let guest = tools::build_static("elfsig-guest")?;
        let bench = tools::build_static("elfsig-bench")?;
        Ok(Inputs { debian, keys, certs, elfsig, guard, guest, bench })
    }

    /// The archives, elfsig's packages in them.
    fn archives(&self) -> Result<archive::Archives> {
        let contents = packages::Contents { elfsig: &self.elfsig, guard: &self.guard, certs: &self.certs };
        archive::make(&self.debian, &contents, &self.keys.kernel, &self.keys.policy)
    }

    fn make(
        &self,
        variant: image::Variant<'_>,
        for_checks: bool,
        archives: &archive::Archives,
        containers: Option<&containers::Images>,
    ) -> Result<image::Image> {
        let parts = image::Parts { elfsig: &self.elfsig, guest: &self.guest, bench: &self.bench, archives, containers };
        image::make(&self.debian, &parts, variant, for_checks)
    }
}

/// What making the images needs on this machine besides the Debian 13 root's.
pub const HOST_TOOLS: &[deps::Need] = &[
    deps::Need::Deb("rsync"),
    deps::Need::Deb("e2fsprogs"),
    // Secure Boot: the firmware, and what makes its EFI system partition without a mount.
    deps::Need::Deb("ovmf"),
    deps::Need::Deb("gdisk"),
    deps::Need::Deb("dosfstools"),
    deps::Need::Deb("mtools"),
];

/// The signed image made in this process, if any: `cargo xtask test`'s bench smoke boots the
/// one the checks booted (every boot writes to a copy-on-write snapshot, never to the image).
static SIGNED: std::sync::Mutex<Option<image::Image>> = std::sync::Mutex::new(None);

fn signed_made() -> Result<std::sync::MutexGuard<'static, Option<image::Image>>> {
    SIGNED.lock().map_err(|_| "a thread making the image panicked".to_owned())
}

/// The signed system the `boot` bench boots (its kernel is the image's), with its archive, from
/// which the bench upgrades it.
pub fn signed_image() -> Result<image::Image> {
    if let Some(image) = signed_made()?.clone() {
        return Ok(image);
    }
    let inputs = Inputs::build()?;
    let archives = inputs.archives()?;
    // The boot bench times containers of the signed image too.
    let containers = containers::make(&inputs.elfsig, &inputs.keys.kernel)?;
    inputs.make(image::Variant::Signed(&inputs.keys.kernel), false, &archives, Some(&containers))
}

/// Builds the images (from the cached Debian 13 root), boots both and checks them.
pub fn test() -> Result {
    let inputs = Inputs::build()?;
    let archives = inputs.archives()?;
    let containers = containers::make(&inputs.elfsig, &inputs.keys.kernel)?;
    let signed = inputs.make(image::Variant::Signed(&inputs.keys.kernel), true, &archives, Some(&containers))?;
    *signed_made()? = Some(signed.clone());
    // The same system with its module loaded by initramfs-tools' initramfs and by dracut's, at
    // once (the disk is a copy-on-write snapshot for each). Both are checked even when one
    // fails: each says something the other does not.
    let check = format!("{} {DISTRO_CHECK}=enforce {DISTRO_INITRAMFS}=", root(disk(&signed)));
    let dracut_initrd = signed.dracut_initrd.as_deref().ok_or("no dracut initramfs")?;
    let with_tools = format!("{check}initramfs-tools {DISTRO_SECURE_BOOT}=on");
    let with_dracut = format!("{check}dracut");
    // initramfs-tools' the way a Debian host with Secure Boot boots: through the firmware, shim
    // and grub, which start the kernel and initramfs in the image's /boot. That boot also
    // upgrades the system from its signed archive (elfsig among it) and updates its kernel, on
    // a disk of its own that keeps what it wrote (a qcow2 overlay of the image), for the boot
    // after: the same chain then starts the new kernel through the boot menu the update wrote.
    // Meanwhile dracut's boot checks what building on the host meets (no compiler, an initramfs
    // rebuild under loader deny): the upgrade is the longest part of the run, and those need
    // none of it.
    let firmware = signed.firmware.as_ref().ok_or("no firmware for Secure Boot")?;
    let dir = paths::target().join("distro");
    let kept = dir.join("distro-upgrade.qcow2");
    qemu::overlay(&signed.disk, &kept)?;
    let upgrading = format!("{with_tools} {DISTRO_UPGRADE}=upgrade");
    let (vars, esp) = secure_boot::boot_disks(
        firmware,
        &dir,
        "distro-enforce",
        ext4::FS_UUID,
        secure_boot::Start::Kernel(&upgrading),
    )?;
    let mut secure = system_boot(&signed, &signed.initrd, "distro-enforce", &upgrading);
    secure.uefi = Some(qemu::Uefi { code: secure_boot::code(), vars: &vars, esp: &esp });
    secure.disk = Some(qemu::Disk::Kept(&kept));
    // apt, initramfs rebuilds, a kernel installed and every file verified, under emulation.
    secure.timeout_secs = 3000;
    let mut dracut_boot = system_boot(&signed, dracut_initrd, "distro-dracut", &with_dracut);
    // The containers' cases besides the rest: images loaded and containers started, emulated.
    dracut_boot.timeout_secs = 2400;
    let boots = [secure, dracut_boot];
    // The unsigned image is made meanwhile, on what the two guests leave of the CPUs (they wait
    // on timers and devices in their early boot).
    let (checked, unsigned) = std::thread::scope(|scope| {
        let making = scope.spawn(|| inputs.make(image::Variant::Unsigned, false, &archives, None));
        let checked: Vec<Result> =
            qemu::boot_each(&boots).into_iter().map(|run| run.and_then(|run| vm::check_report(&run.console))).collect();
        (checked, making.join().unwrap_or_else(|_| Err("making the unsigned image panicked".into())))
    });
    let [enforced, dracut]: [Result; 2] =
        checked.try_into().map_err(|_| "the two boots did not give two results".to_owned())?;
    let unsigned = unsigned.map_err(|e| {
        // What the boots found is said too.
        [enforced.clone().err(), dracut.clone().err(), Some(e)].into_iter().flatten().collect::<Vec<_>>().join("\n")
    })?;
    // The unsigned system in permissive mode, and (when the upgrade went through) the upgraded
    // one rebooted twice, at once, each on an overlay of what the upgrade left: through the
    // boot menu the kernel update wrote, which starts the new kernel with the command line the
    // upgrade put there for it; and into the kernel the system was made with, which must stay
    // bootable and protected. audit=1: the kernel holds the module's records from boot on for
    // the first audit daemon.
    let discover = format!(
        "{} {DISTRO_CHECK}=discover elfsig.mode=permissive audit=1 audit_backlog_limit=65536",
        root(disk(&unsigned))
    );
    let mut boots = vec![system_boot(&unsigned, &unsigned.initrd, "distro-discover", &discover)];
    let older = format!("{with_tools} {DISTRO_UPGRADE}=older");
    let rebooted = match enforced {
        Ok(()) => {
            let mut made = Vec::new();
            for (label, start) in
                [("distro-upgraded", secure_boot::Start::Menu), ("distro-older", secure_boot::Start::Kernel(&older))]
            {
                let overlay = dir.join(format!("{label}.qcow2"));
                qemu::overlay_of(&kept, "qcow2", &overlay)?;
                made.push((
                    label,
                    start,
                    overlay,
                    secure_boot::boot_disks(firmware, &dir, label, ext4::FS_UUID, start)?,
                ));
            }
            made
        }
        Err(_) => Vec::new(),
    };
    for (label, start, overlay, (vars, esp)) in &rebooted {
        // The menu's kernel, initramfs and command line, or the older kernel's with its own
        // (for the log: the firmware's boot loader starts the kernel).
        let append = match start {
            secure_boot::Start::Kernel(append) => append,
            secure_boot::Start::Menu => "",
        };
        let mut boot = system_boot(&signed, &signed.initrd, label, append);
        boot.uefi = Some(qemu::Uefi { code: secure_boot::code(), vars, esp });
        boot.disk = Some(qemu::Disk::Kept(overlay));
        boots.push(boot);
    }
    let mut runs = qemu::boot_each(&boots).into_iter();
    let console =
        runs.next().ok_or("no discovery boot")?.and_then(|run| vm::check_report(&run.console).map(|()| run.console))?;
    let rebooted: Vec<Result> = runs.map(|run| run.and_then(|run| vm::check_report(&run.console))).collect();
    let list: Vec<&str> = console.lines().filter_map(|l| l.strip_prefix("# ")?.strip_prefix(TO_SIGN)).collect();
    let path = paths::target().join("distro/to-sign.txt");
    fs::write(&path, list.join("\n") + "\n").map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    eprintln!("xtask: permissive mode found {} files left to sign; listed in {}", list.len(), path.display());
    let failures: Vec<String> = [enforced, dracut].into_iter().chain(rebooted).filter_map(Result::err).collect();
    if failures.is_empty() { Ok(()) } else { Err(failures.join("\n")) }
}

/// The kernel command line's words that mount the image on `disk` as the root file system.
pub fn root(disk: qemu::Disk<'_>) -> String {
    format!("root={} rw rootfstype=ext4", disk.device())
}

/// How the checks attach the image: a virtio disk, as a VM's disk normally is.
fn disk(image: &image::Image) -> qemu::Disk<'_> {
    qemu::Disk::Virtio(&image.disk)
}

/// A boot of `image` with `initrd` (its own or dracut's) on Debian's kernel, `append` holding
/// [`root`]. One vCPU, as Debian's kernel's other VMs (`vm::DEBIAN_CPUS` says why).
fn system_boot<'a>(image: &'a image::Image, initrd: &'a Path, label: &'a str, append: &'a str) -> qemu::Boot<'a> {
    qemu::Boot {
        kernel: &image.kernel,
        initramfs: initrd,
        disk: Some(disk(image)),
        append,
        timeout_secs: 1200,
        memory_mb: 2048,
        cpus: vm::DEBIAN_CPUS,
        label,
        clock: qemu::Clock::Host,
        uefi: None,
    }
}
