//! What must hold after the load: no wrong outcome, the kernel log free of reports, kmemleak
//! finding nothing of the module's; and the counts each phase prints.

use std::sync::atomic::Ordering;
use std::time::Duration;

use elfsig_guest::harness::{Context, Outcome, diagnostic, ensure, kernel_log};

use super::load::{Shared, Tally};

/// The names of the counts [`counts`] reads.
const NAMES: [&str; 8] = [
    "execs",
    "ran_good",
    "ran_other",
    "refused",
    "exec_failed",
    "killed_in_exec",
    "judged_must_not_load",
    "judged_must_run",
];

/// What the execs did so far.
pub(crate) fn counts(tally: &Tally) -> [u64; 8] {
    let [not_load, run] = tally
        .judged
        .iter()
        .fold([0, 0], |[a, b], [c, d]| [a + c.load(Ordering::Relaxed), b + d.load(Ordering::Relaxed)]);
    let counters =
        [&tally.execs, &tally.ran_good, &tally.ran_other, &tally.refused, &tally.failed, &tally.killed_in_exec];
    let [execs, good, other, refused, failed, killed] = counters.map(|c| c.load(Ordering::Relaxed));
    [execs, good, other, refused, failed, killed, not_load, run]
}

/// Prints what a phase did: its counts (`after - before`) and `extra`.
pub(crate) fn report(phase: &str, seconds: u64, before: [u64; 8], after: [u64; 8], extra: &str) {
    let counts: Vec<String> =
        NAMES.iter().zip(after.iter().zip(before)).map(|(name, (a, b))| format!("{name}={}", a - b)).collect();
    diagnostic(format_args!("stress phase={phase} seconds={seconds} {} {extra}", counts.join(" ")));
}

/// The wrong outcomes since the last call.
pub(crate) fn no_violations(shared: &Shared) -> Outcome {
    let v = shared.violations.take();
    ensure(v.is_empty(), || format!("{} wrong outcome(s): {}", v.len(), v.join("; ")))
}

/// Scans for leaks (twice: objects freed late need a second scan to be told from leaks);
/// returns how many unreferenced objects there are and the reports that name the module.
pub(crate) fn kmemleak() -> Result<(usize, Vec<String>), String> {
    let path = "/sys/kernel/debug/kmemleak";
    for _ in 0..2 {
        std::fs::write(path, "scan").context("scan")?;
        std::thread::sleep(Duration::from_secs(1));
    }
    let report = std::fs::read_to_string(path).context("read kmemleak")?;
    let leaks: Vec<&str> = report.split("unreferenced object").skip(1).collect();
    let ours = leaks.iter().filter(|l| l.contains("elfsig")).map(|l| (*l).to_owned()).collect();
    Ok((leaks.len(), ours))
}

/// The kernel reported no BUG, WARNING (KASAN, lockdep and atomic-sleep reports are among them)
/// or Oops, and the checkers were there to report: KASAN initialised, lockdep still on (it turns
/// itself off after its first report).
pub(crate) fn kernel_log_is_clean() -> Outcome {
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
