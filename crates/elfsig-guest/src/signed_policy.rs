//! The signed policy (docs/POLICY.md), on both kernels: policies made in the VM by the CLI and
//! written to the `policy` control file. Refused with nothing changed when not exactly a policy
//! signed by a policy key, or older than the loaded one; applied whole otherwise: a revoked
//! program and library refused whether their verdicts were cached or not, a revoked key's files
//! refused, a key the policy trusts accepted, and both undone by a newer policy.

use elfsig_guest::harness::{
    Context, Outcome, Suite, control, counters_grew, ensure, kernel_log, refused, runs, stats,
};
use elfsig_guest::image::{
    CERT, HELLO_MODULE_KEY, HELLO_OTHER_KEY, HELLO_OUTPUT, KEY, LIB_POLICY_REVOKED, MODULE_CERT, OTHER_CERT,
    POLICY_REVOKEME,
};

use crate::mapping_checks::{dlopen_loads, dlopen_refused, library};
use crate::policy_files::{DIR, clear, create, create_signed_by, elfsig, load, loaded, write_policy};

fn serial_loaded() -> Result<Option<u64>, String> {
    let text = loaded()?;
    Ok(text.lines().find_map(|l| l.strip_prefix("serial ")?.parse().ok()))
}

/// Writing `bytes` is refused with `errno`, and the loaded policy stays what it was.
fn refused_with(bytes: &[u8], errno: i32, what: &str) -> Outcome {
    let before = loaded()?;
    let result = write_policy(bytes);
    ensure(result.as_ref().is_err_and(|e| e.raw_os_error() == Some(errno)), || {
        format!("{what}: writing it gave {result:?}, not errno {errno}")
    })?;
    let after = loaded()?;
    ensure(after == before, || format!("{what}: the policy went from {before:?} to {after:?}"))
}

/// The cases, in order: they build on each other's policies.
pub(crate) fn cases(suite: &mut Suite<'_>) {
    suite.case("policy_refused_unless_exactly_a_policy_signed_by_a_policy_key", || {
        ensure(loaded()? == "none\n", || "a policy is loaded before any was".into())?;
        let revoke = ["--serial", "5", "--revoke", POLICY_REVOKEME];
        // Signed by a key trusted to sign programs, not policies.
        let by_program_key = create_signed_by("program-key", &revoke, KEY, CERT)?;
        refused_with(&std::fs::read(&by_program_key).context("read")?, libc::EKEYREJECTED, "signed by a program key")?;
        let good = std::fs::read(create("good", &revoke)?).context("read")?;
        // The body alone, unsigned; truncated; a byte more; a byte of the body changed.
        let body_len = good.len() - 12 - u32::from_le_bytes(good[good.len() - 12..][..4].try_into().unwrap()) as usize;
        refused_with(&good[..body_len], libc::EINVAL, "unsigned")?;
        refused_with(&good[..good.len() - 1], libc::EINVAL, "truncated")?;
        refused_with(&[&good[..], b"x"].concat(), libc::EINVAL, "padded")?;
        // Not even with whitespace, as `echo` would add to a word.
        refused_with(&[&good[..], b"\n"].concat(), libc::EINVAL, "padded with a newline")?;
        let mut changed = good.clone();
        changed[45] ^= 1;
        refused_with(&changed, libc::EKEYREJECTED, "changed after signing")?;
        refused_with(b"not a policy at all", libc::EINVAL, "garbage")?;
        // Said in the kernel log, with the reason.
        let log = kernel_log()?;
        ensure(log.iter().any(|l| l.contains("policy refused") && l.contains("not signed by a policy key")), || {
            "no refusal of the program key's policy in the kernel log".into()
        })?;
        // Nothing changed: the program runs.
        runs(POLICY_REVOKEME, &[], Some(HELLO_OUTPUT))
    });
    suite.case("policy_revokes_a_program_and_a_library_cached_or_not", || {
        runs(POLICY_REVOKEME, &[], Some(HELLO_OUTPUT))?;
        runs(POLICY_REVOKEME, &[], Some(HELLO_OUTPUT))?;
        let revoked_library = library(LIB_POLICY_REVOKED);
        dlopen_loads(&revoked_library)?;
        let policy = create("10", &["--serial", "10", "--revoke", POLICY_REVOKEME, "--revoke", &revoked_library])?;
        elfsig(&["-q", "policy", "load", &policy])?;
        ensure(serial_loaded()? == Some(10), || format!("policy says {:?}", loaded()))?;
        let before = stats()?;
        refused(POLICY_REVOKEME)?;
        counters_grew(&before, &stats()?, &[("revoked", 1), ("cache_hits", 0)])?;
        dlopen_refused(&revoked_library, "revoked")?;
        refused(POLICY_REVOKEME)?;
        runs(elfsig_guest::image::HELLO, &[], Some(HELLO_OUTPUT))
    });
    suite.case("policy_revokes_a_key_and_trusts_another_until_a_newer_policy_drops_them", || {
        runs(HELLO_MODULE_KEY, &[], Some(HELLO_OUTPUT))?;
        refused(HELLO_OTHER_KEY)?;
        let from = format!("{DIR}/10");
        let next = create("11", &["--from", &from, "--revoke-cert", MODULE_CERT, "--trust", OTHER_CERT])?;
        load(&next)?;
        refused(HELLO_MODULE_KEY)?;
        runs(HELLO_OTHER_KEY, &[], Some(HELLO_OUTPUT))?;
        runs(HELLO_OTHER_KEY, &[], Some(HELLO_OUTPUT))?;
        // Serial 12 keeps the revoked files and drops the keys: both back as they were, cached
        // verdicts included.
        let without = create("12", &["--from", &from, "--serial", "12"])?;
        load(&without)?;
        runs(HELLO_MODULE_KEY, &[], Some(HELLO_OUTPUT))?;
        refused(HELLO_OTHER_KEY)?;
        refused(POLICY_REVOKEME)
    });
    suite.case("older_policy_refused_the_same_one_again_changes_nothing", || {
        refused_with(&std::fs::read(format!("{DIR}/11")).context("read")?, libc::ESTALE, "older")?;
        let same = std::fs::read(format!("{DIR}/12")).context("read")?;
        let before = loaded()?;
        write_policy(&same).context("the same policy again")?;
        ensure(loaded()? == before, || "loading the same policy changed it".into())?;
        // Another policy with the same serial is refused too.
        let other = create("12-other", &["--serial", "12"])?;
        refused_with(&std::fs::read(other).context("read")?, libc::ESTALE, "same serial, other contents")
    });
    suite.case("policy_cleared_unless_locked", || {
        clear()?;
        runs(POLICY_REVOKEME, &[], Some(HELLO_OUTPUT))?;
        // Back for what follows: a lower serial is fine once nothing is loaded.
        load(&format!("{DIR}/12"))?;
        refused(POLICY_REVOKEME)
    });
}

/// Under the lock: only a newer policy, correctly signed; no clearing. For the locked module's
/// checks (the module was loaded afresh: no policy yet).
pub(crate) fn locked() -> Outcome {
    let first = create("locked-1", &["--serial", "1", "--revoke", POLICY_REVOKEME])?;
    load(&first)?;
    refused(POLICY_REVOKEME)?;
    let cleared = std::fs::OpenOptions::new()
        .write(true)
        .open(control("policy"))
        .and_then(|mut f| std::io::Write::write(&mut f, b"clear"));
    ensure(cleared.as_ref().is_err_and(|e| e.raw_os_error() == Some(libc::EPERM)), || {
        format!("clearing the policy while locked gave {cleared:?}")
    })?;
    refused_with(&std::fs::read(&first).context("read")?[..100], libc::EINVAL, "truncated, locked")?;
    let second = create("locked-2", &["--serial", "2"])?;
    load(&second)?;
    runs(POLICY_REVOKEME, &[], Some(HELLO_OUTPUT))
}
