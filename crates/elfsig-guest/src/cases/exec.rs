//! Plain execs: what is signed by a trusted key runs, what is not is refused, counted and
//! logged; and before the module is loaded, everything runs.

use std::cell::RefCell;

use elfsig_guest::harness::{
    Context, Suite, counters_grew, ensure, kernel_log, refused, run, runs, stats, wait_for_log_budget,
};
use elfsig_guest::image::{
    self, EXPECTED, HELLO_MODULE_KEY, HELLO_OTHER_KEY, HELLO_OUTPUT as HELLO, HELLO_UNSIGNED, LS_UNSIGNED, MANIFEST,
    SCRIPTS, SIGNED,
};

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

/// The first case of the suite, before the module is loaded: everything runs, and the dynamic
/// coreutils' output is kept in `baseline` for [`cases`] to compare.
pub(crate) fn without_module_case<'a>(suite: &mut Suite<'a>, baseline: &'a RefCell<Vec<Vec<u8>>>) {
    suite.case("without_module_everything_runs", || {
        runs(HELLO_UNSIGNED, &[], Some(HELLO))?;
        for (name, args) in COREUTILS {
            let out = run(&format!("{SIGNED}/{name}"), args).context(name)?;
            ensure(out.status.success(), || format!("{name} failed: {}", out.status))?;
            baseline.borrow_mut().push(out.stdout);
        }
        Ok(())
    });
}

/// Signed programs run (the dynamic coreutils printing what they did without the module, in
/// `baseline`), unsigned ones and those signed by an unknown key are refused, counted and logged.
pub(crate) fn cases<'a>(suite: &mut Suite<'a>, baseline: &'a RefCell<Vec<Vec<u8>>>) {
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
