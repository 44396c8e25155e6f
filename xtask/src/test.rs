//! `cargo xtask test`: everything that keeps main green, in the order that fails fastest.

use crate::cmd::{self, Cmd};
use crate::deps::{self, GUARD_PACKAGES, TEST_PACKAGES};
use crate::kernel::Flavor;
use crate::vm::Kernels;
use crate::{Result, bench, distro, dkms, flags, fuzz, keys, kmod, mok, nopanic, paths, stress, tools, vm};
use elfsig_guest::image::BenchEffort;

/// Runs the task.
pub fn run(options: &flags::Test) -> Result {
    deps::ensure(GUARD_PACKAGES)?;
    let kernels = Kernels::parse(options.kernel.as_deref(), Kernels::Both)?;
    // The CLI and the guard as the workspace tests build them: nothing here times them.
    tools::use_test_profile();
    if options.vm_only {
        return vm_suite(kernels);
    }
    let root = paths::root();
    let mut phases = Phases::default();
    deps::ensure(TEST_PACKAGES)?;
    // The Debian 13 root a cold run makes (mmdebstrap: downloads and unpacking, a few minutes)
    // is made meanwhile, while the workspace builds and tests use the CPUs.
    let debian_root = prepare_root(kernels)?;
    let mut kernel = None;
    let workspace = (|| {
        phases.time("fmt, the CLI and the test keys", || {
            Cmd::cargo().args(["fmt", "--all", "--check"]).dir(&root).run()?;
            // The debug kernel, the longest build of a cold run, builds from here on at a lower
            // priority, on what the other parts leave of the two cores: the single-threaded
            // stretches of the workspace parts (fuzzing, tests, links) and the one-vCPU VMs on
            // Debian's kernel. A failure anywhere stops it.
            if kernels.test() {
                kernel = Some(build_kernel_meanwhile()?);
            }
            Ok(())
        })?;
        phases.time("clippy, panic check", || {
            Cmd::cargo()
                .args(["clippy", "--workspace", "--all-targets", "--all-features", "--", "-D", "warnings"])
                .dir(&root)
                .run()?;
            nopanic::check()
        })?;
        phases.time("workspace tests", || {
            Cmd::cargo().args(["test", "--workspace", "--all-features"]).dir(&root).run()
        })?;
        phases.time("fuzz smoke", fuzz::smoke)
    })();
    if workspace.is_err() {
        cmd::stop_background_work();
        // Nothing is left running behind the failure (mmdebstrap would outlive this process).
        eprintln!("xtask: waiting for the Debian 13 root being made before stopping");
    }
    let debian_root = joined(debian_root, "preparing the Debian 13 root");
    workspace?;
    debian_root.inspect_err(|_| cmd::stop_background_work())?;
    // Debian's kernel first: its parts need nothing of the kernel still building. Then the bench
    // smoke (build, boot, every suite on the instruction clock, the report; on Debian's kernel,
    // where the boot suite's system runs and where the exec suites run the same code as on the
    // test kernel): its timings are not asserted on, only that every suite produced well-formed
    // rows; its single-threaded parts leave the kernel build a core.
    if kernels.debian() {
        let debian = phases
            .time("Debian 7.2: VM suite and stress", || {
                deps::ensure(vm::VM_PACKAGES)?;
                vm::debian_suites(&keys::test_keys(&tools::build_cli()?)?, Some(stress::QUICK_SECONDS))
            })
            .and_then(|()| phases.time("signed Debian 13 system", distro::test))
            .and_then(|()| phases.time("bench smoke", || bench::bench(BenchEffort::Smoke, &[], Kernels::Debian)));
        debian.inspect_err(|_| cmd::stop_background_work())?;
    }
    if let Some(kernel) = kernel {
        phases.time("waiting for the debug kernel", || joined(kernel, KERNEL_BUILD))?;
        // The suite and the stress side by side: each guest keeps about one CPU busy.
        phases.time("VM suite and stress (debug kernel)", || {
            deps::ensure(vm::VM_PACKAGES)?;
            vm::test_suite(&keys::test_keys(&tools::build_cli()?)?, Some(stress::QUICK_SECONDS))
        })?;
        phases.time("dkms build", dkms_build)?;
    }
    phases.print();
    eprintln!("xtask: all tests passed");
    Ok(())
}

/// How long each part of the run took, printed at the end (and kept when a part fails, for
/// the message).
#[derive(Default)]
struct Phases {
    taken: Vec<(&'static str, std::time::Duration)>,
    started: Option<std::time::Instant>,
}

impl Phases {
    fn time(&mut self, name: &'static str, part: impl FnOnce() -> Result) -> Result {
        let start = std::time::Instant::now();
        self.started.get_or_insert(start);
        let result = part();
        self.taken.push((name, start.elapsed()));
        if result.is_err() {
            self.print();
        }
        result
    }

    fn print(&self) {
        eprintln!("xtask: time taken, part by part:");
        for (name, taken) in &self.taken {
            eprintln!("  {:>6.0} s  {name}", taken.as_secs_f64());
        }
        if let Some(started) = self.started {
            eprintln!("  {:>6.0} s  in all", started.elapsed().as_secs_f64());
        }
    }
}

/// What `handle`'s thread returned, its panic told as an error of `doing`.
fn joined(handle: std::thread::JoinHandle<Result>, doing: &str) -> Result {
    handle.join().unwrap_or_else(|panic| {
        let why = panic.downcast_ref::<&str>().copied().or_else(|| panic.downcast_ref::<String>().map(String::as_str));
        Err(format!("{doing} panicked: {}", why.unwrap_or("(no message)")))
    })
}

const KERNEL_BUILD: &str = "building the debug kernel";

/// Builds the debug kernel and the module for it in the background at a lower priority; the
/// handle says whether that worked, and later parts find them built.
fn build_kernel_meanwhile() -> Result<std::thread::JoinHandle<Result>> {
    let keys = keys::test_keys(&tools::build_cli()?)?;
    deps::ensure(crate::kernel::KERNEL_TOOLS)?;
    Ok(std::thread::spawn(move || {
        cmd::lower_this_threads_priority();
        kmod::for_tests(Flavor::Debug, &keys).map(|_| ())
    }))
}

/// Makes the Debian 13 root the later parts need, in the background; the handle says whether
/// that worked.
fn prepare_root(kernels: Kernels) -> Result<std::thread::JoinHandle<Result>> {
    // Whatever they need of this machine first, here: apt-get runs one at a time.
    deps::ensure(crate::distro::HOST_TOOLS)?;
    deps::ensure(crate::debian_kernel::HOST_TOOLS)?;
    Ok(std::thread::spawn(move || {
        if kernels.debian() {
            crate::debian_kernel::kernel()?;
        }
        Ok(())
    }))
}

/// The kernel module's end-to-end suite in a VM, on the test kernel and on Debian's (the quick
/// stress runs on each besides, in a full run).
fn vm_suite(kernels: Kernels) -> Result {
    deps::ensure(vm::VM_PACKAGES)?;
    let keys = keys::test_keys(&tools::build_cli()?)?;
    if kernels.test() {
        vm::test_suite(&keys, None)?;
    }
    if kernels.debian() {
        vm::debian_suites(&keys, None)?;
    }
    Ok(())
}

/// `dkms build` of the module against the debug kernel's tree, as an administrator's DKMS would;
/// and signing it for Secure Boot with the tree's `sign-file`.
fn dkms_build() -> Result {
    let keys = keys::test_keys(&tools::build_cli()?)?;
    let (kernel, ko) = kmod::for_tests(Flavor::Debug, &keys)?;
    dkms::test(&kernel.tree)?;
    mok::test(&kernel.tree, &ko)
}
