//! Which machines' code an architecture runs natively: what `--recursive` and `elfsig deb`
//! sign, and what they leave alone as foreign (an arm64 cross library in an amd64 tree, a
//! firmware's ELF image for a co-processor).

/// The ELF machines (`e_machine`) a kernel of one architecture runs without an emulator.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Machines(Vec<u16>);

const EM_SPARC: u16 = 2;
const EM_386: u16 = 3;
const EM_68K: u16 = 4;
const EM_MIPS: u16 = 8;
const EM_PARISC: u16 = 15;
const EM_SPARC32PLUS: u16 = 18;
const EM_PPC: u16 = 20;
const EM_PPC64: u16 = 21;
const EM_S390: u16 = 22;
const EM_ARM: u16 = 40;
const EM_SH: u16 = 42;
const EM_SPARCV9: u16 = 43;
const EM_IA_64: u16 = 50;
const EM_X86_64: u16 = 62;
const EM_AARCH64: u16 = 183;
const EM_RISCV: u16 = 243;
const EM_LOONGARCH: u16 = 258;
const EM_ALPHA: u16 = 0x9026;

impl Machines {
    /// Those of a Debian architecture (`dpkg --print-architecture`: amd64, arm64, ...): its
    /// own, and those its kernel runs as compatibility (i386 on amd64, arm on arm64).
    pub fn of_debian(architecture: &str) -> Option<Machines> {
        // Debian's ports for other kernels (hurd-i386, kfreebsd-amd64) run the same code.
        let cpu = architecture.rsplit('-').next().unwrap_or(architecture);
        let machines: &[u16] = match cpu {
            "amd64" | "x32" => &[EM_X86_64, EM_386],
            "i386" => &[EM_386],
            "arm64" => &[EM_AARCH64, EM_ARM],
            "armhf" | "armel" | "arm" => &[EM_ARM],
            "ppc64el" | "ppc64" => &[EM_PPC64, EM_PPC],
            "powerpc" => &[EM_PPC],
            "s390x" => &[EM_S390],
            "riscv64" => &[EM_RISCV],
            "mips64el" | "mipsel" | "mips64" | "mips" => &[EM_MIPS],
            "loong64" => &[EM_LOONGARCH],
            "sparc64" => &[EM_SPARCV9, EM_SPARC32PLUS, EM_SPARC],
            "alpha" => &[EM_ALPHA],
            "hppa" => &[EM_PARISC],
            "m68k" => &[EM_68K],
            "sh4" => &[EM_SH],
            "ia64" => &[EM_IA_64],
            _ => return None,
        };
        Some(Machines(machines.to_vec()))
    }

    /// These and `other`'s.
    pub fn and(mut self, other: &Machines) -> Machines {
        self.0.extend(other.0.iter().filter(|m| !self.0.contains(m)).copied().collect::<Vec<_>>());
        self
    }

    /// The Debian name of the architecture this program was built for.
    pub fn host_debian() -> &'static str {
        match std::env::consts::ARCH {
            "x86_64" => "amd64",
            "x86" => "i386",
            "aarch64" => "arm64",
            "arm" => "armhf",
            "powerpc64" => "ppc64el",
            "powerpc" => "powerpc",
            "s390x" => "s390x",
            "riscv64" => "riscv64",
            "mips" | "mips64" => "mipsel",
            "loongarch64" => "loong64",
            "sparc64" => "sparc64",
            other => other,
        }
    }

    /// Those of the machine this program runs on (every machine, if it is one elfsig does not
    /// know: nothing is then left alone as foreign).
    pub fn host() -> Machines {
        Machines::of_debian(Machines::host_debian()).unwrap_or(Machines(Vec::new()))
    }

    /// Whether code for `machine` runs natively (always, for an unknown architecture).
    pub fn runs(&self, machine: u16) -> bool {
        self.0.is_empty() || self.0.contains(&machine)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn architectures_run_their_own_code_and_their_compatibility_code() {
        let amd64 = Machines::of_debian("amd64").unwrap();
        assert!(amd64.runs(EM_X86_64) && amd64.runs(EM_386) && !amd64.runs(EM_AARCH64));
        let arm64 = Machines::of_debian("arm64").unwrap();
        assert!(arm64.runs(EM_AARCH64) && arm64.runs(EM_ARM) && !arm64.runs(EM_X86_64));
        assert_eq!(Machines::of_debian("hurd-i386"), Machines::of_debian("i386"));
        assert_eq!(Machines::of_debian("all"), None);
        let both = Machines::of_debian("s390x").unwrap().and(&amd64);
        assert!(both.runs(EM_S390) && both.runs(EM_X86_64) && !both.runs(EM_AARCH64));
        assert!(Machines::host().runs(if cfg!(target_arch = "x86_64") { EM_X86_64 } else { EM_AARCH64 }));
    }
}
