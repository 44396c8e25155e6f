//! `cargo xtask stress [--quick] [--seconds N]`: the stress suite in the debug kernel (KASAN,
//! kmemleak, lockdep, atomic-sleep checks, fault injection): execs checked against what each
//! file was while files change, keys are revoked, the mode flips and the module reloads, then
//! under injected allocation and read failures. `--quick` (60 s of load) is what
//! `cargo xtask test` runs; the default is 300 s.

use crate::{Result, flags, keys, tools, vm};

/// Seconds of load in a `--quick` run.
pub const QUICK_SECONDS: u64 = 60;

/// Runs the task.
pub fn run(options: &flags::Stress) -> Result {
    let seconds = match options.seconds {
        Some(seconds) => seconds,
        None if options.quick => QUICK_SECONDS,
        None => 300,
    };
    let kernels = vm::Kernels::parse(options.kernel.as_deref(), vm::Kernels::Test)?;
    if kernels.test() {
        stress(seconds)?;
    }
    if kernels.debian() {
        crate::deps::ensure(vm::VM_PACKAGES)?;
        vm::debian_suites(&keys::test_keys(&tools::build_cli()?)?, Some(seconds))?;
    }
    Ok(())
}

/// The stress suite with `seconds` of load.
pub fn stress(seconds: u64) -> Result {
    crate::deps::ensure(vm::VM_PACKAGES)?;
    let keys = keys::test_keys(&tools::build_cli()?)?;
    vm::stress_suite(&keys, seconds)
}
