//! The image's manifest ([`MANIFEST`]): values the host worked out when it built the image, such
//! as the digests the revocation cases revoke.

use elfsig_guest::harness::Context;
use elfsig_guest::image::MANIFEST;

/// The value the manifest gives `key`.
pub(crate) fn value(key: &str) -> Result<String, String> {
    let text = std::fs::read_to_string(MANIFEST).context("read manifest")?;
    text.lines()
        .find_map(|l| l.strip_prefix(key).and_then(|rest| rest.strip_prefix(' ')))
        .map(str::to_owned)
        .ok_or_else(|| format!("manifest has no {key}"))
}
