//! One layer of an image: a tar stream, plain or compressed as its media type says, whose ELF
//! files are signed or checked as a container engine will unpack them
//! ([`Dialect::Layer`]). A re-signed layer is compressed again as it was, with the settings
//! container tools use (gzip's level 6, zstd's level 3), by code pinned in Cargo.lock: the same
//! layer and key give the same blob.

use std::io::{self, Read, Write};
use std::path::Path;

use oci_spec::image::Descriptor;

use super::layout::{self, Layout, Sha256Writer};
use crate::architecture::Machines;
use crate::crypto::cert::TrustedCert;
use crate::crypto::cms::RecordSigner;
use crate::error::Error;
use crate::tar_stream::check::{self, Checked};
use crate::tar_stream::resign::{self, Grants, Resigned};
use crate::tar_stream::{Dialect, Reader};

const GZIP_LEVEL: u32 = 6;
const ZSTD_LEVEL: i32 = 3;

/// A layer's compression.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    /// A plain tar.
    None,
    /// gzip (what Docker and most registries' images use).
    Gzip,
    /// zstd.
    Zstd,
}

impl Compression {
    /// The compression of a layer of `media_type`, or `None` when it is not a layer's media
    /// type; an error for layers elfsig cannot read (encrypted ones).
    pub fn of(media_type: &str) -> Result<Option<Compression>, Error> {
        if media_type.ends_with("+encrypted") {
            return Err(Error::msg(format!("a layer of type {media_type}: decrypt the image before signing it")));
        }
        let compression = match media_type {
            "application/vnd.oci.image.layer.v1.tar"
            | "application/vnd.oci.image.layer.nondistributable.v1.tar"
            | "application/vnd.docker.image.rootfs.diff.tar" => Compression::None,
            "application/vnd.oci.image.layer.v1.tar+gzip"
            | "application/vnd.oci.image.layer.nondistributable.v1.tar+gzip"
            | "application/vnd.docker.image.rootfs.diff.tar.gzip"
            | "application/vnd.docker.image.rootfs.foreign.diff.tar.gzip" => Compression::Gzip,
            "application/vnd.oci.image.layer.v1.tar+zstd"
            | "application/vnd.oci.image.layer.nondistributable.v1.tar+zstd"
            | "application/vnd.docker.image.rootfs.diff.tar.zstd" => Compression::Zstd,
            _ => return Ok(None),
        };
        Ok(Some(compression))
    }

    fn decoder<'a>(self, compressed: impl Read + 'a) -> io::Result<Box<dyn Read + 'a>> {
        Ok(match self {
            Compression::None => Box::new(compressed),
            Compression::Gzip => Box::new(flate2::read::MultiGzDecoder::new(compressed)),
            Compression::Zstd => Box::new(zstd::stream::read::Decoder::new(compressed)?),
        })
    }

    fn encoder<W: Write>(self, out: W) -> io::Result<Encoder<W>> {
        Ok(match self {
            Compression::None => Encoder::None(out),
            Compression::Gzip => {
                Encoder::Gzip(flate2::GzBuilder::new().write(out, flate2::Compression::new(GZIP_LEVEL)))
            }
            Compression::Zstd => Encoder::Zstd(zstd::stream::write::Encoder::new(out, ZSTD_LEVEL)?),
        })
    }
}

/// A compressor, finished explicitly.
enum Encoder<W: Write> {
    None(W),
    Gzip(flate2::write::GzEncoder<W>),
    Zstd(zstd::stream::write::Encoder<'static, W>),
}

impl<W: Write> Encoder<W> {
    fn finish(self) -> io::Result<W> {
        match self {
            Encoder::None(out) => Ok(out),
            Encoder::Gzip(encoder) => encoder.finish(),
            Encoder::Zstd(encoder) => encoder.finish(),
        }
    }
}

impl<W: Write> Write for Encoder<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Encoder::None(out) => out.write(buf),
            Encoder::Gzip(encoder) => encoder.write(buf),
            Encoder::Zstd(encoder) => encoder.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Encoder::None(out) => out.flush(),
            Encoder::Gzip(encoder) => encoder.flush(),
            Encoder::Zstd(encoder) => encoder.flush(),
        }
    }
}

/// A re-signed layer's blob.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewLayer {
    /// Its digest (`sha256:…`).
    pub digest: String,
    /// Its size.
    pub size: u64,
    /// The digest of its uncompressed tar: the configuration's `diff_id`.
    pub diff_id: String,
}

/// What [`resign`] and [`check`] need to know of a layer.
#[derive(Debug)]
pub struct Layer<'a> {
    /// Its descriptor in the manifest.
    pub descriptor: &'a Descriptor,
    /// Its compression.
    pub compression: Compression,
    /// The digest of its tar, as the image's configuration gives it.
    pub diff_id: &'a str,
    /// The machines of the image's architecture.
    pub native: &'a Machines,
    /// How messages name it, and its files (`NAME:PATH`).
    pub name: &'a Path,
}

/// Signs the ELF files of `layer` (read from `from`), writing the new blob into `to`: how it
/// went, and the new blob if the layer changed. The old blob is checked against its digest on
/// the way.
pub fn resign(
    layer: &Layer<'_>,
    from: &Layout,
    to: &Layout,
    signer: &RecordSigner,
    grants: &Grants,
) -> Result<(Resigned, Option<NewLayer>), Error> {
    let stream = "layer";
    let failed = |e: &dyn std::fmt::Display| Error::msg(e.to_string());
    let mut resigned = Resigned::default();
    let mut blob = from.open_blob(layer.descriptor)?;
    let holds = (|| {
        let mut tar = DiffId::new(layer.compression.decoder(&mut blob).map_err(|e| failed(&e))?);
        let holds = resign::holds_elf_to_sign(Reader::new(&mut tar, Dialect::Layer), stream, layer.name, layer.native)?;
        tar.check(layer.diff_id)?;
        Ok(holds)
    })();
    let holds = blob.finish().and(holds)?;
    if !holds {
        return Ok((resigned, None));
    }
    let mut blob = from.open_blob(layer.descriptor)?;
    let new_blob = to.new_blob()?;
    let mut tar_out = Sha256Writer::new(layer.compression.encoder(new_blob).map_err(|e| failed(&e))?);
    let changes = {
        let decoder = layer.compression.decoder(&mut blob).map_err(|e| failed(&e))?;
        let reader = Reader::new(decoder, Dialect::Layer);
        resign::rewrite(reader, &mut tar_out, stream, layer.name, layer.native, signer, grants, &mut resigned)?
    };
    blob.finish()?;
    let (encoder, diff_id, _) = layout::written(tar_out);
    let new_blob = encoder.finish().map_err(|e| failed(&e))?;
    if changes.md5.is_empty() {
        // Signed so already: the layer as it was (the new blob, never named, goes).
        return Ok((resigned, None));
    }
    resigned.changed = true;
    let (digest, size) = new_blob.commit()?;
    Ok((resigned, Some(NewLayer { digest, size, diff_id })))
}

/// Checks the ELF files of `layer` (read from `layout`) against `trusted`; the blob is checked
/// against its digest too.
pub fn check(layer: &Layer<'_>, layout: &Layout, trusted: &[TrustedCert]) -> Result<Checked, Error> {
    let mut blob = layout.open_blob(layer.descriptor)?;
    let checked = (|| {
        let decoder = layer.compression.decoder(&mut blob).map_err(|e| Error::msg(e.to_string()))?;
        let mut tar = DiffId::new(decoder);
        let checked = check::check(Reader::new(&mut tar, Dialect::Layer), "layer", layer.name, layer.native, trusted)?;
        tar.check(layer.diff_id)?;
        Ok(checked)
    })();
    // A blob that is not what its digest says is the first thing wrong: said before what reading
    // it found.
    blob.finish().and(checked)
}

/// A layer's tar, hashed as it is read: what an engine checks against the configuration's
/// `diff_id` when it unpacks the layer, so that elfsig has read the bytes the engine unpacks.
struct DiffId<R> {
    inner: R,
    tar: Sha256Writer<io::Sink>,
}

impl<R: Read> DiffId<R> {
    fn new(inner: R) -> Self {
        DiffId { inner, tar: Sha256Writer::new(io::sink()) }
    }

    /// Reads the rest of the tar (what follows its end too) and checks its digest.
    fn check(mut self, diff_id: &str) -> Result<(), Error> {
        io::copy(&mut self, &mut io::sink()).map_err(|e| Error::msg(e.to_string()))?;
        let (_, digest, _) = layout::written(self.tar);
        if digest != diff_id {
            return Err(Error::msg(format!(
                "its tar is {digest}, and the configuration's diff_id {diff_id}: the image is damaged"
            )));
        }
        Ok(())
    }
}

impl<R: Read> Read for DiffId<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.tar.write_all(&buf[..n])?;
        Ok(n)
    }
}
