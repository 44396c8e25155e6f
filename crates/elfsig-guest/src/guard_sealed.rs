//! The guard kept from everyone else once the module holds it: root, who may load BPF programs,
//! gets no descriptor for any of the guard's programs, so cannot put one in a program array
//! and tail-call it from another hook with the same arguments (file_set_fowner into
//! file_release's program would give write refusals back early), replace its functions or
//! trace it. Its own programs still get descriptors, so that tools listing programs work. Nor
//! can root switch ftrace off, which would turn the trampolines the guard's programs run from
//! into no-ops.

use elfsig_guest::bpf;
use elfsig_guest::harness::{Context, Outcome, ensure};

/// The sysctl that switches every ftrace call site on or off, BPF trampolines included.
pub(crate) const FTRACE_ENABLED: &str = "/proc/sys/kernel/ftrace_enabled";

/// How many programs the guard runs, one on each hook (guard/src/load.rs's `HOOKS`).
const GUARD_PROGRAMS: usize = 13;

/// Checks, as root, that no descriptor is given for the guard's programs, with `ENOENT` (as for a
/// program gone, which `bpftool prog show` skips), and one is for any other program: those of
/// the other LSM links (systemd's, on the Debian system) and one root just loaded.
pub(crate) fn holds() -> Outcome {
    let lsm = bpf::lsm_programs().context("list the LSM links")?;
    let mut refused = 0;
    for id in &lsm {
        match bpf::program_by_id(*id) {
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => refused += 1,
            Err(e) => return Err(format!("asking for LSM program {id} by its ID failed otherwise: {e}")),
            Ok(_) => {}
        }
    }
    ensure(refused == GUARD_PROGRAMS, || {
        format!(
            "{refused} of the {} LSM links' programs ({lsm:?}) were kept from root, expected the guard's {GUARD_PROGRAMS}",
            lsm.len()
        )
    })?;
    let own = bpf::load_socket_filter().context("load a socket filter")?;
    let id = bpf::program_id(&own).context("read its ID")?;
    drop(bpf::program_by_id(id).context("ask for root's own program by its ID")?);
    Ok(())
}

/// Checks, as root, that ftrace cannot be switched off once the module has held the guard: writing
/// 0 to `kernel.ftrace_enabled` must be refused (`EBUSY`, the module's permanent ftrace_ops) and
/// leave it 1. Were it let through, it is switched back on before the failure is reported.
pub(crate) fn ftrace_stays_on() -> Outcome {
    let written = std::fs::write(FTRACE_ENABLED, "0");
    let now = std::fs::read_to_string(FTRACE_ENABLED).context("read ftrace_enabled")?;
    if now.trim() != "1" {
        std::fs::write(FTRACE_ENABLED, "1").context("switch ftrace back on")?;
    }
    ensure(written.as_ref().is_err_and(|e| e.raw_os_error() == Some(libc::EBUSY)), || {
        format!("writing 0 to {FTRACE_ENABLED} once the module has held the guard gave {written:?}, expected EBUSY")
    })?;
    ensure(now.trim() == "1", || format!("{FTRACE_ENABLED} says {now:?} after the refused write"))
}
