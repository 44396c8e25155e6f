//! Compiles the BPF programs (`bpf/guard.bpf.c`, with clang) and generates their skeleton.

use std::path::PathBuf;

use libbpf_cargo::SkeletonBuilder;

const SOURCE: &str = "bpf/guard.bpf.c";

fn main() {
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR")).join("guard.skel.rs");
    if let Err(e) = SkeletonBuilder::new().source(SOURCE).clang_args(["-Wall", "-Werror"]).build_and_generate(&out) {
        eprintln!("error: cannot build the BPF programs in {SOURCE} (clang with the BPF target is needed): {e:#}");
        std::process::exit(1);
    }
    println!("cargo:rerun-if-changed={SOURCE}");
    println!("cargo:rerun-if-changed=bpf/types.h");
}
