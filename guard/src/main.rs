//! `elfsig-guard`: attaches elfsig's mapping guard and hands it to the kernel module.
//!
//! The module checks every exec by itself; a loadable module cannot register LSM hooks, so the
//! checks of executable file mappings (shared libraries, `dlopen`, `LD_PRELOAD`, `ld.so
//! ./program`), of `execveat(AT_EXECVE_CHECK)`, of files opened for writing while mapped
//! executable and of memory made executable at run time come from BPF LSM programs (`bpf/guard.bpf.c`) that call into the module.
//! This program loads and attaches them, hands their links to the module, which keeps them (so
//! the guard outlives this program and, once the module is locked, cannot be removed), and
//! proves the guard works with a canary: an unsigned file mapped executable must be refused.

mod btf;
mod canary;
mod control;
mod load;
mod mapped;
mod object;
mod sys;
mod verbose;

use std::os::fd::AsRawFd;
use std::process::ExitCode;

use elfsig_control::Guard;

const USAGE: &str = "usage: elfsig-guard [-v | --verbose] [--idle] [status]

Attaches elfsig's mapping guard (BPF LSM programs on mmap_file, file_mprotect,
key_post_create_or_update, bprm_creds_for_exec, file_open, file_release, bprm_committed_creds,
task_alloc, mmap_addr, ptrace_access_check, ptrace_traceme, inode_init_security_anon and
bpf_prog) and hands it to the elfsig kernel module, which must be loaded. Needs root, and bpf
among the kernel's active LSMs. `status` prints the guard's state and attaches
nothing. `--verbose` prints how long each step took, on standard error. `--idle` attaches
in the CPU's idle scheduling class (SCHED_IDLE): the boot's other work goes first, and the
attach takes the time the CPU would otherwise sit idle (the initramfs starts it in the
background).";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        ["status"] => control::status().map(|guard| println!("{guard}")),
        ["-h" | "--help"] => {
            println!("{USAGE}");
            Ok(())
        }
        flags => attach_with(flags),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("elfsig-guard: {e}");
            ExitCode::FAILURE
        }
    }
}

/// [`attach`], with `flags` (`--verbose`, `--idle`, each at most once).
fn attach_with(flags: &[&str]) -> Result<(), String> {
    let (mut verbose, mut idle) = (false, false);
    for flag in flags {
        let seen = match *flag {
            "-v" | "--verbose" => &mut verbose,
            "--idle" => &mut idle,
            _ => return Err(format!("unexpected arguments\n{USAGE}")),
        };
        if *seen {
            return Err(format!("{flag} given twice\n{USAGE}"));
        }
        *seen = true;
    }
    if verbose {
        verbose::enable();
    }
    if idle {
        idle_priority()?;
    }
    attach()
}

/// From now on, this process gets the CPU when nothing else wants it, and a small share (a
/// weight of 3 against a default task's 1024) when something does (SCHED_IDLE; it is
/// single-threaded). A task waiting on a lock it holds in the kernel while it attaches
/// (ftrace's, as udev's module loads take it) sleeps meanwhile, and the CPU that sleep frees
/// comes to this process as soon as nothing else runs: the work is reordered, not lost, and
/// the initramfs waits for it once udev has settled.
#[allow(unsafe_code)]
fn idle_priority() -> Result<(), String> {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: sched_setscheduler(2) on the calling thread (0) reads `param`, which lives
    // across the call.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) } != 0 {
        return Err(format!("cannot take the idle priority: {}", std::io::Error::last_os_error()));
    }
    Ok(())
}

/// Loads and attaches the programs, hands them to the module, and checks with the canary.
fn attach() -> Result<(), String> {
    match control::status()? {
        Guard::Active => {
            println!("elfsig-guard: the mapping guard is active already");
            return Ok(());
        }
        Guard::Unavailable(why) => return Err(format!("the kernel cannot run the mapping guard: {why}")),
        Guard::Attached => {
            return Err("the module holds guard programs that never ran: is bpf among the active LSMs? \
                        (write `release` to the guard control file to drop them)"
                .into());
        }
        Guard::Detached => {}
    }
    control::check_bpf_lsm_active()?;

    let attached = load::attach()?;
    let fds: Vec<_> = attached.links.iter().map(|l| l.as_raw_fd()).collect();
    verbose::step("hand over", || control::hand_over(&fds))?;

    // The module holds the links now, for good once it is locked: the guard must run (the
    // canary) before anything else is said of it.
    let refused = verbose::step("canary", canary::executable_mapping_refused)?;
    let enforcing = control::enforcing()?;
    if enforcing && !refused {
        return Err("the canary (an unsigned file mapped executable) was allowed: the guard does not work".into());
    }
    verbose::step("sealed", || attached.check_sealed())?;
    // Closing our descriptors detaches nothing.
    drop(attached);
    match control::status()? {
        Guard::Active => {
            println!("elfsig-guard: the mapping guard is active");
            Ok(())
        }
        other => Err(format!(
            "the guard is attached but the module never saw it run ({other}): is bpf among the active LSMs?"
        )),
    }
}
