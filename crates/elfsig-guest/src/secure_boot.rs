//! What the signed Debian system checks when it was booted with Secure Boot
//! ([`DISTRO_SECURE_BOOT`]): the firmware enforced it, the kernel locked itself down because of
//! it, and the module that loaded is the one the pipeline signed with the MOK key the firmware
//! holds, where an unsigned module is refused.
//!
//! [`DISTRO_SECURE_BOOT`]: elfsig_guest::image::DISTRO_SECURE_BOOT

use elfsig_guest::debian::sh;
use elfsig_guest::harness::{self, Context, Outcome, ensure};

/// The UEFI global variable `SecureBoot`: 4 bytes of attributes, then 1 when it is enforced.
const SECURE_BOOT_VARIABLE: &str = "/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c";
/// The end of a signed module file: `struct module_signature` (12 bytes, the signature's
/// length big-endian in its last 4), after the signature itself, then this.
const MODULE_SIGNATURE_MAGIC: &[u8] = b"~Module signature appended~\n";
/// A module of Debian's kernel that nothing here loads, to be stripped of its signature.
const UNLOADED_MODULE: &str = "kernel/drivers/net/dummy.ko.xz";

/// The firmware enforced Secure Boot and the kernel is locked down because of it.
pub(crate) fn enforced() -> Outcome {
    let variable = std::fs::read(SECURE_BOOT_VARIABLE).context(SECURE_BOOT_VARIABLE)?;
    ensure(variable.get(4) == Some(&1), || format!("SecureBoot is {:?}, not enforced", variable.get(4)))?;
    let lockdown = std::fs::read_to_string("/sys/kernel/security/lockdown").context("lockdown")?;
    ensure(lockdown.contains("[integrity]") || lockdown.contains("[confidentiality]"), || {
        format!("the kernel is not locked down: {}", lockdown.trim())
    })
}

/// The module that runs was signed with the MOK key the firmware's shim handed the kernel, and
/// an unsigned module is refused: lockdown's signature check is what let elfsig's in.
pub(crate) fn module_signed_by_the_mok() -> Outcome {
    let signer = sh("modinfo -F signer elfsig").context("modinfo")?;
    let signer = String::from_utf8_lossy(&signer.stdout).trim().to_owned();
    ensure(!signer.is_empty(), || "the installed elfsig module carries no signature".into())?;
    let loaded = format!("Loaded X.509 cert '{signer}");
    let log = harness::kernel_log()?;
    ensure(log.iter().any(|l| l.contains(&loaded)), || {
        let certs: Vec<&String> = log.iter().filter(|l| l.contains("X.509")).collect();
        format!("the kernel loaded no MOK certificate named {signer:?}; its certificates: {certs:?}")
    })?;

    let release = sh("uname -r").context("uname")?;
    let release = String::from_utf8_lossy(&release.stdout).trim().to_owned();
    let path = format!("/usr/lib/modules/{release}/{UNLOADED_MODULE}");
    let unpacked = sh(&format!("xz -dc {path}")).context("xz")?;
    ensure(unpacked.status.success(), || format!("cannot unpack {path}"))?;
    let unsigned = strip_signature(&unpacked.stdout).ok_or_else(|| format!("{path} is not signed"))?;
    let copy = "/root/elfsig-check-unsigned.ko";
    std::fs::write(copy, unsigned).context(copy)?;
    let out = harness::run("/usr/sbin/insmod", &[copy]).context("insmod")?;
    let _ = std::fs::remove_file(copy);
    ensure(!out.status.success(), || format!("insmod of {path} without its signature succeeded"))?;
    // Lockdown's refusal, or the signature enforcement's where Secure Boot turned it on.
    let refusals = ["unsigned module loading is restricted", "Loading of unsigned module is rejected"];
    let log = harness::kernel_log()?;
    ensure(log.iter().any(|l| refusals.iter().any(|r| l.contains(r))), || {
        format!("insmod failed ({}) but the kernel logged no refusal", String::from_utf8_lossy(&out.stderr).trim())
    })
}

/// A signed module's bytes without its signature, or `None` if it has none.
fn strip_signature(module: &[u8]) -> Option<&[u8]> {
    let body = module.strip_suffix(MODULE_SIGNATURE_MAGIC)?;
    let length = body.len().checked_sub(4).and_then(|at| body.get(at..))?;
    let signature = u32::from_be_bytes(length.try_into().ok()?) as usize;
    let end = body.len().checked_sub(12)?.checked_sub(signature)?;
    body.get(..end)
}

#[cfg(test)]
mod tests {
    use super::strip_signature;

    #[test]
    fn signatures_are_stripped_by_their_trailer() {
        let mut module = b"ELF body".to_vec();
        module.extend_from_slice(b"SIG");
        module.extend_from_slice(&[0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 3]);
        module.extend_from_slice(super::MODULE_SIGNATURE_MAGIC);
        assert_eq!(strip_signature(&module), Some(&b"ELF body"[..]));
        assert_eq!(strip_signature(b"ELF body"), None);
        // A length past the start: no panic, no answer.
        let mut short = vec![0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff];
        short.extend_from_slice(super::MODULE_SIGNATURE_MAGIC);
        assert_eq!(strip_signature(&short), None);
    }
}
