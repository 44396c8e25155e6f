//! Reading a file at offsets for the core parser, with a small read-ahead window so that walking
//! a table of tens of thousands of section headers is not one system call per entry.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

use elfsig_core::{ByteRange, IoError, ReadAt};

const WINDOW: usize = 64 * 1024;

/// A [`ReadAt`] over an open file of known length.
#[derive(Debug)]
pub struct FileReader<'f> {
    file: &'f File,
    len: u64,
    window: Vec<u8>,
    window_offset: u64,
    /// The error behind the last failed read, for messages.
    pub last_error: Option<io::Error>,
}

impl<'f> FileReader<'f> {
    /// A reader over the first `len` bytes of `file`.
    pub fn new(file: &'f File, len: u64) -> Self {
        FileReader { file, len, window: Vec::new(), window_offset: 0, last_error: None }
    }

    fn fail(&mut self, error: io::Error) -> IoError {
        self.last_error = Some(error);
        IoError
    }

    /// The `io::Error` behind the last failure, or a generic one.
    pub fn take_error(&mut self) -> io::Error {
        self.last_error
            .take()
            .unwrap_or_else(|| io::Error::new(io::ErrorKind::UnexpectedEof, "file is shorter than its headers say"))
    }
}

impl ReadAt for FileReader<'_> {
    fn read_exact_at(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), IoError> {
        let wanted = ByteRange { offset, len: buf.len() as u64 };
        if !wanted.within(self.len) {
            return Err(self.fail(io::Error::new(io::ErrorKind::UnexpectedEof, "read past the end of the file")));
        }
        if buf.len() >= WINDOW {
            return self.file.read_exact_at(buf, offset).map_err(|e| self.fail(e));
        }
        let cached = ByteRange { offset: self.window_offset, len: self.window.len() as u64 };
        let hit = offset >= cached.offset && wanted.end() <= cached.end();
        if !hit {
            let len = (self.len - offset).min(WINDOW as u64) as usize;
            self.window.resize(len, 0);
            if let Err(e) = self.file.read_exact_at(&mut self.window, offset) {
                self.window.clear();
                return Err(self.fail(e));
            }
            self.window_offset = offset;
        }
        let start = (offset - self.window_offset) as usize;
        buf.copy_from_slice(&self.window[start..start + buf.len()]);
        Ok(())
    }
}
