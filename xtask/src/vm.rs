//! Booting the test kernel in QEMU with an initramfs, and reading the guest's report from the
//! serial console.

pub mod cpio;
pub mod initramfs;
pub mod qemu;
pub mod real;
pub mod staged;

use crate::Result;
use crate::deps::Need;
use crate::kernel::Flavor;
use crate::keys::TestKeys;
use crate::{debian_kernel, kmod, paths, tools};
use elfsig_guest::{image, ktap};
use std::path::Path;

/// What the VM suites need besides the kernel build tools (openssl issues the test
/// certificate that the guest adds at run time; strip makes the guest's copy of the CLI small).
/// mkfs.btrfs makes the image the subvolume case mounts.
pub const VM_PACKAGES: &[Need] = &[
    Need::Qemu,
    Need::Deb("qemu-utils"),
    Need::Deb("busybox-static"),
    Need::Deb("openssl"),
    Need::Deb("binutils"),
    Need::Deb("btrfs-progs"),
];

/// The kernel module's end-to-end suite on the debug kernel (KASAN, lockdep and kmemleak watch
/// every case): builds (or reuses) the kernel and module, packs the
/// initramfs, boots it and checks every case's result; then boots it again with `bpf` left out
/// of the active LSMs, where the mapping guard cannot run.
pub fn test_suite(keys: &TestKeys, stress_seconds: Option<u64>) -> Result {
    let test = format!("{}=test", image::SUITE);
    let without_bpf = format!("{}=nobpf lsm=integrity", image::SUITE);
    let stress = stress_seconds.map(stress_boot);
    let mut boots = vec![("test", test.as_str(), 1200), ("nobpf", without_bpf.as_str(), 600)];
    if let Some((append, timeout)) = &stress {
        boots.push(("stress", append, *timeout));
    }
    run_suite(Flavor::Debug, keys, &boots)
}

/// The stress suite on the debug kernel, for `seconds` of load (see
/// crates/elfsig-guest/src/stress.rs).
pub fn stress_suite(keys: &TestKeys, seconds: u64) -> Result {
    let (append, timeout) = stress_boot(seconds);
    run_suite(Flavor::Debug, keys, &[("stress", &append, timeout)])
}

/// The debug kernel's stress boot for `seconds` of load: its command line and time limit.
fn stress_boot(seconds: u64) -> (String, u64) {
    // Boot, set-up and the final scans take a few minutes under emulation with KASAN.
    let timeout = 600 + 3 * seconds;
    // A log buffer that holds the whole run, so that no report is pushed out before the
    // checks read it.
    (format!("{}=stress {}={seconds} log_buf_len=8M", image::SUITE, image::STRESS_SECONDS), timeout)
}

/// Which kernels a task runs on (`--kernel test|debian-7.2`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kernels {
    /// The 6.12 test kernel and Debian's 7.2.
    Both,
    /// The 6.12 test kernel.
    Test,
    /// Debian's 7.2 kernel.
    Debian,
}

impl Kernels {
    /// `--kernel`'s value; `default` without one.
    pub fn parse(option: Option<&str>, default: Kernels) -> Result<Kernels> {
        match option {
            None => Ok(default),
            Some("test") => Ok(Kernels::Test),
            Some(debian_kernel::NAME) => Ok(Kernels::Debian),
            Some(other) => Err(format!("no kernel {other}: test or {}", debian_kernel::NAME)),
        }
    }

    /// Whether the test kernel is among them.
    pub fn test(self) -> bool {
        self != Kernels::Debian
    }

    /// Whether Debian's kernel is among them.
    pub fn debian(self) -> bool {
        self != Kernels::Test
    }
}

/// The vCPUs of a Debian kernel boot (see [`debian_suites`]).
pub const DEBIAN_CPUS: u32 = 1;

/// The same suite on Debian's own kernel, with its unmodified `vmlinuz` and the module built for
/// it (and by Debian's dkms, as a user's would be); then, given `stress_seconds`, the stress
/// suite there too. Debian's builtin keyring holds Debian's keys, so the module embeds the test
/// kernel key's certificate too, and the guest is told (`elfsig.kernel=distro`) which cases need
/// the test kernel's keyrings or its debug options. Last, the checks the module hands to other
/// CPUs, in a guest of two vCPUs.
pub fn debian_suites(keys: &TestKeys, stress_seconds: Option<u64>) -> Result {
    let (kernel, ko) = debian_module(keys)?;
    debian_kernel::dkms_test(&kernel)?;
    let distro = format!("{}=distro", image::KERNEL);
    let test = format!("{}=test {distro}", image::SUITE);
    // One vCPU: with two, Debian's kernel once died of an int3 at a jump label in do_exit that
    // the kernel was patching while the module unloaded (text_poke_bp): TCG ran the other
    // vCPU's stale translation. The boot of two below unloads nothing.
    let modules = debian_kernel::filesystem_modules(&kernel)?;
    // One initramfs for both boots, at once.
    let stress = stress_seconds.map(|seconds| {
        let append = format!("{}=stress {}={seconds} {distro}", image::SUITE, image::STRESS_SECONDS);
        (format!("{}-stress", debian_kernel::NAME), append, 600 + 3 * seconds)
    });
    let mut boots = vec![(debian_kernel::NAME, test.as_str(), 900)];
    if let Some((label, append, timeout)) = &stress {
        boots.push((label, append, *timeout));
    }
    boot_suite(&kernel.vmlinuz, &ko, keys, &modules, DEBIAN_CPUS, &boots)?;
    // The checks the module hands to other CPUs, alone, in a guest of two vCPUs: the test
    // kernels bring one CPU up whatever -smp says (no ACPI; QEMU's MP table lists one), and
    // Debian's other boots have one.
    let beside = format!("{}=beside {distro}", image::SUITE);
    let label = format!("{}-beside", debian_kernel::NAME);
    boot_suite(&kernel.vmlinuz, &ko, keys, &modules, 2, &[(label.as_str(), beside.as_str(), 600)])
}

/// Debian's kernel and the module built for it with the test keys' certificates embedded:
/// those the test module embeds, and the test kernel key's, which Debian's builtin keyring lacks.
pub fn debian_module(keys: &TestKeys) -> Result<(debian_kernel::DebianKernel, std::path::PathBuf)> {
    let kernel = debian_kernel::kernel()?;
    let certs = kmod::Embedded::from_files(
        &[keys.embedded(), vec![keys.kernel.cert.clone()]].concat(),
        std::slice::from_ref(&keys.policy.cert),
    )?;
    let ko = debian_kernel::build_module(&kernel, &certs)?;
    Ok((kernel, ko))
}

/// Boots the guest on the `flavor` kernel with the test initramfs, once per `(label, append,
/// timeout in seconds)`, one after the other, and checks each report.
fn run_suite(flavor: Flavor, keys: &TestKeys, boots: &[(&str, &str, u64)]) -> Result {
    let (kernel, ko) = kmod::for_tests(flavor, keys)?;
    boot_suite(&kernel.bzimage, &ko, keys, &[], 2, boots)
}

/// Boots `kernel` with `cpus` vCPUs and the test initramfs around `ko` (and the kernel
/// `modules` the guest loads first), once per `(label, append, timeout in seconds)`, all at once
/// (a suite's guest keeps about one host CPU busy, whatever its vCPUs), and checks each report.
fn boot_suite(
    kernel: &Path,
    ko: &Path,
    keys: &TestKeys,
    modules: &[std::path::PathBuf],
    cpus: u32,
    boots: &[(&str, &str, u64)],
) -> Result {
    let guest = tools::build_static("elfsig-guest")?;
    let elfsig = tools::build_cli()?;
    let initramfs = initramfs::test_suite(&elfsig, &guest, ko, keys, modules)?;
    let path = paths::target().join(format!("vm/{}-initramfs.cpio", boots.first().map_or("test", |b| b.0)));
    std::fs::write(&path, initramfs).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    let vms: Vec<qemu::Boot<'_>> = boots
        .iter()
        .map(|&(label, append, timeout_secs)| qemu::Boot {
            kernel,
            initramfs: &path,
            disk: None,
            append,
            timeout_secs,
            memory_mb: 2048,
            cpus,
            label,
            clock: qemu::Clock::Host,
            uefi: None,
        })
        .collect();
    // Every report, each failure said; the first failure is the error.
    let mut failures = Vec::new();
    for (&(label, _, _), run) in boots.iter().zip(qemu::boot_each(&vms)) {
        eprintln!("xtask: {label}:");
        if let Err(e) = run.and_then(|run| check_report(&run.console)) {
            failures.push(format!("{label}: {e}"));
        }
    }
    if failures.is_empty() { Ok(()) } else { Err(failures.join("\n")) }
}

/// Checks the guest's KTAP report: the run finished, every planned case was reported, none
/// failed.
pub fn check_report(output: &str) -> Result {
    let report = ktap::parse(output);
    for result in &report.results {
        let verdict = if result.ok { "ok  " } else { "FAIL" };
        let why = result.diagnostic.as_deref().map(|d| format!(": {d}")).unwrap_or_default();
        eprintln!("  {verdict} {}{why}", result.name);
    }
    match report.check() {
        Ok(passed) => {
            let skipped = report
                .results
                .iter()
                .filter(|r| r.diagnostic.as_deref().is_some_and(|d| d.starts_with("SKIP")))
                .count();
            eprintln!("xtask: {passed} VM cases passed ({skipped} of them skipped, saying why above)");
            Ok(())
        }
        Err(why) => {
            let tail: Vec<&str> = output.lines().rev().take(30).collect::<Vec<_>>().into_iter().rev().collect();
            Err(format!("the VM suite failed: {why}\nlast console lines:\n{}", tail.join("\n")))
        }
    }
}
