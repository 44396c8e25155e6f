//! `cargo xtask distro`: a whole Debian 12 system under elfsig, as a user would run it. The
//! system is signed with `elfsig sign --recursive` and booted on the test kernel, with the
//! module loaded from its initramfs by the hook in `kmod/boot/` (enforcing, locked) and the
//! mapping guard attached; systemd boots it, and a unit runs the checks (a workload, then the
//! refusals: crates/elfsig-guest/src/distro.rs), and again with the initramfs dracut makes with
//! `kmod/boot/dracut/`. Then the same system unsigned boots in
//! permissive mode, and every file that would have been refused is listed: what an
//! administrator does before switching to enforce.

mod bench;
pub mod image;
mod rootfs;

use std::fs;
use std::path::{Path, PathBuf};

use elfsig_guest::image::{DISTRO_CHECK, DISTRO_INITRAMFS, TO_SIGN};

use crate::kernel::{Flavor, Kernel};
use crate::keys::TestKeys;
use crate::vm::qemu;
use crate::{Result, deps, flags, keys, kmod, paths, tools, vm};

/// Runs the task.
pub fn run(_options: &flags::Distro) -> Result {
    test()
}

/// What the images are made of, built or reused.
struct Inputs {
    pristine: PathBuf,
    keys: TestKeys,
    kernel: Kernel,
    ko: PathBuf,
    elfsig: PathBuf,
    guard: PathBuf,
    guest: PathBuf,
    bench: PathBuf,
}

impl Inputs {
    fn build() -> Result<Inputs> {
        deps::ensure(vm::VM_PACKAGES)?;
        deps::ensure(bench::HOST_TOOLS)?;
        let pristine = rootfs::pristine()?;
        let elfsig = tools::build_cli()?;
        let keys = keys::test_keys(&elfsig)?;
        let (kernel, ko) = kmod::for_tests(Flavor::Release, &keys)?;
        let guard = tools::build_guard()?;
        let guest = tools::build_static("elfsig-guest")?;
        let bench = tools::build_static("elfsig-bench")?;
        Ok(Inputs { pristine, keys, kernel, ko, elfsig, guard, guest, bench })
    }

    fn make(&self, variant: image::Variant<'_>, dracut: bool) -> Result<image::Image> {
        let parts = image::Parts {
            elfsig: &self.elfsig,
            guard: &self.guard,
            guest: &self.guest,
            bench: &self.bench,
            ko: &self.ko,
            tree: &self.kernel.tree,
        };
        image::make(&self.pristine, &parts, variant, dracut)
    }
}

/// What making the Debian 12 root needs of this machine.
pub const HOST_TOOLS: &[crate::deps::Need] = rootfs::HOST_TOOLS;

/// The Debian 12 root file system the images are made from (made once, cached).
pub fn pristine_root() -> Result {
    rootfs::pristine().map(|_| ())
}

/// The signed system the `boot` bench boots, and the kernel it boots on.
pub fn signed_image() -> Result<(Kernel, image::Image)> {
    let inputs = Inputs::build()?;
    let image = inputs.make(image::Variant::Signed(&inputs.keys.kernel), false)?;
    Ok((inputs.kernel, image))
}

/// Builds the images (reusing the cached Debian system), boots both and checks them.
pub fn test() -> Result {
    let inputs = Inputs::build()?;
    let kernel = &inputs.kernel;
    let signed = inputs.make(image::Variant::Signed(&inputs.keys.kernel), true)?;
    // The same system with its module loaded by initramfs-tools' initramfs and by dracut's, at
    // once (the disk is a copy-on-write snapshot for each). Both are checked even when one
    // fails: each says something the other does not.
    let check = format!("{ROOT} {DISTRO_CHECK}=enforce {DISTRO_INITRAMFS}=");
    let dracut_initrd = signed.dracut_initrd.as_deref().ok_or("no dracut initramfs")?;
    let (with_tools, with_dracut) = (format!("{check}initramfs-tools"), format!("{check}dracut"));
    let boots = [
        system_boot(kernel, &signed.disk, &signed.initrd, "distro-enforce", &with_tools),
        system_boot(kernel, &signed.disk, dracut_initrd, "distro-dracut", &with_dracut),
    ];
    let checked: Vec<Result> =
        qemu::boot_each(&boots).into_iter().map(|run| run.and_then(|run| vm::check_report(&run.console))).collect();
    let [enforced, dracut]: [Result; 2] =
        checked.try_into().map_err(|_| "the two boots did not give two results".to_owned())?;

    let unsigned = inputs.make(image::Variant::Unsigned, false)?;
    // audit=1: the kernel holds the module's records from boot on for the first audit daemon.
    let discover = format!("{DISTRO_CHECK}=discover elfsig.mode=permissive audit=1 audit_backlog_limit=65536");
    let console = boot(kernel, &unsigned.disk, &unsigned.initrd, "distro-discover", &discover)?;
    let list: Vec<&str> = console.lines().filter_map(|l| l.strip_prefix("# ")?.strip_prefix(TO_SIGN)).collect();
    let path = paths::target().join("distro/to-sign.txt");
    fs::write(&path, list.join("\n") + "\n").map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    eprintln!("xtask: permissive mode found {} files left to sign; listed in {}", list.len(), path.display());
    match (enforced, dracut) {
        (Err(enforced), Err(dracut)) => Err(format!("{enforced}\n{dracut}")),
        (enforced, dracut) => enforced.and(dracut),
    }
}

/// What boots the image: the root file system on the virtio disk.
pub const ROOT: &str = "root=/dev/vda rw rootfstype=ext4";

/// A boot of `disk` with `initrd` on the test kernel, `append` holding [`ROOT`].
fn system_boot<'a>(
    kernel: &'a Kernel,
    disk: &'a Path,
    initrd: &'a Path,
    label: &'a str,
    append: &'a str,
) -> qemu::Boot<'a> {
    qemu::Boot {
        kernel: &kernel.bzimage,
        initramfs: initrd,
        disk: Some(disk),
        append,
        timeout_secs: 1200,
        memory_mb: 2048,
        cpus: 2,
        label,
        clock: qemu::Clock::Host,
    }
}

/// Boots `disk` with `initrd` on the test kernel and checks the report; returns the console.
fn boot(kernel: &Kernel, disk: &Path, initrd: &Path, label: &str, append: &str) -> Result<String> {
    let append = format!("{ROOT} {append}");
    let run = qemu::boot(&system_boot(kernel, disk, initrd, label, &append))?;
    vm::check_report(&run.console)?;
    Ok(run.console)
}
