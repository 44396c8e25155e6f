//! Timing and reporting: every raw measurement is one `ELFSIG-BENCH suite,case,config,run,value,unit`
//! line on the console, which the host writes to results.csv; progress goes on
//! `ELFSIG-PROGRESS` lines.

use std::process::{Command, ExitStatus, Stdio};
use std::time::Instant;

use crate::config::Config;
use elfsig_guest::image::{self, BenchEffort};

/// How much to measure (full, `--quick`, or a smoke run), and which share of it this VM measures.
///
/// The host runs two bench VMs at once, one per CPU, because the emulated exec path does not
/// scale with guest CPUs: VM `index` of `count` measures the rounds (runs) whose number modulo
/// `count` is `index`. Each VM interleaves every configuration, and round numbers are global, so
/// the host merges the results as if one VM had measured them all.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Effort {
    pub(crate) level: BenchEffort,
    pub(crate) index: usize,
    pub(crate) count: usize,
}

impl Effort {
    /// `full` in a full run, `quick` with `--quick`, `smoke` in a smoke run.
    pub(crate) fn pick<T>(self, full: T, quick: T, smoke: T) -> T {
        self.level.pick(full, quick, smoke)
    }

    /// The rounds out of `0..total` this VM measures.
    pub(crate) fn rounds(self, total: usize) -> impl Iterator<Item = usize> {
        (0..total).filter(move |r| r % self.count.max(1) == self.index)
    }

    /// Whether this VM reports what is measured once.
    pub(crate) fn first(self) -> bool {
        self.index == 0
    }
}

/// Sums per-slice values (as [`crate::config::Switch::interleave`] returns them) over the
/// slices: per configuration, one total per case.
pub(crate) fn totals(slices: &[[Vec<f64>; 4]]) -> [Vec<f64>; 4] {
    let mut totals: [Vec<f64>; 4] = Default::default();
    for slice in slices {
        for (total, values) in totals.iter_mut().zip(slice) {
            total.resize(values.len(), 0.0);
            for (t, v) in total.iter_mut().zip(values) {
                *t += v;
            }
        }
    }
    totals
}

/// Records a round's [`totals`]: one measurement per configuration and case.
pub(crate) fn emit_totals(suite: &str, cases: &[&str], round: usize, totals: &[Vec<f64>; 4], unit: &str) {
    for config in Config::ALL {
        for (case, total) in cases.iter().zip(&totals[config.index()]) {
            emit(suite, case, config.name(), round, *total, unit);
        }
    }
}

/// Records one measurement.
pub(crate) fn emit(suite: &str, case: &str, config: &str, run: usize, value: f64, unit: &str) {
    println!("{}{suite},{case},{config},{run},{value:.3},{unit}", image::BENCH_MEASUREMENT);
}

/// Says what is being measured.
pub(crate) fn progress(message: &str) {
    println!("{}{message}", image::BENCH_PROGRESS);
}

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
