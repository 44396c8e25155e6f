//! The mapping guard's switch: attaching it with `elfsig-guard`, and its state as the `guard`
//! control file says it.

use elfsig_guest::harness::{Context, Outcome, control_value, counters_grew, ensure, run, stats};
use elfsig_guest::image::GUARD;

/// The guard's state, as its control file says it.
pub(crate) fn status() -> Result<String, String> {
    control_value("guard")
}

/// Runs `elfsig-guard` and checks that it made the guard active.
pub(crate) fn attach() -> Outcome {
    let out = run(GUARD, &[]).context(&format!("exec {GUARD}"))?;
    ensure(out.status.success(), || {
        format!("elfsig-guard failed ({}): {}", out.status, String::from_utf8_lossy(&out.stderr).trim())
    })?;
    ensure(status()? == "active", || format!("the guard is {:?} after elfsig-guard", status()))
}

/// [`attach`], with nothing else mapping files: its canary's refusal is the only one counted.
pub(crate) fn attach_alone() -> Outcome {
    let before = stats()?;
    attach()?;
    let after = stats()?;
    // The canary: an unsigned (not even ELF) memfd, sealed, mapped executable, refused.
    counters_grew(&before, &after, &[("mmap_denied", 1), ("malformed_elf", 1), ("mmap_guard_active", 1)])
}
