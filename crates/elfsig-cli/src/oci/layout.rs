//! An OCI image layout (image-spec `image-layout.md`): `oci-layout`, `index.json`, and blobs
//! named by their digest under `blobs/ALGORITHM/`. Blobs are read checked against the digest
//! and size their descriptor gives; new ones are written under a temporary name and renamed to
//! their digest once complete, so that a blob's name always tells its contents.

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use oci_spec::image::{Descriptor, Digest, DigestAlgorithm, OciLayout};
use serde_json::Value;
use sha2::digest::DynDigest;

use crate::error::Error;
use crate::hex;
use crate::stream::HashingWriter;

/// The most bytes a JSON blob (index, manifest, configuration) may hold.
const MAX_JSON: u64 = 16 << 20;

/// An image layout on disk.
#[derive(Debug)]
pub struct Layout {
    root: PathBuf,
    /// Blobs this run wrote, removed again if it fails ([`Layout::discard_written`]).
    written: Mutex<Vec<PathBuf>>,
}

impl Layout {
    /// The layout at `root`: an error if it is not one.
    pub fn open(root: &Path) -> Result<Layout, Error> {
        let marker = root.join("oci-layout");
        if !marker.is_file() {
            return Err(Error::msg(format!(
                "{}: not an OCI image layout (it has no oci-layout file), nor an OCI archive",
                root.display()
            )));
        }
        let text = read_limited(&marker, 4096)?;
        let layout: OciLayout = serde_json::from_slice(&text)
            .map_err(|e| Error::msg(format!("{}: not an OCI image layout: {e}", marker.display())))?;
        if !layout.image_layout_version().starts_with("1.") {
            return Err(Error::msg(format!(
                "{}: image layout version {}, which elfsig does not know",
                marker.display(),
                layout.image_layout_version()
            )));
        }
        Ok(Layout { root: root.to_owned(), written: Mutex::new(Vec::new()) })
    }

    /// A new, empty layout at `root`, a directory that must not exist or be empty.
    pub fn create(root: &Path) -> Result<Layout, Error> {
        if std::fs::read_dir(root).is_ok_and(|mut entries| entries.next().is_some()) {
            return Err(Error::Usage(format!("{}: exists and is not empty", root.display())));
        }
        let blobs = root.join("blobs/sha256");
        std::fs::create_dir_all(&blobs).map_err(|e| Error::io("cannot create directory", &blobs, e))?;
        let marker = root.join("oci-layout");
        std::fs::write(&marker, br#"{"imageLayoutVersion":"1.0.0"}"#)
            .map_err(|e| Error::io("cannot write", &marker, e))?;
        Ok(Layout { root: root.to_owned(), written: Mutex::new(Vec::new()) })
    }

    /// Where the layout is.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `index.json`, checked to be an image index.
    pub fn index(&self) -> Result<Value, Error> {
        let path = self.root.join("index.json");
        let index: Value = serde_json::from_slice(&read_limited(&path, MAX_JSON)?)
            .map_err(|e| Error::msg(format!("{}: {e}", path.display())))?;
        serde_json::from_value::<oci_spec::image::ImageIndex>(index.clone())
            .map_err(|e| Error::msg(format!("{}: not an image index: {e}", path.display())))?;
        Ok(index)
    }

    /// Replaces `index.json` with `index`, atomically.
    pub fn write_index(&self, index: &Value) -> Result<(), Error> {
        let path = self.root.join("index.json");
        let bytes = serde_json::to_vec(index).map_err(|e| Error::msg(format!("index.json: {e}")))?;
        let mut temp = tempfile::NamedTempFile::new_in(&self.root)
            .map_err(|e| Error::io("cannot create a temporary file in", &self.root, e))?;
        temp.write_all(&bytes).map_err(|e| Error::io("cannot write", &path, e))?;
        published(temp.as_file()).map_err(|e| Error::io("cannot write", &path, e))?;
        temp.persist(&path).map_err(|e| Error::io("cannot replace", &path, e.error))?;
        Ok(())
    }

    /// Where the blob `digest` is (whether it is there or not).
    pub fn blob_path(&self, digest: &Digest) -> Result<PathBuf, Error> {
        let hexlen = digest.algorithm().digest_hexlen();
        let hex = digest.digest();
        if hexlen.is_none() || !hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
            return Err(Error::msg(format!("{digest}: a digest elfsig cannot check (sha256, sha384 or sha512)")));
        }
        Ok(self.root.join("blobs").join(digest.algorithm().as_ref()).join(hex))
    }

    /// Whether the blob `digest` is in the layout.
    pub fn has(&self, digest: &Digest) -> bool {
        self.blob_path(digest).is_ok_and(|path| path.is_file())
    }

    /// The JSON blob `descriptor` names, checked against its digest and size.
    pub fn read_json(&self, descriptor: &Descriptor) -> Result<Value, Error> {
        if descriptor.size() > MAX_JSON {
            return Err(Error::msg(format!("{}: {} bytes of JSON", descriptor.digest(), descriptor.size())));
        }
        let mut blob = self.open_blob(descriptor)?;
        let mut bytes = Vec::new();
        blob.read_to_end(&mut bytes).map_err(|e| Error::msg(format!("{}: {e}", descriptor.digest())))?;
        blob.finish()?;
        serde_json::from_slice(&bytes).map_err(|e| Error::msg(format!("{}: {e}", descriptor.digest())))
    }

    /// A reader of the blob `descriptor` names; [`CheckedBlob::finish`] tells whether it held
    /// what the descriptor says.
    pub fn open_blob(&self, descriptor: &Descriptor) -> Result<CheckedBlob, Error> {
        let path = self.blob_path(descriptor.digest())?;
        let file = File::open(&path).map_err(|e| Error::io("cannot open the blob", &path, e))?;
        Ok(CheckedBlob {
            file: io::BufReader::with_capacity(1 << 16, file),
            hasher: hasher(descriptor.digest().algorithm()),
            len: 0,
            digest: descriptor.digest().clone(),
            size: descriptor.size(),
        })
    }

    /// A new blob, named by its SHA-256 once [`NewBlob::commit`]ted.
    pub fn new_blob(&self) -> Result<NewBlob<'_>, Error> {
        let dir = self.root.join("blobs/sha256");
        std::fs::create_dir_all(&dir).map_err(|e| Error::io("cannot create directory", &dir, e))?;
        let temp = tempfile::Builder::new()
            .prefix(".elfsig-")
            .tempfile_in(&dir)
            .map_err(|e| Error::io("cannot create a temporary file in", &dir, e))?;
        Ok(NewBlob { layout: self, writer: Sha256Writer::new(io::BufWriter::with_capacity(1 << 16, temp)) })
    }

    /// Writes `bytes` as a blob: its digest and size.
    pub fn write_blob(&self, bytes: &[u8]) -> Result<(String, u64), Error> {
        let mut blob = self.new_blob()?;
        blob.write_all(bytes).map_err(|e| Error::io("cannot write a blob in", &self.root, e))?;
        blob.commit()
    }

    /// Copies the blob `digest` from `other` unless this layout has it already.
    pub fn copy_blob(&self, other: &Layout, digest: &Digest) -> Result<(), Error> {
        let to = self.blob_path(digest)?;
        if to.is_file() {
            return Ok(());
        }
        let from = other.blob_path(digest)?;
        let dir = to.parent().unwrap_or(&self.root);
        std::fs::create_dir_all(dir).map_err(|e| Error::io("cannot create directory", dir, e))?;
        let mut source = File::open(&from).map_err(|e| Error::io("cannot open the blob", &from, e))?;
        let mut temp = tempfile::Builder::new()
            .prefix(".elfsig-")
            .tempfile_in(dir)
            .map_err(|e| Error::io("cannot create a temporary file in", dir, e))?;
        io::copy(&mut source, temp.as_file_mut()).map_err(|e| Error::io("cannot copy the blob", &from, e))?;
        published(temp.as_file()).map_err(|e| Error::io("cannot write", &to, e))?;
        temp.persist(&to).map_err(|e| Error::io("cannot write the blob", &to, e.error))?;
        self.note_written(to);
        Ok(())
    }

    /// Removes the blobs this run wrote: what a failed run leaves is what it found.
    pub fn discard_written(&self) {
        for path in self.written.lock().unwrap_or_else(std::sync::PoisonError::into_inner).drain(..) {
            let _ = std::fs::remove_file(path);
        }
    }

    fn note_written(&self, path: PathBuf) {
        self.written.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(path);
    }
}

/// Makes a file written under a temporary name what the layout's files are once renamed: readable
/// by all, as skopeo and umoci write them (a temporary file is its owner's alone), and on disk,
/// so that no `index.json` names a blob a crash lost.
fn published(file: &File) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    file.set_permissions(std::fs::Permissions::from_mode(0o644))?;
    file.sync_all()
}

/// Reads at most `limit` bytes of `path`; more is an error.
fn read_limited(path: &Path, limit: u64) -> Result<Vec<u8>, Error> {
    let file = File::open(path).map_err(|e| Error::io("cannot open", path, e))?;
    let mut bytes = Vec::new();
    file.take(limit + 1).read_to_end(&mut bytes).map_err(|e| Error::io("cannot read", path, e))?;
    if bytes.len() as u64 > limit {
        return Err(Error::msg(format!("{}: more than {limit} bytes", path.display())));
    }
    Ok(bytes)
}

fn hasher(algorithm: &DigestAlgorithm) -> Box<dyn DynDigest + Send> {
    match algorithm {
        DigestAlgorithm::Sha384 => Box::new(sha2::Sha384::default()),
        DigestAlgorithm::Sha512 => Box::new(sha2::Sha512::default()),
        // Only these three reach here ([`Layout::blob_path`]).
        _ => Box::new(sha2::Sha256::default()),
    }
}

/// A blob being read, hashed as it goes.
pub struct CheckedBlob {
    file: io::BufReader<File>,
    hasher: Box<dyn DynDigest + Send>,
    len: u64,
    digest: Digest,
    size: u64,
}

impl std::fmt::Debug for CheckedBlob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CheckedBlob").field("digest", &self.digest).field("len", &self.len).finish_non_exhaustive()
    }
}

impl Read for CheckedBlob {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        // Past the size the descriptor gives, nothing is read: a longer blob is refused below.
        let n = self.file.read(buf)?;
        self.hasher.update(&buf[..n]);
        self.len += n as u64;
        if self.len > self.size {
            return Err(io::Error::other(format!("{}: longer than its descriptor's {} bytes", self.digest, self.size)));
        }
        Ok(n)
    }
}

impl CheckedBlob {
    /// Reads what is left and checks that the blob is the one its descriptor names.
    pub fn finish(mut self) -> Result<(), Error> {
        io::copy(&mut self, &mut io::sink()).map_err(|e| Error::msg(format!("{}: {e}", self.digest)))?;
        let found = hex::encode(&self.hasher.finalize_reset());
        if self.len != self.size || found != self.digest.digest() {
            return Err(Error::msg(format!(
                "blob {}: its contents do not match its digest and size ({} bytes, {}:{found}): the layout is damaged",
                self.digest,
                self.len,
                self.digest.algorithm()
            )));
        }
        Ok(())
    }
}

/// A writer that hashes with SHA-256 what goes through it, as OCI names blobs and layers.
pub type Sha256Writer<W> = HashingWriter<W, sha2::Sha256>;

/// What [`Sha256Writer`] wrote: the writer, its digest as OCI writes one (`sha256:…`) and its
/// length.
pub fn written<W: Write>(writer: Sha256Writer<W>) -> (W, String, u64) {
    let len = writer.len;
    let (inner, hash) = writer.finish();
    (inner, format!("sha256:{}", hex::encode(&hash)), len)
}

/// A blob being written.
#[derive(Debug)]
pub struct NewBlob<'a> {
    layout: &'a Layout,
    writer: Sha256Writer<io::BufWriter<tempfile::NamedTempFile>>,
}

impl Write for NewBlob<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.writer.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.writer.flush()
    }
}

impl NewBlob<'_> {
    /// Names the blob by its digest: its digest and size.
    pub fn commit(self) -> Result<(String, u64), Error> {
        let (buffered, digest, size) = written(self.writer);
        let dir = self.layout.root.join("blobs/sha256");
        let temp = buffered.into_inner().map_err(|e| Error::io("cannot write a blob in", &dir, e.into_error()))?;
        let path = dir.join(digest.trim_start_matches("sha256:"));
        if path.is_file() {
            return Ok((digest, size));
        }
        published(temp.as_file()).map_err(|e| Error::io("cannot write a blob in", &dir, e))?;
        temp.persist(&path).map_err(|e| Error::io("cannot write the blob", &path, e.error))?;
        self.layout.note_written(path);
        Ok((digest, size))
    }
}
