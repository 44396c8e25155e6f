//! The `boot` suite: the signed Debian system of `cargo xtask distro`, one image for every
//! configuration, booted on the test kernel again and again, the configurations interleaved:
//! `baseline` (`elfsig=off`: the module not loaded), `elfsig` (loaded from the initramfs,
//! enforcing, locked, the mapping guard attached: every program and library verified at first
//! use) and `ima` (`elfsig=off`, IMA appraising the same files' evmctl signatures). The guest's
//! side is `bench/src/boot.rs`; what the image holds for it, `distro/bench.rs`.
//!
//! Two VMs of one vCPU boot side by side, each a different configuration; in every round each
//! VM boots all three, in rotating order, and the three boots of one VM in one round are one run:
//! ratios pair them.

use elfsig_guest::image::BOOT_BENCH;

use super::results::Results;
use crate::vm::qemu;
use crate::{Result, distro};

/// The configurations, in report order.
pub const CONFIGS: [&str; 3] = ["baseline", "elfsig", "ima"];

/// How many VMs boot at once.
const VMS: usize = 2;

/// Boots the signed system in every configuration, four rounds (one when `quick`); returns what
/// the guests measured and the accelerator they ran on.
pub fn measure(quick: bool) -> Result<(Results, String)> {
    let (kernel, image) = distro::signed_image()?;
    let rounds = if quick { 1 } else { 4 };
    let mut results = Results::default();
    let mut accel = "";
    for round in 0..rounds {
        for step in 0..CONFIGS.len() {
            let booted: Vec<(&str, usize)> =
                (0..VMS).map(|vm| (CONFIGS[(round + step + vm) % CONFIGS.len()], round * VMS + vm)).collect();
            eprintln!(
                "xtask: boot bench, round {}/{rounds}, step {}/{}: {}",
                round + 1,
                step + 1,
                CONFIGS.len(),
                booted.iter().map(|(config, run)| format!("{config} (run {run})")).collect::<Vec<_>>().join(", ")
            );
            let labels: Vec<String> = booted.iter().map(|(config, run)| format!("boot-{config}-{run}")).collect();
            let appends: Vec<String> = booted
                .iter()
                .map(|(config, run)| {
                    let off = if *config == "elfsig" { "" } else { " elfsig=off" };
                    format!("{} {BOOT_BENCH}={config},{run}{off}", distro::ROOT)
                })
                .collect();
            let boots: Vec<qemu::Boot<'_>> = labels
                .iter()
                .zip(&appends)
                .map(|(label, append)| qemu::Boot {
                    kernel: &kernel.bzimage,
                    initramfs: &image.initrd,
                    disk: Some(&image.disk),
                    append,
                    timeout_secs: 900,
                    memory_mb: 2048,
                    cpus: 1,
                    label,
                })
                .collect();
            for (label, run) in labels.iter().zip(qemu::boot_all(&boots)?) {
                accel = run.accel;
                let part =
                    Results::parse(&run.console).map_err(|e| format!("{label}: {e} (see target/vm/{label}.log)"))?;
                results.records.extend(part.records);
            }
        }
    }
    check_complete(&results, rounds * VMS)?;
    Ok((results, accel.to_owned()))
}

/// Every run measured every configuration's boot and workload.
fn check_complete(results: &Results, runs: usize) -> Result {
    for case in ["boot-to-default-target", "workload"] {
        for config in CONFIGS {
            let measured = results.values("boot", case, config).len();
            if measured != runs {
                return Err(format!("boot bench: {measured} of {runs} runs measured {case} in {config}"));
            }
        }
    }
    Ok(())
}

/// A boot that took more than this many times the median boot stalled: the VM, not the
/// configuration (the emulated machine sometimes runs several times slower for a while on a
/// shared host, the kernel's own start with it).
const STALLED: f64 = 2.0;

/// The runs in which some boot stalled: `(run, configuration, seconds)`, and the median boot.
pub fn stalled(results: &Results) -> (Vec<(usize, String, f64)>, f64) {
    let boots: Vec<&super::results::Record> =
        results.records.iter().filter(|r| r.suite == "boot" && r.case == "boot-to-default-target").collect();
    let median = super::results::median(&boots.iter().map(|r| r.value).collect::<Vec<_>>());
    let stalled =
        boots.iter().filter(|r| r.value > STALLED * median).map(|r| (r.run, r.config.clone(), r.value)).collect();
    (stalled, median)
}

/// The boot suite's results without the runs in which a boot stalled (every configuration of
/// such a run, so that the others stay paired); the other suites' as they are.
pub fn without_stalled(results: &Results) -> Results {
    let (stalled, _) = stalled(results);
    let records = results
        .records
        .iter()
        .filter(|r| r.suite != "boot" || !stalled.iter().any(|(run, _, _)| *run == r.run))
        .cloned()
        .collect();
    Results { records }
}
