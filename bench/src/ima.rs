//! Setting up IMA appraisal, the peer configuration: the test key's certificate in IMA's
//! keyring, copies of the programs and libraries owned by [`IMA_UID`] carrying the
//! `security.ima` signatures evmctl made on the host, and a policy that appraises that owner's
//! files when they are executed or mapped executable.
//!
//! The bench kernel does not require IMA keys to be signed by a built-in key
//! (`CONFIG_INTEGRITY_TRUSTED_KEYRING` is off), and then IMA has no keyring of its own: it looks
//! up a keyring named `_ima` from the process it appraises for, as evmctl's documentation sets
//! it up. It is made here in root's user keyring, which every root process reaches.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use elfsig_guest::harness::Context;
use elfsig_guest::{image, system};

use crate::config::{Config, IMA_UID};
use crate::measure::{exec_ok_us, exec_us};

const POLICY: &str = "/sys/kernel/security/ima/policy";

/// Sets IMA up; afterwards `/b/ima/<program>` runs only with a valid signature.
pub(crate) fn setup() -> Result<(), String> {
    let der = std::fs::read(image::BENCH_IMA_CERT).context(image::BENCH_IMA_CERT)?;
    std::fs::create_dir_all(image::BENCH_IMA_COPIES).context(image::BENCH_IMA_COPIES)?;
    for entry in std::fs::read_dir(image::BENCH_IMA_SIGNATURES).context(image::BENCH_IMA_SIGNATURES)? {
        let sig_path = entry.context(image::BENCH_IMA_SIGNATURES)?.path();
        let Some(name) = sig_path.file_stem().map(|n| n.to_string_lossy().into_owned()) else { continue };
        copy_signed(&name, &std::fs::read(&sig_path).context("read signature")?)?;
    }
    let policy = format!(
        "appraise func=BPRM_CHECK fowner={IMA_UID} appraise_type=imasig\n\
         appraise func=MMAP_CHECK fowner={IMA_UID} appraise_type=imasig\n"
    );
    load(&der, &policy)?;

    // The policy is live: a signed copy runs and loads a signed library; an unsigned program or
    // library owned by the same user does not.
    exec_us(&Config::Ima.program("hello"), &[]).map_err(|e| format!("IMA refuses its signed copy: {e}"))?;
    let library = Config::Ima.program(&elfsig_fixtures::bench_library_name(0));
    let probe = Config::Ima.program("guard-probe");
    exec_ok_us(&probe, &["dlopen", &library]).map_err(|e| format!("IMA refuses a signed library: {e}"))?;
    let unsigned = owned_copy("hello", "unsigned-check")?;
    match exec_us(&unsigned, &[]) {
        Err(e) if e.contains("Permission denied") => {}
        other => return Err(format!("IMA let an unsigned program run: {other:?}")),
    }
    let unsigned = owned_copy(&elfsig_fixtures::bench_library_name(0), "unsigned-check.so")?;
    let out = std::process::Command::new(&probe).args(["dlopen", &unsigned]).output().context("run the probe")?;
    if out.status.code() == Some(1) && out.stdout.starts_with(b"dlopen: refused") {
        Ok(())
    } else {
        Err(format!("IMA let an unsigned library load: {out:?}"))
    }
}

/// Puts the certificate `der` in a keyring named `_ima` in root's user keyring, where IMA finds
/// it, and loads `policy`: from then on, what the policy names runs only with a signature that
/// certificate verifies.
pub(crate) fn load(der: &[u8], policy: &str) -> Result<(), String> {
    let keyring = system::add_key("keyring", "_ima", &[], libc::KEY_SPEC_USER_KEYRING).context("create _ima")?;
    system::add_key("asymmetric", "", der, keyring).context("add the key to _ima")?;
    std::fs::write(POLICY, policy).context("write the IMA policy")
}

/// Copies `/b/signed/<name>` to `/b/ima/<name>`, owned by [`IMA_UID`], with `signature` in
/// `security.ima`.
pub(crate) fn copy_signed(name: &str, signature: &[u8]) -> Result<(), String> {
    let to = owned_copy(name, name)?;
    system::set_xattr(Path::new(&to), "security.ima", signature).context(&format!("set security.ima on {to}"))
}

/// Copies `/b/signed/<name>` to `/b/ima/<copy>`, owned by [`IMA_UID`], without an IMA
/// signature; returns the copy's path.
fn owned_copy(name: &str, copy: &str) -> Result<String, String> {
    let (from, to) = (format!("{}/{name}", image::BENCH_SIGNED), format!("{}/{copy}", image::BENCH_IMA_COPIES));
    std::fs::copy(&from, &to).context(&format!("copy {from}"))?;
    std::os::unix::fs::chown(&to, Some(IMA_UID), Some(IMA_UID)).context("chown")?;
    std::fs::set_permissions(&to, std::fs::Permissions::from_mode(0o755)).context("chmod")?;
    Ok(to)
}
