//! Native measurements on the host, taken first while the machine is quiet: the criterion bench
//! of the CLI and of the module's exec path, OpenSSL's SHA-256 and RSA-3072 verification, and
//! how long the benchmarked programs take to run natively. Together they project the VM's
//! first-exec costs onto real hardware, since the VM runs under emulation here.

use elfsig_guest::image::BenchEffort;
use std::fs;
use std::process::{Command, Stdio};
use std::time::Instant;

use crate::Result;
use crate::cmd::Cmd;
use crate::paths;

/// The programs of the coreutils table.
pub const COREUTILS: [&str; 18] = [
    "cp", "df", "echo", "false", "grep", "kill", "less", "ls", "mkdir", "mount", "mv", "rm", "rmdir", "tar", "touch",
    "true", "umount", "uname",
];

/// One criterion result.
#[derive(Debug, Clone)]
pub struct Criterion {
    /// Group (`verify`, `sign`, `exec-path`, `first-exec`).
    pub group: String,
    /// Benchmark within the group.
    pub name: String,
    /// Mean time per iteration, in ns.
    pub mean_ns: f64,
    /// Bytes per iteration, when the bench declares a throughput.
    pub bytes: Option<f64>,
}

/// The native figures.
#[derive(Debug, Clone)]
pub struct Native {
    /// CPU model.
    pub cpu: String,
    /// `openssl speed -evp sha256` on 16 KiB blocks, MB/s.
    pub sha256_mbps: f64,
    /// `openssl speed rsa3072`, microseconds per verification.
    pub rsa3072_verify_us: f64,
    /// Criterion's results.
    pub criterion: Vec<Criterion>,
    /// Microseconds per `PROGRAM --version` run natively, for the coreutils programs.
    pub exec_us: Vec<(String, f64)>,
}

impl Native {
    /// A criterion result.
    pub fn bench(&self, group: &str, name: &str) -> Option<&Criterion> {
        self.criterion.iter().find(|c| c.group == group && c.name == name)
    }
}

/// Takes the native measurements.
pub fn measure(effort: BenchEffort) -> Result<Native> {
    let mut cmd = Cmd::cargo().args(["bench", "--package", "elfsig-cli", "--bench", "elfsig"]).dir(&paths::root());
    if effort == BenchEffort::Smoke {
        // The smoke checks that the bench runs and gives its rows: the test profile, whose
        // units the workspace tests compiled (all but 2 of 184; the bench profile's share none).
        cmd = cmd.args(["--profile", "dev"]);
    }
    if effort != BenchEffort::Full {
        cmd = cmd.args(["--", "--quick"]);
    }
    cmd.run()?;
    Ok(Native {
        cpu: cpu_model(),
        sha256_mbps: openssl_sha256()?,
        rsa3072_verify_us: openssl_rsa3072_verify_us()?,
        criterion: criterion_results()?,
        exec_us: exec_times(effort.pick(300, 50, 5))?,
    })
}

fn cpu_model() -> String {
    let info = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    info.lines()
        .find_map(|l| l.strip_prefix("model name").and_then(|r| r.split_once(':')).map(|(_, m)| m.trim().to_owned()))
        .unwrap_or_else(|| "unknown".into())
}

fn openssl_sha256() -> Result<f64> {
    let out = Cmd::new("openssl").args(["speed", "-evp", "sha256", "-bytes", "16384", "-seconds", "3"]).read()?;
    let line = out.lines().rev().find(|l| l.starts_with("sha256")).ok_or("no sha256 line from openssl speed")?;
    let kb: f64 = line
        .split_whitespace()
        .last()
        .and_then(|v| v.trim_end_matches('k').parse().ok())
        .ok_or_else(|| format!("cannot parse openssl speed output: {line}"))?;
    Ok(kb / 1000.0)
}

fn openssl_rsa3072_verify_us() -> Result<f64> {
    let out = Cmd::new("openssl").args(["speed", "-seconds", "2", "rsa3072"]).read()?;
    // "rsa 3072 bits 0.001234s 0.000043s  810.4  23256.0": sign/s and verify/s last.
    let line = out.lines().find(|l| l.starts_with("rsa 3072 bits")).ok_or("no rsa 3072 line from openssl speed")?;
    let verify_per_s: f64 = line
        .split_whitespace()
        .last()
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| format!("cannot parse openssl speed output: {line}"))?;
    Ok(1e6 / verify_per_s)
}

fn criterion_results() -> Result<Vec<Criterion>> {
    let root = paths::target().join("criterion");
    let mut results = Vec::new();
    for group in ["verify", "sign", "exec-path", "first-exec"] {
        let Ok(entries) = fs::read_dir(root.join(group)) else { continue };
        let mut names: Vec<String> =
            entries.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect();
        names.sort();
        for name in names.into_iter().filter(|n| n != "report") {
            let base = root.join(group).join(&name).join("new");
            let (Ok(estimates), Ok(meta)) =
                (fs::read_to_string(base.join("estimates.json")), fs::read_to_string(base.join("benchmark.json")))
            else {
                continue;
            };
            let parse = |text: &str| serde_json::from_str::<serde_json::Value>(text).unwrap_or_default();
            let (estimates, meta) = (parse(&estimates), parse(&meta));
            let Some(mean_ns) = estimates["mean"]["point_estimate"].as_f64() else { continue };
            let bytes = meta["throughput"]["Bytes"].as_f64();
            results.push(Criterion { group: group.into(), name, mean_ns, bytes });
        }
    }
    if results.is_empty() {
        return Err(format!("no criterion results under {}", root.display()));
    }
    Ok(results)
}

/// Natively, microseconds per `PROGRAM --version`, averaged over `runs`.
fn exec_times(runs: usize) -> Result<Vec<(String, f64)>> {
    let mut times = Vec::new();
    for program in COREUTILS {
        let path = elfsig_fixtures::system_binary(program).ok_or_else(|| format!("{program} is not installed"))?;
        let start = Instant::now();
        for _ in 0..runs {
            Command::new(&path)
                .arg("--version")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .map_err(|e| format!("cannot run {}: {e}", path.display()))?;
        }
        times.push((program.to_owned(), start.elapsed().as_secs_f64() * 1e6 / runs as f64));
    }
    Ok(times)
}
