//! The mapping guard's cases: every file mapped executable is verified as a program would be
//! (shared libraries however they are found, `LD_PRELOAD`, `dlopen`, `ld.so ./program`), and a
//! file mapping cannot be made executable. The guard is attached at the start of the suite
//! ([`attach_case`]), so every other case of the suite runs under it too.

use elfsig_fixtures::{GUARD_LIBRARY_LOADED, GUARD_USER_OUTPUT};
use elfsig_guest::harness::{
    Context, Outcome, Suite, control, copy_exec, counters_grew, ensure, grew, kernel_log, keyring, read, refused, runs,
    stats, wait_for_log_budget, write_control, write_exec,
};
use elfsig_guest::image::{
    BASH, GUARD, GUARD_PROBE, GUARD_RUNPATH, GUARD_USER, HELLO_OUTPUT, HELLO_UNSIGNED, LD_SO, LIB_OTHER_KEY,
    LIB_REVOCATION, LIB_REVOKED, LIB_SIGNED, LIB_UNSIGNED, LS_UNSIGNED, MODULE, MODULE_FOREIGN_BTF_IDS, MODULE_NO_BTF,
    PYTHON, REVOCATION, REVOKEME, SIGNED,
};
use elfsig_guest::system;

use crate::guard_control::{attach_alone, status as guard_status};
use crate::guard_sealed::FTRACE_ENABLED;
use crate::mapping_checks::{dlopen_loads, dlopen_refused, library, mapping_refused, run_with, shown};
use crate::tamper::{self, Map, flip};
use crate::{manifest, policy_files};

const WORK: &str = "/tmp/work/mapping";

/// Writes to the `guard` control file that must each be refused with `EINVAL` and leave the
/// guard `status` as it was: no descriptors, too few or too many, descriptors that are no BPF
/// links (this process's standard input and output), words that are no descriptors, unknown
/// commands.
fn bad_guard_writes_change_nothing(status: &str) -> Outcome {
    for bad in [
        "attach",
        "attach 0",
        "attach 0 1",
        "attach 0 1 2",
        "attach 0 1 2 3",
        "attach 0 1 2 3 4",
        "attach 0 1 2 3 4 5",
        "attach x y z",
        "attach -1 -2 -3",
        "detach",
    ] {
        let result = write_control("guard", bad);
        ensure(result.as_ref().is_err_and(|e| e.raw_os_error() == Some(libc::EINVAL)), || {
            format!("writing {bad:?} to guard gave {result:?}, expected EINVAL")
        })?;
        ensure(guard_status()? == status, || format!("the guard is {:?} after writing {bad:?}", guard_status()))?;
    }
    Ok(())
}

/// With ftrace switched off, the module refuses the links elfsig-guard hands it (their
/// trampolines would not run), elfsig-guard says why, and the guard stays detached. Switching
/// ftrace off is safe here only because no BPF link is being freed meanwhile (a link freed
/// while it is off leaves ftrace's records with stale flags, which 7.2 answers by killing
/// ftrace): none is held yet, and elfsig-guard's own go as it exits, ftrace still off.
fn refused_while_ftrace_is_off() -> Outcome {
    std::fs::write(FTRACE_ENABLED, "0").context("switch ftrace off")?;
    let out = run_with(GUARD, &[], &[]);
    std::fs::write(FTRACE_ENABLED, "1").context("switch ftrace back on")?;
    let out = out?;
    let said = String::from_utf8_lossy(&out.stderr);
    ensure(!out.status.success() && said.contains("ftrace is switched off"), || {
        format!("elfsig-guard with ftrace off exited {} saying {said:?}", out.status)
    })?;
    ensure(guard_status()? == "detached", || {
        format!("the guard is {:?} after elfsig-guard with ftrace off", guard_status())
    })
}

/// The case that attaches the guard, early in the suite.
pub(crate) fn attach_case(suite: &mut Suite<'_>) {
    suite.case("mapping_guard_attaches_and_proves_itself", || {
        ensure(guard_status()? == "detached", || format!("the guard is {:?} before elfsig-guard", guard_status()))?;
        refused_while_ftrace_is_off()?;
        attach_alone()?;
        // Running it again changes nothing; a descriptor that is no BPF link is refused.
        runs(GUARD, &[], Some(b"elfsig-guard: the mapping guard is active already\n"))?;
        bad_guard_writes_change_nothing("active")?;
        let status = run_with(GUARD, &["status"], &[])?;
        ensure(status.stdout == b"active\n", || {
            format!("elfsig-guard status said {:?}", String::from_utf8_lossy(&status.stdout))
        })
    });
}

/// Runs the guard's test program with its library found through `env`; checks that it ran with
/// the library, or that the library was refused with `reason`.
fn user_runs(env: &[(&str, &str)]) -> Outcome {
    let out = run_with(GUARD_USER, &[], env)?;
    ensure(out.status.success() && out.stdout == GUARD_USER_OUTPUT, || {
        format!(
            "{GUARD_USER} with {env:?} exited {} printing {} ({})",
            out.status,
            shown(&out.stdout),
            shown(&out.stderr)
        )
    })
}

/// Every case but the attaching one, in the order they run.
pub(crate) fn cases(suite: &mut Suite<'_>) {
    let _ = std::fs::create_dir_all(WORK);
    suite.case("no_one_gets_a_descriptor_for_the_guards_programs", crate::guard_sealed::holds);
    suite.case("root_cannot_switch_ftrace_off_under_the_guard", || {
        crate::guard_sealed::ftrace_stays_on()?;
        mapping_refused(GUARD_USER, &[], &[("LD_LIBRARY_PATH", LIB_UNSIGNED)], "unsigned")
    });
    suite.case("signed_library_loads_through_ld_library_path", || {
        let before = stats()?;
        user_runs(&[("LD_LIBRARY_PATH", LIB_SIGNED)])?;
        let after = stats()?;
        ensure(grew(&before, &after, "mmap_checked") >= 3, || {
            "the program, ld.so and its libraries were not all checked".into()
        })?;
        counters_grew(&before, &after, &[("mmap_denied", 0)])
    });
    suite.case("unsigned_library_through_ld_library_path_refused", || {
        mapping_refused(GUARD_USER, &[], &[("LD_LIBRARY_PATH", LIB_UNSIGNED)], "unsigned")?;
        let log = kernel_log()?;
        let line = format!("elfsig: refused mmap of {}: unsigned", library(LIB_UNSIGNED));
        ensure(log.iter().any(|l| l.contains(&line)), || format!("no {line:?} in the kernel log"))
    });
    suite.case("unsigned_library_through_runpath_refused", || {
        std::fs::create_dir_all(GUARD_RUNPATH).context("create the runpath")?;
        copy_exec(&library(LIB_UNSIGNED), &library(GUARD_RUNPATH))?;
        let refused = mapping_refused(GUARD_USER, &[], &[], "unsigned");
        copy_exec(&library(LIB_SIGNED), &library(GUARD_RUNPATH))?;
        refused?;
        user_runs(&[])
    });
    suite.case("modified_libc_through_ld_library_path_refused", || {
        let libc = "/lib/x86_64-linux-gnu/libc.so.6";
        let original = read(libc)?;
        let at = Map::of(&original)?.section(".rodata")?.0 + 64;
        let dir = format!("{WORK}/libc");
        std::fs::create_dir_all(&dir).context("create dir")?;
        write_exec(&format!("{dir}/libc.so.6"), &flip(&original, at))?;
        mapping_refused(&format!("{SIGNED}/ls"), &["-d", "/t"], &[("LD_LIBRARY_PATH", &dir)], "modified")
    });
    suite.case("unsigned_ld_preload_refused", || {
        // ld.so skips a preload it cannot map and runs the program without it.
        let before = stats()?;
        let out = run_with(&format!("{SIGNED}/echo"), &["ran"], &[("LD_PRELOAD", &library(LIB_UNSIGNED))])?;
        let after = stats()?;
        ensure(out.stdout == b"ran\n", || format!("echo printed {:?}", String::from_utf8_lossy(&out.stdout)))?;
        ensure(String::from_utf8_lossy(&out.stderr).contains("cannot be preloaded"), || {
            format!("ld.so said {:?}", String::from_utf8_lossy(&out.stderr))
        })?;
        counters_grew(&before, &after, &[("unsigned", 1), ("mmap_denied", 1)])?;
        let signed = run_with(&format!("{SIGNED}/echo"), &["ran"], &[("LD_PRELOAD", &library(LIB_SIGNED))])?;
        let expected = [GUARD_LIBRARY_LOADED, b"ran\n"].concat();
        ensure(signed.stdout == expected, || {
            format!("with a signed preload: {:?}", String::from_utf8_lossy(&signed.stdout))
        })
    });
    suite.case("dlopen_of_unsigned_library_refused", || {
        dlopen_loads(&library(LIB_SIGNED))?;
        dlopen_refused(&library(LIB_UNSIGNED), "unsigned")
    });
    suite.case("library_signed_by_an_unknown_key_refused", || dlopen_refused(&library(LIB_OTHER_KEY), "unknown_key"));
    library_tamper_cases(suite);
    // On a distribution's kernel, through a signed policy (see revoked_binary_refused_cached_or_not).
    suite.case("revoked_library_refused", || {
        dlopen_loads(&library(LIB_REVOKED))?;
        if elfsig_guest::on_distro_kernel() {
            policy_files::apply("revoked-library", &["--serial", "1", "--revoke", &library(LIB_REVOKED)])?;
            dlopen_refused(&library(LIB_REVOKED), "revoked")?;
            return policy_files::clear();
        }
        let digest = manifest::value("revoke_lib_digest")?;
        let signature = read(LIB_REVOCATION)?;
        let serial = keyring(".blacklist")?;
        system::add_key("blacklist", &format!("bin:{digest}"), &signature, serial).context("add blacklist key")?;
        dlopen_refused(&library(LIB_REVOKED), "revoked")
    });
    suite.case("library_changed_in_place_is_seen", || {
        let dir = format!("{WORK}/changing");
        std::fs::create_dir_all(&dir).context("create dir")?;
        let path = library(&dir);
        let original = read(library(LIB_SIGNED))?;
        write_exec(&path, &original)?;
        dlopen_loads(&path)?;
        let before = stats()?;
        dlopen_loads(&path)?;
        counters_grew(&before, &stats()?, &[("mmap_denied", 0), ("cache_misses", 0)])?;
        let at = Map::of(&original)?.section(".text")?.0 + 8;
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .and_then(|mut f| {
                use std::io::{Seek, SeekFrom, Write};
                f.seek(SeekFrom::Start(at as u64))?;
                f.write_all(&[original[at] ^ 0xff])
            })
            .context("write in place")?;
        dlopen_refused(&path, "modified")
    });
    suite.case("loader_run_directly_cannot_map_an_unsigned_program", || {
        ensure(std::fs::read_to_string(control("loader")).context("read loader")? == "allow\n", || {
            "the loader policy is not allow by default".into()
        })?;
        mapping_refused(LD_SO, &[LS_UNSIGNED, "-d", "/t"], &[], "unsigned")?;
        runs(LD_SO, &[&format!("{SIGNED}/ls"), "-d", "/t"], Some(b"/t\n"))
    });
    suite.case("mapping_an_unsigned_file_executable_refused", || {
        mapping_refused(GUARD_PROBE, &["mmap", HELLO_UNSIGNED], &[], "unsigned")?;
        runs(GUARD_PROBE, &["mmap", &format!("{SIGNED}/hello")], Some(b"mmap: ok\n"))
    });
    suite.case("mprotect_making_a_file_mapping_executable_refused", || {
        mapping_refused(GUARD_PROBE, &["mprotect", HELLO_UNSIGNED], &[], "made_executable")?;
        // Signed or not: the file cannot be verified where mprotect is decided.
        mapping_refused(GUARD_PROBE, &["mprotect", &format!("{SIGNED}/hello")], &[], "made_executable")?;
        // Anonymous memory made executable is refused too, without the jit entitlement
        // (runtime.rs has the rest of that rule).
        let before = stats()?;
        let out = elfsig_guest::harness::run(GUARD_PROBE, &["anon"]).context("run guard-probe anon")?;
        ensure(out.status.code() == Some(1) && out.stdout == b"anon: Permission denied\n", || {
            format!("guard-probe anon exited {} printing {:?}", out.status, String::from_utf8_lossy(&out.stdout))
        })?;
        counters_grew(&before, &stats()?, &[("needs_jit", 1), ("memory_denied", 1), ("mmap_denied", 0)])
    });
    suite.case("real_software_runs_under_the_guard", || {
        runs(BASH, &["-c", "echo $((6 * 7))"], Some(b"42\n"))?;
        // Python imports its C extension _ctypes, and loads the library through it.
        let script = |dir: &str| format!("import ctypes; ctypes.CDLL('{}').elfsig_guard_hello()", library(dir));
        runs(PYTHON, &["-B", "-S", "-c", &script(LIB_SIGNED)], Some(GUARD_USER_OUTPUT))?;
        mapping_refused(PYTHON, &["-B", "-S", "-c", &script(LIB_UNSIGNED)], &[], "unsigned")
    });
    suite.case("permissive_mode_logs_and_allows_mappings", || {
        wait_for_log_budget();
        write_control("mode", "permissive").context("set permissive")?;
        let before = stats()?;
        let result = dlopen_loads(&library(LIB_UNSIGNED));
        let after = stats()?;
        write_control("mode", "enforce").context("set enforce")?;
        result?;
        counters_grew(&before, &after, &[("unsigned", 1), ("mmap_denied", 0)])?;
        let log = kernel_log()?;
        let line = format!("would refuse (permissive) mmap of {}: unsigned", library(LIB_UNSIGNED));
        ensure(log.iter().any(|l| l.contains(&line)), || format!("no {line:?} in the kernel log"))?;
        dlopen_refused(&library(LIB_UNSIGNED), "unsigned")
    });
    // The write refusal a mapping's check keeps is enforcement too: in permissive mode it ends
    // with the check, and a writer of a file mapped executable is logged and let through.
    suite.case("permissive_mode_logs_and_allows_writers_of_mapped_files", || {
        let path = "/tmp/permissive-mapped.so";
        write_exec(path, &read(library(LIB_SIGNED))?)?;
        write_control("mode", "permissive").context("set permissive")?;
        let before = stats()?;
        let result = (|| {
            let file = std::fs::File::open(path).context("open the library")?;
            let mapping = system::map(&file, 4096, libc::PROT_READ | libc::PROT_EXEC, libc::MAP_PRIVATE)
                .context("map the signed library executable")?;
            drop(file);
            let opened = std::fs::File::options().write(true).open(path).map(drop);
            let after = stats()?;
            drop(mapping);
            opened.context("open the mapped library for writing in permissive mode")?;
            let held = |s: &elfsig_guest::harness::Stats| s.get("mapped_writes_held").copied().unwrap_or(0);
            ensure(held(&after) <= held(&before), || "permissive mode kept a write refusal".into())?;
            counters_grew(&before, &after, &[("writes_refused", 1), ("mmap_denied", 0)])
        })();
        write_control("mode", "enforce").context("set enforce")?;
        result?;
        std::fs::remove_file(path).context("remove the library")
    });
}

/// Tampered copies of the signed library are each refused when mapped, for the reason the same
/// tampering of a program gets.
fn library_tamper_cases(suite: &mut Suite<'_>) {
    let variants = match tamper::variants(&library(LIB_SIGNED), &library(LIB_REVOKED)) {
        Ok(variants) => variants,
        Err(e) => {
            suite.case("library_tamper_setup", move || Err(e));
            return;
        }
    };
    for (name, bytes, reason) in variants {
        suite.case(format!("library_{name}"), move || {
            let bytes = bytes?;
            let dir = format!("{WORK}/{name}");
            std::fs::create_dir_all(&dir).context("create dir")?;
            write_exec(&library(&dir), &bytes)?;
            dlopen_refused(&library(&dir), reason)
        });
    }
}

/// Releasing the guard: the module holds it (and the programs hold the module) until then.
pub(crate) fn release_case(suite: &mut Suite<'_>) {
    suite.case("the_guard_holds_the_module_until_released", || {
        let busy = system::unload_module("elfsig");
        ensure(busy.as_ref().is_err_and(|e| e.kind() == std::io::ErrorKind::WouldBlock), || {
            format!("unloading with the guard attached gave {busy:?}, expected EWOULDBLOCK")
        })?;
        write_control("guard", "release").context("release")?;
        ensure(guard_status()? == "detached", || format!("the guard is {:?} after release", guard_status()))?;
        bad_guard_writes_change_nothing("detached")?;
        // Attached again to the same module, which keeps ftrace on all along.
        attach_alone()?;
        crate::guard_sealed::ftrace_stays_on()?;
        write_control("guard", "release").context("release again")?;
        // Without the guard, only execs are checked: the loader maps what it is given.
        runs(LD_SO, &[LS_UNSIGNED, "-d", "/t"], Some(b"/t\n"))?;
        // Released, the module still keeps ftrace on (the released links go in a worker); once
        // it is unloaded, ftrace may be switched off again.
        crate::guard_sealed::ftrace_stays_on()?;
        elfsig_guest::harness::unload_when_idle("elfsig")?;
        std::fs::write(FTRACE_ENABLED, "0").context("switch ftrace off once the module is unloaded")?;
        std::fs::write(FTRACE_ENABLED, "1").context("switch ftrace back on")?;
        system::load_module(std::path::Path::new(MODULE), "").context("reload")?;
        ensure(guard_status()? == "detached", || format!("a reloaded module's guard is {:?}", guard_status()))
    });
}

/// A module without BTF cannot offer its kfuncs: `require_mmap_guard=1` refuses to load it;
/// without that it loads, says once why the guard is off, shows it in `guard` and `stats`, and
/// still checks every exec; `elfsig-guard` says the kernel cannot run the guard.
pub(crate) fn unavailable_case(suite: &mut Suite<'_>) {
    suite.case("without_module_btf_the_guard_is_unavailable_and_execs_are_still_checked", || {
        system::unload_module("elfsig").context("unload")?;
        let no_btf = std::path::Path::new(MODULE_NO_BTF);
        let logged_before = kernel_log()?.len();
        let required = system::load_module(no_btf, "require_mmap_guard=1");
        ensure(required.as_ref().is_err_and(|e| e.raw_os_error() == Some(libc::ENODEV)), || {
            format!("require_mmap_guard=1 without module BTF gave {required:?}, expected ENODEV")
        })?;
        system::load_module(no_btf, "").context("load without BTF")?;
        let checks = (|| {
            let status = guard_status()?;
            ensure(status.starts_with("unavailable: the module has no BTF"), || format!("the guard is {status:?}"))?;
            ensure(stats()?.get("mmap_guard_active") == Some(&0), || "stats do not say the guard is off".into())?;
            let out = run_with(GUARD, &[], &[])?;
            let stderr = String::from_utf8_lossy(&out.stderr);
            ensure(!out.status.success() && stderr.contains("the kernel cannot run the mapping guard"), || {
                format!("elfsig-guard without BTF exited {} saying {stderr:?}", out.status)
            })?;
            refused(HELLO_UNSIGNED)?;
            runs(&format!("{SIGNED}/hello"), &[], Some(HELLO_OUTPUT))?;
            let log = kernel_log()?;
            let said: Vec<&String> =
                log.iter().skip(logged_before).filter(|l| l.contains("the mapping guard is unavailable")).collect();
            ensure(
                said.len() == 2
                    && said[0].contains("require_mmap_guard=1 refuses to load")
                    && said[1].contains("only execs are checked"),
                || format!("the kernel log said {said:?}"),
            )
        })();
        system::unload_module("elfsig").context("unload the module without BTF")?;
        system::load_module(std::path::Path::new(MODULE), "").context("reload")?;
        checks
    });
}

/// A module whose BTF names its kfuncs' argument types by IDs this kernel gives to other types
/// (as one built for another build of the kernel would): its kfunc filter refuses every kfunc,
/// so `elfsig-guard` loads no program and attaches nothing (its own check of the filter passes:
/// the foreign call is refused too), the kernel's log says why, and execs are still checked.
pub(crate) fn foreign_btf_ids_case(suite: &mut Suite<'_>) {
    suite.case("a_module_whose_btf_ids_are_another_kernels_lets_no_program_call_its_kfuncs", || {
        system::unload_module("elfsig").context("unload")?;
        let logged_before = kernel_log()?.len();
        system::load_module(std::path::Path::new(MODULE_FOREIGN_BTF_IDS), "").context("load with foreign IDs")?;
        let checks = (|| {
            let out = run_with(GUARD, &[], &[])?;
            let stderr = String::from_utf8_lossy(&out.stderr);
            ensure(
                !out.status.success()
                    && stderr.contains("the kernel refused the program for")
                    && stderr.contains("is not allowed"),
                || format!("elfsig-guard with foreign BTF IDs exited {} saying {stderr:?}", out.status),
            )?;
            ensure(guard_status()? == "detached", || format!("the guard is {:?}", guard_status()))?;
            refused(HELLO_UNSIGNED)?;
            runs(&format!("{SIGNED}/hello"), &[], Some(HELLO_OUTPUT))?;
            let log = kernel_log()?;
            ensure(
                log.iter().skip(logged_before).any(|l| l.contains("BTF was made for another build of the kernel")),
                || format!("the kernel log since the load: {:?}", &log[logged_before.min(log.len())..]),
            )
        })();
        system::unload_module("elfsig").context("unload the module with foreign IDs")?;
        system::load_module(std::path::Path::new(MODULE), "").context("reload")?;
        checks
    });
}

/// The suite of a boot with `bpf` left out of the active LSMs (`lsm=integrity`): the module
/// loads (it cannot tell, even with `require_mmap_guard=1`), `elfsig-guard` refuses to attach
/// and says why, and execs are still checked while mappings are not.
pub(crate) fn without_bpf_lsm() -> bool {
    let mut suite = Suite::default();
    suite.case("bpf_is_not_an_active_lsm", || {
        let lsms = std::fs::read_to_string("/sys/kernel/security/lsm").context("read the LSM list")?;
        ensure(!lsms.split(',').any(|l| l == "bpf"), || format!("the active LSMs are {lsms:?}"))
    });
    suite.case("elfsig_guard_refuses_to_attach_a_guard_that_would_never_run", || {
        system::load_module(std::path::Path::new(MODULE), "require_mmap_guard=1").context("load")?;
        let out = run_with(GUARD, &[], &[])?;
        let stderr = String::from_utf8_lossy(&out.stderr);
        ensure(!out.status.success() && stderr.contains("bpf is not among the kernel's active LSMs"), || {
            format!("elfsig-guard exited {} saying {stderr:?}", out.status)
        })?;
        ensure(guard_status()? == "detached", || format!("the guard is {:?}", guard_status()))?;
        ensure(stats()?.get("mmap_guard_active") == Some(&0), || "stats do not say the guard is off".into())
    });
    suite.case("execs_are_still_checked_and_mappings_are_not", || {
        refused(HELLO_UNSIGNED)?;
        runs(&format!("{SIGNED}/hello"), &[], Some(HELLO_OUTPUT))?;
        runs(GUARD_PROBE, &["mmap", HELLO_UNSIGNED], Some(b"mmap: ok\n"))
    });
    // Without the guard's key hook, nothing flushes the cache on a revocation: every hit looks
    // the digest up in `.blacklist`.
    suite.case("a_cached_verdict_is_checked_against_revocations", || {
        runs(REVOKEME, &[], Some(HELLO_OUTPUT))?;
        runs(REVOKEME, &[], Some(HELLO_OUTPUT))?;
        let digest = manifest::value("revoke_digest")?;
        let blacklist = keyring(".blacklist")?;
        system::add_key("blacklist", &format!("bin:{digest}"), &read(REVOCATION)?, blacklist).context("revoke")?;
        let before = stats()?;
        refused(REVOKEME)?;
        counters_grew(&before, &stats()?, &[("revoked", 1), ("cache_hits", 1), ("cache_misses", 0)])
    });
    suite.run("elfsig: the mapping guard without the BPF LSM")
}
