//! `--verbose`: each step's time, on standard error, each line stamped with the time since the
//! program started: where attaching the guard spends its time (reading the kernel's BTF, the
//! verifier, attaching) is what a slow boot's reader wants to know.

use std::sync::OnceLock;
use std::time::Instant;

/// When `--verbose` was asked for: the start of the times printed.
static STARTED: OnceLock<Instant> = OnceLock::new();

/// Prints the steps' times from now on.
pub(crate) fn enable() {
    STARTED.get_or_init(Instant::now);
}

/// Runs `work`, and in verbose mode says how long it took.
pub(crate) fn step<T>(name: &str, work: impl FnOnce() -> T) -> T {
    let started = Instant::now();
    let result = work();
    if STARTED.get().is_some() {
        say(&format!("{name}: {:.1} ms", started.elapsed().as_secs_f64() * 1000.0));
    }
    result
}

fn say(line: &str) {
    let since = STARTED.get().map_or(0.0, |started| started.elapsed().as_secs_f64() * 1000.0);
    eprintln!("[{since:9.1} ms] elfsig-guard: {line}");
}
