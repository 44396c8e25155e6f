//! Application workloads, repeated (40 times in a full run): syncing a 1440-file, ~10 MB tree
//! with rsync; creating and extracting it with tar; a shell pipeline of 80 short commands.
//! Each is reported as milliseconds per run; the report gives mean and standard deviation.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use elfsig_guest::harness::Context;

use crate::config::{Config, Switch};
use crate::measure::exec_us;
use crate::rounds::{Effort, Totals};

/// 20 pipelines of four short commands; `$1` is the directory of the programs, `$2` is `cold`
/// to flush the verdict cache before each pipeline.
const PIPELINE: &str = r#"P=$1; C=$2; i=0
while [ $i -lt 20 ]; do
  [ "$C" = cold ] && echo 1 > /sys/kernel/security/elfsig/flush
  $P/echo $i | $P/tr 0-9 a-j | $P/cat | $P/wc -c > /dev/null
  i=$((i+1))
done
"#;

/// Writes the tree: `dirs` directories (36, about 10 MB in all; a smoke run's 4, about 1 MB) of
/// 40 files, sizes spread up to 14 KB.
fn setup(dirs: usize) -> Result<(), String> {
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for d in 0..dirs {
        let dir = format!("/tmp/apps/tree/d{d:02}");
        std::fs::create_dir_all(&dir).context("create tree")?;
        for f in 0..40 {
            let len = (next() % 14_000) as usize + 1;
            let bytes: Vec<u8> = (0..len).map(|_| b'a' + (next() % 26) as u8).collect();
            std::fs::write(format!("{dir}/f{f:02}.txt"), bytes).context("write tree")?;
        }
    }
    std::fs::write("/tmp/apps/pipeline.sh", PIPELINE).context("write pipeline.sh")
}

fn timed_ms(program: &str, args: &[&str]) -> Result<f64, String> {
    let start = Instant::now();
    let status = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .status()
        .context(&format!("exec {program}"))?;
    if !status.success() {
        return Err(format!("{program} {args:?} failed: {status}"));
    }
    Ok(start.elapsed().as_secs_f64() * 1000.0)
}

fn clear(path: &str) -> Result<(), String> {
    if Path::new(path).exists() {
        std::fs::remove_dir_all(path).context(&format!("remove {path}"))?;
    }
    std::fs::create_dir_all(path).context(&format!("create {path}"))
}

/// Runs the suite: each run one slice.
pub(crate) fn run(switch: &mut Switch, effort: Effort) -> Result<(), String> {
    setup(effort.pick(36, 36, 4))?;
    SUITE.measure(switch, effort, (effort.pick(40, 6, 1), 1), prepare, measure)
}

/// The workloads, in the order `measure` runs them.
const CASES: [&str; 4] = ["rsync-tree", "tar-create", "tar-extract", "shell-pipeline-80-execs"];

/// How the suite records its totals: milliseconds per run.
const SUITE: Totals<'_> = Totals { suite: "apps", round: "run", cases: &CASES, unit: "ms" };

/// Executes every program the workloads use once.
fn prepare(config: Config) -> Result<(), String> {
    for program in ["rsync", "tar", "echo", "tr", "cat", "wc"] {
        exec_us(&config.program(program), &["--version"])?;
    }
    exec_us(&config.program("busybox"), &["true"]).map(drop)
}

/// Runs each workload once; milliseconds.
fn measure(config: Config) -> Result<Vec<f64>, String> {
    let mut times = Vec::with_capacity(CASES.len());

    clear("/tmp/apps/synced")?;
    config.before_exec();
    times.push(timed_ms(&config.program("rsync"), &["-a", "/tmp/apps/tree/", "/tmp/apps/synced/"])?);

    let _ = std::fs::remove_file("/tmp/apps/tree.tar");
    config.before_exec();
    times.push(timed_ms(&config.program("tar"), &["-cf", "/tmp/apps/tree.tar", "-C", "/tmp/apps", "tree"])?);

    clear("/tmp/apps/untar")?;
    config.before_exec();
    times.push(timed_ms(&config.program("tar"), &["-xf", "/tmp/apps/tree.tar", "-C", "/tmp/apps/untar"])?);

    config.before_exec();
    times.push(timed_ms(
        &config.program("busybox"),
        &["sh", "/tmp/apps/pipeline.sh", config.bin_dir(), config.script_mode()],
    )?);
    Ok(times)
}
