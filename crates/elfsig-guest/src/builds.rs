//! Building on a host under enforce (`cargo xtask distro`'s dracut boot, the one that does not
//! upgrade, so that these run beside the upgrade): the host has nothing to build a module with
//! (DKMS cannot build under enforce: what a build runs is unsigned), its module came built and
//! signed from the archive; and under `elfsig loader deny` an initramfs rebuild fails, saying
//! so, and keeps the initramfs there is.

use elfsig_guest::debian::{initramfs, run, succeeds, tail};
use elfsig_guest::harness::{Context, Outcome, Suite, ensure};
use elfsig_guest::image::{ELFSIG_VERSION, modules_package};

/// The cases, after the signed system's own; the last locks the loader policy to deny.
pub(crate) fn builds(suite: &mut Suite<'_>) {
    suite.case(
        "no DKMS and no compiler: the module came from its package, built and signed in the pipeline",
        module_from_its_package,
    );
    // Last: the loader policy cannot go back to allow while the module is locked.
    suite.case(
        "under loader deny ldd cannot run: an initramfs rebuild fails, saying so, and keeps the one there is",
        || {
            let initramfs = initramfs()?;
            let (_, before) = run(&format!("sha256sum {initramfs}"))?;
            succeeds("elfsig loader deny")?;
            let (ok, output) = run("update-initramfs -u")?;
            ensure(!ok && output.contains("ldd cannot list libraries"), || {
                format!("update-initramfs under loader deny (exit ok: {ok}): {}", tail(&output))
            })?;
            let (_, after) = run(&format!("sha256sum {initramfs}"))?;
            ensure(after == before, || format!("{initramfs} changed"))
        },
    );
}

/// What builds modules, none of which an enforced host has.
const BUILD_TOOLS: [&str; 8] = ["dkms", "gcc", "cc", "c++", "rustc", "clang", "as", "ld"];

/// The host has none of [`BUILD_TOOLS`]; the module loaded is the file of the package
/// `elfsig-modules-RELEASE` at the system's version, uncompressed, and says that version.
fn module_from_its_package() -> Outcome {
    for tool in BUILD_TOOLS {
        let (found, path) = run(&format!("command -v {tool}"))?;
        ensure(!found, || format!("the enforced host has {tool}: {}", path.trim()))?;
    }
    let (_, release) = run("uname -r")?;
    let release = release.trim();
    let package = modules_package(release);
    let (_, file) = run("modinfo -F filename elfsig")?;
    let packaged = format!("/modules/{release}/updates/elfsig.ko");
    ensure(file.trim().ends_with(&packaged), || format!("modprobe finds the module in {}", file.trim()))?;
    // dpkg knows it by the /usr path it was packaged with (/lib is a link to it).
    let file = format!("/usr/lib{packaged}");
    let (_, owner) = run(&format!("dpkg -S {file}"))?;
    ensure(owner.starts_with(&format!("{package}:")), || format!("{file} belongs to {}", owner.trim()))?;
    let (_, version) = run(&format!("dpkg-query -W -f='${{Version}}' {package}"))?;
    ensure(version == ELFSIG_VERSION, || format!("{package} is at {version}, not {ELFSIG_VERSION}"))?;
    let loaded = std::fs::read_to_string("/sys/module/elfsig/version").context("the module's version")?;
    ensure(loaded.trim() == ELFSIG_VERSION, || format!("the module loaded says version {}", loaded.trim()))
}
