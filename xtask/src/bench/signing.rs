//! Signing throughput on the host (suite `signing`): `elfsig sign --recursive` over a tree of
//! real programs, in files per second, with RSA-3072 and ECDSA P-256 keys from files and on a
//! SoftHSM2 token, on one core and on all. The configurations are interleaved round by round
//! (rotating order), and every run starts from the same unsigned tree.

use elfsig_guest::image::BenchEffort;
use std::fmt::Write as _;
use std::fs;
use std::path::Path;
use std::time::Instant;

use super::results::{Record, Results, mean_sd};
use crate::Result;
use crate::cmd::Cmd;
use crate::keys::{KeyPair, TestKeys};
use crate::paths;

/// The suite's name in results.
pub const SUITE: &str = "signing";

/// The programs the tree holds copies of.
const PROGRAMS: [&str; 4] = ["ls", "cp", "tar", "grep"];

/// Measures, and returns the records (`signing,<key>-<cores>,<cores>,run,files/s`).
pub fn measure(elfsig: &Path, keys: &TestKeys, effort: BenchEffort) -> Result<Results> {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let keyed: [(&str, &KeyPair); 4] = [
        ("rsa-3072-file", &keys.kernel),
        ("ecdsa-p256-file", &keys.ecdsa_p256),
        ("rsa-3072-softhsm", &keys.token_rsa),
        ("ecdsa-p256-softhsm", &keys.token_ecdsa),
    ];
    let dir = paths::target().join("bench/signing");
    let pristine = dir.join("pristine");
    let copies = effort.pick(64, 16, 2);
    let files = make_tree(&pristine, copies)?;
    let tree = dir.join("tree");
    let mut results = Results::default();
    let rounds = effort.pick(5, 2, 1);
    let mut configurations: Vec<(&str, &KeyPair, usize)> = Vec::new();
    for (name, key) in keyed {
        for threads in [1, cores] {
            configurations.push((name, key, threads));
        }
    }
    for run in 0..rounds {
        eprintln!("xtask: signing throughput, round {}/{rounds}", run + 1);
        let mut order = configurations.clone();
        order.rotate_left(run % configurations.len());
        for (name, key, threads) in order {
            let _ = fs::remove_dir_all(&tree);
            Cmd::new("cp").args(["-a"]).arg(&pristine).arg(&tree).run()?;
            let start = Instant::now();
            key.sign(elfsig).env("RAYON_NUM_THREADS", threads.to_string()).arg("--recursive").arg(&tree).run()?;
            let seconds = start.elapsed().as_secs_f64();
            results.records.push(Record {
                suite: SUITE.into(),
                case: format!("{name}-{}", cores_name(threads)),
                config: cores_name(threads),
                run,
                value: files as f64 / seconds,
                unit: "files/s".into(),
            });
        }
    }
    let _ = fs::remove_dir_all(&tree);
    Ok(results)
}

fn cores_name(threads: usize) -> String {
    if threads == 1 { "1-core".into() } else { format!("{threads}-cores") }
}

/// `copies` copies of each program in [`PROGRAMS`] under `dir`, in two directories. Returns
/// how many files.
fn make_tree(dir: &Path, copies: usize) -> Result<usize> {
    let _ = fs::remove_dir_all(dir);
    let mut files = 0;
    for program in PROGRAMS {
        let bytes =
            fs::read(crate::vm::initramfs::system(program)?).map_err(|e| format!("cannot read {program}: {e}"))?;
        for i in 0..copies {
            let sub = dir.join(if i % 2 == 0 { "a" } else { "b" });
            fs::create_dir_all(&sub).map_err(|e| format!("cannot create {}: {e}", sub.display()))?;
            let path = sub.join(format!("{program}-{i}"));
            fs::write(&path, &bytes).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
            files += 1;
        }
    }
    Ok(files)
}

/// The report's section: files/s per key and cores, and each against the RSA key file.
pub fn markdown(results: &Results) -> String {
    let mut md = String::new();
    md.push_str(
        "## signing: `elfsig sign --recursive` on the host, files per second\n\n\
         A tree of copies of ls, cp, tar and grep, signed from unsigned in every run; configurations \
         interleaved. Keys: RSA-3072 and ECDSA P-256, in PEM files and on a SoftHSM2 token \
         (PKCS#11, one login, a session per worker).\n\n\
         | key | cores | files/s (mean ± sd) | vs RSA-3072 file, same cores |\n|---|---:|---:|---:|\n",
    );
    let mut cases: Vec<(String, String)> = Vec::new();
    for r in results.records.iter().filter(|r| r.suite == SUITE) {
        if !cases.iter().any(|(case, _)| *case == r.case) {
            cases.push((r.case.clone(), r.config.clone()));
        }
    }
    for (case, cores) in &cases {
        let values = results.values(SUITE, case, cores);
        let (mean, sd) = mean_sd(&values);
        let key = case.strip_suffix(&format!("-{cores}")).unwrap_or(case);
        let reference = mean_sd(&results.values(SUITE, &format!("rsa-3072-file-{cores}"), cores)).0;
        let _ = writeln!(md, "| {key} | {cores} | {mean:.0} ± {sd:.0} | {:.2}× |", mean / reference);
    }
    md.push('\n');
    md
}
