//! `cargo xtask fuzz`: cargo-fuzz on elfsig-core's targets and the CLI's round trip, with a seed
//! corpus made here from the synthetic fixtures and real binaries of several architectures, each
//! also signed.
//!
//! A crash leaves its input in the crate's `fuzz/artifacts/`; copy it into that crate's
//! `tests/regressions/` and the test suite replays it from then on.
//!
//! `--coverage` fuzzes nothing: it replays each target's corpus with coverage instrumentation
//! and reports, file by file, how much of elfsig's own code the corpus reaches (the full
//! `llvm-cov report` goes to `target/fuzz-coverage/<target>.txt`).

use std::fs;
use std::path::{Path, PathBuf};

use crate::cmd::Cmd;
use crate::deps::{self, FUZZ_TOOLS};
use crate::{Result, flags, paths};

/// The fuzz targets, and the crate whose `fuzz/` holds each.
pub const TARGETS: &[(&str, &str)] = &[
    ("parse", "crates/elfsig-core"),
    ("payload", "crates/elfsig-core"),
    ("policy", "crates/elfsig-core"),
    ("words", "crates/elfsig-core"),
    ("roundtrip", "crates/elfsig-cli"),
    ("deb", "crates/elfsig-cli"),
    ("oci", "crates/elfsig-cli"),
];

/// Largest seed and input: enough for small real programs, small enough to fuzz quickly.
const MAX_LEN: u64 = 256 * 1024;

/// Runs the task.
pub fn run(options: &flags::Fuzz) -> Result {
    let seconds = options.seconds.unwrap_or(60);
    let targets: Vec<(&str, &str)> = match options.target.as_deref() {
        Some(t) => match TARGETS.iter().find(|(name, _)| *name == t) {
            Some(target) => vec![*target],
            None => {
                let names: Vec<&str> = TARGETS.iter().map(|(name, _)| *name).collect();
                return Err(format!("unknown target {t:?}; targets: {}", names.join(", ")));
            }
        },
        None => TARGETS.to_vec(),
    };
    if options.coverage { coverage(&targets) } else { fuzz(&targets, seconds, Sanitizer::Address, Together::No) }
}

/// The short run `cargo xtask test` does: the targets build, the seeds pass, and a few seconds of
/// fuzzing find nothing. Without AddressSanitizer, which makes the build of the CLI's hundred
/// dependencies the longest part of the smoke: elfsig's own code has no `unsafe` for it to
/// check, and what a smoke can find (panics, overflows, debug assertions) needs none.
pub fn smoke() -> Result {
    fuzz(TARGETS, 15, Sanitizer::None, Together::Yes)
}

/// cargo-fuzz's `--sanitizer`.
#[derive(Clone, Copy)]
enum Sanitizer {
    /// Its default: memory errors in the dependencies' `unsafe` code too.
    Address,
    None,
}

impl Sanitizer {
    fn args(self) -> [&'static str; 2] {
        match self {
            Sanitizer::Address => ["--sanitizer", "address"],
            Sanitizer::None => ["--sanitizer", "none"],
        }
    }
}

/// Whether the targets fuzz at once, sharing the CPUs, or one after the other with all of it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Together {
    /// At once, for the smoke: a fuzzer keeps one CPU busy, so one alone leaves the rest idle.
    Yes,
    No,
}

fn fuzz(targets: &[(&str, &str)], seconds: u64, sanitizer: Sanitizer, together: Together) -> Result {
    deps::ensure(FUZZ_TOOLS)?;
    let corpus = write_corpus()?;
    let run = |(target, krate): &(&str, &str)| -> Result {
        let krate = paths::root().join(krate);
        Cmd::cargo()
            .args(["+nightly", "fuzz", "run", target])
            .args(sanitizer.args())
            .arg(corpus.join(target))
            .arg("--")
            .arg(format!("-max_total_time={seconds}"))
            .arg(format!("-max_len={MAX_LEN}"))
            .arg("-print_final_stats=1")
            .dir(&krate)
            .run()
            .map_err(|e| {
                format!(
                    "{e}\nthe crashing input is in {}; add it to {}",
                    krate.join("fuzz/artifacts").join(target).display(),
                    krate.join("tests/regressions").display()
                )
            })
    };
    if together == Together::No {
        return targets.iter().try_for_each(run);
    }
    // Built one after the other first (cargo builds one at a time anyway), then run at once.
    for (target, krate) in targets {
        Cmd::cargo()
            .args(["+nightly", "fuzz", "build", target])
            .args(sanitizer.args())
            .dir(&paths::root().join(krate))
            .run()?;
    }
    let results: Vec<Result> = std::thread::scope(|scope| {
        let running: Vec<_> = targets.iter().map(|target| scope.spawn(move || run(target))).collect();
        running.into_iter().map(|t| t.join().unwrap_or_else(|_| Err("a fuzzing thread panicked".into()))).collect()
    });
    let failures: Vec<String> = results.into_iter().filter_map(Result::err).collect();
    if failures.is_empty() { Ok(()) } else { Err(failures.join("\n")) }
}

/// Replays each target's corpus with coverage instrumentation and prints the line coverage of
/// elfsig's sources (dependencies and the standard library left out).
fn coverage(targets: &[(&str, &str)]) -> Result {
    deps::ensure(FUZZ_TOOLS)?;
    deps::ensure(&[deps::Need::NightlyLlvmTools])?;
    let llvm_cov = deps::nightly_llvm_tool("llvm-cov").ok_or("cannot find the nightly toolchain's llvm-cov")?;
    let corpus = write_corpus()?;
    let build = paths::target().join("fuzz-coverage-build");
    let reports = paths::target().join("fuzz-coverage");
    fs::create_dir_all(&reports).map_err(|e| format!("cannot create {}: {e}", reports.display()))?;
    for (target, krate) in targets {
        let krate = paths::root().join(krate);
        Cmd::cargo()
            .args(["+nightly", "fuzz", "coverage", target])
            .arg(corpus.join(target))
            .arg("--target-dir")
            .arg(&build)
            // Its instrumented build apart from the fuzzing one, which it would evict.
            .env("CARGO_BUILD_BUILD_DIR", &build)
            .dir(&krate)
            .run()?;
        let binary = build.join("x86_64-unknown-linux-gnu/release").join(target);
        let profile = krate.join("fuzz/coverage").join(target).join("coverage.profdata");
        let report = Cmd::new(&llvm_cov)
            .arg("report")
            .arg(&binary)
            .arg(format!("-instr-profile={}", profile.display()))
            .arg("-ignore-filename-regex=/(\\.cargo|\\.rustup|rustc)/|/fuzz/")
            .read()?;
        let path = reports.join(format!("{target}.txt"));
        write(&path, report.as_bytes())?;
        println!("{target}: line coverage of elfsig's sources by its corpus (full report: {})", path.display());
        for line in report.lines() {
            // Filename, regions (total, missed, cover), functions (3), lines (total, missed, cover).
            let columns: Vec<&str> = line.split_whitespace().collect();
            if let [name, _, _, _, _, _, _, lines, _, cover, ..] = columns[..]
                && cover.ends_with('%')
            {
                println!("  {name:<40} {cover:>8} of {lines:>5} lines");
            }
        }
    }
    Ok(())
}

/// Writes seeds for each target under `target/fuzz-corpus/<target>/` and returns that directory.
fn write_corpus() -> Result<PathBuf> {
    let root = paths::target().join("fuzz-corpus");
    let parse = root.join("parse");
    let payload = root.join("payload");
    let roundtrip = root.join("roundtrip");
    for dir in [&parse, &payload, &roundtrip] {
        fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    let mut seeds: Vec<(String, Vec<u8>)> = elfsig_fixtures::synth_matrix();
    for built in elfsig_fixtures::ALL_BUILT {
        if let Some(bytes) = elfsig_fixtures::build(*built).ok().and_then(|path| small_file(&path)) {
            seeds.push((built.name().to_owned(), bytes));
        }
    }
    for program in ["true", "busybox"] {
        if let Some(bytes) = elfsig_fixtures::system_binary(program).and_then(|p| small_file(&p)) {
            seeds.push((program.to_owned(), bytes));
        }
    }
    let mut signed = sign_copies(&seeds, &[], "signed")?;
    // Signatures that grant entitlements: version 2 records.
    let entitled = ["--entitle", "jit", "--entitle", "debugger"];
    signed.extend(sign_copies(seeds.get(..4).unwrap_or(&seeds), &entitled, "entitled")?);
    for (name, bytes) in seeds.iter().chain(&signed) {
        write(&parse.join(name), bytes)?;
        write(&roundtrip.join(name), bytes)?;
    }
    for (name, bytes) in &signed {
        if let Some(payload_bytes) = payload_of(bytes) {
            write(&payload.join(name), &payload_bytes)?;
        }
    }
    package_seeds(&root.join("deb"))?;
    layer_seeds(&root.join("oci"))?;
    policy_seeds(&root.join("policy"))?;
    word_seeds(&root.join("words"))?;
    Ok(root)
}

/// Seeds for the `words` target: the starts of scripts binfmt_script runs, what `elfsig` and
/// `elfsig-guard` write to the module's control files, and the facts of files on the
/// filesystems the module caches, verifies and refuses.
fn word_seeds(dir: &Path) -> Result {
    fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let mut seeds: Vec<(String, Vec<u8>)> = [
        &b"#!/bin/sh\necho hi\n"[..],
        b"#! /usr/bin/env python3 -u\n",
        b"#!/bin/sh",
        b"enforce\n",
        b"permissive",
        b" deny \n",
        b"attach 3 4 5 6 7\n",
        b"release",
        b"clear\n",
    ]
    .iter()
    .enumerate()
    .map(|(i, seed)| (format!("line-{i}"), seed.to_vec()))
    .collect();
    // Facts (little-endian), seals, then the filesystem's name: a settled ext4 file, a sealed
    // memfd, a user namespace's overlayfs, FUSE, a btrfs file with its handle.
    for (name, facts, seals, fs) in [
        ("ext4", 1u32 << 2, 0u32, "ext4"),
        ("memfd", (1 << 7) | (1 << 8) | (1 << 2), 0x0e, "tmpfs"),
        ("userns", (1 << 5) | (1 << 4), 0, "overlay"),
        ("fuse", 1 << 6, 0, "fuse"),
        ("btrfs", (1 << 3) | (1 << 1), 0, "btrfs"),
    ] {
        let mut seed = facts.to_le_bytes().to_vec();
        seed.extend_from_slice(&seals.to_le_bytes());
        seed.extend_from_slice(fs.as_bytes());
        seeds.push((format!("facts-{name}"), seed));
    }
    for (name, bytes) in &seeds {
        write(&dir.join(name), bytes)?;
    }
    Ok(())
}

/// Seeds for the `policy` target: policies `elfsig policy create` writes, unsigned and signed,
/// empty and with each list.
fn policy_seeds(dir: &Path) -> Result {
    fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let work = paths::target().join("fuzz-corpus-policies");
    let _ = fs::remove_dir_all(&work);
    fs::create_dir_all(&work).map_err(|e| format!("cannot create {}: {e}", work.display()))?;
    let elfsig = crate::tools::build_cli()?;
    let (key, cert) = throwaway_key(&elfsig, &work)?;
    let digest = |byte: u8| format!("sha256:{}", format!("{byte:02x}").repeat(32));
    let lists: [(&str, Vec<String>); 4] = [
        ("empty", vec![]),
        ("digests", vec!["--revoke".into(), digest(1), "--revoke".into(), digest(0xfe)]),
        ("certs", vec!["--revoke-cert".into(), cert.display().to_string()]),
        ("trusted", vec!["--trust".into(), cert.display().to_string(), "--revoke".into(), digest(7)]),
    ];
    for (name, args) in lists {
        let unsigned = dir.join(format!("{name}.body"));
        Cmd::new(&elfsig)
            .args(["-q", "policy", "create", "--serial", "1"])
            .args(&args)
            .arg("-o")
            .arg(&unsigned)
            .run()?;
        Cmd::new(&elfsig)
            .args(["-q", "policy", "sign", "--key"])
            .arg(&key)
            .arg("--cert")
            .arg(&cert)
            .arg("-o")
            .arg(dir.join(format!("{name}.signed")))
            .arg(&unsigned)
            .run()?;
    }
    Ok(())
}

/// Seeds for the `deb` target: a small package dpkg-deb builds around `true`, a script and a
/// hard link, in each compression, and each signed by `elfsig deb sign`.
fn package_seeds(dir: &Path) -> Result {
    fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let work = paths::target().join("fuzz-corpus-packages");
    let _ = fs::remove_dir_all(&work);
    let tree = work.join("tree");
    let program = elfsig_fixtures::system_binary("true").ok_or("no `true` on this machine")?;
    fs::create_dir_all(tree.join("DEBIAN")).map_err(|e| format!("cannot create {}: {e}", tree.display()))?;
    fs::create_dir_all(tree.join("usr/bin")).map_err(|e| format!("cannot create {}: {e}", tree.display()))?;
    fs::copy(&program, tree.join("usr/bin/true")).map_err(|e| format!("cannot copy {}: {e}", program.display()))?;
    fs::hard_link(tree.join("usr/bin/true"), tree.join("usr/bin/also-true")).map_err(|e| e.to_string())?;
    write(&tree.join("usr/bin/script"), b"#!/bin/sh\n")?;
    write(
        &tree.join("DEBIAN/control"),
        b"Package: seed\nVersion: 1\nArchitecture: amd64\nMaintainer: elfsig <elfsig@example.org>\n\
          Installed-Size: 100\nDescription: a fuzzing seed\n",
    )?;
    write(&tree.join("DEBIAN/md5sums"), b"00000000000000000000000000000000  usr/bin/true\n")?;
    let unsigned = work.join("unsigned");
    fs::create_dir_all(&unsigned).map_err(|e| format!("cannot create {}: {e}", unsigned.display()))?;
    for compression in ["xz", "gzip", "zstd", "none"] {
        let deb = unsigned.join(format!("seed-{compression}.deb"));
        Cmd::new("dpkg-deb")
            .args(["--root-owner-group", "--build", &format!("-Z{compression}")])
            .arg(&tree)
            .arg(&deb)
            .read()?;
    }
    let elfsig = crate::tools::build_cli()?;
    let signed = work.join("signed");
    let (key, cert) = throwaway_key(&elfsig, &work)?;
    Cmd::new(&elfsig)
        .args(["-q", "deb", "sign", "--key"])
        .arg(&key)
        .arg("--cert")
        .arg(&cert)
        .arg("-o")
        .arg(&signed)
        .arg(&unsigned)
        .run()?;
    for (from, suffix) in [(&unsigned, ""), (&signed, ".signed")] {
        for entry in fs::read_dir(from).map_err(|e| format!("cannot read {}: {e}", from.display()))? {
            let path = entry.map_err(|e| e.to_string())?.path();
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            fs::copy(&path, dir.join(format!("{name}{suffix}")))
                .map_err(|e| format!("cannot copy {}: {e}", path.display()))?;
        }
    }
    Ok(())
}

/// Seeds for the `oci` target: the layer umoci writes (Go's archive/tar: pax records, an
/// extended attribute among them) of a root holding `true`, a hard link, a symbolic link and a
/// script, uncompressed; and that layer as `elfsig oci sign` signs it.
fn layer_seeds(dir: &Path) -> Result {
    deps::ensure(&[deps::Need::Deb("umoci")])?;
    fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let work = paths::target().join("fuzz-corpus-layers");
    let _ = fs::remove_dir_all(&work);
    fs::create_dir_all(&work).map_err(|e| format!("cannot create {}: {e}", work.display()))?;
    let (layout, bundle) = (work.join("image"), work.join("bundle"));
    let image = format!("{}:seed", layout.display());
    Cmd::new("umoci").args(["init", "--layout"]).arg(&layout).run()?;
    Cmd::new("umoci").args(["new", "--image", &image]).run()?;
    let rootless: &[&str] = if deps::is_root() { &[] } else { &["--rootless"] };
    Cmd::new("umoci").args(["unpack"]).args(rootless).args(["--image", &image]).arg(&bundle).read()?;
    let bin = bundle.join("rootfs/usr/bin");
    fs::create_dir_all(&bin).map_err(|e| format!("cannot create {}: {e}", bin.display()))?;
    let program = elfsig_fixtures::system_binary("true").ok_or("no `true` on this machine")?;
    fs::copy(&program, bin.join("true")).map_err(|e| format!("cannot copy {}: {e}", program.display()))?;
    fs::hard_link(bin.join("true"), bin.join("also-true")).map_err(|e| e.to_string())?;
    std::os::unix::fs::symlink("true", bin.join("link")).map_err(|e| e.to_string())?;
    write(&bin.join("script"), b"#!/bin/sh\n")?;
    // An extended attribute, which umoci writes as a pax record (where the file system has them).
    let _ = Cmd::new("setfattr").args(["-n", "user.elfsig-seed", "-v", "0x0a01"]).arg(bin.join("true")).read();
    Cmd::new("umoci").args(["repack", "--image", &image]).arg(&bundle).read()?;
    let elfsig = crate::tools::build_cli()?;
    let (key, cert) = throwaway_key(&elfsig, &work)?;
    let signed = work.join("signed");
    Cmd::new(&elfsig)
        .args(["-q", "oci", "sign", "--key"])
        .arg(&key)
        .arg("--cert")
        .arg(&cert)
        .arg("-o")
        .arg(&signed)
        .arg(&layout)
        .run()?;
    for (from, suffix) in [(&layout, ""), (&signed, ".signed")] {
        for (index, blob) in layer_blobs(from)?.iter().enumerate() {
            let out = std::process::Command::new("gzip")
                .arg("-dc")
                .arg(blob)
                .output()
                .map_err(|e| format!("cannot run gzip: {e}"))?;
            if !out.status.success() {
                return Err(format!("gzip -dc {}: {}", blob.display(), String::from_utf8_lossy(&out.stderr)));
            }
            write(&dir.join(format!("layer-{index}{suffix}")), &out.stdout)?;
        }
    }
    Ok(())
}

/// The layer blobs of the first image of the OCI layout `layout`.
fn layer_blobs(layout: &Path) -> Result<Vec<PathBuf>> {
    let read = |path: PathBuf| -> Result<serde_json::Value> {
        let text = fs::read(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        serde_json::from_slice(&text).map_err(|e| format!("{}: {e}", path.display()))
    };
    let blob = |descriptor: &serde_json::Value| {
        let digest = descriptor["digest"].as_str().unwrap_or_default();
        layout.join("blobs/sha256").join(digest.trim_start_matches("sha256:"))
    };
    let index = read(layout.join("index.json"))?;
    let manifest = read(blob(&index["manifests"][0]))?;
    Ok(manifest["layers"].as_array().map(|layers| layers.iter().map(blob).collect()).unwrap_or_default())
}

fn small_file(path: &Path) -> Option<Vec<u8>> {
    let len = fs::metadata(path).ok()?.len();
    if len <= MAX_LEN { fs::read(path).ok() } else { None }
}

fn write(path: &Path, bytes: &[u8]) -> Result {
    fs::write(path, bytes).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// A key pair made in `dir` for the seeds only: `key.pem`, `cert.pem`.
fn throwaway_key(elfsig: &Path, dir: &Path) -> Result<(PathBuf, PathBuf)> {
    let (key, cert) = (dir.join("key.pem"), dir.join("cert.pem"));
    Cmd::new(elfsig).args(["-q", "keygen", "--bits", "2048", "--key"]).arg(&key).arg("--cert").arg(&cert).run()?;
    Ok((key, cert))
}

/// Signs a copy of each seed with a throwaway key and `options`, using the real CLI; the copies
/// are named `<seed>.<suffix>`.
fn sign_copies(seeds: &[(String, Vec<u8>)], options: &[&str], suffix: &str) -> Result<Vec<(String, Vec<u8>)>> {
    let work = paths::target().join(format!("fuzz-corpus-{suffix}"));
    let _ = fs::remove_dir_all(&work);
    fs::create_dir_all(&work).map_err(|e| format!("cannot create {}: {e}", work.display()))?;
    let elfsig = crate::tools::build_cli()?;
    let (key, cert) = throwaway_key(&elfsig, &work)?;
    let mut files = Vec::new();
    for (name, bytes) in seeds {
        let path = work.join(format!("{name}.{suffix}"));
        write(&path, bytes)?;
        files.push(path);
    }
    // Some seeds (files without program headers that elflint would reject, ...) may not be
    // signable; the ones that are make the signed half of the corpus.
    let _ = Cmd::new(&elfsig)
        .args(["-q", "sign"])
        .args(options)
        .arg("--key")
        .arg(&key)
        .arg("--cert")
        .arg(&cert)
        .args(&files)
        .run();
    let mut signed = Vec::new();
    for (path, (name, original)) in files.iter().zip(seeds) {
        let bytes = fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        if bytes != *original {
            signed.push((format!("{name}.{suffix}"), bytes));
        }
    }
    Ok(signed)
}

/// The signature payload of a signed file, found as the kernel finds it; used to seed the
/// payload target from signed files.
fn payload_of(bytes: &[u8]) -> Option<Vec<u8>> {
    let location = elfsig_core::find_signature(&mut &bytes[..], bytes.len() as u64).ok()??;
    let range = location.payload;
    bytes.get(usize::try_from(range.offset).ok()?..usize::try_from(range.end()?).ok()?).map(<[u8]>::to_vec)
}
