//! Which images of an index elfsig signs or checks: those for Linux on the architectures asked
//! for (the OCI names, Go's: `amd64`, `arm64`, ...), and the machines whose code each runs.

use crate::architecture::Machines;
use crate::error::Error;

/// The architectures asked for, by their OCI names; empty for all of them.
#[derive(Clone, Debug)]
pub struct Platforms(Vec<String>);

impl Platforms {
    /// The architectures `--architecture` names (`all` for every one); this machine's when it
    /// names none.
    pub fn new(named: &[String]) -> Result<Platforms, Error> {
        if named.iter().any(|a| a == "all") {
            return Ok(Platforms(Vec::new()));
        }
        if named.is_empty() {
            return Ok(Platforms(vec![host().to_owned()]));
        }
        for architecture in named {
            if machines(architecture).is_none() {
                return Err(Error::Usage(format!(
                    "--architecture: {architecture:?} is not an OCI architecture elfsig knows (amd64, arm64, ...)"
                )));
            }
        }
        Ok(Platforms(named.to_vec()))
    }

    /// Whether images for `os` on `architecture` are among those asked for.
    pub fn wants(&self, os: &str, architecture: &str) -> bool {
        os == "linux" && (self.0.is_empty() || self.0.iter().any(|a| a == architecture))
    }
}

/// The machines an image for the OCI `architecture` runs natively, as the Debian architecture
/// of the same name would.
pub fn machines(architecture: &str) -> Option<Machines> {
    let debian = match architecture {
        "amd64" => "amd64",
        "386" => "i386",
        "arm64" => "arm64",
        "arm" => "armhf",
        "ppc64le" => "ppc64el",
        "ppc64" => "ppc64",
        "s390x" => "s390x",
        "riscv64" => "riscv64",
        "mips64le" => "mips64el",
        "mips64" => "mips64",
        "mipsle" => "mipsel",
        "mips" => "mips",
        "loong64" => "loong64",
        _ => return None,
    };
    Machines::of_debian(debian)
}

/// This machine's architecture, as OCI names it.
pub fn host() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "x86" => "386",
        "aarch64" => "arm64",
        "arm" => "arm",
        "powerpc64" if cfg!(target_endian = "little") => "ppc64le",
        "powerpc64" => "ppc64",
        "s390x" => "s390x",
        "riscv64" => "riscv64",
        "loongarch64" => "loong64",
        "mips64" if cfg!(target_endian = "little") => "mips64le",
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn platforms_are_this_machine_by_default_and_linux_only() {
        let default = Platforms::new(&[]).unwrap();
        assert!(default.wants("linux", host()) && !default.wants("windows", host()));
        assert!(!default.wants("linux", if host() == "arm64" { "amd64" } else { "arm64" }));
        let all = Platforms::new(&["all".into()]).unwrap();
        assert!(all.wants("linux", "s390x") && !all.wants("darwin", "arm64"));
        assert!(Platforms::new(&["x86_64".into()]).is_err());
        assert!(machines("amd64").is_some_and(|m| m.runs(62)) && machines("arm64").is_some_and(|m| !m.runs(62)));
    }
}
