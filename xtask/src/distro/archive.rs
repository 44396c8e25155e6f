//! The package archive the signed Debian 13 system is kept up to date from, made as README's
//! "Keeping hosts up to date" tells an organisation to make theirs: Debian's packages mirrored,
//! re-signed by `elfsig deb sign` with Debian's version numbers, published with apt-ftparchive
//! and signed with gpg; the system lists this archive alone, with `Signed-By`, and the gate in
//! `apt/` checks every package before dpkg unpacks it.
//!
//! It holds what `apt-get upgrade` finds newer than the system in trixie-updates and
//! trixie-security on the day the mirror was made (the system is made from the release suite
//! alone), what `apt-get install openssh-server` adds, the container tools (podman and what it
//! runs, without what it only recommends), the kernel update from trixie-backports
//! (`debian_kernel::UPDATE_RELEASE`, with what it depends on), and `kmod` rebuilt with a higher version,
//! so that an upgrade always happens, and one whose trigger rebuilds the initramfs, which the
//! system reboots into; the system's policy as a package (`policy.rs`); and elfsig's own
//! packages, at two versions (`packages.rs`), which the system installs from it. A second archive
//! holds a package as Debian ships it, unsigned: the gate
//! must refuse it. The mirror is kept in the cache (named after the Debian 13 root it was made
//! for), so that later runs upgrade the same packages without the network.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

use elfsig_guest::image::{
    ARCHIVE_INSTALLED, ARCHIVE_REBUILT, ARCHIVE_REBUILT_SUFFIX, ARCHIVE_UNMODIFIED, CONTAINER_PACKAGES, ELFSIG_PACKAGE,
};

use super::files::{copy, parent_made, write};
use super::{packages, policy};
use crate::cmd::Cmd;
use crate::debian_kernel::DebianKernel;
use crate::keys::KeyPair;
use crate::{Result, chroot, deps, paths};

/// What making the archives needs on this machine: apt-ftparchive, gpg.
pub const HOST_TOOLS: &[deps::Need] = &[deps::Need::Deb("apt-utils"), deps::Need::Deb("gnupg")];

/// The archives, ready to copy into the system.
#[derive(Clone, Debug)]
pub struct Archives {
    /// The re-signed packages: a flat repository (`Packages`, `Release`, `InRelease`).
    pub signed: PathBuf,
    /// The same packages before the signing (the unsigned system installs elfsig's from here).
    pub unsigned: PathBuf,
    /// The package as Debian ships it, in a repository of its own.
    pub other: PathBuf,
    /// The OpenPGP certificate both are signed with, for `Signed-By`.
    pub key: PathBuf,
    /// The system's signed policies: the image's, and the one the archive ships as a package.
    pub policies: policy::Policies,
    /// The Machine Owner Key elfsig's modules are signed with, for the firmware.
    pub mok: packages::Mok,
}

/// Makes both archives in target/distro/archive/, the packages signed with `key`; the signed
/// one holds elfsig's packages (`contents`) and the system's policy as a package too, signed
/// with `policy_key`.
pub fn make(
    debian: &DebianKernel,
    contents: &packages::Contents<'_>,
    key: &KeyPair,
    policy_key: &KeyPair,
) -> Result<Archives> {
    let elfsig = contents.elfsig;
    deps::ensure(HOST_TOOLS)?;
    let mirror = mirrored(debian)?;
    let dir = paths::target().join("distro/archive");
    let _ = fs::remove_dir_all(&dir);
    let (unsigned, signed, other) = (dir.join("unsigned"), dir.join("signed"), dir.join("other"));
    for d in [&unsigned, &other] {
        fs::create_dir_all(d).map_err(|e| format!("cannot create {}: {e}", d.display()))?;
    }
    for entry in fs::read_dir(&mirror).map_err(|e| format!("cannot read {}: {e}", mirror.display()))? {
        let path = entry.map_err(|e| format!("cannot read {}: {e}", mirror.display()))?.path();
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if name.starts_with(&format!("{ARCHIVE_UNMODIFIED}_")) {
            copy(&path, &other.join(&name), 0o644)?;
        } else if name.starts_with(&format!("{ARCHIVE_REBUILT}_")) {
            rebuild_with_higher_version(&path, &unsigned)?;
        } else {
            copy(&path, &unsigned.join(&name), 0o644)?;
        }
    }
    let policies = policy::make(&dir.join("policy"), &unsigned, &debian.root, elfsig, key, policy_key)?;
    let mok = packages::make(debian, contents, &unsigned)?;
    let started = Instant::now();
    key.signing(elfsig, &["deb", "sign"]).arg("--output-dir").arg(&signed).arg(&unsigned).run()?;
    let (count, bytes) = count(&signed)?;
    eprintln!(
        "xtask: re-signed {count} packages ({:.1} MiB) in {:.1} s",
        bytes as f64 / f64::from(1 << 20),
        started.elapsed().as_secs_f64()
    );
    let gnupg = archive_key()?;
    let key = dir.join("archive-key.gpg");
    let exported = Cmd::new("gpg").env("GNUPGHOME", &gnupg).args(["--batch", "--export"]).read_bytes()?;
    fs::write(&key, exported).map_err(|e| format!("cannot write {}: {e}", key.display()))?;
    for repository in [&signed, &other] {
        publish(repository, &gnupg)?;
    }
    Ok(Archives { signed, unsigned, other, key, policies, mok })
}

/// The packages mirrored for the Debian 13 root, downloaded once into the cache (named after
/// the root and what is downloaded).
fn mirrored(debian: &DebianKernel) -> Result<PathBuf> {
    let mirror = std::env::var("ELFSIG_DEBIAN_MIRROR").unwrap_or_else(|_| crate::debian_kernel::MIRROR.to_owned());
    let security = std::env::var("ELFSIG_DEBIAN_SECURITY_MIRROR").unwrap_or_else(|_| SECURITY_MIRROR.to_owned());
    let download = format!(
        "set -e; printf 'deb {mirror} trixie main\\ndeb {mirror} trixie-updates main\\ndeb {security} trixie-security main\\n' \
         > /etc/apt/sources.list; rm -f /etc/apt/sources.list.d/*; \
         apt-get -qq update; apt-get -qq -y --download-only upgrade; \
         apt-get -qq -y --download-only install {ARCHIVE_INSTALLED}; \
         apt-get -qq -y --download-only --no-install-recommends install {CONTAINER_PACKAGES}; \
         printf 'deb {mirror} trixie-backports main\\n' >> /etc/apt/sources.list; apt-get -qq update; \
         apt-get -qq -y --download-only install {update}; \
         cd /var/cache/apt/archives; apt-get -qq download {ARCHIVE_REBUILT} {ARCHIVE_UNMODIFIED}",
        update = crate::debian_kernel::update_image_package(),
    );
    let root_name = debian.root.parent().and_then(Path::file_name).map(|n| n.to_string_lossy().into_owned());
    let mut key = crate::kernel::Fnv::new();
    key.add(download.as_bytes());
    let parent = paths::cache().join("archive-mirror");
    let dir = parent.join(format!("{}-{:016x}", root_name.unwrap_or_default(), key.finish()));
    let debs = dir.join("debs");
    if dir.join("ready").exists() {
        eprintln!("xtask: reusing the packages mirrored in {}", debs.display());
        return Ok(debs);
    }
    let _ = fs::remove_dir_all(&dir);
    // Mirrors of other roots, or of other lists of packages, are stale.
    for stale in fs::read_dir(&parent).into_iter().flatten().filter_map(|e| e.ok().map(|e| e.path())) {
        eprintln!("xtask: removing the stale {}", stale.display());
        let _ = fs::remove_dir_all(stale);
    }
    let scratch = dir.join("scratch");
    fs::create_dir_all(&scratch).map_err(|e| format!("cannot create {}: {e}", scratch.display()))?;
    // On an overlay of the root, which stays as it is: its packages are what is installed.
    chroot::run_in_overlay(&debian.root, &scratch, &download)?;
    let downloaded = scratch.join("upper/var/cache/apt/archives");
    fs::create_dir_all(&debs).map_err(|e| format!("cannot create {}: {e}", debs.display()))?;
    for entry in fs::read_dir(&downloaded).map_err(|e| format!("cannot read {}: {e}", downloaded.display()))? {
        let path = entry.map_err(|e| e.to_string())?.path();
        if path.extension().is_some_and(|e| e == "deb") {
            let name = path.file_name().ok_or("a package without a name")?;
            fs::rename(&path, debs.join(name)).map_err(|e| format!("cannot move {}: {e}", path.display()))?;
        }
    }
    let _ = fs::remove_dir_all(&scratch);
    let (count, bytes) = count(&debs)?;
    eprintln!("xtask: mirrored {count} packages ({:.1} MiB) in {}", bytes as f64 / f64::from(1 << 20), debs.display());
    fs::write(dir.join("ready"), b"").map_err(|e| format!("cannot mark {} ready: {e}", dir.display()))?;
    Ok(debs)
}

/// Debian's security archive; `ELFSIG_DEBIAN_SECURITY_MIRROR` overrides it.
const SECURITY_MIRROR: &str = "http://deb.debian.org/debian-security";

/// How many packages `dir` holds, and their bytes.
fn count(dir: &Path) -> Result<(usize, u64)> {
    let mut found = (0, 0);
    for entry in fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))? {
        let entry = entry.map_err(|e| e.to_string())?;
        if entry.path().extension().is_some_and(|e| e == "deb") {
            found.0 += 1;
            found.1 += entry.metadata().map_err(|e| e.to_string())?.len();
        }
    }
    Ok(found)
}

/// The package `deb` as its maintainer would rebuild it with a higher version (the same files;
/// the version suffix [`ARCHIVE_REBUILT_SUFFIX`]), into `dir`.
fn rebuild_with_higher_version(deb: &Path, dir: &Path) -> Result {
    let tree = dir.join("rebuild");
    let _ = fs::remove_dir_all(&tree);
    Cmd::new("dpkg-deb").arg("--raw-extract").arg(deb).arg(&tree).run()?;
    let control = tree.join("DEBIAN/control");
    let text = fs::read_to_string(&control).map_err(|e| format!("cannot read {}: {e}", control.display()))?;
    let version = text
        .lines()
        .find_map(|l| l.strip_prefix("Version: "))
        .ok_or_else(|| format!("{} has no version", deb.display()))?
        .to_owned();
    let rebuilt =
        text.replace(&format!("Version: {version}\n"), &format!("Version: {version}{ARCHIVE_REBUILT_SUFFIX}\n"));
    fs::write(&control, rebuilt).map_err(|e| format!("cannot write {}: {e}", control.display()))?;
    Cmd::new("dpkg-deb").args(["--build", "-Zxz"]).arg(&tree).arg(dir).run()?;
    fs::remove_dir_all(&tree).map_err(|e| format!("cannot remove {}: {e}", tree.display()))
}

/// The gpg home holding the archive's signing key, made once in the cache.
fn archive_key() -> Result<PathBuf> {
    let home = paths::cache().join("archive-key");
    if home.join("ready").exists() {
        return Ok(home);
    }
    let _ = fs::remove_dir_all(&home);
    fs::create_dir_all(&home).map_err(|e| format!("cannot create {}: {e}", home.display()))?;
    let private = std::os::unix::fs::PermissionsExt::from_mode(0o700);
    fs::set_permissions(&home, private).map_err(|e| format!("cannot chmod {}: {e}", home.display()))?;
    Cmd::new("gpg")
        .env("GNUPGHOME", &home)
        .args(["--batch", "--pinentry-mode", "loopback", "--passphrase", ""])
        .args(["--quick-gen-key", "elfsig test archive <archive@elfsig.invalid>", "rsa3072", "sign", "never"])
        .run()?;
    fs::write(home.join("ready"), b"").map_err(|e| format!("cannot mark {} ready: {e}", home.display()))?;
    Ok(home)
}

/// Indexes `dir` as a flat repository and signs its `Release` (`InRelease`) with the key in
/// `gnupg`.
fn publish(dir: &Path, gnupg: &Path) -> Result {
    let packages = Cmd::new("apt-ftparchive").args(["packages", "."]).dir(dir).read()?;
    fs::write(dir.join("Packages"), packages).map_err(|e| format!("cannot write Packages: {e}"))?;
    let release = Cmd::new("apt-ftparchive")
        .args(["-o", "APT::FTPArchive::Release::Origin=elfsig", "-o", "APT::FTPArchive::Release::Label=elfsig"])
        .args(["release", "."])
        .dir(dir)
        .read()?;
    fs::write(dir.join("Release"), release).map_err(|e| format!("cannot write Release: {e}"))?;
    Cmd::new("gpg")
        .env("GNUPGHOME", gnupg)
        .args(["--batch", "--yes", "--digest-algo", "SHA512", "--clearsign", "--output", "InRelease", "Release"])
        .dir(dir)
        .run()
}

/// README's command that installs elfsig and its module for the running kernel (Debian's, in
/// the system), at `version`.
pub fn install_elfsig_command(version: &str) -> String {
    format!(
        "apt-get -qq -y install {ELFSIG_PACKAGE}={version} {}={version}",
        elfsig_guest::image::modules_package(crate::debian_kernel::RELEASE)
    )
}

/// Installs elfsig's packages, unsigned, into the system `root` with dpkg (the unsigned system,
/// which lists what is left to sign, has no archive).
pub fn install_unsigned(root: &Path, archives: &Archives) -> Result {
    let [version, _] = packages::versions();
    let inside = root.join("tmp/elfsig-packages");
    fs::create_dir_all(&inside).map_err(|e| format!("cannot create {}: {e}", inside.display()))?;
    let mut names = Vec::new();
    for name in [ELFSIG_PACKAGE.to_owned(), elfsig_guest::image::modules_package(crate::debian_kernel::RELEASE)] {
        let deb = format!("{name}_{version}_amd64.deb");
        copy(&archives.unsigned.join(&deb), &inside.join(&deb), 0o644)?;
        names.push(format!("/tmp/elfsig-packages/{deb}"));
    }
    chroot::run_in(root, &format!("dpkg -i {}", names.join(" ")))?;
    fs::remove_dir_all(&inside).map_err(|e| format!("cannot remove {}: {e}", inside.display()))
}

/// Puts the archives and the gate into the system `root`, as README's "Keeping hosts up to
/// date" has an administrator do: the archives listed alone, with `Signed-By`; elfsig's
/// packages installed from them; the gate's APT hook and dpkg slot from `apt/`, with the
/// certificate `cert` the module trusts (no key).
pub fn install(root: &Path, archives: &Archives, cert: &Path) -> Result {
    use elfsig_guest::image::{ARCHIVE, GATE_CERTS, GATE_HOOK, OTHER_ARCHIVE};
    let inside = |path: &str| root.join(path.trim_start_matches('/'));
    for (from, to) in [(&archives.signed, ARCHIVE), (&archives.other, OTHER_ARCHIVE)] {
        parent_made(&inside(to))?;
        Cmd::new("cp").arg("-a").arg(from).arg(inside(to)).run()?;
    }
    let keyring = "/etc/apt/keyrings/elfsig-archive.gpg";
    copy(&archives.key, &inside(keyring), 0o644)?;
    let _ = fs::remove_file(inside("/etc/apt/sources.list"));
    for (name, uri) in [("elfsig", ARCHIVE), ("other", OTHER_ARCHIVE)] {
        write(
            &inside(&format!("/etc/apt/sources.list.d/{name}.sources")),
            &format!("Types: deb\nURIs: file:{uri}\nSuites: ./\nSigned-By: {keyring}\n"),
        )?;
    }
    // The system's version of elfsig; the newer one is for its upgrade.
    let [version, _] = packages::versions();
    chroot::run_in(root, &format!("apt-get -qq update && {}", install_elfsig_command(&version)))?;
    let gate = paths::root().join("apt");
    copy(&gate.join("apt.conf.d/80elfsig"), &inside(GATE_HOOK), 0o644)?;
    copy(&gate.join("debsig-verify"), &inside("/usr/local/sbin/debsig-verify"), 0o755)?;
    copy(cert, &inside(GATE_CERTS), 0o644)?;
    // Debian's dpkg.cfg turns dpkg's verification slot off; apt/README.md has it turned on.
    let dpkg_cfg = inside("/etc/dpkg/dpkg.cfg");
    let text = fs::read_to_string(&dpkg_cfg).map_err(|e| format!("cannot read {}: {e}", dpkg_cfg.display()))?;
    if !text.lines().any(|l| l.trim() == "no-debsig") {
        return Err(format!("{} does not say no-debsig: has Debian changed it?", dpkg_cfg.display()));
    }
    let on: String = text
        .lines()
        .map(|l| if l.trim() == "no-debsig" { "#no-debsig\n".to_owned() } else { format!("{l}\n") })
        .collect();
    write(&dpkg_cfg, &on)
}
