//! The module's life over the suite: loaded at its start (after the filesystems' modules a
//! distribution's kernel needs), then at its end unloaded and reloaded, by parameters too, and
//! locked.

use elfsig_guest::harness::{
    Context, Outcome, Suite, control, control_value, counters_grew, ensure, grew, kernel_log, refused, runs, stats,
    write_control,
};
use elfsig_guest::image::{self, HELLO_OUTPUT as HELLO, HELLO_UNSIGNED, LD_SO, MODULE, SIGNED};
use elfsig_guest::system;

use crate::{guard_control, locked};

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

/// The filesystems' modules loaded, then this module: enforcing, with its keyring, and saying
/// nothing of it.
pub(crate) fn load_cases(suite: &mut Suite<'_>) {
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
}

/// Runs `work` with the wall clock set `back`, then sets it forward again by as much (plus
/// the time `work` took, which the clock counted).
fn with_clock_set_back(back: i64, work: impl FnOnce() -> Outcome) -> Outcome {
    system::step_clock(-back).context("set the clock back")?;
    let result = work();
    system::step_clock(back).context("set the clock forward again")?;
    result
}

/// Unloading and reloading the module, by parameters too, and with execs in flight.
pub(crate) fn cases(suite: &mut Suite<'_>) {
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
    suite.case("trust_initramfs_runs_only_the_initramfs_files_unchanged_since_the_load", || {
        system::unload_module("elfsig").context("unload")?;
        // This suite runs from the initramfs (the initial root file system), as the boot hooks
        // do: an unsigned program the kernel unpacked, one the initramfs wrote before the load,
        // and the same on another file system and written after the load.
        let before = "/t/unsigned/hello-written-before-the-load";
        let elsewhere = "/tmp/hello-unsigned-before-the-load";
        let after = "/t/unsigned/hello-written-after-the-load";
        let backdated = "/t/unsigned/hello-written-with-the-clock-set-back";
        for copy in [before, elsewhere] {
            std::fs::copy(HELLO_UNSIGNED, copy).context(copy)?;
        }
        // The change times are the coarse clock's: let its tick pass.
        std::thread::sleep(std::time::Duration::from_millis(50));
        load("trust_initramfs=1")?;
        let trusting = (|| {
            let start = stats()?;
            runs(HELLO_UNSIGNED, &[], Some(HELLO))?;
            runs(before, &[], Some(HELLO))?;
            let ran = stats()?;
            counters_grew(&start, &ran, &[("cache_misses", 0), ("denied", 0)])?;
            // Each program, and its interpreter if it names one.
            let trusted = grew(&start, &ran, "initramfs_trusted");
            ensure(trusted >= 2, || format!("initramfs_trusted grew by {trusted}, expected 2 or more"))?;
            refused(elsewhere)?;
            std::fs::copy(HELLO_UNSIGNED, after).context(after)?;
            refused(after)?;
            // A file of the initramfs changed since the load (its mode: any change moves the
            // change time) is verified, and refused.
            std::fs::set_permissions(before, std::os::unix::fs::PermissionsExt::from_mode(0o755)).context(before)?;
            refused(before)?;
            // Signed programs of the initramfs run, unverified, as they did verified.
            runs(image::HELLO, &[], Some(HELLO))?;
            // The clock set back to before the load (as time synchronisation may do): a file
            // written then carries an earlier change time, so the trust ends, for good.
            with_clock_set_back(3600, || {
                std::fs::copy(HELLO_UNSIGNED, backdated).context(backdated)?;
                refused(backdated)
            })?;
            refused(HELLO_UNSIGNED)
        })();
        system::unload_module("elfsig").context("unload")?;
        load("")?;
        for copy in [before, elsewhere, after, backdated] {
            let _ = std::fs::remove_file(copy);
        }
        trusting?;
        // Without the parameter, the initramfs's files are verified as any other.
        refused(HELLO_UNSIGNED)
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
}

/// The module locked for good, the last case to change anything. `topics_locked` checks what
/// the other topics refuse of a locked module (the CLI's admin commands, the signed policy): the
/// registry passes it in, so that the case files need none of each other's code.
pub(crate) fn lock_case<'a>(suite: &mut Suite<'a>, topics_locked: impl FnOnce() -> Outcome + 'a) {
    // As a host locks it: by parameter, at load. (The stress suite locks by writing `lock`.)
    suite.case("lock_by_parameter_holds_until_reboot", move || {
        system::unload_module("elfsig").context("unload")?;
        load("lock=1 deny_loader=1")?;
        guard_control::attach_alone()?;
        locked::checks()?;
        topics_locked()?;
        // Locking again is not an error; unlocking is.
        write_control("lock", "1").context("lock again")?;
        let unlock = write_control("lock", "0");
        ensure(unlock.as_ref().is_err_and(|e| e.raw_os_error() == Some(libc::EPERM)), || {
            format!("unlocking gave {unlock:?}")
        })
    });
}
