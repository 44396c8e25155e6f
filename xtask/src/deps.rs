//! What the tasks need from the machine, and getting it: Debian packages through apt-get when
//! running as root, rustup toolchains and components, tools from crates.io. When something cannot
//! be installed, the error says exactly what to run.

use std::path::PathBuf;

use crate::Result;
use crate::cmd::Cmd;

/// Something a task needs.
#[derive(Clone, Copy, Debug)]
pub enum Need {
    /// A Debian package.
    Deb(&'static str),
    /// A rustup toolchain.
    Toolchain(&'static str),
    /// The Rust standard library's source for the default toolchain (Rust-for-Linux builds
    /// its own `core`).
    RustSrc,
    /// The nightly toolchain's LLVM tools (`llvm-cov`, `llvm-profdata`), for fuzz coverage.
    NightlyLlvmTools,
    /// `qemu-system-x86_64` whose TCG emulates the x86 SHA extensions ([`QEMU_SHA`] on): the
    /// guests' kernels then hash with `sha256_ni`, as the servers they model do, and the
    /// instruction clock counts hashing as those run it. Debian 12's QEMU is 7.2; its
    /// backports carry 10.0, which a Debian 12 root gets from `bookworm-backports`.
    Qemu,
    /// A binary installed with `cargo install --locked`.
    CargoTool {
        /// Crate name.
        krate: &'static str,
        /// Binary it installs.
        binary: &'static str,
    },
}

/// Debian packages the workspace tests use: real programs to sign, the OpenSSL oracle, ELF
/// tools, the toolchains that build the test binaries, SoftHSM2, the PKCS#11 token the tests
/// sign through, and skopeo and umoci, the container tools whose readers judge `oci sign`.
pub const TEST_PACKAGES: &[Need] = &[
    Need::Deb("busybox-static"),
    Need::Deb("bash"),
    Need::Deb("coreutils"),
    Need::Deb("python3"),
    Need::Deb("strace"),
    Need::Deb("openssl"),
    Need::Deb("binutils"),
    Need::Deb("elfutils"),
    Need::Deb("gcc"),
    Need::Deb("libc6-dev"),
    Need::Deb("gcc-multilib"),
    Need::Deb("binutils-s390x-linux-gnu"),
    Need::Deb("binutils-powerpc-linux-gnu"),
    Need::Deb("qemu-user"),
    Need::Deb("attr"),
    Need::Deb("softhsm2"),
    Need::Deb("skopeo"),
    Need::Deb("umoci"),
];

/// What building `elfsig-guard` needs: clang compiles its BPF programs (its loader is its own
/// Rust, no libbpf).
pub const GUARD_PACKAGES: &[Need] = &[Need::Deb("clang")];

/// What fuzzing needs.
pub const FUZZ_TOOLS: &[Need] =
    &[Need::Toolchain("nightly"), Need::CargoTool { krate: "cargo-fuzz", binary: "cargo-fuzz" }];

/// Makes sure everything in `needs` is there, installing what is missing when possible.
pub fn ensure(needs: &[Need]) -> Result {
    let missing: Vec<Need> = needs.iter().copied().filter(|n| !present(*n)).collect();
    if missing.is_empty() {
        return Ok(());
    }
    let debs: Vec<&str> = missing.iter().filter_map(|n| if let Need::Deb(p) = n { Some(*p) } else { None }).collect();
    if !debs.is_empty() {
        if !is_root() {
            return Err(format!(
                "missing Debian packages; install them with:\n    sudo apt-get install -y {}",
                debs.join(" ")
            ));
        }
        Cmd::new("apt-get").arg("update").run()?;
        Cmd::new("apt-get")
            .env("DEBIAN_FRONTEND", "noninteractive")
            .args(["install", "-y", "--no-install-recommends"])
            .args(&debs)
            .run()?;
    }
    for need in missing {
        match need {
            Need::Deb(_) => {}
            Need::Qemu => install_qemu()?,
            Need::Toolchain(toolchain) => {
                Cmd::new("rustup").args(["toolchain", "install", "--profile", "minimal", toolchain]).run()?
            }
            Need::RustSrc => Cmd::new("rustup").args(["component", "add", "rust-src"]).run()?,
            Need::NightlyLlvmTools => {
                Cmd::new("rustup").args(["component", "add", "llvm-tools-preview", "--toolchain", "nightly"]).run()?
            }
            Need::CargoTool { krate, .. } => Cmd::new("cargo").args(["install", "--locked", krate]).run()?,
        }
    }
    let still: Vec<String> = needs.iter().filter(|n| !present(**n)).map(|n| format!("{n:?}")).collect();
    if still.is_empty() { Ok(()) } else { Err(format!("still missing after installing: {}", still.join(", "))) }
}

fn present(need: Need) -> bool {
    match need {
        Need::Deb(package) => Cmd::new("dpkg-query")
            .args(["-W", "-f=${db:Status-Status}", package])
            .read()
            .is_ok_and(|status| status.trim() == "installed"),
        Need::Toolchain(toolchain) => Cmd::new("rustup").args(["run", toolchain, "rustc", "--version"]).succeeds(),
        Need::RustSrc => Cmd::new("rustc")
            .args(["--print", "sysroot"])
            .read()
            .is_ok_and(|sysroot| PathBuf::from(sysroot.trim()).join("lib/rustlib/src/rust/library/core").is_dir()),
        Need::NightlyLlvmTools => nightly_llvm_tool("llvm-cov").is_some_and(|p| p.is_file()),
        Need::Qemu => qemu_version().is_some_and(|version| version >= QEMU_SHA),
        Need::CargoTool { binary, .. } => cargo_bin(binary).is_some(),
    }
}

/// Where the nightly toolchain keeps LLVM tool `name` (present once
/// [`Need::NightlyLlvmTools`] is).
pub fn nightly_llvm_tool(name: &str) -> Option<PathBuf> {
    let sysroot = Cmd::new("rustc").args(["+nightly", "--print", "sysroot"]).read().ok()?;
    let host = Cmd::new("rustc").args(["+nightly", "--print", "host-tuple"]).read().ok()?;
    Some(PathBuf::from(sysroot.trim()).join("lib/rustlib").join(host.trim()).join("bin").join(name))
}

/// How to run a tool: its path in cargo's bin directory when it is there, else its name.
pub fn tool_path(binary: &str) -> PathBuf {
    cargo_bin(binary).unwrap_or_else(|| PathBuf::from(binary))
}

/// `PATH` with cargo's bin directory first.
pub fn path_with_cargo_bin() -> std::ffi::OsString {
    let mut dirs: Vec<PathBuf> = cargo_home().map(|h| h.join("bin")).into_iter().collect();
    if let Some(path) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&path));
    }
    std::env::join_paths(dirs).unwrap_or_default()
}

fn cargo_home() -> Option<PathBuf> {
    std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
}

/// Path of a binary in cargo's bin directory or on `PATH`.
pub fn cargo_bin(binary: &str) -> Option<PathBuf> {
    let candidate = cargo_home()?.join("bin").join(binary);
    if candidate.is_file() {
        return Some(candidate);
    }
    std::env::split_paths(&std::env::var_os("PATH")?).map(|d| d.join(binary)).find(|p| p.is_file())
}

/// The first QEMU whose TCG emulates the SHA extensions (commit e582b629f0b5, "target/i386:
/// implement SHA instructions").
pub const QEMU_SHA: (u32, u32) = (8, 2);

/// `qemu-system-x86_64`'s version on `PATH`, `(major, minor)`.
pub fn qemu_version() -> Option<(u32, u32)> {
    let said = Cmd::new("qemu-system-x86_64").arg("--version").read().ok()?;
    parse_qemu_version(&said)
}

/// The version in `qemu-system-x86_64 --version`'s first line, "QEMU emulator version 10.0.2 (...)".
fn parse_qemu_version(said: &str) -> Option<(u32, u32)> {
    let version = said.lines().next()?.strip_prefix("QEMU emulator version ")?.split_whitespace().next()?;
    let mut parts = version.split('.').map(str::parse::<u32>);
    Some((parts.next()?.ok()?, parts.next()?.ok()?))
}

/// Installs a QEMU of [`QEMU_SHA`] or later: from the distribution, and on Debian 12 from its
/// backports (a sources file of ours adds them when none is configured).
fn install_qemu() -> Result {
    if !is_root() {
        return Err(format!(
            "the VMs need QEMU {}.{} or later; on Debian 12, add bookworm-backports to APT's sources and run:\n    \
             sudo apt-get install -t bookworm-backports qemu-system-x86 qemu-utils",
            QEMU_SHA.0, QEMU_SHA.1
        ));
    }
    let codename = std::fs::read_to_string("/etc/os-release")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VERSION_CODENAME=").map(|c| c.trim_matches('"').to_owned()));
    let mut release: &[&str] = &[];
    if codename.as_deref() == Some("bookworm") {
        if !backports_configured() {
            std::fs::write(BACKPORTS_SOURCES, BACKPORTS)
                .map_err(|e| format!("cannot write {BACKPORTS_SOURCES}: {e}"))?;
        }
        release = &["-t", "bookworm-backports"];
    }
    Cmd::new("apt-get").arg("update").run()?;
    Cmd::new("apt-get")
        .env("DEBIAN_FRONTEND", "noninteractive")
        .args(["install", "-y", "--no-install-recommends"])
        .args(release)
        .args(["qemu-system-x86", "qemu-utils"])
        .run()?;
    match qemu_version() {
        Some(version) if version >= QEMU_SHA => Ok(()),
        found => Err(format!(
            "the VMs need QEMU {}.{} or later (its TCG emulates the SHA extensions the benchmarks count), and \
             qemu-system-x86_64 on PATH is {}: install a newer one (on Debian 12, from bookworm-backports)",
            QEMU_SHA.0,
            QEMU_SHA.1,
            found.map_or("missing".to_owned(), |(major, minor)| format!("{major}.{minor}"))
        )),
    }
}

/// Where [`install_qemu`] adds Debian 12's backports, and what it writes there.
const BACKPORTS_SOURCES: &str = "/etc/apt/sources.list.d/elfsig-bookworm-backports.sources";
const BACKPORTS: &str = "Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm-backports\nComponents: main\n\
                         Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n";

/// Whether an APT source already names bookworm-backports.
fn backports_configured() -> bool {
    let mut files = vec![PathBuf::from("/etc/apt/sources.list")];
    if let Ok(dir) = std::fs::read_dir("/etc/apt/sources.list.d") {
        files.extend(dir.flatten().map(|e| e.path()));
    }
    files.iter().any(|f| {
        std::fs::read_to_string(f).is_ok_and(|text| {
            text.lines().any(|l| !l.trim_start().starts_with('#') && l.contains("bookworm-backports"))
        })
    })
}

/// Whether this process runs as root.
pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|status| {
        status.lines().find(|l| l.starts_with("Uid:")).and_then(|l| l.split_whitespace().nth(1)) == Some("0")
    })
}

/// Fails, saying how much is free and how much is needed, unless the file system holding `dir`
/// (or its nearest existing ancestor) has `gib` GiB free for `what`: a kernel build that runs out
/// of space fails an hour in, with a linker's or `tar`'s error that names no cause.
pub fn ensure_space(dir: &std::path::Path, gib: u64, what: &str) -> Result {
    let existing = dir.ancestors().find(|d| d.exists()).unwrap_or(std::path::Path::new("/"));
    let free: u64 = Cmd::new("df")
        .args(["--output=avail", "-B1"])
        .arg(existing)
        .read()?
        .lines()
        .nth(1)
        .and_then(|line| line.trim().parse().ok())
        .ok_or_else(|| format!("cannot read the free space of {} from df", existing.display()))?;
    const GIB: u64 = 1 << 30;
    if free >= gib.saturating_mul(GIB) {
        return Ok(());
    }
    Err(format!(
        "{what} needs about {gib} GiB free in {}, and only {:.1} GiB are: free some space and run \
         again",
        existing.display(),
        free as f64 / GIB as f64
    ))
}

#[cfg(test)]
mod tests {
    use super::ensure_space;

    #[test]
    fn qemu_versions_are_read_from_the_first_line() {
        let said = "QEMU emulator version 10.0.2 (Debian 1:10.0.2+ds-2+deb13u1~bpo12+1)\nCopyright (c) 2003-2025";
        assert_eq!(super::parse_qemu_version(said), Some((10, 0)));
        assert_eq!(super::parse_qemu_version("QEMU emulator version 7.2.22 (Debian 1:7.2+dfsg-7)"), Some((7, 2)));
        assert!(super::parse_qemu_version("qemu 10").is_none());
        assert!((7, 2) < super::QEMU_SHA && (10, 0) >= super::QEMU_SHA && (8, 2) >= super::QEMU_SHA);
    }

    #[test]
    fn space_check_passes_when_there_is_room_and_names_the_shortfall_when_not() {
        let missing = std::env::temp_dir().join("elfsig-no-such-dir/below");
        ensure_space(&missing, 0, "nothing").unwrap();
        let err = ensure_space(&missing, u64::MAX, "a kernel as big as the sky").unwrap_err();
        assert!(err.starts_with("a kernel as big as the sky needs about 18446744073709551615 GiB free in "), "{err}");
        assert!(err.contains("GiB are: free some space"), "{err}");
    }
}
