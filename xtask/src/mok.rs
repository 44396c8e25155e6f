//! Signing the module for Secure Boot (`kmod/boot/mok-sign`), tested with the test kernel's own
//! `sign-file`: a Machine Owner Key made on first use, a signature the kernel's tools read, and
//! clear refusals that leave the module as it was.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use crate::cmd::Cmd;
use crate::{Result, paths};

/// The subject of the key `mok-sign` makes.
const SIGNER: &str = "elfsig module signing key (MOK)";

/// Signs a copy of `ko` with `mok-sign` against `tree`, checks the signature and the key, and
/// checks what `mok-sign` refuses.
pub fn test(tree: &Path, ko: &Path) -> Result {
    let work = paths::target().join("mok-test");
    let _ = fs::remove_dir_all(&work);
    fs::create_dir_all(&work).map_err(|e| format!("cannot create {}: {e}", work.display()))?;
    let script = paths::root().join("kmod/boot/mok-sign");
    let module = work.join("elfsig.ko");
    fs::copy(ko, &module).map_err(|e| format!("cannot copy {}: {e}", ko.display()))?;
    let keys = work.join("mok");
    let mok_sign = |kdir: &Path, keys: &Path| {
        let mut command = Command::new(&script);
        command.env("KDIR", kdir).env("ELFSIG_MOK_DIR", keys);
        command
    };

    Cmd::new(&script).env("KDIR", tree).env("ELFSIG_MOK_DIR", &keys).arg(&module).run()?;
    let signer = Cmd::new("modinfo").args(["-F", "signer"]).arg(&module).read()?;
    if signer.trim() != SIGNER {
        return Err(format!("mok-sign's module is signed by {signer:?}, not {SIGNER:?}"));
    }
    let mode = fs::metadata(keys.join("mok.key")).map_err(|e| format!("no MOK key: {e}"))?.permissions().mode();
    if mode & 0o077 != 0 {
        return Err(format!("mok-sign made its private key readable by others (mode {mode:o})"));
    }

    // Refusals, each saying why, and leaving the module as it was.
    let unsigned = work.join("unsigned.ko");
    fs::copy(ko, &unsigned).map_err(|e| format!("cannot copy {}: {e}", ko.display()))?;
    let compressed = work.join("elfsig.ko.xz");
    fs::write(&compressed, b"not really xz").map_err(|e| format!("cannot write {}: {e}", compressed.display()))?;
    // A key whose certificate is gone must not be replaced by a new pair (it may be enrolled).
    let half = work.join("half");
    fs::create_dir_all(&half).map_err(|e| format!("cannot create {}: {e}", half.display()))?;
    fs::copy(keys.join("mok.key"), half.join("mok.key")).map_err(|e| format!("cannot copy the MOK key: {e}"))?;
    let cases: [(&Path, &Path, &Path, &str); 4] = [
        (&work.join("missing.ko"), tree, &keys, "no module"),
        (&compressed, tree, &keys, "decompress it first"),
        (&unsigned, &work, &keys, "install the kernel's headers, or set KDIR"),
        (&unsigned, tree, &half, "only one of"),
    ];
    for (target, kdir, keys, says) in cases {
        let before = fs::read(target).ok();
        let out = mok_sign(kdir, keys).arg(target).output().map_err(|e| format!("cannot run mok-sign: {e}"))?;
        let stderr = String::from_utf8_lossy(&out.stderr);
        if out.status.success() || !stderr.contains(says) {
            return Err(format!(
                "mok-sign {}: {} {stderr:?}, expected a refusal saying {says:?}",
                target.display(),
                out.status
            ));
        }
        if fs::read(target).ok() != before {
            return Err(format!("mok-sign changed {} while refusing it", target.display()));
        }
    }
    if half.join("mok.der").exists() {
        return Err("mok-sign made a certificate next to a key that had lost its own".into());
    }
    eprintln!("xtask: mok-sign signed the module with a new MOK and refused what it must");
    Ok(())
}
