//! The compressions a package's members come in, named by the member's suffix
//! (`data.tar.xz`): dpkg-deb's xz (its default), zstd and gzip, and none. A member is written
//! back in its own compression, with settings pinned here, and the compressors' code pinned by
//! Cargo.lock (built from source, not the system's libraries): the same input and key give the
//! same package, byte for byte, on any machine.

use std::io::{self, Read, Write};

/// xz's preset: dpkg-deb's default.
const XZ_PRESET: u32 = 6;
/// zstd's level: what distributions that ship zstd packages use (Ubuntu: 19).
const ZSTD_LEVEL: i32 = 19;
/// gzip's level: dpkg-deb's default.
const GZIP_LEVEL: u32 = 9;
/// The most memory xz may take to decompress: what `xz -9` needs is 65 MiB; a stream that asks
/// for more is refused rather than let take the machine's memory. (zstd's decoder refuses
/// windows over 128 MiB by itself.)
const XZ_MEMORY: u64 = 256 << 20;

/// A member's compression.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    /// `.tar`.
    None,
    /// `.tar.gz`.
    Gzip,
    /// `.tar.xz`.
    Xz,
    /// `.tar.zst`.
    Zstd,
}

impl Compression {
    /// The compression of the member `name` whose uncompressed name is `stem` (`data.tar`);
    /// `None` when the member is not that, an error when its compression is one elfsig does not
    /// write (bzip2, lzma: dpkg-deb has not made them for years).
    pub fn of(name: &str, stem: &str) -> Result<Option<Compression>, String> {
        let Some(suffix) = name.strip_prefix(stem) else {
            return Ok(None);
        };
        Ok(Some(match suffix {
            "" => Compression::None,
            ".gz" => Compression::Gzip,
            ".xz" => Compression::Xz,
            ".zst" => Compression::Zstd,
            other => {
                return Err(format!("{stem}{other}: a compression elfsig does not handle (xz, zstd, gzip or none)"));
            }
        }))
    }

    /// A reader of the uncompressed bytes of `compressed`.
    pub fn decoder<'a>(self, compressed: &'a [u8]) -> io::Result<Box<dyn Read + 'a>> {
        Ok(match self {
            Compression::None => Box::new(compressed),
            Compression::Gzip => Box::new(flate2::read::MultiGzDecoder::new(compressed)),
            Compression::Xz => {
                let stream = liblzma::stream::Stream::new_stream_decoder(XZ_MEMORY, liblzma::stream::CONCATENATED)
                    .map_err(io::Error::other)?;
                Box::new(liblzma::read::XzDecoder::new_stream(compressed, stream))
            }
            Compression::Zstd => Box::new(zstd::stream::read::Decoder::with_buffer(compressed)?),
        })
    }

    /// A writer that compresses into a buffer; [`Encoder::finish`] returns it.
    pub fn encoder(self) -> io::Result<Encoder> {
        let out = Vec::new();
        Ok(match self {
            Compression::None => Encoder::None(out),
            Compression::Gzip => {
                Encoder::Gzip(flate2::write::GzEncoder::new(out, flate2::Compression::new(GZIP_LEVEL)))
            }
            Compression::Xz => Encoder::Xz(liblzma::write::XzEncoder::new(out, XZ_PRESET)),
            Compression::Zstd => {
                let mut encoder = zstd::stream::write::Encoder::new(out, ZSTD_LEVEL)?;
                encoder.include_checksum(true)?;
                Encoder::Zstd(encoder)
            }
        })
    }
}

/// A compressing writer.
pub enum Encoder {
    /// No compression.
    None(Vec<u8>),
    /// gzip.
    Gzip(flate2::write::GzEncoder<Vec<u8>>),
    /// xz.
    Xz(liblzma::write::XzEncoder<Vec<u8>>),
    /// zstd.
    Zstd(zstd::stream::write::Encoder<'static, Vec<u8>>),
}

impl std::fmt::Debug for Encoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Encoder")
    }
}

impl Encoder {
    /// Ends the stream; returns the compressed bytes.
    pub fn finish(self) -> io::Result<Vec<u8>> {
        match self {
            Encoder::None(out) => Ok(out),
            Encoder::Gzip(encoder) => encoder.finish(),
            Encoder::Xz(encoder) => encoder.finish(),
            Encoder::Zstd(encoder) => encoder.finish(),
        }
    }
}

impl Write for Encoder {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Encoder::None(out) => out.write(buf),
            Encoder::Gzip(encoder) => encoder.write(buf),
            Encoder::Xz(encoder) => encoder.write(buf),
            Encoder::Zstd(encoder) => encoder.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Encoder::None(out) => out.flush(),
            Encoder::Gzip(encoder) => encoder.flush(),
            Encoder::Xz(encoder) => encoder.flush(),
            Encoder::Zstd(encoder) => encoder.flush(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_compression_round_trips_and_is_deterministic() {
        let data: Vec<u8> = (0..200_000u32).flat_map(|i| (i % 251).to_le_bytes()).collect();
        for compression in [Compression::None, Compression::Gzip, Compression::Xz, Compression::Zstd] {
            let compress = || {
                let mut encoder = compression.encoder().unwrap();
                encoder.write_all(&data).unwrap();
                encoder.finish().unwrap()
            };
            let compressed = compress();
            assert_eq!(compressed, compress(), "{compression:?} is deterministic");
            let mut back = Vec::new();
            compression.decoder(&compressed).unwrap().read_to_end(&mut back).unwrap();
            assert!(back == data, "{compression:?} round-trips");
        }
    }

    #[test]
    fn members_are_named_by_their_compression() {
        assert_eq!(Compression::of("data.tar.xz", "data.tar"), Ok(Some(Compression::Xz)));
        assert_eq!(Compression::of("control.tar", "control.tar"), Ok(Some(Compression::None)));
        assert_eq!(Compression::of("control.tar.zst", "data.tar"), Ok(None));
        assert!(Compression::of("data.tar.bz2", "data.tar").unwrap_err().contains("does not handle"));
    }
}
