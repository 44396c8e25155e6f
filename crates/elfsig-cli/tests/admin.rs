//! `elfsig status`, `mode`, `loader`, `untrusted` and `flush` against a fake control directory
//! (`ELFSIG_CONTROL_DIR`) laid out as kmod/README.md documents the module's: what they show,
//! what they write, and how they refuse (module not loaded, locked, not root, a file they do
//! not understand). The VM suite runs the same commands against the real module.

#[allow(unreachable_pub)]
mod common;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use assert_cmd::Command;
use common::Scratch;
use predicates::str::contains;

/// A fake control directory: an enforcing, unlocked module with the guard active.
struct Fake {
    _scratch: Scratch,
    dir: PathBuf,
}

const STATS: &str = "\
checked 12
allowed 9
denied 3
mmap_checked 40
mmap_allowed 39
mmap_denied 1
unsigned 2
malformed_elf 0
modified 1
revoked 0
made_executable 1
cache_hits 30
cache_misses 22
interpreter_replaced 0
cache_entries 1024
cache_used 17
mmap_guard_active 1
";

const FILESYSTEMS: &str = "cache ext4 xfs btrfs tmpfs\nverify *\nuntrusted refuse\ninternal sealed\n";

impl Fake {
    fn new() -> Self {
        let scratch = Scratch::new();
        let dir = scratch.path("elfsig");
        fs::create_dir(&dir).unwrap();
        let fake = Fake { _scratch: scratch, dir };
        for (name, contents) in [
            ("mode", "enforce\n"),
            ("lock", "0\n"),
            ("loader", "allow\n"),
            ("guard", "active\n"),
            ("untrusted", "refuse\n"),
            ("filesystems", FILESYSTEMS),
            ("stats", STATS),
            ("flush", ""),
        ] {
            fake.set(name, contents);
        }
        fake
    }

    fn set(&self, name: &str, contents: &str) {
        fs::write(self.dir.join(name), contents).unwrap();
    }

    fn get(&self, name: &str) -> String {
        fs::read_to_string(self.dir.join(name)).unwrap()
    }

    /// `elfsig ARGS` pointed at this directory.
    fn elfsig(&self, args: &[&str]) -> Command {
        let mut cmd = common::elfsig();
        cmd.env("ELFSIG_CONTROL_DIR", &self.dir).args(args);
        cmd
    }
}

fn json(out: &[u8]) -> serde_json::Value {
    serde_json::from_slice(out).unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(out)))
}

#[test]
fn status_reports_every_setting_counter_and_the_cache() {
    let fake = Fake::new();
    let out = fake.elfsig(&["status", "--json"]).assert().success().get_output().stdout.clone();
    let v = json(&out);
    assert_eq!(v["schema"], 1);
    assert_eq!(v["loaded"], true);
    assert_eq!(v["mode"], "enforce");
    assert_eq!(v["locked"], false);
    assert_eq!(v["loader"], "allow");
    assert_eq!(v["mapping_guard"], serde_json::json!({"state": "active"}));
    assert_eq!(v["execs"], serde_json::json!({"checked": 12, "allowed": 9, "denied": 3}));
    assert_eq!(v["mappings"], serde_json::json!({"checked": 40, "allowed": 39, "denied": 1}));
    // Only reasons that happened.
    assert_eq!(v["refusals"], serde_json::json!({"unsigned": 2, "modified": 1, "made_executable": 1}));
    assert_eq!(v["cache"], serde_json::json!({"entries": 1024, "used": 17, "hits": 30, "misses": 22}));
    assert_eq!(v["counters"]["interpreter_replaced"], 0);
    assert_eq!(v["counters"].as_object().unwrap().len(), STATS.lines().count());
    assert!(v["keyrings"].is_array(), "{v}");
    assert_eq!(v["filesystems"]["cached"], serde_json::json!(["ext4", "xfs", "btrfs", "tmpfs"]));
    assert_eq!(v["filesystems"]["untrusted"], "refuse");
    // This machine's mounts, each with what applies to it (status.rs tests each policy on fixed
    // mounts): /proc is left out (no programs), the root filesystem is there.
    let mounted = v["filesystems"]["mounted"].as_object().expect("mounted is an object");
    assert!(!mounted.contains_key("proc"), "{v}");
    assert!(mounted.values().all(|m| m["policy"].is_string() && m["mount_points"].is_array()), "{v}");

    fake.elfsig(&["status"])
        .assert()
        .success()
        .stdout(contains("mode:           enforce\n"))
        .stdout(contains("mapping guard:  active: executable file mappings are checked\n"))
        .stdout(contains("execs:          12 checked, 9 allowed, 3 denied\n"))
        .stdout(contains("refusals:       unsigned 2, modified 1, made_executable 1\n"))
        .stdout(contains("cache:          17 of 1024 entries used, 30 hits, 22 misses\n"))
        .stdout(contains("cached on:      ext4 xfs btrfs tmpfs; every other filesystem is verified at each use\n"))
        .stdout(contains("untrusted:      refused (user namespaces' mounts, FUSE)\n"));
    // A module older than the file: nothing said about filesystems.
    fs::remove_file(fake.dir.join("filesystems")).unwrap();
    let v = json(&fake.elfsig(&["status", "--json"]).assert().success().get_output().stdout);
    assert!(v.get("filesystems").is_none(), "{v}");
}

#[test]
fn untrusted_shows_and_sets_the_word_the_module_reads_and_the_lock_keeps_refuse() {
    let fake = Fake::new();
    fake.elfsig(&["untrusted"]).assert().success().stdout("refuse\n");
    fake.elfsig(&["untrusted", "verify"]).assert().success().stdout("verify\n");
    assert!(fake.get("untrusted").starts_with("verify\n"));
    fake.set("untrusted", "refuse\n");
    fake.set("lock", "1\n");
    fake.elfsig(&["untrusted", "verify"]).assert().code(1).stderr(contains("locked until reboot"));
    assert_eq!(fake.get("untrusted"), "refuse\n");
    fake.elfsig(&["untrusted", "refuse"]).assert().success();
    fake.elfsig(&["untrusted", "allow"]).assert().code(2).stderr(contains("invalid value 'allow'"));
    // A word the module wrote that this version does not know.
    fake.set("untrusted", "allow\n");
    fake.elfsig(&["untrusted"]).assert().code(1).stderr(contains("\"allow\""));
}

#[test]
fn a_filesystems_file_without_its_policy_lines_fails_status() {
    for broken in ["verify *\nuntrusted refuse\n", "cache ext4\nverify *\n", "cache ext4\nuntrusted allow\n"] {
        let fake = Fake::new();
        fake.set("filesystems", broken);
        fake.elfsig(&["status"]).assert().code(1).stderr(contains("filesystems"));
    }
}

#[test]
fn status_says_why_the_guard_is_off_and_that_the_module_is_locked() {
    let fake = Fake::new();
    fake.set("lock", "1\n");
    fake.set("guard", "unavailable: the module has no BTF\n");
    let v = json(&fake.elfsig(&["status", "--json"]).assert().success().get_output().stdout);
    assert_eq!(v["locked"], true);
    assert_eq!(v["mapping_guard"], serde_json::json!({"state": "unavailable", "why": "the module has no BTF"}));
    fake.elfsig(&["status"])
        .assert()
        .success()
        .stdout(contains("mode:           enforce, locked until reboot\n"))
        .stdout(contains("mapping guard:  unavailable: the module has no BTF\n"));
    fake.set("guard", "detached\n");
    fake.elfsig(&["status"]).assert().success().stdout(contains("detached: only execs are checked (run elfsig-guard)"));
}

#[test]
fn without_the_module_status_says_not_loaded_and_exits_1() {
    let fake = Fake::new();
    fs::remove_dir_all(&fake.dir).unwrap();
    let out = fake
        .elfsig(&["status", "--json"])
        .assert()
        .code(1)
        .stderr(contains("module is not loaded"))
        .get_output()
        .stdout
        .clone();
    let v = json(&out);
    assert_eq!(v["loaded"], false);
    assert!(v.get("mode").is_none(), "{v}");
    fake.elfsig(&["status"]).assert().code(1).stdout(contains("module:         not loaded (no "));
    for args in [&["mode", "permissive"][..], &["loader"], &["flush"], &["untrusted"], &["untrusted", "verify"]] {
        fake.elfsig(args).assert().code(1).stderr(contains("the elfsig module is not loaded"));
    }
}

#[test]
fn mode_and_loader_show_and_set_the_word_the_module_reads() {
    let fake = Fake::new();
    fake.elfsig(&["mode"]).assert().success().stdout("enforce\n");
    fake.elfsig(&["mode", "permissive"]).assert().success().stdout("permissive\n");
    assert_eq!(fake.get("mode"), "permissive\n");
    fake.elfsig(&["-q", "mode", "enforce"]).assert().success().stdout("");
    assert!(fake.get("mode").starts_with("enforce\n"), "{:?}", fake.get("mode"));

    fake.elfsig(&["loader", "deny"]).assert().success().stdout("deny\n");
    assert!(fake.get("loader").starts_with("deny\n"));
    fake.set("loader", "deny\n");
    fake.elfsig(&["loader"]).assert().success().stdout("deny\n");
    fake.elfsig(&["loader", "allow"]).assert().success();
    assert_eq!(fake.get("loader"), "allow\n");

    fake.set("mode", "enforce\n");
    fake.elfsig(&["mode", "lax"]).assert().code(2).stderr(contains("invalid value 'lax'"));
    assert_eq!(fake.get("mode"), "enforce\n");
}

#[test]
fn flush_writes_the_flush_file() {
    let fake = Fake::new();
    fake.elfsig(&["flush"]).assert().success().stderr(contains("the verdict cache is empty"));
    assert_eq!(fake.get("flush"), "1\n");
}

#[test]
fn locked_refuses_permissive_and_allowing_the_loader_but_not_tightening() {
    let fake = Fake::new();
    fake.set("lock", "1\n");
    fake.set("loader", "deny\n");
    fake.elfsig(&["mode", "permissive"])
        .assert()
        .code(1)
        .stderr("elfsig: the module is locked until reboot and refuses switching to permissive\n");
    assert_eq!(fake.get("mode"), "enforce\n");
    fake.elfsig(&["loader", "allow"]).assert().code(1).stderr(contains("locked until reboot"));
    assert_eq!(fake.get("loader"), "deny\n");
    // Asking for what the lock keeps anyway is not refused.
    fake.elfsig(&["mode", "enforce"]).assert().success().stdout("enforce (locked until reboot)\n");
    fake.elfsig(&["loader", "deny"]).assert().success();
    fake.elfsig(&["flush"]).assert().success();
}

#[test]
fn a_word_this_version_does_not_know_is_an_error_not_a_guess() {
    let fake = Fake::new();
    fake.set("mode", "audit\n");
    fake.elfsig(&["mode"])
        .assert()
        .code(1)
        .stderr(contains("says \"audit\", which this version of elfsig does not understand"));
    fake.elfsig(&["status"]).assert().code(1).stderr(contains("\"audit\""));
    let fake = Fake::new();
    fake.set("stats", "checked 1\nbroken\n");
    fake.elfsig(&["status"]).assert().code(1).stderr(contains("says \"broken\""));
    // New counters are shown, not refused.
    let fake = Fake::new();
    fake.set("stats", &format!("{STATS}new_counter 5\n"));
    let v = json(&fake.elfsig(&["status", "--json"]).assert().success().get_output().stdout);
    assert_eq!(v["counters"]["new_counter"], 5);
}

/// Whether this process runs as root (uid 0).
fn is_root() -> bool {
    fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|ids| ids.split_whitespace().nth(1).map(|euid| euid == "0"))
        .unwrap()
}

/// `elfsig ARGS` without the right to change the fake's files: their mode is 0400, and root
/// loses the capabilities that override file permissions (as a process of another user would
/// have none to begin with).
fn unprivileged(fake: &Fake, args: &[&str]) -> Command {
    for name in ["mode", "lock", "loader", "guard", "flush", "untrusted"] {
        fs::set_permissions(fake.dir.join(name), fs::Permissions::from_mode(0o400)).unwrap();
    }
    if !is_root() {
        return fake.elfsig(args);
    }
    let mut cmd = Command::new("setpriv");
    cmd.args(["--inh-caps=-all", "--bounding-set=-dac_override,-dac_read_search,-fowner", "--"])
        .arg(assert_cmd::cargo::cargo_bin("elfsig"))
        .args(args)
        .env("ELFSIG_CONTROL_DIR", &fake.dir);
    cmd
}

#[test]
fn changing_a_setting_without_privilege_says_it_needs_root() {
    let fake = Fake::new();
    let mode = fake.dir.join("mode");
    unprivileged(&fake, &["mode", "permissive"])
        .assert()
        .code(1)
        .stderr(format!("elfsig: changing {} needs root (CAP_SYS_ADMIN)\n", mode.display()));
    assert_eq!(fake.get("mode"), "enforce\n");
    unprivileged(&fake, &["flush"]).assert().code(1).stderr(contains("needs root"));
    assert_eq!(fake.get("flush"), "");
    unprivileged(&fake, &["untrusted", "verify"]).assert().code(1).stderr(contains("needs root"));
    assert_eq!(fake.get("untrusted"), "refuse\n");
    // Reading needs no more than the files' modes allow.
    unprivileged(&fake, &["status"]).assert().success();
}

/// `elfsig policy load` writes the signed policy whole and refuses an unsigned one before the
/// module sees it; `show` reads what the module says, `none` or the loaded policy's lines.
#[test]
fn policy_load_show_and_clear_go_through_the_policy_file() {
    let fake = Fake::new();
    fake.set("policy", "none\n");
    fake.elfsig(&["policy", "show"]).assert().success().stdout(contains("no policy loaded"));
    let v = json(&fake.elfsig(&["policy", "show", "--json"]).assert().success().get_output().stdout.clone());
    assert_eq!(v["loaded"], false);
    let keys = common::keys("policy");
    let scratch = Scratch::new();
    let (body, signed) = (scratch.path("body"), scratch.path("signed"));
    common::elfsig().args(["policy", "create", "--serial", "4", "-o"]).arg(&body).assert().success();
    fake.elfsig(&["policy", "load", body.to_str().unwrap()]).assert().code(2).stderr(contains("not signed"));
    assert_eq!(fake.get("policy"), "none\n");
    common::elfsig()
        .args(["policy", "sign", "--key"])
        .arg(&keys.key)
        .arg("--cert")
        .arg(&keys.cert)
        .arg("-o")
        .arg(&signed)
        .arg(&body)
        .assert()
        .success();
    fake.set("policy", "");
    fake.elfsig(&["policy", "load", signed.to_str().unwrap()]).assert().success();
    assert_eq!(fs::read(fake.dir.join("policy")).unwrap(), fs::read(&signed).unwrap());
    fake.set("policy", "serial 4\nsha256 00ff\nrevoked_digests 0\nrevoked_certs 0\ntrusted_certs 0\n");
    let v = json(&fake.elfsig(&["policy", "show", "--json"]).assert().success().get_output().stdout.clone());
    assert_eq!((v["loaded"].clone(), v["serial"].clone()), (serde_json::json!(true), serde_json::json!(4)));
    let v = json(&fake.elfsig(&["status", "--json"]).assert().success().get_output().stdout.clone());
    assert_eq!(v["policy"]["serial"], 4);
    fake.set("policy", "serial x\n");
    fake.elfsig(&["policy", "show"]).assert().failure().stderr(contains("does not understand"));
    // The module's files are written at offset 0, never truncated, as the other settings are.
    fake.set("policy", "");
    fake.elfsig(&["policy", "clear"]).assert().success();
    assert_eq!(fake.get("policy"), "clear");
}
