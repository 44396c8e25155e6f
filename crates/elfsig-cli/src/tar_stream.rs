//! A tar stream, read as the program that unpacks it reads it, and written back byte for byte:
//! 512-byte header blocks, a regular file's bytes padded to a block, the entries that describe
//! the next one (GNU long names; pax extended headers in a container image's layers) before it.
//! What that program would unpack differently, or not at all, is refused rather than guessed
//! ([`Dialect`]), as are contents on entries that have none (a directory whose size would hide
//! an entry from one reader and not the other).
//!
//! The ELF files in a stream are found, signed and checked in [`files`], [`resign`] and
//! [`check`]: the same for a Debian package's `data.tar` and an image's layer.

pub mod check;
pub mod files;
pub mod pax;
pub mod resign;

use std::io::{self, Read, Write};

/// A tar block.
pub const BLOCK: usize = 512;
/// The most bytes a long name or link name may hold (Linux's PATH_MAX).
const MAX_LONG_NAME: u64 = 4096;

// Header fields: offset and width.
const NAME: (usize, usize) = (0, 100);
const SIZE: (usize, usize) = (124, 12);
const CHECKSUM: (usize, usize) = (148, 8);
const TYPEFLAG: usize = 156;
const LINKNAME: (usize, usize) = (157, 100);
const MAGIC: (usize, usize) = (257, 6);
const PREFIX: (usize, usize) = (345, 155);
/// The most an ELF file may hold: each is copied out of the stream, so what elfsig copies is
/// bounded. (Other files, read through only, may be any size.)
pub const MAX_FILE: u64 = 4 << 30;

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

/// Whose reading of a tar stream elfsig follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    /// dpkg's (`lib/dpkg/tarfn.c`): ustar and GNU's long names, nothing else.
    Dpkg,
    /// A container image layer's, as containers/storage and umoci read it with Go's
    /// `archive/tar`: pax extended headers too (their `path`, `linkpath` and `size` records apply
    /// to the entry that follows; the rest, extended attributes among them, are kept as they
    /// are), pax global headers (which nothing unpacks) and contiguous files (type `7`). Sparse
    /// files are refused: what they unpack to is not the bytes that follow their header.
    Layer,
}

/// What kind of file an entry is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A regular file (type `0`, `7` in a layer, or NUL with a name not ending in `/`), whose
    /// bytes follow.
    Regular,
    /// Another name for a file earlier in the archive (type `1`).
    HardLink,
    /// A directory, symbolic link, device or FIFO: nothing follows.
    Other,
    /// A pax global header: records for readers that nothing unpacks, copied as they are.
    Global,
}

/// An entry's header block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header(pub [u8; BLOCK]);

impl Header {
    /// The type of entry named `path` (its name once long names and pax records apply), as
    /// `dialect` tells it; an error for the types its reader does not unpack.
    fn kind(&self, path: &[u8], dialect: Dialect) -> Result<Kind, TarError> {
        match (self.0[TYPEFLAG], dialect) {
            // dpkg takes a name ending in `/` for a directory whatever the type; Go's reader
            // only with the old NUL type. Both look at the whole name, a long one too: the
            // header's own field could end otherwise and hide a directory's contents.
            (b'0', Dialect::Dpkg) | (0, _) if path.ends_with(b"/") => Ok(Kind::Other),
            (b'0' | 0, _) | (b'7', Dialect::Layer) => Ok(Kind::Regular),
            (b'1', _) => Ok(Kind::HardLink),
            (b'2'..=b'6', _) => Ok(Kind::Other),
            (b'g', Dialect::Layer) => Ok(Kind::Global),
            (other, _) => Err(malformed(format!(
                "{}: an entry of type {:?}, which {} does not unpack",
                String::from_utf8_lossy(path),
                char::from(other),
                dialect.reader()
            ))),
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
        if self.is_ustar() {
            let prefix = until_nul(&self.0[PREFIX.0..PREFIX.0 + PREFIX.1]);
            if !prefix.is_empty() {
                return [prefix, b"/", name].concat();
            }
        }
        name.to_vec()
    }
}

impl Dialect {
    /// The program whose reading this is, for messages.
    fn reader(self) -> &'static str {
        match self {
            Dialect::Dpkg => "dpkg",
            Dialect::Layer => "a container engine",
        }
    }
}

impl Header {
    /// Whether the header is POSIX ustar's (pax's too), whose prefix field extends the name.
    fn is_ustar(&self) -> bool {
        &self.0[MAGIC.0..MAGIC.0 + MAGIC.1] == b"ustar\0"
    }

    /// Whether the header is star's: ustar's magic and `tar` at its end, where Go's reader
    /// takes a shorter prefix than other readers.
    fn is_star(&self) -> bool {
        self.is_ustar() && &self.0[508..512] == b"tar\0"
    }
}

/// `path` relative to the root, as the file it names is installed: without a leading `./` or
/// `/`, `.` components and repeated slashes; `None` if it climbs (`..`), which would put the
/// file elsewhere than its name says.
pub fn relative(path: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(path.len());
    for part in path.split(|&b| b == b'/').filter(|p| !p.is_empty() && *p != b".") {
        if part == b".." {
            return None;
        }
        if !out.is_empty() {
            out.push(b'/');
        }
        out.extend_from_slice(part);
    }
    Some(out)
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
    /// GNU long-name and long-link entries and pax extended headers before the header, as read.
    pub described_by: Vec<u8>,
    /// Where in `described_by` a pax extended header that sets the entry's size is: its size
    /// changes there when the contents do.
    pax_size: Option<std::ops::Range<usize>>,
    /// The header.
    pub header: Header,
    /// Its path, as the archive names it (`./usr/bin/ls`), from a long name where there is one.
    pub path: Vec<u8>,
    /// Its kind.
    pub kind: Kind,
    /// How many bytes of contents follow the header (then padding to a block).
    pub size: u64,
    /// What a link names (a hard link: the file's first name in the archive).
    pub link: Vec<u8>,
    /// The path as [`relative`] gives it.
    relative_path: Vec<u8>,
    /// A hard link's target as [`relative`] gives it.
    relative_link: Vec<u8>,
}

impl Entry {
    /// Gives the entry contents of `size` bytes: its header's size field and checksum, and a
    /// pax record of its size if it has one.
    pub fn set_size(&mut self, size: u64) -> Result<(), TarError> {
        if let Some(range) = self.pax_size.take() {
            let old = &self.described_by[range.clone()];
            let (head, data) = old.split_at(BLOCK.min(old.len()));
            let mut header = Header(head.try_into().map_err(|_| malformed("a pax header cut short"))?);
            let len = usize::try_from(header.size()?).unwrap_or(usize::MAX).min(data.len());
            let records = pax::with_size(&data[..len], size)?;
            header.set_size(records.len() as u64);
            let mut new = header.0.to_vec();
            new.extend_from_slice(&records);
            new.resize(BLOCK + padded(records.len() as u64)? as usize, 0);
            let start = range.start;
            self.described_by.splice(range, new.iter().copied());
            self.pax_size = Some(start..start + new.len());
        }
        self.header.set_size(size);
        self.size = size;
        Ok(())
    }

    /// The path relative to the root (see [`relative`]): how `md5sums` names it.
    pub fn relative_path(&self) -> &[u8] {
        &self.relative_path
    }

    /// What a hard link names, as [`Entry::relative_path`] gives it.
    pub fn relative_link(&self) -> &[u8] {
        &self.relative_link
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
    dialect: Dialect,
    /// Bytes of the current entry's contents not read yet.
    left: u64,
    /// Then its padding.
    padding: u64,
}

impl<R: Read> Reader<R> {
    /// A reader of the stream `inner`, as `dialect`'s program reads it.
    pub fn new(inner: R, dialect: Dialect) -> Self {
        Reader { inner, dialect, left: 0, padding: 0 }
    }

    /// Whose reading this is.
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// The next entry, or `None` at the end of the archive (the first zero block, which is
    /// then in `end`, or the end of the stream). Skips what is left of the previous entry's
    /// contents.
    pub fn next_entry(&mut self, end: &mut Vec<u8>) -> Result<Option<Entry>, TarError> {
        self.skip_rest()?;
        let mut described_by = Vec::new();
        let (mut long_name, mut long_link, mut pax) = (None, None, None::<(pax::Records, std::ops::Range<usize>)>);
        loop {
            let mut block = [0u8; BLOCK];
            let before = "the archive ends after a long name or pax header, before its entry";
            if !read_block(&mut self.inner, &mut block)? {
                if described_by.is_empty() {
                    return Ok(None);
                }
                return Err(malformed(before));
            }
            let header = Header(block);
            if header.is_zero() {
                if !described_by.is_empty() {
                    return Err(malformed(before));
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
            // GNU's long name ('L') and long link name ('K'), and a pax extended header ('x') in
            // a layer, describe the entry that follows.
            if matches!(typeflag, b'L' | b'K') || (typeflag == b'x' && self.dialect == Dialect::Layer) {
                let seen = match typeflag {
                    b'L' => long_name.is_some(),
                    b'K' => long_link.is_some(),
                    _ => pax.is_some(),
                };
                let most = if typeflag == b'x' { pax::MAX_HEADER } else { MAX_LONG_NAME };
                if seen || size > most {
                    return Err(malformed(format!(
                        "an extended header of {size} bytes, or two of a kind for one entry"
                    )));
                }
                let mut data = vec![0u8; padded(size)? as usize];
                self.inner.read_exact(&mut data).map_err(truncated)?;
                let start = described_by.len();
                described_by.extend_from_slice(&header.0);
                described_by.extend_from_slice(&data);
                let data = data.get(..size as usize).unwrap_or_default();
                match typeflag {
                    b'L' => long_name = Some(until_nul(data).to_vec()),
                    b'K' => long_link = Some(until_nul(data).to_vec()),
                    _ => pax = Some((pax::Records::parse(data)?, start..described_by.len())),
                }
                continue;
            }
            if header.is_star() {
                return Err(malformed(format!(
                    "{}: a star header, whose name readers take apart differently",
                    String::from_utf8_lossy(&header.name())
                )));
            }
            let (records, pax_range) = pax.map_or((pax::Records::default(), None), |(r, range)| (r, Some(range)));
            // Two names for one entry, which Go's reader and others resolve differently.
            if (long_name.is_some() && records.path.is_some()) || (long_link.is_some() && records.link.is_some()) {
                return Err(malformed("an entry named both by a GNU long name and by a pax record"));
            }
            let path = long_name.or(records.path).unwrap_or_else(|| header.name());
            let kind = header.kind(&path, self.dialect)?;
            if kind == Kind::Global && !described_by.is_empty() {
                return Err(malformed("a pax global header described by another header"));
            }
            let size = records.size.unwrap_or(size);
            // dpkg and Go's reader read contents for regular files only: a size anywhere else
            // would make them and GNU tar read the entries that follow differently.
            if !matches!(kind, Kind::Regular | Kind::Global) && size != 0 {
                return Err(malformed(format!(
                    "{}: {size} bytes of contents on an entry that has none",
                    String::from_utf8_lossy(&path)
                )));
            }
            if kind == Kind::Global && size > pax::MAX_HEADER {
                return Err(malformed(format!("{}: {size} bytes", String::from_utf8_lossy(&path))));
            }
            let link = long_link
                .or(records.link)
                .unwrap_or_else(|| until_nul(&header.0[LINKNAME.0..LINKNAME.0 + LINKNAME.1]).to_vec());
            let climbs = |what: &[u8]| malformed(format!("{}: a path that climbs (..)", String::from_utf8_lossy(what)));
            let relative_path = relative(&path).ok_or_else(|| climbs(&path))?;
            // A symbolic link may name `..`; a hard link names a file of the archive.
            let relative_link =
                if kind == Kind::HardLink { relative(&link).ok_or_else(|| climbs(&link))? } else { Vec::new() };
            (self.left, self.padding) = (size, padded(size)? - size);
            let pax_size = pax_range.filter(|_| records.size.is_some());
            return Ok(Some(Entry {
                described_by,
                pax_size,
                header,
                path,
                kind,
                size,
                link,
                relative_path,
                relative_link,
            }));
        }
    }

    /// What is left of the current entry's contents; a stream that ends before them is an
    /// error. The next [`Reader::next_entry`] skips what is not read, and the padding.
    pub fn contents(&mut self) -> Contents<'_, R> {
        Contents(self)
    }

    /// Skips what is left of the current entry.
    fn skip_rest(&mut self) -> Result<(), TarError> {
        self.copy_rest(&mut io::sink()).map_err(truncated)
    }

    /// Copies what is left of the current entry, its contents and its padding as they are,
    /// to `out`.
    pub fn copy_rest(&mut self, out: &mut impl Write) -> io::Result<()> {
        io::copy(&mut self.contents(), out)?;
        let padding = std::mem::take(&mut self.padding);
        let copied = io::copy(&mut (&mut self.inner).take(padding), out)?;
        if copied != padding {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the archive ends inside an entry"));
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
fn padded(size: u64) -> Result<u64, TarError> {
    size.div_ceil(BLOCK as u64).checked_mul(BLOCK as u64).ok_or_else(|| malformed(format!("a size of {size} bytes")))
}

/// The records of a pax extended header: `LENGTH KEY=VALUE\n`, LENGTH counting the whole record.
/// Writes an entry's head: what describes it, and its header.
pub fn write_head(out: &mut impl Write, entry: &Entry) -> io::Result<()> {
    out.write_all(&entry.described_by)?;
    out.write_all(&entry.header.0)
}

/// Writes an entry with new contents, exactly as many bytes as its header now says, and
/// zeros to the end of the block.
pub fn write_entry(out: &mut impl Write, entry: &Entry, contents: &mut impl Read) -> io::Result<()> {
    write_head(out, entry)?;
    let copied = io::copy(contents, out)?;
    if copied != entry.size {
        return Err(io::Error::other(format!(
            "{}: {copied} bytes of contents, {} expected",
            entry.display(),
            entry.size
        )));
    }
    let padding = padded(entry.size).map_err(|e| io::Error::other(e.to_string()))? - entry.size;
    out.write_all(&vec![0u8; padding as usize])
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
            // Padding as some tars leave it: not zeros.
            out.resize(padded(out.len() as u64).unwrap() as usize, 0xa5);
        }
        out.extend_from_slice(&[0u8; 2 * BLOCK]);
        out
    }

    fn entries(bytes: &[u8]) -> Result<Vec<Entry>, TarError> {
        entries_as(bytes, Dialect::Dpkg)
    }

    fn entries_as(bytes: &[u8], dialect: Dialect) -> Result<Vec<Entry>, TarError> {
        let mut reader = Reader::new(bytes, dialect);
        let mut entries = Vec::new();
        while let Some(entry) = reader.next_entry(&mut Vec::new())? {
            entries.push(entry);
        }
        Ok(entries)
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
            ("./usr/link", b'1', b""),
            ("./empty", b'0', b""),
        ]);
        let mut reader = Reader::new(&bytes[..], Dialect::Dpkg);
        let mut out = Vec::new();
        let mut end = Vec::new();
        let mut paths = Vec::new();
        while let Some(entry) = reader.next_entry(&mut end).unwrap() {
            paths.push((entry.display(), entry.kind));
            write_head(&mut out, &entry).unwrap();
            reader.copy_rest(&mut out).unwrap();
        }
        out.extend_from_slice(&end);
        reader.rest(&mut out).unwrap();
        let kinds = [
            ("./".to_owned(), Kind::Other),
            (long.clone(), Kind::Regular),
            ("./usr/link".to_owned(), Kind::HardLink),
            ("./empty".to_owned(), Kind::Regular),
        ];
        assert_eq!(paths, kinds);
        assert_eq!(out, bytes);
    }

    #[test]
    fn paths_are_made_relative_to_the_root_and_may_not_climb() {
        assert_eq!(relative(b"./usr//bin/./ls").as_deref(), Some(&b"usr/bin/ls"[..]));
        assert_eq!(relative(b"/usr/bin/").as_deref(), Some(&b"usr/bin"[..]));
        assert_eq!(relative(b"usr/lib/..x/y").as_deref(), Some(&b"usr/lib/..x/y"[..]));
        assert_eq!(relative(b"lib/firmware/../../usr/bin/x"), None);
        // A symbolic link may point up; a hard link may not.
        let bytes = archive(&[("./a", b'0', b"x"), ("./l", b'2', b"")]);
        assert!(entries(&bytes).is_ok());
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

    /// What dpkg reads differently from GNU tar, or does not unpack, is refused.
    #[test]
    fn what_dpkg_would_read_differently_is_refused() {
        let hidden = archive(&[("./usr/bin/evil", b'0', b"\x7fELF")]);
        for (what, bytes) in [
            ("a directory with contents", archive(&[("./usr/", b'5', &hidden), ("./x", b'0', b"x")])),
            ("a regular file named as a directory, with contents", archive(&[("./usr/", b'0', &hidden)])),
            ("a symbolic link with contents", archive(&[("./l", b'2', b"xx")])),
            ("a pax header", archive(&[("./PaxHeaders/ls", b'x', b"21 path=./usr/bin/ls\n"), ("./a", b'0', b"")])),
            ("a sparse file", archive(&[("./s", b'S', b"")])),
            ("two long names for one entry", archive(&[("L", b'L', b"a\0"), ("L", b'L', b"b\0"), ("./a", b'0', b"")])),
        ] {
            assert!(matches!(entries(&bytes), Err(TarError::Malformed(_))), "{what}");
        }
        // A directory by its long name, not its header's.
        let hidden = archive(&[("./usr/bin/evil", b'0', b"\x7fELF")]);
        let bytes = archive(&[("././@LongLink", b'L', b"./usr/share/x/\0"), ("./usr/share/x", b'0', &hidden)]);
        assert!(matches!(entries(&bytes), Err(TarError::Malformed(_))), "a directory by its long name");
        for dialect in [Dialect::Dpkg, Dialect::Layer] {
            for (what, bytes) in [
                ("a path that climbs", archive(&[("./lib/firmware/../../usr/bin/x", b'0', b"x")])),
                ("a hard link that climbs", archive(&[("./a", b'0', b"x"), ("./b", b'1', b"")])),
            ] {
                let mut bytes = bytes;
                if what.starts_with("a hard link") {
                    // Its link name: `../a`.
                    let at = 2 * BLOCK;
                    bytes[at + LINKNAME.0..at + LINKNAME.0 + 4].copy_from_slice(b"../a");
                    let mut header = Header(bytes[at..at + BLOCK].try_into().unwrap());
                    header.set_size(0);
                    bytes[at..at + BLOCK].copy_from_slice(&header.0);
                }
                assert!(matches!(entries_as(&bytes, dialect), Err(TarError::Malformed(_))), "{what} ({dialect:?})");
            }
            let mut star = header("./a", b'0', 0);
            star.0[MAGIC.0..MAGIC.0 + 8].copy_from_slice(b"ustar\x0000");
            star.0[508..512].copy_from_slice(b"tar\0");
            star.set_size(0);
            let mut bytes = star.0.to_vec();
            bytes.extend_from_slice(&[0; 2 * BLOCK]);
            assert!(matches!(entries_as(&bytes, dialect), Err(TarError::Malformed(_))), "a star header");
        }
        let mut corrupted = archive(&[("./a", b'0', b"x")]);
        corrupted[10] ^= 1;
        assert!(matches!(entries(&corrupted), Err(TarError::Malformed(_))), "a bad checksum");
        let mut huge = header("./a", b'0', 0);
        huge.0[SIZE.0] = 0xff;
        huge.0[SIZE.0 + 1..SIZE.0 + SIZE.1].fill(0xff);
        let sum = huge.checksum();
        huge.0[CHECKSUM.0..CHECKSUM.0 + CHECKSUM.1].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
        assert!(matches!(entries(&huge.0), Err(TarError::Malformed(_))), "a size beyond any file");
    }

    fn pax(records: &[(&str, &[u8])]) -> Vec<u8> {
        records.iter().flat_map(|(key, value)| pax::record(key.as_bytes(), value)).collect()
    }

    /// A layer's pax headers name and size the entry after them, are kept byte for byte, and a
    /// pax size follows a new size.
    #[test]
    fn a_layer_reads_pax_headers_as_go_does_and_keeps_them() {
        let capability = [1u8, 0, 0, 2, b'\n', 0x20, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        let long = "usr/".to_owned() + &"y".repeat(200);
        let named = pax(&[("path", long.as_bytes()), ("SCHILY.xattr.security.capability", &capability[..])]);
        let sized = pax(&[("mtime", b"1.5"), ("size", b"4"), ("uname", b"root")]);
        let global = pax(&[("comment", b"made by a test")]);
        let bytes = archive(&[
            ("pax_global_header", b'g', &global),
            ("./PaxHeaders/x", b'x', &named),
            ("./short", b'0', b"ping"),
            ("./PaxHeaders/y", b'x', &sized),
            ("./sized", b'0', b"\x7fELF"),
            ("./contiguous", b'7', b"c"),
            ("./dir/", b'0', b"not a directory in Go's reading"),
        ]);
        let found = entries_as(&bytes, Dialect::Layer).unwrap();
        let seen: Vec<(String, Kind, u64)> = found.iter().map(|e| (e.display(), e.kind, e.size)).collect();
        assert_eq!(
            seen,
            [
                ("pax_global_header".to_owned(), Kind::Global, global.len() as u64),
                (long.clone(), Kind::Regular, 4),
                ("./sized".to_owned(), Kind::Regular, 4),
                ("./contiguous".to_owned(), Kind::Regular, 1),
                ("./dir/".to_owned(), Kind::Regular, 31),
            ]
        );
        // Written back as read.
        let mut reader = Reader::new(&bytes[..], Dialect::Layer);
        let (mut out, mut end) = (Vec::new(), Vec::new());
        while let Some(entry) = reader.next_entry(&mut end).unwrap() {
            write_head(&mut out, &entry).unwrap();
            reader.copy_rest(&mut out).unwrap();
        }
        out.extend_from_slice(&end);
        reader.rest(&mut out).unwrap();
        assert_eq!(out, bytes);
        // A new size: in the pax record too, the others kept.
        let mut entry = found[2].clone();
        entry.set_size(123_456).unwrap();
        let mut written = Vec::new();
        write_entry(&mut written, &entry, &mut &vec![7u8; 123_456][..]).unwrap();
        written.extend_from_slice(&[0; 2 * BLOCK]);
        let again = entries_as(&written, Dialect::Layer).unwrap();
        assert_eq!(again[0].size, 123_456);
        let pax_len = Header(written[..BLOCK].try_into().unwrap()).size().unwrap() as usize;
        assert_eq!(
            &written[BLOCK..BLOCK + pax_len],
            &pax(&[("mtime", b"1.5"), ("size", b"123456"), ("uname", b"root")])[..]
        );
        // The named entry keeps its binary extended attribute.
        assert!(found[1].described_by.windows(capability.len()).any(|w| w == capability));
    }

    /// What a container engine would read differently, or not unpack, is refused; dpkg's
    /// reading of the same is stricter still.
    #[test]
    fn what_a_layer_reader_would_read_differently_is_refused() {
        let named = pax(&[("path", b"./other")]);
        for (what, bytes) in [
            ("a sparse file", archive(&[("./s", b'S', b"")])),
            (
                "GNU sparse pax records",
                archive(&[("./P", b'x', &pax(&[("GNU.sparse.major", b"1")])), ("./a", b'0', b"")]),
            ),
            (
                "a long name and a pax path",
                archive(&[("L", b'L', b"./a\0"), ("./P", b'x', &named), ("./b", b'0', b"")]),
            ),
            (
                "two pax headers for one entry",
                archive(&[("./P", b'x', &named), ("./P", b'x', &named), ("./b", b'0', b"")]),
            ),
            ("a pax header before the end", archive(&[("./P", b'x', &named)])),
            ("a malformed pax record", archive(&[("./P", b'x', b"99 path=x\n"), ("./b", b'0', b"")])),
            ("a directory with contents", archive(&[("./d/", 0, b"x")])),
        ] {
            assert!(matches!(entries_as(&bytes, Dialect::Layer), Err(TarError::Malformed(_))), "{what}");
        }
        // A directory by its pax name, not its header's: its contents would be entries to Go.
        let hidden = archive(&[("./usr/bin/evil", b'0', b"\x7fELF")]);
        let named_dir = pax(&[("path", b"usr/share/x/")]);
        let bytes = archive(&[("./P", b'x', &named_dir), ("usr/share/x", 0, &hidden)]);
        assert!(matches!(entries_as(&bytes, Dialect::Layer), Err(TarError::Malformed(_))), "a pax-named directory");
        let global = archive(&[("g", b'g', b"11 a=bcdef\n")]);
        assert!(entries(&global).is_err(), "dpkg does not read a global header");
        assert!(entries_as(&global, Dialect::Layer).is_ok());
    }

    #[test]
    fn truncated_archives_are_errors() {
        let bytes = archive(&[("./a", b'0', &[7u8; 1000])]);
        for cut in [100, BLOCK, BLOCK + 10, 2 * BLOCK + 100] {
            let mut reader = Reader::new(&bytes[..cut], Dialect::Dpkg);
            let result = reader.next_entry(&mut Vec::new()).and_then(|entry| match entry {
                Some(_) => reader.copy_rest(&mut io::sink()).map_err(truncated),
                None => Ok(()),
            });
            assert!(result.is_err(), "cut at {cut}");
        }
    }
}
