//! The module's audit records: every refusal, exec and mapping alike, and every would-be
//! refusal in permissive mode is one AUDIT_INTEGRITY_DATA record, read here from the audit
//! netlink socket with this program registered as the audit daemon, and checked field by field.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;

use elfsig_guest::harness::{Context, Outcome, Stats, Suite, ensure, refused, runs, stats, write_control};
use elfsig_guest::image::{self, CERT, GUARD_PROBE, HELLO_OTHER_KEY, HELLO_UNSIGNED, KEY, REVOKEME};
use elfsig_guest::system::{AuditDaemon, INTEGRITY_DATA, audit_fields as fields};

/// The unset login uid and session, as audit writes them.
const UNSET: &str = "4294967295";
const WORK: &str = "/tmp/work";

/// The one reason counter that grew between two readings.
fn reason_that_grew(before: &Stats, after: &Stats) -> Result<String, String> {
    let grew: Vec<&String> = elfsig_core::Reason::ALL
        .iter()
        .filter_map(|r| after.get_key_value(r.name()))
        .filter(|(name, n)| before.get(*name).copied().unwrap_or(0) + 1 == **n)
        .map(|(name, _)| name)
        .collect();
    match grew.as_slice() {
        [one] => Ok((*one).clone()),
        _ => Err(format!("reasons that grew by one: {grew:?}")),
    }
}

/// What a record must say.
struct Expected<'a> {
    op: &'a str,
    cause: &'a str,
    path: &'a str,
    /// The process: its pid when known, and its executable.
    pid: Option<u32>,
    exe: &'a str,
    digest: Option<String>,
    enforcing: bool,
}

/// Checks the one record about `expected.path` and `expected.op` among `records`.
fn check(records: &[String], expected: &Expected<'_>) -> Outcome {
    let matching: Vec<BTreeMap<String, String>> = records
        .iter()
        .map(|r| fields(r))
        .filter(|f| {
            f.get("op").map(String::as_str) == Some(expected.op)
                && f.get("name").map(String::as_str) == Some(expected.path)
        })
        .collect();
    let [record] = matching.as_slice() else {
        return Err(format!("{} records of {} {}, among {records:#?}", matching.len(), expected.op, expected.path));
    };
    let metadata = std::fs::metadata(expected.path).context("stat")?;
    let pid = expected.pid.map(|p| p.to_string());
    let mut want: Vec<(&str, Option<&str>)> = vec![
        ("cause", Some(expected.cause)),
        ("uid", Some("0")),
        ("euid", Some("0")),
        ("auid", Some(UNSET)),
        ("ses", Some(UNSET)),
        ("exe", Some(expected.exe)),
        ("enforcing", Some(if expected.enforcing { "1" } else { "0" })),
        ("res", Some(if expected.enforcing { "0" } else { "1" })),
        ("digest", None),
    ];
    let ino = metadata.ino().to_string();
    want.push(("ino", Some(&ino)));
    if let Some(pid) = &pid {
        want.push(("pid", Some(pid)));
    }
    let digest = expected.digest.as_ref().map(|d| format!("sha256:{d}"));
    if let Some(d) = &digest {
        want.retain(|(k, _)| *k != "digest");
        want.push(("digest", Some(d)));
    }
    let wrong: Vec<String> = want
        .iter()
        .filter(|(k, v)| record.get(*k).map(String::as_str) != *v)
        .map(|(k, v)| format!("{k}={:?} (expected {v:?})", record.get(*k)))
        .collect();
    ensure(wrong.is_empty(), || format!("{}: {} in {record:?}", expected.path, wrong.join(", ")))?;
    for present in ["ppid", "comm", "dev", "tty", "gid"] {
        ensure(record.get(present).is_some_and(|v| !v.is_empty()), || format!("no {present} in {record:?}"))?;
    }
    Ok(())
}

/// Where this program runs from: the exe of the processes it forks before they exec.
fn own_exe() -> Result<String, String> {
    Ok(std::fs::read_link("/proc/self/exe").context("readlink /proc/self/exe")?.display().to_string())
}

pub(crate) fn cases(suite: &mut Suite<'_>) {
    suite.case("every_refusal_is_an_audit_record_with_its_process_file_and_reason", || {
        let daemon = AuditDaemon::register().context("register as the audit daemon")?;
        daemon.records(INTEGRITY_DATA).context("drain")?;
        let _ = std::fs::create_dir_all(WORK);
        // A signed program with a byte appended, and a file that is no ELF inside.
        let mut modified = std::fs::read(image::HELLO).context("read hello")?;
        modified.push(b'x');
        let modified_path = format!("{WORK}/audit-modified");
        elfsig_guest::harness::write_exec(&modified_path, &modified)?;
        let malformed_path = format!("{WORK}/audit-malformed");
        elfsig_guest::harness::write_exec(&malformed_path, b"\x7fELF\x02\x01\x01\0truncated")?;
        let revoked_digest = crate::manifest::value("revoke_digest")?;
        let exe = own_exe()?;

        let mut causes = Vec::new();
        let mut paths =
            vec![HELLO_UNSIGNED, HELLO_OTHER_KEY, REVOKEME, modified_path.as_str(), malformed_path.as_str()];
        // Revoked by a test kernel revocation, which a distribution's kernel cannot take
        // (harness::NEEDS_REVOCABLE_KERNEL).
        if elfsig_guest::on_distro_kernel() {
            paths.retain(|p| *p != REVOKEME);
        }
        let reasons = paths.len();
        for path in paths {
            let before = stats()?;
            refused(path)?;
            let cause = reason_that_grew(&before, &stats()?)?;
            let records = daemon.records(INTEGRITY_DATA).context("read records")?;
            let digest = (path == REVOKEME).then(|| revoked_digest.clone());
            check(
                &records,
                &Expected { op: "elfsig_exec", cause: &cause, path, pid: None, exe: &exe, digest, enforcing: true },
            )?;
            causes.push(cause);
        }
        ensure(
            causes.len() == reasons && causes.iter().collect::<std::collections::BTreeSet<_>>().len() == reasons,
            || format!("the refusals did not cover {reasons} reasons: {causes:?}"),
        )?;

        // Mappings: the probe's own pid and executable.
        for (how, cause, op) in
            [("mmap", "unsigned", "elfsig_mmap"), ("mprotect", "made_executable", "elfsig_mprotect")]
        {
            let child = std::process::Command::new(GUARD_PROBE)
                .args([how, HELLO_UNSIGNED])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .context("spawn the probe")?;
            let pid = child.id();
            let out = child.wait_with_output().context("wait for the probe")?;
            ensure(!out.status.success(), || format!("guard-probe {how} succeeded"))?;
            let records = daemon.records(INTEGRITY_DATA).context("read records")?;
            let expected = Expected {
                op,
                cause,
                path: HELLO_UNSIGNED,
                pid: Some(pid),
                exe: GUARD_PROBE,
                digest: None,
                enforcing: true,
            };
            check(&records, &expected)?;
        }

        // Permissive: recorded as allowed.
        write_control("mode", "permissive").context("permissive")?;
        let ran = runs(HELLO_UNSIGNED, &[], Some(image::HELLO_OUTPUT));
        write_control("mode", "enforce").context("enforce")?;
        ran?;
        let records = daemon.records(INTEGRITY_DATA).context("read records")?;
        let expected = Expected {
            op: "elfsig_exec",
            cause: "unsigned",
            path: HELLO_UNSIGNED,
            pid: None,
            exe: &exe,
            digest: None,
            enforcing: false,
        };
        check(&records, &expected)?;

        // Nothing is recorded for what is allowed.
        runs(image::HELLO, &[], Some(image::HELLO_OUTPUT))?;
        let records = daemon.records(INTEGRITY_DATA).context("read records")?;
        ensure(records.is_empty(), || format!("records for an allowed exec: {records:?}"))?;
        Ok(())
    });
    suite.case("every_policy_written_is_an_audit_record_loaded_or_refused_and_why", || {
        use crate::policy_files::{create, create_signed_by, write_policy};
        let daemon = AuditDaemon::register().context("register as the audit daemon")?;
        daemon.records(INTEGRITY_DATA).context("drain")?;
        let by_program_key = create_signed_by("audit-program-key", &["--serial", "30"], KEY, CERT)?;
        let refused = write_policy(&std::fs::read(&by_program_key).context("read")?);
        ensure(refused.is_err(), || "a policy signed by a program key was loaded".into())?;
        let good = create("audit-good", &["--serial", "31"])?;
        write_policy(&std::fs::read(&good).context("read")?).context("load")?;
        write_policy(b"clear").context("clear")?;
        let records: Vec<BTreeMap<String, String>> =
            daemon.records(INTEGRITY_DATA).context("read records")?.iter().map(|r| fields(r)).collect();
        for (cause, serial, res) in [("unknown_key", "30", "0"), ("loaded", "31", "1"), ("cleared", "0", "1")] {
            let found = records.iter().any(|r| {
                r.get("op").map(String::as_str) == Some("elfsig_policy")
                    && r.get("cause").map(String::as_str) == Some(cause)
                    && r.get("serial").map(String::as_str) == Some(serial)
                    && r.get("res").map(String::as_str) == Some(res)
                    && r.get("uid").map(String::as_str) == Some("0")
            });
            ensure(found, || {
                format!("no elfsig_policy record with cause={cause} serial={serial} res={res}: {records:?}")
            })?;
        }
        Ok(())
    });
}
