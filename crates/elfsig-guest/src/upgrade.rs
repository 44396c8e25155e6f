//! Keeping the signed Debian system up to date under enforce (`cargo xtask distro`'s Secure Boot
//! boot, `elfsig_upgrade=upgrade`): the gate refuses a package as Debian ships it before dpkg
//! unpacks anything, through APT and through `dpkg -i`; then `apt-get upgrade` and
//! `apt-get install` from the archive of re-signed packages run their maintainer scripts and
//! triggers (the initramfs rebuilt among them) without a single refusal, and leave the system
//! whole; among the packages, a newer elfsig (its module, tools and hooks), installed while the
//! older module is loaded and locked. The next boot (`elfsig_upgrade=upgraded`), into the kernel
//! update that follows (`kernel_update.rs`), runs the newer module, and finds the initramfs of
//! the kernel the system was made with rebuilt by the upgrade.

use std::path::Path;

use elfsig_control::Mode;
use elfsig_guest::debian::{apt, booted, initramfs, module_state, run, succeeds, tail, upgrade_steps};
use elfsig_guest::harness::{self, Context, Outcome, Suite, ensure};
use elfsig_guest::image::{
    ARCHIVE_INSTALLED, ARCHIVE_REBUILT, ARCHIVE_REBUILT_SUFFIX, ARCHIVE_UNMODIFIED, DISTRO_KERNEL, DISTRO_POLICY,
    DISTRO_POLICY_PACKAGE, DISTRO_POLICY_PACKAGED_SERIAL, DISTRO_REVOKED, DISTRO_REVOKED_LATER, ELFSIG_PACKAGE,
    ELFSIG_VERSION, GATE_CERTS, OTHER_ARCHIVE, elfsig_upgrade_version, modules_package,
};

/// The program of [`ARCHIVE_UNMODIFIED`].
const UNMODIFIED_PROGRAM: &str = "/usr/bin/hello";
/// What the upgrade leaves for the next boot to compare with: the initramfs's digest before.
const BEFORE: &str = "/var/lib/elfsig-check/initramfs-before-upgrade";

/// Whether dpkg has `package` installed.
fn installed(package: &str) -> Result<bool, String> {
    let (_, status) = run(&format!("dpkg-query -W -f='${{Status}}' {package}"))?;
    Ok(status.trim() == "install ok installed")
}

/// Runs `work`, which must refuse nothing: the module's refusal counters and its log lines are
/// the same after it as before.
pub(crate) fn refusing_nothing(work: impl FnOnce() -> Outcome) -> Outcome {
    let before = refusals()?;
    work()?;
    let after = refusals()?;
    ensure(after == before, || format!("refusals (execs, mappings, logged) went from {before:?} to {after:?}"))
}

/// The loaded module's version.
fn loaded_version() -> Result<String, String> {
    Ok(std::fs::read_to_string("/sys/module/elfsig/version").context("the module's version")?.trim().to_owned())
}

/// elfsig's packages: `elfsig` and the module's for the running kernel.
fn elfsig_packages() -> Result<[String; 2], String> {
    let (_, release) = run("uname -r")?;
    Ok([ELFSIG_PACKAGE.to_owned(), modules_package(release.trim())])
}

/// The version of the module in the initramfs `initramfs`, unpacked into `unpacked`.
pub(crate) fn initramfs_module_version(initramfs: &str, unpacked: &str) -> Result<String, String> {
    succeeds(&format!("rm -rf {unpacked} && unmkinitramfs {initramfs} {unpacked}"))?;
    let (_, found) = run(&format!("find {unpacked} -name 'elfsig.ko*'"))?;
    let module = found.lines().next().ok_or("no elfsig module in the initramfs")?.to_owned();
    let (_, version) = run(&format!("modinfo -F version {module}"))?;
    Ok(version.trim().to_owned())
}

/// Refusals the module counted and logged so far: execs, mappings, and its log lines.
pub(crate) fn refusals() -> Result<(u64, u64, usize), String> {
    let stats = harness::stats()?;
    let logged = harness::kernel_log()?.iter().filter(|l| l.starts_with("elfsig: refused")).count();
    Ok((stats.get("denied").copied().unwrap_or(0), stats.get("mmap_denied").copied().unwrap_or(0), logged))
}

/// The cases of the boot that upgrades, after the signed system's own.
pub(crate) fn upgrade(suite: &mut Suite<'_>) {
    let [(_, update), (_, upgrade), (_, install)] = upgrade_steps();
    suite.case("the system lists only its archives, and APT reads them", move || succeeds(&update));
    suite.case("the gate refuses a package as Debian ships it, before dpkg unpacks anything", || {
        let (ok, output) = run(&apt(&format!("install {ARCHIVE_UNMODIFIED}")))?;
        ensure(!ok && output.contains("the module would refuse"), || {
            format!("apt-get install {ARCHIVE_UNMODIFIED} (exit ok: {ok}): {}", tail(&output))
        })?;
        ensure(!installed(ARCHIVE_UNMODIFIED)? && !Path::new(UNMODIFIED_PROGRAM).exists(), || {
            format!("{ARCHIVE_UNMODIFIED} was unpacked after all")
        })
    });
    suite.case("dpkg -i refuses it too, through dpkg's debsig-verify slot", || {
        let (ok, output) = run(&format!("dpkg -i {OTHER_ARCHIVE}/{ARCHIVE_UNMODIFIED}_*.deb"))?;
        ensure(!ok && output.contains("verification on package"), || {
            format!("dpkg -i (exit ok: {ok}): {}", tail(&output))
        })?;
        ensure(!installed(ARCHIVE_UNMODIFIED)?, || format!("dpkg -i installed {ARCHIVE_UNMODIFIED}"))
    });
    suite.case("with the gate bypassed, the kernel refuses its program and the system keeps running", || {
        succeeds(&format!("dpkg --no-debsig -i {OTHER_ARCHIVE}/{ARCHIVE_UNMODIFIED}_*.deb"))?;
        let before = harness::stats()?;
        harness::refused(UNMODIFIED_PROGRAM)?;
        harness::counters_grew(&before, &harness::stats()?, &[("denied", 1), ("unsigned", 1)])?;
        let (state, failed) = elfsig_guest::debian::system_state()?;
        ensure(state == "running", || format!("systemd says {state:?}; failed: {failed}"))?;
        // Removing it runs nothing of it.
        succeeds(&format!("dpkg --purge {ARCHIVE_UNMODIFIED}"))
    });
    suite.case(
        "the archive's policy package: its postinst loads a newer policy, which elfsig's upgrade must keep",
        || {
            harness::runs(DISTRO_REVOKED_LATER, &[], None)?;
            succeeds(&apt(&format!("install {DISTRO_POLICY_PACKAGE}")))?;
            policy_serial_is(DISTRO_POLICY_PACKAGED_SERIAL)?;
            harness::refused(DISTRO_REVOKED_LATER)?;
            harness::refused(DISTRO_REVOKED)?;
            // The initramfs, rebuilt by the trigger, holds it for the next boot.
            let unpacked = "/tmp/elfsig-initramfs-policy";
            succeeds(&format!("rm -rf {unpacked} && unmkinitramfs {} {unpacked}", initramfs()?))?;
            let (_, found) = run(&format!("find {unpacked} -path '*{DISTRO_POLICY}'"))?;
            let inside = found.lines().next().ok_or("no policy in the initramfs")?.to_owned();
            succeeds(&format!("cmp {inside} {DISTRO_POLICY}"))
        },
    );
    suite.case(
        "apt-get upgrade and install from the signed archive: scripts and triggers run, nothing refused",
        move || {
            refusing_nothing(|| {
                let initramfs = initramfs()?;
                let (_, digest) = run(&format!("sha256sum {initramfs}"))?;
                std::fs::create_dir_all("/var/lib/elfsig-check").context("mkdir")?;
                std::fs::write(BEFORE, digest).context(BEFORE)?;
                let (ok, output) = run(&upgrade)?;
                harness::diagnostic(format_args!("apt-get upgrade: {}", tail(&output)));
                ensure(ok, || format!("apt-get upgrade failed: {}", tail(&output)))?;
                let (ok, output) = run(&install)?;
                ensure(ok, || format!("apt-get install {ARCHIVE_INSTALLED} failed: {}", tail(&output)))
            })
        },
    );
    suite.case("the upgrade installed what it should and left dpkg clean", || {
        let (_, version) = run(&format!("dpkg-query -W -f='${{Version}}' {ARCHIVE_REBUILT}"))?;
        ensure(version.ends_with(ARCHIVE_REBUILT_SUFFIX), || format!("{ARCHIVE_REBUILT} is at {version}"))?;
        ensure(installed(ARCHIVE_INSTALLED)?, || format!("{ARCHIVE_INSTALLED} is not installed"))?;
        // Its postinst ran ssh-keygen, which it had just installed.
        ensure(Path::new("/etc/ssh/ssh_host_ed25519_key").exists(), || "no SSH host key".into())?;
        let (_, audit) = run("dpkg --audit")?;
        ensure(audit.trim().is_empty(), || format!("dpkg --audit: {}", tail(&audit)))?;
        let initramfs = initramfs()?;
        let (_, digest) = run(&format!("sha256sum {initramfs}"))?;
        let before = std::fs::read_to_string(BEFORE).context(BEFORE)?;
        ensure(digest != before, || format!("the upgrade did not rebuild {initramfs}"))
    });
    suite.case("elfsig upgraded itself: the newer module in the initramfs, the older one still loaded, locked", || {
        let newer = elfsig_upgrade_version();
        for package in elfsig_packages()? {
            let (_, version) = run(&format!("dpkg-query -W -f='${{Version}}' {package}"))?;
            ensure(version == newer, || format!("{package} is at {version}, not {newer}"))?;
        }
        let (_, installed) = run("modinfo -F version elfsig")?;
        ensure(installed.trim() == newer, || format!("the installed module says {}", installed.trim()))?;
        let in_initramfs = initramfs_module_version(&initramfs()?, "/tmp/elfsig-initramfs-module")?;
        ensure(in_initramfs == newer, || format!("the initramfs's module says {in_initramfs}"))?;
        let loaded = loaded_version()?;
        ensure(loaded == ELFSIG_VERSION, || format!("the loaded module says {loaded}"))?;
        module_state(Mode::Enforce, true)
    });
    suite.case("after the upgrade: every ELF file verifies, set-user-ID and ping as nobody work", || {
        succeeds(&format!("elfsig -q verify --cert {GATE_CERTS} --recursive /usr"))?;
        let (_, said) = run("setpriv --reuid=nobody --regid=nogroup --clear-groups sudo -n true")?;
        ensure(said.contains("password is required"), || format!("setuid sudo as nobody said {said:?}"))?;
        succeeds("sudo -n true")?;
        succeeds("setpriv --reuid=nobody --regid=nogroup --clear-groups ping -c1 -W5 127.0.0.1")?;
        let (state, failed) = elfsig_guest::debian::system_state()?;
        ensure(state == "running" && failed.is_empty(), || format!("systemd says {state:?}; failed: {failed}"))
    });
}

/// The module's policy has serial `serial`.
fn policy_serial_is(serial: u64) -> Outcome {
    let loaded = std::fs::read_to_string("/sys/kernel/security/elfsig/policy").context("read policy")?;
    ensure(loaded.lines().any(|l| l == format!("serial {serial}")), || format!("the module's policy: {loaded:?}"))
}

/// The boot after the upgrade: from the initramfs the upgrade's trigger made.
pub(crate) fn upgraded(suite: &mut Suite<'_>) {
    suite.case("the upgraded system booted: systemd reached its default target, no unit failed", booted);
    suite.case(
        "from an initramfs made since the upgrade, which loaded the module: enforcing, locked, guard active",
        || {
            let by = std::fs::read_to_string("/run/elfsig-initramfs").context("/run/elfsig-initramfs")?;
            ensure(by.trim() == "initramfs-tools", || format!("the module was loaded by {:?}", by.trim()))?;
            module_state(Mode::Enforce, true)?;
            // The initramfs the system was made with (its kernel's) was rebuilt by the upgrade.
            let made_with = format!("/boot/initrd.img-{DISTRO_KERNEL}");
            let (_, digest) = run(&format!("sha256sum {made_with}"))?;
            let before = std::fs::read_to_string(BEFORE).context(BEFORE)?;
            ensure(digest != before, || format!("the upgrade left {made_with} as it was"))?;
            // The rebuilt package's programs are in the one that booted, and they are the signed
            // ones installed.
            let initramfs = initramfs()?;
            let unpacked = "/tmp/elfsig-initramfs";
            succeeds(&format!("rm -rf {unpacked} && unmkinitramfs {initramfs} {unpacked}"))?;
            let (_, found) = run(&format!("find {unpacked} -path '*/usr/bin/kmod'"))?;
            let inside = found.lines().next().ok_or("no kmod in the initramfs")?.to_owned();
            succeeds(&format!("cmp {inside} /usr/bin/kmod"))
        },
    );
    suite.case("the newer elfsig runs: its module, as elfsig status says", || {
        let newer = elfsig_upgrade_version();
        let loaded = loaded_version()?;
        ensure(loaded == newer, || format!("the module loaded says {loaded}, not {newer}"))?;
        let (ok, status) = run("elfsig status")?;
        ensure(ok && status.contains(&format!("version {newer}")), || format!("elfsig status: {}", tail(&status)))
    });
    suite.case("the initramfs loaded the policy the package brought", || {
        policy_serial_is(DISTRO_POLICY_PACKAGED_SERIAL)?;
        harness::refused(DISTRO_REVOKED_LATER)
    });
    suite.case("nothing was refused in this boot but the revoked program", || {
        let (execs, mappings, _) = refusals()?;
        // The guard's canary, an unsigned memfd mapped executable, is its own proof.
        ensure(execs == 1 && mappings == 1, || format!("{execs} execs and {mappings} mappings refused"))
    });
}
