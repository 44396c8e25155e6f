//! `cargo xtask bench`: build the tools and measure.
//!
//! Today this runs the native criterion benchmarks of elfsig (verification and signing) and
//! reports them next to OpenSSL's SHA-256 throughput on the same machine, in
//! `target/bench/latest/report.md`. The VM benchmarks of the kernel module join it when the
//! module lands.

use std::fmt::Write as _;
use std::fs;

use crate::cmd::Cmd;
use crate::{Result, parse_options, paths};

/// Runs the task.
pub fn run(args: &[String]) -> Result {
    let options = parse_options(args, &["--quick"], &[])?;
    let quick = options.flag("--quick");
    let root = paths::root();
    let mut cmd = Cmd::new("cargo").args(["bench", "--package", "elfsig-cli", "--bench", "elfsig"]).dir(&root);
    if quick {
        cmd = cmd.args(["--", "--quick"]);
    }
    cmd.run()?;
    report(quick)
}

/// OpenSSL's SHA-256 throughput in MB/s on 16 KiB blocks.
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

/// Reads criterion's estimates and writes the report.
fn report(quick: bool) -> Result {
    let criterion = paths::target().join("criterion");
    let sha = openssl_sha256()?;
    let mut md = String::from("# elfsig native benchmarks\n\n");
    let _ = writeln!(md, "OpenSSL SHA-256 (`openssl speed -evp sha256`, 16 KiB blocks): {sha:.0} MB/s\n");
    let _ = writeln!(md, "| benchmark | mean time | throughput | vs OpenSSL SHA-256 |\n|---|---:|---:|---:|");
    let mut rows = 0;
    for group in ["verify", "sign"] {
        let dir = criterion.join(group);
        let Ok(entries) = fs::read_dir(&dir) else { continue };
        let mut names: Vec<String> =
            entries.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect();
        names.sort();
        for name in names.into_iter().filter(|n| n != "report") {
            let base = dir.join(&name).join("new");
            let (Ok(estimates), Ok(meta)) =
                (fs::read_to_string(base.join("estimates.json")), fs::read_to_string(base.join("benchmark.json")))
            else {
                continue;
            };
            let Some(mean_ns) = json_number_after(&estimates, "\"mean\"", "\"point_estimate\"") else { continue };
            let bytes = json_number_after(&meta, "\"throughput\"", "\"Bytes\"");
            let (throughput, ratio) = match bytes {
                Some(b) => {
                    let mbs = b / mean_ns * 1000.0;
                    (format!("{mbs:.0} MB/s"), format!("{:.0}%", mbs / sha * 100.0))
                }
                None => ("".into(), "".into()),
            };
            let _ = writeln!(md, "| {group}/{name} | {:.3} ms | {throughput} | {ratio} |", mean_ns / 1e6);
            rows += 1;
        }
    }
    if rows == 0 {
        return Err(format!("no criterion results under {}", criterion.display()));
    }
    if quick {
        md.push_str("\n(--quick: few samples; figures are rough.)\n");
    }
    let latest = paths::target().join("bench/latest");
    fs::create_dir_all(&latest).map_err(|e| format!("cannot create {}: {e}", latest.display()))?;
    fs::write(latest.join("report.md"), &md).map_err(|e| format!("cannot write report: {e}"))?;
    print!("{md}");
    eprintln!("xtask: report in {}", latest.join("report.md").display());
    Ok(())
}

/// The number after `key` that follows `section` in a JSON text: enough for criterion's files
/// without a JSON parser in xtask.
fn json_number_after(json: &str, section: &str, key: &str) -> Option<f64> {
    let start = json.find(section)?;
    let rest = &json[start..];
    let at = rest.find(key)? + key.len();
    let value = rest[at..].trim_start().strip_prefix(':')?.trim_start();
    let end = value.find(|c: char| !(c.is_ascii_digit() || ".eE+-".contains(c))).unwrap_or(value.len());
    value[..end].parse().ok()
}
