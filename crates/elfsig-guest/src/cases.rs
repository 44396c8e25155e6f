//! The end-to-end cases, in the order they run. Each case restores what it changes, except the
//! last, which locks the module.
//!
//! The initramfs `cargo xtask test` builds holds (see xtask/src/vm/initramfs.rs):
//! `/elfsig.ko`; `/bin/busybox` (signed) and `/bin/sh`; `/t/signed/` programs signed with the
//! kernel's built-in test key; `/t/module/` signed with the key embedded in the module;
//! `/t/other/` signed with an untrusted key; `/t/unsigned/`; `/t/scripts/`; `/t/manifest` and
//! `/t/revoke.p7` for revocation; dynamic programs' libraries and a signed `ld.so`; the CLI
//! (`/bin/elfsig`, signed) and the kernel key's private key and certificate in `/t/keys/`.

use crate::tamper::{Map, flip};
use elfsig_guest::harness::{
    Context, Suite, control, copy_exec, counters_grew, ensure, grew, kernel_log, keyring, read, refused, run, runs,
    stats, wait_for_log_budget, write_control, write_exec,
};
use elfsig_guest::system;

const MODULE: &str = "/elfsig.ko";
const HELLO: &[u8] = b"hello from an elfsig fixture\n";
const LD_SO: &str = "/lib64/ld-linux-x86-64.so.2";
const WORK: &str = "/tmp/work";
/// The CLI and the key pair the kernel trusts, for signing inside the VM.
pub(crate) const ELFSIG: &str = "/bin/elfsig";
pub(crate) const KEY: &str = "/t/keys/kernel.key";
pub(crate) const CERT: &str = "/t/keys/kernel.crt";

/// Signed programs that print a fixed line, and what they print.
fn signed_programs() -> Vec<(String, Vec<u8>)> {
    let mut programs = vec![("/t/signed/hello".to_owned(), HELLO.to_vec())];
    for name in ["cstatic", "cstaticpie", "cdynamic"] {
        let (path, out) = (format!("/t/signed/{name}"), format!("/t/expected/{name}"));
        if let Ok(expected) = std::fs::read(out) {
            programs.push((path, expected));
        }
    }
    programs
}

/// Coreutils programs (dynamically linked) and the arguments they are run with.
const COREUTILS: &[(&str, &[&str])] = &[
    ("ls", &["-l", "/t/scripts"]),
    ("cat", &["/t/manifest"]),
    ("echo", &["elfsig"]),
    ("true", &[]),
    ("uname", &["-s"]),
];

pub(crate) fn manifest(key: &str) -> Result<String, String> {
    let text = std::fs::read_to_string("/t/manifest").context("read manifest")?;
    text.lines()
        .find_map(|l| l.strip_prefix(key).and_then(|rest| rest.strip_prefix(' ')))
        .map(str::to_owned)
        .ok_or_else(|| format!("manifest has no {key}"))
}

fn load(params: &str) -> Result<(), String> {
    system::load_module(std::path::Path::new(MODULE), params).context("load elfsig.ko")
}

/// Runs every case; true when all passed.
pub(crate) fn run_all() -> bool {
    let mut suite = Suite::default();
    let _ = std::fs::create_dir_all(WORK);

    // Without the module everything runs; remember what the coreutils print.
    let mut baseline = Vec::new();
    suite.case("without_module_everything_runs", || {
        runs("/t/unsigned/hello", &[], Some(HELLO))?;
        for (name, args) in COREUTILS {
            let out = run(&format!("/t/signed/{name}"), args).context(name)?;
            ensure(out.status.success(), || format!("{name} failed: {}", out.status))?;
            baseline.push(out.stdout);
        }
        Ok(())
    });

    suite.case("module_loads_enforcing", || {
        load("")?;
        let mode = std::fs::read_to_string(control("mode")).context("read mode")?;
        ensure(mode == "enforce\n", || format!("mode is {mode:?}"))?;
        let log = kernel_log()?;
        ensure(log.iter().any(|l| l.contains("elfsig: enforcing, 1 embedded certificate(s)")), || {
            "no load message in the kernel log".into()
        })
    });

    exec_cases(&mut suite, &baseline);
    tamper_cases(&mut suite);
    change_cases(&mut suite);
    interpreter_cases(&mut suite);
    loader_cases(&mut suite);
    policy_cases(&mut suite);
    lifecycle_cases(&mut suite);
    suite.finish()
}

fn exec_cases(suite: &mut Suite, baseline: &[Vec<u8>]) {
    suite.case("signed_programs_run", || {
        for (path, expected) in signed_programs() {
            runs(&path, &[], Some(&expected))?;
        }
        Ok(())
    });
    suite.case("signed_dynamic_coreutils_run_with_the_same_output", || {
        for ((name, args), expected) in COREUTILS.iter().zip(baseline) {
            runs(&format!("/t/signed/{name}"), args, Some(expected))?;
        }
        Ok(())
    });
    suite.case("signed_by_the_module_key_runs", || runs("/t/module/hello", &[], Some(HELLO)));
    suite.case("unsigned_static_refused", || {
        let before = stats()?;
        refused("/t/unsigned/hello")?;
        counters_grew(&before, &stats()?, &[("unsigned", 1), ("denied", 1), ("allowed", 0)])
    });
    suite.case("unsigned_dynamic_refused", || refused("/t/unsigned/ls"));
    suite.case("unknown_key_refused", || {
        let before = stats()?;
        refused("/t/other/hello")?;
        counters_grew(&before, &stats()?, &[("unknown_key", 1), ("denied", 1)])
    });
    suite.case("refusal_reaches_the_kernel_log", || {
        wait_for_log_budget();
        refused("/t/unsigned/hello")?;
        let log = kernel_log()?;
        ensure(log.iter().any(|l| l.contains("elfsig: refused /t/unsigned/hello: unsigned")), || {
            format!("no refusal line; last lines: {:?}", &log[log.len().saturating_sub(5)..])
        })
    });
}

/// A tampered variant: its case name, its bytes (or why they could not be made), and the counter
/// its refusal must bump.
type Variant = (&'static str, Result<Vec<u8>, String>, &'static str);

/// Tampered copies of a signed file are each refused, for the right reason.
fn tamper_cases(suite: &mut Suite) {
    let source = "/t/signed/cstatic";
    let Ok(signed) = read(source) else {
        suite.case("tamper_setup", || Err(format!("{source} is missing")));
        return;
    };
    let map = match Map::of(&signed) {
        Ok(map) => map,
        Err(e) => {
            suite.case("tamper_setup", || Err(e));
            return;
        }
    };
    let mid = |(offset, size): (usize, usize)| offset + size / 2;
    let payload = map.payload.unwrap_or((0, 0));
    let other = read("/t/signed/cdynamic").ok().and_then(|b| Map::of(&b).ok().map(|m| (b, m)));

    let mut variants: Vec<Variant> = vec![
        ("tampered_elf_header", Ok(flip(&signed, 24)), "modified"),
        ("tampered_program_headers", Ok(flip(&signed, map.phoff + 4)), "modified"),
        ("tampered_code", map.section(".text").map(|s| flip(&signed, mid(s))), "modified"),
        ("tampered_rodata", map.section(".rodata").map(|s| flip(&signed, mid(s))), "modified"),
        ("tampered_data", map.section(".data").map(|s| flip(&signed, mid(s))), "modified"),
        ("tampered_section_headers", Ok(flip(&signed, map.shoff + 64 + 8)), "modified"),
        ("tampered_signature_value", Ok(flip(&signed, payload.0 + payload.1 - 1)), "bad_signature"),
        ("tampered_record_digest", Ok(flip(&signed, payload.0 + 64)), "bad_signature"),
        ("tampered_record_magic", Ok(flip(&signed, payload.0)), "unsigned"),
        ("appended_byte", Ok([&signed[..], b"x"].concat()), "modified"),
        ("truncated_byte", Ok(signed[..signed.len() - 1].to_vec()), "malformed"),
    ];
    if let Some((other_bytes, other_map)) = &other {
        // The other file's signature pasted over this one's (same key, so the same size).
        let moved = other_map.payload().and_then(|(offset, size)| {
            ensure(size == payload.1, || "payloads differ in size".into())?;
            let mut bytes = signed.clone();
            bytes[payload.0..payload.0 + size].copy_from_slice(&other_bytes[offset..offset + size]);
            Ok(bytes)
        });
        variants.push(("signature_moved_from_another_file", moved, "modified"));
    }
    for (name, bytes, reason) in variants {
        suite.case(name, || {
            let bytes = bytes?;
            let path = format!("{WORK}/{name}");
            write_exec(&path, &bytes)?;
            let before = stats()?;
            refused(&path)?;
            counters_grew(&before, &stats()?, &[(reason, 1), ("denied", 1)])
        });
    }
}

/// A signed file changed between execs must be verified again.
fn change_cases(suite: &mut Suite) {
    let path = format!("{WORK}/changing");
    let fresh = || -> Result<(), String> {
        copy_exec("/t/signed/hello", &path)?;
        runs(&path, &[], Some(HELLO))?;
        // The second run is served by the cache.
        let before = stats()?;
        runs(&path, &[], Some(HELLO))?;
        counters_grew(&before, &stats()?, &[("cache_hits", 1), ("cache_misses", 0)])
    };
    suite.case("unchanged_file_is_cached", fresh);
    suite.case("modified_in_place_between_execs_refused", || {
        fresh()?;
        let mut bytes = read(&path)?;
        let at = Map::of(&bytes)?.section(".text")?.0;
        bytes[at] ^= 0xff;
        // Rewrite the same inode, same size.
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .and_then(|mut f| {
                use std::io::{Seek, SeekFrom, Write};
                f.seek(SeekFrom::Start(at as u64))?;
                f.write_all(&bytes[at..at + 1])
            })
            .context("write in place")?;
        refused(&path)
    });
    suite.case("truncated_between_execs_refused", || {
        fresh()?;
        let len = std::fs::metadata(&path).context("stat")?.len();
        std::fs::OpenOptions::new().write(true).open(&path).and_then(|f| f.set_len(len - 1)).context("truncate")?;
        refused(&path)
    });
    suite.case("replaced_by_rename_refused", || {
        fresh()?;
        let unsigned = format!("{WORK}/unsigned-copy");
        copy_exec("/t/unsigned/hello", &unsigned)?;
        std::fs::rename(&unsigned, &path).context("rename")?;
        refused(&path)
    });
    suite.case("signed_in_the_vm_runs_and_removed_is_refused", || {
        copy_exec("/t/unsigned/hello", &path)?;
        refused(&path)?;
        runs(ELFSIG, &["sign", "-q", "--key", KEY, "--cert", CERT, &path], None)?;
        runs(&path, &[], Some(HELLO))?;
        runs(ELFSIG, &["verify", "-q", "--cert", CERT, &path], None)?;
        runs(ELFSIG, &["remove", "-q", &path], None)?;
        refused(&path)?;
        ensure(read(&path)? == read("/t/unsigned/hello")?, || "remove did not restore the unsigned file".into())
    });
    suite.case("restored_file_runs_again", || {
        fresh()?;
        std::fs::OpenOptions::new().write(true).open(&path).and_then(|f| f.set_len(10)).context("truncate")?;
        refused(&path)?;
        write_exec(&path, &read("/t/signed/hello")?)?;
        runs(&path, &[], Some(HELLO))
    });
}

fn interpreter_cases(suite: &mut Suite) {
    suite.case("script_with_signed_interpreter_runs", || {
        runs("/t/scripts/signed-interpreter.sh", &[], Some(b"script ran\n"))
    });
    suite.case("script_with_unsigned_interpreter_refused", || refused("/t/scripts/unsigned-interpreter.sh"));
    suite.case("modified_ld_so_stops_dynamic_programs", || {
        wait_for_log_budget();
        let original = read(LD_SO)?;
        let map = Map::of(&original)?;
        let tampered = flip(&original, map.section(".text")?.0 + 16);
        std::fs::write(LD_SO, &tampered).context("tamper ld.so")?;
        let before = stats()?;
        let result = refused("/t/signed/ls");
        let after = stats()?;
        std::fs::write(LD_SO, &original).context("restore ld.so")?;
        result?;
        counters_grew(&before, &after, &[("modified", 1)])?;
        runs("/t/signed/ls", &["-l", "/t/scripts"], None)?;
        let log = kernel_log()?;
        ensure(log.iter().any(|l| l.contains("ELF interpreter: modified")), || "no interpreter refusal logged".into())
    });
    suite.case("static_programs_unaffected_by_ld_so", || runs("/t/signed/hello", &[], Some(HELLO)));
}

/// Running the dynamic loader directly: it maps the program itself, so the program is never
/// exec'd and never checked. That is allowed by default and refused with `loader` = `deny`.
fn loader_cases(suite: &mut Suite) {
    suite.case("loader_run_directly_runs_unsigned_programs_by_default", || {
        ensure(control_value("loader")? == "allow", || "the loader policy is not allow by default".into())?;
        runs(LD_SO, &["/t/unsigned/ls", "-d", "/t"], Some(b"/t\n"))
    });
    suite.case("deny_loader_refuses_running_the_loader_directly", || {
        write_control("loader", "deny").context("set loader deny")?;
        let before = stats()?;
        let result = (|| {
            refused(LD_SO)?; // cached: ld.so was verified as the interpreter of earlier programs
            write_control("flush", "1").context("flush")?;
            refused(LD_SO)?; // verified afresh
            // Programs still load through it, and static PIE programs are not loaders.
            runs("/t/signed/ls", &["-d", "/t"], Some(b"/t\n"))?;
            runs("/t/signed/cstaticpie", &[], None)?;
            runs("/t/signed/hello", &[], Some(HELLO))
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
        let permissive = runs(LD_SO, &["/t/signed/true"], None);
        let after = stats()?;
        write_control("mode", "enforce").context("set enforce")?;
        write_control("loader", "allow").context("set loader allow")?;
        permissive?;
        counters_grew(&before, &after, &[("loader_exec", 1), ("denied", 0)])?;
        runs(LD_SO, &["/t/signed/true"], None)?;
        ensure(write_control("loader", "sometimes").is_err(), || "a bad loader policy was accepted".into())
    });
}

/// A control file's contents, without the newline.
fn control_value(name: &str) -> Result<String, String> {
    Ok(std::fs::read_to_string(control(name)).context(&format!("read {name}"))?.trim_end().to_owned())
}

fn policy_cases(suite: &mut Suite) {
    suite.case("revoked_binary_refused_cached_or_not", || {
        runs("/t/signed/revokeme", &[], Some(HELLO))?;
        runs("/t/signed/revokeme", &[], Some(HELLO))?;
        let digest = manifest("revoke_digest")?;
        let signature = read("/t/revoke.p7")?;
        let serial = keyring(".blacklist")?;
        system::add_key("blacklist", &format!("bin:{digest}"), &signature, serial).context("add blacklist key")?;
        let before = stats()?;
        refused("/t/signed/revokeme")?;
        counters_grew(&before, &stats()?, &[("revoked", 1), ("cache_hits", 1)])?;
        // And when verified afresh.
        write_control("flush", "1").context("flush")?;
        let before = stats()?;
        refused("/t/signed/revokeme")?;
        counters_grew(&before, &stats()?, &[("revoked", 1), ("cache_misses", 1)])?;
        runs("/t/signed/hello", &[], Some(HELLO))
    });
    suite.case("key_added_to_the_secondary_keyring_is_trusted_until_removed", || {
        refused("/t/added/hello")?;
        let secondary = keyring(".secondary_trusted_keys")?;
        let key = system::add_key("asymmetric", "", &read("/t/added.der")?, secondary).context("add the key")?;
        let result = runs("/t/added/hello", &[], Some(HELLO));
        system::unlink_key(key, secondary).context("remove the key")?;
        result?;
        // Removing a key takes effect for cached verdicts at the next flush (kmod/README.md).
        write_control("flush", "1").context("flush")?;
        refused("/t/added/hello")
    });
    suite.case("permissive_mode_logs_and_allows", || {
        wait_for_log_budget();
        write_control("mode", "permissive").context("set permissive")?;
        let before = stats()?;
        let result = runs("/t/unsigned/hello", &[], Some(HELLO));
        let after = stats()?;
        write_control("mode", "enforce").context("set enforce")?;
        result?;
        counters_grew(&before, &after, &[("unsigned", 1), ("allowed", 1), ("denied", 0)])?;
        let log = kernel_log()?;
        ensure(log.iter().any(|l| l.contains("would refuse (permissive) /t/unsigned/hello: unsigned")), || {
            "no permissive line in the kernel log".into()
        })?;
        refused("/t/unsigned/hello")
    });
    suite.case("counters_match_a_known_sequence", || {
        write_control("flush", "1").context("flush")?;
        let before = stats()?;
        runs("/t/signed/hello", &[], Some(HELLO))?; // miss
        runs("/t/signed/hello", &[], Some(HELLO))?; // hit
        refused("/t/unsigned/hello")?; // miss
        runs("/t/signed/true", &[], None)?; // miss, and ld.so: miss
        let after = stats()?;
        counters_grew(
            &before,
            &after,
            &[("checked", 5), ("allowed", 3), ("denied", 1), ("unsigned", 1), ("cache_hits", 1), ("cache_misses", 4)],
        )?;
        let hashed = grew(&before, &after, "bytes_hashed");
        ensure(hashed > 0, || "nothing hashed".into())
    });
    suite.case("writing_control_files_is_checked", || {
        ensure(write_control("mode", "sometimes").is_err(), || "bad mode accepted".into())?;
        ensure(write_control("lock", "0").is_ok(), || "unlocking an unlocked module failed".into())?;
        ensure(write_control("stats", "0").is_err(), || "stats accepted a write".into())
    });
    suite.case("concurrent_execs", || {
        let threads: Vec<_> = (0..8)
            .map(|i| {
                std::thread::spawn(move || -> Result<(), String> {
                    for _ in 0..10 {
                        if i % 2 == 0 {
                            runs("/t/signed/hello", &[], Some(HELLO))?
                        } else {
                            refused("/t/unsigned/hello")?
                        }
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

fn lifecycle_cases(suite: &mut Suite) {
    suite.case("unload_allows_everything", || {
        system::unload_module("elfsig").context("unload")?;
        ensure(!std::path::Path::new(&control("mode")).exists(), || "control files left behind".into())?;
        runs("/t/unsigned/hello", &[], Some(HELLO))
    });
    suite.case("reload_refuses_again", || {
        load("")?;
        refused("/t/unsigned/hello")?;
        runs("/t/signed/hello", &[], Some(HELLO))
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
        runs("/t/unsigned/hello", &[], Some(HELLO))?;
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
                        runs("/t/signed/hello", &[], Some(HELLO))?;
                        runs("/t/signed/true", &[], None)?;
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
        refused("/t/unsigned/hello")
    });
    suite.case("lock_holds_until_reboot", || {
        write_control("loader", "deny").context("set loader deny")?;
        write_control("lock", "1").context("lock")?;
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
        let allow = write_control("loader", "allow");
        ensure(allow.as_ref().is_err_and(|e| e.raw_os_error() == Some(libc::EPERM)), || {
            format!("allowing the loader while locked gave {allow:?}")
        })?;
        refused(LD_SO)?;
        refused("/t/unsigned/hello")?;
        runs("/t/signed/hello", &[], Some(HELLO))
    });
}
