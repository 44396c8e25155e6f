//! Signatures of every kind the module takes (RSA, ECDSA P-256 and P-384, made through a
//! PKCS#11 token too): the programs they sign run, and every tampered copy is refused for the
//! right reason.

use elfsig_guest::harness::{Outcome, Suite, counters_grew, read, refused, runs, stats, write_exec};
use elfsig_guest::image::{self, EXPECTED, HELLO_OUTPUT as HELLO, SIGNED};

use crate::tamper;

const WORK: &str = "/tmp/work";

/// The tampering cases of the programs signed with the kernel key (RSA), then those of the
/// other algorithms and the token's.
pub(crate) fn cases(suite: &mut Suite<'_>) {
    let _ = std::fs::create_dir_all(WORK);
    tamper_cases(suite, "", &format!("{SIGNED}/cstatic"), &format!("{SIGNED}/cdynamic"));
    ecdsa_and_token_cases(suite);
}

/// Tampered copies of the signed program at `path` are each refused, for the right reason;
/// `other` is signed with the same key. Case names start with `prefix`.
fn tamper_cases(suite: &mut Suite<'_>, prefix: &str, path: &str, other: &str) {
    let variants = match tamper::variants(path, other) {
        Ok(variants) => variants,
        Err(e) => {
            suite.case(format!("{prefix}tamper_setup"), move || Err(e));
            return;
        }
    };
    for (name, bytes, reason) in variants {
        let name = format!("{prefix}{name}");
        let path = format!("{WORK}/{name}");
        suite.case(name, move || {
            let bytes = bytes?;
            write_exec(&path, &bytes)?;
            let before = stats()?;
            refused(&path)?;
            counters_grew(&before, &stats()?, &[(reason, 1), ("denied", 1)])
        });
    }
}

/// Programs signed with ECDSA keys (P-256 and P-384, trusted through the module's keyring)
/// run, and every tamper class is refused as it is with RSA; programs signed through the host's
/// PKCS#11 token (RSA and ECDSA) run too.
fn ecdsa_and_token_cases(suite: &mut Suite<'_>) {
    for (dir, name) in image::ECDSA_SIGNED.into_iter().zip(["ecdsa_p256", "ecdsa_p384"]) {
        suite.case(format!("signed_with_{name}_runs"), move || signed_in_runs(dir));
        tamper_cases(suite, &format!("{name}_"), &format!("{dir}/cstatic"), &format!("{dir}/cdynamic"));
    }
    for (dir, name) in image::TOKEN_SIGNED.into_iter().zip(["rsa", "ecdsa_p256"]) {
        suite.case(format!("signed_through_a_token_{name}_runs"), move || signed_in_runs(dir));
    }
}

/// `hello`, `cstatic` and `cdynamic` in `dir` run, each verified (not served by the cache from
/// the copies signed with other keys).
fn signed_in_runs(dir: &str) -> Outcome {
    let before = stats()?;
    runs(&format!("{dir}/hello"), &[], Some(HELLO))?;
    for name in ["cstatic", "cdynamic"] {
        runs(&format!("{dir}/{name}"), &[], Some(&read(format!("{EXPECTED}/{name}"))?))?;
    }
    counters_grew(&before, &stats()?, &[("cache_misses", 3), ("denied", 0)])
}
