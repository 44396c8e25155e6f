//! The container image the signed system's checks run, made as an organisation's pipeline would
//! make one from Debian's packages and sign it, as README's "Containers" section has it: a
//! minimal Debian 13 root (mmdebstrap's minbase, cached: coreutils, dash, perl-base, whose XS
//! modules perl loads with dlopen), one layer of it as GNU tar writes
//! it (pax records, extended attributes), an image around it (umoci), an OCI archive of that
//! (what `podman load` reads), and the same signed by `elfsig oci sign`. Like Debian's `slim`
//! images, the layer leaves out documentation, manual pages and translations. Beside them, a
//! build context for `podman build`: a program as a build makes one, unsigned and signed.

use std::fs;
use std::path::{Path, PathBuf};

use elfsig_guest::image::{
    CONTAINER_BUILD_CONTEXT, CONTAINER_BUILT_SIGNED, CONTAINER_BUILT_UNSIGNED, CONTAINER_EXTRA_SIGNED,
    CONTAINER_EXTRA_UNSIGNED, CONTAINER_IMAGES, CONTAINER_PACKAGES, CONTAINER_SIGNED, CONTAINER_UNSIGNED,
};

use crate::cmd::Cmd;
use crate::keys::KeyPair;
use crate::{Result, chroot, deps, paths};

/// What making the images needs on this machine.
const HOST_TOOLS: &[deps::Need] = &[deps::Need::Deb("umoci"), deps::Need::Deb("mmdebstrap")];

/// The image's archives, unsigned and signed.
#[derive(Clone, Debug)]
pub struct Images {
    /// As made, nothing signed.
    pub unsigned: PathBuf,
    /// As `elfsig oci sign` signed it with the system's key.
    pub signed: PathBuf,
    /// A build context: a program as a build makes it, unsigned and signed.
    pub build_context: PathBuf,
    /// The image [`EXTRA_IMAGE`] names, as given and signed, when it names one.
    pub extra: Option<(PathBuf, PathBuf)>,
}

/// An OCI archive of an image made elsewhere (one with `/bin/sh`), which the system's checks
/// sign and run too, rootless, as a new user would try elfsig first: signed it runs, unsigned
/// it is refused.
pub const EXTRA_IMAGE: &str = "ELFSIG_DISTRO_IMAGE";

/// Makes both archives in target/distro/containers/, signing with `key`.
pub fn make(elfsig: &Path, key: &KeyPair) -> Result<Images> {
    deps::ensure(HOST_TOOLS)?;
    let root = root()?;
    let dir = paths::target().join("distro/containers");
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    // The root as one layer, as GNU tar writes it; no device nodes (an image's /dev is the
    // engine's to make), and what slim images leave out (what podman loads, emulated, is
    // loaded in half the time).
    let layer = dir.join("layer.tar");
    Cmd::new("tar")
        .args(["--create", "--format=pax", "--xattrs", "--numeric-owner", "--sort=name", "--exclude=./dev/*"])
        .args(["doc", "man", "info", "locale"].map(|d| format!("--exclude=./usr/share/{d}/*")))
        .arg("--file")
        .arg(&layer)
        .arg("--directory")
        .arg(&root)
        .arg(".")
        .run()?;
    let layout = dir.join("layout");
    let image = format!("{}:debian", layout.display());
    Cmd::new("umoci").args(["init", "--layout"]).arg(&layout).run()?;
    Cmd::new("umoci").args(["new", "--image", &image]).run()?;
    Cmd::new("umoci").args(["raw", "add-layer", "--image", &image]).arg(&layer).run()?;
    Cmd::new("umoci")
        .args(["config", "--image", &image, "--config.cmd=/bin/sh", "--config.env=PATH=/usr/sbin:/usr/bin:/sbin:/bin"])
        .run()?;
    fs::remove_file(&layer).map_err(|e| format!("cannot remove {}: {e}", layer.display()))?;
    let unsigned = dir.join(CONTAINER_UNSIGNED);
    Cmd::new("tar").arg("--create").arg("--file").arg(&unsigned).arg("--directory").arg(&layout).arg(".").run()?;
    let signed = dir.join(CONTAINER_SIGNED);
    key.signing(elfsig, &["oci", "sign"]).arg("-o").arg(&signed).arg(&unsigned).run()?;
    fs::remove_dir_all(&layout).map_err(|e| format!("cannot remove {}: {e}", layout.display()))?;
    let context = dir.join("context");
    super::files::copy(&root.join("usr/bin/true"), &context.join(CONTAINER_BUILT_UNSIGNED), 0o755)?;
    key.signing(elfsig, &["sign"])
        .arg("-o")
        .arg(context.join(CONTAINER_BUILT_SIGNED))
        .arg(context.join(CONTAINER_BUILT_UNSIGNED))
        .run()?;
    let build_context = dir.join(CONTAINER_BUILD_CONTEXT);
    Cmd::new("tar")
        .arg("--create")
        .arg("--file")
        .arg(&build_context)
        .arg("--directory")
        .arg(&context)
        .arg(".")
        .run()?;
    fs::remove_dir_all(&context).map_err(|e| format!("cannot remove {}: {e}", context.display()))?;
    let extra = match std::env::var_os(EXTRA_IMAGE) {
        None => None,
        Some(given) => {
            let given = Path::new(&given);
            let (as_given, signed) = (dir.join(CONTAINER_EXTRA_UNSIGNED), dir.join(CONTAINER_EXTRA_SIGNED));
            fs::copy(given, &as_given).map_err(|e| format!("{EXTRA_IMAGE}: cannot copy {}: {e}", given.display()))?;
            key.signing(elfsig, &["oci", "sign"]).arg("-o").arg(&signed).arg(&as_given).run()?;
            Some((as_given, signed))
        }
    };
    Ok(Images { unsigned, signed, build_context, extra })
}

/// Installs the container tools into the system `root` from its archive (signed there, checked
/// by the gate), as an administrator would, and puts the images where its checks find them.
pub fn install(root: &Path, images: &Images) -> Result {
    chroot::run_in(root, &format!("apt-get -qq -y --no-install-recommends install {CONTAINER_PACKAGES}"))?;
    let dir = root.join(CONTAINER_IMAGES.trim_start_matches('/'));
    fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let extra = images
        .extra
        .iter()
        .flat_map(|(as_given, signed)| [(as_given, CONTAINER_EXTRA_UNSIGNED), (signed, CONTAINER_EXTRA_SIGNED)]);
    for (from, name) in [
        (&images.signed, CONTAINER_SIGNED),
        (&images.unsigned, CONTAINER_UNSIGNED),
        (&images.build_context, CONTAINER_BUILD_CONTEXT),
    ]
    .into_iter()
    .chain(extra)
    {
        super::files::copy(from, &dir.join(name), 0o644)?;
    }
    Ok(())
}

/// The image's root: Debian 13's minimal base, made once.
fn root() -> Result<PathBuf> {
    let mirror = std::env::var("ELFSIG_DEBIAN_MIRROR").unwrap_or_else(|_| crate::debian_kernel::MIRROR.to_owned());
    let mut key = crate::kernel::Fnv::new();
    key.add(mirror.as_bytes()).add(b"minbase");
    chroot::cached_root(
        &paths::cache().join("container-root"),
        &format!("trixie-{:016x}", key.finish()),
        "the container image's Debian 13 root",
        &["--variant=minbase".into(), "--quiet".into()],
        "trixie",
        &[format!("deb {mirror} trixie main")],
    )
}
