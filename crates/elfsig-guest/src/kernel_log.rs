//! The check both suites end with: the kernel's own checkers were running and reported nothing.

use elfsig_guest::harness::{Context, Outcome, ensure, kernel_log};

/// The kernel reported no BUG, WARNING (KASAN, lockdep and atomic-sleep reports are among them)
/// or Oops, and the checkers were there to report: KASAN initialised, lockdep still on (it turns
/// itself off after its first report).
pub(crate) fn is_clean() -> Outcome {
    let log = kernel_log()?;
    let bad: Vec<&String> = log
        .iter()
        .filter(|l| l.contains("BUG:") || l.contains("WARNING:") || l.contains("Oops") || l.contains("KASAN"))
        .take(5)
        .collect();
    ensure(bad.is_empty(), || format!("the kernel reported: {bad:?}"))?;
    // A distribution's kernel has none of the checkers: what it reports is all there is.
    if elfsig_guest::on_distro_kernel() {
        return Ok(());
    }
    ensure(log.iter().any(|l| l.contains("KernelAddressSanitizer initialized")), || {
        "KASAN is not running in this kernel".into()
    })?;
    let lockdep = std::fs::read_to_string("/proc/lockdep_stats").context("read /proc/lockdep_stats")?;
    ensure(lockdep.lines().any(|l| l.split_whitespace().eq(["debug_locks:", "1"])), || {
        "lockdep is off (debug_locks is not 1)".into()
    })
}
