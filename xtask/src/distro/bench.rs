//! What the `boot` bench (`cargo xtask bench`) adds to the signed system, so that one image boots
//! in every configuration: its program (`elfsig-bench boot`) and the unit that starts it when
//! the kernel command line asks; for the `ima` configuration, evmctl's `security.ima` signature
//! on every file IMA will appraise, made after elfsig's signing with the same key, IMA's
//! certificate and policy, and an initramfs-tools script that loads them before the root file
//! system runs anything (as dracut's integrity module does on the distributions that use it);
//! the drivers of the NVDIMM the bench's root file system is on; and an initramfs-tools script
//! that copies the module's counters as the initramfs ends, so that the report tells the
//! initramfs's verifications from the rest of the boot's. Inert in every other boot.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use elfsig_guest::image::{
    BOOT_BENCH, BOOT_BENCH_INITRAMFS, BOOT_BENCH_PROGRAM, BOOT_BENCH_RUN, BOOT_IMA_CERT, BOOT_IMA_POLICY,
};

use super::ext4::FS_UUID;
use super::files::{copy, is_elf, parent_made, regular_files, symlink, write};
use crate::Result;
use crate::cmd::Cmd;
use crate::deps::Need;
use crate::keys::KeyPair;

/// What making these parts needs on this machine.
pub const HOST_TOOLS: &[Need] = &[Need::Deb("ima-evm-utils"), Need::Deb("openssl")];

/// The appraisal the `ima` configuration runs: what elfsig checks (programs, and files mapped
/// executable), on the image's file system only.
fn policy() -> String {
    format!(
        "appraise func=BPRM_CHECK fsuuid={FS_UUID} appraise_type=imasig\n\
         appraise func=MMAP_CHECK fsuuid={FS_UUID} appraise_type=imasig\n"
    )
}

/// The initramfs-tools hook: the program, certificate and policy into the initramfs, and the
/// drivers of the NVDIMM the bench boots from (ACPI's table of it, and its block device), which
/// udev loads when the machine has one.
const HOOK: &str = r#"#!/bin/sh
# elfsig's boot bench: what scripts/init-top/elfsig-bench-ima needs, and the root on an NVDIMM.
PREREQ=""
prereqs() { echo "$PREREQ"; }
case "$1" in
prereqs) prereqs; exit 0 ;;
esac
. /usr/share/initramfs-tools/hook-functions
copy_exec @PROGRAM@
copy_file key @CERT@
copy_file policy @POLICY@
for file in @PROGRAM@ @CERT@ @POLICY@; do
	[ -e "${DESTDIR}${file}" ] || { echo "E: elfsig-bench: ${file} is not in the initramfs" >&2; exit 1; }
done
manual_add_modules nfit nd_pmem
exit 0
"#;

/// The initramfs-tools script: with `elfsig_bench=` on the command line, copies `/proc/uptime`
/// as init-top runs (with [`COUNTERS`]'s at the initramfs's end, how long the CPU was idle in
/// between); with `elfsig_bench=ima,RUN`, loads IMA's key and policy.
const SCRIPT: &str = r#"#!/bin/sh
# elfsig's boot bench: the time as init-top runs; in the ima configuration, IMA's key and policy,
# before the root runs anything.
PREREQ=""
prereqs() { echo "$PREREQ"; }
case "$1" in
prereqs) prereqs; exit 0 ;;
esac
read -r uptime </proc/uptime
read -r cmdline </proc/cmdline
case " $cmdline " in
*" @WORD@="*) mkdir -p /run/@DIR@ && echo "$uptime" >/run/@DIR@/uptime-start ;;
esac
. /scripts/functions
case " $cmdline " in
*" @WORD@=ima,"*) ;;
*) exit 0 ;;
esac
[ -e /sys/kernel/security/ima ] || mount -t securityfs securityfs /sys/kernel/security
mkdir -p /run
@PROGRAM@ boot-ima || panic "elfsig-bench: IMA could not be set up"
exit 0
"#;

/// The initramfs-tools script that copies, as the initramfs ends and when `elfsig_bench=` is on
/// the command line, `/proc/uptime` (how long the CPU was idle so far), and the module's
/// counters when it is loaded. Shell builtins alone, but for `mkdir`, which elfsig's own
/// init-top script ran (a cached verdict): nothing it runs is verified, so that copying the
/// counters does not change them.
const COUNTERS: &str = r#"#!/bin/sh
# elfsig's boot bench: the time and the module's counters as the initramfs ends.
PREREQ=""
prereqs() { echo "$PREREQ"; }
case "$1" in
prereqs) prereqs; exit 0 ;;
esac
read -r uptime </proc/uptime
read -r cmdline </proc/cmdline
case " $cmdline " in
*" @WORD@="*) ;;
*) exit 0 ;;
esac
mkdir -p /run/@DIR@
echo "$uptime" >/run/@DIR@/uptime
[ -r /sys/kernel/security/elfsig/stats ] || exit 0
{ while read -r line; do echo "$line"; done </sys/kernel/security/elfsig/stats; } >/run/@DIR@/stats
exit 0
"#;

/// Installs the bench's parts into `root`; `program` is `elfsig-bench`, `key` what IMA trusts.
pub fn install(root: &Path, program: &Path, key: &KeyPair) -> Result {
    let at = |path: &str| root.join(path.trim_start_matches('/'));
    copy(program, &at(BOOT_BENCH_PROGRAM), 0o755)?;
    let units = root.join("etc/systemd/system");
    // The boot must not include starting the bench program (7.8 MB), which elfsig and IMA would
    // verify and baseline would not: a shell waits for the boot to end (systemctl, 1.4 MB, is
    // all the unit runs within it), copies the module's counters with shell builtins alone (`$$`
    // is systemd's escape for `$`), and only then runs the program.
    write(
        &units.join("elfsig-bench.service"),
        &format!(
            "[Unit]\nDescription=elfsig's boot bench\nConditionKernelCommandLine={BOOT_BENCH}\n\n[Service]\n\
             Type=exec\nRuntimeDirectory={BOOT_BENCH_RUN}\nExecStart=/bin/sh -c 'systemctl is-system-running --wait >/dev/null; \
             {{ while read -r line; do echo \"$$line\"; done </sys/kernel/security/elfsig/stats; }} \
             >/run/{BOOT_BENCH_RUN}/stats 2>/dev/null; exec {BOOT_BENCH_PROGRAM} boot'\n\
             StandardOutput=tty\nStandardError=tty\nTTYPath=/dev/ttyS0\n"
        ),
    )?;
    symlink("../elfsig-bench.service", &units.join("multi-user.target.wants/elfsig-bench.service"))?;

    let der = Cmd::new("openssl").args(["x509", "-outform", "DER", "-in"]).arg(&key.cert).read_bytes()?;
    parent_made(&at(BOOT_IMA_CERT))?;
    std::fs::write(at(BOOT_IMA_CERT), der).map_err(|e| format!("cannot write {BOOT_IMA_CERT}: {e}"))?;
    write(&at(BOOT_IMA_POLICY), &policy())?;
    let fill = |text: &str| {
        text.replace("@PROGRAM@", BOOT_BENCH_PROGRAM)
            .replace("@CERT@", BOOT_IMA_CERT)
            .replace("@POLICY@", BOOT_IMA_POLICY)
            .replace("@WORD@", BOOT_BENCH)
            .replace("@DIR@", BOOT_BENCH_INITRAMFS)
    };
    let tools = root.join("etc/initramfs-tools");
    write(&tools.join("hooks/elfsig-bench"), &fill(HOOK))?;
    write(&tools.join("scripts/init-top/elfsig-bench-ima"), &fill(SCRIPT))?;
    write(&tools.join("scripts/init-bottom/elfsig-bench-counters"), &fill(COUNTERS))?;
    for script in
        ["hooks/elfsig-bench", "scripts/init-top/elfsig-bench-ima", "scripts/init-bottom/elfsig-bench-counters"]
    {
        let path = tools.join(script);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
            .map_err(|e| format!("cannot chmod {}: {e}", path.display()))?;
    }
    Ok(())
}

/// Gives every file IMA may appraise (ELF files, and anything executable: scripts are appraised
/// when executed) evmctl's signature with `key`, in `security.ima`, on all cores. After elfsig's
/// signing, which rewrites the files.
pub fn sign(root: &Path, key: &KeyPair) -> Result {
    let started = Instant::now();
    let files: Vec<PathBuf> = regular_files(root)?
        .into_iter()
        .filter(|(path, meta)| meta.permissions().mode() & 0o111 != 0 || is_elf(path))
        .map(|(path, _)| path)
        .collect();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let share = files.len().div_ceil(cores).max(1);
    let results: Vec<Result> = std::thread::scope(|scope| {
        let workers: Vec<_> = files
            .chunks(share)
            .map(|chunk| scope.spawn(move || chunk.iter().try_for_each(|file| ima_sign(file, &key.key))))
            .collect();
        workers.into_iter().map(|w| w.join().unwrap_or_else(|_| Err("an evmctl worker panicked".into()))).collect()
    });
    results.into_iter().collect::<Result>()?;
    eprintln!("xtask: evmctl signed {} files for IMA in {:.1} s", files.len(), started.elapsed().as_secs_f64());
    Ok(())
}

fn ima_sign(file: &Path, key: &Path) -> Result {
    let out = std::process::Command::new("evmctl")
        .args(["ima_sign", "--hashalgo", "sha256", "--key"])
        .arg(key)
        .arg(file)
        .output()
        .map_err(|e| format!("cannot run evmctl: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("evmctl ima_sign {}: {}", file.display(), String::from_utf8_lossy(&out.stderr).trim()))
    }
}
