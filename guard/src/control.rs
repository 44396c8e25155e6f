//! What this program asks of the module's control files (through `elfsig-control`, their one
//! definition in user space) and of the kernel's list of active LSMs.

use elfsig_control::{Control, Error, Guard, Mode};

const LSM: &str = "/sys/kernel/security/lsm";
const FTRACE_ENABLED: &str = "/proc/sys/kernel/ftrace_enabled";

/// The guard's state.
pub(crate) fn status() -> Result<Guard, String> {
    Control::system().guard().map_err(|e| e.to_string())
}

/// Refuses when `bpf` is not among the kernel's active LSMs: attaching would succeed and the
/// programs would never run.
pub(crate) fn check_bpf_lsm_active() -> Result<(), String> {
    let list = std::fs::read_to_string(LSM).map_err(|e| format!("cannot read {LSM}: {e}"))?;
    if list.trim_end().split(',').any(|lsm| lsm == "bpf") {
        Ok(())
    } else {
        Err(format!(
            "bpf is not among the kernel's active LSMs ({LSM}: {}): add it to the lsm= kernel parameter",
            list.trim_end()
        ))
    }
}

/// Hands the links behind `fds` (this process's descriptors) to the module.
/// `EAGAIN`: ftrace is switched off, and the programs' trampolines with it; the module keeps it on
/// once it holds the links, and refuses them until then.
pub(crate) fn hand_over(fds: &[i32]) -> Result<(), String> {
    Control::system().attach_guard(fds).map_err(|e| match e {
        Error::Refused { source, .. } if source.raw_os_error() == Some(libc::EAGAIN) => format!(
            "the module refused the guard's links: ftrace is switched off ({FTRACE_ENABLED} is 0), and with it \
             the BPF trampolines the programs run from: switch it on (sysctl kernel.ftrace_enabled=1)"
        ),
        e => format!("the module refused the guard's links: {e}"),
    })
}

/// Whether the module enforces.
pub(crate) fn enforcing() -> Result<bool, String> {
    Ok(Control::system().mode().map_err(|e| e.to_string())? == Mode::Enforce)
}
