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
/// the module's work for the verdicts it misses (criterion's exec path, and one RSA-3072 check
/// each), over the native exec time.
pub(super) fn projected_cold_ratio(native: &Native, program: &str, misses: Misses) -> Option<f64> {
    let exec = native.exec_us.iter().find(|(p, _)| p == program)?.1;
    let own = native.bench("exec-path", program)?.mean_ns / 1000.0 + native.rsa3072_verify_us;
    let ld_so = match misses {
        Misses::ProgramAndLdSo => native.bench("exec-path", "ld.so")?.mean_ns / 1000.0 + native.rsa3072_verify_us,
        Misses::Program => 0.0,
    };
    Some((exec + own + ld_so) / exec)
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
         memory as the page cache holds them for the module to hash in place (kmod/README.md).\n\n",
    );
    md.push_str(
        "| program | native exec | module work (program + ld.so + 2 RSA checks) | projected elfsig-cold | \
         projected first exec, ld.so verified already |\n|---|---:|---:|---:|---:|\n",
    );
    for program in COREUTILS {
        let Some(exec) = native.exec_us.iter().find(|(p, _)| *p == program).map(|(_, t)| *t) else { continue };
        let Some(cold) = projected_cold_ratio(native, program, Misses::ProgramAndLdSo) else { continue };
        let Some(first) = projected_cold_ratio(native, program, Misses::Program) else { continue };
        let _ = writeln!(md, "| {program} | {exec:.0} µs | {:.0} µs | {cold:.3}x | {first:.3}x |", exec * (cold - 1.0));
    }
    md.push('\n');
}
