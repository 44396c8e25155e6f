//! The `boot` suite: the signed Debian 13 system of `cargo xtask distro`, one image for every
//! configuration, booted on Debian's 7.2 kernel again and again, the configurations interleaved:
//! `baseline` (`elfsig=off`: the module not loaded), `elfsig` (loaded from the initramfs,
//! enforcing, locked, the mapping guard attached: every program and library verified at first
//! use) and `ima` (`elfsig=off`, IMA appraising the same files' evmctl signatures). The guest's
//! side is `bench/src/boot.rs`; what the image holds for it, `distro/bench.rs`.
//!
//! Two VMs of one vCPU boot side by side, each a different configuration; in every round each
//! VM boots all three, in rotating order, and the three boots of one VM in one round are one run:
//! ratios pair them.
//!
//! The first rounds' `baseline` and `elfsig` boots then upgrade the system from its signed archive
//! (`elfsig_bench=CONFIG,RUN,upgrade`): how much longer `apt-get upgrade` takes on a host under
//! elfsig (the package gate, and the module verifying what the upgrade runs) than on one
//! without. On the instruction clock only, the figure the host's load cannot move: an upgrade
//! under emulation takes minutes. A smoke run does not upgrade: `cargo xtask distro` upgrades
//! the same system under enforce with the same steps, and checks it. The same boots, after
//! upgrading, time podman: the signed image the system holds loaded, containers started
//! (`podman run --rm IMAGE true`) and a short workload in one.

use elfsig_guest::image::BOOT_BENCH;
use elfsig_guest::image::BenchEffort;

use super::figure::figure;
use super::results::{Record, Results, median};
use crate::distro::image::Image;
use crate::vm::qemu;
use crate::{Result, distro};

/// The suite's name, in `--suite` and results.csv.
pub const SUITE: &str = "boot";

/// The goal: elfsig's boot within this fraction of the baseline's.
pub const GOAL: f64 = 0.05;

/// The configurations, in report order.
pub const CONFIGS: [&str; 3] = ["baseline", "elfsig", "ima"];

/// How many VMs boot at once.
const VMS: usize = 2;

/// How many rounds boot: full, quick and smoke. On the instruction clock a quick run boots every
/// configuration six times (three rounds of two VMs): each run's boots vary by about 0.3% from
/// another run's (its kernel command line seeds the guest's randomness, and with it the order
/// systemd's jobs end in), and with two runs Student's t is 12.7, intervals of ±4-10% that could
/// tell nothing; with six it is 2.6. A boot without the upgrade takes about a minute under
/// emulation. The host clock, which the verdicts do not rest on, keeps one round.
fn rounds(effort: BenchEffort, clock: qemu::Clock) -> usize {
    match clock {
        qemu::Clock::Instructions => effort.pick(4, 3, 1),
        qemu::Clock::Host => effort.pick(4, 1, 1),
    }
}

/// How many rounds also upgrade the system, at most: full, quick and smoke (an upgrade under
/// emulation takes minutes; once is enough for a quick run's figure, which varies by 0.1%).
fn upgrade_rounds(effort: BenchEffort) -> usize {
    effort.pick(2, 1, 0)
}

/// The configurations that upgrade: IMA would refuse what the archive's packages install, which
/// carry no IMA signature.
pub const UPGRADE_CONFIGS: [&str; 2] = ["baseline", "elfsig"];

/// What the suite boots: the signed image, with its kernel. Made before the bench VMs run, so
/// that a failure here (not root, no archive) does not come after their long run.
pub fn prepare() -> Result<Image> {
    distro::signed_image()
}

/// Boots `image` on its kernel in every configuration, [`rounds`] times; returns
/// what the guests measured and the accelerator they ran on. A smoke run boots each
/// configuration once, all at once.
pub fn measure(image: &Image, effort: BenchEffort, clock: qemu::Clock) -> Result<(Results, String)> {
    let rounds = rounds(effort, clock);
    // Each VM boots every configuration in turn, a run being one VM's; a smoke run boots them
    // side by side instead, once each, as one run.
    let (vms, steps, runs_per_round) =
        if effort == BenchEffort::Smoke { (CONFIGS.len(), 1, 1) } else { (VMS, CONFIGS.len(), VMS) };
    let figure = figure(clock).1;
    // Persistent memory, not a virtio disk: reading it is instructions the guest executes, not
    // I/O the host completes in its own time, so that the instructions a boot counts do not
    // change with what else the host is doing.
    let disk = qemu::Disk::Nvdimm(&image.disk);
    let mut results = Results::default();
    let mut accel = "";
    for round in 0..rounds {
        for step in 0..steps {
            let booted: Vec<(&str, usize)> = (0..vms)
                .map(|vm| (CONFIGS[(round + step + vm) % CONFIGS.len()], round * runs_per_round + vm % runs_per_round))
                .collect();
            eprintln!(
                "xtask: boot bench, round {}/{rounds}, step {}/{}: {}",
                round + 1,
                step + 1,
                steps,
                booted.iter().map(|(config, run)| format!("{config} (run {run})")).collect::<Vec<_>>().join(", ")
            );
            let labels: Vec<String> =
                booted.iter().map(|(config, run)| format!("boot{figure}-{config}-{run}")).collect();
            let upgrades: Vec<bool> = booted.iter().map(|(config, _)| upgrades(round, config, clock, effort)).collect();
            let appends: Vec<String> = booted
                .iter()
                .zip(&upgrades)
                .map(|((config, run), upgrade)| {
                    let off = if *config == "elfsig" { "" } else { " elfsig=off" };
                    let smoke = if effort == BenchEffort::Smoke { ",smoke" } else { "" };
                    let upgrade = if *upgrade { ",upgrade,containers" } else { "" };
                    format!("{} {BOOT_BENCH}={config},{run}{smoke}{upgrade}{off}", distro::root(disk))
                })
                .collect();
            let boots: Vec<qemu::Boot<'_>> = labels
                .iter()
                .zip(&appends)
                .zip(&upgrades)
                .map(|((label, append), upgrade)| qemu::Boot {
                    kernel: &image.kernel,
                    initramfs: &image.initrd,
                    disk: Some(disk),
                    append,
                    // An upgrade under emulation (apt, dpkg, and the initramfs rebuilt), then an
                    // image loaded and containers run.
                    timeout_secs: if *upgrade { 3000 } else { 900 },
                    memory_mb: 2048,
                    cpus: 1,
                    label,
                    clock,
                    uefi: None,
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
    let upgraded =
        (0..rounds).filter(|&round| upgrades(round, UPGRADE_CONFIGS[0], clock, effort)).count() * runs_per_round;
    check_complete(&results, rounds * runs_per_round, upgraded)?;
    Ok((results, accel.to_owned()))
}

/// Whether the boot of `config` in `round` upgrades the system too.
fn upgrades(round: usize, config: &str, clock: qemu::Clock, effort: BenchEffort) -> bool {
    clock == qemu::Clock::Instructions && round < upgrade_rounds(effort) && UPGRADE_CONFIGS.contains(&config)
}

/// Every run measured every configuration's boot and workload, and `upgraded` runs the upgrade
/// in the configurations that upgrade.
fn check_complete(results: &Results, runs: usize, upgraded: usize) -> Result {
    let expected =
        ["boot-to-default-target", "workload"]
            .into_iter()
            .flat_map(|case| CONFIGS.into_iter().map(move |config| (case, config, runs)))
            .chain(UPGRADE_CONFIGS.into_iter().flat_map(|config| {
                ["upgrade", "container-start"].into_iter().map(move |case| (case, config, upgraded))
            }));
    for (case, config, runs) in expected {
        let measured = results.values(SUITE, case, config).len();
        if measured != runs {
            return Err(format!("boot bench: {measured} of {runs} runs measured {case} in {config}"));
        }
    }
    Ok(())
}

/// A boot that took more than this many times the median boot of its configuration stalled:
/// the emulated machine sometimes runs several times slower for a while on a shared host, the
/// kernel's own start with it.
const STALLED: f64 = 2.0;

/// The runs in which a boot stalled, `(run, configuration, seconds, its configuration's median)`,
/// when they are few enough to leave out: at most a quarter of the runs. More than that is no
/// stall but the measurement, and nothing is left out.
pub fn stalled(results: &Results) -> Vec<(usize, String, f64, f64)> {
    let boots: Vec<&Record> =
        results.records.iter().filter(|r| r.suite == SUITE && r.case == "boot-to-default-target").collect();
    let mut stalled = Vec::new();
    let mut runs = std::collections::BTreeSet::new();
    for config in CONFIGS {
        let own: Vec<&&Record> = boots.iter().filter(|r| r.config == config).collect();
        let typical = median(&own.iter().map(|r| r.value).collect::<Vec<_>>());
        for r in own {
            runs.insert(r.run);
            if r.value > STALLED * typical {
                stalled.push((r.run, r.config.clone(), r.value, typical));
            }
        }
    }
    let left_out: std::collections::BTreeSet<usize> = stalled.iter().map(|s| s.0).collect();
    if left_out.len() * 4 > runs.len() {
        return Vec::new();
    }
    stalled
}

/// The boot suite's results without the runs in which a boot stalled (every configuration of
/// such a run, so that the others stay paired); the other suites' as they are.
pub fn without_stalled(results: &Results) -> Results {
    let stalled = stalled(results);
    let records =
        results.records.iter().filter(|r| r.suite != SUITE || !stalled.iter().any(|s| s.0 == r.run)).cloned().collect();
    Results { records }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn boots(values: &[(&str, usize, f64)]) -> Results {
        let records = values
            .iter()
            .map(|(config, run, value)| Record {
                suite: "boot".into(),
                case: "boot-to-default-target".into(),
                config: (*config).into(),
                run: *run,
                value: *value,
                unit: "s".into(),
            })
            .collect();
        Results { records }
    }

    #[test]
    fn a_lone_stall_is_left_out_a_slow_configuration_is_not() {
        let mut runs = Vec::new();
        for run in 0..8 {
            runs.push(("baseline", run, 20.0));
            runs.push(("elfsig", run, 21.0));
            runs.push(("ima", run, if run == 3 { 170.0 } else { 22.0 }));
        }
        let results = boots(&runs);
        assert_eq!(stalled(&results), [(3, "ima".to_owned(), 170.0, 22.0)]);
        assert_eq!(without_stalled(&results).values("boot", "boot-to-default-target", "elfsig").len(), 7);
        // Always three times slower: the configuration's cost, however large, is measured.
        let slow: Vec<_> = (0..8).flat_map(|run| [("baseline", run, 20.0), ("elfsig", run, 60.0)]).collect();
        assert!(stalled(&boots(&slow)).is_empty());
        // Stalls in more than a quarter of the runs are not stalls: nothing is left out.
        let many: Vec<_> =
            (0..8).flat_map(|run| [("baseline", run, 20.0), ("ima", run, if run < 3 { 90.0 } else { 21.0 })]).collect();
        assert!(stalled(&boots(&many)).is_empty());
    }
}
