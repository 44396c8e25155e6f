//! UnixBench-style microbenchmarks, each run for a fixed time and reported as a rate: file copy
//! with 4 KiB, 1 KiB and 256 B buffers, pipe throughput, pipe context switching, process
//! creation, execl, and shell scripts (8 concurrent). Only the last two execute programs; the
//! others show whether the module costs anything away from exec.

use std::fs::File;
use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use elfsig_guest::harness::Context;
use elfsig_guest::system;

use crate::config::{Config, Switch};
use crate::console::emit;
use crate::rounds::Effort;

/// The shell script each of the 8 concurrent shells runs: a few coreutils over a word list,
/// like UnixBench's. `$1` is the directory of the programs; `$2` is `cold` to flush the verdict
/// cache before every command.
const SHELL_SCRIPT: &str = r#"P=$1; C=$2
f() { [ "$C" = cold ] && echo 1 > /sys/kernel/security/elfsig/flush; }
f; $P/sort < /tmp/ub/words > /tmp/ub/s.$$
f; $P/od /tmp/ub/s.$$ > /tmp/ub/o.$$
f; $P/grep -c e /tmp/ub/o.$$ > /dev/null
f; $P/tee /tmp/ub/t.$$ < /tmp/ub/s.$$ > /dev/null
f; $P/wc -l /tmp/ub/t.$$ > /dev/null
f; $P/rm -f /tmp/ub/s.$$ /tmp/ub/o.$$ /tmp/ub/t.$$
"#;

/// Length of each execl chain.
const CHAIN: u32 = 10;

/// Writes the test files (a word list of `words` lines).
fn setup(words: usize) -> Result<(), String> {
    std::fs::create_dir_all("/tmp/ub").context("create /tmp/ub")?;
    let mut data = vec![0u8; 2 << 20];
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for b in &mut data {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = x as u8;
    }
    std::fs::write("/tmp/ub/src", &data).context("write /tmp/ub/src")?;
    let words: String = (0..words).map(|i| format!("{:x}elfsig{}\n", (i * 7919) % 4093, i % 17)).collect();
    std::fs::write("/tmp/ub/words", words).context("write words")?;
    std::fs::write("/tmp/ub/shell.sh", SHELL_SCRIPT).context("write shell.sh")
}

/// Runs the suite.
pub(crate) fn run(switch: &mut Switch, effort: Effort) -> Result<(), String> {
    // A smoke run's shell scripts sort a tenth of the words: under emulation, the eight
    // shells' full run in every configuration was most of the smoke run's time.
    setup(effort.pick(2000, 2000, 200))?;
    // Each slice is a run of its own: the report compares every configuration with the
    // baseline measured in the same slice.
    let slices = effort.pick(3, 2, 1);
    let limit = Duration::from_secs_f64(effort.pick(0.5, 0.25, 0.05));
    let rounds = effort.pick(4, 2, 1);
    for round in effort.announced("unixbench round", rounds) {
        let measured = switch.interleave(round, slices, prepare, |config| {
            let mut rates = Vec::with_capacity(TESTS.len());
            for buf in [4096, 1024, 256] {
                rates.push(file_copy(buf, limit)?);
            }
            rates.push(pipe_throughput(limit)?);
            rates.push(context_switching(limit)?);
            rates.push(process_creation(config, limit)?);
            rates.push(execl(config, limit)?);
            rates.push(shell8(config, limit)?);
            Ok(rates)
        })?;
        for (slice, values) in measured.iter().enumerate() {
            for config in Config::ALL {
                for ((test, unit), rate) in TESTS.iter().zip(&values[config.index()]) {
                    emit("unixbench", test, config.name(), round * slices + slice, *rate, unit);
                }
            }
        }
    }
    Ok(())
}

/// Runs each test once, untimed, the ones that execute first: the first tests measured then
/// follow the same work in every configuration, not a configuration's own (under emulation,
/// what ran just before changes how fast memory-bound code runs).
fn prepare(config: Config) -> Result<(), String> {
    run_chain(config)?;
    run_script(config)?;
    let once = Duration::from_millis(50);
    process_creation(config, once)?;
    for buf in [4096, 1024, 256] {
        file_copy(buf, once)?;
    }
    pipe_throughput(once)?;
    context_switching(once).map(drop)
}

/// The tests, in the order `run` measures them, with their units.
const TESTS: [(&str, &str); 8] = [
    ("file-copy-4096", "KB/s"),
    ("file-copy-1024", "KB/s"),
    ("file-copy-256", "KB/s"),
    ("pipe-throughput", "lps"),
    ("pipe-context-switching", "lps"),
    ("process-creation", "lps"),
    ("execl", "lps"),
    ("shell-scripts-8", "lpm"),
];

/// Copies a 2 MiB file with `buf`-byte reads and writes for `limit`; KB/s.
fn file_copy(buf: usize, limit: Duration) -> Result<f64, String> {
    let mut buffer = vec![0u8; buf];
    let start = Instant::now();
    let mut bytes = 0u64;
    while start.elapsed() < limit {
        let mut from = File::open("/tmp/ub/src").context("open src")?;
        let mut to = File::create("/tmp/ub/dst").context("create dst")?;
        loop {
            let n = from.read(&mut buffer).context("read")?;
            if n == 0 {
                break;
            }
            to.write_all(&buffer[..n]).context("write")?;
            bytes += n as u64;
        }
    }
    Ok(bytes as f64 / 1024.0 / start.elapsed().as_secs_f64())
}

/// Writes and reads 512 bytes through a pipe in one process; loops per second.
fn pipe_throughput(limit: Duration) -> Result<f64, String> {
    let (mut reader, mut writer) = std::io::pipe().context("pipe")?;
    let mut block = [0u8; 512];
    let start = Instant::now();
    let mut loops = 0u64;
    while start.elapsed() < limit {
        writer.write_all(&block).context("write")?;
        reader.read_exact(&mut block).context("read")?;
        loops += 1;
    }
    Ok(loops as f64 / start.elapsed().as_secs_f64())
}

/// Two processes pass a counter back and forth through two pipes; round trips per second.
fn context_switching(limit: Duration) -> Result<f64, String> {
    // The child inherits every descriptor, the parent's pipe ends too, so it never sees end of
    // file: it stops on this value instead.
    const STOP: u32 = u32::MAX;
    let (mut to_child_r, mut to_child_w) = std::io::pipe().context("pipe")?;
    let (mut to_parent_r, mut to_parent_w) = std::io::pipe().context("pipe")?;
    let child = system::fork(move || {
        let mut word = [0u8; 4];
        while to_child_r.read_exact(&mut word).is_ok() && u32::from_le_bytes(word) != STOP {
            if to_parent_w.write_all(&word).is_err() {
                break;
            }
        }
        0
    })
    .context("fork")?;
    let start = Instant::now();
    let mut loops = 0u32;
    let mut word = [0u8; 4];
    while start.elapsed() < limit {
        to_child_w.write_all(&loops.to_le_bytes()).context("write")?;
        to_parent_r.read_exact(&mut word).context("read")?;
        loops += 1;
    }
    let rate = f64::from(loops) / start.elapsed().as_secs_f64();
    to_child_w.write_all(&STOP.to_le_bytes()).context("write")?;
    system::wait(child).context("wait")?;
    Ok(rate)
}

/// fork, exit, wait; per second. Measured in a fresh process, `elfsig-bench spawn`: the cost of
/// a fork grows with the forking process's mappings, and this one's grow as the bench runs.
fn process_creation(config: Config, limit: Duration) -> Result<f64, String> {
    let program = config.program("elfsig-bench");
    let output = Command::new(&program)
        .args(["spawn", &limit.as_secs_f64().to_string()])
        .stderr(Stdio::inherit())
        .output()
        .context(&format!("exec {program}"))?;
    if !output.status.success() {
        return Err(format!("{program} spawn failed: {}", output.status));
    }
    let text = String::from_utf8_lossy(&output.stdout);
    text.trim().parse().map_err(|_| format!("{program} spawn printed {text:?}"))
}

/// `elfsig-bench spawn SECONDS`: forks, exits and waits for SECONDS, then prints the rate.
pub(crate) fn spawn_loop(args: &[String]) -> ! {
    let seconds: f64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(0.0);
    let limit = Duration::from_secs_f64(seconds);
    let start = Instant::now();
    let mut loops = 0u64;
    while start.elapsed() < limit {
        let forked = system::fork(|| 0).and_then(system::wait);
        if let Err(e) = forked {
            eprintln!("spawn: {e}");
            std::process::exit(1);
        }
        loops += 1;
    }
    println!("{}", loops as f64 / start.elapsed().as_secs_f64());
    std::process::exit(0)
}

/// Chains of a program executing itself ([`CHAIN`] times); execs per second.
fn execl(config: Config, limit: Duration) -> Result<f64, String> {
    let start = Instant::now();
    let mut execs = 0u64;
    while start.elapsed() < limit {
        run_chain(config)?;
        execs += u64::from(CHAIN) + 1;
    }
    Ok(execs as f64 / start.elapsed().as_secs_f64())
}

/// One execl chain.
fn run_chain(config: Config) -> Result<(), String> {
    let program = config.program("elfsig-bench");
    config.before_exec();
    let status = Command::new(&program)
        .args(["execl-chain", &CHAIN.to_string(), config.script_mode()])
        .status()
        .context(&format!("exec {program}"))?;
    if status.success() { Ok(()) } else { Err(format!("execl chain failed: {status}")) }
}

/// The rest of an execl chain: executes itself `left` more times, then exits.
pub(crate) fn execl_chain(args: &[String]) -> ! {
    use std::os::unix::process::CommandExt;
    let left: u32 = args.get(2).and_then(|n| n.parse().ok()).unwrap_or(0);
    let mode = args.get(3).map_or("warm", String::as_str);
    if left == 0 {
        std::process::exit(0);
    }
    if mode == "cold" {
        let _ = elfsig_guest::harness::write_control("flush", "1");
    }
    let error = Command::new(&args[0]).args(["execl-chain", &(left - 1).to_string(), mode]).exec();
    eprintln!("execl chain: {error}");
    std::process::exit(1)
}

/// 8 shells running [`SHELL_SCRIPT`] over and over; scripts per minute, all shells together.
fn shell8(config: Config, limit: Duration) -> Result<f64, String> {
    let start = Instant::now();
    let workers: Vec<_> = (0..8)
        .map(|_| {
            std::thread::spawn(move || -> Result<u64, String> {
                let mut loops = 0u64;
                while start.elapsed() < limit {
                    run_script(config)?;
                    loops += 1;
                }
                Ok(loops)
            })
        })
        .collect();
    let mut loops = 0u64;
    for worker in workers {
        loops += worker.join().map_err(|_| "shell worker panicked".to_owned())??;
    }
    Ok(loops as f64 * 60.0 / start.elapsed().as_secs_f64())
}

/// One run of [`SHELL_SCRIPT`].
fn run_script(config: Config) -> Result<(), String> {
    let status = Command::new(config.program("busybox"))
        .args(["sh", "/tmp/ub/shell.sh", config.bin_dir(), config.script_mode()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .status()
        .context("exec the shell")?;
    if status.success() { Ok(()) } else { Err(format!("shell script failed: {status}")) }
}
