//! The signed Debian system's workload (`cargo xtask distro`): what a real system does, as
//! shell steps, and its upgrade from the archive. The checks run them expecting no refusal;
//! the `boot` bench times the workload right after boot, when every program and library it uses
//! is met for the first time, and then the upgrade.

use std::process::{Command, Output};

use elfsig_control::{Control, Guard, Mode};

use crate::harness::{Context, Outcome, ensure};
use crate::image::ARCHIVE_INSTALLED;

/// A step: a shell script, which must exit 0 and print this on its standard output.
pub type Step = (&'static str, &'static str);

/// The workload's cases, in order: a short name (for results.csv), a name, and its steps.
pub const WORKLOAD: [(&str, &str, &[Step]); 8] = [
    (
        "python3",
        "python3 with C extensions, and ping's file capability kept",
        &[(
            "python3 -c 'import json, _json, zlib, math, os; \
             print(json.dumps(math.isqrt(1764)), zlib.crc32(b\"elfsig\"), \
             len(os.getxattr(\"/usr/bin/ping\", \"security.capability\")))'",
            "42 ",
        )],
    ),
    ("dpkg", "dpkg -l", &[("dpkg -l | grep -c '^ii'", "")]),
    ("sudo", "sudo -n true", &[("sudo -n true && echo ok", "ok")]),
    (
        "ping",
        "ping -c1 127.0.0.1, as root and as nobody",
        &[
            ("ip link set lo up; ping -c1 -W5 127.0.0.1", "1 received"),
            ("setpriv --reuid=nobody --regid=nogroup --clear-groups ping -c1 -W5 127.0.0.1", "1 received"),
        ],
    ),
    (
        "tar-gzip",
        // /usr/share/doc (15 MB): all of /usr/share (100 MB) made gzip's compression most of
        // the workload's time, which elfsig has no part in, and a third of a test boot.
        "tar and gzip of /usr/share/doc",
        &[(
            "tar -czf /root/doc.tar.gz -C /usr/share doc && tar -tzf /root/doc.tar.gz | grep -c '^doc/' \
             && rm /root/doc.tar.gz",
            "",
        )],
    ),
    ("pipeline", "a shell pipeline", &[("ls -l /usr/bin | sort -k5 -n | tail -n 5 | awk '{print $9}' | wc -l", "5")]),
    (
        "systemctl",
        "systemctl queries",
        &[
            ("systemctl list-units --no-pager --no-legend | grep -c '\\.service'", ""),
            ("systemctl show -p ActiveState systemd-journald.service", "ActiveState=active"),
            ("systemctl status --no-pager systemd-udevd.service", "active (running)"),
        ],
    ),
    (
        "tools",
        "ps, ip, lsmod, less, ssh, tune2fs",
        &[
            ("ps -e | grep -c systemd", ""),
            ("ip -brief address show lo", "lo"),
            ("lsmod", "Module"),
            ("less --version", "less"),
            ("ssh -V 2>&1", "OpenSSH"),
            ("tune2fs -l /dev/disk/by-label/elfsig-root | grep 'volume name'", "elfsig-root"),
        ],
    ),
];

/// The shell command that runs `apt-get` with `args` as a run nobody answers does: no
/// question, configuration files kept.
pub fn apt(args: &str) -> String {
    format!("DEBIAN_FRONTEND=noninteractive apt-get -q -y -o Dpkg::Options::=--force-confold {args}")
}

/// Keeping the system up to date from its signed archive, as an administrator does it: a short
/// name (for results.csv) and the shell command of each step. The `boot` bench times them; the
/// checks run them expecting no refusal.
pub fn upgrade_steps() -> [(&'static str, String); 3] {
    [
        ("update", "apt-get -q update".to_owned()),
        ("upgrade", apt("upgrade")),
        ("install", apt(&format!("install {ARCHIVE_INSTALLED}"))),
    ]
}

/// Runs `script` with sh.
pub fn sh(script: &str) -> std::io::Result<Output> {
    Command::new("/bin/sh").args(["-c", script]).output()
}

/// Runs `script` with sh; its output (both streams), and whether it exited 0.
pub fn run(script: &str) -> Result<(bool, String), String> {
    let out = sh(&format!("{script} 2>&1")).context(script)?;
    Ok((out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned()))
}

/// The last lines of `output`, for a failure's message.
pub fn tail(output: &str) -> String {
    let lines: Vec<&str> = output.lines().collect();
    lines[lines.len().saturating_sub(15)..].join(" | ")
}

/// Runs `script`, which must succeed.
pub fn succeeds(script: &str) -> Outcome {
    let (ok, output) = run(script)?;
    ensure(ok, || format!("`{script}` failed: {}", tail(&output)))
}

/// The initramfs the running kernel boots from.
pub fn initramfs() -> Result<String, String> {
    let (ok, release) = run("uname -r")?;
    ensure(ok, || "uname -r failed".into())?;
    Ok(format!("/boot/initrd.img-{}", release.trim()))
}

/// Runs `script` with sh; it must exit 0, and its stdout must contain `expected`.
pub fn shell_runs(script: &str, expected: &str) -> Outcome {
    let out = sh(script).context(script)?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    ensure(out.status.success(), || {
        format!("`{script}` exited with {}: {}", out.status, String::from_utf8_lossy(&out.stderr).trim())
    })?;
    ensure(stdout.contains(expected), || format!("`{script}` printed {:?}, without {expected:?}", stdout.trim()))
}

/// Runs one case's steps in order, stopping at the first that fails.
pub fn run_case(steps: &[Step]) -> Outcome {
    steps.iter().try_for_each(|(script, expected)| shell_runs(script, expected))
}

/// Waits for systemd to finish starting the system; its state, and the failed units' names.
pub fn system_state() -> Result<(String, String), String> {
    let state = Command::new("systemctl").args(["is-system-running", "--wait"]).output().context("systemctl")?;
    let failed = Command::new("systemctl")
        .args(["list-units", "--failed", "--no-legend", "--plain", "--no-pager"])
        .output()
        .context("systemctl")?;
    Ok((
        String::from_utf8_lossy(&state.stdout).trim().to_owned(),
        String::from_utf8_lossy(&failed.stdout).trim().to_owned(),
    ))
}

/// The system booted: systemd is `running`, no unit failed.
pub fn booted() -> Outcome {
    let (state, failed) = system_state()?;
    ensure(state == "running", || format!("systemd says {state:?}; failed units: {failed}"))
}

/// The module runs in `mode`, locked or not, with its mapping guard attached.
pub fn module_state(mode: Mode, locked: bool) -> Outcome {
    let control = Control::system();
    let (got_mode, got_lock, guard) = (control.mode(), control.locked(), control.guard());
    ensure(
        got_mode.as_ref().ok() == Some(&mode)
            && got_lock.as_ref().ok() == Some(&locked)
            && matches!(guard, Ok(Guard::Active)),
        || format!("mode {got_mode:?}, locked {got_lock:?}, guard {guard:?}; expected {mode:?}, {locked}, active"),
    )
}

/// Ends the system: QEMU runs with `-no-reboot`, so a reboot ends the VM (and a test kernel,
/// which has no ACPI, cannot power off).
pub fn end() {
    let _ = Command::new("systemctl").args(["--force", "reboot"]).status();
}
