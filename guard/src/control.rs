//! The module's control files this program uses: `guard` (its state; where the links are
//! handed over), `mode`, and the kernel's list of active LSMs.

use std::path::PathBuf;

const DIR: &str = "/sys/kernel/security/elfsig";
const LSM: &str = "/sys/kernel/security/lsm";

fn path(name: &str) -> PathBuf {
    PathBuf::from(DIR).join(name)
}

/// The guard's state, as the `guard` control file names it (see kmod/README.md).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Status {
    /// `unavailable: <why>`
    Unavailable(String),
    /// `detached`
    Detached,
    /// `attached`
    Attached,
    /// `active`
    Active,
}

/// The guard's state, and the control file's line as the module wrote it.
pub(crate) fn status() -> Result<(Status, String), String> {
    let file = path("guard");
    let text = std::fs::read_to_string(&file).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => format!("the elfsig module is not loaded (no {})", file.display()),
        _ => format!("cannot read {}: {e}", file.display()),
    })?;
    let line = text.trim_end().to_owned();
    let status = match line.as_str() {
        "detached" => Status::Detached,
        "attached" => Status::Attached,
        "active" => Status::Active,
        _ => match line.strip_prefix("unavailable: ") {
            Some(why) => Status::Unavailable(why.to_owned()),
            None => return Err(format!("{} says {line:?}, which this elfsig-guard does not know", file.display())),
        },
    };
    Ok((status, line))
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
pub(crate) fn hand_over(fds: &[i32]) -> Result<(), String> {
    let words: Vec<String> = fds.iter().map(i32::to_string).collect();
    let file = path("guard");
    std::fs::write(&file, format!("attach {}\n", words.join(" ")))
        .map_err(|e| format!("the module refused the guard's links ({}): {e}", file.display()))
}

/// Whether the module enforces.
pub(crate) fn enforcing() -> Result<bool, String> {
    let file = path("mode");
    let mode = std::fs::read_to_string(&file).map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    Ok(mode.trim_end() == "enforce")
}
