//! The Debian 13 root made by `mmdebstrap` and kept in the cache, and running commands inside it
//! and inside its copies (the signed system's images).

use std::fs;
use std::path::{Path, PathBuf};

use crate::Result;
use crate::cmd::Cmd;
use crate::deps;

/// What enters `root` (`$0`) and runs `$1` there: its own /proc, a clean environment.
const ENTER: &str = r#"mount -t proc proc "$0/proc" && exec chroot "$0" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 /bin/sh -c "$1""#;

/// Runs `script` (sh) as root inside `root`, with its own /proc and a clean environment; the
/// mount goes away with the command.
pub fn run_in(root: &Path, script: &str) -> Result {
    entering(root, script, ENTER).run()
}

/// As [`run_in`], with `source` on the host mounted at `target` (relative) inside `root` for the
/// script's while.
pub fn run_in_with_bind(root: &Path, source: &Path, target: &str, script: &str) -> Result {
    let enter = format!(r#"mkdir -p "$0/$2" && mount --bind "$3" "$0/$2" && {ENTER}"#);
    entering(root, script, &enter).arg(target).arg(source).run()
}

/// As [`run_in`], on an overlay of `root` whose changes go to `scratch` (`upper/`), so that
/// `root` stays as it is; with this machine's DNS resolver, for what the script downloads.
pub fn run_in_overlay(root: &Path, scratch: &Path, script: &str) -> Result {
    let enter = r#"mkdir -p "$2/upper" "$2/work" "$2/merged" && mount -t overlay overlay -o "lowerdir=$0,upperdir=$2/upper,workdir=$2/work" "$2/merged" && rm -f "$2/merged/etc/resolv.conf" && cp /etc/resolv.conf "$2/merged/etc/resolv.conf" && mount -t proc proc "$2/merged/proc" && exec chroot "$2/merged" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 /bin/sh -c "$1""#;
    entering(root, script, enter).arg(scratch).run()
}

/// As [`run_in`], for a script that is expected to fail: its exit status and output, whatever
/// they are.
pub fn output_in(root: &Path, script: &str) -> Result<std::process::Output> {
    entering(root, script, ENTER).output()
}

/// `enter` (sh, `$0` the root, `$1` the script) in a mount namespace of its own.
fn entering(root: &Path, script: &str, enter: &str) -> Cmd {
    Cmd::new("unshare").args(["--mount", "--fork", "sh", "-c", enter]).arg(root).arg(script)
}

/// The root file system `parent/name/root`, made by `mmdebstrap` with `args` (options, suite,
/// then the archive lines; the target directory goes between suite and archive) unless a
/// previous run finished making it; other roots under `parent` are removed (a few GB each).
/// `what` names it in messages.
pub fn cached_root(
    parent: &Path,
    name: &str,
    what: &str,
    options: &[String],
    suite: &str,
    archive: &[String],
) -> Result<PathBuf> {
    let dir = parent.join(name);
    let root = dir.join("root");
    if dir.join("ready").exists() {
        eprintln!("xtask: reusing {what} in {}", root.display());
    } else {
        eprintln!("xtask: making {what} in {} (a minute or two, once)", root.display());
        let _ = fs::remove_dir_all(&dir);
        deps::ensure_space(&dir, 5, &format!("making {what}"))?;
        fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        // Into a scratch name first: an interrupted run must not leave a root that looks ready.
        let scratch = dir.join("root.new");
        Cmd::new("mmdebstrap").args(options).arg(suite).arg(&scratch).args(archive).run()?;
        fs::rename(&scratch, &root).map_err(|e| format!("cannot rename {}: {e}", scratch.display()))?;
        fs::write(dir.join("ready"), b"").map_err(|e| format!("cannot mark {} ready: {e}", dir.display()))?;
    }
    if let Ok(entries) = fs::read_dir(parent) {
        for stale in entries.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| *p != dir) {
            eprintln!("xtask: removing the stale {}", stale.display());
            let _ = fs::remove_dir_all(stale);
        }
    }
    Ok(root)
}
