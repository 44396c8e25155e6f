//! What the mapping guard decided of a program's mappings, seen from outside: the program run,
//! and its test library found loaded, or refused for a reason the counters show.

use elfsig_fixtures::{GUARD_LIBRARY, GUARD_LIBRARY_LOADED};
use elfsig_guest::harness::{Context, Outcome, counters_grew, ensure, stats};
use elfsig_guest::image::GUARD_PROBE;

/// The test library in `dir`.
pub(crate) fn library(dir: &str) -> String {
    format!("{dir}/{GUARD_LIBRARY}")
}

/// At most the first 200 characters of a program's output, for messages.
pub(crate) fn shown(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    match text.char_indices().nth(200) {
        Some((end, _)) => format!("{:?}...", &text[..end]),
        None => format!("{text:?}"),
    }
}

/// Runs `path` with `args` and `env` added to the environment.
pub(crate) fn run_with(path: &str, args: &[&str], env: &[(&str, &str)]) -> Result<std::process::Output, String> {
    std::process::Command::new(path).args(args).envs(env.iter().copied()).output().context(&format!("exec {path}"))
}

/// Checks that running `path` (`args`, `env`) failed because a mapping was refused with
/// `reason`: the program did not run with the library, and the counters say why.
pub(crate) fn mapping_refused(path: &str, args: &[&str], env: &[(&str, &str)], reason: &str) -> Outcome {
    let before = stats()?;
    let out = run_with(path, args, env)?;
    let after = stats()?;
    let stdout = shown(&out.stdout);
    ensure(!out.status.success(), || format!("{path} {args:?} with {env:?} succeeded, printing {stdout}"))?;
    ensure(!out.stdout.starts_with(GUARD_LIBRARY_LOADED), || format!("the refused library ran: {stdout}"))?;
    counters_grew(&before, &after, &[(reason, 1), ("mmap_denied", 1), ("denied", 0)])
        .map_err(|e| format!("{e}; it printed {stdout}"))
}

/// `guard-probe dlopen PATH`: whether it loaded, with the counters' growth checked.
pub(crate) fn dlopen_refused(path: &str, reason: &str) -> Outcome {
    mapping_refused(GUARD_PROBE, &["dlopen", path], &[], reason)
}

pub(crate) fn dlopen_loads(path: &str) -> Outcome {
    let out = run_with(GUARD_PROBE, &["dlopen", path], &[])?;
    let expected = [GUARD_LIBRARY_LOADED, b"dlopen: ok\n"].concat();
    ensure(out.status.success() && out.stdout == expected, || {
        format!("dlopen of {path} exited {} printing {}", out.status, shown(&out.stdout))
    })
}
