//! What the test and bench VMs hold, and how the host tells them what to do: the paths
//! `cargo xtask` puts files at and the guest programs use, and the kernel command-line words.
//! One place for what the host and the guests must agree on.

/// The kernel module.
pub const MODULE: &str = "/elfsig.ko";
/// How many certificates the test module embeds (xtask's `TestKeys::embedded`): the module
/// key's, the ECDSA P-256 and P-384 keys', and the token's RSA and ECDSA keys'. The module built
/// for a distribution's kernel embeds the test kernel key's too.
pub const EMBEDDED_CERTS: usize = 5;
/// The same module with its BTF removed: it cannot offer the mapping guard's kfuncs.
pub const MODULE_NO_BTF: &str = "/elfsig-nobtf.ko";
/// The same module with the BTF IDs of two of its kfuncs' argument types swapped, as if built for
/// another build of the kernel: no program may call its kfuncs.
pub const MODULE_FOREIGN_BTF_IDS: &str = "/elfsig-foreign-ids.ko";
/// The dynamic loader x86-64 programs name in `PT_INTERP`, signed.
pub const LD_SO: &str = "/lib64/ld-linux-x86-64.so.2";
/// busybox, signed, and `/bin/sh` links to it.
pub const BUSYBOX: &str = "/bin/busybox";
/// The CLI, signed, for signing inside the VM.
pub const ELFSIG: &str = "/bin/elfsig";
/// The kernel key's private key and certificate, for signing inside the VM.
pub const KEY: &str = "/t/keys/kernel.key";
/// See [`KEY`].
pub const CERT: &str = "/t/keys/kernel.crt";
/// A certificate the kernel key issued, which the guest adds to the secondary keyring.
pub const ADDED_CERT: &str = "/t/added.der";
/// `name value` lines; `revoke_digest <hex>` is the signed digest of [`REVOKEME`],
/// `revoke_lib_digest <hex>` the one of the library in [`LIB_REVOKED`].
pub const MANIFEST: &str = "/t/manifest";
/// A PKCS#7 signature over `bin:<revoke_digest>` by the kernel key, to add to `.blacklist`.
pub const REVOCATION: &str = "/t/revoke.p7";
/// The policy key (trusted only to sign policies: the module embeds its certificate as such)
/// and its certificate, for making policies inside the VM.
pub const POLICY_KEY: &str = "/t/keys/policy.key";
/// See [`POLICY_KEY`].
pub const POLICY_CERT: &str = "/t/keys/policy.crt";
/// The certificates of the module key and of the key nobody trusts, for policies to revoke and
/// to trust.
pub const MODULE_CERT: &str = "/t/keys/module.crt";
/// See [`MODULE_CERT`].
pub const OTHER_CERT: &str = "/t/keys/other.crt";
/// A generated program signed with the kernel key that policies revoke (its digest its own).
pub const POLICY_REVOKEME: &str = "/t/signed/policy-revokeme";
/// The guard's library, changed so that its digest is its own, signed with the kernel key:
/// policies revoke it.
pub const LIB_POLICY_REVOKED: &str = "/t/lib/policy-revoked";

/// Programs signed with the kernel's built-in test key, by name: the coreutils the tests run,
/// the programs built from C (`cstatic`, `cstaticpie`, `cdynamic`), Go (`go`) and Rust
/// (`rust`), and the ones below.
pub const SIGNED: &str = "/t/signed";
/// What the programs built from C print, by name.
pub const EXPECTED: &str = "/t/expected";
/// A generated static program that prints [`HELLO_OUTPUT`], signed with the kernel key.
pub const HELLO: &str = "/t/signed/hello";
/// Another generated program, signed with the kernel key, whose digest the tests revoke.
pub const REVOKEME: &str = "/t/signed/revokeme";
/// [`HELLO`] signed with the key embedded in the module.
pub const HELLO_MODULE_KEY: &str = "/t/module/hello";
/// Directories of programs signed with the ECDSA test keys the module embeds, P-256 and P-384:
/// [`HELLO`] as `hello`, and `cstatic` and `cdynamic` from [`SIGNED`].
pub const ECDSA_SIGNED: [&str; 2] = ["/t/ecdsa-p256", "/t/ecdsa-p384"];
/// The same, signed through the test SoftHSM2 token's keys, RSA-3072 and ECDSA P-256.
pub const TOKEN_SIGNED: [&str; 2] = ["/t/token-rsa", "/t/token-ecdsa-p256"];
/// [`HELLO`] signed with a key nothing trusts.
pub const HELLO_OTHER_KEY: &str = "/t/other/hello";
/// [`HELLO`] signed with the key of [`ADDED_CERT`].
pub const HELLO_ADDED_KEY: &str = "/t/added/hello";
/// [`HELLO`], unsigned.
pub const HELLO_UNSIGNED: &str = "/t/unsigned/hello";
/// busybox, unsigned.
pub const BUSYBOX_UNSIGNED: &str = "/t/unsigned/busybox";
/// ls, unsigned.
pub const LS_UNSIGNED: &str = "/t/unsigned/ls";
/// `cdynamic`, signed, naming [`STRESS_INTERPRETER`] as its ELF interpreter instead of
/// [`LD_SO`]: the stress suite renames files over that path while it runs.
pub const CDYNAMIC_STRESS_INTERPRETER: &str = "/t/signed/cdynamic-stress-interp";
/// The ELF interpreter [`CDYNAMIC_STRESS_INTERPRETER`] names: the same length as [`LD_SO`] at
/// most, so that the signer can write it over the original.
pub const STRESS_INTERPRETER: &str = "/tmp/stress/interp";
/// bash, signed.
pub const BASH: &str = "/bin/bash";
/// Python 3, signed, with its `_ctypes` C extension (signed) and the standard library's sources
/// that `python3 -S -c 'import ctypes'` needs.
pub const PYTHON: &str = "/usr/bin/python3";
/// Debian's strace, signed plainly: without the `debugger` entitlement it cannot trace.
pub const STRACE: &str = "/usr/bin/strace";
/// The programs signed with the `jit` entitlement: Debian's Python puts the callbacks of
/// `ctypes` (which its import makes one of) in writable and executable anonymous memory.
pub const ENTITLED_JIT: [&str; 1] = [PYTHON];
/// The mapping guard's loader (`guard/`), signed.
pub const GUARD: &str = "/bin/elfsig-guard";
/// The mapping guard's test library ([`elfsig_fixtures::GUARD_LIBRARY`]) signed with the kernel
/// key, in this directory.
pub const LIB_SIGNED: &str = "/t/lib/signed";
/// The same library, unsigned.
pub const LIB_UNSIGNED: &str = "/t/lib/unsigned";
/// The same library signed with a key nothing trusts.
pub const LIB_OTHER_KEY: &str = "/t/lib/other";
/// The library with bytes appended, signed with the kernel key: the tests revoke its digest.
pub const LIB_REVOKED: &str = "/t/lib/revoked";
/// A PKCS#7 signature over `bin:<revoke_lib_digest>` by the kernel key (see [`MANIFEST`]).
pub const LIB_REVOCATION: &str = "/t/revoke-lib.p7";
/// A signed program that needs the test library, with [`GUARD_RUNPATH`] as its `DT_RUNPATH`.
pub const GUARD_USER: &str = "/t/signed/guard-user";
/// Where [`GUARD_USER`] looks for its library when `LD_LIBRARY_PATH` does not say.
pub const GUARD_RUNPATH: &str = "/tmp/guard-runpath";
/// A signed program that maps files the ways software does: `guard-probe dlopen|mmap|mprotect
/// PATH`, `guard-probe anon`.
pub const GUARD_PROBE: &str = "/t/signed/guard-probe";

/// [`HELLO`] built for i386 (a 32-bit program), signed with the kernel key.
pub const HELLO32: &str = "/t/signed/hello32";
/// [`HELLO32`], unsigned.
pub const HELLO32_UNSIGNED: &str = "/t/unsigned/hello32";
/// A relocatable object (`ET_REL`), signed with the kernel key: the module lets an exec of it
/// through, and binfmt_elf then refuses it (`ENOEXEC`).
pub const OBJECT: &str = "/t/signed/object";
/// A small btrfs image (mixed block groups), gzip-compressed, for the subvolume case.
pub const BTRFS_IMAGE: &str = "/t/btrfs.img.gz";
/// Kernel modules the guest loads before its cases, in the order `order` lists them: on a
/// distribution's kernel, the filesystems the cases need (overlayfs, vfat, loop, btrfs, FUSE),
/// which it builds as modules.
pub const MODULES: &str = "/t/modules";

/// `#!` scripts.
pub const SCRIPTS: &str = "/t/scripts";
/// A script whose interpreter is `/bin/sh`, signed busybox.
pub const SCRIPT_SIGNED_INTERPRETER: &str = "/t/scripts/signed-interpreter.sh";
/// A script whose interpreter is [`BUSYBOX_UNSIGNED`].
pub const SCRIPT_UNSIGNED_INTERPRETER: &str = "/t/scripts/unsigned-interpreter.sh";

/// What [`HELLO`] prints.
pub const HELLO_OUTPUT: &[u8] = elfsig_fixtures::HELLO_OUTPUT;

/// The kernel command-line word that names the suite: `test`, `nobpf`, `stress`, `probe`.
pub const SUITE: &str = "elfsig.suite";
/// The kernel command-line word that says which kernel runs: `test` (ours, with the test kernel
/// key in its builtin keyring; the default) or `distro` (a distribution's, whose keyrings hold
/// the distribution's keys: the module embeds the test kernel key, and what needs the test
/// kernel's keyrings cannot be tested).
pub const KERNEL: &str = "elfsig.kernel";
/// The kernel command-line word that says how many seconds the stress suite loads the system.
pub const STRESS_SECONDS: &str = "elfsig.seconds";

/// The kernel command line word that picks the checks in the signed Debian system
/// (`cargo xtask distro`): `enforce` or `discover`. Not `elfsig.`-prefixed, which modprobe
/// would hand to the module as a parameter.
pub const DISTRO_CHECK: &str = "elfsig_check";
/// The kernel command line word that says which initramfs should have loaded the module in the
/// Debian system: `initramfs-tools` or `dracut` (what its hook writes in
/// `/run/elfsig-initramfs`).
pub const DISTRO_INITRAMFS: &str = "elfsig_initramfs";
/// The kernel command line word (`on`) that says the Debian system was booted through UEFI
/// firmware with Secure Boot enforced, shim and grub, and must show it.
pub const DISTRO_SECURE_BOOT: &str = "elfsig_secure_boot";
/// The kernel command line word (`on`) that has the Debian system kept up to date from its
/// signed archive (`apt-get upgrade` and `install` under enforce, then a reboot into the
/// initramfs the upgrade rebuilt): the Secure Boot boot, whose boot loader starts the
/// system's own kernel and initramfs.
pub const DISTRO_UPGRADE: &str = "elfsig_upgrade";
/// The Debian system's archive of packages re-signed by `elfsig deb sign` (a flat repository).
pub const ARCHIVE: &str = "/srv/elfsig-archive";
/// A second repository, with [`ARCHIVE_UNMODIFIED`] as Debian ships it.
pub const OTHER_ARCHIVE: &str = "/srv/other-archive";
/// The package the archive holds rebuilt with a higher version, so that an upgrade always
/// happens; its trigger rebuilds the initramfs (its `modprobe` is in it).
pub const ARCHIVE_REBUILT: &str = "kmod";
/// The suffix of the rebuilt package's version.
pub const ARCHIVE_REBUILT_SUFFIX: &str = "+elfsig1";
/// A package the system installs from the archive, whose maintainer script runs what it just
/// installed (`ssh-keygen`).
pub const ARCHIVE_INSTALLED: &str = "openssh-server";
/// A package with a program, not installed, as Debian ships it: the gate refuses it.
pub const ARCHIVE_UNMODIFIED: &str = "hello";
/// The container tools the signed system installs from its archive, without what they only
/// recommend: podman, both OCI runtimes, what rootless containers need (subordinate ids,
/// user-mode networking, an init for `--init`), and the system bus, through which crun asks
/// systemd for each container's cgroup.
pub const CONTAINER_PACKAGES: &str = "podman crun runc uidmap passt catatonit dbus";
/// Where the signed system keeps the container images its checks run: OCI archives of an
/// image made from Debian's packages, as `elfsig oci sign` signed it and as it was.
pub const CONTAINER_IMAGES: &str = "/var/lib/elfsig-check/images";
/// The signed image's archive, in [`CONTAINER_IMAGES`].
pub const CONTAINER_SIGNED: &str = "debian-signed.tar";
/// The unsigned image's archive, in [`CONTAINER_IMAGES`].
pub const CONTAINER_UNSIGNED: &str = "debian-unsigned.tar";
/// An image made elsewhere, as `cargo xtask distro` was given it (`ELFSIG_DISTRO_IMAGE`: an
/// OCI archive), in [`CONTAINER_IMAGES`] when it was.
pub const CONTAINER_EXTRA_UNSIGNED: &str = "extra-unsigned.tar";
/// That image as `elfsig oci sign` signed it, in [`CONTAINER_IMAGES`] when it was given.
pub const CONTAINER_EXTRA_SIGNED: &str = "extra-signed.tar";
/// A `podman build` context, in [`CONTAINER_IMAGES`]: a tar archive (which the system's
/// signing leaves alone) of [`CONTAINER_BUILT_UNSIGNED`] and [`CONTAINER_BUILT_SIGNED`].
pub const CONTAINER_BUILD_CONTEXT: &str = "build-context.tar";
/// A program as a build pipeline makes one (a copy of the image's unsigned `true`, as a
/// compiler leaves its output: unsigned), which a build copies into an image built from the
/// signed one.
pub const CONTAINER_BUILT_UNSIGNED: &str = "built-unsigned";
/// The same program, signed with the system's key as the pipeline signs what it builds.
pub const CONTAINER_BUILT_SIGNED: &str = "built-signed";
/// The signed policy the Debian system's initramfs loads after the module (kmod/boot/).
pub const DISTRO_POLICY: &str = "/etc/elfsig/policy";
/// The policy's serial.
pub const DISTRO_POLICY_SERIAL: u64 = 1;
/// A signed program of the Debian system (`true` with bytes of its own after it) that its
/// policy revokes.
pub const DISTRO_REVOKED: &str = "/usr/local/bin/elfsig-revoked";
/// Another, which only the policy the archive ships revokes.
pub const DISTRO_REVOKED_LATER: &str = "/usr/local/bin/elfsig-revoked-later";
/// The package of the archive that holds the newer policy.
pub const DISTRO_POLICY_PACKAGE: &str = "elfsig-policy";
/// Its policy's serial.
pub const DISTRO_POLICY_PACKAGED_SERIAL: u64 = 2;
/// elfsig's own package: the CLI, the guard, the early-boot hooks, the unit, the kernel hook.
pub const ELFSIG_PACKAGE: &str = "elfsig";
/// The package of the module built for one kernel: this, then the kernel's release.
pub const MODULES_PACKAGE_PREFIX: &str = "elfsig-modules-";
/// The kernel the Debian system is made with (its release): Debian's 7.2 from trixie-backports.
pub const DISTRO_KERNEL: &str = "7.2.12+deb13-amd64";
/// The kernel the Debian system updates to under enforce (its release, `uname -r`): Debian's
/// 7.3 from trixie-backports, which its archive carries with the module built for it.
pub const DISTRO_KERNEL_UPDATE: &str = "7.3.4+deb13-amd64";
/// Where the upgrade boot puts the kernel command line of the boot after it, which the boot
/// menu `update-grub` writes passes to the kernel (grub's `GRUB_CMDLINE_LINUX`).
pub const DISTRO_NEXT_CMDLINE: &str = "/etc/default/grub.d/90-elfsig-check.cfg";
/// elfsig's version, which the Debian system is made with (the workspace's).
pub const ELFSIG_VERSION: &str = env!("CARGO_PKG_VERSION");
/// The suffix of the newer elfsig's version, which the archive carries beside the one the
/// Debian system is made with: the upgrade installs it while the older module is loaded.
pub const ELFSIG_UPGRADE_SUFFIX: &str = "+1";

/// The newer elfsig's version ([`ELFSIG_UPGRADE_SUFFIX`]).
pub fn elfsig_upgrade_version() -> String {
    format!("{ELFSIG_VERSION}{ELFSIG_UPGRADE_SUFFIX}")
}

/// The name of the package of elfsig's module for the kernel `release`.
pub fn modules_package(release: &str) -> String {
    format!("{MODULES_PACKAGE_PREFIX}{release}")
}
/// The certificates the Debian system's package gate trusts (`apt/`).
pub const GATE_CERTS: &str = "/etc/elfsig/trusted.pem";
/// The Debian system's package gate in APT (`apt/apt.conf.d/80elfsig`).
pub const GATE_HOOK: &str = "/etc/apt/apt.conf.d/80elfsig";

/// In the Debian system's permissive boot, each file that would have been refused is a
/// diagnostic line starting with this, followed by the path and the cause in parentheses.
pub const TO_SIGN: &str = "to sign: ";
/// The kernel command line word that starts the `boot` bench in the Debian system:
/// `CONFIG,RUN`, the configuration booted (`baseline`, `elfsig`, `ima`) and the run it belongs to,
/// then `,smoke` in a smoke run, which times the workload's first case only, and `,upgrade` to
/// time the upgrade from the archive after the workload.
pub const BOOT_BENCH: &str = "elfsig_bench";
/// The `boot` bench's program in the Debian system (`elfsig-bench boot`, static).
pub const BOOT_BENCH_PROGRAM: &str = "/usr/local/libexec/elfsig-bench";
/// The `boot` bench's directory in `/run`: `stats` there is a copy of the module's counters
/// made as the boot ended, before the bench program ran.
pub const BOOT_BENCH_RUN: &str = "elfsig-bench";
/// The `boot` bench's directory in `/run` for what the initramfs leaves: `stats` there is a copy
/// of the module's counters made as the initramfs ended (init-bottom), with shell builtins.
pub const BOOT_BENCH_INITRAMFS: &str = "elfsig-bench-initramfs";
/// In the Debian system, the certificate IMA appraises with (DER; where dracut's integrity
/// module looks for IMA keys).
pub const BOOT_IMA_CERT: &str = "/etc/keys/ima/elfsig-test.der";
/// In the Debian system, the IMA policy of the `ima` configuration (not `/etc/ima/ima-policy`,
/// which systemd would load on every boot).
pub const BOOT_IMA_POLICY: &str = "/etc/elfsig-bench/ima-policy";
/// The bench's records of `elfsig-cold`'s verification per exec in the coreutils suite:
/// `PROGRAM:verify`, `:hash`, `:signature`, in microseconds.
pub const BENCH_COREUTILS_COLD: &str = "coreutils-cold";
/// The kernel command-line word that names the bench suites to run (all when absent).
pub const BENCH_SUITES: &str = "elfsig.suites";
/// The bench's command-line word for which share of the rounds a VM measures: `INDEX/COUNT`.
pub const BENCH_PART: &str = "elfsig.part";
/// The bench's command-line word for how much to measure: [`BenchEffort::word`].
pub const BENCH_EFFORT: &str = "elfsig.effort";

/// How much a bench run measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BenchEffort {
    /// Every repetition: `cargo xtask bench`.
    Full,
    /// Fewer: `cargo xtask bench --quick`.
    Quick,
    /// Just enough for every suite to produce well-formed rows, in seconds: what `cargo xtask
    /// test` runs to check that the bench works, not to measure.
    Smoke,
}

impl BenchEffort {
    /// The command-line word.
    pub fn word(self) -> &'static str {
        match self {
            BenchEffort::Full => "full",
            BenchEffort::Quick => "quick",
            BenchEffort::Smoke => "smoke",
        }
    }

    /// The effort a word names.
    pub fn parse(word: &str) -> Option<Self> {
        [BenchEffort::Full, BenchEffort::Quick, BenchEffort::Smoke].into_iter().find(|e| e.word() == word)
    }

    /// `full`, `quick` or `smoke`, as this effort asks.
    pub fn pick<T>(self, full: T, quick: T, smoke: T) -> T {
        match self {
            BenchEffort::Full => full,
            BenchEffort::Quick => quick,
            BenchEffort::Smoke => smoke,
        }
    }
}

/// How the bench's report lines start: one raw measurement (`suite,case,config,run,value,unit`).
pub const BENCH_MEASUREMENT: &str = "ELFSIG-BENCH ";
/// A bench that failed, and why.
pub const BENCH_ERROR: &str = "ELFSIG-BENCH-ERROR ";
/// What the bench is doing now.
pub const BENCH_PROGRESS: &str = "ELFSIG-PROGRESS ";
/// The bench's last line: `ok` or `failed`. (The test suites end with KTAP's totals line.)
pub const BENCH_DONE: &str = "ELFSIG-DONE ";

/// The bench's programs, signed with the kernel key, by name.
pub const BENCH_SIGNED: &str = "/b/signed";
/// The bench's `hello` (in [`BENCH_SIGNED`]) signed with each kind of key, by the key's name in
/// results: RSA-3072 (the kernel key) and ECDSA P-256 (embedded in the module).
pub const BENCH_HELLO_BY_KEY: [(&str, &str); 2] = [("rsa-3072", "hello"), ("ecdsa-p256", "hello-ecdsa-p256")];
/// The certificate of the kernel key (DER), which the bench puts in IMA's keyring.
pub const BENCH_IMA_CERT: &str = "/b/ima.der";
/// evmctl's `security.ima` signature of each bench program: `<name>.sig`.
pub const BENCH_IMA_SIGNATURES: &str = "/b/ima-sig";
/// Where the bench copies the programs that IMA appraises.
pub const BENCH_IMA_COPIES: &str = "/b/ima";
/// How many small signed libraries the bench's `libs` suite `dlopen`s, each
/// [`elfsig_fixtures::bench_library_name`] in [`BENCH_SIGNED`] (and its IMA copy).
pub const BENCH_LIBRARIES: usize = 50;
/// Python's C extension modules the `libs` suite imports, from copies of Debian's
/// `lib-dynload` in [`BENCH_SIGNED`]: ones that need no Python code besides what `python3 -S`
/// starts with, most with libraries of their own (libbz2, liblzma, libffi, libcrypto, libssl,
/// libuuid, ncurses, readline, libcrypt).
pub const BENCH_PYTHON_EXTENSIONS: [&str; 12] = [
    "_bz2",
    "_lzma",
    "_ctypes",
    "_hashlib",
    "_ssl",
    "_uuid",
    "_curses",
    "readline",
    "_crypt",
    "_json",
    "mmap",
    "_multibytecodec",
];
/// The file name of an extension module in Debian's Python 3.11.
pub fn python_extension_file(module: &str) -> String {
    format!("{module}.cpython-311-x86_64-linux-gnu.so")
}
