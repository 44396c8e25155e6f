//! Timing execs: the wall time of one run of a program, which must run in every configuration,
//! and of a loop of them, the verdict cache flushed before each in `elfsig-cold`.

use std::process::{Command, ExitStatus, Stdio};
use std::time::Instant;

use crate::config::Config;

/// Runs `path` with `args`, output discarded; returns the wall time in microseconds. Fails
/// when the program cannot be executed or dies: every program measured must run in every
/// configuration, or the measurement means nothing. (Its exit status is its own: `false
/// --version` exits 1.)
pub(crate) fn exec_us(path: &str, args: &[&str]) -> Result<f64, String> {
    exec_status_us(path, args).map(|(elapsed, _)| elapsed)
}

/// [`exec_us`] for programs whose work can fail (a library not loaded, a module not imported):
/// fails unless the program exits 0.
pub(crate) fn exec_ok_us(path: &str, args: &[&str]) -> Result<f64, String> {
    match exec_status_us(path, args)? {
        (elapsed, status) if status.success() => Ok(elapsed),
        (_, status) => Err(format!("{path} {} failed: {status}", args.first().copied().unwrap_or_default())),
    }
}

fn exec_status_us(path: &str, args: &[&str]) -> Result<(f64, ExitStatus), String> {
    let start = Instant::now();
    let status = Command::new(path)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(|e| format!("exec {path}: {e}"))?;
    let elapsed = start.elapsed().as_secs_f64() * 1e6;
    if status.code().is_none() {
        return Err(format!("{path} died: {status}"));
    }
    Ok((elapsed, status))
}

/// Times `count` execs of `program` in `config`, flushing the cache before each in
/// `elfsig-cold`; returns the total in microseconds.
pub(crate) fn exec_loop(config: Config, program: &str, args: &[&str], count: usize) -> Result<f64, String> {
    let path = config.program(program);
    let mut total = 0.0;
    for _ in 0..count {
        config.before_exec();
        total += exec_us(&path, args)?;
    }
    Ok(total)
}
