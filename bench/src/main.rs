//! The bench VM's init: sets up IMA, then runs every suite, interleaving the four
//! configurations, and prints each raw measurement on the console for `cargo xtask bench`.
//!
//! Suites, in order: `coreutils`, `libs`, `exec`, `unixbench`, `apps`, `large`. The kernel command
//! line's `elfsig.effort=quick` makes each shorter (fewer repetitions, all suites), and
//! `elfsig.effort=smoke` just long enough to produce every row;
//! `elfsig.suites=a,b` runs only those (`cargo xtask bench --suite`, while working on one).
//!
//! Run as `elfsig-bench execl-chain N MODE`, it is the program the execl benchmark chains; as
//! `elfsig-bench spawn SECONDS`, the process the process-creation benchmark forks from. The
//! `boot` suite runs in the signed Debian system instead: `elfsig-bench boot` there, started by
//! a unit, and `elfsig-bench boot-ima` in its initramfs (`boot.rs`).

mod apps;
mod boot;
mod config;
mod console;
mod coreutils;
mod exec;
mod function_time;
mod ima;
mod large;
mod libs;
mod measure;
mod rounds;
mod sha256;
mod unixbench;

use config::{Config, Switch};
use elfsig_guest::image;
use rounds::Effort;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("execl-chain") => unixbench::execl_chain(&args),
        Some("spawn") => unixbench::spawn_loop(&args),
        // In the signed Debian system, by a unit, and from its initramfs.
        Some("boot") => return boot::measure(),
        Some("boot-ima") => return boot::load_ima(),
        _ => {}
    }
    elfsig_guest::boot();
    // elfsig.part=INDEX/COUNT: which share of the rounds this VM measures.
    let part = elfsig_guest::cmdline(image::BENCH_PART).unwrap_or_else(|| "0/1".into());
    let (index, count) =
        part.split_once('/').and_then(|(i, n)| Some((i.parse().ok()?, n.parse().ok()?))).unwrap_or((0, 1));
    // No word: the full bench. An unknown one is an error, not hours of the full bench.
    let level = match elfsig_guest::cmdline(image::BENCH_EFFORT) {
        None => Ok(image::BenchEffort::Full),
        Some(word) => image::BenchEffort::parse(&word).ok_or(format!("unknown {}={word}", image::BENCH_EFFORT)),
    };
    let suites = elfsig_guest::cmdline(image::BENCH_SUITES);
    let result = level.and_then(|level| {
        let effort = Effort { level, index, count };
        run(effort, |suite| suites.as_deref().is_none_or(|list| list.split(',').any(|s| s == suite)))
    });
    if let Err(e) = &result {
        println!("{}{e}", image::BENCH_ERROR);
    }
    println!("{}{}", image::BENCH_DONE, if result.is_ok() { "ok" } else { "failed" });
    elfsig_guest::power_off_if_init();
}

/// Runs every program a few times in every configuration before anything is timed: the first
/// runs after boot pay for filling caches (page cache, dentries, and under QEMU's emulation its
/// translation of every code path), which would count against whichever configuration came
/// first.
fn warm_up(switch: &mut Switch, effort: Effort) -> Result<(), String> {
    console::progress("warming up");
    for config in Config::ALL {
        switch.enter(config)?;
        for program in coreutils::PROGRAMS {
            for _ in 0..effort.pick(3, 3, 1) {
                measure::exec_us(&config.program(program), &["--version"])?;
            }
        }
        for _ in 0..effort.pick(20, 20, 2) {
            measure::exec_us(&config.program("hello"), &[])?;
        }
    }
    Ok(())
}

/// The kernel's clocksource: every timing depends on it having fine resolution.
fn clocksource() -> String {
    std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource")
        .map(|s| s.trim().to_owned())
        .unwrap_or_else(|_| "unknown".into())
}

fn run(effort: Effort, selected: impl Fn(&str) -> bool) -> Result<(), String> {
    // The kernel moves from tsc-early to tsc once it has refined the TSC's calibration, about a
    // second after boot: wait for that, so that nothing changes mid-run.
    for _ in 0..100 {
        if clocksource() != "tsc-early" {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let start_clock = clocksource();
    console::progress(&format!("clocksource {start_clock}"));
    console::progress("setting up IMA");
    ima::setup()?;
    let mut switch = Switch::default();
    warm_up(&mut switch, effort)?;
    type Suite = fn(&mut Switch, Effort) -> Result<(), String>;
    let suites: [(&str, Suite); 6] = [
        ("coreutils", coreutils::run),
        ("libs", libs::run),
        ("exec", exec::run),
        ("unixbench", unixbench::run),
        ("apps", apps::run),
        ("large", large::run),
    ];
    for (name, suite) in suites {
        if selected(name) {
            suite(&mut switch, effort)?;
        }
    }
    switch.enter(Config::Baseline)?;
    let end_clock = clocksource();
    if end_clock != start_clock {
        return Err(format!("the clocksource changed from {start_clock} to {end_clock} during the run"));
    }
    console::emit("meta", "clocksource-is-tsc", "-", effort.index, f64::from(u8::from(end_clock == "tsc")), "bool");
    console::emit("meta", "sha256-ni", "-", effort.index, f64::from(u8::from(sha256::uses_sha_ni())), "bool");
    Ok(())
}
