//! How `sign` and `remove` treat files as files: ownership, mode, extended attributes and
//! capabilities kept; symbolic and hard links; a running program; atomic replacement that leaves
//! nothing behind on error; `--recursive`; `--quiet`; usage errors; many files at once.

#[allow(unreachable_pub)]
mod common;

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use common::{Keys, Scratch, elfsig, keys, section, sign, verify};
use predicates::prelude::PredicateBooleanExt;
use predicates::str::contains;

fn true_binary() -> PathBuf {
    elfsig_fixtures::system_binary("true").expect("true is installed")
}

fn ls_binary() -> PathBuf {
    elfsig_fixtures::system_binary("ls").expect("ls is installed")
}

/// The names in `dir`, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> =
        fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
}

fn stderr_of(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `elfsig sign --key --cert` with `args`.
fn sign_cmd(keys: &Keys) -> assert_cmd::Command {
    let mut cmd = elfsig();
    cmd.arg("sign").arg("--key").arg(&keys.key).arg("--cert").arg(&keys.cert);
    cmd
}

/// Asserts that nothing in `text` looks like a progress bar (escape sequences, carriage returns).
fn assert_no_progress_bar(text: &str) {
    assert!(!text.contains('\x1b') && !text.contains('\r'), "progress bar output without a terminal: {text:?}");
}

/// Runs a tool, returning its output; panics if it cannot be started.
fn tool(program: &str, args: &[&std::ffi::OsStr]) -> Output {
    Command::new(program).args(args).output().unwrap_or_else(|e| panic!("cannot run {program}: {e}"))
}

/// Sets the extended attribute `name` with `setfattr` (from the `attr` package).
fn setfattr(file: &Path, name: &str, value: &str) {
    let out = tool("setfattr", &["-n".as_ref(), name.as_ref(), "-v".as_ref(), value.as_ref(), file.as_os_str()]);
    assert!(out.status.success(), "setfattr {name} on {}: {}", file.display(), stderr_of(&out));
}

/// The value of the extended attribute `name`, read with `getfattr`; `None` if absent.
fn getfattr(file: &Path, name: &str) -> Option<String> {
    let out = tool("getfattr", &["--only-values".as_ref(), "-n".as_ref(), name.as_ref(), file.as_os_str()]);
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Gives `file` the `cap_net_raw=ep` capability with `setcap`; false (after saying why) when
/// this machine cannot.
fn setcap(file: &Path) -> bool {
    let Some(setcap) = elfsig_fixtures::system_binary("setcap") else {
        eprintln!("skipping file capabilities: setcap is not installed (Debian package libcap2-bin)");
        return false;
    };
    let out = Command::new(setcap).arg("cap_net_raw+ep").arg(file).output().unwrap();
    if !out.status.success() {
        eprintln!("skipping file capabilities: setcap failed: {}", stderr_of(&out));
        return false;
    }
    true
}

/// The file's capabilities as `getcap` prints them, without the file name.
fn getcap(file: &Path) -> String {
    let getcap = elfsig_fixtures::system_binary("getcap").expect("getcap comes with setcap");
    let out = Command::new(getcap).arg(file).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    text.trim().strip_prefix(&file.display().to_string()).unwrap_or(&text).trim().to_string()
}

/// Metadata that must survive: mode (with set-id and sticky bits), owner, group, a user
/// extended attribute and, when `caps`, the file capability.
#[derive(Debug, PartialEq, Eq)]
struct Kept {
    mode: u32,
    uid: u32,
    gid: u32,
    xattr: Option<String>,
    caps: Option<String>,
}

fn kept(file: &Path, caps: bool) -> Kept {
    let meta = fs::symlink_metadata(file).unwrap();
    Kept {
        mode: meta.mode() & 0o7777,
        uid: meta.uid(),
        gid: meta.gid(),
        xattr: getfattr(file, "user.elfsig-test"),
        caps: caps.then(|| getcap(file)),
    }
}

/// The user id files created by this process get (root in CI).
fn my_ids(scratch: &Scratch) -> (u32, u32) {
    let probe = scratch.path(".probe");
    fs::write(&probe, b"").unwrap();
    let meta = fs::metadata(&probe).unwrap();
    fs::remove_file(&probe).unwrap();
    (meta.uid(), meta.gid())
}

/// A copy of `true` owned by 65534:65534 with `mode`, a user extended attribute and (when
/// possible and asked for) a capability. In that order: chown clears set-id bits and
/// capabilities.
fn prepared(scratch: &Scratch, name: &str, mode: u32, with_caps: bool) -> (PathBuf, bool) {
    let file = scratch.copy(&true_binary(), name);
    std::os::unix::fs::chown(&file, Some(65534), Some(65534)).unwrap();
    fs::set_permissions(&file, fs::Permissions::from_mode(mode)).unwrap();
    setfattr(&file, "user.elfsig-test", &format!("value for {name}"));
    let caps = with_caps && setcap(&file);
    (file, caps)
}

#[test]
fn sign_resign_and_remove_keep_owner_mode_xattrs_and_capabilities() {
    let keys = keys("a");
    let scratch = Scratch::new();
    let original = fs::read(true_binary()).unwrap();
    for (mode, with_caps) in [(0o4755, false), (0o2750, false), (0o700, false), (0o1755, false), (0o6711, true)] {
        let name = format!("true-{mode:o}");
        let (file, caps) = prepared(&scratch, &name, mode, with_caps);
        let expected = kept(&file, caps);
        assert_eq!(expected.mode, mode, "test setup: chmod after chown keeps the bits");
        assert_eq!((expected.uid, expected.gid), (65534, 65534));
        assert_eq!(expected.xattr.as_deref(), Some(format!("value for {name}").as_str()));
        if caps {
            assert_eq!(expected.caps.as_deref(), Some("cap_net_raw=ep"));
        }

        sign(&keys, &file);
        assert_eq!(kept(&file, caps), expected, "{name}: sign");
        verify(&keys, &file).success();
        let signed = fs::read(&file).unwrap();

        sign(&keys, &file);
        assert_eq!(kept(&file, caps), expected, "{name}: re-sign");
        assert!(fs::read(&file).unwrap() == signed, "{name}: re-signing is idempotent");

        elfsig().arg("remove").arg(&file).assert().success();
        assert_eq!(kept(&file, caps), expected, "{name}: remove");
        assert!(fs::read(&file).unwrap() == original, "{name}: remove restores the original");
    }
    assert!(listing(scratch.dir.path()).iter().all(|n| !n.contains("elfsig-tmp")));
}

#[test]
fn output_keeps_mode_but_not_set_id_bits_or_ownership_and_leaves_the_input_alone() {
    let keys = keys("a");
    let scratch = Scratch::new();
    let (input, caps) = prepared(&scratch, "input", 0o4750, true);
    let before = kept(&input, caps);
    let bytes = fs::read(&input).unwrap();
    let output = scratch.path("output");
    sign_cmd(&keys).arg("--output").arg(&output).arg(&input).assert().success().stdout("").stderr("");
    assert!(fs::read(&input).unwrap() == bytes, "input bytes untouched");
    assert_eq!(kept(&input, caps), before, "input metadata untouched");
    verify(&keys, &input).code(1).stderr(contains("not signed"));
    verify(&keys, &output).success();

    let after = kept(&output, caps);
    // As cp(1) does: without the owner, a set-user-ID bit would hand the original owner's
    // privileges to a file whoever ran elfsig owns.
    assert_eq!(after.mode, 0o0750, "permission bits kept, set-user-id dropped");
    assert_eq!(after.xattr, before.xattr, "extended attribute kept");
    assert_eq!(after.caps, before.caps, "capability kept");
    assert_eq!((after.uid, after.gid), my_ids(&scratch), "owned by whoever ran elfsig, not the input's owner");
    assert_eq!(listing(scratch.dir.path()), ["input", "output"]);
}

#[test]
fn signing_a_symlink_signs_its_target_and_keeps_the_link() {
    let keys = keys("a");
    let scratch = Scratch::new();
    fs::create_dir(scratch.path("real")).unwrap();
    fs::create_dir(scratch.path("links")).unwrap();
    let target = scratch.copy(&true_binary(), "real/true");
    let link = scratch.path("links/link");
    std::os::unix::fs::symlink("../real/true", &link).unwrap();
    let original = fs::read(&target).unwrap();

    sign(&keys, &link);
    assert!(fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "the link is still a link");
    assert_eq!(fs::read_link(&link).unwrap(), Path::new("../real/true"), "pointing where it did");
    verify(&keys, &target).success();
    verify(&keys, &link).success();
    assert_eq!(listing(&scratch.path("real")), ["true"]);
    assert_eq!(listing(&scratch.path("links")), ["link"]);

    elfsig().arg("remove").arg(&link).assert().success();
    assert!(fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    assert!(fs::read(&target).unwrap() == original, "remove through the link restored the target");
}

#[test]
fn signing_every_name_of_a_file_keeps_them_one_file() {
    // Debian's /usr/bin/perl and perl5.36.0: both names in the tree signed, one file after.
    let keys = keys("a");
    let scratch = Scratch::new();
    fs::create_dir_all(scratch.path("tree/bin")).unwrap();
    let first = scratch.copy(&true_binary(), "tree/bin/perl");
    let second = scratch.path("tree/bin/perl5.36.0");
    let third = scratch.path("tree/other/perl-again");
    fs::create_dir_all(third.parent().unwrap()).unwrap();
    fs::hard_link(&first, &second).unwrap();
    fs::hard_link(&first, &third).unwrap();
    let original = fs::read(&first).unwrap();

    let out = sign_cmd(&keys).arg("--recursive").arg(scratch.path("tree")).output().unwrap();
    let stderr = stderr_of(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("only this name"), "{stderr}");
    for other in [&second, &third] {
        let note =
            format!("elfsig: {}: another name of {}: linked to the new file\n", other.display(), first.display());
        assert!(stderr.contains(&note), "{stderr}");
    }
    assert!(stderr.contains("1 done, 2 skipped (2 other names of signed files)"), "{stderr}");
    let inode = fs::metadata(&first).unwrap().ino();
    for name in [&first, &second, &third] {
        let meta = fs::metadata(name).unwrap();
        assert_eq!((meta.ino(), meta.nlink()), (inode, 3), "{} is still one of three names", name.display());
        verify(&keys, name).success();
    }
    assert!(fs::read(&first).unwrap() != original);
    let leftovers: Vec<String> =
        listing(&scratch.path("tree/bin")).into_iter().filter(|n| n.contains("elfsig")).collect();
    assert!(leftovers.is_empty(), "temporary names left behind: {leftovers:?}");
}

#[test]
fn signing_one_hard_link_notes_it_and_leaves_the_other_name_alone() {
    let keys = keys("a");
    let scratch = Scratch::new();
    let first = scratch.copy(&true_binary(), "first");
    let second = scratch.path("second");
    fs::hard_link(&first, &second).unwrap();
    let original = fs::read(&first).unwrap();

    sign_cmd(&keys).arg(&first).assert().success().stdout("").stderr(format!(
        "elfsig: {}: has 2 hard links; only this name now refers to the signed file\n",
        first.display()
    ));
    verify(&keys, &first).success();
    assert!(fs::read(&second).unwrap() == original, "the other name still has the original bytes");
    verify(&keys, &second).code(1).stderr(contains("not signed"));
    assert_eq!(fs::metadata(&second).unwrap().nlink(), 1);
    assert_eq!(fs::metadata(&first).unwrap().nlink(), 1);

    // Quiet: no note.
    let third = scratch.path("third");
    fs::hard_link(&second, &third).unwrap();
    sign_cmd(&keys).arg("-q").arg(&second).assert().success().stdout("").stderr("");
}

#[test]
fn removing_from_one_hard_link_notes_it_and_leaves_the_other_name_alone() {
    let keys = keys("a");
    let scratch = Scratch::new();
    let first = scratch.copy(&true_binary(), "first");
    let original = fs::read(&first).unwrap();
    sign(&keys, &first);
    let signed = fs::read(&first).unwrap();
    let (second, third) = (scratch.path("second"), scratch.path("third"));
    fs::hard_link(&first, &second).unwrap();
    fs::hard_link(&first, &third).unwrap();

    elfsig().arg("remove").arg(&first).assert().success().stdout("").stderr(format!(
        "elfsig: {}: has 3 hard links; only this name now refers to the restored file\n",
        first.display()
    ));
    assert!(fs::read(&first).unwrap() == original, "remove restored the original");
    for other in [&second, &third] {
        assert!(fs::read(other).unwrap() == signed, "{}: the other names keep the signed file", other.display());
        verify(&keys, other).success();
        assert_eq!(fs::metadata(other).unwrap().nlink(), 2);
    }
    assert_eq!(fs::metadata(&first).unwrap().nlink(), 1);

    // Quiet: no note. A single link: no note either.
    elfsig().args(["-q", "remove"]).arg(&second).assert().success().stdout("").stderr("");
    assert!(fs::read(&second).unwrap() == original);
    elfsig().arg("remove").arg(&third).assert().success().stdout("").stderr("");
    assert!(fs::read(&third).unwrap() == original);
    assert_eq!(listing(scratch.dir.path()), ["first", "second", "third"], "no temporary file left");
}

#[test]
fn a_running_program_can_be_signed() {
    let keys = keys("a");
    let scratch = Scratch::new();
    let sleep = scratch.copy(&elfsig_fixtures::system_binary("sleep").expect("sleep is installed"), "sleep");
    // Another test thread forking while the copy was open for writing makes exec fail with
    // ETXTBSY for a moment.
    let mut child = {
        let mut attempts = 0;
        loop {
            match Command::new(&sleep).arg("3").spawn() {
                Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy && attempts < 500 => {
                    attempts += 1;
                    std::thread::sleep(Duration::from_millis(10));
                }
                result => break result.unwrap(),
            }
        }
    };
    let exe = PathBuf::from(format!("/proc/{}/exe", child.id()));
    assert_eq!(fs::read_link(&exe).unwrap(), sleep.canonicalize().unwrap(), "the child runs the copy");

    let signed = sign_cmd(&keys).arg(&sleep).output().unwrap();
    let running = child.try_wait().unwrap().is_none();
    assert!(signed.status.success(), "signing a running program: {}", stderr_of(&signed));
    assert!(running, "the program was still running when signing finished");
    // The file was replaced, not rewritten in place: the process still has the old inode.
    let link = fs::read_link(&exe).unwrap();
    assert!(link.to_string_lossy().ends_with(" (deleted)"), "the running program's file was rewritten: {link:?}");
    assert!(child.wait().unwrap().success(), "the running program finished normally");
    verify(&keys, &sleep).success();
    let out = elfsig_fixtures::run_program(&sleep, &["0"]).unwrap();
    assert!(out.status.success(), "the signed program runs");
}

/// Makes a directory immutable (`chattr +i`: not even root can create files in it) for the
/// guard's lifetime.
struct Immutable(PathBuf);

impl Immutable {
    fn new(dir: &Path) -> Option<Self> {
        let out = Command::new("chattr").arg("+i").arg(dir).output().ok()?;
        if !out.status.success() {
            eprintln!("skipping the immutable-directory case: chattr +i failed: {}", stderr_of(&out));
            return None;
        }
        Some(Immutable(dir.to_owned()))
    }
}

impl Drop for Immutable {
    fn drop(&mut self) {
        let _ = Command::new("chattr").arg("-i").arg(&self.0).status();
    }
}

#[test]
fn errors_leave_the_original_unchanged_and_nothing_behind() {
    let keys = keys("a");
    let scratch = Scratch::new();
    let file = scratch.copy(&ls_binary(), "ls");
    let original = fs::read(&file).unwrap();

    // The temporary file cannot be created.
    sign_cmd(&keys).arg("--output").arg("/nonexistent-dir/x").arg(&file).assert().code(1).stderr(contains(format!(
        "elfsig: {}: cannot create a temporary file in /nonexistent-dir: No such file or directory",
        file.display()
    )));
    assert!(fs::read(&file).unwrap() == original);
    assert_eq!(listing(scratch.dir.path()), ["ls"]);

    // Writing the temporary file fails half-way: RLIMIT_FSIZE (with SIGXFSZ ignored) makes
    // writes past 32 KiB fail with EFBIG.
    let signed = scratch.copy(&ls_binary(), "signed-ls");
    sign(&keys, &signed);
    let signed_bytes = fs::read(&signed).unwrap();
    let bin = assert_cmd::cargo::cargo_bin("elfsig");
    let limited = |args: &[&std::ffi::OsStr]| {
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg(r#"trap "" XFSZ; ulimit -f 64; exec "$0" "$@""#).arg(&bin).args(args);
        cmd.output().unwrap()
    };
    let out = limited(&[
        "sign".as_ref(),
        "--key".as_ref(),
        keys.key.as_os_str(),
        "--cert".as_ref(),
        keys.cert.as_os_str(),
        file.as_os_str(),
    ]);
    assert_eq!(out.status.code(), Some(1), "sign with a file size limit: {}", stderr_of(&out));
    assert!(
        stderr_of(&out).contains("cannot write") && stderr_of(&out).contains("File too large"),
        "{}",
        stderr_of(&out)
    );
    let out = limited(&["remove".as_ref(), signed.as_os_str()]);
    assert_eq!(out.status.code(), Some(1), "remove with a file size limit: {}", stderr_of(&out));
    assert!(stderr_of(&out).contains("File too large"), "{}", stderr_of(&out));
    assert!(fs::read(&file).unwrap() == original, "failed sign left the original");
    assert!(fs::read(&signed).unwrap() == signed_bytes, "failed remove left the signed file");
    assert_eq!(listing(scratch.dir.path()), ["ls", "signed-ls"], "no temporary file left behind");

    // A directory where nothing can be created, not even by root.
    let dir = scratch.path("immutable");
    fs::create_dir(&dir).unwrap();
    let inside = scratch.copy(&ls_binary(), "immutable/ls");
    let signed_inside = scratch.path("immutable/signed-ls");
    fs::write(&signed_inside, &signed_bytes).unwrap();
    if let Some(_guard) = Immutable::new(&dir) {
        sign_cmd(&keys).arg(&inside).assert().code(1).stderr(contains(format!(
            "elfsig: {}: cannot create a temporary file in {}: Operation not permitted",
            inside.display(),
            dir.display()
        )));
        elfsig()
            .arg("remove")
            .arg(&signed_inside)
            .assert()
            .code(1)
            .stderr(contains(format!("cannot create a temporary file in {}", dir.display())));
        assert!(fs::read(&inside).unwrap() == original);
        assert!(fs::read(&signed_inside).unwrap() == signed_bytes);
        assert_eq!(listing(&dir), ["ls", "signed-ls"]);
    }
}

#[test]
fn remove_refuses_bytes_appended_after_signing() {
    let keys = keys("a");
    let scratch = Scratch::new();
    let file = scratch.copy(&ls_binary(), "ls");
    sign(&keys, &file);
    let mut appended = fs::read(&file).unwrap();
    appended.extend_from_slice(b"appended after signing");
    fs::write(&file, &appended).unwrap();
    elfsig().arg("remove").arg(&file).assert().code(1).stdout("").stderr(format!(
        "elfsig: {}: modified since it was signed: bytes outside the original differ from what elfsig \
             wrote; refusing to rewrite the file, which would lose them\n",
        file.display()
    ));
    assert!(fs::read(&file).unwrap() == appended, "file unchanged");
    assert_eq!(listing(scratch.dir.path()), ["ls"]);
    verify(&keys, &file).code(1).stderr(format!(
        "elfsig: {}: modified since it was signed: its length or signature position is not what was signed\n",
        file.display()
    ));
}

#[test]
fn remove_restores_an_original_that_changed_after_signing() {
    let keys = keys("a");
    let scratch = Scratch::new();
    let file = scratch.copy(&ls_binary(), "ls");
    let pristine = fs::read(&file).unwrap();
    let (text, _) = section(&file, ".text").expect("ls has .text");
    sign(&keys, &file);
    let mut changed = fs::read(&file).unwrap();
    let at = text + 16;
    changed[at] ^= 0xff;
    fs::write(&file, &changed).unwrap();
    verify(&keys, &file).code(1).stderr(contains("modified since it was signed"));

    elfsig().arg("remove").arg(&file).assert().success();
    let restored = fs::read(&file).unwrap();
    assert_eq!(restored.len(), pristine.len(), "the signature is gone");
    let differences: Vec<usize> = (0..pristine.len()).filter(|&i| restored[i] != pristine[i]).collect();
    assert_eq!(differences, [at], "only the byte changed after signing differs from the pristine original");
}

/// A file without a section header table ends with padding, the payload, padding and the
/// trailer: `remove` and re-signing drop them, so they refuse when any of those bytes (the payload
/// aside) is not what elfsig wrote, and restore the original part as it is now.
#[test]
fn remove_and_resign_of_a_file_without_sections_check_what_they_drop() {
    let keys = keys("a");
    let scratch = Scratch::new();
    let spec = elfsig_fixtures::Spec::new(elfsig_fixtures::Class::Elf64, elfsig_fixtures::Endian::Little)
        .sections(elfsig_fixtures::Sections::None)
        .trailing(b"odd length");
    let original = elfsig_fixtures::synth(&spec);
    assert_ne!(original.len() % 8, 0, "the signer pads before the payload");
    let file = scratch.write("bare", &original);
    sign(&keys, &file);
    let signed = fs::read(&file).unwrap();
    assert!(common::trailer(&signed).is_some(), "signed with a trailer");
    let refusal = format!(
        "elfsig: {}: modified since it was signed: bytes outside the original differ from what elfsig wrote; \
         refusing to rewrite the file, which would lose them\n",
        file.display()
    );

    // A padding byte before the payload, and one before the trailer.
    let before_trailer = signed.len() - common::TRAILER_LEN - 1;
    for at in [original.len(), before_trailer] {
        assert_eq!(signed[at], 0, "padding at {at}");
        let mut changed = signed.clone();
        changed[at] = 1;
        fs::write(&file, &changed).unwrap();
        elfsig().arg("remove").arg(&file).assert().code(1).stdout("").stderr(refusal.clone());
        sign_cmd(&keys).arg(&file).assert().code(1).stdout("").stderr(refusal.clone());
        assert!(fs::read(&file).unwrap() == changed, "padding at {at}: file unchanged");
        verify(&keys, &file).code(1).stderr(contains("modified since it was signed: digest mismatch"));
    }

    // Appended bytes: no trailer at the end, so nothing says the file is signed.
    let mut appended = signed.clone();
    appended.extend_from_slice(b"appended");
    fs::write(&file, &appended).unwrap();
    elfsig()
        .arg("remove")
        .arg(&file)
        .assert()
        .code(1)
        .stderr(format!("elfsig: {}: not signed: nothing to remove\n", file.display()));
    assert!(fs::read(&file).unwrap() == appended, "file unchanged");
    assert_eq!(listing(scratch.dir.path()), ["bare"], "no temporary file left");

    // A byte of the original changed: restored as it is now.
    let mut changed = signed.clone();
    let at = original.len() - 1;
    changed[at] ^= 0xff;
    fs::write(&file, &changed).unwrap();
    elfsig().arg("remove").arg(&file).assert().success().stdout("").stderr("");
    let mut expected = original.clone();
    expected[at] ^= 0xff;
    assert!(fs::read(&file).unwrap() == expected, "the original part, as it is now");
}

#[test]
fn recursive_signs_every_elf_file_in_the_tree_and_nothing_else() {
    let keys = keys("a");
    let scratch = Scratch::new();
    let tree = scratch.path("tree");
    fs::create_dir_all(tree.join("sub/deeper")).unwrap();
    fs::create_dir(scratch.path("outside")).unwrap();
    let outside = scratch.copy(&true_binary(), "outside/true");
    let outside_bytes = fs::read(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, tree.join("link-to-outside")).unwrap();
    let elves = [
        scratch.copy(&true_binary(), "tree/true"),
        scratch.copy(&ls_binary(), "tree/sub/ls"),
        scratch.copy(&true_binary(), "tree/sub/deeper/unsigned-copy"),
    ];
    let script = scratch.write("tree/script.sh", b"#!/bin/sh\necho hello\n");
    let text = scratch.write("tree/sub/notes.txt", b"just some text\n");
    let (script_bytes, text_bytes) = (fs::read(&script).unwrap(), fs::read(&text).unwrap());
    // What a system's tree holds that is ELF but must be left alone: kernel modules (their own
    // signature is appended last), objects, separate debug files.
    let relocatable = elfsig_fixtures::synth(
        &elfsig_fixtures::Spec::new(elfsig_fixtures::Class::Elf64, elfsig_fixtures::Endian::Little)
            .kind(elfsig_fixtures::Kind::Rel),
    );
    let module = scratch.write("tree/sub/driver.ko", &relocatable);
    let object = scratch.write("tree/sub/thing.o", &relocatable);
    let mut core_dump = relocatable.clone();
    core_dump[16] = 4; // e_type ET_CORE, little-endian
    let core_dump = scratch.write("tree/sub/core", &core_dump);
    let debug = scratch.path("tree/sub/true.debug");
    let made = Command::new("objcopy").arg("--only-keep-debug").arg(true_binary()).arg(&debug).status().unwrap();
    assert!(made.success(), "objcopy --only-keep-debug failed");
    fs::create_dir_all(tree.join("lib/firmware")).unwrap();
    let firmware = scratch.copy(&true_binary(), "tree/lib/firmware/remoteproc.mdt");
    // A program for another architecture (s390x): run only through an emulator, signed by name.
    let foreign = scratch.write(
        "tree/sub/hello-s390x",
        &elfsig_fixtures::synth(&elfsig_fixtures::Spec::new(
            elfsig_fixtures::Class::Elf64,
            elfsig_fixtures::Endian::Big,
        )),
    );
    let left_alone: Vec<(PathBuf, Vec<u8>)> = [&module, &object, &debug, &core_dump, &firmware, &foreign]
        .iter()
        .map(|p| (p.to_path_buf(), fs::read(p).unwrap()))
        .collect();

    let out = sign_cmd(&keys).arg("--recursive").arg(&tree).output().unwrap();
    let stderr = stderr_of(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(out.stdout.is_empty());
    assert_no_progress_bar(&stderr);
    // Files that are not ELF are counted, not named one by one: a system holds thousands.
    assert!(!stderr.contains(&script.display().to_string()), "{stderr}");
    assert!(stderr.contains(&format!("elfsig: {}: skipped: a kernel module, ", module.display())), "{stderr}");
    assert!(stderr.contains(&format!("elfsig: {}: skipped: a relocatable object", object.display())), "{stderr}");
    assert!(stderr.contains(&format!("elfsig: {}: skipped: a separate debug file", debug.display())), "{stderr}");
    assert!(stderr.contains(&format!("elfsig: {}: skipped: firmware", firmware.display())), "{stderr}");
    assert!(stderr.contains(&format!("elfsig: {}: skipped: a core dump", core_dump.display())), "{stderr}");
    assert!(
        stderr.contains(&format!("elfsig: {}: skipped: code for another architecture", foreign.display())),
        "{stderr}"
    );
    let summary = "elfsig: signed: 3 done, 8 skipped (2 not ELF, 1 kernel module, 1 object, 1 debug file, 1 core dump, 1 firmware file, 1 for other architectures)\n";
    assert!(stderr.ends_with(summary), "{stderr}");
    for (path, bytes) in &left_alone {
        assert!(fs::read(path).unwrap() == *bytes, "{} was changed", path.display());
    }
    for elf in &elves {
        verify(&keys, elf).success();
    }
    assert!(fs::read(&outside).unwrap() == outside_bytes, "the symlink was not followed out of the tree");
    assert!(fs::symlink_metadata(tree.join("link-to-outside")).unwrap().file_type().is_symlink());
    assert!(fs::read(&script).unwrap() == script_bytes && fs::read(&text).unwrap() == text_bytes);

    elfsig()
        .arg("verify")
        .arg("--cert")
        .arg(&keys.cert)
        .arg("--recursive")
        .arg(&tree)
        .assert()
        .success()
        .stdout(contains(format!("{}: OK", elves[1].display())))
        .stderr(contains("elfsig: verified: 3 done, 8 skipped"));

    // Tamper with one: verify --recursive fails and names it.
    let tampered = &elves[1];
    let mut bytes = fs::read(tampered).unwrap();
    let (text_offset, _) = section(tampered, ".text").unwrap();
    bytes[text_offset] ^= 1;
    fs::write(tampered, &bytes).unwrap();
    elfsig()
        .arg("verify")
        .arg("--cert")
        .arg(&keys.cert)
        .arg("--recursive")
        .arg(&tree)
        .assert()
        .code(1)
        .stdout(contains(format!("{}: OK", elves[0].display())))
        .stdout(contains(tampered.display().to_string()).not())
        .stderr(contains(format!("elfsig: {}: modified since it was signed", tampered.display())))
        .stderr(contains(
            "elfsig: verified: 2 done, 8 skipped (2 not ELF, 1 kernel module, 1 object, 1 debug file, 1 core dump, 1 firmware file, 1 for other architectures), 1 failed",
        ));
}

#[test]
fn quiet_prints_nothing_on_success_and_still_reports_errors() {
    let keys = keys("a");
    let scratch = Scratch::new();
    let files = [scratch.copy(&true_binary(), "one"), scratch.copy(&true_binary(), "two")];
    let not_elf = scratch.write("not-elf", b"#!/bin/sh\n");

    sign_cmd(&keys).arg("-q").args(&files).assert().success().stdout("").stderr("");
    elfsig().args(["verify", "-q", "--cert"]).arg(&keys.cert).args(&files).assert().success().stdout("").stderr("");
    elfsig().args(["-q", "remove"]).args(&files).assert().success().stdout("").stderr("");

    // Errors are still reported, but no summary.
    let expected_error = format!("elfsig: {}: malformed ELF: not an ELF file\n", not_elf.display());
    sign_cmd(&keys).arg("-q").arg(&files[0]).arg(&not_elf).assert().code(1).stdout("").stderr(expected_error.clone());
    elfsig()
        .args(["verify", "-q", "--cert"])
        .arg(&keys.cert)
        .arg(&files[0])
        .arg(&not_elf)
        .assert()
        .code(1)
        .stdout("")
        .stderr(expected_error.clone());
    elfsig().args(["remove", "-q"]).arg(&files[0]).arg(&not_elf).assert().code(1).stdout("").stderr(expected_error);
}

#[test]
fn usage_errors_exit_2() {
    let keys = keys("a");
    let scratch = Scratch::new();
    let file = scratch.copy(&true_binary(), "true");
    let other = scratch.copy(&true_binary(), "other");
    let original = fs::read(&file).unwrap();

    elfsig().assert().code(2).stdout("").stderr(contains("Usage: elfsig"));
    elfsig()
        .arg("sign")
        .arg("--cert")
        .arg(&keys.cert)
        .arg(&file)
        .assert()
        .code(2)
        .stderr(contains("the following required arguments were not provided").and(contains("--key <KEY>")));
    let out = scratch.path("out");
    sign_cmd(&keys)
        .arg("--output")
        .arg(&out)
        .arg(&file)
        .arg(&other)
        .assert()
        .code(2)
        .stdout("")
        .stderr("elfsig: --output takes exactly one FILE and no --recursive\n");
    sign_cmd(&keys)
        .arg("--output")
        .arg(&out)
        .arg("--recursive")
        .arg(scratch.dir.path())
        .arg(&file)
        .assert()
        .code(2)
        .stderr("elfsig: --output takes exactly one FILE and no --recursive\n");
    elfsig()
        .arg("verify")
        .arg(&file)
        .assert()
        .code(2)
        .stderr(contains("the following required arguments were not provided").and(contains("--cert <CERT>")));
    let (key, cert) = (scratch.path("k"), scratch.path("c"));
    elfsig()
        .args(["keygen", "--bits", "1024", "--key"])
        .arg(&key)
        .arg("--cert")
        .arg(&cert)
        .assert()
        .code(2)
        .stderr(contains("invalid value '1024' for '--bits <BITS>'").and(contains("must be one of 2048, 3072, 4096")));
    elfsig()
        .args(["keygen", "--bits", "2048", "--key"])
        .arg(&key)
        .arg("--cert")
        .arg(&key)
        .assert()
        .code(2)
        .stderr("elfsig: --key and --cert must name different files\n");

    assert!(fs::read(&file).unwrap() == original, "nothing was signed");
    assert_eq!(listing(scratch.dir.path()), ["other", "true"], "nothing was created");
}

#[test]
fn sixty_files_in_one_call() {
    let keys = keys("a");
    let scratch = Scratch::new();
    let files: Vec<PathBuf> = (0..60).map(|i| scratch.copy(&true_binary(), &format!("true-{i:02}"))).collect();

    sign_cmd(&keys).args(&files).assert().success().stdout("").stderr("elfsig: signed: 60 done\n");
    let out = elfsig().arg("verify").arg("--cert").arg(&keys.cert).args(&files).output().unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(stderr_of(&out), "elfsig: verified: 60 done\n");
    let expected: String =
        files.iter().map(|f| format!("{}: OK (signed by CN=elfsig test key a)\n", f.display())).collect();
    assert_eq!(String::from_utf8_lossy(&out.stdout), expected, "one line per file, in the order given");
    assert!(listing(scratch.dir.path()).iter().all(|n| n.starts_with("true-")), "no temporary files left");
    for file in &files {
        assert_eq!(fs::metadata(file).unwrap().mode() & 0o7777, 0o755);
    }
}
