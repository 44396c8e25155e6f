//! What the test VM boots into: the guest program as `/init`, the module, test programs
//! signed (on the host, with the real CLI) by each test key or not at all, and the CLI itself
//! with the kernel key, for the cases that sign inside the VM. The guest's `cases.rs` and
//! `stress.rs` name the paths they expect.

use std::fs;
use std::path::{Path, PathBuf};

use elfsig_fixtures::{Built, Class, Endian, Spec};

use crate::Result;
use crate::cmd::Cmd;
use crate::keys::{KeyPair, TestKeys};
use crate::paths;
use crate::vm::cpio::Cpio;

/// Where binfmt_elf finds the dynamic loader of x86-64 programs.
pub const LD_SO: &str = "/lib64/ld-linux-x86-64.so.2";

/// The coreutils the guest runs, dynamically linked.
const COREUTILS: &[&str] = &["ls", "cat", "echo", "true", "uname"];

/// A file to put in an initramfs, signed with `key` when given.
pub struct Staged<'k> {
    /// Where it goes in the guest.
    pub guest_path: String,
    /// Its unsigned contents.
    pub bytes: Vec<u8>,
    /// The key to sign it with, if any.
    pub key: Option<&'k KeyPair>,
}

/// Reads a host file.
pub fn read(path: &Path) -> Result<Vec<u8>> {
    fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}

/// A program from the host's Debian packages.
pub fn system(name: &str) -> Result<PathBuf> {
    elfsig_fixtures::system_binary(name).ok_or_else(|| format!("{name} is not installed"))
}

/// The initramfs of the end-to-end suite.
pub fn test_suite(elfsig: &Path, guest: &Path, ko: &Path, keys: &TestKeys) -> Result<Vec<u8>> {
    let hello = elfsig_fixtures::synth(&Spec::new(Class::Elf64, Endian::Little));
    let revokeme = elfsig_fixtures::synth(&Spec::new(Class::Elf64, Endian::Little).trailing(b"revoke me"));
    let busybox = read(&system("busybox")?)?;
    let ld_so = read(&Path::new(LD_SO).canonicalize().map_err(|e| format!("{LD_SO}: {e}"))?)?;

    let mut staged = vec![
        Staged { guest_path: "/t/signed/hello".into(), bytes: hello.clone(), key: Some(&keys.kernel) },
        Staged { guest_path: "/t/signed/revokeme".into(), bytes: revokeme, key: Some(&keys.kernel) },
        Staged { guest_path: "/bin/busybox".into(), bytes: busybox.clone(), key: Some(&keys.kernel) },
        Staged { guest_path: LD_SO.into(), bytes: ld_so, key: Some(&keys.kernel) },
        Staged { guest_path: "/t/module/hello".into(), bytes: hello.clone(), key: Some(&keys.module) },
        Staged { guest_path: "/t/other/hello".into(), bytes: hello.clone(), key: Some(&keys.other) },
        Staged { guest_path: "/t/added/hello".into(), bytes: hello.clone(), key: Some(&keys.added) },
        Staged { guest_path: "/t/unsigned/hello".into(), bytes: hello, key: None },
        Staged { guest_path: "/t/unsigned/busybox".into(), bytes: busybox, key: None },
        Staged { guest_path: "/t/unsigned/ls".into(), bytes: read(&system("ls")?)?, key: None },
    ];
    let mut cpio = Cpio::new();
    for (built, name) in [(Built::CStatic, "cstatic"), (Built::CStaticPie, "cstaticpie"), (Built::CDynamic, "cdynamic")]
    {
        let path = elfsig_fixtures::build(built)?;
        staged.push(Staged { guest_path: format!("/t/signed/{name}"), bytes: read(&path)?, key: Some(&keys.kernel) });
        if let Some(expected) = elfsig_fixtures::expected_output(built) {
            cpio.file(&format!("/t/expected/{name}"), 0o644, expected);
        }
    }
    let mut libraries = Vec::new();
    for name in COREUTILS {
        let path = system(name)?;
        libraries.extend(shared_libraries(&path)?);
        staged.push(Staged { guest_path: format!("/t/signed/{name}"), bytes: read(&path)?, key: Some(&keys.kernel) });
    }
    libraries.extend(shared_libraries(&elfsig_fixtures::build(Built::CDynamic)?)?);
    staged.push(Staged { guest_path: "/bin/elfsig".into(), bytes: stripped(elfsig)?, key: Some(&keys.kernel) });
    libraries.extend(shared_libraries(elfsig)?);
    libraries.sort();
    libraries.dedup();

    let signed = sign_all(elfsig, &staged, &paths::target().join("vm/stage"))?;
    for (file, bytes) in staged.iter().zip(&signed) {
        cpio.file(&file.guest_path, 0o755, bytes);
    }
    for library in &libraries {
        cpio.file(library, 0o755, &read(Path::new(library))?);
    }

    cpio.chardev("/dev/console", 5, 1);
    cpio.file("/init", 0o755, &read(guest)?);
    cpio.file("/elfsig.ko", 0o644, &read(ko)?);
    cpio.symlink("/bin/sh", "busybox");
    cpio.file("/t/scripts/signed-interpreter.sh", 0o755, b"#!/bin/sh\necho script ran\n");
    cpio.file("/t/scripts/unsigned-interpreter.sh", 0o755, b"#!/t/unsigned/busybox sh\necho script ran\n");

    // Revocation: the digest of /t/signed/revokeme, and a blacklist entry for it signed with the
    // kernel key, as CONFIG_SYSTEM_BLACKLIST_AUTH_UPDATE requires.
    let revokeme = staged.iter().zip(&signed).find(|(s, _)| s.guest_path == "/t/signed/revokeme").map(|(_, b)| b);
    let digest = digest_of(elfsig, revokeme.ok_or("revokeme was not staged")?)?;
    cpio.file("/t/added.der", 0o644, &read(&keys.added.cert)?);
    cpio.file("/t/keys/kernel.key", 0o600, &read(&keys.kernel.key)?);
    cpio.file("/t/keys/kernel.crt", 0o644, &read(&keys.kernel.cert)?);
    cpio.file("/t/manifest", 0o644, format!("revoke_digest {digest}\n").as_bytes());
    cpio.file("/t/revoke.p7", 0o644, &sign_description(&format!("bin:{digest}"), &keys.kernel)?);
    Ok(cpio.finish())
}

/// Signs each staged file with its key (one `elfsig sign` per key) in `dir`, and returns
/// every file's final bytes.
pub fn sign_all(elfsig: &Path, staged: &[Staged<'_>], dir: &Path) -> Result<Vec<Vec<u8>>> {
    let _ = fs::remove_dir_all(dir);
    fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let mut by_key: Vec<(&KeyPair, Vec<PathBuf>)> = Vec::new();
    let mut paths = Vec::new();
    for (i, file) in staged.iter().enumerate() {
        let path = dir.join(format!("{i:02}"));
        fs::write(&path, &file.bytes).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        if let Some(key) = file.key {
            match by_key.iter_mut().find(|(k, _)| k.key == key.key) {
                Some((_, files)) => files.push(path.clone()),
                None => by_key.push((key, vec![path.clone()])),
            }
        }
        paths.push(path);
    }
    for (key, files) in by_key {
        Cmd::new(elfsig).args(["sign", "-q", "--key"]).arg(&key.key).arg("--cert").arg(&key.cert).args(&files).run()?;
    }
    paths.iter().map(|p| read(p)).collect()
}

/// `program` without its symbols and debug information (the release CLI is 8 times smaller
/// so, and quicker to verify under emulation).
fn stripped(program: &Path) -> Result<Vec<u8>> {
    let out = paths::target().join("vm/stage/stripped");
    fs::create_dir_all(paths::target().join("vm/stage")).map_err(|e| format!("cannot create the stage: {e}"))?;
    Cmd::new("strip").arg("-o").arg(&out).arg(program).run()?;
    read(&out)
}

/// The signed digest of a signed file, as `elfsig inspect --json` reports it.
fn digest_of(elfsig: &Path, bytes: &[u8]) -> Result<String> {
    let path = paths::target().join("vm/stage/digest-of");
    fs::write(&path, bytes).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    let json = Cmd::new(elfsig).args(["inspect", "--json"]).arg(&path).read()?;
    let start = json.find("\"digest\":\"").ok_or("no digest in inspect output")? + 10;
    Ok(json[start..start + 64].to_owned())
}

/// A detached PKCS#7 signature over `description` by `key`, for `add_key("blacklist", ...)`.
fn sign_description(description: &str, key: &KeyPair) -> Result<Vec<u8>> {
    let input = paths::target().join("vm/stage/description");
    fs::write(&input, description).map_err(|e| format!("cannot write {}: {e}", input.display()))?;
    Cmd::new("openssl")
        .args(["cms", "-sign", "-binary", "-noattr", "-nocerts", "-md", "sha256", "-outform", "DER", "-in"])
        .arg(&input)
        .arg("-signer")
        .arg(&key.cert)
        .arg("-inkey")
        .arg(&key.key)
        .read_bytes()
}

/// The shared libraries `program` loads, as the paths `ldd` prints (also their paths in the
/// guest).
pub fn shared_libraries(program: &Path) -> Result<Vec<String>> {
    let output = std::process::Command::new("ldd").arg(program).output().map_err(|e| format!("cannot run ldd: {e}"))?;
    let text = String::from_utf8_lossy(&output.stdout);
    // A static program has no libraries; ldd says so and exits with 1.
    if String::from_utf8_lossy(&output.stderr).contains("not a dynamic executable")
        || text.contains("not a dynamic executable")
    {
        return Ok(Vec::new());
    }
    if !output.status.success() {
        return Err(format!("`ldd {}` failed ({})", program.display(), output.status));
    }
    Ok(text
        .lines()
        .filter_map(|l| l.split_once("=> ").map(|(_, rest)| rest))
        .filter_map(|rest| rest.split_whitespace().next())
        .filter(|p| p.starts_with('/'))
        .map(str::to_owned)
        .collect())
}
