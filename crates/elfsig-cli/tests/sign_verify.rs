//! The round trip on real programs: sign, verify, run with identical behaviour, re-sign
//! idempotently, re-sign with another key, remove to the identical original.

#[allow(unreachable_pub)]
mod common;

use std::fs;
use std::path::Path;

use common::{Scratch, elfsig, keys, sign, system_programs, verify};
use elfsig_fixtures::{ALL_BUILT, Built, build, emulated_output, expected_output, host_runs_i386, run_program};
use predicates::str::contains;

/// Runs `path` with `args`; returns (status, stdout, stderr).
fn run(path: &Path, args: &[&str]) -> (Option<i32>, Vec<u8>, Vec<u8>) {
    let out = run_program(path, args).unwrap();
    (out.status.code(), out.stdout, out.stderr)
}

/// Signs, verifies, re-signs and removes `file`, checking that it behaves the same signed.
fn round_trip(file: &Path, run_it: impl Fn(&Path) -> Option<(Option<i32>, Vec<u8>, Vec<u8>)>) {
    let keys = keys("a");
    let original = fs::read(file).unwrap();
    let before = run_it(file);

    sign(&keys, file);
    let signed = fs::read(file).unwrap();
    assert_ne!(signed, original, "{}: signing changed nothing", file.display());
    assert!(signed.starts_with(&original[..16]), "the ELF identification is untouched");
    verify(&keys, file).success().stdout(contains(": OK (signed by CN=elfsig test key a)"));
    assert_eq!(run_it(file), before, "{}: behaves differently once signed", file.display());

    sign(&keys, file);
    assert!(fs::read(file).unwrap() == signed, "{}: re-signing with the same key is not idempotent", file.display());

    elfsig().arg("remove").arg(file).assert().success();
    assert!(fs::read(file).unwrap() == original, "{}: remove did not restore the original", file.display());
}

#[test]
fn system_programs_round_trip() {
    let scratch = Scratch::new();
    let programs = system_programs();
    assert!(programs.len() >= 5, "coreutils, bash, python3, busybox and tar should be installed");
    for (name, path, args) in programs {
        let copy = scratch.copy(&path, name);
        round_trip(&copy, |p| Some(run(p, &args)));
    }
}

#[test]
fn built_programs_round_trip() {
    let scratch = Scratch::new();
    let mut tried = 0;
    for built in ALL_BUILT {
        let path = match build(*built) {
            Ok(path) => path,
            Err(why) => {
                eprintln!("skipping {}: {why}", built.name());
                continue;
            }
        };
        let copy = scratch.copy(&path, built.name());
        let runs_natively = expected_output(*built).is_some() && (*built != Built::C32 || host_runs_i386());
        round_trip(&copy, |p| {
            if runs_natively {
                let (status, stdout, _) = run(p, &[]);
                assert_eq!(Some(stdout.as_slice()), expected_output(*built), "{}", built.name());
                Some((status, stdout, Vec::new()))
            } else if let Some((qemu, expected)) = emulated_output(*built) {
                let out = std::process::Command::new(qemu).arg(p).output().ok()?;
                assert_eq!(out.stdout, expected, "{} under {qemu}", built.name());
                Some((out.status.code(), out.stdout, Vec::new()))
            } else {
                None
            }
        });
        tried += 1;
    }
    assert!(tried >= 8, "too few built fixtures: {tried}");
}

#[test]
fn synthetic_files_of_every_shape_round_trip() {
    let scratch = Scratch::new();
    for (name, bytes) in elfsig_fixtures::synth_matrix() {
        let file = scratch.write(&name, &bytes);
        round_trip(&file, |_| None);
    }
}

#[test]
fn resigning_with_another_key_replaces_the_signature() {
    let (a, b) = (keys("a"), keys("b"));
    let scratch = Scratch::new();
    let file = scratch.copy(&elfsig_fixtures::system_binary("ls").unwrap(), "ls");
    let original = fs::read(&file).unwrap();
    sign(&a, &file);
    let by_a = fs::read(&file).unwrap();
    sign(&b, &file);
    let by_b = fs::read(&file).unwrap();
    assert_eq!(by_a.len(), by_b.len(), "same key size, same layout: the signature was replaced, not stacked");
    verify(&b, &file).success();
    verify(&a, &file).code(1).stderr(contains("signed by an unknown key"));
    elfsig().arg("verify").arg("--cert").arg(&a.cert).arg("--cert").arg(&b.cert).arg(&file).assert().success();
    elfsig().arg("remove").arg(&file).assert().success();
    assert!(fs::read(&file).unwrap() == original);
}

#[test]
fn output_option_leaves_the_input_alone() {
    let keys = keys("a");
    let scratch = Scratch::new();
    let input = scratch.copy(&elfsig_fixtures::system_binary("true").unwrap(), "true");
    let original = fs::read(&input).unwrap();
    let output = scratch.path("true.signed");
    elfsig()
        .arg("sign")
        .arg("--key")
        .arg(&keys.key)
        .arg("--cert")
        .arg(&keys.cert)
        .arg("--output")
        .arg(&output)
        .arg(&input)
        .assert()
        .success();
    assert!(fs::read(&input).unwrap() == original);
    verify(&keys, &output).success();
    verify(&keys, &input).code(1).stderr(contains("not signed"));
    assert_eq!(run(&output, &[]).0, Some(0));
}

#[test]
fn shared_libraries_round_trip_and_still_load() {
    let scratch = Scratch::new();
    let lib_dir = scratch.path("lib");
    fs::create_dir(&lib_dir).unwrap();
    let libc = Path::new("/lib/x86_64-linux-gnu/libc.so.6").canonicalize().unwrap();
    let copy = scratch.copy(&libc, "lib/libc.so.6");
    let echo = elfsig_fixtures::system_binary("echo").unwrap();
    // The dynamic loader maps the signed copy instead of the system's libc: the program must
    // behave exactly as it did with the unsigned copy.
    round_trip(&copy, |library| {
        let dir = library.parent().unwrap();
        let out = std::process::Command::new(&echo)
            .arg("loaded")
            .env("LD_LIBRARY_PATH", dir)
            .env("LD_DEBUG", "libs")
            .output()
            .unwrap();
        let debug = String::from_utf8_lossy(&out.stderr);
        assert!(debug.contains(&format!("{}/libc.so.6", dir.display())), "the copy was not loaded:\n{debug}");
        Some((out.status.code(), out.stdout, Vec::new()))
    });
}
