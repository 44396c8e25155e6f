//! The `policy` control file: the loaded policy's serial, digest and counts; loading a signed
//! policy, and clearing it.

use std::io::{self, Write};

use crate::dir::Control;
use crate::error::Error;

/// What the module says of its loaded policy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadedPolicy {
    /// Its serial.
    pub serial: u64,
    /// The SHA-256 of its body, hex.
    pub sha256: String,
    /// How many digests it revokes.
    pub revoked_digests: u64,
    /// How many certificates it revokes.
    pub revoked_certs: u64,
    /// How many certificates it trusts.
    pub trusted_certs: u64,
}

impl LoadedPolicy {
    /// Parses the file's contents: `none`, or `name value` lines. `Err` holds what is not
    /// understood.
    pub fn parse(text: &str) -> Result<Option<LoadedPolicy>, String> {
        if text.trim() == "none" {
            return Ok(None);
        }
        let value = |name: &str| -> Result<&str, String> {
            text.lines()
                .find_map(|line| line.strip_prefix(name)?.strip_prefix(' '))
                .ok_or_else(|| format!("no {name} in {text:?}"))
        };
        let number = |name: &str| value(name)?.parse::<u64>().map_err(|_| format!("{name} is not a number"));
        Ok(Some(LoadedPolicy {
            serial: number("serial")?,
            sha256: value("sha256")?.to_owned(),
            revoked_digests: number("revoked_digests")?,
            revoked_certs: number("revoked_certs")?,
            trusted_certs: number("trusted_certs")?,
        }))
    }
}

impl Control {
    /// The loaded policy, if any; `None` too for a module that has no policies (older).
    pub fn policy(&self) -> Result<Option<LoadedPolicy>, Error> {
        if self.loaded() && !self.path("policy").exists() {
            return Ok(None);
        }
        let text = self.read("policy")?;
        LoadedPolicy::parse(&text).map_err(|content| Error::Unexpected { file: self.path("policy"), content })
    }

    /// Loads a signed policy (`bytes`, a whole policy file), in one write.
    pub fn load_policy(&self, bytes: &[u8]) -> Result<(), Error> {
        self.write_policy(bytes, "loading a policy")
    }

    /// Unloads the policy; refused while locked.
    pub fn clear_policy(&self) -> Result<(), Error> {
        self.write_policy(b"clear", "clearing the policy")
    }

    fn write_policy(&self, bytes: &[u8], change: &str) -> Result<(), Error> {
        let file = self.path("policy");
        let mut open = std::fs::OpenOptions::new().write(true).open(&file).map_err(|source| match source.kind() {
            io::ErrorKind::NotFound if !self.loaded() => self.not_loaded(),
            io::ErrorKind::NotFound => {
                Error::Unexpected { file: file.clone(), content: "no such file: a module without policies".into() }
            }
            io::ErrorKind::PermissionDenied => Error::NotRoot { action: "changing", file: file.clone() },
            _ => Error::Io { action: "cannot open", file: file.clone(), source },
        })?;
        // One write: the module takes a policy whole, from one write at offset 0.
        let written = open.write(bytes).map_err(|source| match source.raw_os_error() {
            Some(libc::EPERM) => Error::Locked { change: change.to_owned() },
            Some(errno) => Error::PolicyRefused { why: why(errno), source },
            None => Error::Io { action: "cannot write", file: file.clone(), source },
        })?;
        if written != bytes.len() {
            return Err(Error::Io {
                action: "cannot write",
                file,
                source: io::Error::other(format!("wrote {written} of {} bytes", bytes.len())),
            });
        }
        Ok(())
    }
}

/// What the module's errno for a refused policy means (kmod/policy.rs).
fn why(errno: i32) -> &'static str {
    match errno {
        libc::EKEYREJECTED => "it is not signed by a policy key the module trusts, or its signature does not verify",
        libc::ESTALE => "its serial is not above the loaded policy's (an older policy cannot replace a newer one)",
        libc::EBADMSG => "its signature is not PKCS#7 the kernel reads",
        libc::EINVAL => "it is not a well-formed signed policy (truncated, padded or malformed)",
        libc::EBUSY => "another policy is being loaded",
        libc::ENOKEY | libc::EKEYREVOKED => "a certificate in it cannot be used by the kernel",
        _ => "the module could not apply it",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_none_and_a_loaded_policy_and_refuses_the_rest() {
        assert_eq!(LoadedPolicy::parse("none\n"), Ok(None));
        let text = "serial 7\nsha256 00ff\nrevoked_digests 2\nrevoked_certs 1\ntrusted_certs 0\n";
        assert_eq!(
            LoadedPolicy::parse(text),
            Ok(Some(LoadedPolicy {
                serial: 7,
                sha256: "00ff".into(),
                revoked_digests: 2,
                revoked_certs: 1,
                trusted_certs: 0
            }))
        );
        assert!(LoadedPolicy::parse("serial x\n").is_err());
        assert!(LoadedPolicy::parse("").is_err());
    }
}
