//! The files of a tar stream that elfsig signs or checks: each regular file that
//! starts as ELF does is copied out of the stream into an anonymous temporary file, where the
//! same code as for files on disk classifies it (`sign --recursive`'s rules), signs it or
//! verifies it. Memory stays small whatever the file's size.

use std::fs::File;
use std::io::{self, Read, Seek, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use elfsig_core::elf::ELF_MAGIC;
use md5::Md5;

use crate::architecture::Machines;
use crate::elf_file::OpenFile;
use crate::error::Error;
use crate::skip::{Place, Skip};
use crate::stream::HashingWriter;
use crate::tar_stream as tar;

/// What a regular file of the package turned out to be.
#[derive(Debug)]
pub enum Found {
    /// Not ELF: its first bytes, read already (the rest is still in the stream).
    Other(Vec<u8>),
    /// ELF: a copy, its MD5, and why it is left alone, if it is.
    Elf {
        /// The copy, named `PACKAGE:PATH` in messages.
        file: Box<OpenFile>,
        /// Its MD5.
        md5: [u8; 16],
        /// Why it is left alone, if it is.
        skip: Option<Skip>,
    },
}

/// Reads the contents of `entry` (a regular file) far enough to tell whether it is ELF, and
/// if so, copies and classifies it for a package of `native` machines.
pub fn examine<R: Read>(
    reader: &mut tar::Reader<R>,
    entry: &tar::Entry,
    package: &Path,
    native: &Machines,
) -> Result<Found, Error> {
    let name = name(package, entry);
    let reader_dialect = reader.dialect();
    let mut contents = reader.contents();
    let magic = self::magic(&mut contents).map_err(|e| Error::io("cannot read", &name, e))?;
    if magic != ELF_MAGIC {
        return Ok(Found::Other(magic));
    }
    if entry.size > tar::MAX_FILE {
        return Err(Error::msg(format!("{}: an ELF file of {} bytes", name.display(), entry.size)));
    }
    let mut copy = tempfile::tempfile().map_err(|e| Error::io("cannot create a temporary copy of", &name, e))?;
    let mut hashing = Md5Writer::new(&mut copy);
    hashing.write_all(&magic).map_err(|e| Error::io("cannot write a temporary copy of", &name, e))?;
    io::copy(&mut contents, &mut hashing).map_err(|e| Error::io("cannot copy", &name, e))?;
    let md5 = hashing.finish().1.into();
    let file = Box::new(OpenFile::from_file(name, copy)?);
    let place = match reader_dialect {
        tar::Dialect::Dpkg => Place::Installed(installed(entry.relative_path())),
        tar::Dialect::Layer => Place::Image(installed(entry.relative_path())),
    };
    let skip = Skip::classify_open(&file, place, native);
    Ok(Found::Elf { file, md5, skip })
}

/// A file's first four bytes (fewer if it is shorter): its ELF magic, if it has one.
pub fn magic(contents: &mut impl Read) -> io::Result<Vec<u8>> {
    let mut magic = Vec::with_capacity(ELF_MAGIC.len());
    contents.take(ELF_MAGIC.len() as u64).read_to_end(&mut magic)?;
    Ok(magic)
}

/// A path in a package as a path relative to `/`.
fn installed(relative: &[u8]) -> &Path {
    Path::new(std::ffi::OsStr::from_bytes(relative))
}

/// The files of a package left alone because of where they are installed (firmware, debug
/// files). Another name for one of them elsewhere (a hard link) would be an unsigned program
/// where programs run: the module would refuse it, and signing cannot sign one name and not
/// the other.
#[derive(Debug, Default)]
pub struct LeftByPlace(std::collections::BTreeMap<Vec<u8>, Skip>);

impl LeftByPlace {
    /// Notes that `entry` was left alone for `skip`.
    pub fn note(&mut self, entry: &tar::Entry, skip: Skip) {
        if Skip::at(installed(entry.relative_path())) == Some(skip) {
            self.0.insert(entry.relative_path().to_vec(), skip);
        }
    }

    /// For a hard link: why it is an unsigned name where programs run, when it names such a
    /// file from a place that would not leave it alone.
    pub fn unsigned_name(&self, entry: &tar::Entry) -> Option<String> {
        let skip = *self.0.get(entry.relative_link())?;
        (Skip::at(installed(entry.relative_path())) != Some(skip)).then(|| {
            format!("another name of {}, which is left unsigned ({})", String::from_utf8_lossy(&entry.link), skip.why())
        })
    }
}

/// How messages name a file of a package: `PACKAGE:PATH`.
pub fn name(package: &Path, entry: &tar::Entry) -> PathBuf {
    PathBuf::from(format!("{}:{}", package.display(), entry.display()))
}

/// A new temporary file, to sign into.
pub fn scratch(name: &Path) -> Result<File, Error> {
    tempfile::tempfile().map_err(|e| Error::io("cannot create a temporary file for", name, e))
}

/// `file` from its start.
pub fn rewound(file: &mut File, name: &Path) -> Result<(), Error> {
    file.rewind().map_err(|e| Error::io("cannot read back", name, e))
}

/// A writer that computes the MD5 of what goes through it (as `md5sums` lists files).
pub type Md5Writer<W> = HashingWriter<W, Md5>;

/// A size in KiB, rounded up, as dpkg-gencontrol counts each file in `Installed-Size`.
pub fn kib(size: u64) -> i64 {
    i64::try_from(size.div_ceil(1024)).unwrap_or(i64::MAX)
}
