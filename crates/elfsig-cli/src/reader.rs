//! Reading a file at offsets for elfsig-core: `pread`, through the core's read window, so that
//! walking a table of tens of thousands of section headers is not one system call per entry.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

use elfsig_core::{IoError, ReadSomeAt, Windowed};

/// Reads smaller than this go through the window.
const WINDOW: usize = 64 * 1024;

/// `pread` on an open file.
#[derive(Clone, Copy, Debug)]
pub struct Pread<'f>(pub &'f File);

impl ReadSomeAt for Pread<'_> {
    fn read_some_at(&mut self, offset: u64, buf: &mut [u8]) -> Result<usize, IoError> {
        loop {
            match self.0.read_at(buf, offset) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                result => return result.map_err(|e| IoError::Errno(e.raw_os_error().unwrap_or(libc::EIO))),
            }
        }
    }
}

/// A reader over the first `len` bytes of an open file.
pub type FileReader<'f> = Windowed<Pread<'f>, Vec<u8>>;

/// A reader over the first `len` bytes of `file`.
pub fn reader(file: &File, len: u64) -> FileReader<'_> {
    Windowed::new(Pread(file), len, vec![0; WINDOW])
}

/// The system's error behind a failed read, for messages.
pub fn io_error(error: IoError) -> io::Error {
    match error {
        IoError::Errno(errno) => io::Error::from_raw_os_error(errno),
        IoError::End => io::Error::new(io::ErrorKind::UnexpectedEof, "file is shorter than its headers say"),
    }
}
