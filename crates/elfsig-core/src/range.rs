//! Byte ranges of a file, and splitting them into bounded chunks for streaming.

/// The bytes `[offset, offset + len)` of a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ByteRange {
    /// First byte.
    pub offset: u64,
    /// Number of bytes.
    pub len: u64,
}

impl ByteRange {
    /// The empty range at 0.
    pub const EMPTY: ByteRange = ByteRange { offset: 0, len: 0 };

    /// One past the last byte, or `None` if that overflows.
    pub fn end(&self) -> Option<u64> {
        self.offset.checked_add(self.len)
    }

    /// Whether the range lies inside a file of `file_len` bytes.
    pub fn within(&self, file_len: u64) -> bool {
        self.end().is_some_and(|end| end <= file_len)
    }

    /// Whether the two ranges share a byte. Empty ranges overlap nothing.
    pub fn overlaps(&self, other: &ByteRange) -> bool {
        if self.len == 0 || other.len == 0 {
            return false;
        }
        match (self.end(), other.end()) {
            (Some(a_end), Some(b_end)) => self.offset < b_end && other.offset < a_end,
            // A range that overflows u64 reaches past everything; callers reject those earlier.
            _ => true,
        }
    }

    /// The bytes of a file of `file_len` bytes before and after this range, in that order: what a
    /// signature excluding this range covers. The range must lie inside the file.
    pub fn around(&self, file_len: u64) -> [ByteRange; 2] {
        let after = self.offset.saturating_add(self.len).min(file_len);
        [
            ByteRange { offset: 0, len: self.offset.min(file_len) },
            ByteRange { offset: after, len: file_len.saturating_sub(after) },
        ]
    }

    /// Splits the range into consecutive pieces of at most `max_len` bytes (at least 1).
    pub fn chunks(&self, max_len: u64) -> Chunks {
        Chunks { next: self.offset, remaining: self.len, max_len: max_len.max(1) }
    }
}

/// Iterator returned by [`ByteRange::chunks`].
#[derive(Clone, Debug)]
pub struct Chunks {
    next: u64,
    remaining: u64,
    max_len: u64,
}

impl Iterator for Chunks {
    type Item = ByteRange;

    fn next(&mut self) -> Option<ByteRange> {
        if self.remaining == 0 {
            return None;
        }
        let len = self.remaining.min(self.max_len);
        let chunk = ByteRange { offset: self.next, len };
        // `len <= remaining`, and `next + remaining` is the range's end, which must not
        // overflow for a range inside a file; stop rather than wrap if it would.
        self.remaining = self.remaining.saturating_sub(len);
        match self.next.checked_add(len) {
            Some(next) => self.next = next,
            None => self.remaining = 0,
        }
        Some(chunk)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    #[test]
    fn chunks_cover_the_range_exactly() {
        let r = ByteRange { offset: 10, len: 25 };
        let chunks: Vec<_> = r.chunks(10).collect();
        assert_eq!(
            chunks,
            [ByteRange { offset: 10, len: 10 }, ByteRange { offset: 20, len: 10 }, ByteRange { offset: 30, len: 5 }]
        );
        assert_eq!(ByteRange::EMPTY.chunks(4).count(), 0);
        assert_eq!(r.chunks(0).count(), 25);
    }

    #[test]
    fn overlap_and_bounds() {
        let a = ByteRange { offset: 0, len: 10 };
        let b = ByteRange { offset: 10, len: 5 };
        let c = ByteRange { offset: 9, len: 1 };
        assert!(!a.overlaps(&b));
        assert!(a.overlaps(&c));
        assert!(!a.overlaps(&ByteRange { offset: 5, len: 0 }));
        assert!(a.within(10));
        assert!(!a.within(9));
        assert!(!ByteRange { offset: u64::MAX, len: 1 }.within(u64::MAX));
    }
}
