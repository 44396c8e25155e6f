//! Container images for the tests: an OCI image layout written from layers given as tar bytes,
//! and any bytes as a layer through `elfsig oci sign` and `elfsig oci verify`, exactly as a user
//! runs them (in this process): never a panic; a failed `oci sign` writes nothing; what `oci
//! sign` writes passes `oci verify` with the signing certificate, and signing it again changes
//! nothing.
//!
//! Shared by the fuzz target `oci` (`crates/elfsig-cli/fuzz`, which includes this file by path)
//! and `tests/oci.rs`.

use std::fs;
use std::io::Write;
use std::path::Path;

use elfsig_cli::oci::layout::{Sha256Writer, written};

use super::in_process::{elfsig, path, setup};

/// A plain tar layer's media type.
pub const TAR: &str = "application/vnd.oci.image.layer.v1.tar";

/// A layer: its uncompressed tar, its blob, and the blob's media type.
pub type Layer = (Vec<u8>, Vec<u8>, &'static str);

/// `sha256:…` of `bytes`.
pub fn sha256(bytes: &[u8]) -> String {
    let mut writer = Sha256Writer::new(std::io::sink());
    writer.write_all(bytes).unwrap();
    written(writer).1
}

/// Writes `bytes` as a blob of the layout at `dir`: its descriptor's digest and size.
pub fn blob(dir: &Path, bytes: &[u8]) -> (String, usize) {
    let digest = sha256(bytes);
    let blobs = dir.join("blobs/sha256");
    fs::create_dir_all(&blobs).unwrap();
    fs::write(blobs.join(&digest["sha256:".len()..]), bytes).unwrap();
    (digest, bytes.len())
}

/// Writes an image for `architecture` whose layers are `layers` into the layout at `dir`, with a configuration and a manifest carrying
/// what must survive re-signing (history, labels, annotations): the manifest's descriptor,
/// with a platform.
pub fn image(dir: &Path, architecture: &str, layers: &[Layer]) -> String {
    let mut descriptors = Vec::new();
    let mut diff_ids = Vec::new();
    let mut history = Vec::new();
    for (index, (tar, packed, media_type)) in layers.iter().enumerate() {
        let (digest, size) = blob(dir, packed);
        descriptors.push(format!(
            r#"{{"mediaType":"{media_type}","digest":"{digest}","size":{size},"annotations":{{"org.example.layer":"{index}"}}}}"#
        ));
        diff_ids.push(format!("\"{}\"", sha256(tar)));
        history.push(format!(r#"{{"created":"2026-01-0{}T00:00:00Z","created_by":"layer {index}"}}"#, index + 1));
    }
    let config = format!(
        r#"{{"created":"2026-01-01T00:00:00Z","architecture":"{architecture}","os":"linux","config":{{"Env":["PATH=/usr/bin"],"Labels":{{"org.example.label":"kept"}},"ArgsEscaped":true}},"rootfs":{{"type":"layers","diff_ids":[{}]}},"history":[{}],"docker_version":"an unknown field, kept"}}"#,
        diff_ids.join(","),
        history.join(",")
    );
    let (config_digest, config_size) = blob(dir, config.as_bytes());
    let manifest = format!(
        r#"{{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"{config_digest}","size":{config_size}}},"layers":[{}],"annotations":{{"org.example.note":"kept"}}}}"#,
        descriptors.join(",")
    );
    let (digest, size) = blob(dir, manifest.as_bytes());
    format!(
        r#"{{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"{digest}","size":{size},"platform":{{"architecture":"{architecture}","os":"linux"}}}}"#
    )
}

/// The descriptor of the image manifest `digest` of `size` bytes, without a platform, as
/// `index.json` lists one.
pub fn manifest_listed(digest: &str, size: usize) -> String {
    format!(r#"{{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"{digest}","size":{size}}}"#)
}

/// Writes the layout's `oci-layout` and its `index.json`, listing `manifests` (descriptors),
/// the first named `name`.
pub fn layout(dir: &Path, manifests: &[String], name: &str) {
    fs::create_dir_all(dir).unwrap();
    fs::write(dir.join("oci-layout"), r#"{"imageLayoutVersion":"1.0.0"}"#).unwrap();
    let mut listed = manifests.to_vec();
    if let Some(first) = listed.first_mut() {
        let named = format!(r#","annotations":{{"org.opencontainers.image.ref.name":"{name}"}}}}"#);
        *first = first.strip_suffix('}').unwrap().to_owned() + &named;
    }
    fs::write(dir.join("index.json"), format!(r#"{{"schemaVersion":2,"manifests":[{}]}}"#, listed.join(","))).unwrap();
}

/// Runs `data` through both commands as the only layer of the image `name`; panics on any broken
/// promise. Whether `oci sign` signed it.
pub fn check(data: &[u8], name: &str) -> bool {
    let s = setup();
    let image_dir = s.dir.join(format!("{name}-image"));
    let _ = fs::remove_dir_all(&image_dir);
    let manifest = image(&image_dir, "amd64", &[(data.to_vec(), data.to_vec(), TAR)]);
    layout(&image_dir, &[manifest], "latest");
    // Whatever it says, it says it without a panic.
    elfsig(&["oci", "verify", "--cert", path(&s.cert), path(&image_dir)]);
    let signed = s.dir.join(format!("{name}-signed"));
    let _ = fs::remove_dir_all(&signed);
    let sign = |from: &Path, to: &Path| {
        elfsig(&["oci", "sign", "--key", path(&s.key), "--cert", path(&s.cert), "-o", path(to), path(from)])
    };
    if !sign(&image_dir, &signed) {
        assert!(!signed.exists(), "a failed oci sign wrote an image");
        return false;
    }
    assert!(elfsig(&["oci", "verify", "--cert", path(&s.cert), path(&signed)]), "what oci sign wrote does not verify");
    let again = s.dir.join(format!("{name}-again"));
    let _ = fs::remove_dir_all(&again);
    assert!(sign(&signed, &again), "oci sign failed on what it wrote");
    assert!(
        fs::read(again.join("index.json")).unwrap() == fs::read(signed.join("index.json")).unwrap(),
        "signing a signed image again changed it"
    );
    true
}
