//! The libMicro-style `exec` microbenchmark: microseconds per exec of a tiny static program,
//! five runs per configuration.

use crate::config::{Config, Switch};
use crate::measure::{Effort, emit, exec_loop, exec_us, progress, totals};

/// Runs the suite.
pub(crate) fn run(switch: &mut Switch, effort: Effort) -> Result<(), String> {
    let slices = 10;
    let per_slice = effort.pick(200, 20);
    for run in effort.rounds(5) {
        progress(&format!("exec run {}/5", run + 1));
        let totals = totals(&switch.interleave(
            run,
            slices,
            |config| exec_us(&config.program("hello"), &[]).map(drop),
            |config| Ok(vec![exec_loop(config, "hello", &[], per_slice)?]),
        )?);
        for config in Config::ALL {
            let total = totals[config.index()].first().copied().unwrap_or(0.0);
            emit("exec", "exec", config.name(), run, total / (slices * per_slice) as f64, "us/exec");
        }
    }
    Ok(())
}
