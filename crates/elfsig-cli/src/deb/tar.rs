//! The tar stream inside a Debian package's `data.tar` and `control.tar`, as dpkg-deb writes it
//! (GNU tar's format) and as POSIX pax writes it: 512-byte header blocks, each entry's bytes
//! padded to a block. Read entry by entry, with the blocks that precede an entry and describe
//! it (GNU long names, pax records) kept as they are, so that an entry is written back byte for
//! byte, or with new contents and only its size and checksum changed.

use std::io::{self, Read, Write};

/// A tar block.
pub const BLOCK: usize = 512;
/// The most bytes a describing entry (long name, pax records) may hold.
const MAX_DESCRIPTION: u64 = 1 << 20;

// Header fields: offset and width.
const NAME: (usize, usize) = (0, 100);
const SIZE: (usize, usize) = (124, 12);
const CHECKSUM: (usize, usize) = (148, 8);
const TYPEFLAG: usize = 156;
const LINKNAME: (usize, usize) = (157, 100);
const MAGIC: (usize, usize) = (257, 6);
const PREFIX: (usize, usize) = (345, 155);

/// Why a tar stream could not be read.
#[derive(Debug)]
pub enum TarError {
    /// The stream failed (or its decompression did).
    Io(io::Error),
    /// The stream is not a well-formed tar archive.
    Malformed(String),
}

impl From<io::Error> for TarError {
    fn from(e: io::Error) -> Self {
        TarError::Io(e)
    }
}

impl std::fmt::Display for TarError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TarError::Io(e) => write!(f, "{e}"),
            TarError::Malformed(why) => f.write_str(why),
        }
    }
}

fn malformed(why: impl Into<String>) -> TarError {
    TarError::Malformed(why.into())
}

/// What kind of file an entry is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A regular file (types `0`, NUL and `7`), whose bytes follow.
    Regular,
    /// A GNU sparse file, which dpkg cannot unpack either.
    Sparse,
    /// Another name for a file earlier in the archive (type `1`).
    HardLink,
    /// Anything else: directories, links, devices, FIFOs.
    Other,
}

/// An entry's header block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header(pub [u8; BLOCK]);

impl Header {
    /// The type of entry.
    pub fn kind(&self) -> Kind {
        match self.0[TYPEFLAG] {
            b'0' | 0 | b'7' => Kind::Regular,
            b'S' => Kind::Sparse,
            b'1' => Kind::HardLink,
            _ => Kind::Other,
        }
    }

    /// Whether the block is all zeros: the end of the archive.
    fn is_zero(&self) -> bool {
        self.0.iter().all(|&b| b == 0)
    }

    /// The size field: octal digits, or GNU's base-256 for large sizes.
    fn size(&self) -> Result<u64, TarError> {
        let field = &self.0[SIZE.0..SIZE.0 + SIZE.1];
        if field[0] & 0x80 != 0 {
            let mut size: u64 = u64::from(field[0] & 0x7f);
            for &b in &field[1..] {
                size = size
                    .checked_mul(256)
                    .and_then(|s| s.checked_add(u64::from(b)))
                    .ok_or_else(|| malformed("an entry's size does not fit in 64 bits"))?;
            }
            return Ok(size);
        }
        octal(field).ok_or_else(|| malformed(format!("an entry's size field is not octal: {field:?}")))
    }

    /// Sets the size field, as GNU tar writes it (11 octal digits and NUL; base-256 beyond),
    /// and the checksum.
    pub fn set_size(&mut self, size: u64) {
        let field = &mut self.0[SIZE.0..SIZE.0 + SIZE.1];
        if size < 1 << 33 {
            field.copy_from_slice(format!("{size:011o}\0").as_bytes());
        } else {
            field[0] = 0x80;
            for (i, b) in field[1..].iter_mut().rev().enumerate() {
                *b = size.checked_shr(8 * i as u32).unwrap_or(0).to_le_bytes()[0];
            }
        }
        let sum = self.checksum();
        self.0[CHECKSUM.0..CHECKSUM.0 + CHECKSUM.1].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
    }

    /// The checksum of the block with its checksum field taken as spaces.
    fn checksum(&self) -> u32 {
        self.0
            .iter()
            .enumerate()
            .map(|(i, &b)| if (CHECKSUM.0..CHECKSUM.0 + CHECKSUM.1).contains(&i) { 32 } else { u32::from(b) })
            .sum()
    }

    /// Whether the checksum field holds the checksum (the sum of unsigned bytes, or of signed
    /// bytes, as old tars wrote it).
    fn checksum_ok(&self) -> bool {
        let Some(stored) = octal(&self.0[CHECKSUM.0..CHECKSUM.0 + CHECKSUM.1]) else {
            return false;
        };
        let signed: i64 = self
            .0
            .iter()
            .enumerate()
            .map(|(i, &b)| if (CHECKSUM.0..CHECKSUM.0 + CHECKSUM.1).contains(&i) { 32 } else { i64::from(b as i8) })
            .sum();
        stored == u64::from(self.checksum()) || i64::try_from(stored).is_ok_and(|s| s == signed)
    }

    /// The name in the header: ustar's prefix and name, or the name alone (GNU tar keeps other
    /// fields where ustar has its prefix).
    fn name(&self) -> Vec<u8> {
        let name = until_nul(&self.0[NAME.0..NAME.0 + NAME.1]);
        if &self.0[MAGIC.0..MAGIC.0 + MAGIC.1] == b"ustar\0" {
            let prefix = until_nul(&self.0[PREFIX.0..PREFIX.0 + PREFIX.1]);
            if !prefix.is_empty() {
                return [prefix, b"/", name].concat();
            }
        }
        name.to_vec()
    }
}

/// `path` without its leading `./` or `/`.
fn relative(path: &[u8]) -> &[u8] {
    let mut path = path.strip_prefix(b".").filter(|p| p.starts_with(b"/")).unwrap_or(path);
    while let Some(rest) = path.strip_prefix(b"/") {
        path = rest;
    }
    path
}

fn until_nul(field: &[u8]) -> &[u8] {
    field.split(|&b| b == 0).next().unwrap_or_default()
}

/// An octal field: digits, with spaces or NULs around them.
fn octal(field: &[u8]) -> Option<u64> {
    let text = std::str::from_utf8(field).ok()?.trim_matches(|c| c == ' ' || c == '\0');
    if text.is_empty() {
        return Some(0);
    }
    u64::from_str_radix(text, 8).ok()
}

/// An entry: the blocks that describe it, its header, its name and how many bytes follow.
#[derive(Clone, Debug)]
pub struct Entry {
    /// GNU long-name and pax entries before the header, as read.
    pub described_by: Vec<u8>,
    /// The header.
    pub header: Header,
    /// Its path, as the archive names it (`./usr/bin/ls`), from a long name or pax record
    /// where there is one.
    pub path: Vec<u8>,
    /// How many bytes of contents follow the header (then padding to a block).
    pub size: u64,
    /// Whether a pax record gives the size, which then cannot change without rewriting it.
    pub size_in_pax: bool,
    /// What a link names (a hard link: the file's first name in the archive).
    pub link: Vec<u8>,
}

impl Entry {
    /// The path without its leading `./` or `/`: how `md5sums` names it.
    pub fn relative_path(&self) -> &[u8] {
        relative(&self.path)
    }

    /// What a hard link names, as [`Entry::relative_path`] gives it.
    pub fn relative_link(&self) -> &[u8] {
        relative(&self.link)
    }

    /// The path for messages.
    pub fn display(&self) -> String {
        String::from_utf8_lossy(&self.path).into_owned()
    }
}

/// Reads a tar stream entry by entry.
#[derive(Debug)]
pub struct Reader<R> {
    inner: R,
    /// Bytes of the current entry's contents not read yet.
    left: u64,
    /// Then its padding.
    padding: u64,
}

impl<R: Read> Reader<R> {
    /// A reader of the stream `inner`.
    pub fn new(inner: R) -> Self {
        Reader { inner, left: 0, padding: 0 }
    }

    /// The next entry, or `None` at the end of the archive (the first zero block, which is
    /// then in `end`, or the end of the stream). Skips what is left of the previous entry's
    /// contents.
    pub fn next_entry(&mut self, end: &mut Vec<u8>) -> Result<Option<Entry>, TarError> {
        self.skip_rest()?;
        let mut described_by = Vec::new();
        let (mut long_name, mut pax_path, mut pax_size) = (None, None, None);
        let (mut long_link, mut pax_link) = (None, None);
        loop {
            let mut block = [0u8; BLOCK];
            if !read_block(&mut self.inner, &mut block)? {
                if described_by.is_empty() {
                    return Ok(None);
                }
                return Err(malformed("the archive ends after a long name or pax record, before its entry"));
            }
            let header = Header(block);
            if header.is_zero() {
                if !described_by.is_empty() {
                    return Err(malformed("the archive ends after a long name or pax record, before its entry"));
                }
                end.extend_from_slice(&header.0);
                return Ok(None);
            }
            if !header.checksum_ok() {
                return Err(malformed(format!(
                    "bad header checksum (entry {:?})",
                    String::from_utf8_lossy(&header.name())
                )));
            }
            let size = header.size()?;
            let typeflag = header.0[TYPEFLAG];
            // GNU long name ('L') and link name ('K'), pax extended ('x') and global ('g')
            // records describe what follows.
            if matches!(typeflag, b'L' | b'K' | b'x' | b'g') {
                if size > MAX_DESCRIPTION {
                    return Err(malformed(format!("a long name or pax record of {size} bytes")));
                }
                let mut data = vec![0u8; padded(size) as usize];
                self.inner.read_exact(&mut data).map_err(truncated)?;
                described_by.extend_from_slice(&header.0);
                described_by.extend_from_slice(&data);
                let data = &data[..size as usize];
                match typeflag {
                    b'L' => long_name = Some(until_nul(data).to_vec()),
                    b'K' => long_link = Some(until_nul(data).to_vec()),
                    b'x' => {
                        for (key, value) in pax_records(data)? {
                            match key {
                                b"path" => pax_path = Some(value.to_vec()),
                                b"linkpath" => pax_link = Some(value.to_vec()),
                                b"size" => {
                                    pax_size = Some(
                                        std::str::from_utf8(value)
                                            .ok()
                                            .and_then(|v| v.parse::<u64>().ok())
                                            .ok_or_else(|| malformed("a pax size record is not a number"))?,
                                    );
                                }
                                _ => {}
                            }
                        }
                    }
                    _ => {}
                }
                continue;
            }
            let size = pax_size.unwrap_or(size);
            let path = pax_path.or(long_name).unwrap_or_else(|| header.name());
            let link = pax_link
                .or(long_link)
                .unwrap_or_else(|| until_nul(&header.0[LINKNAME.0..LINKNAME.0 + LINKNAME.1]).to_vec());
            (self.left, self.padding) = (size, padded(size) - size);
            return Ok(Some(Entry { described_by, header, path, size, size_in_pax: pax_size.is_some(), link }));
        }
    }

    /// What is left of the current entry's contents; a stream that ends before them is an
    /// error. The next [`Reader::next_entry`] skips what is not read, and the padding.
    pub fn contents(&mut self) -> Contents<'_, R> {
        Contents(self)
    }

    /// Skips what is left of the current entry.
    fn skip_rest(&mut self) -> Result<(), TarError> {
        io::copy(&mut self.contents(), &mut io::sink()).map_err(truncated)?;
        let padding = std::mem::take(&mut self.padding);
        let skipped = io::copy(&mut (&mut self.inner).take(padding), &mut io::sink())?;
        if skipped != padding {
            return Err(truncated(io::ErrorKind::UnexpectedEof.into()));
        }
        Ok(())
    }

    /// Everything after the end of the archive (more zero blocks: tar pads to its record size).
    pub fn rest(&mut self, out: &mut impl Write) -> io::Result<u64> {
        io::copy(&mut self.inner, out)
    }
}

/// The current entry's contents: a reader that fails when the stream ends early instead of
/// ending quietly.
#[derive(Debug)]
pub struct Contents<'r, R>(&'r mut Reader<R>);

impl<R: Read> Read for Contents<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let reader = &mut *self.0;
        let want = usize::try_from(reader.left).unwrap_or(usize::MAX).min(buf.len());
        if want == 0 {
            return Ok(0);
        }
        let n = reader.inner.read(&mut buf[..want])?;
        if n == 0 {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the archive ends inside an entry"));
        }
        reader.left -= n as u64;
        Ok(n)
    }
}

fn truncated(e: io::Error) -> TarError {
    if e.kind() == io::ErrorKind::UnexpectedEof {
        malformed("the archive ends inside an entry")
    } else {
        TarError::Io(e)
    }
}

/// Reads one block; false at a clean end of the stream.
fn read_block(inner: &mut impl Read, block: &mut [u8; BLOCK]) -> Result<bool, TarError> {
    let mut filled = 0;
    while filled < BLOCK {
        match inner.read(&mut block[filled..]) {
            Ok(0) if filled == 0 => return Ok(false),
            Ok(0) => return Err(malformed("the archive ends inside a header")),
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(true)
}

/// `size` rounded up to whole blocks.
pub fn padded(size: u64) -> u64 {
    size.div_ceil(BLOCK as u64) * BLOCK as u64
}

/// The records of a pax extended header: `LENGTH KEY=VALUE\n`, LENGTH counting the whole record.
/// A pax record: its key and value.
type PaxRecord<'a> = (&'a [u8], &'a [u8]);

fn pax_records(mut data: &[u8]) -> Result<Vec<PaxRecord<'_>>, TarError> {
    let bad = || malformed("a pax record is malformed");
    let mut records = Vec::new();
    while !data.is_empty() && data[0] != 0 {
        let space = data.iter().position(|&b| b == b' ').ok_or_else(bad)?;
        let len: usize = std::str::from_utf8(&data[..space]).ok().and_then(|l| l.parse().ok()).ok_or_else(bad)?;
        let record = data.get(space + 1..len).filter(|r| r.ends_with(b"\n")).ok_or_else(bad)?;
        let record = &record[..record.len() - 1];
        let equals = record.iter().position(|&b| b == b'=').ok_or_else(bad)?;
        records.push((&record[..equals], &record[equals + 1..]));
        data = &data[len..];
    }
    Ok(records)
}

/// Writes an entry back: what describes it, its header, `contents` (exactly the header's size)
/// and the padding.
pub fn write_entry(out: &mut impl Write, entry: &Entry, contents: &mut impl Read) -> io::Result<()> {
    out.write_all(&entry.described_by)?;
    out.write_all(&entry.header.0)?;
    let copied = io::copy(contents, out)?;
    if copied != entry.size {
        return Err(io::Error::other(format!(
            "{}: {copied} bytes of contents, {} expected",
            entry.display(),
            entry.size
        )));
    }
    out.write_all(&vec![0u8; (padded(entry.size) - entry.size) as usize])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(name: &str, typeflag: u8, size: u64) -> Header {
        let mut block = [0u8; BLOCK];
        block[..name.len()].copy_from_slice(name.as_bytes());
        block[100..108].copy_from_slice(b"0000644\0");
        block[TYPEFLAG] = typeflag;
        block[257..265].copy_from_slice(b"ustar  \0");
        let mut header = Header(block);
        header.set_size(size);
        header
    }

    fn archive(entries: &[(&str, u8, &[u8])]) -> Vec<u8> {
        let mut out = Vec::new();
        for (name, typeflag, contents) in entries {
            out.extend_from_slice(&header(name, *typeflag, contents.len() as u64).0);
            out.extend_from_slice(contents);
            out.resize(padded(out.len() as u64) as usize, 0);
        }
        out.extend_from_slice(&[0u8; 2 * BLOCK]);
        out
    }

    #[test]
    fn entries_read_and_write_back_byte_for_byte() {
        let long = "./usr/".to_owned() + &"x".repeat(150);
        let mut long_entry = long.clone().into_bytes();
        long_entry.push(0);
        let bytes = archive(&[
            ("./", b'5', b""),
            ("././@LongLink", b'L', &long_entry),
            ("./usr/xxx", b'0', b"contents"),
            ("./empty", b'0', b""),
        ]);
        let mut reader = Reader::new(&bytes[..]);
        let mut out = Vec::new();
        let mut end = Vec::new();
        let mut paths = Vec::new();
        while let Some(entry) = reader.next_entry(&mut end).unwrap() {
            paths.push(entry.display());
            write_entry(&mut out, &entry, &mut reader.contents()).unwrap();
        }
        out.extend_from_slice(&end);
        reader.rest(&mut out).unwrap();
        assert_eq!(paths, ["./", long.as_str(), "./empty"]);
        assert_eq!(out, bytes);
    }

    #[test]
    fn a_new_size_gets_a_new_checksum() {
        let mut header = header("./bin/x", b'0', 5);
        assert!(header.checksum_ok());
        header.set_size(123_456);
        assert!(header.checksum_ok());
        assert_eq!(header.size().unwrap(), 123_456);
        header.set_size(1 << 40);
        assert!(header.checksum_ok());
        assert_eq!(header.size().unwrap(), 1 << 40);
    }

    #[test]
    fn pax_path_and_size_are_read() {
        let records = b"21 path=./usr/bin/ls\n11 size=10\n";
        let mut bytes = archive(&[("./PaxHeaders/ls", b'x', records), ("./ignored", b'0', b"0123456789")]);
        // The header's own size says 10 too; the pax record wins either way.
        let mut reader = Reader::new(&bytes[..]);
        let entry = reader.next_entry(&mut Vec::new()).unwrap().unwrap();
        assert_eq!(entry.display(), "./usr/bin/ls");
        assert_eq!(entry.relative_path(), b"usr/bin/ls");
        assert!(entry.size_in_pax && entry.size == 10);
        // A corrupted header is refused.
        bytes[BLOCK * 2 + 10] ^= 1;
        let mut reader = Reader::new(&bytes[..]);
        assert!(matches!(reader.next_entry(&mut Vec::new()), Err(TarError::Malformed(_))));
    }

    #[test]
    fn truncated_archives_are_errors() {
        let bytes = archive(&[("./a", b'0', &[7u8; 1000])]);
        for cut in [100, BLOCK, BLOCK + 10] {
            let mut reader = Reader::new(&bytes[..cut]);
            let result = reader.next_entry(&mut Vec::new()).and_then(|entry| match entry {
                Some(_) => {
                    let mut sink = Vec::new();
                    io::copy(&mut reader.contents(), &mut sink).map_err(truncated)?;
                    Ok(())
                }
                None => Ok(()),
            });
            assert!(result.is_err(), "cut at {cut}");
        }
    }
}
