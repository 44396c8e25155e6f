//! `cargo xtask distro`: a whole Debian 12 system under elfsig, as a user would run it. The
//! system is signed with `elfsig sign --recursive` and booted on the test kernel, with the
//! module loaded from its initramfs by the hook in `kmod/boot/` (enforcing, locked) and the
//! mapping guard attached; systemd boots it, and a unit runs the checks (a workload, then the
//! refusals: crates/elfsig-guest/src/distro.rs), and again with the initramfs dracut makes with
//! `kmod/boot/dracut/`. Then the same system unsigned boots in
//! permissive mode, and every file that would have been refused is listed: what an
//! administrator does before switching to enforce.

mod image;
mod rootfs;

use std::fs;
use std::path::Path;

use elfsig_guest::image::{DISTRO_CHECK, DISTRO_INITRAMFS, TO_SIGN};

use crate::kernel::{Flavor, Kernel};
use crate::vm::qemu;
use crate::{Result, deps, flags, keys, kmod, paths, tools, vm};

/// Runs the task.
pub fn run(_options: &flags::Distro) -> Result {
    test()
}

/// Builds the images (reusing the cached Debian system), boots both and checks them.
pub fn test() -> Result {
    deps::ensure(vm::VM_PACKAGES)?;
    let pristine = rootfs::pristine()?;
    let elfsig = tools::build_cli()?;
    let keys = keys::test_keys(&elfsig)?;
    let (kernel, ko) = kmod::for_tests(Flavor::Release, &keys)?;
    let guard = tools::build_guard()?;
    let guest = tools::build_static("elfsig-guest")?;
    let parts = image::Parts { elfsig: &elfsig, guard: &guard, guest: &guest, ko: &ko, tree: &kernel.tree };

    let signed = image::make(&pristine, &parts, image::Variant::Signed(&keys.kernel))?;
    // Both boots run even when the first fails: each says something the other does not.
    let check = format!("{DISTRO_CHECK}=enforce {DISTRO_INITRAMFS}=");
    let enforced = boot(&kernel, &signed.disk, &signed.initrd, "distro-enforce", &format!("{check}initramfs-tools"));
    // The same system, its module loaded by dracut's initramfs instead.
    let dracut = match &signed.dracut_initrd {
        Some(initrd) => boot(&kernel, &signed.disk, initrd, "distro-dracut", &format!("{check}dracut")).map(|_| ()),
        None => Err("no dracut initramfs".into()),
    };

    let unsigned = image::make(&pristine, &parts, image::Variant::Unsigned)?;
    // audit=1: the kernel holds the module's records from boot on for the first audit daemon.
    let discover = format!("{DISTRO_CHECK}=discover elfsig.mode=permissive audit=1 audit_backlog_limit=65536");
    let console = boot(&kernel, &unsigned.disk, &unsigned.initrd, "distro-discover", &discover)?;
    let list: Vec<&str> = console.lines().filter_map(|l| l.strip_prefix("# ")?.strip_prefix(TO_SIGN)).collect();
    let path = paths::target().join("distro/to-sign.txt");
    fs::write(&path, list.join("\n") + "\n").map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    eprintln!("xtask: permissive mode found {} files left to sign; listed in {}", list.len(), path.display());
    enforced.and(dracut)
}

/// Boots `disk` with `initrd` on the test kernel and checks the report; returns the console.
fn boot(kernel: &Kernel, disk: &Path, initrd: &Path, label: &str, append: &str) -> Result<String> {
    let append = format!("root=/dev/vda rw rootfstype=ext4 {append}");
    let run = qemu::boot(&qemu::Boot {
        kernel: &kernel.bzimage,
        initramfs: initrd,
        disk: Some(disk),
        append: &append,
        timeout_secs: 1200,
        memory_mb: 2048,
        cpus: 2,
        label,
    })?;
    vm::check_report(&run.console)?;
    Ok(run.console)
}
