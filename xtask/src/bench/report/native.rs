//! report.md's native section: the criterion bench and OpenSSL on the host, and what they
//! project a first exec in the VM to cost on this machine's CPU.

use std::fmt::Write as _;

use crate::bench::native::{COREUTILS, Native};

/// Which verdicts a projected first exec must compute.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Misses {
    /// The program's and ld.so's: `elfsig-cold`, the whole cache emptied.
    ProgramAndLdSo,
    /// The program's only: its first exec on a running system, where ld.so was verified for an
    /// earlier program.
    Program,
}

/// The projected first-exec ratio on this machine, natively: the program's native exec time plus
/// the module's work for the verdicts it misses, over the native exec time. The module's work is
/// criterion's exec path (`p` for the program, `l` for ld.so) and an RSA-3072 check (`r`) per
/// file, one after the other with one CPU. With more, the module hashes the program in the task
/// while workers check the program's signature and ld.so (kmod/verdict/ahead.rs, verify.rs):
/// criterion's `first-exec` times the program's and ld.so's hashing side by side, hand-off
/// included (`pair`), and on this machine's two CPUs the other CPU has ld.so's hash and both
/// RSA checks to do, so the exec waits for the longer of `pair` and `l + 2r` (plus the
/// hand-off); with ld.so verified already, for the longer of `p` and `r` (plus the hand-off).
pub(super) fn projected_cold_ratio(native: &Native, program: &str, misses: Misses) -> Option<f64> {
    let exec = native.exec_us.iter().find(|(p, _)| p == program)?.1;
    let us = |group: &str, name: &str| native.bench(group, name).map(|c| c.mean_ns / 1000.0);
    let (p, l, r) = (us("exec-path", program)?, us("exec-path", "ld.so")?, native.rsa3072_verify_us);
    let work = match us("first-exec", program) {
        None => match misses {
            Misses::ProgramAndLdSo => p + l + 2.0 * r,
            Misses::Program => p + r,
        },
        Some(pair) => {
            let hand_off = (pair - p.max(l)).max(0.0);
            match misses {
                Misses::ProgramAndLdSo => pair.max(l + 2.0 * r + hand_off),
                Misses::Program => p.max(r) + hand_off,
            }
        }
    };
    Some((exec + work) / exec)
}

/// The section.
pub(super) fn section(md: &mut String, native: &Native) {
    md.push_str("## Native measurements on the host\n\n");
    let _ = writeln!(
        md,
        "OpenSSL: SHA-256 {:.0} MB/s (16 KiB blocks); RSA-3072 verification {:.1} µs.\n",
        native.sha256_mbps, native.rsa3072_verify_us
    );
    md.push_str("| criterion benchmark | mean time | throughput | vs OpenSSL SHA-256 |\n|---|---:|---:|---:|\n");
    for c in &native.criterion {
        let (throughput, ratio) = match c.bytes {
            Some(bytes) => {
                let mbs = bytes / c.mean_ns * 1000.0;
                (format!("{mbs:.0} MB/s"), format!("{:.0}%", mbs / native.sha256_mbps * 100.0))
            }
            None => (String::new(), String::new()),
        };
        let _ = writeln!(md, "| {}/{} | {:.3} ms | {throughput} | {ratio} |", c.group, c.name, c.mean_ns / 1e6);
    }
    md.push_str(
        "\n`verify/*` is `elfsig verify`'s work (parse, hash, RSA in the rsa crate); `sign/*` signs a directory \
         on one core and on all; `exec-path/*` is what the module does on a cache miss minus the PKCS#7 check \
         (locate, read the payload, hash), on the programs of the coreutils table and ld.so, their bytes in \
         memory as the page cache holds them for the module to hash in place (kmod/README.md); \
         `first-exec/*` is the program's exec path with ld.so's on another thread meanwhile, as the \
         module checks ld.so, and the program's signature, on another CPU when it has one \
         (kmod/verdict/ahead.rs, verify.rs). With two CPUs or more, the projections below take the \
         longer of what the task does and what the other CPU does (see \
         xtask/src/bench/report/native.rs); with one, the sum.\n\n",
    );
    let side_by_side = native.criterion.iter().any(|c| c.group == "first-exec");
    md.push_str(if side_by_side {
        "| program | native exec | module work (the program hashed; ld.so and both RSA checks on the other CPU) | \
         projected elfsig-cold | projected first exec, ld.so verified already |\n|---|---:|---:|---:|---:|\n"
    } else {
        "| program | native exec | module work (program + ld.so + 2 RSA checks: one CPU) | projected elfsig-cold | \
         projected first exec, ld.so verified already |\n|---|---:|---:|---:|---:|\n"
    });
    for program in COREUTILS {
        let Some(exec) = native.exec_us.iter().find(|(p, _)| *p == program).map(|(_, t)| *t) else { continue };
        let Some(cold) = projected_cold_ratio(native, program, Misses::ProgramAndLdSo) else { continue };
        let Some(first) = projected_cold_ratio(native, program, Misses::Program) else { continue };
        let _ = writeln!(md, "| {program} | {exec:.0} µs | {:.0} µs | {cold:.3}x | {first:.3}x |", exec * (cold - 1.0));
    }
    md.push('\n');
}
