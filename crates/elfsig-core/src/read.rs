//! Positioned reads: how the parser gets bytes from a file without owning any I/O.
//!
//! The CLI reads through `pread`, the kernel through `kernel_read`, tests and fuzzers from
//! memory. The parser asks only for small, bounded ranges whose ends it has already checked
//! against the file length.

/// A read failed or returned fewer bytes than asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IoError;

/// A source of bytes at absolute offsets.
pub trait ReadAt {
    /// Fills all of `buf` with the bytes starting at `offset`, or fails.
    fn read_exact_at(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), IoError>;
}

impl ReadAt for &[u8] {
    fn read_exact_at(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), IoError> {
        let start = usize::try_from(offset).map_err(|_| IoError)?;
        let end = start.checked_add(buf.len()).ok_or(IoError)?;
        let src = self.get(start..end).ok_or(IoError)?;
        for (d, s) in buf.iter_mut().zip(src) {
            *d = *s;
        }
        Ok(())
    }
}

impl From<IoError> for super::Error {
    fn from(_: IoError) -> Self {
        super::Error::Io
    }
}
