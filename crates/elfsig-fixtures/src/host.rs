//! What this host executes natively: x86-64 Linux programs, 32-bit x86 ones when its kernel runs
//! them (found out by running a synthetic one), and so which synthetic files run here.

use std::sync::OnceLock;

use crate::elf::{Class, Endian};
use crate::synth::{HELLO_OUTPUT, Spec, synth};
use crate::system::{cache_dir, run_program, write_executable};

/// Whether this process runs on x86-64 Linux, the only host the synthetic and built programs
/// execute on natively.
pub(crate) fn host_is_x86_64_linux() -> bool {
    cfg!(all(target_arch = "x86_64", target_os = "linux"))
}

/// Whether the kernel runs 32-bit x86 programs (`CONFIG_IA32_EMULATION`), found out once by
/// running the synthetic 32-bit little-endian executable.
pub fn host_runs_i386() -> bool {
    static ANSWER: OnceLock<bool> = OnceLock::new();
    *ANSWER.get_or_init(|| {
        if !host_is_x86_64_linux() {
            return false;
        }
        let spec = Spec::new(Class::Elf32, Endian::Little);
        let path = cache_dir().join(format!("i386-probe-{}", std::process::id()));
        let ok = write_executable(&path, &synth(&spec)).is_ok()
            && run_program(&path, &[] as &[&str]).is_ok_and(|out| out.status.success() && out.stdout == HELLO_OUTPUT);
        let _ = std::fs::remove_file(&path);
        ok
    })
}

impl Spec {
    /// Whether the file [`prints_hello`](Spec::prints_hello) and this host can execute it
    /// directly: 64-bit little-endian on an x86-64 Linux host, 32-bit little-endian when the
    /// kernel also runs i386 programs.
    pub fn runs_here(&self) -> bool {
        if !self.prints_hello() || !host_is_x86_64_linux() {
            return false;
        }
        match (self.class, self.endian) {
            (Class::Elf64, Endian::Little) => true,
            (Class::Elf32, Endian::Little) => host_runs_i386(),
            _ => false,
        }
    }
}
