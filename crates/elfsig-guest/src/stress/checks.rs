//! What must hold after the load: no wrong outcome, kmemleak finding nothing of the module's;
//! and the counts each phase prints. (The kernel log free of reports is `kernel_log.rs`, which
//! the test suite ends with too.)

use std::sync::atomic::Ordering;
use std::time::Duration;

use elfsig_guest::harness::{Context, Outcome, diagnostic, ensure};

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
