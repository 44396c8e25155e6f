//! Signing throughput on the host (suite `signing`): `elfsig sign --recursive` over a tree of
//! real programs, in files per second, with RSA-3072 and ECDSA P-256 keys from files and on a
//! SoftHSM2 token, on one core and on all; `elfsig deb sign` over a directory of Debian
//! packages (xz, as Debian's), in packages and megabytes per second; and `elfsig oci sign` of a
//! container image of gzip layers (as umoci writes them), in layers and megabytes per second.
//! The configurations are
//! interleaved round by round (rotating order), and every run starts from the same unsigned
//! tree.

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
    // Packages: the RSA key file, one core and all.
    let packages_dir = dir.join("packages");
    let (packages, package_bytes) = make_packages(&packages_dir, effort.pick(16, 8, 2))?;
    let signed_packages = dir.join("packages-signed");
    let mut configurations: Vec<(&str, &KeyPair, usize, bool)> =
        configurations.into_iter().map(|(name, key, threads)| (name, key, threads, false)).collect();
    for threads in [1, cores] {
        configurations.push((PACKAGES, &keys.kernel, threads, true));
        configurations.push((IMAGE, &keys.kernel, threads, true));
    }
    // An image: the RSA key file, one core and all.
    let image_dir = dir.join("image");
    let (layers, layer_bytes) = make_image(&image_dir, effort.pick(8, 4, 2))?;
    let signed_image = dir.join("image-signed");
    for run in 0..rounds {
        eprintln!("xtask: signing throughput, round {}/{rounds}", run + 1);
        let mut order = configurations.clone();
        order.rotate_left(run % configurations.len());
        for (name, key, threads, packaged) in order {
            let cores = cores_name(threads);
            if packaged {
                let (input, output, signing, count, bytes, unit) = if name == IMAGE {
                    (&image_dir, &signed_image, ["oci", "sign", "-o"], layers, layer_bytes, "layers/s")
                } else {
                    (
                        &packages_dir,
                        &signed_packages,
                        ["deb", "sign", "--output-dir"],
                        packages,
                        package_bytes,
                        "packages/s",
                    )
                };
                let _ = fs::remove_dir_all(output);
                let start = Instant::now();
                key.signing(elfsig, &signing[..2])
                    .env("RAYON_NUM_THREADS", threads.to_string())
                    .arg(signing[2])
                    .arg(output)
                    .arg(input)
                    .run()?;
                let seconds = start.elapsed().as_secs_f64();
                let record = |case: String, value: f64, unit: &str| Record {
                    suite: SUITE.into(),
                    case,
                    config: cores.clone(),
                    run,
                    value,
                    unit: unit.into(),
                };
                results.records.push(record(format!("{name}-{cores}"), count as f64 / seconds, unit));
                results.records.push(record(format!("{name}-mb-{cores}"), bytes as f64 / 1e6 / seconds, "MB/s"));
                continue;
            }
            let _ = fs::remove_dir_all(&tree);
            Cmd::new("cp").args(["-a"]).arg(&pristine).arg(&tree).run()?;
            let start = Instant::now();
            key.sign(elfsig).env("RAYON_NUM_THREADS", threads.to_string()).arg("--recursive").arg(&tree).run()?;
            let seconds = start.elapsed().as_secs_f64();
            results.records.push(Record {
                suite: SUITE.into(),
                case: format!("{name}-{cores}"),
                config: cores,
                run,
                value: files as f64 / seconds,
                unit: "files/s".into(),
            });
        }
    }
    let _ = fs::remove_dir_all(&tree);
    let _ = fs::remove_dir_all(&signed_packages);
    let _ = fs::remove_dir_all(&signed_image);
    Ok(results)
}

/// The case name of `deb sign`'s runs.
const PACKAGES: &str = "deb-rsa-3072-file";
/// The case name of `oci sign`'s runs.
const IMAGE: &str = "oci-rsa-3072-file";

/// An OCI image layout at `dir` of `count` layers, each added by `umoci repack` (gzip, Go's
/// tar): the programs in [`PROGRAMS`], a hard link, a script and documentation. Returns how
/// many layers, and their blobs' bytes.
fn make_image(dir: &Path, count: usize) -> Result<(usize, u64)> {
    crate::deps::ensure(&[crate::deps::Need::Deb("umoci")])?;
    let trees = dir.with_file_name("image-trees");
    let _ = fs::remove_dir_all(dir);
    let _ = fs::remove_dir_all(&trees);
    let layout = dir;
    let image = format!("{}:bench", layout.display());
    Cmd::new("umoci").args(["init", "--layout"]).arg(layout).run()?;
    Cmd::new("umoci").args(["new", "--image", &image]).run()?;
    let rootless: &[&str] = if crate::deps::is_root() { &[] } else { &["--rootless"] };
    let bundle = trees.join("bundle");
    for i in 0..count {
        // `umoci insert` would be quicker, but 0.4.7's writes its layer cut short (GNU tar,
        // skopeo and elfsig all find it ends inside an entry): unpack, add, repack.
        let _ = fs::remove_dir_all(&bundle);
        Cmd::new("umoci").arg("unpack").args(rootless).args(["--image", &image]).arg(&bundle).read()?;
        let tree = bundle.join(format!("rootfs/opt/layer-{i}"));
        let doc = tree.join("share/doc");
        fs::create_dir_all(&doc).map_err(|e| format!("cannot create {}: {e}", doc.display()))?;
        for program in PROGRAMS {
            let from = crate::vm::staged::system(program)?;
            fs::copy(&from, tree.join(program)).map_err(|e| format!("cannot copy {program}: {e}"))?;
        }
        fs::hard_link(tree.join("ls"), tree.join("dir")).map_err(|e| e.to_string())?;
        fs::write(tree.join("script"), "#!/bin/sh\necho hello\n").map_err(|e| e.to_string())?;
        let text = "A line of documentation, as images carry.\n".repeat(2000);
        fs::write(doc.join("README"), &text).map_err(|e| format!("cannot write the documentation: {e}"))?;
        Cmd::new("umoci").args(["repack", "--image", &image]).arg(&bundle).read()?;
    }
    let json = |path: std::path::PathBuf| -> Result<serde_json::Value> {
        let text = fs::read(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        serde_json::from_slice(&text).map_err(|e| format!("{}: {e}", path.display()))
    };
    let blob = |descriptor: &serde_json::Value| {
        layout
            .join("blobs/sha256")
            .join(descriptor["digest"].as_str().unwrap_or_default().trim_start_matches("sha256:"))
    };
    let manifest = json(blob(&json(layout.join("index.json"))?["manifests"][0]))?;
    let layers = manifest["layers"].as_array().cloned().unwrap_or_default();
    let bytes = layers.iter().map(|l| l["size"].as_u64().unwrap_or(0)).sum();
    fs::remove_dir_all(&trees).map_err(|e| format!("cannot remove {}: {e}", trees.display()))?;
    Ok((layers.len(), bytes))
}

/// `count` Debian packages under `dir`, built by dpkg-deb with xz (Debian's default): each
/// holds the programs in [`PROGRAMS`], a hard link, a script and documentation, as packages
/// do. Returns how many, and their bytes.
fn make_packages(dir: &Path, count: usize) -> Result<(usize, u64)> {
    let _ = fs::remove_dir_all(dir);
    fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let tree = dir.join("tree");
    let mut bytes = 0;
    for i in 0..count {
        let _ = fs::remove_dir_all(&tree);
        let bin = tree.join("usr/bin");
        let doc = tree.join(format!("usr/share/doc/bench-{i}"));
        for d in [&bin, &doc, &tree.join("DEBIAN")] {
            fs::create_dir_all(d).map_err(|e| format!("cannot create {}: {e}", d.display()))?;
        }
        for program in PROGRAMS {
            let from = crate::vm::staged::system(program)?;
            fs::copy(&from, bin.join(format!("{program}-{i}"))).map_err(|e| format!("cannot copy {program}: {e}"))?;
        }
        fs::hard_link(bin.join(format!("ls-{i}")), bin.join(format!("dir-{i}"))).map_err(|e| e.to_string())?;
        let text = "A line of documentation, as packages carry.\n".repeat(2000);
        fs::write(doc.join("README"), &text).map_err(|e| format!("cannot write the documentation: {e}"))?;
        fs::write(bin.join(format!("script-{i}")), "#!/bin/sh\necho hello\n").map_err(|e| e.to_string())?;
        fs::write(
            tree.join("DEBIAN/control"),
            format!(
                "Package: bench-{i}\nVersion: 1.0-1\nArchitecture: amd64\nMaintainer: elfsig <elfsig@example.org>\n\
                 Installed-Size: 2000\nDescription: a package to re-sign\n"
            ),
        )
        .map_err(|e| format!("cannot write the control file: {e}"))?;
        let deb = dir.join(format!("bench-{i}_1.0-1_amd64.deb"));
        Cmd::new("dpkg-deb").args(["--root-owner-group", "--build", "-Zxz"]).arg(&tree).arg(&deb).read()?;
        bytes += fs::metadata(&deb).map_err(|e| format!("cannot stat {}: {e}", deb.display()))?.len();
    }
    fs::remove_dir_all(&tree).map_err(|e| format!("cannot remove {}: {e}", tree.display()))?;
    Ok((count, bytes))
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
        let bytes = fs::read(crate::vm::staged::system(program)?).map_err(|e| format!("cannot read {program}: {e}"))?;
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
    for r in results.records.iter().filter(|r| r.suite == SUITE && r.unit == "files/s") {
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
    md.push_str(
        "\n`elfsig deb sign` over a directory of Debian packages built by dpkg-deb with xz (each: \
         ls, cp, tar and grep, a hard link, a script, documentation), RSA-3072 key file, every \
         package re-signed and compressed again from the same unsigned ones in every run; MB are \
         the input packages' bytes.\n\n| cores | packages/s (mean ± sd) | MB/s (mean ± sd) |\n|---:|---:|---:|\n",
    );
    let mut cores_seen: Vec<String> = Vec::new();
    for r in results.records.iter().filter(|r| r.suite == SUITE && r.unit == "packages/s") {
        if !cores_seen.contains(&r.config) {
            cores_seen.push(r.config.clone());
        }
    }
    for cores in &cores_seen {
        let (packages, packages_sd) = mean_sd(&results.values(SUITE, &format!("{PACKAGES}-{cores}"), cores));
        let (mb, mb_sd) = mean_sd(&results.values(SUITE, &format!("{PACKAGES}-mb-{cores}"), cores));
        let _ = writeln!(md, "| {cores} | {packages:.1} ± {packages_sd:.1} | {mb:.2} ± {mb_sd:.2} |");
    }
    md.push_str(
        "\n`elfsig oci sign` of an OCI image layout whose layers `umoci repack` wrote (gzip; each: ls, \
         cp, tar and grep, a hard link, a script, documentation), RSA-3072 key file, into a new \
         layout from the same unsigned image in every run; MB are the input layers' compressed \
         bytes.\n\n| cores | layers/s (mean ± sd) | MB/s (mean ± sd) |\n|---:|---:|---:|\n",
    );
    for cores in &cores_seen {
        let (layers, layers_sd) = mean_sd(&results.values(SUITE, &format!("{IMAGE}-{cores}"), cores));
        let (mb, mb_sd) = mean_sd(&results.values(SUITE, &format!("{IMAGE}-mb-{cores}"), cores));
        let _ = writeln!(md, "| {cores} | {layers:.1} ± {layers_sd:.1} | {mb:.2} ± {mb_sd:.2} |");
    }
    md.push('\n');
    md
}
