//! The published table: 18 coreutils, each executed 1000 times per configuration (total
//! microseconds), with `--version` so that the program's own work is small and the same
//! everywhere.

use crate::config::{Config, Switch};
use crate::measure::{exec_loop, exec_us};
use crate::rounds::{Effort, Totals};

/// The programs, in the published order.
pub(crate) const PROGRAMS: [&str; 18] = [
    "cp", "df", "echo", "false", "grep", "kill", "less", "ls", "mkdir", "mount", "mv", "rm", "rmdir", "tar", "touch",
    "true", "umount", "uname",
];

/// How the suite records its totals.
const SUITE: Totals<'_> = Totals { suite: "coreutils", round: "round", cases: &PROGRAMS, unit: "us" };

/// Runs the suite.
pub(crate) fn run(switch: &mut Switch, effort: Effort) -> Result<(), String> {
    let (rounds, slices, per_slice) = (effort.pick(4, 2, 1), effort.pick(10, 5, 1), effort.pick(25, 12, 2));
    effort.record_execs("coreutils-execs-per-program", rounds * slices * per_slice);
    SUITE.measure(switch, effort, (rounds, slices), prepare, |config| measure(config, per_slice))
}

/// Runs every program once.
fn prepare(config: Config) -> Result<(), String> {
    PROGRAMS.iter().try_for_each(|program| exec_us(&config.program(program), &["--version"]).map(drop))
}

/// Runs every program `count` times, the cache flushed before each in `elfsig-cold`; total
/// microseconds per program.
fn measure(config: Config, count: usize) -> Result<Vec<f64>, String> {
    PROGRAMS.iter().map(|program| exec_loop(config, program, &["--version"], count)).collect()
}
