//! Compiles the BPF programs (`bpf/guard.bpf.c`) with clang into a BPF object, which
//! `src/load.rs` embeds and loads.

use std::path::PathBuf;
use std::process::Command;

const SOURCE: &str = "bpf/guard.bpf.c";

fn main() {
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR")).join("guard.bpf.o");
    let clang = std::env::var_os("CLANG").unwrap_or_else(|| "clang".into());
    // No debug information: the loader needs none (no CO-RE), and the kernel checks the
    // programs against the hooks' and the module's BTF, not theirs.
    let status =
        Command::new(&clang).args(["-target", "bpf", "-O2", "-Wall", "-Werror", "-c", SOURCE, "-o"]).arg(&out).status();
    match status {
        Ok(status) if status.success() => {}
        Ok(status) => fail(&format!("{} failed ({status})", clang.to_string_lossy())),
        Err(e) => fail(&format!("cannot run {}: {e}", clang.to_string_lossy())),
    }
    println!("cargo:rerun-if-changed={SOURCE}");
    println!("cargo:rerun-if-changed=bpf/types.h");
    println!("cargo:rerun-if-env-changed=CLANG");
}

fn fail(why: &str) -> ! {
    eprintln!("error: cannot build the BPF programs in {SOURCE} (clang with the BPF target is needed): {why}");
    std::process::exit(1);
}
