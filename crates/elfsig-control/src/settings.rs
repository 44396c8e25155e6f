//! The settings, in the words the control files use.

use std::fmt;

/// `mode`: whether refusals are enforced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// `enforce`: refusals fail with EACCES.
    Enforce,
    /// `permissive`: would-be refusals are logged and counted, and allowed.
    Permissive,
}

impl Mode {
    /// The control file's word.
    pub fn word(self) -> &'static str {
        match self {
            Mode::Enforce => "enforce",
            Mode::Permissive => "permissive",
        }
    }

    /// The mode a word names.
    pub fn parse(word: &str) -> Option<Self> {
        [Mode::Enforce, Mode::Permissive].into_iter().find(|m| m.word() == word)
    }
}

/// `loader`: whether running the dynamic loader directly (`ld.so ./program`) is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Loader {
    /// `allow` (the default): the mapping guard checks what the loader maps.
    Allow,
    /// `deny`: such runs are refused outright.
    Deny,
}

impl Loader {
    /// The control file's word.
    pub fn word(self) -> &'static str {
        match self {
            Loader::Allow => "allow",
            Loader::Deny => "deny",
        }
    }

    /// The policy a word names.
    pub fn parse(word: &str) -> Option<Self> {
        [Loader::Allow, Loader::Deny].into_iter().find(|l| l.word() == word)
    }
}

/// `runtime`: whether a process whose program is not signed with the `jit` entitlement is
/// refused executable memory that is no signed file's (with the mapping guard).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Runtime {
    /// `enforce` (the default): refused (or, in permissive mode, logged).
    Enforce,
    /// `off`: allowed.
    Off,
}

impl Runtime {
    /// The control file's word.
    pub fn word(self) -> &'static str {
        match self {
            Runtime::Enforce => "enforce",
            Runtime::Off => "off",
        }
    }

    /// The setting a word names.
    pub fn parse(word: &str) -> Option<Self> {
        [Runtime::Enforce, Runtime::Off].into_iter().find(|r| r.word() == word)
    }
}

impl fmt::Display for Runtime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.word())
    }
}

/// `untrusted`: what happens to files on mounts the kernel does not trust (a superblock a user
/// namespace owns, FUSE).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Untrusted {
    /// `refuse` (the default): their programs and libraries are refused.
    Refuse,
    /// `verify`: verified at every exec and mapping, never cached.
    Verify,
}

impl Untrusted {
    /// The control file's word.
    pub fn word(self) -> &'static str {
        match self {
            Untrusted::Refuse => "refuse",
            Untrusted::Verify => "verify",
        }
    }

    /// The policy a word names.
    pub fn parse(word: &str) -> Option<Self> {
        [Untrusted::Refuse, Untrusted::Verify].into_iter().find(|u| u.word() == word)
    }
}

/// `filesystems`: what applies where (crates/elfsig-core/src/filesystem.rs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Filesystems {
    /// The filesystem types whose verdicts the module caches; every other one's files are
    /// verified at every exec and mapping.
    pub cached: Vec<String>,
    /// What applies to untrusted mounts.
    pub untrusted: Untrusted,
}

impl Filesystems {
    /// Parses the control file: `cache FS...`, `verify *`, `untrusted WORD`, `internal sealed`.
    /// Lines this version does not know are skipped (a newer module may add some). Fails with
    /// what is not understood: the `untrusted` line, or the line missing.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut cached = None;
        let mut untrusted = Err("no untrusted line".to_owned());
        for line in text.lines() {
            let mut words = line.split_whitespace();
            match words.next() {
                Some("cache") => cached = Some(words.map(str::to_owned).collect()),
                Some("untrusted") => untrusted = words.next().and_then(Untrusted::parse).ok_or_else(|| line.to_owned()),
                _ => {}
            }
        }
        Ok(Filesystems { cached: cached.ok_or("no cache line")?, untrusted: untrusted? })
    }

    /// What applies to files on a filesystem of type `fstype` mounted by the initial user
    /// namespace (`fuse.*`, `fuseblk` and `virtiofs` are FUSE).
    pub fn policy(&self, fstype: &str) -> &'static str {
        if matches!(fstype, "fuse" | "fuseblk" | "virtiofs") || fstype.starts_with("fuse.") {
            match self.untrusted {
                Untrusted::Refuse => "refused (untrusted)",
                Untrusted::Verify => "verified every time (untrusted, allowed)",
            }
        } else if self.cached.iter().any(|fs| fs == fstype) {
            "cached"
        } else {
            "verified every time"
        }
    }
}

/// `guard`: the mapping guard's state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Guard {
    /// `active`: attached and seen running; executable mappings are checked.
    Active,
    /// `attached`: the module holds the programs but has never seen them run (is `bpf` among
    /// the active LSMs?).
    Attached,
    /// `detached`: no programs; only execs are checked.
    Detached,
    /// `unavailable: <why>`: the kernel cannot run the guard.
    Unavailable(String),
}

impl Guard {
    /// The state a line of the control file names.
    pub fn parse(line: &str) -> Option<Self> {
        match line {
            "active" => Some(Guard::Active),
            "attached" => Some(Guard::Attached),
            "detached" => Some(Guard::Detached),
            _ => line.strip_prefix("unavailable: ").map(|why| Guard::Unavailable(why.to_owned())),
        }
    }

    /// The control file's first word.
    pub fn word(&self) -> &'static str {
        match self {
            Guard::Active => "active",
            Guard::Attached => "attached",
            Guard::Detached => "detached",
            Guard::Unavailable(_) => "unavailable",
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.word())
    }
}

impl fmt::Display for Loader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.word())
    }
}

impl fmt::Display for Untrusted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.word())
    }
}

impl fmt::Display for Guard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Guard::Unavailable(why) => write!(f, "unavailable: {why}"),
            other => f.write_str(other.word()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filesystems_parse_what_the_module_writes_and_skip_what_is_new() {
        let fs = Filesystems::parse("cache ext4 tmpfs\nverify *\nuntrusted verify\ninternal sealed\nnewer rule\n")
            .expect("parses");
        assert_eq!(fs.cached, ["ext4", "tmpfs"]);
        assert_eq!(fs.untrusted, Untrusted::Verify);
        assert_eq!(Filesystems::parse("cache ext4\nuntrusted allow\n").err().as_deref(), Some("untrusted allow"));
        assert_eq!(Filesystems::parse("cache ext4\n").err().as_deref(), Some("no untrusted line"));
        assert_eq!(Filesystems::parse("untrusted refuse\n").err().as_deref(), Some("no cache line"));
    }
}
