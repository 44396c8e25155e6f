//! Running QEMU: KVM when a short probe shows it works (on some machines a KVM guest hangs at
//! "Booting from ROM"), TCG otherwise; the serial console captured, and a time limit. Several
//! VMs can run at once (the bench boots one per host CPU).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::Result;
use crate::paths;
use elfsig_guest::{image, ktap};

/// A boot.
#[derive(Debug)]
pub struct Boot<'a> {
    /// The bzImage.
    pub kernel: &'a Path,
    /// The initramfs.
    pub initramfs: &'a Path,
    /// A raw disk image; the guest's writes go to a throwaway copy, so the image stays as it
    /// was and several VMs can boot it at once.
    pub disk: Option<Disk<'a>>,
    /// Extra kernel command line.
    pub append: &'a str,
    /// Kill the VM after this long.
    pub timeout_secs: u64,
    /// Guest memory.
    pub memory_mb: u32,
    /// Guest CPUs.
    pub cpus: u32,
    /// Names the VM in echoed lines and its console log, `target/vm/<label>.log`.
    pub label: &'a str,
    /// The guest's clock.
    pub clock: Clock,
    /// Booted by UEFI firmware instead of by QEMU itself: `kernel`, `initramfs` and `append`
    /// are then for the boot loader's configuration to name, not passed to QEMU.
    pub uefi: Option<Uefi<'a>>,
}

/// How the guest sees a raw disk image.
#[derive(Clone, Copy, Debug)]
pub enum Disk<'a> {
    /// A virtio disk, `/dev/vda`, as a VM's disk normally is. Its reads and writes are I/O
    /// that QEMU completes in its own time, on other threads: under [`Clock::Instructions`]
    /// the guest's clock jumps over the waits, and the instructions a boot counts change from
    /// one boot to the next with what ran meanwhile.
    Virtio(&'a Path),
    /// A qcow2 overlay of a raw image ([`overlay`]) as a virtio disk, `/dev/vda`: what a boot
    /// writes stays in the overlay, for the next boot of it; the image stays as it is.
    Kept(&'a Path),
    /// An NVDIMM (persistent memory), `/dev/pmem0` (ACPI's `nfit` and `nd_pmem` drivers): the
    /// image mapped into the guest's physical memory, privately (its writes stay in QEMU's
    /// memory). Reading it is copying memory, counted as instructions like any other, and
    /// flushing it is a barrier: no I/O the host completes in its own time remains, so a boot
    /// counts the same instructions whatever the host does. The guest memory it takes is the
    /// image's size, beside `memory_mb`.
    Nvdimm(&'a Path),
}

impl Disk<'_> {
    /// The block device the guest sees.
    pub fn device(&self) -> &'static str {
        match self {
            Disk::Virtio(_) | Disk::Kept(_) => "/dev/vda",
            Disk::Nvdimm(_) => "/dev/pmem0",
        }
    }
}

/// Makes `overlay`, a qcow2 file over the raw `image` that takes a [`Disk::Kept`]'s writes
/// (qemu-img, from qemu-utils: in `vm::VM_PACKAGES`).
pub fn overlay(image: &Path, overlay: &Path) -> Result {
    overlay_of(image, "raw", overlay)
}

/// As [`overlay`], over `image` in `format` (`raw`, or `qcow2` for an overlay of an overlay,
/// which must not be written to while this one is in use).
pub fn overlay_of(image: &Path, format: &str, overlay: &Path) -> Result {
    let _ = std::fs::remove_file(overlay);
    let image = image.canonicalize().map_err(|e| format!("cannot find {}: {e}", image.display()))?;
    crate::cmd::Cmd::new("qemu-img")
        .args(["create", "-q", "-f", "qcow2", "-F", format, "-b"])
        .arg(image)
        .arg(overlay)
        .run()
}

/// UEFI firmware with Secure Boot enforced (OVMF, which needs SMM for it) that boots from an
/// EFI system partition on a second disk.
#[derive(Clone, Copy, Debug)]
pub struct Uefi<'a> {
    /// OVMF's code.
    pub code: &'a Path,
    /// Its variables: keys, the MOK list; the firmware writes to them, so a copy per boot.
    pub vars: &'a Path,
    /// The disk holding the EFI system partition, which the firmware boots.
    pub esp: &'a Path,
}

/// What the guest's clock counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Clock {
    /// The host's time, as a VM's clock normally does: under TCG the host's load moves every
    /// timing.
    Host,
    /// Instructions: `-icount shift=0,sleep=off,align=off` advances the guest's clock by 1 ns
    /// for every instruction the guest executes (one vCPU at a time, on one host thread), and
    /// skips time the guest would spend idle straight to its next timer. A timing read in the
    /// guest counts the instructions executed, whatever else the host is doing. What the host
    /// would still feed in is pinned: the real-time clock starts at the same time in every boot
    /// of a run and follows the guest's clock (`-rtc base=…,clock=vm`), and the guest's random
    /// numbers (RDRAND: address space layouts, hash seeds) come from a fixed seed (`-seed`).
    /// Only I/O that the host completes in its own time (a virtio disk: [`Disk::Nvdimm`] has
    /// none) can still move it.
    Instructions,
}

/// What a boot produced.
#[derive(Debug)]
pub struct Run {
    /// Everything the serial console printed.
    pub console: String,
    /// The accelerator used: `kvm` or `tcg`.
    pub accel: &'static str,
}

/// Boots every VM at once and waits for all of them; fails if any fails. Report lines (KTAP
/// results and diagnostics, bench progress; not raw bench measurements) are echoed as they
/// arrive, with the time since boot.
pub fn boot_all(boots: &[Boot<'_>]) -> Result<Vec<Run>> {
    boot_each(boots).into_iter().collect()
}

/// Boots every VM at once and waits for all of them; what each produced, or why it failed.
pub fn boot_each(boots: &[Boot<'_>]) -> Vec<Result<Run>> {
    let Some(first) = boots.first() else { return Vec::new() };
    // Probe once, before the VMs compete for the answer.
    // Counting instructions takes TCG: no probe then.
    let kvm = first.clock == Clock::Host && kvm_works(first.kernel, first.initramfs);
    let accel = if kvm { "kvm" } else { "tcg" };
    let consoles: Vec<Result<String>> = std::thread::scope(|scope| {
        let running: Vec<_> = boots.iter().map(|b| scope.spawn(move || run(b, kvm))).collect();
        running.into_iter().map(|t| t.join().unwrap_or_else(|_| Err("a VM thread panicked".into()))).collect()
    });
    consoles.into_iter().map(|console| Ok(Run { console: console?, accel })).collect()
}

/// The emulated CPU: everything TCG offers but 5-level paging. With LA57, 6.12's KASAN kernel
/// once reported a wild access at 0.1 s of boot, long before the module loads: an interrupt came
/// while `identify_cpu()` had cleared the boot CPU's feature bits, so `pgtable_l5_enabled()` read
/// false and KASAN judged the direct map's 5-level address (0xff11...) to have no shadow. An
/// upstream race that only a cold build happened to hit; the suites do not need LA57.
const TCG_CPU: &str = "max,la57=off";

fn run(boot: &Boot<'_>, kvm: bool) -> Result<String> {
    let mut cmd = Command::new("qemu-system-x86_64");
    let machine = match (boot.uefi, boot.disk) {
        (Some(_), _) => "q35,smm=on",
        (None, Some(Disk::Nvdimm(_))) => "pc,nvdimm=on",
        (None, _) => "pc",
    };
    cmd.args(["-machine", machine, "-no-reboot", "-nodefaults"])
        .args(["-smp", &boot.cpus.to_string(), "-display", "none", "-serial", "stdio", "-monitor", "none"])
        .args(match (kvm, boot.clock) {
            (_, Clock::Instructions) => vec![
                "-accel",
                "tcg,thread=single",
                "-cpu",
                TCG_CPU,
                "-icount",
                "shift=0,sleep=off,align=off",
                "-rtc",
                pinned_rtc(),
                "-seed",
                "1",
            ],
            (true, Clock::Host) => vec!["-accel", "kvm", "-cpu", "host"],
            (false, Clock::Host) => vec!["-accel", "tcg", "-cpu", TCG_CPU],
        });
    let mut memory = boot.memory_mb.to_string();
    match (boot.disk, boot.uefi) {
        (None, _) => {}
        (Some(disk @ (Disk::Virtio(_) | Disk::Kept(_))), None) => {
            cmd.arg("-drive").arg(drive(disk, ",if=virtio")?);
        }
        // In the boot order too, after the ESP: OVMF connects only the disks the order names,
        // and grub would not see the root file system.
        (Some(disk @ (Disk::Virtio(_) | Disk::Kept(_))), Some(_)) => {
            cmd.arg("-drive")
                .arg(drive(disk, ",if=none,id=root")?)
                .args(["-device", "virtio-blk-pci,drive=root,bootindex=1"]);
        }
        (Some(Disk::Nvdimm(_)), Some(_)) => return Err(format!("{}: an NVDIMM is not a UEFI boot disk", boot.label)),
        (Some(Disk::Nvdimm(disk)), None) => {
            let size = std::fs::metadata(disk).map_err(|e| format!("cannot stat {}: {e}", disk.display()))?.len();
            // QEMU maps whole pages of the file, and no more than it holds.
            let size = size & !0xfff;
            let mut backend = std::ffi::OsString::from("memory-backend-file,id=root,share=off,size=");
            backend.push(size.to_string());
            backend.push(",mem-path=");
            backend.push(disk);
            let max_mb = u64::from(boot.memory_mb) + size.div_ceil(1 << 20);
            memory = format!("{},slots=1,maxmem={max_mb}M", boot.memory_mb);
            cmd.arg("-object").arg(backend).args(["-device", "nvdimm,memdev=root,id=pmem"]);
        }
    }
    cmd.args(["-m", &memory]);
    match boot.uefi {
        None => {
            cmd.arg("-kernel")
                .arg(boot.kernel)
                .arg("-initrd")
                .arg(boot.initramfs)
                .arg("-append")
                .arg(command_line(boot.append));
        }
        Some(uefi) => {
            let mut code = std::ffi::OsString::from("if=pflash,format=raw,unit=0,readonly=on,file=");
            code.push(uefi.code);
            let mut vars = std::ffi::OsString::from("if=pflash,format=raw,unit=1,file=");
            vars.push(uefi.vars);
            // Only SMM may write the variables, so that the OS cannot change Secure Boot's
            // keys; no S3, which OVMF's SMM does not support.
            cmd.args(["-global", "driver=cfi.pflash01,property=secure,value=on", "-global", "ICH9-LPC.disable_s3=1"])
                .arg("-drive")
                .arg(code)
                .arg("-drive")
                .arg(vars)
                .arg("-drive")
                .arg(drive(Disk::Virtio(uefi.esp), ",if=none,id=esp")?)
                .args(["-device", "virtio-blk-pci,drive=esp,bootindex=0"]);
        }
    }
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::inherit());
    let started = match boot.uefi {
        None => format!("-kernel {} -initrd {}", boot.kernel.display(), boot.initramfs.display()),
        Some(uefi) => format!("UEFI Secure Boot from {}: {}", uefi.esp.display(), boot.kernel.display()),
    };
    eprintln!(
        "$ qemu-system-x86_64 ({}, {}) {started} -append '{}'",
        boot.label,
        if kvm { "kvm" } else { "tcg" },
        boot.append
    );
    let mut child = cmd.spawn().map_err(|e| format!("cannot run qemu-system-x86_64: {e}"))?;
    let stdout = child.stdout.take().ok_or("no qemu stdout")?;
    let (tx, rx) = mpsc::channel::<String>();
    let booted = Instant::now();
    let label = boot.label.to_owned();
    let reader = std::thread::spawn(move || {
        let mut stdout = BufReader::new(stdout);
        let mut raw = Vec::new();
        // Bytes, not `lines()`: a line that is not UTF-8 must not end the capture.
        while stdout.read_until(b'\n', &mut raw).is_ok_and(|n| n > 0) {
            let line = plain(raw.strip_suffix(b"\n").unwrap_or(&raw));
            raw.clear();
            let report = is_report(&line);
            if report || line.contains("Kernel panic") || line.contains("BUG:") {
                eprintln!("  {label} | [{:5.0} s] {line}", booted.elapsed().as_secs_f64());
            }
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut deadline = Instant::now() + Duration::from_secs(boot.timeout_secs);
    let mut output: Vec<String> = Vec::new();
    let mut finished = false;
    let status = loop {
        while let Ok(line) = rx.try_recv() {
            // Once the guest has reported, give it a few seconds to end itself, no more.
            if !finished && (line.starts_with(ktap::TOTALS) || line.starts_with(image::BENCH_DONE)) {
                finished = true;
                deadline = deadline.min(Instant::now() + Duration::from_secs(15));
            }
            output.push(line);
        }
        if let Some(status) = child.try_wait().map_err(|e| format!("waiting for qemu: {e}"))? {
            break Some(status);
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let _ = reader.join();
    output.extend(rx.try_iter());
    let text = output.join("\n");
    let log = paths::target().join(format!("vm/{}.log", boot.label));
    // A fresh clone's first VM makes the directory: without it the console would be lost.
    let kept = std::fs::create_dir_all(paths::target().join("vm")).and_then(|()| std::fs::write(&log, &text));
    match kept {
        Ok(()) => eprintln!("xtask: {} console output in {}", boot.label, log.display()),
        Err(e) => eprintln!("xtask: {} console output not kept in {}: {e}", boot.label, log.display()),
    }
    match status {
        Some(s) if s.success() => Ok(text),
        _ if finished => Ok(text),
        Some(s) => Err(format!("{}: qemu exited with {s}; console:\n{}", boot.label, tail(&text))),
        None => Err(format!(
            "{}: the VM did not finish within {} s; console:\n{}",
            boot.label,
            boot.timeout_secs,
            tail(&text)
        )),
    }
}

/// `-rtc` for a guest whose clock counts instructions: the real-time clock starts at the hour
/// after this run's first boot in every boot of the run (its progress and the time the guest
/// reads at boot are then the same in each), and follows the guest's clock. After, not before:
/// what the run made before its first boot (the archive's signature, which APT checks against
/// the guest's time) must not be in the guest's future.
fn pinned_rtc() -> &'static str {
    static RTC: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    RTC.get_or_init(|| {
        let hour =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() / 3600 + 1);
        let (days, hour) = (hour / 24, hour % 24);
        let (year, month, day) = civil_from_days(days);
        format!("base={year:04}-{month:02}-{day:02}T{hour:02}:00:00,clock=vm")
    })
}

/// The proleptic Gregorian date `days` after 1970-01-01 (Howard Hinnant's `civil_from_days`).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

/// A raw disk image for `-drive`, the guest's writes going to a throwaway overlay; `options`
/// says how it is attached.
/// A `-drive` for a raw image, whose writes go to a snapshot QEMU forgets, or for an overlay,
/// which keeps them.
fn drive(disk: Disk<'_>, options: &str) -> Result<std::ffi::OsString> {
    let (path, format) = match disk {
        Disk::Virtio(path) => (path, ",format=raw,snapshot=on"),
        Disk::Kept(path) => (path, ",format=qcow2"),
        Disk::Nvdimm(path) => return Err(format!("{}: an NVDIMM is not a drive", path.display())),
    };
    let mut drive = std::ffi::OsString::from("file=");
    drive.push(path);
    drive.push(format);
    drive.push(options);
    Ok(drive)
}

/// The kernel command line of every boot, before `append`. tsc=reliable: under emulation the
/// timer ticks the clocksource watchdog checks the TSC against arrive late, and it would switch
/// the guest to jiffies (4 ms resolution) in the middle of a measurement. QEMU's TSC follows the
/// host clock.
pub fn command_line(append: &str) -> String {
    format!("console=ttyS0 panic=-1 oops=panic quiet tsc=reliable {append}")
}

/// A console line as the guest's programs wrote it: without the serial console's carriage
/// returns and without terminal control sequences (systemd 257 resets the terminal it hands a
/// service, `ESC [ ! p` and more at the start of the service's first line, where a report's
/// first line must be found).
fn plain(line: &[u8]) -> String {
    let text = String::from_utf8_lossy(line);
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\x1b' => match chars.next() {
                // CSI: parameter and intermediate bytes up to a final byte in `@`..=`~`.
                Some('[') => {
                    for c in chars.by_ref() {
                        if ('@'..='~').contains(&c) {
                            break;
                        }
                    }
                }
                // OSC: up to BEL, or the string terminator `ESC \\`.
                Some(']') => {
                    while let Some(c) = chars.next() {
                        if c == '\x07' {
                            break;
                        }
                        if c == '\x1b' {
                            chars.next();
                            break;
                        }
                    }
                }
                // Any other escape is two characters.
                _ => {}
            },
            '\r' => {}
            c => out.push(c),
        }
    }
    out
}

/// Whether a console line is one of the guest's report lines worth showing as it arrives.
fn is_report(line: &str) -> bool {
    let ktap = ["KTAP ", "ok ", "not ok ", "# ", "1.."].iter().any(|start| line.starts_with(start));
    let bench = line.starts_with("ELFSIG") && !line.starts_with(image::BENCH_MEASUREMENT);
    ktap || bench
}

fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(40)..].join("\n")
}

/// Whether KVM boots this kernel. The answer is cached per host kernel and QEMU version, so a
/// machine where KVM hangs pays for the probe once.
fn kvm_works(kernel: &Path, initramfs: &Path) -> bool {
    if std::fs::OpenOptions::new().read(true).write(true).open("/dev/kvm").is_err() {
        return false;
    }
    let host = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let qemu = Command::new("qemu-system-x86_64").arg("--version").output().map(|o| o.stdout).unwrap_or_default();
    let key =
        format!("{}-{}", host.trim(), String::from_utf8_lossy(&qemu).lines().next().unwrap_or("").replace(' ', "_"));
    let cache = paths::cache().join("kvm-probe");
    let cached = std::fs::read_to_string(&cache).unwrap_or_default();
    if let Some(answer) = cached.strip_prefix(&format!("{key} ")) {
        return answer.trim() == "yes";
    }
    eprintln!("xtask: probing whether KVM works here (at most 20 s)");
    let probe = Boot {
        disk: None,
        kernel,
        initramfs,
        append: &format!("{}=probe", image::SUITE),
        timeout_secs: 20,
        memory_mb: 1024,
        cpus: 1,
        label: "kvm-probe",
        clock: Clock::Host,
        uefi: None,
    };
    let works = run(&probe, true).is_ok_and(|out| ktap::parse(&out).check().is_ok());
    eprintln!("xtask: KVM {}", if works { "works" } else { "does not work here; using TCG" });
    let _ = std::fs::create_dir_all(paths::cache());
    let _ = std::fs::write(&cache, format!("{key} {}\n", if works { "yes" } else { "no" }));
    works
}

#[cfg(test)]
mod tests {
    use super::{civil_from_days, plain};

    #[test]
    fn dates_from_days_since_the_epoch() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(59), (1970, 3, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(20_783), (2026, 11, 26));
        assert_eq!(civil_from_days(20_818), (2026, 12, 31));
        assert_eq!(civil_from_days(20_819), (2027, 1, 1));
    }

    #[test]
    fn console_lines_lose_terminal_control_sequences_and_nothing_else() {
        // What systemd 257 wrote before a service's first line on the serial console.
        assert_eq!(plain(b"\x1b[!p\x1b]104\x07\x1b[?7hKTAP version 1\r"), "KTAP version 1");
        assert_eq!(plain(b"\x1b]0;title\x1b\\ok 1 a [bracketed] name\x1bc"), "ok 1 a [bracketed] name");
        assert_eq!(plain(b"[    1.0] plain text, 100% kept"), "[    1.0] plain text, 100% kept");
        // Not UTF-8: kept, as replacement characters.
        assert_eq!(plain(b"a\xffb"), "a\u{fffd}b");
        // A sequence cut off at the end of the line takes nothing after it.
        assert_eq!(plain(b"end\x1b[12"), "end");
    }
}
