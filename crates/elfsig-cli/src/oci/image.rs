//! The tree a layout's `index.json` roots: indexes (multi-platform images), image manifests with
//! their configuration and layers, and what is kept as it is (images for platforms not asked
//! for, artifacts such as signatures). Read with oci-spec's types, which check each document;
//! rewritten as JSON values, so that every field, annotation and history entry elfsig does not
//! change stays as it was, in its order, whatever types oci-spec knows.

use std::collections::{BTreeSet, HashMap};

use oci_spec::image::{Descriptor, ImageConfiguration, ImageIndex, ImageManifest};
use serde_json::Value;

use super::layer::{Compression, NewLayer};
use super::layout::Layout;
use super::platform::Platforms;
use crate::error::Error;

/// How deep indexes may nest (an index of indexes of manifests is 2).
const MAX_DEPTH: usize = 8;
/// How many documents (indexes, manifests, configurations) an image may have read, and how many
/// bytes of them: an index that lists one manifest many times, nested, would else be read over
/// and over.
const MAX_DOCUMENTS: usize = 10_000;
const MAX_DOCUMENT_BYTES: u64 = 256 << 20;

const INDEXES: &[&str] =
    &["application/vnd.oci.image.index.v1+json", "application/vnd.docker.distribution.manifest.list.v2+json"];
const MANIFESTS: &[&str] =
    &["application/vnd.oci.image.manifest.v1+json", "application/vnd.docker.distribution.manifest.v2+json"];
const CONFIGS: &[&str] =
    &["application/vnd.oci.image.config.v1+json", "application/vnd.docker.container.image.v1+json"];

/// A node of the tree.
#[derive(Debug)]
pub enum Node {
    /// An index and what it lists.
    Index {
        /// Its descriptor, as its parent gives it.
        descriptor: Value,
        /// The index.
        index: Value,
        /// What it lists, in order.
        children: Vec<Node>,
    },
    /// An image for a platform asked for.
    Image(Box<Image>),
    /// Left as it is, with everything it refers to.
    Kept(Value),
}

/// An image: its manifest, configuration and layers.
#[derive(Debug)]
pub struct Image {
    /// Its descriptor, as its parent gives it.
    pub descriptor: Value,
    /// The manifest.
    pub manifest: Value,
    /// The configuration.
    pub config: Value,
    /// Its OCI architecture (`amd64`).
    pub architecture: String,
    /// Its layers, bottom first.
    pub layers: Vec<ImageLayer>,
}

/// A layer of an image.
#[derive(Debug)]
pub struct ImageLayer {
    /// Its descriptor.
    pub descriptor: Descriptor,
    /// Its compression.
    pub compression: Compression,
    /// The digest of its tar, as the configuration gives it.
    pub diff_id: String,
}

/// What reading the tree may still read.
struct Budget {
    documents: usize,
    bytes: u64,
}

impl Budget {
    /// Reads the JSON document `descriptor` names, within the budget.
    fn read(&mut self, layout: &Layout, descriptor: &Descriptor) -> Result<Value, Error> {
        self.documents = self.documents.checked_sub(1).ok_or_else(|| self.exceeded())?;
        self.bytes = self.bytes.checked_sub(descriptor.size()).ok_or_else(|| self.exceeded())?;
        layout.read_json(descriptor)
    }

    fn exceeded(&self) -> Error {
        Error::msg(format!(
            "an image of more than {MAX_DOCUMENTS} documents or {MAX_DOCUMENT_BYTES} bytes of them: not read further"
        ))
    }
}

/// Reads the tree of `layout`: `index.json` and the nodes it lists, images for `platforms`
/// read whole.
pub fn read(layout: &Layout, platforms: &Platforms) -> Result<(Value, Vec<Node>), Error> {
    let index = layout.index()?;
    let mut budget = Budget { documents: MAX_DOCUMENTS, bytes: MAX_DOCUMENT_BYTES };
    let children =
        listed(&index).iter().map(|d| node(layout, d, platforms, 0, &mut budget)).collect::<Result<_, _>>()?;
    Ok((index, children))
}

/// The descriptors an index lists.
fn listed(index: &Value) -> &[Value] {
    index.get("manifests").and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

fn descriptor(value: &Value) -> Result<Descriptor, Error> {
    serde_json::from_value(value.clone()).map_err(|e| Error::msg(format!("a malformed descriptor ({e}): {value}")))
}

fn node(
    layout: &Layout,
    value: &Value,
    platforms: &Platforms,
    depth: usize,
    budget: &mut Budget,
) -> Result<Node, Error> {
    let descriptor = descriptor(value)?;
    let platform = descriptor.platform().as_ref().map(|p| (p.os().to_string(), p.architecture().to_string()));
    if let Some((os, architecture)) = &platform {
        if !platforms.wants(os, architecture) {
            return Ok(Node::Kept(value.clone()));
        }
    }
    let media_type = descriptor.media_type().to_string();
    let digest = descriptor.digest();
    if INDEXES.contains(&media_type.as_str()) {
        if depth >= MAX_DEPTH {
            return Err(Error::msg(format!("{digest}: indexes nested more than {MAX_DEPTH} deep")));
        }
        let index = budget.read(layout, &descriptor)?;
        serde_json::from_value::<ImageIndex>(index.clone())
            .map_err(|e| Error::msg(format!("{digest}: not an image index: {e}")))?;
        let children =
            listed(&index).iter().map(|d| node(layout, d, platforms, depth + 1, budget)).collect::<Result<_, _>>()?;
        return Ok(Node::Index { descriptor: value.clone(), index, children });
    }
    if !MANIFESTS.contains(&media_type.as_str()) {
        return Ok(Node::Kept(value.clone()));
    }
    let manifest = budget.read(layout, &descriptor)?;
    let typed: ImageManifest = serde_json::from_value(manifest.clone())
        .map_err(|e| Error::msg(format!("{digest}: not an image manifest: {e}")))?;
    if !CONFIGS.contains(&typed.config().media_type().to_string().as_str()) {
        // An artifact (a signature, an attestation, a Helm chart): no files of a root.
        return Ok(Node::Kept(value.clone()));
    }
    let config = budget.read(layout, typed.config())?;
    let typed_config: ImageConfiguration = serde_json::from_value(config.clone())
        .map_err(|e| Error::msg(format!("{}: not an image configuration: {e}", typed.config().digest())))?;
    let (os, architecture) = (typed_config.os().to_string(), typed_config.architecture().to_string());
    // An engine picks the image by the index's word, and runs what the configuration is for:
    // were they to differ, elfsig would sign or check an image for one and leave the other.
    if let Some((index_os, index_architecture)) = &platform {
        if (index_os, index_architecture) != (&os, &architecture) {
            return Err(Error::msg(format!(
                "{digest}: listed for {index_os}/{index_architecture}, and its configuration is for {os}/{architecture}"
            )));
        }
    }
    if !platforms.wants(&os, &architecture) {
        return Ok(Node::Kept(value.clone()));
    }
    if typed_config.rootfs().diff_ids().len() != typed.layers().len() {
        return Err(Error::msg(format!(
            "{digest}: {} layers, and {} diff_ids in its configuration",
            typed.layers().len(),
            typed_config.rootfs().diff_ids().len()
        )));
    }
    let mut layers = Vec::new();
    for (layer, diff_id) in typed.layers().iter().zip(typed_config.rootfs().diff_ids()) {
        let media_type = layer.media_type().to_string();
        let compression = Compression::of(&media_type)?
            .ok_or_else(|| Error::msg(format!("{digest}: a layer of type {media_type}, which elfsig cannot read")))?;
        layers.push(ImageLayer { descriptor: layer.clone(), compression, diff_id: diff_id.clone() });
    }
    Ok(Node::Image(Box::new(Image { descriptor: value.clone(), manifest, config, architecture, layers })))
}

/// Each image of the tree, depth first.
pub fn images(nodes: &[Node]) -> Vec<&Image> {
    let mut found = Vec::new();
    for node in nodes {
        match node {
            Node::Index { children, .. } => found.extend(images(children)),
            Node::Image(image) => found.push(&**image),
            Node::Kept(_) => {}
        }
    }
    found
}

/// The re-signed layers, by old digest and architecture.
pub type NewLayers = HashMap<(String, String), NewLayer>;

/// The tree's documents rewritten for `new_layers`: each changed document is written into
/// `to` as a new blob and its descriptor above it follows. Returns the new list for the layout's
/// `index.json` (`index` with its descriptors replaced) and whether anything changed; `blobs`
/// gets every blob the new tree refers to (read from `from` where kept nodes are walked).
pub fn rebuild(
    index: &Value,
    nodes: &[Node],
    new_layers: &NewLayers,
    from: &Layout,
    to: &Layout,
    blobs: &mut BTreeSet<String>,
) -> Result<(Value, bool), Error> {
    let mut index = index.clone();
    let mut changed = false;
    for (position, node) in nodes.iter().enumerate() {
        if let Some(new) = rebuild_node(node, new_layers, from, to, blobs)? {
            *at(&mut index, &[Key::Field("manifests"), Key::Item(position)])? = new;
            changed = true;
        }
    }
    Ok((index, changed))
}

/// The node's new descriptor, if it changed.
fn rebuild_node(
    node: &Node,
    new_layers: &NewLayers,
    from: &Layout,
    to: &Layout,
    blobs: &mut BTreeSet<String>,
) -> Result<Option<Value>, Error> {
    match node {
        Node::Kept(descriptor) => {
            kept(descriptor, from, blobs, 0);
            Ok(None)
        }
        Node::Index { descriptor, index, children } => {
            let (new_index, changed) = rebuild(index, children, new_layers, from, to, blobs)?;
            if !changed {
                blobs.insert(digest_of(descriptor));
                return Ok(None);
            }
            Ok(Some(written(descriptor, &new_index, to, blobs)?))
        }
        Node::Image(image) => {
            let (mut manifest, mut config) = (image.manifest.clone(), image.config.clone());
            let mut changed = false;
            for (position, layer) in image.layers.iter().enumerate() {
                let digest = layer.descriptor.digest().to_string();
                let Some(new) = new_layers.get(&(digest.clone(), image.architecture.clone())) else {
                    blobs.insert(digest);
                    continue;
                };
                let descriptor = at(&mut manifest, &[Key::Field("layers"), Key::Item(position)])?;
                set_blob(descriptor, &new.digest, new.size)?;
                forget_partial_pulls(descriptor);
                let diff_id = at(&mut config, &[Key::Field("rootfs"), Key::Field("diff_ids"), Key::Item(position)])?;
                *diff_id = Value::from(new.diff_id.clone());
                blobs.insert(new.digest.clone());
                changed = true;
            }
            if !changed {
                blobs.insert(digest_of(&image.descriptor));
                blobs.insert(manifest.pointer("/config/digest").and_then(Value::as_str).unwrap_or_default().to_owned());
                return Ok(None);
            }
            let config_descriptor = at(&mut manifest, &[Key::Field("config")])?;
            let config_bytes = to_json(&config)?;
            let (digest, size) = to.write_blob(&config_bytes)?;
            set_blob(config_descriptor, &digest, size)?;
            blobs.insert(digest);
            Ok(Some(written(&image.descriptor, &manifest, to, blobs)?))
        }
    }
}

/// Writes `document` as a blob into `to`: `descriptor` made to name it.
fn written(descriptor: &Value, document: &Value, to: &Layout, blobs: &mut BTreeSet<String>) -> Result<Value, Error> {
    let (digest, size) = to.write_blob(&to_json(document)?)?;
    let mut descriptor = descriptor.clone();
    set_blob(&mut descriptor, &digest, size)?;
    blobs.insert(digest);
    Ok(descriptor)
}

fn to_json(document: &Value) -> Result<Vec<u8>, Error> {
    serde_json::to_vec(document).map_err(|e| Error::msg(format!("cannot write JSON: {e}")))
}

/// Makes a descriptor name the blob `digest` of `size` bytes. Embedded `data` would be the old
/// blob's, and goes.
fn set_blob(descriptor: &mut Value, digest: &str, size: u64) -> Result<(), Error> {
    let object = descriptor
        .as_object_mut()
        .ok_or_else(|| Error::msg(format!("a descriptor that is not an object: {digest}")))?;
    object.insert("digest".into(), Value::from(digest));
    object.insert("size".into(), Value::from(size));
    object.shift_remove("data");
    Ok(())
}

/// Removes from a re-signed layer's descriptor what describes the old blob's insides for
/// partial pulls (zstd:chunked's and eStargz's tables of contents): the new blob has none.
fn forget_partial_pulls(descriptor: &mut Value) {
    const ABOUT_THE_BLOB: &[&str] =
        &["io.github.containers.zstd-chunked.", "containerd.io/snapshot/stargz/", "io.containers.estargz."];
    let Some(annotations) = descriptor.get_mut("annotations").and_then(Value::as_object_mut) else {
        return;
    };
    annotations.retain(|key, _| !ABOUT_THE_BLOB.iter().any(|prefix| key.starts_with(prefix)));
    if annotations.is_empty() {
        if let Some(object) = descriptor.as_object_mut() {
            object.shift_remove("annotations");
        }
    }
}

fn digest_of(descriptor: &Value) -> String {
    descriptor.get("digest").and_then(Value::as_str).unwrap_or_default().to_owned()
}

/// Every blob a kept node refers to, as far as `from` holds them (a layout may hold only some
/// platforms' images).
fn kept(value: &Value, from: &Layout, blobs: &mut BTreeSet<String>, depth: usize) {
    let Ok(descriptor) = descriptor(value) else {
        return;
    };
    if !blobs.insert(descriptor.digest().to_string()) || depth > MAX_DEPTH || !from.has(descriptor.digest()) {
        return;
    }
    let media_type = descriptor.media_type().to_string();
    if !INDEXES.contains(&media_type.as_str())
        && !media_type.ends_with("manifest.v1+json")
        && !MANIFESTS.contains(&media_type.as_str())
    {
        return;
    }
    let Ok(document) = from.read_json(&descriptor) else {
        return;
    };
    for key in ["manifests", "layers", "blobs"] {
        for child in document.get(key).and_then(Value::as_array).map_or(&[][..], Vec::as_slice) {
            kept(child, from, blobs, depth + 1);
        }
    }
    if let Some(config) = document.get("config") {
        kept(config, from, blobs, depth + 1);
    }
}

/// A step into a JSON document.
enum Key {
    Field(&'static str),
    Item(usize),
}

/// The value at `path` in `document`; an error where it is not there.
fn at<'a>(document: &'a mut Value, path: &[Key]) -> Result<&'a mut Value, Error> {
    let mut value = document;
    for key in path {
        value = match key {
            Key::Field(name) => value.get_mut(*name),
            Key::Item(index) => value.get_mut(*index),
        }
        .ok_or_else(|| Error::msg("an image document without a field elfsig rewrites"))?;
    }
    Ok(value)
}
