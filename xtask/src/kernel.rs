//! The test kernels: Debian's `linux-source-6.12`, `tinyconfig` plus `kmod/kernel.config` and
//! `kmod/kernel-system.config`, then `kmod/kernel-debug.config` for the debug kernel (the one
//! `cargo xtask test` boots), with the test kernel key's certificate built in. Built once into
//! the cache outside the repository, in a directory named after everything that goes into it
//! (source version, configuration settings, certificate, toolchain), so a repeat run reuses it
//! and any change builds afresh.

use std::fs;
use std::path::{Path, PathBuf};

use crate::Result;
use crate::cmd::Cmd;
use crate::deps::{self, Need};
use crate::paths;

/// What building a Rust-enabled 6.12 kernel and modules for it takes.
pub const KERNEL_TOOLS: &[Need] = &[
    Need::Deb("linux-source-6.12"),
    Need::Deb("clang"),
    Need::Deb("lld"),
    Need::Deb("llvm"),
    Need::Deb("libclang-dev"),
    Need::Deb("flex"),
    Need::Deb("bison"),
    Need::Deb("bc"),
    Need::Deb("make"),
    Need::Deb("libelf-dev"),
    Need::Deb("libssl-dev"),
    Need::Deb("openssl"),
    Need::Deb("cpio"),
    Need::Deb("xz-utils"),
    // pahole: BTF for the kernel and modules, which the mapping guard's kfunc needs.
    Need::Deb("dwarves"),
    // modinfo: which kernel a built module is for.
    Need::Deb("kmod"),
    Need::RustSrc,
    Need::CargoTool { krate: "bindgen-cli", binary: "bindgen" },
];

const SOURCE_TARBALL: &str = "/usr/src/linux-source-6.12.tar.xz";

/// C flags of the test kernels and of the modules built against them: no BTF type tags.
/// clang 14 leaves the `rcu` type tag off a pointer in a few compilation units
/// (kernel/locking/semaphore.o and kernel/module/kmod.o in 6.12.117: where `typeof` of an
/// `__rcu` member comes first) where every other one has it, so vmlinux's BTF describes `struct
/// file` (and most of the kernel with it) three times, and the verifier refuses the mapping
/// guard's programs: a hook's `struct file` is not the copy the module's kfuncs take. Asking
/// pahole to skip the tags is not enough: a module then holds two identical pointer types where
/// the tags told them apart, and its BTF no longer deduplicates against vmlinux's. Without the
/// tags in the DWARF, both are one. compiler_types.h leaves them out where `__BINDGEN__` is
/// defined (for bindgen, which cannot read them), and nothing else reads that macro. Distribution
/// kernels are not concerned: the module built for them follows their Kbuild.
pub const NO_BTF_TYPE_TAGS: &str = "-D__BINDGEN__";
const SOURCE_DIR: &str = "linux-source-6.12";

/// A built kernel tree.
#[derive(Clone, Debug)]
pub struct Kernel {
    /// The tree, usable as `KDIR` for out-of-tree modules.
    pub tree: PathBuf,
    /// The bootable image.
    pub bzimage: PathBuf,
}

/// Which test kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavor {
    /// No debug options: the bench's figures, and `build-kmod`.
    Release,
    /// KASAN, kmemleak, lockdep, fault injection: everything `cargo xtask test` boots on a 6.12
    /// kernel (the VM suite, dkms, stress), and `cargo xtask stress`.
    Debug,
}

impl Flavor {
    /// The configuration fragments merged over `tinyconfig`, in order.
    fn fragments(self) -> &'static [&'static str] {
        match self {
            Flavor::Release => &["kmod/kernel.config", "kmod/kernel-system.config"],
            Flavor::Debug => &["kmod/kernel.config", "kmod/kernel-system.config", "kmod/kernel-debug.config"],
        }
    }
}

/// The test kernel of `flavor` with `builtin_cert` (PEM) in its trusted keyring, built if not
/// cached.
pub fn test_kernel(flavor: Flavor, builtin_cert: &Path) -> Result<Kernel> {
    deps::ensure(KERNEL_TOOLS)?;
    let fragments: Vec<String> = flavor
        .fragments()
        .iter()
        .map(|name| {
            let path = paths::root().join(name);
            fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))
        })
        .collect::<Result<_>>()?;
    let fragment = fragments.join("\n");
    let cert = fs::read(builtin_cert).map_err(|e| format!("cannot read {}: {e}", builtin_cert.display()))?;
    let source_version = Cmd::new("dpkg-query").args(["-W", "-f=${Version}", "linux-source-6.12"]).read()?;
    let mut key = Fnv::new();
    // The settings, not the comments that explain them: rewording one costs no rebuild.
    let settings: Vec<&str> =
        fragment.lines().filter(|l| l.starts_with("CONFIG_") || l.starts_with("# CONFIG_")).collect();
    key.add(source_version.as_bytes()).add(settings.join("\n").as_bytes()).add(&cert).add(NO_BTF_TYPE_TAGS.as_bytes());
    for tool in
        [&["rustc", "--version"][..], &["clang", "--version"], &["bindgen", "--version"], &["pahole", "--version"]]
    {
        key.add(Cmd::new(deps::tool_path(tool[0])).args(&tool[1..]).read()?.as_bytes());
    }
    let dir = paths::cache().join("kernel").join(format!("{source_version}-{:016x}", key.finish()));
    let kernel = Kernel { tree: dir.join(SOURCE_DIR), bzimage: dir.join(SOURCE_DIR).join("arch/x86/boot/bzImage") };
    if dir.join("built").exists() && kernel.bzimage.exists() {
        eprintln!("xtask: reusing the test kernel in {}", dir.display());
    } else {
        build(&dir, &fragment, &cert)?;
    }
    mark_used_and_prune(&dir);
    Ok(kernel)
}

/// How many built kernels the cache keeps (each is a couple of GB).
const KEEP: usize = 3;

/// Records that `dir` was used now, and removes all but the [`KEEP`] most recently used kernels.
fn mark_used_and_prune(dir: &Path) {
    let _ = fs::write(dir.join("used"), b"");
    let Some(parent) = dir.parent() else { return };
    let Ok(entries) = fs::read_dir(parent) else { return };
    let mut kernels: Vec<(std::time::SystemTime, PathBuf)> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .map(|p| {
            let used = fs::metadata(p.join("used")).and_then(|m| m.modified()).unwrap_or(std::time::UNIX_EPOCH);
            (used, p)
        })
        .collect();
    kernels.sort_by_key(|(used, _)| std::cmp::Reverse(*used));
    for (_, stale) in kernels.into_iter().skip(KEEP) {
        eprintln!("xtask: removing the stale test kernel {}", stale.display());
        let _ = fs::remove_dir_all(stale);
    }
}

fn build(dir: &Path, fragment: &str, cert: &[u8]) -> Result {
    eprintln!("xtask: building the test kernel in {} (several minutes, once)", dir.display());
    let _ = fs::remove_dir_all(dir);
    deps::ensure_space(dir, 4, "building the test kernel")?;
    fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    Cmd::new("tar").args(["-xf", SOURCE_TARBALL, "-C"]).arg(dir).stoppable().run()?;
    let tree = dir.join(SOURCE_DIR);

    // The certificate lives in the tree, so the tree needs nothing from outside.
    fs::write(tree.join("certs/elfsig-test.pem"), cert).map_err(|e| format!("cannot write certificate: {e}"))?;
    let full_fragment =
        format!("{fragment}\n# The test kernel key.\nCONFIG_SYSTEM_TRUSTED_KEYS=\"certs/elfsig-test.pem\"\n");
    let fragment_file = tree.join("elfsig.config");
    fs::write(&fragment_file, &full_fragment).map_err(|e| format!("cannot write fragment: {e}"))?;

    // The build's output goes to a log, not the terminal: thousands of lines, and the debug
    // kernel builds while other parts of `cargo xtask test` print.
    let log = dir.join("build.log");
    eprintln!("xtask: the kernel build's output goes to {}", log.display());
    logged(make_cmd(&tree, &["tinyconfig"]), &log)?;
    let merge = Cmd::new(tree.join("scripts/kconfig/merge_config.sh")).args(["-m", ".config", "elfsig.config"]);
    logged(merge.dir(&tree), &log)?;
    logged(make_cmd(&tree, &["olddefconfig"]), &log)?;
    check_config(&tree, &full_fragment)?;
    let jobs = std::thread::available_parallelism().map_or(2, |n| n.get());
    let make = make_cmd(&tree, &[&format!("-j{jobs}"), &format!("KCFLAGS={NO_BTF_TYPE_TAGS}")]);
    logged(make.stoppable(), &log)?;
    crate::btf::check_deduplicated(&tree.join("vmlinux"))?;
    fs::write(dir.join("built"), b"").map_err(|e| format!("cannot mark the build done: {e}"))
}

/// Whether `tree` is one of the test kernels this task builds (in the cache).
pub fn is_test_kernel(tree: &Path) -> bool {
    tree.starts_with(paths::cache().join("kernel"))
}

/// `make LLVM=1 ...` in the kernel tree, with cargo's tools (bindgen) on `PATH`.
pub fn make(tree: &Path, args: &[&str]) -> Result {
    make_cmd(tree, args).run()
}

fn make_cmd(tree: &Path, args: &[&str]) -> Cmd {
    Cmd::new("make").env("PATH", deps::path_with_cargo_bin()).arg("LLVM=1").args(args).dir(tree)
}

/// Runs `cmd` with its output appended to `log`; a failure quotes the log's last lines.
fn logged(cmd: Cmd, log: &Path) -> Result {
    cmd.log_to(log)?.run().map_err(|e| {
        let text = fs::read_to_string(log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        let tail = lines[lines.len().saturating_sub(40)..].join("\n");
        format!("{e}\nthe last lines of {}:\n{tail}", log.display())
    })
}

/// Every `CONFIG_X=value` line of the fragment must have survived `olddefconfig`, and every
/// `# CONFIG_X is not set` must have stayed unset: a typo or an unmet dependency fails here
/// instead of building a kernel without it.
fn check_config(tree: &Path, fragment: &str) -> Result {
    let config = fs::read_to_string(tree.join(".config")).map_err(|e| format!("cannot read .config: {e}"))?;
    let missing: Vec<&str> = fragment
        .lines()
        .map(str::trim)
        .filter(|l| {
            if l.starts_with("CONFIG_") {
                !config.lines().any(|c| c == *l)
            } else if let Some(name) = l.strip_prefix("# ").and_then(|r| r.strip_suffix(" is not set")) {
                config.lines().any(|c| c.starts_with(&format!("{name}=")))
            } else {
                false
            }
        })
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!("kernel configuration lost these options (unmet dependencies?):\n  {}", missing.join("\n  ")))
    }
}

/// The release (`uname -r`) of the kernel built in `tree`.
pub fn release(tree: &Path) -> Result<String> {
    let file = tree.join("include/config/kernel.release");
    let release = fs::read_to_string(&file).map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    Ok(release.trim().to_owned())
}

/// Checks that `tree` is a prepared kernel tree with Rust support, for `--kdir`.
pub fn check_prepared(tree: &Path) -> Result {
    let config = fs::read_to_string(tree.join(".config"))
        .map_err(|e| format!("{} is not a configured kernel tree: {e}", tree.display()))?;
    if !config.lines().any(|l| l == "CONFIG_RUST=y") {
        return Err(format!("{} is built without CONFIG_RUST=y; elfsig's module is written in Rust", tree.display()));
    }
    if !tree.join("Module.symvers").exists() {
        return Err(format!("{} has no Module.symvers; build it (make) before building modules", tree.display()));
    }
    Ok(())
}

/// FNV-1a, 64-bit: a stable hash for cache keys without a dependency.
pub struct Fnv(u64);

impl Fnv {
    /// An empty hash.
    pub fn new() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }

    /// Adds `bytes`, delimited (so that "ab"+"c" and "a"+"bc" differ).
    pub fn add(&mut self, bytes: &[u8]) -> &mut Self {
        for b in bytes.iter().chain(&[0xff]) {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
        self
    }

    /// The hash so far.
    pub fn finish(&self) -> u64 {
        self.0
    }
}
