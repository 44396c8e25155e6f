//! The control directory: reading a file, writing a word, and the settings by name.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::error::Error;
use crate::settings::{Filesystems, Guard, Loader, Mode, Runtime, Untrusted};
use crate::stats::Stats;

/// Where the module makes its control files.
pub const DEFAULT_DIR: &str = "/sys/kernel/security/elfsig";

/// The environment variable that points the tools at another directory (tests use a fake one).
pub const DIR_VARIABLE: &str = "ELFSIG_CONTROL_DIR";

/// The module's control directory.
#[derive(Clone, Debug)]
pub struct Control {
    dir: PathBuf,
}

impl Control {
    /// The directory named by `ELFSIG_CONTROL_DIR`, else [`DEFAULT_DIR`].
    pub fn system() -> Self {
        let dir = std::env::var_os(DIR_VARIABLE).map_or_else(|| PathBuf::from(DEFAULT_DIR), PathBuf::from);
        Control { dir }
    }

    /// The control files in `dir`.
    pub fn at(dir: impl Into<PathBuf>) -> Self {
        Control { dir: dir.into() }
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The path of control file `name`.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// Whether the module is loaded: its directory exists.
    pub fn loaded(&self) -> bool {
        self.dir.is_dir()
    }

    pub(crate) fn not_loaded(&self) -> Error {
        // securityfs has a `lsm` file at its root whenever it is mounted.
        let securityfs_mounted = self.dir.parent().is_some_and(|parent| parent.join("lsm").exists());
        Error::NotLoaded { dir: self.dir.clone(), securityfs_mounted }
    }

    /// The contents of control file `name`.
    pub fn read(&self, name: &str) -> Result<String, Error> {
        let file = self.path(name);
        std::fs::read_to_string(&file).map_err(|source| match source.kind() {
            io::ErrorKind::NotFound if !self.loaded() => self.not_loaded(),
            io::ErrorKind::PermissionDenied => Error::NotRoot { action: "reading", file },
            _ => Error::Io { action: "cannot read", file, source },
        })
    }

    /// The one line of control file `name`, without its newline.
    fn line(&self, name: &str) -> Result<String, Error> {
        Ok(self.read(name)?.trim_end_matches('\n').to_owned())
    }

    /// Writes `value` and a newline to control file `name`; `change` names what that asks for
    /// ("switching to permissive"), for the error when the module is locked.
    pub fn write(&self, name: &str, value: &str, change: &str) -> Result<(), Error> {
        let file = self.path(name);
        // The module checks CAP_SYS_ADMIN when the file is opened, and judges the word when it
        // is written: the two failures mean different things.
        let mut open = std::fs::OpenOptions::new().write(true).open(&file).map_err(|source| match source.kind() {
            io::ErrorKind::NotFound if !self.loaded() => self.not_loaded(),
            io::ErrorKind::PermissionDenied => Error::NotRoot { action: "changing", file: file.clone() },
            _ => Error::Io { action: "cannot open", file: file.clone(), source },
        })?;
        open.write_all(format!("{value}\n").as_bytes()).map_err(|source| match source.raw_os_error() {
            Some(libc::EPERM) => Error::Locked { change: change.to_owned() },
            _ => Error::Refused { file, value: value.to_owned(), source },
        })
    }

    fn parsed<T>(&self, name: &str, parse: impl FnOnce(&str) -> Option<T>) -> Result<T, Error> {
        let line = self.line(name)?;
        parse(&line).ok_or_else(|| Error::Unexpected { file: self.path(name), content: line })
    }

    /// Whether refusals are enforced.
    pub fn mode(&self) -> Result<Mode, Error> {
        self.parsed("mode", Mode::parse)
    }

    /// Whether enforce is locked until reboot.
    pub fn locked(&self) -> Result<bool, Error> {
        self.parsed("lock", |line| match line {
            "1" => Some(true),
            "0" => Some(false),
            _ => None,
        })
    }

    /// Whether running the dynamic loader directly is refused.
    pub fn loader(&self) -> Result<Loader, Error> {
        self.parsed("loader", Loader::parse)
    }

    /// Whether executable memory that is no signed file's is refused to processes without
    /// the `jit` entitlement; `None` for a module that does not say (older than the setting).
    pub fn runtime(&self) -> Result<Option<Runtime>, Error> {
        if self.loaded() && !self.path("runtime").exists() {
            return Ok(None);
        }
        self.parsed("runtime", Runtime::parse).map(Some)
    }

    /// What applies to files on mounts the kernel does not trust.
    pub fn untrusted(&self) -> Result<Untrusted, Error> {
        self.parsed("untrusted", Untrusted::parse)
    }

    /// What applies where; `None` for a module that does not say (older than the file).
    pub fn filesystems(&self) -> Result<Option<Filesystems>, Error> {
        if self.loaded() && !self.path("filesystems").exists() {
            return Ok(None);
        }
        let text = self.read("filesystems")?;
        Filesystems::parse(&text)
            .map(Some)
            .map_err(|content| Error::Unexpected { file: self.path("filesystems"), content })
    }

    /// The mapping guard's state.
    pub fn guard(&self) -> Result<Guard, Error> {
        self.parsed("guard", Guard::parse)
    }

    /// The counters.
    pub fn stats(&self) -> Result<Stats, Error> {
        let text = self.read("stats")?;
        Stats::parse(&text).map_err(|content| Error::Unexpected { file: self.path("stats"), content })
    }

    /// Whether the lock file says locked. When it cannot be read (not root, not loaded), the
    /// write that follows says why, in its own words.
    fn locked_for_sure(&self) -> bool {
        matches!(self.locked(), Ok(true))
    }

    /// Sets the mode. Switching to permissive is refused while locked; this says so without
    /// asking the module, which would refuse too.
    pub fn set_mode(&self, mode: Mode) -> Result<(), Error> {
        let change = format!("switching to {mode}");
        if mode == Mode::Permissive && self.locked_for_sure() {
            return Err(Error::Locked { change });
        }
        self.write("mode", mode.word(), &change)
    }

    /// Sets the loader policy. Allowing the loader is refused while locked.
    pub fn set_loader(&self, loader: Loader) -> Result<(), Error> {
        let change = format!("setting the loader policy to {loader}");
        if loader == Loader::Allow && self.locked_for_sure() {
            return Err(Error::Locked { change });
        }
        self.write("loader", loader.word(), &change)
    }

    /// Sets the run-time rules. Turning them off is refused while locked.
    pub fn set_runtime(&self, runtime: Runtime) -> Result<(), Error> {
        let change = format!("setting the run-time rules to {runtime}");
        if runtime == Runtime::Off && self.locked_for_sure() {
            return Err(Error::Locked { change });
        }
        self.write("runtime", runtime.word(), &change)
    }

    /// Sets what applies to untrusted mounts. Allowing them is refused while locked.
    pub fn set_untrusted(&self, untrusted: Untrusted) -> Result<(), Error> {
        let change = format!("setting untrusted mounts to {untrusted}");
        if untrusted == Untrusted::Verify && self.locked_for_sure() {
            return Err(Error::Locked { change });
        }
        self.write("untrusted", untrusted.word(), &change)
    }

    /// Empties the verdict cache (after removing a key from a trusted keyring).
    pub fn flush(&self) -> Result<(), Error> {
        self.write("flush", "1", "flushing the cache")
    }

    /// Hands the mapping guard's BPF links (this process's descriptors `fds`) to the module.
    pub fn attach_guard(&self, fds: &[i32]) -> Result<(), Error> {
        let words: Vec<String> = fds.iter().map(i32::to_string).collect();
        self.write("guard", &format!("attach {}", words.join(" ")), "attaching the mapping guard")
    }
}
