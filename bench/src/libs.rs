//! Libraries under the mapping guard: a dynamic program that `dlopen`s
//! [`image::BENCH_LIBRARIES`] small signed libraries, and python3 importing
//! [`image::BENCH_PYTHON_EXTENSIONS`] (C extension modules, most with libraries of their own).
//! Every library is checked when it is mapped executable: by elfsig's guard, or by IMA's
//! `func=MMAP_CHECK` rule in the `ima` configuration. Reported like `coreutils`: total
//! microseconds per round and configuration.

use elfsig_guest::image;

use crate::config::{Config, Switch};
use crate::measure::exec_ok_us;
use crate::rounds::{Effort, Totals};

/// The cases, in the order [`measure`] runs them.
const CASES: [&str; 2] = ["dlopen-50-libraries", "python-12-extensions"];

/// Imports every module of [`image::BENCH_PYTHON_EXTENSIONS`] from the directory in `argv[1]`.
fn python_script() -> String {
    format!("import sys; sys.path.insert(0, sys.argv[1]); import {}", image::BENCH_PYTHON_EXTENSIONS.join(", "))
}

/// The probe's arguments: `dlopen` and every library of `config`'s copies.
fn dlopen_args(config: Config) -> Vec<String> {
    let libraries =
        (0..image::BENCH_LIBRARIES).map(|i| format!("{}/{}", config.bin_dir(), elfsig_fixtures::bench_library_name(i)));
    std::iter::once("dlopen".to_owned()).chain(libraries).collect()
}

/// Runs each case once in `config`, `count` times over, the cache flushed before each in
/// `elfsig-cold`; total microseconds per case.
fn measure(config: Config, count: usize) -> Result<Vec<f64>, String> {
    let dlopen = dlopen_args(config);
    let dlopen: Vec<&str> = dlopen.iter().map(String::as_str).collect();
    let script = python_script();
    let python = ["-I", "-S", "-c", &script, config.bin_dir()];
    let cases: [(String, &[&str]); 2] =
        [(config.program("guard-probe"), &dlopen), (config.program("python3"), &python)];
    cases
        .iter()
        .map(|(program, args)| {
            let mut total = 0.0;
            for _ in 0..count {
                config.before_exec();
                total += exec_ok_us(program, args)?;
            }
            Ok(total)
        })
        .collect()
}

/// How the suite records its totals.
const SUITE: Totals<'_> = Totals { suite: "libs", round: "round", cases: &CASES, unit: "us" };

/// Runs the suite.
pub(crate) fn run(switch: &mut Switch, effort: Effort) -> Result<(), String> {
    let (rounds, slices, per_slice) = (effort.pick(4, 2, 1), effort.pick(5, 2, 1), effort.pick(5, 2, 1));
    effort.record_execs("libs-execs-per-case", rounds * slices * per_slice);
    SUITE.measure(
        switch,
        effort,
        (rounds, slices),
        |config| measure(config, 1).map(drop),
        |config| measure(config, per_slice),
    )
}
