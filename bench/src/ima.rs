//! Setting up IMA appraisal, the peer configuration: the test key's certificate in IMA's
//! keyring, copies of the programs owned by [`IMA_UID`] carrying the `security.ima` signatures
//! evmctl made on the host, and a policy that appraises executions of that owner's files.
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
use crate::measure::exec_us;

const POLICY: &str = "/sys/kernel/security/ima/policy";

/// Sets IMA up; afterwards `/b/ima/<program>` runs only with a valid signature.
pub(crate) fn setup() -> Result<(), String> {
    let der = std::fs::read(image::BENCH_IMA_CERT).context(image::BENCH_IMA_CERT)?;
    let keyring = system::add_key("keyring", "_ima", &[], libc::KEY_SPEC_USER_KEYRING).context("create _ima")?;
    system::add_key("asymmetric", "", &der, keyring).context("add the key to _ima")?;

    std::fs::create_dir_all(image::BENCH_IMA_COPIES).context(image::BENCH_IMA_COPIES)?;
    for entry in std::fs::read_dir(image::BENCH_IMA_SIGNATURES).context(image::BENCH_IMA_SIGNATURES)? {
        let sig_path = entry.context(image::BENCH_IMA_SIGNATURES)?.path();
        let Some(name) = sig_path.file_stem().map(|n| n.to_string_lossy().into_owned()) else { continue };
        copy_signed(&name, &std::fs::read(&sig_path).context("read signature")?)?;
    }
    std::fs::write(POLICY, format!("appraise func=BPRM_CHECK fowner={IMA_UID} appraise_type=imasig\n"))
        .context("write the IMA policy")?;

    // The policy is live: a signed copy runs, an unsigned one owned by the same user does not.
    exec_us(&Config::Ima.program("hello"), &[]).map_err(|e| format!("IMA refuses its signed copy: {e}"))?;
    let unsigned = format!("{}/unsigned-check", image::BENCH_IMA_COPIES);
    std::fs::copy(format!("{}/hello", image::BENCH_SIGNED), &unsigned).context("copy")?;
    std::os::unix::fs::chown(&unsigned, Some(IMA_UID), Some(IMA_UID)).context("chown")?;
    std::fs::set_permissions(&unsigned, std::fs::Permissions::from_mode(0o755)).context("chmod")?;
    match exec_us(&unsigned, &[]) {
        Err(e) if e.contains("Permission denied") => Ok(()),
        other => Err(format!("IMA let an unsigned program run: {other:?}")),
    }
}

/// Copies `/b/signed/<name>` to `/b/ima/<name>`, owned by [`IMA_UID`], with `signature` in
/// `security.ima`.
pub(crate) fn copy_signed(name: &str, signature: &[u8]) -> Result<(), String> {
    let (from, to) = (format!("{}/{name}", image::BENCH_SIGNED), format!("{}/{name}", image::BENCH_IMA_COPIES));
    std::fs::copy(&from, &to).context(&format!("copy {from}"))?;
    std::os::unix::fs::chown(&to, Some(IMA_UID), Some(IMA_UID)).context("chown")?;
    std::fs::set_permissions(&to, std::fs::Permissions::from_mode(0o755)).context("chmod")?;
    system::set_xattr(Path::new(&to), "security.ima", signature).context(&format!("set security.ima on {to}"))
}
