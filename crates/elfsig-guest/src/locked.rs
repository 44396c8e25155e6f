//! The checks of a locked module that both suites make: the test suite locks it by parameter at
//! load, the stress suite by writing `lock`.

use elfsig_guest::harness::{Context, Outcome, control, ensure, refused, runs, write_control};
use elfsig_guest::image::{self, HELLO_OUTPUT as HELLO, HELLO_UNSIGNED, LD_SO};
use elfsig_guest::system;

/// What a locked module must hold to: enforce, no unloading, the loader denied for good, and
/// still signed programs run.
pub(crate) fn checks() -> Outcome {
    ensure(std::fs::read_to_string(control("lock")).context("read lock")? == "1\n", || "not locked".into())?;
    let permissive = write_control("mode", "permissive");
    ensure(permissive.as_ref().is_err_and(|e| e.raw_os_error() == Some(libc::EPERM)), || {
        format!("switching to permissive while locked gave {permissive:?}")
    })?;
    // The kernel's answer to unloading a module in use, without waiting (rmmod's way).
    let unload = system::unload_module("elfsig");
    ensure(unload.as_ref().is_err_and(|e| e.raw_os_error() == Some(libc::EWOULDBLOCK)), || {
        format!("unloading while locked gave {unload:?}")
    })?;
    ensure(std::path::Path::new(&control("mode")).exists(), || "the module went away".into())?;
    if std::fs::read_to_string(control("guard")).context("read guard")? == "active\n" {
        let release = write_control("guard", "release");
        ensure(release.as_ref().is_err_and(|e| e.raw_os_error() == Some(libc::EPERM)), || {
            format!("releasing the mapping guard while locked gave {release:?}")
        })?;
        ensure(std::fs::read_to_string(control("guard")).context("read guard")? == "active\n", || {
            "the guard is not active after a refused release".into()
        })?;
    }
    let allow = write_control("loader", "allow");
    ensure(allow.as_ref().is_err_and(|e| e.raw_os_error() == Some(libc::EPERM)), || {
        format!("allowing the loader while locked gave {allow:?}")
    })?;
    refused(LD_SO)?;
    let untrusted = write_control("untrusted", "verify");
    ensure(untrusted.as_ref().is_err_and(|e| e.raw_os_error() == Some(libc::EPERM)), || {
        format!("allowing untrusted mounts while locked gave {untrusted:?}")
    })?;
    ensure(std::fs::read_to_string(control("untrusted")).context("read untrusted")? == "refuse\n", || {
        "untrusted mounts are allowed after a refused write".into()
    })?;
    refused(HELLO_UNSIGNED)?;
    runs(image::HELLO, &[], Some(HELLO))
}
