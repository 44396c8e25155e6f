//! The checks inside the signed Debian system (`cargo xtask distro`): run by a systemd unit once
//! the system has booted, not as PID 1. `elfsig_check=enforce` ([`DISTRO_CHECK`]) on the kernel command line: the
//! signed system boots with the module locked and enforcing, runs a workload without a single
//! refusal, then refuses what it must and keeps running. `elfsig_check=discover`: the unsigned
//! system boots in permissive mode, and every file that would have been refused is listed, from
//! the module's audit records, held by the kernel since boot (`audit=1`) for the first audit
//! daemon, which this is.

use std::os::unix::fs::PermissionsExt;

use elfsig_control::Mode;
use elfsig_guest::debian::{self, WORKLOAD, booted, module_state, run_case, sh, shell_runs, system_state};
use elfsig_guest::harness::{self, Context, Stats, Suite, ensure};
use elfsig_guest::image::{
    DISTRO_CHECK, DISTRO_INITRAMFS, DISTRO_KERNEL, DISTRO_KERNEL_UPDATE, DISTRO_POLICY_SERIAL, DISTRO_REVOKED,
    DISTRO_SECURE_BOOT, DISTRO_UPGRADE, TO_SIGN,
};
use elfsig_guest::system::{AuditDaemon, INTEGRITY_DATA, audit_fields};

use crate::{builds, containers, kernel_update, secure_boot, upgrade};

/// Where the checks put their files: on the root file system, as a user's would be.
const WORK: &str = "/root/elfsig-check";
/// The name of elfsig-guard's canary (guard/src/canary.rs), which the module must refuse.
const CANARY: &str = "elfsig-guard-canary";
/// A shared library every program here maps.
const LIBZ: &str = "/usr/lib/x86_64-linux-gnu/libz.so.1";

/// Runs the checks the kernel command line names, then ends the VM.
pub(crate) fn run() {
    match (elfsig_guest::cmdline(DISTRO_CHECK).as_deref(), elfsig_guest::cmdline(DISTRO_UPGRADE).as_deref()) {
        (Some("discover"), _) => discover(),
        (_, Some("upgraded")) => rebooted(DISTRO_KERNEL_UPDATE),
        (_, Some("older")) => rebooted(DISTRO_KERNEL),
        _ => enforce(),
    }
    debian::end();
}

fn print_stats(stats: &Stats) {
    let wanted =
        ["checked", "denied", "mmap_checked", "mmap_denied", "cache_used", "bytes_hashed", "verify_ns", "memory_peak"];
    let line: Vec<String> =
        wanted.iter().map(|name| format!("{name}={}", stats.get(*name).copied().unwrap_or(0))).collect();
    harness::diagnostic(format_args!("stats: {}", line.join(" ")));
}

/// The workload, each a case of its own, and the execs real systems do besides.
fn workload(suite: &mut Suite<'_>) {
    for (_, name, steps) in WORKLOAD {
        suite.case(name, || run_case(steps));
    }
    suite.case("the module is listed by lsmod", || shell_runs("lsmod", "elfsig"));
    suite.case("execs real systems do: fexecve, memfd, /proc/self/exe, env scripts, setuid, hard links", || {
        // fexecve (execveat with AT_EMPTY_PATH) of a signed program, and of a signed copy in
        // a memfd sealed against writes, as runc and systemd seal what they exec.
        shell_runs(
            "python3 -c 'import os; fd = os.open(\"/usr/bin/echo\", os.O_RDONLY); \
             os.execve(fd, [\"echo\", \"fexecve\"], {})'",
            "fexecve",
        )?;
        shell_runs(
            "python3 -c 'import os, fcntl; fd = os.memfd_create(\"copy\", os.MFD_ALLOW_SEALING); \
             os.write(fd, open(\"/usr/bin/echo\", \"rb\").read()); \
             fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_WRITE | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW); \
             os.execve(fd, [\"echo\", \"memfd\"], {})'",
            "memfd",
        )?;
        // A program re-exec'ing itself through /proc/self/exe.
        shell_runs(
            "python3 -c 'import os, sys; sys.argv[1:] or os.execv(\"/proc/self/exe\", \
             [\"python3\", \"-c\", \"print(\\\"reexec\\\")\", \"again\"])'",
            "reexec",
        )?;
        // A script through env.
        std::fs::create_dir_all(WORK).context(WORK)?;
        let script = format!("{WORK}/env-script");
        std::fs::write(&script, "#!/usr/bin/env python3\nprint('through env')\n").context(&script)?;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).context("chmod")?;
        shell_runs(&script, "through env")?;
        // A set-user-ID program run by a user it does not let in: exec'd, then says no.
        let out = sh("setpriv --reuid=nobody --regid=nogroup --clear-groups sudo -n true 2>&1").context("sudo")?;
        let said = String::from_utf8_lossy(&out.stdout);
        ensure(said.contains("password is required"), || format!("setuid sudo as nobody said {said:?}"))?;
        // A second name for a signed program.
        let link = format!("{WORK}/hard-link-to-echo");
        let _ = std::fs::remove_file(&link);
        std::fs::hard_link("/usr/bin/echo", &link).context("link")?;
        shell_runs(&format!("{link} linked"), "linked")
    });
}

/// The refusals, each with its reason counted, and the system still running.
fn refusals(suite: &mut Suite<'_>) {
    suite.case("the initramfs loaded the system's signed policy: its revoked program is refused", || {
        let loaded = std::fs::read_to_string("/sys/kernel/security/elfsig/policy").context("read policy")?;
        ensure(loaded.lines().any(|l| l == format!("serial {DISTRO_POLICY_SERIAL}")), || {
            format!("the module's policy: {loaded:?}")
        })?;
        let before = harness::stats()?;
        harness::refused(DISTRO_REVOKED)?;
        harness::counters_grew(&before, &harness::stats()?, &[("revoked", 1), ("denied", 1)])?;
        harness::runs("/usr/bin/true", &[], None)
    });
    suite.case("an unsigned program copied in is refused", || {
        std::fs::create_dir_all(WORK).context(WORK)?;
        let unsigned = format!("{WORK}/unsigned-true");
        harness::copy_exec("/usr/bin/true", &unsigned)?;
        harness::runs("/usr/bin/elfsig", &["remove", "-q", &unsigned], None)?;
        let before = harness::stats()?;
        harness::refused(&unsigned)?;
        harness::counters_grew(&before, &harness::stats()?, &[("denied", 1), ("unsigned", 1)])
    });
    suite.case("a modified signed program is refused", || {
        let modified = format!("{WORK}/modified-true");
        let mut bytes = harness::read("/usr/bin/true")?;
        let at = bytes.len() / 3;
        bytes[at] ^= 0x01;
        harness::write_exec(&modified, &bytes)?;
        let before = harness::stats()?;
        harness::refused(&modified)?;
        harness::counters_grew(&before, &harness::stats()?, &[("denied", 1), ("modified", 1)])
    });
    suite.case("an unsigned library is refused to dlopen and to LD_PRELOAD", || {
        let library = format!("{WORK}/libunsigned.so");
        std::fs::copy(LIBZ, &library).context("copy libz")?;
        harness::runs("/usr/bin/elfsig", &["remove", "-q", &library], None)?;
        let before = harness::stats()?;
        let out = sh(&format!("python3 -c 'import ctypes; ctypes.CDLL(\"{library}\")' 2>&1")).context("python3")?;
        let said = String::from_utf8_lossy(&out.stdout);
        ensure(!out.status.success() && said.contains("failed to map segment"), || {
            format!("dlopen of an unsigned library: {} {said:?}", out.status)
        })?;
        let out = sh(&format!("LD_PRELOAD={library} /usr/bin/true 2>&1")).context("LD_PRELOAD")?;
        let said = String::from_utf8_lossy(&out.stdout);
        ensure(said.contains("cannot be preloaded"), || format!("LD_PRELOAD of an unsigned library: {said:?}"))?;
        let after = harness::stats()?;
        ensure(
            harness::grew(&before, &after, "mmap_denied") >= 2 && harness::grew(&before, &after, "unsigned") >= 2,
            || {
                format!(
                    "mmap_denied grew by {}, unsigned by {}",
                    harness::grew(&before, &after, "mmap_denied"),
                    harness::grew(&before, &after, "unsigned")
                )
            },
        )
    });
    // PCRE2's JIT asks for executable anonymous memory; grep, not entitled to jit, is refused
    // it and matches with PCRE2's interpreter instead: what falls back falls back.
    suite.case("grep -P matches under W^X: PCRE2 falls back when its JIT is refused", || {
        let before = harness::stats()?;
        shell_runs("printf 'a1\\nb\\nc22\\n' | grep -P '\\d+' | tr '\\n' ' '", "a1 c22")?;
        let after = harness::stats()?;
        harness::diagnostic(format_args!(
            "grep -P: needs_jit grew by {}, memory_denied by {}",
            harness::grew(&before, &after, "needs_jit"),
            harness::grew(&before, &after, "memory_denied")
        ));
        Ok(())
    });
    suite.case("the system keeps running after the refusals", || {
        let (state, failed) = system_state()?;
        ensure(state == "running", || format!("systemd says {state:?}; failed units: {failed}"))
    });
    suite.case("the lock holds", || {
        let relaxed = harness::write_control("mode", "permissive");
        ensure(relaxed.as_ref().err().and_then(std::io::Error::raw_os_error) == Some(libc::EPERM), || {
            format!("writing permissive to mode: {relaxed:?}")
        })?;
        let out = harness::run("/usr/bin/elfsig", &["mode", "permissive"]).context("elfsig mode")?;
        ensure(!out.status.success(), || "elfsig mode permissive succeeded while locked".into())?;
        let out = harness::run("/usr/sbin/rmmod", &["elfsig"]).context("rmmod")?;
        ensure(!out.status.success(), || "rmmod elfsig succeeded while locked".into())?;
        crate::guard_sealed::holds()?;
        crate::guard_sealed::ftrace_stays_on()?;
        module_state(Mode::Enforce, true)
    });
}

/// The line of the kernel log that says the root file system was mounted, first (`EXT4-fs
/// (vda): mounted filesystem ...`).
fn root_mount(log: &[String]) -> Result<usize, String> {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").context("/proc/self/mountinfo")?;
    // `ID PARENT MAJOR:MINOR ROOT MOUNTPOINT ... - TYPE SOURCE OPTIONS`
    let device = mountinfo
        .lines()
        .filter(|line| line.split_whitespace().nth(4) == Some("/"))
        .find_map(|line| line.split_once(" - ")?.1.split_whitespace().nth(1))
        .ok_or("no root file system in /proc/self/mountinfo")?;
    let said = format!("({}): mounted filesystem", device.trim_start_matches("/dev/"));
    log.iter().position(|l| l.contains(&said)).ok_or_else(|| format!("the kernel log has no {said:?}"))
}

/// The signed system under enforce.
fn enforce() {
    let mut suite = Suite::default();
    suite.case("systemd reached its default target, no unit failed", booted);
    suite.case("the module loaded from the initramfs: enforcing, locked, guard active", || {
        // Not by elfsig.service, which would load it too: the hook says it did.
        let by = std::fs::read_to_string("/run/elfsig-initramfs").context("/run/elfsig-initramfs")?;
        let expected = elfsig_guest::cmdline(DISTRO_INITRAMFS).unwrap_or_default();
        ensure(by.trim() == expected, || format!("loaded by {:?}, expected {expected:?}", by.trim()))?;
        // With trust_initramfs: the initramfs's own tools ran unverified, and nothing else.
        let trusted = harness::stats()?.get("initramfs_trusted").copied().unwrap_or(0);
        let log = harness::kernel_log()?;
        ensure(trusted > 0 && log.iter().any(|l| l.contains("trusting the initramfs's own files")), || {
            format!("the hook did not load the module with trust_initramfs=1 ({trusted} files trusted)")
        })?;
        // The guard came before the root file system was mounted (initramfs-tools attaches it
        // in the background, and waits for it there).
        let attached = log.iter().position(|l| l.contains("the mapping guard is attached"));
        let mounted = root_mount(&log)?;
        ensure(attached.is_some_and(|attached| attached < mounted), || {
            format!("the guard was attached at line {attached:?} of the kernel log, the root mounted at line {mounted}")
        })?;
        module_state(Mode::Enforce, true)
    });
    if elfsig_guest::cmdline(DISTRO_SECURE_BOOT).as_deref() == Some("on") {
        suite.case("Secure Boot: enforced by the firmware, the kernel locked down", secure_boot::enforced);
        suite.case(
            "Secure Boot: the module signed with the pipeline's MOK key, which the firmware holds; an unsigned module refused",
            secure_boot::module_signed_by_the_mok,
        );
    }
    suite.case("elfsig.service, for hosts that load the module later, was skipped: the initramfs did its work", || {
        shell_runs("systemctl show -p ConditionResult elfsig.service", "ConditionResult=no")?;
        shell_runs("systemctl show -p ActiveState elfsig.service", "ActiveState=inactive")?;
        shell_runs("systemctl show -p Result elfsig.service", "Result=success")
    });
    workload(&mut suite);
    suite.case("nothing in the signed system was refused", || {
        let stats = harness::stats()?;
        print_stats(&stats);
        // One refusal is elfsig-guard's own proof that the guard works: its canary, an
        // unsigned memfd mapped executable. Anything else the module logs.
        let log = harness::kernel_log()?;
        let others: Vec<&String> =
            log.iter().filter(|l| l.starts_with("elfsig: refused") && !l.contains(CANARY)).collect();
        let (execs, mappings) = (stats.get("denied").copied(), stats.get("mmap_denied").copied());
        ensure(others.is_empty() && execs == Some(0) && mappings == Some(1), || {
            format!("{execs:?} execs and {mappings:?} mappings (1: the canary) refused; the module's log: {others:?}")
        })
    });
    refusals(&mut suite);
    suite.case("status", || {
        let out = harness::run("/usr/bin/elfsig", &["status"]).context("elfsig status")?;
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            harness::diagnostic(line);
        }
        print_stats(&harness::stats()?);
        ensure(out.status.success(), || format!("elfsig status exited with {}", out.status))
    });
    // The boot that upgrades, and the one that builds (which locks the loader policy to deny),
    // side by side.
    if elfsig_guest::cmdline(DISTRO_UPGRADE).as_deref() == Some("upgrade") {
        upgrade::upgrade(&mut suite);
        kernel_update::update(&mut suite);
    } else {
        containers::containers(&mut suite);
        builds::builds(&mut suite);
    }
    suite.run("elfsig: the signed Debian system under enforce");
}

/// A boot after the upgrade and the kernel update: into the new kernel (through the boot menu),
/// or into the one the system was made with, `release`.
fn rebooted(release: &str) {
    let mut suite = Suite::default();
    upgrade::upgraded(&mut suite);
    kernel_update::rebooted(&mut suite, release);
    suite.run(&format!("elfsig: the Debian system after its upgrade, rebooted into {release}"));
}

/// The unsigned system in permissive mode: what would have been refused.
fn discover() {
    let mut suite = Suite::default();
    suite.case("the unsigned system booted in permissive mode", || {
        booted()?;
        module_state(Mode::Permissive, false)
    });
    suite.case("every file that would have been refused is listed", || {
        let daemon = AuditDaemon::register().context("register as the audit daemon")?;
        let records = daemon.records(INTEGRITY_DATA).context("read audit records")?;
        let mut files = std::collections::BTreeMap::<String, String>::new();
        for record in &records {
            let fields = audit_fields(record);
            if !fields.get("op").is_some_and(|op| op.starts_with("elfsig_")) {
                continue;
            }
            if let (Some(written), Some(cause), Some(dev)) =
                (fields.get("name"), fields.get("cause"), fields.get("dev"))
            {
                let name = name(written);
                // Nothing to sign: the guard's canary (in a memfd).
                if !name.contains(CANARY) {
                    files.entry(name).or_insert_with(|| format!("{cause} on {dev}"));
                }
            }
        }
        for (name, cause) in &files {
            harness::diagnostic(format_args!("{TO_SIGN}{name} ({cause})"));
        }
        let stats = harness::stats()?;
        print_stats(&stats);
        harness::diagnostic(format_args!("{} files to sign, from {} audit records", files.len(), records.len()));
        // What every boot of this system runs and maps, and this program itself.
        let expected = [
            "/usr/lib/systemd/systemd",
            "/usr/lib/systemd/systemd-journald",
            "/usr/lib/x86_64-linux-gnu/libc.so.6",
            "/usr/local/libexec/elfsig-check",
        ];
        let missing: Vec<&str> = expected.iter().copied().filter(|f| !files.contains_key(*f)).collect();
        ensure(missing.is_empty(), || format!("not listed: {missing:?}"))
    });
    suite.run("elfsig: finding what is left to sign, in permissive mode");
}

/// A name as the module writes it: quoted (the quotes already gone), or in hex when it holds
/// spaces, quotes or bytes outside printable ASCII.
fn name(written: &str) -> String {
    if written.starts_with('/') {
        return written.to_owned();
    }
    let bytes: Option<Vec<u8>> =
        (0..written.len() / 2).map(|i| u8::from_str_radix(written.get(2 * i..2 * i + 2)?, 16).ok()).collect();
    bytes.map_or_else(|| written.to_owned(), |b| String::from_utf8_lossy(&b).into_owned())
}
