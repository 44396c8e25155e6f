//! Secure Boot for the signed Debian 13 system: the chain a Debian host with Secure Boot boots
//! through, UEFI firmware holding Microsoft's keys (OVMF's `OVMF_VARS_4M.ms.fd`), Debian's shim
//! signed by Microsoft, Debian's grub and kernel signed by Debian, and the module that the
//! pipeline built and signed with its MOK key (`packages.rs`), which the kernel, locked down
//! by Secure Boot, loads only because the firmware's MOK list holds that key.
//!
//! On a host the MOK list gets the key through `mokutil --import mok.der` and
//! MokManager's screen at the next boot, which asks for a password at the console. Here the
//! key is written into a copy of the firmware's variables instead (`virt-fw-vars --add-mok`,
//! run inside the system), which is what MokManager stores: shim finds it in `MokList` and
//! hands it to the kernel.

use std::fs;
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::cmd::Cmd;
use crate::vm::qemu;
use crate::{Result, chroot, debian_kernel};

/// OVMF built with Secure Boot and the SMM that protects its variables (package `ovmf`, in
/// `super::HOST_TOOLS` with the tools that make the ESP).
const OVMF_CODE: &str = "/usr/share/OVMF/OVMF_CODE_4M.secboot.fd";
/// Its variables with Microsoft's keys enrolled and Secure Boot enforced.
const OVMF_VARS: &str = "/usr/share/OVMF/OVMF_VARS_4M.ms.fd";
/// shim's vendor GUID, under which its `MokList` lives.
const SHIM_GUID: &str = "605dab50-e046-4300-abb6-3dd810dd8b23";
/// The files the ESP takes from the system, where its packages put them, and their names on it.
/// shim boots `grubx64.efi` from its own directory; no `fbx64.efi`, which would make shim run
/// its fallback and reset the machine for want of a boot entry.
const ESP_FILES: [(&str, &str); 3] = [
    ("usr/lib/shim/shimx64.efi.signed", "::/EFI/BOOT/BOOTX64.EFI"),
    ("usr/lib/grub/x86_64-efi-signed/grubx64.efi.signed", "::/EFI/BOOT/grubx64.efi"),
    ("usr/lib/shim/mmx64.efi.signed", "::/EFI/BOOT/mmx64.efi"),
];
/// The EFI system partition's size in MiB, and where it starts on its disk (in 512-byte sectors).
const ESP_MIB: u64 = 16;
const ESP_START: u64 = 2048;

/// The firmware's side of a Secure Boot of the system.
#[derive(Clone, Debug)]
pub struct Firmware {
    /// The variables with the system's MOK key enrolled; each boot takes a copy.
    vars: PathBuf,
    /// shim, grub and MokManager, out of the system.
    files: Vec<(PathBuf, &'static str)>,
}

/// Takes what the firmware needs from the system's root, `root`, before it becomes an image: its
/// shim and grub, and OVMF's variables with the MOK certificate `mok` (DER) enrolled; into `dir`.
pub fn prepare(root: &Path, dir: &Path, name: &str, mok: &Path) -> Result<Firmware> {
    let mut files = Vec::new();
    for (from, to) in ESP_FILES {
        let copy = dir.join(format!("{name}-{}", to.rsplit('/').next().unwrap_or(to)));
        fs::copy(root.join(from), &copy).map_err(|e| format!("cannot copy {from} out of the system: {e}"))?;
        files.push((copy, to));
    }
    // virt-fw-vars, which python3-virt-firmware puts in the system, on a copy of this machine's
    // OVMF variables inside it, removed after.
    let inside = root.join("tmp/elfsig-ovmf-vars.fd");
    fs::copy(OVMF_VARS, &inside).map_err(|e| format!("cannot copy {OVMF_VARS}: {e}"))?;
    let cert = root.join("tmp/elfsig-mok.der");
    fs::copy(mok, &cert).map_err(|e| format!("cannot copy {}: {e}", mok.display()))?;
    let enrolled = root.join("tmp/elfsig-ovmf-vars-mok.fd");
    let result = chroot::run_in(
        root,
        &format!(
            "virt-fw-vars --input /tmp/elfsig-ovmf-vars.fd --output /tmp/elfsig-ovmf-vars-mok.fd \
             --add-mok {SHIM_GUID} /tmp/elfsig-mok.der >/dev/null"
        ),
    );
    let vars = dir.join(format!("{name}-ovmf-vars.fd"));
    let moved = result.and_then(|()| fs::copy(&enrolled, &vars).map_err(|e| format!("cannot copy the variables: {e}")));
    for file in [inside, enrolled, cert] {
        let _ = fs::remove_file(file);
    }
    moved?;
    Ok(Firmware { vars, files })
}

/// What the boot loader starts.
#[derive(Clone, Copy, Debug)]
pub enum Start<'a> {
    /// The system's kernel and initramfs (Debian's 7.2), with the kernel command line every
    /// boot has, then these words.
    Kernel(&'a str),
    /// The first entry of the system's own boot menu (`/boot/grub/grub.cfg`, which
    /// `update-grub` wrote in the system), as grub on a Debian host does.
    Menu,
}

/// A boot's firmware variables and ESP disk, in `dir` under `label`: grub, from the root file
/// system `fs_uuid`, starts `start`.
pub fn boot_disks(
    firmware: &Firmware,
    dir: &Path,
    label: &str,
    fs_uuid: &str,
    start: Start<'_>,
) -> Result<(PathBuf, PathBuf)> {
    let vars = dir.join(format!("{label}-ovmf-vars.fd"));
    fs::copy(&firmware.vars, &vars).map_err(|e| format!("cannot copy {}: {e}", firmware.vars.display()))?;
    let release = debian_kernel::RELEASE;
    let find_root = format!("search --no-floppy --fs-uuid --set=root {fs_uuid}\n");
    let config = match start {
        Start::Kernel(append) => format!(
            "set timeout=0\n{find_root}linux /boot/vmlinuz-{release} {}\ninitrd /boot/initrd.img-{release}\nboot\n",
            qemu::command_line(append)
        ),
        Start::Menu => {
            format!("set timeout=0\n{find_root}set prefix=($root)/boot/grub\nconfigfile /boot/grub/grub.cfg\n")
        }
    };
    let config_file = dir.join(format!("{label}-grub.cfg"));
    fs::write(&config_file, config).map_err(|e| format!("cannot write {}: {e}", config_file.display()))?;

    // The FAT file system, filled by mtools without a mount.
    let fat = dir.join(format!("{label}-esp.fat"));
    let _ = fs::remove_file(&fat);
    Cmd::new("mkfs.vfat").args(["-n", "ESP", "-C"]).arg(&fat).arg((ESP_MIB * 1024).to_string()).read()?;
    let mtools = |tool: &str| Cmd::new(tool).env("MTOOLS_SKIP_CHECK", "1").arg("-i").arg(&fat);
    mtools("mmd").args(["::/EFI", "::/EFI/BOOT", "::/EFI/debian"]).run()?;
    // Debian's signed grub reads its configuration from /EFI/debian, where grub-install puts
    // it; its own directory too in later versions.
    let files = firmware.files.iter().map(|(from, to)| (from.as_path(), *to));
    let configs = [(config_file.as_path(), "::/EFI/debian/grub.cfg"), (config_file.as_path(), "::/EFI/BOOT/grub.cfg")];
    for (from, to) in files.chain(configs) {
        mtools("mcopy").arg(from).arg(to).run()?;
    }

    // The disk: GPT, one EFI system partition, the file system written into it.
    let disk = dir.join(format!("{label}-esp.img"));
    let _ = fs::remove_file(&disk);
    let sectors = ESP_START + ESP_MIB * 2048 + 2048;
    let file = fs::File::create(&disk).map_err(|e| format!("cannot create {}: {e}", disk.display()))?;
    file.set_len(sectors * 512).map_err(|e| format!("cannot size {}: {e}", disk.display()))?;
    drop(file);
    Cmd::new("sgdisk")
        .args(["--new", &format!("1:{ESP_START}:+{ESP_MIB}M"), "--typecode", "1:ef00", "--change-name", "1:ESP"])
        .arg(&disk)
        .read()?;
    let bytes = fs::read(&fat).map_err(|e| format!("cannot read {}: {e}", fat.display()))?;
    let mut file =
        fs::OpenOptions::new().write(true).open(&disk).map_err(|e| format!("cannot open {}: {e}", disk.display()))?;
    file.seek(SeekFrom::Start(ESP_START * 512))
        .and_then(|_| file.write_all(&bytes))
        .map_err(|e| format!("cannot write the ESP into {}: {e}", disk.display()))?;
    let _ = fs::remove_file(&fat);
    Ok((vars, disk))
}

/// The firmware's code, as [`qemu::Uefi`] wants it.
pub fn code() -> &'static Path {
    Path::new(OVMF_CODE)
}
