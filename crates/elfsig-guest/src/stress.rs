//! The stress suite (`elfsig.suite=stress`, run on the debug kernel by `cargo xtask stress`).
//!
//! The module runs with its mapping guard. Threads exec files while others change them
//! (`load.rs`): replace them by rename, rewrite them in place, truncate them, remove and re-sign
//! one with the CLI, rename a signed loader and an unsigned program in turn over the path a
//! signed program names as its ELF interpreter, and change a library that signed programs
//! `dlopen` and need. Meanwhile the verdict cache is flushed, a digest is revoked, a key is added to
//! the secondary trusted keyring and later removed, the mode is flipped to permissive and back,
//! and the module is unloaded and reloaded (`disturb.rs`). Then the same execs run with
//! allocations and the module's reads failing on purpose. Every exec is judged against what
//! its file was at that moment (`judge.rs`). Afterwards the module must unload and the kernel
//! must have reported nothing, kmemleak included (`checks.rs`; the kernel log's check,
//! `kernel_log.rs`, ends the test suite too).

mod checks;
mod disturb;
mod judge;
mod load;

use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Duration;

use elfsig_guest::harness::{Context, NEEDS_DEBUG_KERNEL, Suite, diagnostic, ensure, grew, stats, unload_when_idle};
use elfsig_guest::{image, system};

use judge::Exec;
use load::{Contents, Shared, Slot};

/// Runs the suite; true when everything held.
pub(crate) fn run_all() -> bool {
    let seconds: u64 = elfsig_guest::cmdline(image::STRESS_SECONDS).and_then(|s| s.parse().ok()).unwrap_or(30);
    let contents = Contents::make();
    let shared = Shared::new();
    let mut suite = Suite::default();
    let contents = match &contents {
        Ok(contents) => contents,
        Err(e) => {
            suite.case("stress_setup", || Err(e.clone()));
            return suite.run("elfsig: the stress suite");
        }
    };
    let shared = &shared;
    suite.case("stress_setup", || {
        load::set_up(contents)?;
        if !Path::new("/sys/kernel/debug/kmemleak").exists() {
            system::mount("debugfs", "/sys/kernel/debug").context("mount debugfs")?;
        }
        system::load_module(Path::new(image::MODULE), "").context("load the module")?;
        system::AuditDaemon::register().context("register as the audit daemon")?.drain_forever();
        crate::guard_control::attach()
    });
    // The judge itself: a good file is seen loaded and running, a refused one not loaded, and
    // another signed program loaded and told apart from the good one.
    suite.case("traced_execs_tell_what_was_loaded", || {
        let judged = |path: &str| Exec::run(path, false, image::HELLO_OUTPUT).context(path);
        let good = judged(&load::slot("good", 0))?;
        ensure(matches!(good, Exec::RanGood), || format!("good: {good}"))?;
        let bad = judged(&load::slot("bad", 0))?;
        ensure(matches!(bad, Exec::Refused), || format!("bad: {bad}"))?;
        let other = judged(&format!("{}/cstatic", image::SIGNED))?;
        ensure(matches!(other, Exec::RanOther { surely_other: true, .. }), || format!("cstatic: {other}"))
    });

    let main = Duration::from_secs(seconds * 2 / 3);
    suite.case("execs_under_changes_reloads_and_revocation", || {
        load::run_phase(contents, shared, || disturb::disturb(shared, main))?;
        checks::no_violations(shared)?;
        let rounds = shared.resign_rounds.load(Ordering::Relaxed);
        let swaps = shared.interp_swaps.load(Ordering::Relaxed);
        let interp_kills = shared.tally.interp_killed.load(Ordering::Relaxed);
        let library_changes = shared.library_changes.load(Ordering::Relaxed);
        let extra = format!(
            "cli_remove_sign_rounds={rounds} interpreter_swaps={swaps} interp_killed={interp_kills} \
             library_changes={library_changes}"
        );
        checks::report("changes", main.as_secs(), [0; 8], checks::counts(&shared.tally), &extra);
        ensure(shared.revocation.done.get().is_some(), || "the revocation never happened".into())?;
        ensure(shared.key_removed.done.get().is_some(), || "the key was never added and removed".into())?;
        ensure(shared.policy_revocation.done.get().is_some(), || "the policy slot was never revoked".into())?;
        // Each changing file was seen both ways, so its checks ran. The revoked file and the
        // added key's file always are; a quick run has too few remove-and-sign rounds and
        // changes for that to be sure of the others, so only longer runs insist.
        let long = main >= Duration::from_secs(60);
        for which in [
            Slot::Mix,
            Slot::Resign,
            Slot::Revokeme,
            Slot::Newkey,
            Slot::Policy,
            Slot::Interp,
            Slot::Dlopen,
            Slot::Needed,
        ] {
            let [not_load, run] = shared.tally.judged(which);
            let name = which.name();
            diagnostic(format_args!("stress judged kind={name} must_not_load={not_load} must_run={run}"));
            // The key's, the revocations' files always change (through the keyrings or a
            // policy).
            let keyed = matches!(which, Slot::Revokeme | Slot::Newkey | Slot::Policy);
            let required = keyed || long;
            ensure(!required || (not_load > 0 && run > 0), || format!("no {name} exec was judged both ways"))?;
        }
        // The interpreter check at the end of exec was reached: some swap landed between the
        // check of the interpreter and binfmt_elf's open of it, and the task was killed.
        ensure(!long || interp_kills > 0, || "no exec caught an interpreter swapped during it".into())?;
        let tally = &shared.tally;
        ensure(tally.ran_good.load(Ordering::Relaxed) > 0 && tally.refused.load(Ordering::Relaxed) > 0, || {
            "the execs did not both run and get refused".into()
        })?;
        ensure(rounds > 0, || "the CLI never removed and signed the re-signed file".into())
    });

    let faults = Duration::from_secs(seconds / 3);
    suite.test_kernel_case("injected_faults_never_let_bad_files_run", NEEDS_DEBUG_KERNEL, || {
        let before = stats()?;
        let counted = checks::counts(&shared.tally);
        shared.faults.store(true, Ordering::SeqCst);
        // An exec makes hundreds of allocations before the module runs: rare allocation
        // failures, so that many execs reach verification, and frequent read failures in it.
        disturb::arm_faults(2, 10)?;
        let result = load::run_phase(contents, shared, || {
            std::thread::sleep(faults);
            Ok(())
        });
        let disarm = disturb::arm_faults(0, 0);
        shared.faults.store(false, Ordering::SeqCst);
        result?;
        disarm?;
        checks::no_violations(shared)?;
        let after = stats()?;
        let (io, errors) = (grew(&before, &after, "io_error"), grew(&before, &after, "error"));
        let extra = format!("io_error={io} error={errors}");
        checks::report("faults", faults.as_secs(), counted, checks::counts(&shared.tally), &extra);
        ensure(io + errors > 0, || "no injected fault reached the module".into())
    });

    suite.case("good_files_run_again_after_faults", || {
        let out = std::process::Command::new(load::slot("good", 0)).output().context("exec")?;
        ensure(out.stdout == image::HELLO_OUTPUT, || format!("printed {:?}", String::from_utf8_lossy(&out.stdout)))
    });
    // While the module is loaded, so that kmemleak's backtraces name its functions.
    suite.test_kernel_case("kmemleak_finds_nothing_of_the_module", NEEDS_DEBUG_KERNEL, || {
        let (total, ours) = checks::kmemleak()?;
        diagnostic(format_args!("stress kmemleak unreferenced={total} module={}", ours.len()));
        ensure(ours.is_empty(), || format!("kmemleak: {}", ours.first().map_or("", |l| l.trim())))
    });
    suite.case("module_unloads_after_stress", || {
        elfsig_guest::harness::write_control("guard", "release").context("release the guard")?;
        unload_when_idle("elfsig")
    });
    // As an administrator locks a running module. (The test suite locks by parameter.)
    suite.case("lock_by_writing_holds_until_reboot", || {
        system::load_module(Path::new(image::MODULE), "").context("load the module")?;
        elfsig_guest::harness::write_control("loader", "deny").context("set loader deny")?;
        elfsig_guest::harness::write_control("lock", "1").context("lock")?;
        crate::locked::checks()
    });
    suite.case("kernel_log_has_no_bug_warning_or_oops", crate::kernel_log::is_clean);
    suite.run("elfsig: the stress suite")
}
