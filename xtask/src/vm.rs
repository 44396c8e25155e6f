//! Booting the test kernel in QEMU with an initramfs, and reading the guest's report from the
//! serial console.

pub mod cpio;
pub mod initramfs;
pub mod qemu;

use crate::Result;
use crate::keys::TestKeys;
use crate::{kmod, paths, tools};

/// The kernel module's end-to-end suite: builds (or reuses) the kernel and module, packs the
/// initramfs, boots it and checks every case's result.
pub fn test_suite(keys: &TestKeys) -> Result {
    let (kernel, ko) = kmod::for_tests(keys)?;
    let guest = tools::build_static("elfsig-guest")?;
    let elfsig = tools::build_cli()?;
    let initramfs = initramfs::test_suite(&elfsig, &guest, &ko, keys)?;
    let path = paths::target().join("vm/test-initramfs.cpio");
    std::fs::write(&path, initramfs).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    let run = qemu::boot(&qemu::Boot {
        kernel: &kernel.bzimage,
        initramfs: &path,
        append: "elfsig.suite=test",
        timeout_secs: 900,
        memory_mb: 1024,
        cpus: 2,
        label: "test",
    })?;
    check_report(&run.console)
}

/// Checks the guest's report: every case named, none failed, the run finished.
fn check_report(output: &str) -> Result {
    let mut passed = 0;
    let mut failed = Vec::new();
    for line in output.lines() {
        if let Some(rest) = line.strip_prefix("ELFSIG-TEST ok ") {
            passed += 1;
            eprintln!("  ok    {rest}");
        } else if let Some(rest) = line.strip_prefix("ELFSIG-TEST FAIL ") {
            eprintln!("  FAIL  {rest}");
            failed.push(rest.to_owned());
        }
    }
    let finished = output.lines().any(|l| l.starts_with("ELFSIG-DONE"));
    if !failed.is_empty() {
        return Err(format!("{} VM case(s) failed:\n  {}", failed.len(), failed.join("\n  ")));
    }
    if !finished || passed == 0 {
        let tail: Vec<&str> = output.lines().rev().take(30).collect::<Vec<_>>().into_iter().rev().collect();
        return Err(format!("the VM suite did not finish; last console lines:\n{}", tail.join("\n")));
    }
    eprintln!("xtask: {passed} VM cases passed");
    Ok(())
}
