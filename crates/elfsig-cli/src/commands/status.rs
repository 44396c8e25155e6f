//! `elfsig status`: what the kernel module is doing, read from its control files
//! (`elfsig-control`) and the kernel's keyrings. Text for people, `--json` for scripts (schema
//! in kmod/README.md). Exit status 0 when the module is loaded, 1 when it is not or its state
//! cannot be read.

use std::collections::BTreeMap;
use std::process::ExitCode;

use elfsig_control::keys::{self, Keyring};
use elfsig_control::{Control, Filesystems, Guard, Stats};
use elfsig_core::Reason;
use serde::Serialize;

use crate::cli::StatusArgs;
use crate::error::Error;

/// The JSON schema's version; bumped on any incompatible change.
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Serialize)]
struct Report {
    schema: u32,
    control_dir: String,
    loaded: bool,
    #[serde(flatten)]
    state: Option<State>,
}

#[derive(Debug, Serialize)]
struct State {
    /// The module's version (`/sys/module/elfsig/version`), when it says.
    #[serde(skip_serializing_if = "Option::is_none")]
    version: Option<String>,
    mode: &'static str,
    locked: bool,
    loader: &'static str,
    /// The run-time rules (`enforce` or `off`), when the module says.
    #[serde(skip_serializing_if = "Option::is_none")]
    runtime: Option<&'static str>,
    mapping_guard: GuardReport,
    /// What applies where, when the module says (`filesystems`).
    #[serde(skip_serializing_if = "Option::is_none")]
    filesystems: Option<FilesystemsReport>,
    keyrings: Vec<KeyringReport>,
    /// Why the keyrings could not be listed, if they could not.
    #[serde(skip_serializing_if = "Option::is_none")]
    keyrings_error: Option<String>,
    /// Keys (`bin:` digests and others) in `.blacklist`, when it can be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    revocations: Option<usize>,
    /// The signed policy loaded, if any (docs/POLICY.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    policy: Option<PolicyReport>,
    execs: Counts,
    mappings: Counts,
    /// Refusals (and permissive would-be refusals) by reason, execs and mappings alike.
    refusals: BTreeMap<&'static str, u64>,
    cache: Cache,
    /// Every counter of `stats`, by its name there.
    counters: BTreeMap<String, u64>,
}

#[derive(Debug, Serialize)]
struct PolicyReport {
    serial: u64,
    sha256: String,
    revoked_digests: u64,
    revoked_certs: u64,
    trusted_certs: u64,
}

#[derive(Debug, Serialize)]
struct GuardReport {
    state: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    why: Option<String>,
}

#[derive(Debug, Serialize)]
struct FilesystemsReport {
    /// The filesystem types whose verdicts are cached; the rest are verified every time.
    cached: Vec<String>,
    /// `refuse` or `verify`: files on mounts the kernel does not trust.
    untrusted: &'static str,
    /// The types mounted in this mount namespace, with the policy that applies and where.
    mounted: BTreeMap<String, MountedReport>,
}

#[derive(Debug, Serialize)]
struct MountedReport {
    policy: &'static str,
    mount_points: Vec<String>,
}

#[derive(Debug, Serialize)]
struct KeyringReport {
    name: String,
    keys: Vec<KeyReport>,
}

#[derive(Debug, Serialize)]
struct KeyReport {
    subject: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    key_id: Option<String>,
    #[serde(rename = "type")]
    kind: String,
}

#[derive(Debug, Serialize)]
struct Counts {
    checked: u64,
    allowed: u64,
    denied: u64,
}

#[derive(Debug, Serialize)]
struct Cache {
    entries: u64,
    used: u64,
    hits: u64,
    misses: u64,
}

/// Runs the command.
pub fn run(args: &StatusArgs) -> Result<ExitCode, Error> {
    let control = Control::system();
    let loaded = control.loaded();
    let report = Report {
        schema: SCHEMA_VERSION,
        control_dir: control.dir().display().to_string(),
        loaded,
        state: if loaded { Some(state(&control)?) } else { None },
    };
    if args.json {
        println!("{}", serde_json::to_string(&report).map_err(|e| Error::msg(e.to_string()))?);
    } else {
        print!("{}", text(&report));
    }
    if !loaded {
        // Why, in the words the other commands use.
        if let Err(e) = control.mode() {
            eprintln!("elfsig: {e}");
        }
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

fn state(control: &Control) -> Result<State, Error> {
    let stats = control.stats()?;
    let guard = control.guard()?;
    let (keyrings, keyrings_error) = match keys::keyrings(&keys::TRUSTED) {
        Ok(found) => (found, None),
        Err(e) => (Vec::new(), Some(e.to_string())),
    };
    let revocations = keys::keyrings(&[keys::REVOCATIONS]).ok().and_then(|r| r.first().map(|k| k.keys.len()));
    let counts = |prefix: &str| Counts {
        checked: stats.get(&format!("{prefix}checked")),
        allowed: stats.get(&format!("{prefix}allowed")),
        denied: stats.get(&format!("{prefix}denied")),
    };
    Ok(State {
        version: module_version(),
        mode: control.mode()?.word(),
        locked: control.locked()?,
        loader: control.loader()?.word(),
        runtime: control.runtime()?.map(|runtime| runtime.word()),
        filesystems: control.filesystems()?.map(|fs| {
            // Unreadable, it lists no mounts; the policy is still shown.
            let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
            filesystems_report(&fs, &mounts)
        }),
        mapping_guard: GuardReport {
            state: guard.word(),
            why: match &guard {
                Guard::Unavailable(why) => Some(why.clone()),
                _ => None,
            },
        },
        keyrings: keyrings.iter().map(keyring_report).collect(),
        keyrings_error,
        revocations,
        policy: control.policy()?.map(|p| PolicyReport {
            serial: p.serial,
            sha256: p.sha256,
            revoked_digests: p.revoked_digests,
            revoked_certs: p.revoked_certs,
            trusted_certs: p.trusted_certs,
        }),
        execs: counts(""),
        mappings: counts("mmap_"),
        refusals: Reason::ALL.iter().map(|r| (r.name(), stats.get(r.name()))).filter(|(_, n)| *n > 0).collect(),
        cache: cache(&stats),
        counters: stats.into_map(),
    })
}

/// Where the kernel shows the loaded module's version (its `MODULE_VERSION`).
const MODULE_VERSION: &str = "/sys/module/elfsig/version";

/// The loaded module's version; none from a module built before it said.
fn module_version() -> Option<String> {
    let version = std::fs::read_to_string(MODULE_VERSION).ok()?;
    Some(version.trim().to_owned()).filter(|v| !v.is_empty())
}

/// The policy, and the filesystem types in `mounts` (`/proc/self/mounts`) with what applies to
/// each. Mounts in other namespaces (a user namespace's own) are not listed.
fn filesystems_report(fs: &Filesystems, mounts: &str) -> FilesystemsReport {
    let mut mounted: BTreeMap<String, MountedReport> = BTreeMap::new();
    for line in mounts.lines() {
        let mut words = line.split(' ');
        let (Some(_), Some(point), Some(fstype)) = (words.next(), words.next(), words.next()) else { continue };
        // Pseudo filesystems hold no programs.
        if matches!(
            fstype,
            "proc"
                | "sysfs"
                | "devpts"
                | "cgroup"
                | "cgroup2"
                | "securityfs"
                | "debugfs"
                | "tracefs"
                | "bpf"
                | "mqueue"
                | "pstore"
                | "configfs"
                | "hugetlbfs"
                | "efivarfs"
                | "binfmt_misc"
                | "autofs"
                | "fusectl"
                | "devtmpfs"
        ) {
            continue;
        }
        let entry = mounted
            .entry(fstype.to_owned())
            .or_insert_with(|| MountedReport { policy: fs.policy(fstype), mount_points: Vec::new() });
        entry.mount_points.push(unescape_mount_point(point));
    }
    FilesystemsReport { cached: fs.cached.clone(), untrusted: fs.untrusted.word(), mounted }
}

/// A mount point as `/proc/mounts` writes it, with space, tab, newline and backslash as `\ooo`.
fn unescape_mount_point(point: &str) -> String {
    let mut out = Vec::with_capacity(point.len());
    let mut bytes = point.as_bytes();
    while let Some((&first, rest)) = bytes.split_first() {
        let octal = rest.get(..3).filter(|d| first == b'\\' && d.iter().all(|b| (b'0'..=b'7').contains(b)));
        match octal.and_then(|d| u8::from_str_radix(std::str::from_utf8(d).ok()?, 8).ok()) {
            Some(byte) => {
                out.push(byte);
                bytes = &rest[3..];
            }
            None => {
                out.push(first);
                bytes = rest;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn keyring_report(keyring: &Keyring) -> KeyringReport {
    KeyringReport {
        name: keyring.name.clone(),
        keys: keyring
            .keys
            .iter()
            .map(|key| match key.subject_and_id() {
                Some((subject, id)) => {
                    KeyReport { subject: subject.to_owned(), key_id: Some(id.to_owned()), kind: key.kind.clone() }
                }
                None => KeyReport { subject: key.description.clone(), key_id: None, kind: key.kind.clone() },
            })
            .collect(),
    }
}

fn cache(stats: &Stats) -> Cache {
    Cache {
        entries: stats.get("cache_entries"),
        used: stats.get("cache_used"),
        hits: stats.get("cache_hits"),
        misses: stats.get("cache_misses"),
    }
}

/// The report for people.
fn text(report: &Report) -> String {
    let mut out = String::new();
    let mut line = |label: &str, value: String| out.push_str(&format!("{label:<15} {value}\n"));
    let Some(state) = &report.state else {
        line("module:", format!("not loaded (no {})", report.control_dir));
        return out;
    };
    let version = state.version.as_deref().map(|v| format!("version {v}, ")).unwrap_or_default();
    line("module:", format!("loaded ({version}{})", report.control_dir));
    let locked = if state.locked { ", locked until reboot" } else { "" };
    line("mode:", format!("{}{locked}", state.mode));
    line("loader:", state.loader.to_owned());
    if let Some(runtime) = state.runtime {
        let rules = match (runtime, state.mapping_guard.state) {
            ("enforce", "active") => "enforce: no executable memory but signed files' without the jit entitlement",
            ("enforce", _) => "enforce, once the mapping guard is active",
            _ => "off: processes may make memory executable",
        };
        line("runtime:", rules.to_owned());
    }
    let guard = match (&state.mapping_guard.why, state.mapping_guard.state) {
        (Some(why), word) => format!("{word}: {why}"),
        (None, "active") => "active: executable file mappings are checked".to_owned(),
        (None, "attached") => "attached, never seen running: is bpf among the active LSMs?".to_owned(),
        (None, word) => format!("{word}: only execs are checked (run elfsig-guard)"),
    };
    line("mapping guard:", guard);
    if let Some(fs) = &state.filesystems {
        line("cached on:", format!("{}; every other filesystem is verified at each use", fs.cached.join(" ")));
        let untrusted = match fs.untrusted {
            "verify" => "verified at each use (allowed by the administrator)",
            _ => "refused (user namespaces' mounts, FUSE)",
        };
        line("untrusted:", untrusted.to_owned());
        line("memfds:", "run and map executable only when sealed against writes".to_owned());
        let mut first = true;
        for (fstype, mounted) in &fs.mounted {
            let label = if first { "mounted here:" } else { "" };
            first = false;
            line(label, format!("{fstype}: {} ({})", mounted.policy, mounted.mount_points.join(", ")));
        }
    }
    let mut keys: Vec<String> = Vec::new();
    for keyring in &state.keyrings {
        for key in &keyring.keys {
            let id = key.key_id.as_ref().map(|id| format!(" (key id {id})")).unwrap_or_default();
            keys.push(format!("{}: {}{id}", keyring.name, key.subject));
        }
    }
    match (&state.keyrings_error, keys.is_empty()) {
        (Some(e), _) => line("trusted keys:", format!("cannot list: {e}")),
        (None, true) => line("trusted keys:", "none visible to this user (root sees them all)".to_owned()),
        (None, false) => {
            line("trusted keys:", keys.remove(0));
            for key in keys {
                line("", key);
            }
        }
    }
    if let Some(n) = state.revocations {
        line("revocations:", format!("{n} in .blacklist"));
    }
    if let Some(p) = &state.policy {
        line(
            "policy:",
            format!(
                "serial {}, {} digests and {} certificates revoked, {} certificates trusted",
                p.serial, p.revoked_digests, p.revoked_certs, p.trusted_certs
            ),
        );
    }
    let counts = |c: &Counts| format!("{} checked, {} allowed, {} denied", c.checked, c.allowed, c.denied);
    line("execs:", counts(&state.execs));
    line("mappings:", counts(&state.mappings));
    let refusals: Vec<String> = Reason::ALL
        .iter()
        .filter_map(|reason| state.refusals.get(reason.name()).map(|n| format!("{} {n}", reason.name())))
        .collect();
    line("refusals:", if refusals.is_empty() { "none".to_owned() } else { refusals.join(", ") });
    let c = &state.cache;
    line("cache:", format!("{} of {} entries used, {} hits, {} misses", c.used, c.entries, c.hits, c.misses));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use elfsig_control::Untrusted;

    const MOUNTS: &str = "proc /proc proc rw 0 0\n\
        /dev/vda1 / ext4 rw 0 0\n\
        tmpfs /run/user/1000 tmpfs rw 0 0\n\
        /dev/sdb1 /media/usb\\040stick vfat rw 0 0\n\
        sshfs#me@host: /mnt/remote fuse.sshfs rw 0 0\n\
        /dev/sdc1 /mnt/ntfs fuseblk rw 0 0\n\
        share /mnt/vm virtiofs rw 0 0\n";

    fn policy(untrusted: Untrusted) -> Filesystems {
        Filesystems { cached: vec!["ext4".into(), "tmpfs".into()], untrusted }
    }

    #[test]
    fn each_mounted_type_gets_its_policy() {
        let report = filesystems_report(&policy(Untrusted::Refuse), MOUNTS);
        let policy_of = |fs: &str| report.mounted.get(fs).map(|m| m.policy);
        assert_eq!(policy_of("proc"), None);
        assert_eq!(policy_of("ext4"), Some("cached"));
        assert_eq!(policy_of("tmpfs"), Some("cached"));
        assert_eq!(policy_of("vfat"), Some("verified every time"));
        for fuse in ["fuse.sshfs", "fuseblk", "virtiofs"] {
            assert_eq!(policy_of(fuse), Some("refused (untrusted)"), "{fuse}");
        }
        assert_eq!(report.mounted["vfat"].mount_points, ["/media/usb stick"]);
        let allowed = filesystems_report(&policy(Untrusted::Verify), MOUNTS);
        assert_eq!(allowed.mounted["virtiofs"].policy, "verified every time (untrusted, allowed)");
    }

    #[test]
    fn mount_points_are_unescaped_as_proc_escapes_them() {
        assert_eq!(unescape_mount_point("/a\\040b\\011c\\012d\\134e"), "/a b\tc\nd\\e");
        // Not an escape: left as it is.
        assert_eq!(unescape_mount_point("/a\\04"), "/a\\04");
        assert_eq!(unescape_mount_point("/a\\x40"), "/a\\x40");
    }
}
