//! Shared support for the CLI's end-to-end tests: scratch directories, keys made once per test
//! process with `elfsig keygen`, helpers to find things in ELF files with goblin (an independent
//! parser, so the tests do not trust elfsig-core to check elfsig-core; more in `layout`), and the
//! messages `elfsig` gives for the files it refuses (`messages`), and what independent tools
//! say (`oracle`: OpenSSL's verdict on a signature).
// Each test file uses a different part of this module.
#![allow(dead_code)]

pub mod images;
pub mod in_process;
pub mod layout;
pub mod messages;
pub mod oracle;
pub mod packages;
pub mod roundtrip;

use std::collections::HashMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use assert_cmd::Command;
use tempfile::TempDir;

/// Whether the tests run as root (effective user, from /proc): only root gives files away.
pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("Uid:")).map(|l| l.split_whitespace().nth(2) == Some("0")))
        .unwrap_or(false)
}

/// The `elfsig` binary under test.
pub fn elfsig() -> Command {
    Command::cargo_bin("elfsig").unwrap()
}

/// A temporary directory for one test.
pub struct Scratch {
    pub dir: TempDir,
}

impl Scratch {
    pub fn new() -> Self {
        Scratch { dir: tempfile::tempdir().unwrap() }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Copies `src` to `name` in the scratch directory, executable.
    pub fn copy(&self, src: &Path, name: &str) -> PathBuf {
        let to = self.path(name);
        std::fs::copy(src, &to).unwrap();
        std::fs::set_permissions(&to, std::fs::Permissions::from_mode(0o755)).unwrap();
        to
    }

    /// Writes `bytes` to `name`, executable.
    pub fn write(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let to = self.path(name);
        std::fs::write(&to, bytes).unwrap();
        std::fs::set_permissions(&to, std::fs::Permissions::from_mode(0o755)).unwrap();
        to
    }
}

/// A signing key and its certificate.
#[derive(Clone, Debug)]
pub struct Keys {
    pub key: PathBuf,
    pub cert: PathBuf,
}

/// The key pair called `name` (made once per test process): ECDSA on P-256 or P-384 when the
/// name starts with `ecdsa-p256` or `ecdsa-p384`, else RSA-2048 to keep tests fast.
pub fn keys(name: &str) -> Keys {
    static DIR: OnceLock<TempDir> = OnceLock::new();
    static MADE: OnceLock<Mutex<HashMap<String, Keys>>> = OnceLock::new();
    let dir = DIR.get_or_init(|| tempfile::tempdir().unwrap());
    let mut made = MADE.get_or_init(Default::default).lock().unwrap();
    made.entry(name.to_owned())
        .or_insert_with(|| {
            let keys =
                Keys { key: dir.path().join(format!("{name}.key")), cert: dir.path().join(format!("{name}.crt")) };
            let algorithm = ["ecdsa-p256", "ecdsa-p384"].into_iter().find(|a| name.starts_with(a));
            let kind = match algorithm {
                Some(algorithm) => ["--algorithm", algorithm],
                None => ["--bits", "2048"],
            };
            elfsig()
                .arg("keygen")
                .args(kind)
                .arg("--subject")
                .arg(format!("CN=elfsig test key {name}"))
                .arg("--key")
                .arg(&keys.key)
                .arg("--cert")
                .arg(&keys.cert)
                .assert()
                .success();
            keys
        })
        .clone()
}

/// Signs `file` in place with `keys`, asserting success.
pub fn sign(keys: &Keys, file: &Path) {
    elfsig().arg("sign").arg("--key").arg(&keys.key).arg("--cert").arg(&keys.cert).arg(file).assert().success();
}

/// `elfsig verify --cert <keys.cert> file`.
pub fn verify(keys: &Keys, file: &Path) -> assert_cmd::assert::Assert {
    elfsig().arg("verify").arg("--cert").arg(&keys.cert).arg(file).assert()
}

/// File offset and size of the section called `name`, found by goblin.
pub fn section(path: &Path, name: &str) -> Option<(usize, usize)> {
    let bytes = std::fs::read(path).unwrap();
    let elf = goblin::elf::Elf::parse(&bytes).ok()?;
    elf.section_headers
        .iter()
        .find(|s| elf.shdr_strtab.get_at(s.sh_name) == Some(name))
        .map(|s| (s.sh_offset as usize, s.sh_size as usize))
}

/// Offset and size of the signature payload of a file with a section header table (the
/// `.elfsig` section). For a file that may have been signed with a trailer, use
/// [`signature_payload`].
pub fn payload(path: &Path) -> (usize, usize) {
    section(path, ".elfsig").expect("signed file has an .elfsig section")
}

/// The magic that starts the trailer of a signed file without a section header table.
pub const TRAILER_MAGIC: &[u8; 8] = b"ELFSIGTR";
/// Size of that trailer: the magic, the payload offset and the payload length (little-endian
/// `u64`s, whatever the ELF byte order).
pub const TRAILER_LEN: usize = 24;

/// What points at a signature payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Anchor {
    /// The last section, `.elfsig`, of a file with a section header table.
    Section,
    /// The trailer in the last [`TRAILER_LEN`] bytes of a file without a section header table.
    Trailer,
}

impl Anchor {
    /// The name `inspect --json` gives it (`signature.payload.anchor`).
    pub fn json_name(self) -> &'static str {
        match self {
            Anchor::Section => "section",
            Anchor::Trailer => "trailer",
        }
    }
}

/// Where a signature payload is, and what points at it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Payload {
    pub offset: usize,
    pub size: usize,
    pub anchor: Anchor,
}

impl Payload {
    /// The payload's bytes in the file.
    pub fn range(&self) -> std::ops::Range<usize> {
        self.offset..self.offset + self.size
    }
}

/// The trailer at the end of `bytes`, read independently of elfsig-core: `Some((payload
/// offset, payload length))` when the file has no section header table (`e_shoff` is 0, per
/// goblin) and its last [`TRAILER_LEN`] bytes start with [`TRAILER_MAGIC`].
pub fn trailer(bytes: &[u8]) -> Option<(u64, u64)> {
    let header = goblin::elf::Elf::parse_header(bytes).ok()?;
    let at = bytes.len().checked_sub(TRAILER_LEN)?;
    if header.e_shoff != 0 || &bytes[at..at + 8] != TRAILER_MAGIC {
        return None;
    }
    Some((layout::u64_at(bytes, at + 8), layout::u64_at(bytes, at + 16)))
}

/// Where the signature payload of the signed file `bytes` is, found independently of
/// elfsig-core: the `.elfsig` section when goblin finds one, else the payload the trailer names
/// (which must lie between the ELF header and the trailer). `None` if neither exists.
pub fn find_payload(bytes: &[u8]) -> Option<Payload> {
    if let Ok(elf) = goblin::elf::Elf::parse(bytes) {
        let found = elf.section_headers.iter().find(|s| elf.shdr_strtab.get_at(s.sh_name) == Some(".elfsig"));
        if let Some(s) = found {
            return Some(Payload { offset: s.sh_offset as usize, size: s.sh_size as usize, anchor: Anchor::Section });
        }
    }
    let (offset, size) = trailer(bytes)?;
    let trailer_at = (bytes.len() - TRAILER_LEN) as u64;
    let ehsize = u64::from(goblin::elf::Elf::parse_header(bytes).ok()?.e_ehsize);
    let fits = offset >= ehsize && offset.checked_add(size).is_some_and(|end| end <= trailer_at);
    fits.then_some(Payload { offset: offset as usize, size: size as usize, anchor: Anchor::Trailer })
}

/// [`find_payload`] of the file at `path`, which must be signed.
pub fn signature_payload(path: &Path) -> Payload {
    let bytes = std::fs::read(path).unwrap();
    find_payload(&bytes).unwrap_or_else(|| {
        panic!("{}: neither an .elfsig section nor a trailer pointing inside the file", path.display())
    })
}

/// Programs from this machine's Debian packages to sign and run: (name, path, arguments with a
/// deterministic output).
pub fn system_programs() -> Vec<(&'static str, PathBuf, Vec<&'static str>)> {
    let wanted: [(&str, &[&str]); 6] = [
        // Not `/`: its `tmp` entry's link count and time change whenever a test (running in
        // parallel) makes or removes a scratch directory, so the output would not be deterministic.
        ("ls", &["-la", "/usr"]),
        ("cat", &["/etc/hostname"]),
        ("bash", &["-c", "echo $((6 * 7)); for i in 1 2 3; do echo $i; done"]),
        ("python3", &["-c", "import hashlib, json; print(json.dumps({'h': hashlib.sha256(b'x').hexdigest()}))"]),
        ("busybox", &["sh", "-c", "echo busybox works; seq 3"]),
        ("tar", &["--version"]),
    ];
    wanted
        .into_iter()
        .filter_map(|(name, args)| {
            let path = elfsig_fixtures::system_binary(name)?;
            Some((name, path, args.to_vec()))
        })
        .collect()
}
