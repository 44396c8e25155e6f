//! Interpreters: a script's, a dynamic program's (`ld.so`), and `ld.so` run directly, which the
//! `loader` policy can refuse.

use elfsig_guest::harness::{
    Context, Outcome, Suite, control_value, counters_grew, ensure, kernel_log, read, refused, runs, stats,
    wait_for_log_budget, write_control, write_exec,
};
use elfsig_guest::image::{
    self, CDYNAMIC_STRESS_INTERPRETER, HELLO_OUTPUT as HELLO, LD_SO, LS_UNSIGNED, SCRIPT_SIGNED_INTERPRETER,
    SCRIPT_UNSIGNED_INTERPRETER, SCRIPTS, SIGNED, STRESS_INTERPRETER,
};
use elfsig_guest::system;

use crate::tamper::{Map, flip};
use crate::unprivileged::{vfat_mount, vfat_mounted};

/// The interpreters' cases, then the loader policy's.
pub(crate) fn cases(suite: &mut Suite<'_>) {
    interpreter_cases(suite);
    loader_cases(suite);
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
    beside_cases(suite);
}

/// The checks the module hands to other CPUs, and the same verdicts either way: run in every
/// suite (with one CPU, nothing is handed over), and alone in a guest of two vCPUs
/// (`cases::run_beside`), where everything is.
pub(crate) fn beside_cases(suite: &mut Suite<'_>) {
    suite.case("signatures_checked_beside_the_hashing_with_the_same_verdicts", signature_beside);
    suite.case("first_exec_checks_ld_so_on_another_cpu_with_the_same_verdicts", interpreter_ahead);
    suite.case("ld_so_not_in_the_page_cache_checked_after_the_program", interpreter_not_resident);
}

/// Whether the guest has the two CPUs the cases of work on other CPUs need to mean anything.
pub(crate) fn two_cpus_online() -> Outcome {
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").context("read the online CPUs")?;
    ensure(ahead_per_first_exec() == 1, || format!("CPUs online: {}; this suite needs two", online.trim()))
}

/// Interpreters checked on another CPU per first exec of a dynamic program: one with more than
/// one CPU online, none with one (the module then checks it after the program, in the task).
fn ahead_per_first_exec() -> u64 {
    u64::from(std::thread::available_parallelism().map_or(1, |n| n.get()) > 1)
}

/// With more than one CPU, a file the cache missed has its signature checked on another CPU
/// while the task hashes it (`signatures_beside`), with the verdicts of a check made first: a
/// signed program runs, one signed by a key the kernel does not trust is refused as such, a
/// modified one as modified.
fn signature_beside() -> Outcome {
    let beside = ahead_per_first_exec();
    let verified = |program: &str, expected: &[(&str, u64)], exec: &dyn Fn(&str) -> Outcome| -> Outcome {
        write_control("flush", "1").context("flush")?;
        let before = stats()?;
        let outcome = exec(program);
        let after = stats()?;
        outcome?;
        counters_grew(&before, &after, expected)
    };
    verified(image::HELLO, &[("signatures_beside", beside), ("denied", 0)], &|p| runs(p, &[], Some(HELLO)))?;
    verified(image::HELLO_OTHER_KEY, &[("signatures_beside", beside), ("unknown_key", 1)], &|p| refused(p))?;
    let modified = "/tmp/cstatic-modified";
    let bytes = read(format!("{SIGNED}/cstatic"))?;
    let map = Map::of(&bytes)?;
    write_exec(modified, &flip(&bytes, map.section(".text")?.0 + 64))?;
    let outcome = verified(modified, &[("signatures_beside", beside), ("modified", 1)], &|p| refused(p));
    let _ = std::fs::remove_file(modified);
    outcome
}

/// When the cache holds neither a program nor ld.so, the module checks ld.so on another CPU
/// while it verifies the program (`interpreters_ahead`), with the verdicts it gives in the
/// task: a signed pair runs, a modified ld.so is refused as the interpreter, an unsigned
/// program is refused as itself; a cached pair needs nothing ahead.
fn interpreter_ahead() -> Outcome {
    let ahead = ahead_per_first_exec();
    let ls = format!("{SIGNED}/ls");
    let first_exec = |expected: &[(&str, u64)], exec: &dyn Fn() -> Outcome| -> Outcome {
        write_control("flush", "1").context("flush")?;
        let before = stats()?;
        let outcome = exec();
        let after = stats()?;
        outcome?;
        counters_grew(&before, &after, expected)
    };
    first_exec(&[("interpreters_ahead", ahead), ("denied", 0)], &|| runs(&ls, &["-d", "/t"], Some(b"/t\n")))?;
    let before = stats()?;
    runs(&ls, &["-d", "/t"], Some(b"/t\n"))?;
    counters_grew(&before, &stats()?, &[("interpreters_ahead", 0), ("cache_misses", 0)])?;
    first_exec(&[("interpreters_ahead", ahead), ("unsigned", 1), ("denied", 1)], &|| refused(LS_UNSIGNED))?;
    wait_for_log_budget();
    let original = read(LD_SO)?;
    let map = Map::of(&original)?;
    let tampered = flip(&original, map.section(".text")?.0 + 64);
    std::fs::write(LD_SO, &tampered).context("tamper ld.so")?;
    let refusal = first_exec(&[("interpreters_ahead", ahead), ("modified", 1), ("denied", 1)], &|| refused(&ls));
    std::fs::write(LD_SO, &original).context("restore ld.so")?;
    refusal?;
    runs(&ls, &["-d", "/t"], Some(b"/t\n"))
}

/// An interpreter whose bytes are not all in the page cache (on vfat, mounted again) is checked
/// in the task after the program, never on a worker, which would read it in charged to no one
/// who asked; once read in, it is checked ahead like any other.
fn interpreter_not_resident() -> Outcome {
    let dir = "/tmp/ahead";
    std::fs::create_dir_all(dir).context("create the directory")?;
    let (image, mnt) = (format!("{dir}/vfat.img"), format!("{dir}/mnt"));
    let device = vfat_mounted(&image, 8, &mnt, "umask=022")?;
    let interpreter = format!("{mnt}/ld.so");
    let outcome = (|| {
        write_exec(&interpreter, &read(LD_SO)?)?;
        if let Some(parent) = std::path::Path::new(STRESS_INTERPRETER).parent() {
            std::fs::create_dir_all(parent).context("create the interpreter's directory")?;
        }
        let _ = std::fs::remove_file(STRESS_INTERPRETER);
        std::os::unix::fs::symlink(&interpreter, STRESS_INTERPRETER).context("link the interpreter")?;
        for (remount, ahead) in [(true, 0), (false, ahead_per_first_exec())] {
            if remount {
                system::unmount(&mnt).context("unmount vfat")?;
                vfat_mount(&device, &mnt, "umask=022")?;
            }
            write_control("flush", "1").context("flush")?;
            let before = stats()?;
            runs(CDYNAMIC_STRESS_INTERPRETER, &[], None)?;
            counters_grew(&before, &stats()?, &[("interpreters_ahead", ahead), ("denied", 0)])?;
        }
        Ok(())
    })();
    let _ = std::fs::remove_file(STRESS_INTERPRETER);
    let _ = system::unmount(&mnt);
    let _ = system::loop_detach(&device);
    let _ = std::fs::remove_file(&image);
    outcome
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
