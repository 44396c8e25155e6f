//! Running commands: print them, run them, fail with a clear message.

use std::ffi::OsStr;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::Result;

/// A command to run.
#[derive(Debug)]
pub struct Cmd {
    command: Command,
    shown: String,
    stoppable: bool,
}

impl Cmd {
    /// `program` with no arguments yet.
    pub fn new(program: impl AsRef<OsStr>) -> Self {
        let shown = program.as_ref().to_string_lossy().into_owned();
        Cmd { command: Command::new(program), shown, stoppable: false }
    }

    /// Cargo, its intermediate files (dependencies compiled, incremental state) kept in the
    /// cache outside the repository, one directory per checkout: a fresh clone in the same place
    /// (as CI makes them) compiles its own crates only, not the hundreds of dependencies again.
    /// Per checkout, because cargo names a workspace's own crates' outputs by their path within
    /// the workspace and judges them fresh by file times: two checkouts sharing one directory
    /// could take each other's builds. The final binaries stay in `target/`; deleting
    /// [`crate::paths::cargo_build`] costs one cold build. A build directory the caller chose
    /// (`CARGO_BUILD_BUILD_DIR`) is kept, and cargo older than 1.94 keeps its default (1.91
    /// knows the build directory, but only 1.94 tells the CLI's tests where their binary is).
    pub fn cargo() -> Self {
        let mut cmd = Cmd::new("cargo");
        if std::env::var_os("CARGO_BUILD_BUILD_DIR").is_none() && cargo_tells_binaries() {
            // Not shown: it would prefix every cargo command printed.
            cmd.command.env("CARGO_BUILD_BUILD_DIR", crate::paths::cargo_build());
        }
        cmd
    }

    /// Adds an argument.
    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Self {
        self.shown.push(' ');
        self.shown.push_str(&shell_quote(&arg.as_ref().to_string_lossy()));
        self.command.arg(arg);
        self
    }

    /// Adds arguments.
    pub fn args<I: IntoIterator<Item = S>, S: AsRef<OsStr>>(mut self, args: I) -> Self {
        for arg in args {
            self = self.arg(arg);
        }
        self
    }

    /// Sets an environment variable.
    pub fn env(mut self, key: &str, value: impl AsRef<OsStr>) -> Self {
        let value_text = value.as_ref().to_string_lossy();
        // Long values (a PATH) would drown the command; say that it is set.
        let shown_value = if value_text.len() > 60 { "…".to_owned() } else { shell_quote(&value_text) };
        self.shown = format!("{key}={shown_value} {}", self.shown);
        self.command.env(key, value);
        self
    }

    /// Runs in `dir`.
    pub fn dir(mut self, dir: &Path) -> Self {
        self.shown = format!("(cd {} && {})", dir.display(), self.shown);
        self.command.current_dir(dir);
        self
    }

    /// Appends the command's output and errors to `log` instead of the terminal's.
    pub fn log_to(mut self, log: &Path) -> Result<Self> {
        let open = || std::fs::OpenOptions::new().create(true).append(true).open(log);
        let (out, err) = open()
            .and_then(|out| Ok((out.try_clone()?, out)))
            .map_err(|e| format!("cannot open {}: {e}", log.display()))?;
        self.shown = format!("{} >>{}", self.shown, shell_quote(&log.to_string_lossy()));
        self.command.stdout(out).stderr(err);
        Ok(self)
    }

    /// Lets [`stop_background_work`] end the command: a long build in the background whose
    /// result a failure elsewhere has made pointless.
    pub fn stoppable(mut self) -> Self {
        self.stoppable = true;
        self
    }

    /// Runs the command, showing it; fails unless it exits with 0.
    pub fn run(mut self) -> Result {
        eprintln!("$ {}", self.shown);
        let status = if self.stoppable {
            let mut child = {
                let mut running = STOPPABLE.lock().map_err(|_| "a thread running commands panicked")?;
                if running.stopped {
                    return Err(format!("`{}` not run: stopped after a failure elsewhere", self.shown));
                }
                let child = self.command.spawn().map_err(|e| format!("cannot run {}: {e}", self.shown))?;
                running.pids.push(child.id());
                child
            };
            let status = child.wait();
            if let Ok(mut running) = STOPPABLE.lock() {
                running.pids.retain(|&pid| pid != child.id());
            }
            status
        } else {
            self.command.status()
        }
        .map_err(|e| format!("cannot run {}: {e}", self.shown))?;
        if status.success() { Ok(()) } else { Err(format!("`{}` failed ({status})", self.shown)) }
    }

    /// Runs the command quietly and returns its standard output; fails unless it exits with 0.
    pub fn read(mut self) -> Result<String> {
        let output =
            self.command.stderr(Stdio::inherit()).output().map_err(|e| format!("cannot run {}: {e}", self.shown))?;
        if !output.status.success() {
            return Err(format!("`{}` failed ({})", self.shown, output.status));
        }
        String::from_utf8(output.stdout).map_err(|_| format!("`{}` printed non-UTF-8", self.shown))
    }

    /// Runs the command quietly and returns its standard output as bytes.
    pub fn read_bytes(mut self) -> Result<Vec<u8>> {
        let output =
            self.command.stderr(Stdio::null()).output().map_err(|e| format!("cannot run {}: {e}", self.shown))?;
        if output.status.success() {
            Ok(output.stdout)
        } else {
            Err(format!("`{}` failed ({})", self.shown, output.status))
        }
    }

    /// Runs the command quietly and returns its exit status and output, whatever the status.
    pub fn output(mut self) -> Result<std::process::Output> {
        self.command.output().map_err(|e| format!("cannot run {}: {e}", self.shown))
    }

    /// Whether the command runs and exits with 0, without showing anything.
    pub fn succeeds(mut self) -> bool {
        self.command.stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success())
    }
}

/// The stoppable commands running, and whether [`stop_background_work`] has been called.
struct Stoppable {
    pids: Vec<u32>,
    stopped: bool,
}

static STOPPABLE: std::sync::Mutex<Stoppable> = std::sync::Mutex::new(Stoppable { pids: Vec::new(), stopped: false });

/// Ends the stoppable commands running (SIGTERM: `make` passes it on to its jobs) and fails
/// those started from now on, so that a failing run ends now rather than when a background
/// build would have.
pub fn stop_background_work() {
    let Ok(mut running) = STOPPABLE.lock() else { return };
    running.stopped = true;
    for pid in &running.pids {
        let _ = Command::new("kill").args(["-TERM", &pid.to_string()]).status();
    }
}

/// Lowers the calling thread's scheduling priority (nice 10), and so that of every command it
/// runs from then on: Linux keeps a nice value per thread, which a child takes from the thread
/// that started it. Best effort: at worst the thread keeps its priority.
pub fn lower_this_threads_priority() {
    // "/proc/thread-self" links to "<pid>/task/<tid>"; renice takes a thread's id.
    if let Some(tid) = std::fs::read_link("/proc/thread-self").ok().and_then(|l| l.file_name().map(|t| t.to_owned())) {
        let _ = Cmd::new("renice").args(["-n", "10", "-p"]).arg(tid).read();
    }
}

fn shell_quote(arg: &str) -> String {
    let plain = !arg.is_empty() && arg.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c));
    if plain { arg.to_owned() } else { format!("'{}'", arg.replace('\'', r"'\''")) }
}

/// Whether the `cargo` on PATH is 1.94 or later: it sets `CARGO_BIN_EXE_*` when tests run, so
/// that they find the binaries wherever the build directory is.
fn cargo_tells_binaries() -> bool {
    static NEW_ENOUGH: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *NEW_ENOUGH.get_or_init(|| {
        let version = Command::new("cargo").arg("--version").output().map(|o| o.stdout).unwrap_or_default();
        cargo_at_least(&String::from_utf8_lossy(&version), (1, 94))
    })
}

/// Whether `cargo --version`'s output (`cargo 1.95.0 (f2d3ce0bd 2026-03-21)`) names `wanted`
/// (major, minor) or later; false for anything it cannot read.
fn cargo_at_least(version: &str, wanted: (u32, u32)) -> bool {
    let mut numbers = version.split_whitespace().nth(1).unwrap_or("").split('.').map(|n| n.parse::<u32>());
    matches!((numbers.next(), numbers.next()), (Some(Ok(major)), Some(Ok(minor))) if (major, minor) >= wanted)
}

#[cfg(test)]
mod tests {
    use super::{Cmd, cargo_at_least, stop_background_work};

    /// The only test here that stops background work: from then on this process refuses to
    /// start stoppable commands.
    #[test]
    fn stopping_background_work_ends_it_and_refuses_more() {
        let running = std::thread::spawn(|| Cmd::new("sleep").arg("60").stoppable().run());
        let started = std::time::Instant::now();
        while super::STOPPABLE.lock().unwrap().pids.is_empty() {
            assert!(started.elapsed().as_secs() < 30, "sleep never started");
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        stop_background_work();
        let ended = running.join().unwrap();
        assert!(ended.is_err_and(|e| e.contains("failed")), "a stopped command must fail");
        assert!(started.elapsed().as_secs() < 30, "the command was not stopped");
        assert!(super::STOPPABLE.lock().unwrap().pids.is_empty());
        let refused = Cmd::new("true").stoppable().run();
        assert!(refused.is_err_and(|e| e.contains("not run")));
        // Other commands are not affected.
        assert!(Cmd::new("true").run().is_ok());
    }

    #[test]
    fn cargo_versions_are_compared_by_major_then_minor() {
        assert!(cargo_at_least("cargo 1.95.0 (f2d3ce0bd 2026-03-21)", (1, 94)));
        assert!(cargo_at_least("cargo 1.94.0-nightly (abc 2026-01-01)", (1, 94)));
        assert!(cargo_at_least("cargo 2.0.0", (1, 94)));
        assert!(!cargo_at_least("cargo 1.93.1 (x 2025-12-01)", (1, 94)));
        assert!(!cargo_at_least("cargo 1.100", (2, 0)));
        // Unreadable output: the default build directory, not a guess.
        assert!(!cargo_at_least("", (1, 94)));
        assert!(!cargo_at_least("cargo", (1, 94)));
        assert!(!cargo_at_least("cargo one.two", (1, 94)));
        assert!(!cargo_at_least("cargo 1", (1, 94)));
    }
}
