//! The published table: 18 coreutils, each executed 1000 times per configuration (total
//! microseconds), with `--version` so that the program's own work is small and the same
//! everywhere.

use elfsig_guest::harness::{grew, stats};
use elfsig_guest::image::BENCH_COREUTILS_COLD;

use crate::config::{Config, Switch};
use crate::console::emit;
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
    // The module's counters over every elfsig-cold exec of each program: verify, hash,
    // signature (ns), and execs.
    let mut cold = [[0u64; 4]; PROGRAMS.len()];
    SUITE.measure(switch, effort, (rounds, slices), prepare, |config| measure(config, per_slice, &mut cold))?;
    for (program, [verify, hash, signature, execs]) in PROGRAMS.iter().zip(cold) {
        let execs = execs.max(1) as f64;
        for (part, ns) in [("verify", verify), ("hash", hash), ("signature", signature)] {
            // What the module's own counters say (the program, ld.so and every library, each
            // verified afresh).
            emit(
                BENCH_COREUTILS_COLD,
                &format!("{program}:{part}"),
                Config::ElfsigCold.name(),
                effort.index,
                ns as f64 / execs / 1000.0,
                "us",
            );
        }
    }
    Ok(())
}

/// Runs every program once.
fn prepare(config: Config) -> Result<(), String> {
    PROGRAMS.iter().try_for_each(|program| exec_us(&config.program(program), &["--version"]).map(drop))
}

/// Runs every program `count` times, the cache flushed before each in `elfsig-cold`; total
/// microseconds per program. In `elfsig-cold`, adds what the module's counters say to `cold`.
fn measure(config: Config, count: usize, cold: &mut [[u64; 4]; PROGRAMS.len()]) -> Result<Vec<f64>, String> {
    PROGRAMS
        .iter()
        .zip(cold.iter_mut())
        .map(|(program, counted)| {
            let before = (config == Config::ElfsigCold).then(stats).transpose()?;
            let total = exec_loop(config, program, &["--version"], count)?;
            if let Some(before) = before {
                let after = stats()?;
                for (slot, name) in counted.iter_mut().zip(["verify_ns", "hash_ns", "signature_ns"]) {
                    *slot += grew(&before, &after, name);
                }
                counted[3] += count as u64;
            }
            Ok(total)
        })
        .collect()
}
