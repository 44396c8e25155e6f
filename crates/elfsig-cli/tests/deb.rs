//! `elfsig deb sign` and `elfsig deb verify` on packages `dpkg-deb` builds, with dpkg-deb as the
//! oracle: before and after re-signing, its listing (`-c`: modes, owners, sizes, times, names,
//! links) and control fields (`-f`) differ only where they must (the signed files' sizes,
//! `Installed-Size`), the files it extracts verify and match `md5sums`, what `sign --recursive`
//! leaves alone is left byte for byte, and the package's members keep their names, order and
//! compression. Then what the gate says of unsigned, tampered and foreign-signed packages, and
//! that no input, however broken, crashes either command.

#[allow(unreachable_pub)]
mod common;

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{Keys, Scratch, elfsig, is_root, keys};
use predicates::prelude::PredicateBooleanExt;
use predicates::str::contains;

fn system_binary(name: &str) -> PathBuf {
    elfsig_fixtures::system_binary(name).unwrap_or_else(|| panic!("{name} is installed"))
}

fn run(program: &str, args: &[&std::ffi::OsStr]) -> Output {
    let out = Command::new(program).args(args).output().unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
    assert!(out.status.success(), "{program} {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    out
}

fn text(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A path longer than ustar's 100-byte name field: GNU tar's long-name entry carries it.
const LONG_DIR: &str =
    "usr/lib/elfsig-test/a-directory-whose-name-is-long-enough/that-the-whole-path/passes-one-hundred-bytes";

/// The ELF files `sign --recursive` signs in the test package, as `dpkg-deb -c` names them.
const SIGNED: &[&str] = &["./usr/bin/program", "./usr/bin/owned-elsewhere", "./usr/lib/libls.so"];

/// Builds `name`.deb with `dpkg-deb -Z<compression>` from a tree holding what a package holds:
/// a set-user-ID program and a second name (hard link) for it, a symbolic link, a file owned by
/// someone else, a library, a program under a long path, scripts, text, and what is ELF but
/// left alone (a kernel module, firmware, a program for another architecture); `md5sums`.
fn build_package(scratch: &Scratch, name: &str, compression: &str) -> PathBuf {
    let root = scratch.path(&format!("{name}-tree"));
    let put = |path: &str, bytes: &[u8], mode: u32| {
        let to = root.join(path);
        fs::create_dir_all(to.parent().unwrap()).unwrap();
        fs::write(&to, bytes).unwrap();
        fs::set_permissions(&to, fs::Permissions::from_mode(mode)).unwrap();
        to
    };
    let program = put("usr/bin/program", &fs::read(system_binary("true")).unwrap(), 0o4755);
    fs::hard_link(&program, root.join("usr/bin/program-again")).unwrap();
    std::os::unix::fs::symlink("program", root.join("usr/bin/symlink")).unwrap();
    let owned = put("usr/bin/owned-elsewhere", &fs::read(system_binary("true")).unwrap(), 0o750);
    if is_root() {
        std::os::unix::fs::chown(&owned, Some(1234), Some(5678)).unwrap();
    }
    put("usr/lib/libls.so", &fs::read(system_binary("ls")).unwrap(), 0o644);
    put(&format!("{LONG_DIR}/program"), &fs::read(system_binary("true")).unwrap(), 0o755);
    put("usr/bin/script", b"#!/bin/sh\necho hello\n", 0o755);
    put("usr/share/doc/elfsig-test/copyright", b"Public domain.\n", 0o644);
    let relocatable = elfsig_fixtures::synth(
        &elfsig_fixtures::Spec::new(elfsig_fixtures::Class::Elf64, elfsig_fixtures::Endian::Little)
            .kind(elfsig_fixtures::Kind::Rel),
    );
    put("usr/lib/modules/7.0.0/extra/driver.ko", &relocatable, 0o644);
    put("usr/lib/firmware/remoteproc.mdt", &fs::read(system_binary("true")).unwrap(), 0o644);
    let s390x = elfsig_fixtures::synth(&elfsig_fixtures::Spec::new(
        elfsig_fixtures::Class::Elf64,
        elfsig_fixtures::Endian::Big,
    ));
    put("usr/share/elfsig-test/hello-s390x", &s390x, 0o755);
    // md5sums as dh_md5sums writes it: every regular file but conffiles, relative paths.
    let mut sums = String::new();
    let mut files = Vec::new();
    collect_files(&root, &mut files);
    files.sort();
    for file in &files {
        let relative = file.strip_prefix(&root).unwrap();
        let out = run("md5sum", &[file.as_os_str()]);
        let sum = text(&out)[..32].to_owned();
        sums += &format!("{sum}  {}\n", relative.display());
    }
    put("DEBIAN/md5sums", sums.as_bytes(), 0o644);
    put("DEBIAN/postinst", b"#!/bin/sh\nset -e\n/usr/bin/program\n", 0o755);
    put(
        "DEBIAN/control",
        format!(
            "Package: {name}\nVersion: 1.2-3\nArchitecture: amd64\nMaintainer: elfsig <elfsig@example.org>\n\
             Installed-Size: 1000\nDescription: a package to re-sign\n a longer description\n"
        )
        .as_bytes(),
        0o644,
    );
    let deb = scratch.path(&format!("{name}.deb"));
    run("dpkg-deb", &["--build".as_ref(), format!("-Z{compression}").as_ref(), root.as_os_str(), deb.as_os_str()]);
    deb
}

fn collect_files(dir: &Path, files: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let kind = entry.file_type().unwrap();
        if kind.is_dir() && entry.file_name() != "DEBIAN" {
            collect_files(&entry.path(), files);
        } else if kind.is_file() {
            files.push(entry.path());
        }
    }
}

fn deb_sign(keys: &Keys) -> assert_cmd::Command {
    let mut cmd = elfsig();
    cmd.args(["deb", "sign", "--key"]).arg(&keys.key).arg("--cert").arg(&keys.cert);
    cmd
}

fn deb_verify(keys: &Keys) -> assert_cmd::Command {
    let mut cmd = elfsig();
    cmd.args(["deb", "verify", "--cert"]).arg(&keys.cert);
    cmd
}

/// `dpkg-deb -c`, by name: the line's other columns, and the size.
fn listing(deb: &Path) -> BTreeMap<String, (String, u64)> {
    let out = run("dpkg-deb", &["-c".as_ref(), deb.as_os_str()]);
    text(&out)
        .lines()
        .map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            // perms owner/group size date time name [-> target | link to name]
            let name = fields[5].to_owned();
            let size = fields[2].parse().unwrap();
            let rest = [&fields[..2], &fields[3..5], &fields[6..]].concat().join(" ");
            (name, (rest, size))
        })
        .collect()
}

/// `dpkg-deb -f`: the control fields.
fn fields(deb: &Path) -> BTreeMap<String, String> {
    let out = run("dpkg-deb", &["-f".as_ref(), deb.as_os_str()]);
    let mut fields = BTreeMap::new();
    let mut last = String::new();
    for line in text(&out).lines() {
        match line.split_once(": ") {
            Some((key, value)) if !line.starts_with(' ') => {
                last = key.to_owned();
                fields.insert(last.clone(), value.to_owned());
            }
            _ => *fields.get_mut(&last).unwrap() += &format!("\n{line}"),
        }
    }
    fields
}

/// The members of the ar archive, in order.
fn members(deb: &Path) -> Vec<String> {
    text(&run("ar", &["t".as_ref(), deb.as_os_str()])).lines().map(str::to_owned).collect()
}

/// Extracts the package's files and control files.
fn extract(deb: &Path, into: &Path) -> (PathBuf, PathBuf) {
    let (files, control) = (into.join("files"), into.join("control"));
    fs::create_dir_all(into).unwrap();
    run("dpkg-deb", &["-x".as_ref(), deb.as_os_str(), files.as_os_str()]);
    run("dpkg-deb", &["-e".as_ref(), deb.as_os_str(), control.as_os_str()]);
    (files, control)
}

#[test]
fn packages_are_resigned_faithfully_in_every_compression() {
    let keys = keys("a");
    let scratch = Scratch::new();
    for compression in ["xz", "gzip", "zstd", "none"] {
        let name = format!("test-{compression}");
        let original = build_package(&scratch, &name, compression);
        let out_dir = scratch.path(&format!("out-{compression}"));
        let out = deb_sign(&keys).arg("-o").arg(&out_dir).arg(&original).output().unwrap();
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{compression}: {}", String::from_utf8_lossy(&out.stderr));
        let signed = out_dir.join(format!("{name}.deb"));
        assert_eq!(
            said.trim(),
            format!(
                "{}: 4 ELF files signed, 3 left alone (1 kernel module, 1 firmware file, 1 for other architectures)",
                signed.display()
            ),
            "{compression}"
        );

        // The members: the same, in the same order, compressed the same.
        assert_eq!(members(&signed), members(&original), "{compression}");

        // dpkg-deb's listing: only the signed files' sizes differ.
        let (before, after) = (listing(&original), listing(&signed));
        assert_eq!(before.keys().collect::<Vec<_>>(), after.keys().collect::<Vec<_>>(), "{compression}");
        let long = format!("./{LONG_DIR}/program");
        let mut kib = 0i64;
        for (name, (rest, size)) in &before {
            let (rest_after, size_after) = &after[name];
            assert_eq!(rest, rest_after, "{compression}: {name}");
            let should_change = SIGNED.contains(&name.as_str()) || *name == long;
            assert_eq!(size != size_after, should_change, "{compression}: {name}: {size} -> {size_after}");
            kib += size_after.div_ceil(1024) as i64 - size.div_ceil(1024) as i64;
        }
        assert!(before["./usr/bin/program"].0.starts_with("-rwsr-xr-x root/root"), "{:?}", before["./usr/bin/program"]);
        assert!(after["./usr/bin/program-again"].0.ends_with("link to ./usr/bin/program"));
        assert!(after["./usr/bin/symlink"].0.ends_with("-> program"));
        if is_root() {
            assert!(after["./usr/bin/owned-elsewhere"].0.starts_with("-rwxr-x--- 1234/5678"));
        }

        // The control fields: only Installed-Size, by the signed files' growth in KiB.
        let (mut fields_before, mut fields_after) = (fields(&original), fields(&signed));
        let size_before: i64 = fields_before.remove("Installed-Size").unwrap().parse().unwrap();
        let size_after: i64 = fields_after.remove("Installed-Size").unwrap().parse().unwrap();
        assert_eq!(fields_before, fields_after, "{compression}");
        assert_eq!(size_after - size_before, kib, "{compression}");
        assert!(kib > 0);

        // What dpkg would install: the signed files verify, md5sums holds, the rest is as it was.
        let (files, control) = extract(&signed, &scratch.path(&format!("extracted-{compression}")));
        let (files_before, control_before) = extract(&original, &scratch.path(&format!("original-{compression}")));
        elfsig()
            .args(["verify", "--cert"])
            .arg(&keys.cert)
            .arg("--recursive")
            .arg(&files)
            .assert()
            .success()
            // The four signed files, and the program's second name.
            .stderr(contains("verified: 5 done"));
        let check = Command::new("md5sum")
            .arg("--quiet")
            .arg("-c")
            .arg(control.join("md5sums"))
            .current_dir(&files)
            .output()
            .unwrap();
        assert!(check.status.success(), "{compression}: md5sums: {}", text(&check));
        let sums_before = fs::read_to_string(control_before.join("md5sums")).unwrap();
        let sums_after = fs::read_to_string(control.join("md5sums")).unwrap();
        assert_eq!(sums_before.lines().count(), sums_after.lines().count(), "{compression}: md5sums lines");
        let changed = sums_before.lines().zip(sums_after.lines()).filter(|(a, b)| a != b).count();
        // The four signed files, and the program's second name (a hard link in the tar).
        assert_eq!(changed, 5, "{compression}: md5sums lines changed");
        for (name, _) in before.iter().filter(|(_, (rest, _))| rest.starts_with('-') && !rest.contains("link to")) {
            let name = name.trim_start_matches("./");
            let same = fs::read(files.join(name)).unwrap() == fs::read(files_before.join(name)).unwrap();
            let signed = SIGNED.contains(&format!("./{name}").as_str()) || format!("./{name}") == long;
            assert_eq!(same, !signed, "{compression}: {name}");
        }
        assert_eq!(fs::read(control.join("postinst")).unwrap(), fs::read(control_before.join("postinst")).unwrap());

        // The gate says yes to the signed package, no to the original, naming each file.
        deb_verify(&keys)
            .arg(&signed)
            .assert()
            .success()
            .stdout(format!(
                "{}: OK (4 ELF files verified, 3 left alone (1 kernel module, 1 firmware file, 1 for other architectures))\n",
                signed.display()
            ));
        let refused = deb_verify(&keys).arg(&original).assert().code(1);
        let said = String::from_utf8_lossy(&refused.get_output().stderr).into_owned();
        assert!(said.contains("4 ELF files the module would refuse"), "{said}");
        for name in SIGNED.iter().copied().chain([long.as_str()]) {
            assert!(said.contains(&format!("{}:{name}: not signed", original.display())), "{name}: {said}");
        }

        // Same input, same key: the same bytes; the signed package signed again: unchanged.
        let again = scratch.path(&format!("again-{compression}"));
        deb_sign(&keys).arg("-q").arg("-o").arg(&again).arg(&original).assert().success().stdout("").stderr("");
        assert!(fs::read(again.join(format!("{name}.deb"))).unwrap() == fs::read(&signed).unwrap(), "{compression}");
        let resigned = scratch.path(&format!("resigned-{compression}"));
        deb_sign(&keys)
            .arg("-o")
            .arg(&resigned)
            .arg(&signed)
            .assert()
            .success()
            .stdout(contains("(signed so already; unchanged)"));
        assert!(fs::read(resigned.join(format!("{name}.deb"))).unwrap() == fs::read(&signed).unwrap(), "{compression}");
        // In place, as with -o.
        let in_place = scratch.path(&format!("in-place-{compression}.deb"));
        fs::copy(&original, &in_place).unwrap();
        deb_sign(&keys).arg(&in_place).assert().success();
        assert!(fs::read(&in_place).unwrap() == fs::read(&signed).unwrap(), "{compression}");
    }
}

#[test]
fn a_package_without_elf_files_is_left_as_it_was() {
    let keys = keys("a");
    let scratch = Scratch::new();
    let root = scratch.path("doc-tree");
    fs::create_dir_all(root.join("DEBIAN")).unwrap();
    fs::create_dir_all(root.join("usr/share/doc/doc")).unwrap();
    fs::write(root.join("usr/share/doc/doc/README"), b"hello\n").unwrap();
    fs::write(
        root.join("DEBIAN/control"),
        b"Package: doc\nVersion: 1\nArchitecture: all\nMaintainer: x <x@example.org>\nDescription: d\n",
    )
    .unwrap();
    let deb = scratch.path("doc.deb");
    run("dpkg-deb", &["--build".as_ref(), root.as_os_str(), deb.as_os_str()]);
    let out = scratch.path("out");
    deb_sign(&keys).arg("-o").arg(&out).arg(&deb).assert().success().stdout(contains("no ELF file to sign; unchanged"));
    assert!(fs::read(out.join("doc.deb")).unwrap() == fs::read(&deb).unwrap());
    deb_verify(&keys).arg(&deb).assert().success().stdout(contains("OK (0 ELF files verified)"));
}

#[test]
fn the_gate_refuses_tampered_and_foreign_signed_packages_and_reads_apt_hooks() {
    let (keys, other) = (keys("a"), keys("b"));
    let scratch = Scratch::new();
    let original = build_package(&scratch, "gate", "xz");
    let signed_dir = scratch.path("signed");
    deb_sign(&keys).arg("-o").arg(&signed_dir).arg(&original).assert().success();
    let signed = signed_dir.join("gate.deb");
    // Signed by a key the host does not trust.
    let theirs = scratch.path("theirs");
    deb_sign(&other).arg("-o").arg(&theirs).arg(&original).assert().success();
    deb_verify(&keys)
        .arg(theirs.join("gate.deb"))
        .assert()
        .code(1)
        .stderr(contains("gate.deb:./usr/bin/program: signed by an unknown key"));
    // A signed file changed afterwards, the package rebuilt around it.
    let (files, control) = extract(&signed, &scratch.path("tamper"));
    fs::rename(&control, files.join("DEBIAN")).unwrap();
    let program = files.join("usr/bin/program");
    let mut bytes = fs::read(&program).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 1;
    fs::write(&program, &bytes).unwrap();
    let tampered = scratch.path("tampered.deb");
    run("dpkg-deb", &["--build".as_ref(), files.as_os_str(), tampered.as_os_str()]);
    deb_verify(&keys)
        .arg(&tampered)
        .assert()
        .code(1)
        .stderr(contains("1 ELF file the module would refuse"))
        .stderr(contains("tampered.deb:./usr/bin/program: modified since it was signed"));
    // APT's hook: the packages on standard input, one per line; one bad one fails them all.
    let list = format!("{}\n{}\n", signed.display(), signed.display());
    deb_verify(&keys).arg("--apt-hook").write_stdin(list).assert().success();
    let list = format!("{}\n{}\n", signed.display(), tampered.display());
    deb_verify(&keys).arg("--apt-hook").write_stdin(list).assert().code(1);
    deb_verify(&keys).arg("--apt-hook").write_stdin("").assert().success();
    // A directory of packages: every one, below it.
    deb_verify(&keys).arg(&signed_dir).assert().success().stdout(contains("gate.deb: OK (4 ELF files verified"));
}

/// The checks the fuzz target `deb` makes (`common/packages.rs`), on packages dpkg-deb built in
/// every compression and on broken copies of one: cut short anywhere, one byte changed
/// anywhere (headers, members, compressed streams).
#[test]
fn no_input_crashes_either_command_and_what_deb_sign_writes_verifies() {
    let scratch = Scratch::new();
    let mut inputs: Vec<Vec<u8>> = vec![Vec::new(), b"not a package at all\n".to_vec(), b"!<arch>\n".to_vec()];
    for compression in ["xz", "gzip", "zstd", "none"] {
        inputs.push(fs::read(build_package(&scratch, &format!("fuzz-{compression}"), compression)).unwrap());
    }
    // The uncompressed one: a changed byte then reaches the tar, control and md5sums parsers
    // instead of failing xz's integrity check.
    let original = inputs[6].clone();
    let step = original.len() / 100;
    for at in (0..200).step_by(7).chain((200..original.len()).step_by(step)) {
        inputs.push(original[..at].to_vec());
        let mut flipped = original.clone();
        flipped[at] ^= 0x5a;
        inputs.push(flipped);
    }
    for (index, bytes) in inputs.iter().enumerate() {
        common::packages::check(bytes, &format!("input-{index}"));
    }
}

/// A tar header as GNU tar writes one, for entries dpkg-deb would never write.
fn tar_header(name: &str, typeflag: u8, size: usize, link: &str) -> [u8; 512] {
    let mut block = [0u8; 512];
    let mut put = |at: usize, bytes: &[u8]| block[at..at + bytes.len()].copy_from_slice(bytes);
    put(0, name.as_bytes());
    put(100, b"0000755\0");
    put(108, b"0000000\0");
    put(116, b"0000000\0");
    put(124, format!("{size:011o}\0").as_bytes());
    put(136, b"15000000000\0");
    put(156, &[typeflag]);
    put(157, link.as_bytes());
    put(257, b"ustar  \0");
    put(265, b"root");
    put(297, b"root");
    let sum: u32 =
        block.iter().enumerate().map(|(i, &b)| if (148..156).contains(&i) { 32 } else { u32::from(b) }).sum();
    block[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
    block
}

/// A tar archive of `(name, type, contents, link)`, by hand.
fn tar(entries: &[(&str, u8, &[u8], &str)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, typeflag, contents, link) in entries {
        out.extend_from_slice(&tar_header(name, *typeflag, contents.len(), link));
        out.extend_from_slice(contents);
        out.resize(out.len().div_ceil(512) * 512, 0);
    }
    out.extend_from_slice(&[0u8; 1024]);
    out
}

/// A package of uncompressed members, by hand: `control.tar` holding `controls` as `./control`
/// (several, when given several), and `data`.
fn deb_by_hand(controls: &[&str], data: &[u8]) -> Vec<u8> {
    let control_entries: Vec<(&str, u8, &[u8], &str)> =
        controls.iter().map(|c| ("./control", b'0', c.as_bytes(), "")).collect();
    let control = tar(&control_entries);
    let mut out = b"!<arch>\n".to_vec();
    for (name, bytes) in [("debian-binary", &b"2.0\n"[..]), ("control.tar", &control), ("data.tar", data)] {
        out.extend_from_slice(
            format!("{name:<16}{:<12}{:<6}{:<6}{:<8}{:<10}`\n", 0, 0, 0, 100644, bytes.len()).as_bytes(),
        );
        out.extend_from_slice(bytes);
        if bytes.len() % 2 == 1 {
            out.push(b'\n');
        }
    }
    out
}

fn control_for(architecture: &str) -> String {
    format!(
        "Package: crafted\nVersion: 1\nArchitecture: {architecture}\nMaintainer: x <x@example.org>\nDescription: d\n"
    )
}

/// Packages made to slip an unsigned program past the gate, each by a different trick: the
/// gate refuses each, and `deb sign` either refuses it or signs the program.
#[test]
fn packages_made_to_slip_past_the_gate_do_not() {
    let keys = keys("a");
    let scratch = Scratch::new();
    let program = fs::read(system_binary("true")).unwrap();
    let amd64 = control_for("amd64");
    let hidden = tar(&[("./usr/bin/evil", b'0', &program, "")]);
    let cases: Vec<(&str, Vec<u8>, &str, bool)> = vec![
        (
            "an entry hidden in a directory's contents, which dpkg would unpack",
            deb_by_hand(&[&amd64], &tar(&[("./usr/", b'5', &hidden, ""), ("./usr/share/", b'5', b"", "")])),
            "contents on an entry that has none",
            false,
        ),
        (
            "two control files, the first saying another architecture",
            deb_by_hand(&[&control_for("s390x"), &amd64], &tar(&[("./usr/bin/x", b'0', &program, "")])),
            "two control files",
            false,
        ),
        (
            "a package for a compatible architecture holding this host's code",
            deb_by_hand(&[&control_for("i386")], &tar(&[("./usr/bin/x", b'0', &program, "")])),
            "./usr/bin/x: not signed",
            true,
        ),
        (
            "a program under a lib/firmware directory that is not the firmware's",
            deb_by_hand(&[&amd64], &tar(&[("./opt/x/lib/firmware/tool", b'0', &program, "")])),
            "./opt/x/lib/firmware/tool: not signed",
            true,
        ),
        (
            "a second name, where programs run, for firmware left unsigned",
            deb_by_hand(
                &[&amd64],
                &tar(&[("./lib/firmware/blob", b'0', &program, ""), ("./usr/bin/x", b'1', b"", "./lib/firmware/blob")]),
            ),
            "another name of ./lib/firmware/blob",
            false,
        ),
        (
            "a pax header, which dpkg does not unpack",
            deb_by_hand(
                &[&amd64],
                &tar(&[("./PaxHeaders/x", b'x', b"20 path=./usr/bin/y\n", ""), ("./usr/bin/x", b'0', &program, "")]),
            ),
            "which dpkg does not unpack",
            false,
        ),
    ];
    for (index, (what, bytes, said, signable)) in cases.into_iter().enumerate() {
        let deb = scratch.path(&format!("crafted-{index}.deb"));
        fs::write(&deb, &bytes).unwrap();
        let refused = deb_verify(&keys).arg(&deb).assert().code(1).stderr(contains(said));
        // Each refused file is named once, where its line starts.
        let stderr = String::from_utf8_lossy(&refused.get_output().stderr).into_owned();
        for line in stderr.lines().filter_map(|l| l.strip_prefix("  ")) {
            assert_eq!(line.matches(&format!("crafted-{index}.deb:")).count(), 1, "{what}: {line}");
        }
        let out_dir = scratch.path(&format!("crafted-{index}-signed"));
        let signing = deb_sign(&keys).arg("-o").arg(&out_dir).arg(&deb).output().unwrap();
        let signed = out_dir.join(format!("crafted-{index}.deb"));
        if signable {
            assert!(signing.status.success(), "{what}: {}", String::from_utf8_lossy(&signing.stderr));
            deb_verify(&keys).arg(&signed).assert().success().stdout(contains("OK (1 ELF file verified)"));
        } else {
            assert_eq!(signing.status.code(), Some(1), "{what}");
            assert!(!signed.exists(), "{what}: deb sign wrote a package");
        }
    }
}

#[test]
fn usage_errors() {
    let keys = keys("a");
    deb_sign(&keys)
        .args(["--architecture", "vax", "x.deb"])
        .assert()
        .code(2)
        .stderr(contains("not a Debian architecture"));
    let scratch = Scratch::new();
    let (a, b) = (scratch.path("a"), scratch.path("b"));
    fs::create_dir_all(&a).unwrap();
    fs::create_dir_all(&b).unwrap();
    let deb = build_package(&scratch, "dup", "xz");
    fs::copy(&deb, a.join("dup.deb")).unwrap();
    fs::copy(&deb, b.join("dup.deb")).unwrap();
    deb_sign(&keys)
        .arg("-o")
        .arg(scratch.path("out"))
        .arg(&a)
        .arg(&b)
        .assert()
        .code(2)
        .stderr(contains("would both be written to"));
}

/// What `elfsig inspect --json` says `file` is entitled to.
fn entitlements_of(file: &Path) -> serde_json::Value {
    let out = elfsig().args(["inspect", "--json"]).arg(file).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()["signature"]["entitlements"].clone()
}

#[test]
fn entitle_grants_what_it_names_to_the_files_it_names() {
    let keys = keys("a");
    let scratch = Scratch::new();
    let deb = build_package(&scratch, "entitled", "xz");
    deb_sign(&keys)
        .args(["--entitle=//usr//bin/program=jit,debugger", "--entitle=/usr/lib/libls.so=jit"])
        .arg(&deb)
        .assert()
        .success()
        .stderr(contains("/usr/bin/program: entitled to jit,debugger"))
        .stderr(contains("/usr/lib/libls.so: entitled to jit"));
    let (files, _) = extract(&deb, &scratch.path("entitled-files"));
    assert_eq!(entitlements_of(&files.join("usr/bin/program")), serde_json::json!(["jit", "debugger"]));
    assert_eq!(entitlements_of(&files.join("usr/lib/libls.so")), serde_json::json!(["jit"]));
    for other in ["usr/bin/owned-elsewhere", &format!("{LONG_DIR}/program")] {
        assert_eq!(entitlements_of(&files.join(other)), serde_json::json!([]), "{other}");
    }
    deb_verify(&keys).arg(&deb).assert().success();
    // Signed again without --entitle: what was granted stays, and the package with it.
    let signed = fs::read(&deb).unwrap();
    deb_sign(&keys).arg(&deb).assert().success().stdout(contains("(signed so already; unchanged)"));
    assert!(fs::read(&deb).unwrap() == signed, "a re-sign that says nothing changed the package");
    // `none` takes a grant away.
    deb_sign(&keys).arg("--entitle=/usr/lib/libls.so=none").arg(&deb).assert().success();
    let (files, _) = extract(&deb, &scratch.path("taken-files"));
    assert_eq!(entitlements_of(&files.join("usr/lib/libls.so")), serde_json::json!([]));
    assert_eq!(entitlements_of(&files.join("usr/bin/program")), serde_json::json!(["jit", "debugger"]));
    let signed = fs::read(&deb).unwrap();
    // A file the packages do not hold, or hold as no ELF file to sign: said, and the exit
    // fails, the packages signed all the same.
    // (Not held at all; a script; an ELF file left alone, a kernel module.)
    for missing in ["/usr/bin/python3.13", "/usr/bin/script", "/usr/lib/modules/7.0.0/extra/driver.ko"] {
        deb_sign(&keys)
            .arg(format!("--entitle={missing}=jit"))
            .arg(&deb)
            .assert()
            .code(1)
            .stdout(contains("(signed so already; unchanged)"))
            .stderr(contains(format!("--entitle {missing}: no package given holds it as an ELF file to sign")));
        assert!(fs::read(&deb).unwrap() == signed, "{missing}: the package changed");
    }
}

#[test]
fn entitle_follows_hard_links_only_from_the_name_listed_first() {
    let keys = keys("a");
    let scratch = Scratch::new();
    let deb = build_package(&scratch, "linked", "xz");
    let before = fs::read(&deb).unwrap();
    // The second name alone: the file was signed under its first name already.
    deb_sign(&keys).arg("--entitle=/usr/bin/program-again=jit").arg(&deb).assert().code(1).stderr(contains(
        "--entitle /usr/bin/program-again: another name of /usr/bin/program, which the package lists first: name that one",
    ));
    assert!(fs::read(&deb).unwrap() == before, "a failed package was written");
    deb_sign(&keys)
        .args(["--entitle=/usr/bin/program=jit", "--entitle=/usr/bin/program-again=debugger"])
        .arg(&deb)
        .assert()
        .code(1)
        .stderr(contains("--entitle grants /usr/bin/program and /usr/bin/program-again, one file, differently"))
        .stderr(contains("no package given holds").not());
    // Both names, the same grant: both said.
    deb_sign(&keys)
        .args(["--entitle=/usr/bin/program=jit", "--entitle=/usr/bin/program-again=jit"])
        .arg(&deb)
        .assert()
        .success()
        .stderr(contains("/usr/bin/program: entitled to jit"))
        .stderr(contains("/usr/bin/program-again: entitled to jit"));
    let (files, _) = extract(&deb, &scratch.path("linked-files"));
    assert_eq!(entitlements_of(&files.join("usr/bin/program-again")), serde_json::json!(["jit"]));
}

#[test]
fn entitle_refuses_what_it_cannot_mean() {
    let keys = keys("a");
    let scratch = Scratch::new();
    let deb = build_package(&scratch, "refused", "xz");
    let before = fs::read(&deb).unwrap();
    for (args, said) in [
        (&["--entitle=usr/bin/program=jit"][..], "is not an absolute path"),
        (&["--entitle=/usr/bin/program/=jit"], "is not an absolute path"),
        (&["--entitle=/=jit"], "is not an absolute path"),
        (&["--entitle=/usr/lib/../bin/program=jit"], "name the file without .."),
        (&["--entitle=/usr/bin/program"], "must be FILE=ENTITLEMENTS"),
        (&["--entitle=/usr/bin/program=allow-jit"], "must be one of jit, debugger, or none"),
        (&["--entitle=/usr/bin/program=none,jit"], "--entitle none grants nothing"),
        (
            &["--entitle=/usr/bin/program=jit", "--entitle=//usr/bin/program=debugger"],
            "--entitle names /usr/bin/program twice",
        ),
    ] {
        deb_sign(&keys).args(args).arg(&deb).assert().code(2).stderr(contains(said));
    }
    assert!(fs::read(&deb).unwrap() == before, "a refused command changed the package");
}
