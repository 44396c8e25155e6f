//! Running QEMU: KVM when a short probe shows it works (on some machines a KVM guest hangs at
//! "Booting from ROM"), TCG otherwise; the serial console captured, and a time limit.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::Result;
use crate::paths;

/// A boot.
#[derive(Debug)]
pub struct Boot<'a> {
    /// The bzImage.
    pub kernel: &'a Path,
    /// The initramfs.
    pub initramfs: &'a Path,
    /// Extra kernel command line.
    pub append: &'a str,
    /// Kill the VM after this long.
    pub timeout_secs: u64,
}

/// Boots and returns everything the serial console printed. Lines starting with `ELFSIG` are
/// echoed as they arrive.
pub fn boot(boot: &Boot<'_>) -> Result<String> {
    let kvm = kvm_works(boot.kernel, boot.initramfs);
    run(boot, kvm)
}

fn run(boot: &Boot<'_>, kvm: bool) -> Result<String> {
    let mut cmd = Command::new("qemu-system-x86_64");
    cmd.args(["-machine", "pc", "-m", "1024", "-smp", "2", "-no-reboot", "-nodefaults"])
        .args(["-display", "none", "-serial", "stdio", "-monitor", "none"])
        .args(if kvm { ["-accel", "kvm", "-cpu", "host"] } else { ["-accel", "tcg", "-cpu", "max"] })
        .arg("-kernel")
        .arg(boot.kernel)
        .arg("-initrd")
        .arg(boot.initramfs)
        .arg("-append")
        .arg(format!("console=ttyS0 panic=-1 oops=panic quiet {}", boot.append))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    eprintln!(
        "$ qemu-system-x86_64 ({}) -kernel {} -initrd {} -append '{}'",
        if kvm { "kvm" } else { "tcg" },
        boot.kernel.display(),
        boot.initramfs.display(),
        boot.append
    );
    let mut child = cmd.spawn().map_err(|e| format!("cannot run qemu-system-x86_64: {e}"))?;
    let stdout = child.stdout.take().ok_or("no qemu stdout")?;
    let (tx, rx) = mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let line = line.trim_end_matches('\r').to_owned();
            if line.starts_with("ELFSIG") || line.contains("Kernel panic") || line.contains("BUG:") {
                eprintln!("  | {line}");
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
            if !finished && (line.starts_with("ELFSIG-DONE") || line.starts_with("ELFSIG-PROBE")) {
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
    let log = paths::target().join("vm/console.log");
    let _ = std::fs::write(&log, &text);
    eprintln!("xtask: console output in {}", log.display());
    match status {
        Some(s) if s.success() => Ok(text),
        _ if finished => Ok(text),
        Some(s) => Err(format!("qemu exited with {s}; console:\n{}", tail(&text))),
        None => Err(format!("the VM did not finish within {} s; console:\n{}", boot.timeout_secs, tail(&text))),
    }
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
    let probe = Boot { kernel, initramfs, append: "elfsig.suite=probe", timeout_secs: 20 };
    let works = run(&probe, true).is_ok_and(|out| out.contains("ELFSIG-PROBE ok"));
    eprintln!("xtask: KVM {}", if works { "works" } else { "does not work here; using TCG" });
    let _ = std::fs::create_dir_all(paths::cache());
    let _ = std::fs::write(&cache, format!("{key} {}\n", if works { "yes" } else { "no" }));
    works
}
