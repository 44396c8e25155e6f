//! What runs inside elfsig's test and bench VMs as PID 1: mounting, the system calls std does
//! not offer, the reporting harness (in KTAP), and what the host and the guests agree on (the
//! image's paths, the kernel command line); and inside the signed Debian system, the workload
//! its checks and its boot bench share (`debian`). The test runner (`src/main.rs`) and the bench
//! program (`bench/`) are built on it; `cargo xtask` reads the same constants and parses the
//! same KTAP.

pub mod bpf;
pub mod debian;
pub mod harness;
pub mod image;
pub mod ktap;
pub mod system;

/// Mounts what every guest needs, when running as PID 1.
pub fn boot() {
    if std::process::id() != 1 {
        return;
    }
    for (fstype, target) in [
        ("proc", "/proc"),
        ("sysfs", "/sys"),
        ("devtmpfs", "/dev"),
        ("securityfs", "/sys/kernel/security"),
        ("tmpfs", "/tmp"),
    ] {
        if let Err(e) = system::mount(fstype, target) {
            harness::diagnostic(format_args!("cannot mount {fstype} on {target}: {e}"));
        }
    }
}

/// The value of `name=value` on the kernel command line.
pub fn cmdline(name: &str) -> Option<String> {
    let cmdline = std::fs::read_to_string("/proc/cmdline").unwrap_or_default();
    let prefix = format!("{name}=");
    cmdline.split_whitespace().find_map(|w| w.strip_prefix(&prefix)).map(str::to_owned)
}

/// Whether the guest runs on a distribution's kernel rather than the test kernel
/// ([`image::KERNEL`]).
pub fn on_distro_kernel() -> bool {
    cmdline(image::KERNEL).as_deref() == Some("distro")
}

/// How many certificates the module under test embeds ([`image::EMBEDDED_CERTS`], and the test
/// kernel key's on a distribution's kernel).
pub fn embedded_certs() -> usize {
    image::EMBEDDED_CERTS + usize::from(on_distro_kernel())
}

/// As PID 1, ends the VM.
pub fn power_off_if_init() {
    if std::process::id() == 1 {
        system::power_off();
    }
}
