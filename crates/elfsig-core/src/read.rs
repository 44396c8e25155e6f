//! Positioned reads: how the parser and the verifier get bytes from a file without owning any
//! I/O.
//!
//! The CLI reads through `pread`, the kernel through `kernel_read`, tests and fuzzers from
//! memory. The parser asks only for small, bounded ranges whose ends it has already checked
//! against the file length; the verifier streams the rest in chunks. Both go through
//! [`Windowed`], which turns the system's "read up to n bytes" into "read exactly these bytes"
//! and serves the parser's many small reads from one larger read. Where the system holds the
//! file's bytes in memory already (the kernel's page cache), the verifier hashes them there
//! instead of copying them out ([`Source::lend_at`]).

use core::ops::ControlFlow;

/// A read failed, or the file ended before the bytes asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoError {
    /// The system refused the read with this (positive) errno.
    Errno(i32),
    /// The file ended before the bytes asked for: it is shorter than its headers say, or it
    /// shrank while being read.
    End,
}

/// What [`Source::lend_at`] hands bytes to, piece by piece; it breaks to stop the lending.
pub type LendTo<'a> = dyn FnMut(&[u8]) -> ControlFlow<()> + 'a;

/// A source of bytes at absolute offsets.
pub trait ReadAt {
    /// Fills all of `buf` with the bytes starting at `offset`, or fails.
    fn read_exact_at(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), IoError>;
}

/// A file of known length to read: what verification reads from.
pub trait Source: ReadAt {
    /// The file's length, as it was when it was opened.
    fn len(&self) -> u64;

    /// Hands `to` the `len` bytes from `offset`, in order and in pieces of the source's
    /// choosing, from where the system keeps them, without copying them; stops at the first
    /// piece `to` breaks on. `Ok(false)`, having handed nothing, where the source cannot (the
    /// default): the caller reads the bytes instead. The caller counts what it was handed, so
    /// a source that hands more or fewer bytes than asked is caught there.
    fn lend_at(&mut self, offset: u64, len: u64, to: &mut LendTo<'_>) -> Result<bool, IoError> {
        let _ = (offset, len, to);
        Ok(false)
    }

    /// Whether the file is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// What the operating system offers: a read at an offset that may return fewer bytes than
/// asked for (0 at the end of the file).
pub trait ReadSomeAt {
    /// Reads up to `buf.len()` bytes at `offset`; returns how many.
    fn read_some_at(&mut self, offset: u64, buf: &mut [u8]) -> Result<usize, IoError>;

    /// [`Source::lend_at`], from the system: by default it cannot.
    fn lend_at(&mut self, offset: u64, len: u64, to: &mut LendTo<'_>) -> Result<bool, IoError> {
        let _ = (offset, len, to);
        Ok(false)
    }
}

impl ReadAt for &[u8] {
    fn read_exact_at(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), IoError> {
        let start = usize::try_from(offset).map_err(|_| IoError::End)?;
        let end = start.checked_add(buf.len()).ok_or(IoError::End)?;
        let src = self.get(start..end).ok_or(IoError::End)?;
        for (d, s) in buf.iter_mut().zip(src) {
            *d = *s;
        }
        Ok(())
    }
}

impl Source for &[u8] {
    fn len(&self) -> u64 {
        u64::try_from(<[u8]>::len(self)).unwrap_or(u64::MAX)
    }
}

/// Reads a file of known length through a window: a read that fits in the window is served
/// from the last window-sized read that covers it (walking a table of tens of thousands of
/// section headers is then a few system calls, not one per entry); a larger one goes straight
/// to the file. Every read is checked against the length first.
#[derive(Debug)]
pub struct Windowed<F, W> {
    file: F,
    len: u64,
    window: W,
    /// Offset of the window's first byte.
    start: u64,
    /// How many bytes of the window hold file contents.
    filled: usize,
}

impl<F: ReadSomeAt, W: AsMut<[u8]>> Windowed<F, W> {
    /// Reads the first `len` bytes of `file`, reads smaller than `window` through it.
    pub fn new(file: F, len: u64, window: W) -> Self {
        Windowed { file, len, window, start: 0, filled: 0 }
    }

    /// The file.
    pub fn file(&self) -> &F {
        &self.file
    }
}

/// Fills all of `buf` with the bytes of `file` from `offset`, retrying short reads.
fn read_fully(file: &mut impl ReadSomeAt, offset: u64, buf: &mut [u8]) -> Result<(), IoError> {
    let mut done = 0usize;
    while let Some(rest) = buf.get_mut(done..).filter(|rest| !rest.is_empty()) {
        let at = u64::try_from(done).ok().and_then(|d| offset.checked_add(d)).ok_or(IoError::End)?;
        match file.read_some_at(at, rest)? {
            // The file is shorter than its length said: it shrank while being read.
            0 => return Err(IoError::End),
            n => done = done.checked_add(n).ok_or(IoError::End)?,
        }
    }
    Ok(())
}

impl<F: ReadSomeAt, W: AsMut<[u8]>> ReadAt for Windowed<F, W> {
    fn read_exact_at(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), IoError> {
        let wanted_len = u64::try_from(buf.len()).map_err(|_| IoError::End)?;
        let end = offset.checked_add(wanted_len).filter(|&end| end <= self.len).ok_or(IoError::End)?;
        let window = self.window.as_mut();
        if buf.len() >= window.len() {
            return read_fully(&mut self.file, offset, buf);
        }
        let window_end = u64::try_from(self.filled).ok().and_then(|n| self.start.checked_add(n));
        if offset < self.start || !window_end.is_some_and(|window_end| end <= window_end) {
            // Refill from `offset`: as much as the window holds, or the rest of the file.
            let rest = self.len.saturating_sub(offset);
            let fill = usize::try_from(rest).map_or(window.len(), |rest| rest.min(window.len()));
            self.filled = 0;
            read_fully(&mut self.file, offset, window.get_mut(..fill).ok_or(IoError::End)?)?;
            self.start = offset;
            self.filled = fill;
        }
        let from = offset.checked_sub(self.start).and_then(|at| usize::try_from(at).ok()).ok_or(IoError::End)?;
        let to = from.checked_add(buf.len()).ok_or(IoError::End)?;
        let src = window.get(from..to).ok_or(IoError::End)?;
        for (d, s) in buf.iter_mut().zip(src) {
            *d = *s;
        }
        Ok(())
    }
}

impl<F: ReadSomeAt, W: AsMut<[u8]>> Source for Windowed<F, W> {
    fn len(&self) -> u64 {
        self.len
    }

    /// The file's own lending, within the length.
    fn lend_at(&mut self, offset: u64, len: u64, to: &mut LendTo<'_>) -> Result<bool, IoError> {
        offset.checked_add(len).filter(|&end| end <= self.len).ok_or(IoError::End)?;
        self.file.lend_at(offset, len, to)
    }
}

impl From<IoError> for super::Error {
    fn from(error: IoError) -> Self {
        super::Error::Io(error)
    }
}

#[cfg(test)]
#[allow(clippy::arithmetic_side_effects)]
mod tests {
    use super::*;
    use std::vec::Vec;

    /// Memory that answers at most `step` bytes per read and counts the reads.
    struct Stingy<'a> {
        bytes: &'a [u8],
        step: usize,
        reads: usize,
    }

    impl ReadSomeAt for Stingy<'_> {
        fn read_some_at(&mut self, offset: u64, buf: &mut [u8]) -> Result<usize, IoError> {
            self.reads += 1;
            let start = usize::try_from(offset).unwrap().min(self.bytes.len());
            let n = buf.len().min(self.step).min(self.bytes.len() - start);
            buf[..n].copy_from_slice(&self.bytes[start..start + n]);
            Ok(n)
        }
    }

    fn bytes() -> Vec<u8> {
        (0..=255u8).cycle().take(1000).collect()
    }

    #[test]
    fn small_reads_come_from_the_window_and_large_ones_from_the_file() {
        let data = bytes();
        let mut reader = Windowed::new(Stingy { bytes: &data, step: 1000, reads: 0 }, 1000, [0u8; 64]);
        let mut small = [0u8; 8];
        reader.read_exact_at(100, &mut small).unwrap();
        reader.read_exact_at(150, &mut small).unwrap();
        assert_eq!(small, data[150..158]);
        assert_eq!(reader.file().reads, 1, "both small reads lie in one window");
        let mut large = [0u8; 200];
        reader.read_exact_at(10, &mut large).unwrap();
        assert_eq!(large[..], data[10..210]);
        reader.read_exact_at(995, &mut [0u8; 5]).unwrap();
    }

    #[test]
    fn short_reads_are_retried_until_complete() {
        let data = bytes();
        let mut reader = Windowed::new(Stingy { bytes: &data, step: 3, reads: 0 }, 1000, [0u8; 64]);
        let mut buf = [0u8; 100];
        reader.read_exact_at(7, &mut buf).unwrap();
        assert_eq!(buf[..], data[7..107]);
    }

    #[test]
    fn reads_past_the_length_or_a_shrunk_file_fail_with_end() {
        let data = bytes();
        let mut reader = Windowed::new(Stingy { bytes: &data, step: 1000, reads: 0 }, 1000, [0u8; 64]);
        assert_eq!(reader.read_exact_at(999, &mut [0u8; 2]), Err(IoError::End));
        assert_eq!(reader.read_exact_at(u64::MAX, &mut [0u8; 2]), Err(IoError::End));
        // The length says 2000 bytes; the file holds 1000.
        let mut reader = Windowed::new(Stingy { bytes: &data, step: 1000, reads: 0 }, 2000, [0u8; 64]);
        assert_eq!(reader.read_exact_at(990, &mut [0u8; 20]), Err(IoError::End));
        assert_eq!(reader.read_exact_at(900, &mut [0u8; 200]), Err(IoError::End));
    }

    #[test]
    fn lending_goes_to_the_file_only_within_the_length() {
        /// Lends whatever it is asked for, counting the calls.
        struct Lender(usize);
        impl ReadSomeAt for Lender {
            fn read_some_at(&mut self, _: u64, _: &mut [u8]) -> Result<usize, IoError> {
                Err(IoError::Errno(5))
            }
            fn lend_at(&mut self, _: u64, len: u64, to: &mut LendTo<'_>) -> Result<bool, IoError> {
                self.0 += 1;
                let _ = to(&[0u8; 16][..usize::try_from(len).unwrap()]);
                Ok(true)
            }
        }
        let mut reader = Windowed::new(Lender(0), 100, [0u8; 16]);
        let mut lent = 0;
        let mut count = |b: &[u8]| {
            lent += b.len();
            ControlFlow::Continue(())
        };
        assert_eq!(reader.lend_at(90, 10, &mut count), Ok(true));
        assert_eq!(lent, 10);
        assert_eq!(reader.lend_at(91, 10, &mut |_| ControlFlow::Continue(())), Err(IoError::End));
        assert_eq!(reader.lend_at(u64::MAX, 2, &mut |_| ControlFlow::Continue(())), Err(IoError::End));
        assert_eq!(reader.file().0, 1, "asked the file past the length");
        // A source that cannot lend says so.
        let data = bytes();
        let mut reader = Windowed::new(Stingy { bytes: &data, step: 1000, reads: 0 }, 1000, [0u8; 64]);
        assert_eq!(reader.lend_at(0, 10, &mut |_| ControlFlow::Continue(())), Ok(false));
    }

    #[test]
    fn errors_carry_their_errno() {
        struct Failing;
        impl ReadSomeAt for Failing {
            fn read_some_at(&mut self, _: u64, _: &mut [u8]) -> Result<usize, IoError> {
                Err(IoError::Errno(5))
            }
        }
        let mut reader = Windowed::new(Failing, 100, [0u8; 16]);
        assert_eq!(reader.read_exact_at(0, &mut [0u8; 4]), Err(IoError::Errno(5)));
        assert_eq!(reader.read_exact_at(0, &mut [0u8; 40]), Err(IoError::Errno(5)));
    }
}
