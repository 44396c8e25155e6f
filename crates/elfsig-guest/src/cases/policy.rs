//! The module's policy as it runs: digests revoked and keys added through the kernel's keyrings
//! (or a signed policy, where the kernel keeps user space out of them), permissive mode, and the
//! control files that set and show it, counters included, under execs from many threads too.

use elfsig_guest::harness::{
    Context, Outcome, Suite, control, counters_grew, ensure, grew, kernel_log, keyring, read, refused, run, runs,
    stats, wait_for_log_budget, write_control,
};
use elfsig_guest::image::{
    self, ADDED_CERT, HELLO_ADDED_KEY, HELLO_OUTPUT as HELLO, HELLO_UNSIGNED, REVOCATION, REVOKEME, SIGNED,
};
use elfsig_guest::system;

use crate::{manifest, policy_files};

/// The cases, in the order they run.
pub(crate) fn cases(suite: &mut Suite<'_>) {
    // On a distribution's kernel, which keeps user space out of `.blacklist` and out of
    // `.secondary_trusted_keys` (harness::NEEDS_REVOCABLE_KERNEL, NEEDS_TEST_KERNEL_KEY), the
    // same through a signed policy, cleared afterwards.
    suite.case("revoked_binary_refused_cached_or_not", || {
        runs(REVOKEME, &[], Some(HELLO))?;
        runs(REVOKEME, &[], Some(HELLO))?;
        if elfsig_guest::on_distro_kernel() {
            policy_files::apply("revokeme", &["--serial", "1", "--revoke", REVOKEME])?;
        } else {
            let digest = manifest::value("revoke_digest")?;
            let signature = read(REVOCATION)?;
            let serial = keyring(".blacklist")?;
            system::add_key("blacklist", &format!("bin:{digest}"), &signature, serial).context("add blacklist key")?;
        }
        let before = stats()?;
        refused(REVOKEME)?;
        // The guard's key hook flushed the cache when the key was added, as loading a policy
        // does: verified afresh. (The nobpf boot checks a cached verdict against `.blacklist`
        // without the guard.)
        counters_grew(&before, &stats()?, &[("revoked", 1), ("cache_misses", 1), ("cache_hits", 0)])?;
        // And when flushed by hand.
        write_control("flush", "1").context("flush")?;
        let before = stats()?;
        refused(REVOKEME)?;
        counters_grew(&before, &stats()?, &[("revoked", 1), ("cache_misses", 1)])?;
        runs(image::HELLO, &[], Some(HELLO))?;
        if elfsig_guest::on_distro_kernel() {
            policy_files::clear()?;
        }
        Ok(())
    });
    suite.case("key_added_to_the_secondary_keyring_is_trusted_until_removed", || {
        if elfsig_guest::on_distro_kernel() {
            return trusted_until_dropped(HELLO_ADDED_KEY, ADDED_CERT);
        }
        (|| {
            refused(HELLO_ADDED_KEY)?;
            runs(image::HELLO, &[], Some(HELLO))?;
            let secondary = keyring(".secondary_trusted_keys")?;
            let key = system::add_key("asymmetric", "", &read(ADDED_CERT)?, secondary).context("add the key")?;
            // Only revocations flush the cache (through the guard's key hook): a cached verdict
            // stands.
            let before = stats()?;
            let cached = runs(image::HELLO, &[], Some(HELLO))
                .and_then(|()| counters_grew(&before, &stats()?, &[("cache_hits", 2), ("cache_misses", 0)]));
            let result = cached.and_then(|()| runs(HELLO_ADDED_KEY, &[], Some(HELLO)));
            system::unlink_key(key, secondary).context("remove the key")?;
            result?;
            // Removing a key takes effect for cached verdicts at the next flush (kmod/README.md).
            write_control("flush", "1").context("flush")?;
            refused(HELLO_ADDED_KEY)
        })()
    });
    suite.case("permissive_mode_logs_and_allows", || {
        wait_for_log_budget();
        write_control("mode", "permissive").context("set permissive")?;
        let before = stats()?;
        let result = runs(HELLO_UNSIGNED, &[], Some(HELLO));
        let after = stats()?;
        write_control("mode", "enforce").context("set enforce")?;
        result?;
        // Reported twice: by the exec's check and by the guard's, when binfmt_elf maps it.
        counters_grew(&before, &after, &[("unsigned", 2), ("allowed", 1), ("denied", 0), ("mmap_denied", 0)])?;
        let log = kernel_log()?;
        ensure(log.iter().any(|l| l.contains("would refuse (permissive) /t/unsigned/hello: unsigned")), || {
            "no permissive line in the kernel log".into()
        })?;
        refused(HELLO_UNSIGNED)
    });
    suite.case("counters_match_a_known_sequence", || {
        write_control("flush", "1").context("flush")?;
        let before = stats()?;
        // Each program's code is mapped executable by binfmt_elf, which the guard checks too.
        runs(image::HELLO, &[], Some(HELLO))?; // exec: miss; mapping: hit
        runs(image::HELLO, &[], Some(HELLO))?; // exec: hit; mapping: hit
        refused(HELLO_UNSIGNED)?; // exec: miss, refused before anything is mapped
        // exec: miss, and ld.so: miss; mappings: true and ld.so hits, libc (by ld.so) a miss
        runs(&format!("{SIGNED}/true"), &[], None)?;
        let after = stats()?;
        counters_grew(
            &before,
            &after,
            &[
                ("checked", 5),
                ("allowed", 3),
                ("denied", 1),
                ("unsigned", 1),
                ("mmap_checked", 5),
                ("mmap_allowed", 5),
                ("mmap_denied", 0),
                ("cache_hits", 5),
                ("cache_misses", 5),
            ],
        )?;
        let hashed = grew(&before, &after, "bytes_hashed");
        ensure(hashed > 0, || "nothing hashed".into())
    });
    suite.case("writing_control_files_is_checked", || {
        ensure(write_control("mode", "sometimes").is_err(), || "bad mode accepted".into())?;
        ensure(write_control("lock", "0").is_ok(), || "unlocking an unlocked module failed".into())?;
        ensure(write_control("stats", "0").is_err(), || "stats accepted a write".into())
    });
    suite.case("writing_control_files_takes_cap_sys_admin_at_open", || {
        // A child that stays root for file permissions but drops CAP_SYS_ADMIN, after opening
        // one control file for writing: that descriptor keeps working, a new one is refused.
        let child = system::fork(|| {
            let Ok(mut held) = std::fs::OpenOptions::new().write(true).open(control("flush")) else { return 10 };
            if system::drop_capability(21).is_err() {
                return 11;
            }
            match std::fs::OpenOptions::new().write(true).open(control("mode")) {
                Err(e) if e.raw_os_error() == Some(libc::EPERM) => {}
                _ => return 12,
            }
            if std::fs::read_to_string(control("stats")).is_err() {
                return 13;
            }
            if std::io::Write::write_all(&mut held, b"1").is_err() {
                return 14;
            }
            0
        })
        .context("fork")?;
        let status = system::wait(child).context("wait")?;
        let code = libc::WEXITSTATUS(status);
        ensure(libc::WIFEXITED(status) && code == 0, || {
            let why = match code {
                10 => "opening flush for writing failed with CAP_SYS_ADMIN",
                11 => "dropping CAP_SYS_ADMIN failed",
                12 => "opening mode for writing without CAP_SYS_ADMIN was not refused with EPERM",
                13 => "reading stats without CAP_SYS_ADMIN failed",
                14 => "writing through a descriptor opened with CAP_SYS_ADMIN failed after dropping it",
                _ => "the child died",
            };
            format!("{why} (status {status:#x})")
        })
    });
    suite.case("stats_read_in_pieces_is_one_snapshot", || {
        // Reading byte by byte while cold verifications make the counters grow and `memory`
        // swing between 0 and tens of KiB: a file that reformatted its contents on every read
        // would cut and repeat lines whenever a number changed its width.
        let stop = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|scope| {
            scope.spawn(|| {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let _ = write_control("flush", "1");
                    let _ = run(&format!("{SIGNED}/cstatic"), &[]);
                }
            });
            let result = (|| {
                // The names, in order, from a read of the whole file at once.
                let whole = std::fs::read_to_string(control("stats")).context("read stats")?;
                let expected: Vec<&str> = whole.lines().filter_map(|l| l.split_once(' ')).map(|(n, _)| n).collect();
                let mut widths = std::collections::BTreeSet::new();
                // At least 30 reads, and on until the width has changed (it usually has by then).
                for read in 0..300 {
                    if read >= 30 && widths.len() > 1 {
                        break;
                    }
                    let mut file = std::fs::File::open(control("stats")).context("open stats")?;
                    let mut text = Vec::new();
                    let mut byte = [0u8; 1];
                    while std::io::Read::read(&mut file, &mut byte).context("read stats")? == 1 {
                        text.push(byte[0]);
                    }
                    let text = String::from_utf8(text).context("stats")?;
                    let mut names = Vec::new();
                    for line in text.lines() {
                        let (name, value) = line.split_once(' ').ok_or_else(|| format!("line {line:?}"))?;
                        value.parse::<u64>().map_err(|_| format!("line {line:?} in {text:?}"))?;
                        names.push(name);
                    }
                    widths.insert(text.len());
                    ensure(names == expected && names.len() > 10, || format!("stats read in pieces: {text:?}"))?;
                }
                // The numbers did change width while the file was read: the case tested something.
                ensure(widths.len() > 1, || format!("the stats kept one length: {widths:?}"))
            })();
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            result
        })
    });
    suite.case("concurrent_execs", || {
        let threads: Vec<_> = (0..8)
            .map(|i| {
                std::thread::spawn(move || -> Result<(), String> {
                    for _ in 0..10 {
                        if i % 2 == 0 { runs(image::HELLO, &[], Some(HELLO))? } else { refused(HELLO_UNSIGNED)? }
                    }
                    Ok(())
                })
            })
            .collect();
        for t in threads {
            t.join().map_err(|_| "thread panicked".to_owned())??;
        }
        Ok(())
    });
}

/// `program`, signed by the key of `cert`, runs while a policy trusts `cert`, and is refused
/// again once a newer policy does not (cached verdicts included); the policy cleared after.
fn trusted_until_dropped(program: &str, cert: &str) -> Outcome {
    refused(program)?;
    policy_files::apply("trusted", &["--serial", "1", "--trust", cert])?;
    runs(program, &[], Some(HELLO))?;
    runs(program, &[], Some(HELLO))?;
    policy_files::apply("dropped", &["--serial", "2"])?;
    refused(program)?;
    policy_files::clear()
}
