//! The published table: 18 coreutils, each executed 1000 times per configuration (total
//! microseconds), with `--version` so that the program's own work is small and the same
//! everywhere.

use crate::config::Switch;
use crate::measure::{Effort, emit, emit_totals, exec_loop, exec_us, progress, totals};

/// The programs, in the published order.
pub(crate) const PROGRAMS: [&str; 18] = [
    "cp", "df", "echo", "false", "grep", "kill", "less", "ls", "mkdir", "mount", "mv", "rm", "rmdir", "tar", "touch",
    "true", "umount", "uname",
];

/// Runs the suite.
pub(crate) fn run(switch: &mut Switch, effort: Effort) -> Result<(), String> {
    let rounds = effort.pick(4, 2, 1);
    let slices = effort.pick(10, 5, 1);
    let per_slice = effort.pick(25, 12, 2);
    if effort.first() {
        emit("meta", "coreutils-execs-per-program", "-", 0, (rounds * slices * per_slice) as f64, "execs");
    }
    for round in effort.rounds(rounds) {
        progress(&format!("coreutils round {}/{rounds}", round + 1));
        let totals = totals(&switch.interleave(
            round,
            slices,
            |config| {
                PROGRAMS.iter().try_for_each(|program| exec_us(&config.program(program), &["--version"]).map(drop))
            },
            |config| PROGRAMS.iter().map(|program| exec_loop(config, program, &["--version"], per_slice)).collect(),
        )?);
        emit_totals("coreutils", &PROGRAMS, round, &totals, "us");
    }
    Ok(())
}
