//! The end-to-end cases, in the order they run. Each case restores what it changes, except the
//! last, which locks the module.
//!
//! The initramfs `cargo xtask test` builds holds (see xtask/src/vm/initramfs.rs):
//! `/elfsig.ko`; `/bin/busybox` (signed) and `/bin/sh`; `/t/signed/` programs signed with the
//! kernel's built-in test key; `/t/module/` signed with the key embedded in the module;
//! `/t/other/` signed with an untrusted key; `/t/unsigned/`; `/t/scripts/`; `/t/manifest` and
//! `/t/revoke.p7` for revocation; dynamic programs' libraries and a signed `ld.so`; the CLI
//! (`/bin/elfsig`, signed) and the kernel key's private key and certificate in `/t/keys/`.

use std::cell::RefCell;

use crate::tamper::{self, Map, flip};
use crate::{mapping, signed_policy};
use elfsig_guest::harness::{
    Context, Outcome, Suite, control, copy_exec, counters_grew, ensure, grew, kernel_log, keyring, read, refused, run,
    runs, stats, wait_for_log_budget, write_control, write_exec,
};
use elfsig_guest::image::{
    ADDED_CERT, CERT, ELFSIG, EXPECTED, HELLO_ADDED_KEY, HELLO_MODULE_KEY, HELLO_OTHER_KEY, HELLO_UNSIGNED, KEY, LD_SO,
    LS_UNSIGNED, MANIFEST, MODULE, REVOCATION, REVOKEME, SCRIPT_SIGNED_INTERPRETER, SCRIPT_UNSIGNED_INTERPRETER,
    SCRIPTS, SIGNED,
};
use elfsig_guest::{image, system};

/// What [`image::HELLO`] prints.
const HELLO: &[u8] = image::HELLO_OUTPUT;
const WORK: &str = "/tmp/work";

/// Signed programs that print a fixed line, and what they print.
fn signed_programs() -> Vec<(String, Vec<u8>)> {
    let mut programs = vec![(image::HELLO.to_owned(), HELLO.to_vec())];
    for name in ["cstatic", "cstaticpie", "cdynamic", "go", "rust"] {
        let (path, out) = (format!("{SIGNED}/{name}"), format!("{EXPECTED}/{name}"));
        if let Ok(expected) = std::fs::read(out) {
            programs.push((path, expected));
        }
    }
    programs
}

/// Coreutils programs (dynamically linked) and the arguments they are run with.
const COREUTILS: &[(&str, &[&str])] =
    &[("ls", &["-l", SCRIPTS]), ("cat", &[MANIFEST]), ("echo", &["elfsig"]), ("true", &[]), ("uname", &["-s"])];

pub(crate) fn manifest(key: &str) -> Result<String, String> {
    let text = std::fs::read_to_string(MANIFEST).context("read manifest")?;
    text.lines()
        .find_map(|l| l.strip_prefix(key).and_then(|rest| rest.strip_prefix(' ')))
        .map(str::to_owned)
        .ok_or_else(|| format!("manifest has no {key}"))
}

fn load(params: &str) -> Result<(), String> {
    system::load_module(std::path::Path::new(MODULE), params).context("load elfsig.ko")
}

/// Loads the kernel modules the image carries for the filesystems the cases need (on a
/// distribution's kernel, which builds them as modules), in the order `order` lists them.
fn load_filesystem_modules() -> Outcome {
    let Ok(order) = std::fs::read_to_string(format!("{}/order", image::MODULES)) else {
        return Ok(());
    };
    for name in order.lines().filter(|l| !l.is_empty()) {
        system::load_module(std::path::Path::new(&format!("{}/{name}", image::MODULES)), "")
            .or_else(|e| if e.raw_os_error() == Some(libc::EEXIST) { Ok(()) } else { Err(e) })
            .context(&format!("load {name}"))?;
    }
    Ok(())
}

/// Runs every case; true when all passed.
pub(crate) fn run_all() -> bool {
    let _ = std::fs::create_dir_all(WORK);
    // What the coreutils print without the module.
    let baseline = RefCell::new(Vec::new());
    let mut suite = Suite::default();

    suite.case("without_module_everything_runs", || {
        runs(HELLO_UNSIGNED, &[], Some(HELLO))?;
        for (name, args) in COREUTILS {
            let out = run(&format!("{SIGNED}/{name}"), args).context(name)?;
            ensure(out.status.success(), || format!("{name} failed: {}", out.status))?;
            baseline.borrow_mut().push(out.stdout);
        }
        Ok(())
    });

    suite.case("filesystem_modules_load", load_filesystem_modules);

    suite.case("module_loads_enforcing", || {
        load("")?;
        let mode = std::fs::read_to_string(control("mode")).context("read mode")?;
        ensure(mode == "enforce\n", || format!("mode is {mode:?}"))?;
        // The module's own keyring holds the certificates embedded at build time: the module
        // key's, and on a distribution's kernel the test kernel key's too.
        let embedded = elfsig_guest::embedded_certs();
        let keys = std::fs::read_to_string("/proc/keys").context("read /proc/keys")?;
        ensure(keys.lines().any(|l| l.contains(" keyring ") && l.ends_with(&format!(".elfsig: {embedded}"))), || {
            format!("no .elfsig keyring with {embedded} keys in /proc/keys:\n{keys}")
        })?;
        // Loading is not news: the module logs refusals and errors, nothing else. (The kernel
        // itself says that an out-of-tree, unsigned module taints it.)
        let log = kernel_log()?;
        let chatter: Vec<&String> = log.iter().filter(|l| l.starts_with("elfsig: ") && !l.contains("taint")).collect();
        ensure(chatter.is_empty(), || format!("the module logged on load: {chatter:?}"))
    });

    mapping::attach_case(&mut suite);
    exec_cases(&mut suite, &baseline);
    tamper_cases(&mut suite, "", &format!("{SIGNED}/cstatic"), &format!("{SIGNED}/cdynamic"));
    ecdsa_and_token_cases(&mut suite);
    change_cases(&mut suite);
    interpreter_cases(&mut suite);
    loader_cases(&mut suite);
    mapping::cases(&mut suite);
    crate::admin::cases(&mut suite);
    policy_cases(&mut suite);
    crate::signed_policy::cases(&mut suite);
    crate::audit::cases(&mut suite);
    crate::unprivileged::cases(&mut suite);
    lifecycle_cases(&mut suite);
    // Last, over everything the cases did: on the debug kernel, KASAN, lockdep and the
    // atomic-sleep checks report there.
    suite.case("kernel_log_has_no_bug_warning_or_oops", crate::stress::kernel_log_is_clean);
    suite.run("elfsig: the kernel module's end-to-end cases")
}

fn exec_cases<'a>(suite: &mut Suite<'a>, baseline: &'a RefCell<Vec<Vec<u8>>>) {
    suite.case("signed_programs_run", || {
        for (path, expected) in signed_programs() {
            runs(&path, &[], Some(&expected))?;
        }
        Ok(())
    });
    suite.case("signed_dynamic_coreutils_run_with_the_same_output", || {
        for ((name, args), expected) in COREUTILS.iter().zip(baseline.borrow().iter()) {
            runs(&format!("{SIGNED}/{name}"), args, Some(expected))?;
        }
        Ok(())
    });
    suite.case("signed_by_the_module_key_runs", || runs(HELLO_MODULE_KEY, &[], Some(HELLO)));
    suite.case("unsigned_static_refused", || {
        let before = stats()?;
        refused(HELLO_UNSIGNED)?;
        counters_grew(&before, &stats()?, &[("unsigned", 1), ("denied", 1), ("allowed", 0)])
    });
    suite.case("unsigned_dynamic_refused", || refused(LS_UNSIGNED));
    suite.case("unknown_key_refused", || {
        let before = stats()?;
        refused(HELLO_OTHER_KEY)?;
        counters_grew(&before, &stats()?, &[("unknown_key", 1), ("denied", 1)])
    });
    suite.case("refusal_reaches_the_kernel_log", || {
        wait_for_log_budget();
        refused(HELLO_UNSIGNED)?;
        let log = kernel_log()?;
        ensure(log.iter().any(|l| l.contains("elfsig: refused /t/unsigned/hello: unsigned")), || {
            format!("no refusal line; last lines: {:?}", &log[log.len().saturating_sub(5)..])
        })
    });
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

/// A signed file changed between execs must be verified again.
fn change_cases(suite: &mut Suite<'_>) {
    const PATH: &str = "/tmp/work/changing";
    /// A fresh signed copy at `PATH`, verified once and then served by the cache.
    fn fresh() -> Outcome {
        copy_exec(image::HELLO, PATH)?;
        runs(PATH, &[], Some(HELLO))?;
        let before = stats()?;
        runs(PATH, &[], Some(HELLO))?;
        // The exec's check and the guard's, when binfmt_elf maps it: both from the cache.
        counters_grew(&before, &stats()?, &[("cache_hits", 2), ("cache_misses", 0)])
    }
    suite.case("unchanged_file_is_cached", fresh);
    suite.case("modified_in_place_between_execs_refused", || {
        fresh()?;
        let mut bytes = read(PATH)?;
        let at = Map::of(&bytes)?.section(".text")?.0;
        bytes[at] ^= 0xff;
        // Rewrite the same inode, same size.
        std::fs::OpenOptions::new()
            .write(true)
            .open(PATH)
            .and_then(|mut f| {
                use std::io::{Seek, SeekFrom, Write};
                f.seek(SeekFrom::Start(at as u64))?;
                f.write_all(&bytes[at..at + 1])
            })
            .context("write in place")?;
        refused(PATH)
    });
    suite.case("truncated_between_execs_refused", || {
        fresh()?;
        let len = std::fs::metadata(PATH).context("stat")?.len();
        std::fs::OpenOptions::new().write(true).open(PATH).and_then(|f| f.set_len(len - 1)).context("truncate")?;
        refused(PATH)
    });
    suite.case("replaced_by_rename_refused", || {
        fresh()?;
        let unsigned = format!("{WORK}/unsigned-copy");
        copy_exec(HELLO_UNSIGNED, &unsigned)?;
        std::fs::rename(&unsigned, PATH).context("rename")?;
        refused(PATH)
    });
    suite.case("signed_in_the_vm_runs_and_removed_is_refused", || {
        copy_exec(HELLO_UNSIGNED, PATH)?;
        refused(PATH)?;
        runs(ELFSIG, &["sign", "-q", "--key", KEY, "--cert", CERT, PATH], None)?;
        runs(PATH, &[], Some(HELLO))?;
        runs(ELFSIG, &["verify", "-q", "--cert", CERT, PATH], None)?;
        runs(ELFSIG, &["remove", "-q", PATH], None)?;
        refused(PATH)?;
        ensure(read(PATH)? == read(HELLO_UNSIGNED)?, || "remove did not restore the unsigned file".into())
    });
    suite.case("restored_file_runs_again", || {
        fresh()?;
        std::fs::OpenOptions::new().write(true).open(PATH).and_then(|f| f.set_len(10)).context("truncate")?;
        refused(PATH)?;
        write_exec(PATH, &read(image::HELLO)?)?;
        runs(PATH, &[], Some(HELLO))
    });
}

fn interpreter_cases(suite: &mut Suite<'_>) {
    suite.case("script_with_signed_interpreter_runs", || runs(SCRIPT_SIGNED_INTERPRETER, &[], Some(b"script ran\n")));
    suite.case("script_with_unsigned_interpreter_refused", || refused(SCRIPT_UNSIGNED_INTERPRETER));
    suite.case("modified_ld_so_stops_dynamic_programs", || {
        wait_for_log_budget();
        let original = read(LD_SO)?;
        let map = Map::of(&original)?;
        let tampered = flip(&original, map.section(".text")?.0 + 16);
        std::fs::write(LD_SO, &tampered).context("tamper ld.so")?;
        let before = stats()?;
        let result = refused(&format!("{SIGNED}/ls"));
        let after = stats()?;
        std::fs::write(LD_SO, &original).context("restore ld.so")?;
        result?;
        counters_grew(&before, &after, &[("modified", 1)])?;
        runs(&format!("{SIGNED}/ls"), &["-l", SCRIPTS], None)?;
        let log = kernel_log()?;
        ensure(log.iter().any(|l| l.contains("ELF interpreter: modified")), || "no interpreter refusal logged".into())
    });
    suite.case("static_programs_unaffected_by_ld_so", || runs(image::HELLO, &[], Some(HELLO)));
}

/// Running the dynamic loader directly: it maps the program itself, so the program is never
/// exec'd; the mapping guard checks it when it is mapped (see `mapping.rs`). `loader` = `deny`
/// refuses running the loader at all, a belt on top.
fn loader_cases(suite: &mut Suite<'_>) {
    suite.case("deny_loader_refuses_running_the_loader_directly", || {
        write_control("loader", "deny").context("set loader deny")?;
        let before = stats()?;
        let result = (|| {
            refused(LD_SO)?; // cached: ld.so was verified as the interpreter of earlier programs
            write_control("flush", "1").context("flush")?;
            refused(LD_SO)?; // verified afresh
            // Programs still load through it, and static PIE programs are not loaders.
            runs(&format!("{SIGNED}/ls"), &["-d", "/t"], Some(b"/t\n"))?;
            runs(&format!("{SIGNED}/cstaticpie"), &[], None)?;
            runs(image::HELLO, &[], Some(HELLO))
        })();
        let after = stats()?;
        let reading = control_value("loader");
        write_control("loader", "allow").context("set loader allow")?;
        result?;
        ensure(reading? == "deny", || "the loader file does not say deny".into())?;
        counters_grew(&before, &after, &[("loader_exec", 2), ("denied", 2)])?;
        // Permissive mode logs the same refusal and lets it run.
        write_control("loader", "deny").context("set loader deny")?;
        write_control("mode", "permissive").context("set permissive")?;
        let before = stats()?;
        let permissive = runs(LD_SO, &[&format!("{SIGNED}/true")], None);
        let after = stats()?;
        write_control("mode", "enforce").context("set enforce")?;
        write_control("loader", "allow").context("set loader allow")?;
        permissive?;
        counters_grew(&before, &after, &[("loader_exec", 1), ("denied", 0)])?;
        runs(LD_SO, &[&format!("{SIGNED}/true")], None)?;
        ensure(write_control("loader", "sometimes").is_err(), || "a bad loader policy was accepted".into())
    });
}

/// A control file's contents, without the newline.
fn control_value(name: &str) -> Result<String, String> {
    Ok(std::fs::read_to_string(control(name)).context(&format!("read {name}"))?.trim_end().to_owned())
}

fn policy_cases(suite: &mut Suite<'_>) {
    // On a distribution's kernel, which keeps user space out of `.blacklist` and out of
    // `.secondary_trusted_keys` (harness::NEEDS_REVOCABLE_KERNEL, NEEDS_TEST_KERNEL_KEY), the
    // same through a signed policy, cleared afterwards.
    suite.case("revoked_binary_refused_cached_or_not", || {
        runs(REVOKEME, &[], Some(HELLO))?;
        runs(REVOKEME, &[], Some(HELLO))?;
        if elfsig_guest::on_distro_kernel() {
            signed_policy::apply("revokeme", &["--serial", "1", "--revoke", REVOKEME])?;
        } else {
            let digest = manifest("revoke_digest")?;
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
            signed_policy::clear()?;
        }
        Ok(())
    });
    suite.case("key_added_to_the_secondary_keyring_is_trusted_until_removed", || {
        if elfsig_guest::on_distro_kernel() {
            return signed_policy::trusted_until_dropped(HELLO_ADDED_KEY, ADDED_CERT);
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

fn lifecycle_cases(suite: &mut Suite<'_>) {
    mapping::release_case(suite);
    mapping::unavailable_case(suite);
    suite.case("unload_allows_everything", || {
        system::unload_module("elfsig").context("unload")?;
        ensure(!std::path::Path::new(&control("mode")).exists(), || "control files left behind".into())?;
        runs(HELLO_UNSIGNED, &[], Some(HELLO))
    });
    suite.case("reload_refuses_again", || {
        load("")?;
        refused(HELLO_UNSIGNED)?;
        runs(image::HELLO, &[], Some(HELLO))
    });
    suite.case("an_open_control_file_keeps_the_module_loaded", || {
        let file = std::fs::File::open(control("stats")).context("open stats")?;
        let busy = system::unload_module("elfsig");
        ensure(busy.as_ref().is_err_and(|e| e.kind() == std::io::ErrorKind::WouldBlock), || {
            format!("unloading with stats open gave {busy:?}, expected EWOULDBLOCK")
        })?;
        let mut text = String::new();
        std::io::Read::read_to_string(&mut &file, &mut text).context("read the open stats file")?;
        ensure(text.contains("checked "), || format!("stats read {text:?}"))?;
        drop(file);
        system::unload_module("elfsig").context("unload once closed")?;
        ensure(!std::path::Path::new(&control("")).exists(), || "the control directory was left behind".into())?;
        load("")
    });
    suite.case("reload_in_permissive_mode_by_parameter", || {
        system::unload_module("elfsig").context("unload")?;
        load("mode=permissive")?;
        let mode = std::fs::read_to_string(control("mode")).context("read mode")?;
        ensure(mode == "permissive\n", || format!("mode is {mode:?}"))?;
        runs(HELLO_UNSIGNED, &[], Some(HELLO))?;
        ensure(load("mode=sideways").is_err(), || "a second load succeeded".into())?;
        system::unload_module("elfsig").context("unload")?;
        ensure(load("mode=sideways").is_err(), || "a bad mode parameter was accepted".into())?;
        load("")
    });
    suite.case("deny_loader_by_parameter", || {
        system::unload_module("elfsig").context("unload")?;
        load("deny_loader=1")?;
        let policy = control_value("loader");
        let result = refused(LD_SO);
        system::unload_module("elfsig").context("unload")?;
        load("")?;
        ensure(policy? == "deny", || "deny_loader=1 did not set the policy".into())?;
        result
    });
    suite.case("unload_and_reload_while_execs_are_in_flight", || {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let workers: Vec<_> = (0..4)
            .map(|_| {
                let stop = stop.clone();
                std::thread::spawn(move || -> Result<u32, String> {
                    let mut runs_done = 0;
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        runs(image::HELLO, &[], Some(HELLO))?;
                        runs(&format!("{SIGNED}/true"), &[], None)?;
                        runs_done += 1;
                    }
                    Ok(runs_done)
                })
            })
            .collect();
        // An exec in the handler holds a reference on the module, so unloading may be refused
        // for a moment (EWOULDBLOCK): that is the safety this case checks. Retry, as rmmod
        // --wait would.
        let unload_when_idle = || -> Result<u32, String> {
            for attempt in 0..500 {
                match system::unload_module("elfsig") {
                    Ok(()) => return Ok(attempt),
                    Err(e) if e.raw_os_error() == Some(libc::EWOULDBLOCK) => {
                        std::thread::sleep(std::time::Duration::from_millis(10))
                    }
                    Err(e) => return Err(format!("unload: {e}")),
                }
            }
            Err("the module stayed busy for 5 s".into())
        };
        let mut cycles = Ok(());
        for _ in 0..5 {
            cycles = unload_when_idle().and_then(|_| load(""));
            if cycles.is_err() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let mut total = 0;
        for worker in workers {
            total += worker.join().map_err(|_| "worker panicked".to_owned())??;
        }
        cycles?;
        ensure(total > 0, || "no exec ran during the cycles".into())?;
        refused(HELLO_UNSIGNED)
    });
    // As a host locks it: by parameter, at load. (The stress suite locks by writing `lock`.)
    suite.case("lock_by_parameter_holds_until_reboot", || {
        system::unload_module("elfsig").context("unload")?;
        load("lock=1 deny_loader=1")?;
        mapping::attach_alone()?;
        locked_checks()?;
        crate::admin::refused_while_locked()?;
        crate::signed_policy::locked()?;
        // Locking again is not an error; unlocking is.
        write_control("lock", "1").context("lock again")?;
        let unlock = write_control("lock", "0");
        ensure(unlock.as_ref().is_err_and(|e| e.raw_os_error() == Some(libc::EPERM)), || {
            format!("unlocking gave {unlock:?}")
        })
    });
}

/// What a locked module must hold to: enforce, no unloading, the loader denied for good, and
/// still signed programs run.
pub(crate) fn locked_checks() -> Outcome {
    ensure(std::fs::read_to_string(control("lock")).context("read lock")? == "1\n", || "not locked".into())?;
    let permissive = write_control("mode", "permissive");
    ensure(permissive.as_ref().is_err_and(|e| e.raw_os_error() == Some(libc::EPERM)), || {
        format!("switching to permissive while locked gave {permissive:?}")
    })?;
    // The kernel's answer to unloading a module in use, without waiting (rmmod's way).
    let unload = system::unload_module("elfsig");
    ensure(unload.as_ref().is_err_and(|e| e.raw_os_error() == Some(libc::EWOULDBLOCK)), || {
        format!("unloading while locked gave {unload:?}")
    })?;
    ensure(std::path::Path::new(&control("mode")).exists(), || "the module went away".into())?;
    if std::fs::read_to_string(control("guard")).context("read guard")? == "active\n" {
        let release = write_control("guard", "release");
        ensure(release.as_ref().is_err_and(|e| e.raw_os_error() == Some(libc::EPERM)), || {
            format!("releasing the mapping guard while locked gave {release:?}")
        })?;
        ensure(std::fs::read_to_string(control("guard")).context("read guard")? == "active\n", || {
            "the guard is not active after a refused release".into()
        })?;
    }
    let allow = write_control("loader", "allow");
    ensure(allow.as_ref().is_err_and(|e| e.raw_os_error() == Some(libc::EPERM)), || {
        format!("allowing the loader while locked gave {allow:?}")
    })?;
    refused(LD_SO)?;
    let untrusted = write_control("untrusted", "verify");
    ensure(untrusted.as_ref().is_err_and(|e| e.raw_os_error() == Some(libc::EPERM)), || {
        format!("allowing untrusted mounts while locked gave {untrusted:?}")
    })?;
    ensure(std::fs::read_to_string(control("untrusted")).context("read untrusted")? == "refuse\n", || {
        "untrusted mounts are allowed after a refused write".into()
    })?;
    refused(HELLO_UNSIGNED)?;
    runs(image::HELLO, &[], Some(HELLO))
}
