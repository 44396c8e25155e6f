//! `cargo xtask test`: everything that keeps main green, in the order that fails fastest.

use crate::cmd::Cmd;
use crate::deps::{self, GUARD_PACKAGES, TEST_PACKAGES};
use crate::kernel::Flavor;
use crate::vm::Kernels;
use crate::{Result, bench, distro, dkms, flags, fuzz, keys, kmod, mok, nopanic, paths, stress, tools, vm};

/// Runs the task.
pub fn run(options: &flags::Test) -> Result {
    deps::ensure(GUARD_PACKAGES)?;
    let kernels = Kernels::parse(options.kernel.as_deref(), Kernels::Both)?;
    if options.vm_only {
        return vm_suite(kernels);
    }
    let root = paths::root();
    deps::ensure(TEST_PACKAGES)?;
    Cmd::new("cargo").args(["fmt", "--all", "--check"]).dir(&root).run()?;
    Cmd::new("cargo")
        .args(["clippy", "--workspace", "--all-targets", "--all-features", "--", "-D", "warnings"])
        .dir(&root)
        .run()?;
    nopanic::check()?;
    Cmd::new("cargo").args(["test", "--workspace", "--all-features"]).dir(&root).run()?;
    fuzz::smoke()?;
    if kernels.test() {
        vm_suite(Kernels::Test)?;
        dkms_build()?;
        stress::stress(stress::QUICK_SECONDS)?;
        distro::test()?;
    }
    if kernels.debian() {
        deps::ensure(vm::VM_PACKAGES)?;
        vm::debian_suites(&keys::test_keys(&tools::build_cli()?)?, Some(stress::QUICK_SECONDS))?;
    }
    // A smoke test of the bench machinery (build, boot, every suite, report); its timings
    // are not asserted on. On the test kernel only, unless asked for Debian's: Debian's kernel
    // has had its VM suite and stress run above, and the bench on it repeats the same
    // machinery for 9 minutes that a cold CI run (kernels, roots and trees built) cannot spare.
    bench::bench(true, &[], if kernels.test() { Kernels::Test } else { Kernels::Debian })?;
    eprintln!("xtask: all tests passed");
    Ok(())
}

/// The kernel module's end-to-end suite in a VM, on the test kernel and on Debian's (the quick
/// stress runs on each besides, in a full run).
fn vm_suite(kernels: Kernels) -> Result {
    deps::ensure(vm::VM_PACKAGES)?;
    let keys = keys::test_keys(&tools::build_cli()?)?;
    if kernels.test() {
        vm::test_suite(&keys)?;
    }
    if kernels.debian() {
        vm::debian_suites(&keys, None)?;
    }
    Ok(())
}

/// `dkms build` of the module against the test kernel's tree, as an administrator's DKMS would;
/// and signing it for Secure Boot with the tree's `sign-file`.
fn dkms_build() -> Result {
    let keys = keys::test_keys(&tools::build_cli()?)?;
    let (kernel, ko) = kmod::for_tests(Flavor::Release, &keys)?;
    dkms::test(&kernel.tree)?;
    mok::test(&kernel.tree, &ko)
}
