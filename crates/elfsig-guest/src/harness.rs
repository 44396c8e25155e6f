//! The test harness: running cases and reporting them, running programs, reading the module's
//! counters and the kernel log.

use std::collections::BTreeMap;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::process::{Command, Output};

/// A case's outcome: `Err` carries what went wrong.
pub type Outcome = Result<(), String>;

/// A case: its name, why it is skipped on this kernel if it is, and its body.
type Case<'a> = (String, Option<&'static str>, Box<dyn FnOnce() -> Outcome + 'a>);

/// The cases of a suite, registered in the order they run, then run and reported in KTAP
/// (see [`crate::ktap`]): registering first lets the report start with how many there are.
#[derive(Default)]
pub struct Suite<'a> {
    cases: Vec<Case<'a>>,
}

impl std::fmt::Debug for Suite<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.cases.iter().map(|(name, _, _)| name)).finish()
    }
}

impl<'a> Suite<'a> {
    /// Adds a case.
    pub fn case(&mut self, name: impl Into<String>, body: impl FnOnce() -> Outcome + 'a) {
        self.cases.push((name.into(), None, Box::new(body)));
    }

    /// Adds a case that needs the test kernel's keyrings (its key built in, revocations and
    /// keys added at run time): on a distribution's kernel ([`crate::on_distro_kernel`]) it is
    /// reported skipped, saying `why`.
    pub fn test_kernel_case(
        &mut self,
        name: impl Into<String>,
        why: &'static str,
        body: impl FnOnce() -> Outcome + 'a,
    ) {
        let skip = crate::on_distro_kernel().then_some(why);
        self.cases.push((name.into(), skip, Box::new(body)));
    }

    /// Runs every case in order, with `title` as a diagnostic line first; true when all passed.
    pub fn run(self, title: &str) -> bool {
        let mut ktap = crate::ktap::Writer::start(self.cases.len());
        ktap.diagnostic(title);
        for (name, skip, body) in self.cases {
            if let Some(why) = skip {
                ktap.skipped(&name, why);
                continue;
            }
            let outcome = body();
            ktap.result(&name, outcome.as_ref().err().map(String::as_str));
        }
        ktap.finish()
    }
}

/// A diagnostic line in the suite's KTAP output (a measurement, a count).
pub fn diagnostic(text: impl std::fmt::Display) {
    println!("# {}", text.to_string().replace('\n', " | "));
}

/// Turns any error into the case's message, with context.
pub trait Context<T> {
    /// Adds what was being done.
    fn context(self, what: &str) -> Result<T, String>;
}

impl<T, E: std::fmt::Display> Context<T> for Result<T, E> {
    fn context(self, what: &str) -> Result<T, String> {
        self.map_err(|e| format!("{what}: {e}"))
    }
}

/// Why revocation cases cannot run on a distribution's kernel.
pub const NEEDS_REVOCABLE_KERNEL: &str = "revoking adds a signed bin: entry to .blacklist, which this kernel refuses to user \
     space (no CONFIG_SYSTEM_BLACKLIST_AUTH_UPDATE, as Debian's; it revokes through UEFI dbx)";
/// Why runtime-added keys cannot be tested on a distribution's kernel.
pub const NEEDS_TEST_KERNEL_KEY: &str = "a key added to .secondary_trusted_keys must be signed by a builtin key, here the \
     distribution's";

/// Why fault injection and kmemleak cannot run on a distribution's kernel.
pub const NEEDS_DEBUG_KERNEL: &str = "needs the debug kernel's fault injection and kmemleak, which a distribution's \
     kernel leaves out";

/// Fails with `message` unless `condition` holds.
pub fn ensure(condition: bool, message: impl FnOnce() -> String) -> Outcome {
    if condition { Ok(()) } else { Err(message()) }
}

/// Runs `path` with `args`.
pub fn run(path: &str, args: &[&str]) -> std::io::Result<Output> {
    Command::new(path).args(args).output()
}

/// Runs `path` and checks that it exits 0 with `expected` on stdout (when given).
pub fn runs(path: &str, args: &[&str], expected: Option<&[u8]>) -> Outcome {
    let out = run(path, args).context(&format!("exec {path}"))?;
    ensure(out.status.success(), || {
        format!("{path} exited with {} ({})", out.status, String::from_utf8_lossy(&out.stderr).trim())
    })?;
    if let Some(expected) = expected {
        ensure(out.stdout == expected, || {
            format!(
                "{path} printed {:?}, expected {:?}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(expected)
            )
        })?;
    }
    Ok(())
}

/// Checks that exec of `path` fails with EACCES.
pub fn refused(path: &str) -> Outcome {
    match run(path, &[]) {
        Err(e) if e.raw_os_error() == Some(libc::EACCES) => Ok(()),
        Err(e) => Err(format!("exec {path} failed with {e}, expected EACCES")),
        Ok(out) => Err(format!("exec {path} was allowed (exit {})", out.status)),
    }
}

/// The module's counters.
pub type Stats = BTreeMap<String, u64>;

/// Reads the module's `stats` (as `elfsig status` does, through elfsig-control).
pub fn stats() -> Result<Stats, String> {
    elfsig_control::Control::system().stats().map(elfsig_control::Stats::into_map).map_err(|e| e.to_string())
}

/// How much counter `name` grew between two readings.
pub fn grew(before: &Stats, after: &Stats, name: &str) -> u64 {
    after.get(name).copied().unwrap_or(0).saturating_sub(before.get(name).copied().unwrap_or(0))
}

/// Checks that the counters grew by exactly `expected` (others may grow too).
pub fn counters_grew(before: &Stats, after: &Stats, expected: &[(&str, u64)]) -> Outcome {
    let wrong: Vec<String> = expected
        .iter()
        .filter(|(name, n)| grew(before, after, name) != *n)
        .map(|(name, n)| format!("{name} grew by {} instead of {n}", grew(before, after, name)))
        .collect();
    ensure(wrong.is_empty(), || {
        // What did grow tells what happened instead.
        let moved: Vec<String> = after
            .keys()
            .filter(|name| grew(before, after, name) > 0)
            .map(|name| format!("{name}+{}", grew(before, after, name)))
            .collect();
        format!("{} (grew: {})", wrong.join(", "), moved.join(" "))
    })
}

/// The serial of the keyring called `name` (`.blacklist`, `.secondary_trusted_keys`), from
/// `/proc/keys`.
pub fn keyring(name: &str) -> Result<i32, String> {
    let keys = std::fs::read_to_string("/proc/keys").context("read /proc/keys")?;
    let described = format!("{name}:");
    keys.lines()
        .find(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            words.windows(2).any(|w| w[0] == "keyring" && w[1] == described)
        })
        .and_then(|l| l.split_whitespace().next())
        .and_then(|s| i32::from_str_radix(s, 16).ok())
        .ok_or_else(|| format!("no {name} keyring in /proc/keys"))
}

/// Unloads module `name`, waiting (up to 10 s) for execs in flight to leave it.
pub fn unload_when_idle(name: &str) -> Outcome {
    for _ in 0..1000 {
        match crate::system::unload_module(name) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(std::time::Duration::from_millis(10))
            }
            Err(e) => return Err(format!("unload {name}: {e}")),
        }
    }
    Err(format!("{name} stayed busy for 10 s"))
}

/// Path of a control file.
pub fn control(name: &str) -> String {
    format!("{}/{name}", elfsig_control::DEFAULT_DIR)
}

/// Writes a control file.
pub fn write_control(name: &str, value: &str) -> std::io::Result<()> {
    std::fs::write(control(name), value)
}

/// A control file's contents, without the newline.
pub fn control_value(name: &str) -> Result<String, String> {
    Ok(std::fs::read_to_string(control(name)).context(&format!("read {name}"))?.trim_end().to_owned())
}

/// Waits until the module's log rate limit (20 messages per 5 s) has room again, so that the
/// next refusal is sure to be logged.
pub fn wait_for_log_budget() {
    std::thread::sleep(std::time::Duration::from_millis(5500));
}

/// Every kernel log record so far (from `/dev/kmsg`), newest last.
pub fn kernel_log() -> Result<Vec<String>, String> {
    read_records(&mut open_kmsg()?)
}

/// The kernel log from a point on, whatever the ring buffer drops before it.
#[derive(Debug)]
pub struct KernelLog(std::fs::File);

impl KernelLog {
    /// A reader of what is logged after now.
    pub fn from_now() -> Result<KernelLog, String> {
        use std::io::Seek;
        let mut file = open_kmsg()?;
        file.seek(std::io::SeekFrom::End(0)).context("seek to the end of /dev/kmsg")?;
        Ok(KernelLog(file))
    }

    /// The records logged since [`KernelLog::from_now`] (or the last call), newest last.
    pub fn records(&mut self) -> Result<Vec<String>, String> {
        read_records(&mut self.0)
    }
}

fn open_kmsg() -> Result<std::fs::File, String> {
    std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open("/dev/kmsg").context("open /dev/kmsg")
}

/// The records `file` (`/dev/kmsg`) has from where it is on, newest last.
fn read_records(file: &mut std::fs::File) -> Result<Vec<String>, String> {
    let mut records = Vec::new();
    let mut buf = vec![0u8; 8192];
    loop {
        match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                let record = String::from_utf8_lossy(&buf[..n]);
                // "prio,seq,time,flags;message"
                records.push(record.split_once(';').map_or(&*record, |(_, m)| m).trim_end().to_owned());
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
            // A record overwritten while reading; keep going.
            Err(e) if e.raw_os_error() == Some(libc::EPIPE) => continue,
            Err(e) => return Err(format!("read /dev/kmsg: {e}")),
        }
    }
    Ok(records)
}

/// Copies `from` to `to`, executable.
pub fn copy_exec(from: &str, to: &str) -> Outcome {
    std::fs::copy(from, to).context(&format!("copy {from} to {to}"))?;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(to, std::fs::Permissions::from_mode(0o755)).context("chmod")
}

/// Writes `bytes` to `path`, executable, replacing it.
pub fn write_exec(path: &str, bytes: &[u8]) -> Outcome {
    let _ = std::fs::remove_file(path);
    std::fs::write(path, bytes).context(&format!("write {path}"))?;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).context("chmod")
}

/// Reads a file.
pub fn read(path: impl AsRef<Path>) -> Result<Vec<u8>, String> {
    let path = path.as_ref();
    std::fs::read(path).context(&format!("read {}", path.display()))
}
