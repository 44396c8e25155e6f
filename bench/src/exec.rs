//! The libMicro-style `exec` microbenchmark: microseconds per exec of a tiny static program,
//! five runs per configuration. Then what the signature's algorithm costs a first exec: the same
//! program signed with RSA-3072 and with ECDSA P-256, each exec cold (suite `keys`).

use crate::config::{Config, Switch};
use crate::console::emit;
use crate::measure::{exec_loop, exec_us};
use crate::rounds::{Effort, totals};
use elfsig_guest::image;

/// The suite the algorithm comparison reports as.
const KEYS: &str = "keys";

/// Runs the suite.
pub(crate) fn run(switch: &mut Switch, effort: Effort) -> Result<(), String> {
    let slices = effort.pick(10, 10, 2);
    let per_slice = effort.pick(200, 20, 2);
    let rounds = effort.pick(5, 5, 1);
    for run in effort.announced("exec run", rounds) {
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
    keys(switch, effort)
}

/// Cold execs of [`image::BENCH_HELLO_BY_KEY`]'s copies, alternating slice by slice: the kernel
/// verifies each copy's signature on every exec, and nothing else differs.
fn keys(switch: &mut Switch, effort: Effort) -> Result<(), String> {
    let (slices, per_slice) = (effort.pick(10, 10, 2), effort.pick(100, 10, 2));
    switch.enter(Config::ElfsigCold)?;
    let rounds = effort.pick(5, 5, 1);
    for run in effort.announced("keys run", rounds) {
        let mut totals = [0.0; 2];
        for slice in 0..slices {
            for i in [slice % 2, 1 - slice % 2] {
                let (_, program) = image::BENCH_HELLO_BY_KEY[i];
                totals[i] += exec_loop(Config::ElfsigCold, program, &[], per_slice)?;
            }
        }
        for ((key, _), total) in image::BENCH_HELLO_BY_KEY.iter().zip(totals) {
            emit(KEYS, "cold-exec", key, run, total / (slices * per_slice) as f64, "us/exec");
        }
    }
    Ok(())
}
