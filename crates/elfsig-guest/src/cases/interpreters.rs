//! Interpreters: a script's, a dynamic program's (`ld.so`), and `ld.so` run directly, which the
//! `loader` policy can refuse.

use elfsig_guest::harness::{
    Context, Suite, control_value, counters_grew, ensure, kernel_log, read, refused, runs, stats, wait_for_log_budget,
    write_control,
};
use elfsig_guest::image::{
    self, HELLO_OUTPUT as HELLO, LD_SO, SCRIPT_SIGNED_INTERPRETER, SCRIPT_UNSIGNED_INTERPRETER, SCRIPTS, SIGNED,
};

use crate::tamper::{Map, flip};

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
