//! The checks of a locked module that both suites make: the test suite locks it by parameter at
//! load, the stress suite by writing `lock`.

use elfsig_guest::harness::{Context, Outcome, control, ensure, refused, runs, write_control};
use elfsig_guest::image::{self, HELLO_OUTPUT as HELLO, HELLO_UNSIGNED, LD_SO};
use elfsig_guest::system;

/// What a locked module must hold to: enforce, no unloading, the loader denied for good, the
/// run-time rules on, and still signed programs run.
pub(crate) fn checks() -> Outcome {
    ensure(std::fs::read_to_string(control("lock")).context("read lock")? == "1\n", || "not locked".into())?;
    refuses("mode", "permissive", "enforce")?;
    // The kernel's answer to unloading a module in use, without waiting (rmmod's way).
    let unload = system::unload_module("elfsig");
    ensure(unload.as_ref().is_err_and(|e| e.raw_os_error() == Some(libc::EWOULDBLOCK)), || {
        format!("unloading while locked gave {unload:?}")
    })?;
    ensure(std::path::Path::new(&control("mode")).exists(), || "the module went away".into())?;
    if std::fs::read_to_string(control("guard")).context("read guard")? == "active\n" {
        refuses("guard", "release", "active")?;
        crate::guard_sealed::holds()?;
        crate::guard_sealed::ftrace_stays_on()?;
    }
    refuses("loader", "allow", "deny")?;
    refused(LD_SO)?;
    refuses("untrusted", "verify", "refuse")?;
    refuses("runtime", "off", "enforce")?;
    refused(HELLO_UNSIGNED)?;
    runs(image::HELLO, &[], Some(HELLO))
}

/// Writing `word` to control file `name` is refused (`EPERM`), and the file still says `still`.
fn refuses(name: &str, word: &str, still: &str) -> Outcome {
    let written = write_control(name, word);
    ensure(written.as_ref().is_err_and(|e| e.raw_os_error() == Some(libc::EPERM)), || {
        format!("writing {word} to {name} while locked gave {written:?}")
    })?;
    let now = std::fs::read_to_string(control(name)).context(&format!("read {name}"))?;
    ensure(now.trim_end() == still, || format!("{name} says {now:?} after the refused write of {word}"))
}
