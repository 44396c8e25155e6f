//! Byte order, and bounds-checked reads and writes of integer fields in byte buffers.

/// Byte order of a file's multi-byte fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Endian {
    /// Least significant byte first (`ELFDATA2LSB`).
    Little,
    /// Most significant byte first (`ELFDATA2MSB`).
    Big,
}

impl Endian {
    /// Decodes a `u16`.
    pub fn u16(self, bytes: [u8; 2]) -> u16 {
        match self {
            Endian::Little => u16::from_le_bytes(bytes),
            Endian::Big => u16::from_be_bytes(bytes),
        }
    }

    /// Decodes a `u32`.
    pub fn u32(self, bytes: [u8; 4]) -> u32 {
        match self {
            Endian::Little => u32::from_le_bytes(bytes),
            Endian::Big => u32::from_be_bytes(bytes),
        }
    }

    /// Decodes a `u64`.
    pub fn u64(self, bytes: [u8; 8]) -> u64 {
        match self {
            Endian::Little => u64::from_le_bytes(bytes),
            Endian::Big => u64::from_be_bytes(bytes),
        }
    }

    /// Encodes a `u16`.
    pub fn u16_bytes(self, value: u16) -> [u8; 2] {
        match self {
            Endian::Little => value.to_le_bytes(),
            Endian::Big => value.to_be_bytes(),
        }
    }

    /// Encodes a `u32`.
    pub fn u32_bytes(self, value: u32) -> [u8; 4] {
        match self {
            Endian::Little => value.to_le_bytes(),
            Endian::Big => value.to_be_bytes(),
        }
    }

    /// Encodes a `u64`.
    pub fn u64_bytes(self, value: u64) -> [u8; 8] {
        match self {
            Endian::Little => value.to_le_bytes(),
            Endian::Big => value.to_be_bytes(),
        }
    }
}

/// The `N` bytes at `at`, or `None` when they are not all inside `bytes`.
pub(crate) fn array_at<const N: usize>(bytes: &[u8], at: usize) -> Option<[u8; N]> {
    let end = at.checked_add(N)?;
    bytes.get(at..end)?.try_into().ok()
}

/// Copies `src` into `dst` at `at`; `None` (and nothing written) when it does not fit.
pub(crate) fn put_at(dst: &mut [u8], at: usize, src: &[u8]) -> Option<()> {
    let end = at.checked_add(src.len())?;
    let window = dst.get_mut(at..end)?;
    for (d, s) in window.iter_mut().zip(src) {
        *d = *s;
    }
    Some(())
}

/// Reads integer fields of one byte order from a buffer, refusing reads past its end.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Fields<'a> {
    pub(crate) bytes: &'a [u8],
    pub(crate) endian: Endian,
}

impl Fields<'_> {
    pub(crate) fn u8(&self, at: usize) -> Option<u8> {
        self.bytes.get(at).copied()
    }

    pub(crate) fn u16(&self, at: usize) -> Option<u16> {
        array_at(self.bytes, at).map(|b| self.endian.u16(b))
    }

    pub(crate) fn u32(&self, at: usize) -> Option<u32> {
        array_at(self.bytes, at).map(|b| self.endian.u32(b))
    }

    pub(crate) fn u64(&self, at: usize) -> Option<u64> {
        array_at(self.bytes, at).map(|b| self.endian.u64(b))
    }

    /// A 32-bit field widened to `u64` when `wide` is false, else a 64-bit field: ELF's
    /// class-sized "word" fields (addresses, offsets, sizes).
    pub(crate) fn word(&self, at: usize, wide: bool) -> Option<u64> {
        if wide {
            self.u64(at)
        } else {
            self.u32(at).map(u64::from)
        }
    }
}

/// Writes integer fields of one byte order into a buffer, refusing writes past its end.
#[derive(Debug)]
pub(crate) struct FieldsMut<'a> {
    pub(crate) bytes: &'a mut [u8],
    pub(crate) endian: Endian,
}

impl FieldsMut<'_> {
    pub(crate) fn u16(&mut self, at: usize, value: u16) -> Option<()> {
        put_at(self.bytes, at, &self.endian.u16_bytes(value))
    }

    pub(crate) fn u32(&mut self, at: usize, value: u32) -> Option<()> {
        put_at(self.bytes, at, &self.endian.u32_bytes(value))
    }

    pub(crate) fn u64(&mut self, at: usize, value: u64) -> Option<()> {
        put_at(self.bytes, at, &self.endian.u64_bytes(value))
    }

    /// Writes a class-sized word; `None` when a 32-bit field cannot hold `value`.
    pub(crate) fn word(&mut self, at: usize, wide: bool, value: u64) -> Option<()> {
        if wide {
            self.u64(at, value)
        } else {
            self.u32(at, u32::try_from(value).ok()?)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_both_orders_and_refuses_out_of_bounds() {
        let bytes = [1u8, 2, 3, 4, 5, 6, 7, 8];
        let le = Fields { bytes: &bytes, endian: Endian::Little };
        let be = Fields { bytes: &bytes, endian: Endian::Big };
        assert_eq!(le.u16(0), Some(0x0201));
        assert_eq!(be.u16(0), Some(0x0102));
        assert_eq!(le.u32(4), Some(0x0807_0605));
        assert_eq!(be.u64(0), Some(0x0102_0304_0506_0708));
        assert_eq!(le.u32(5), None);
        assert_eq!(le.u64(1), None);
        assert_eq!(le.u16(usize::MAX), None);
        assert_eq!(le.word(4, false), Some(0x0807_0605));
    }

    #[test]
    fn writes_round_trip_and_refuse_out_of_bounds() {
        let mut bytes = [0u8; 8];
        let mut w = FieldsMut { bytes: &mut bytes, endian: Endian::Big };
        assert_eq!(w.u32(2, 0xdead_beef), Some(()));
        assert_eq!(w.u32(6, 1), None);
        assert_eq!(w.word(0, false, u64::from(u32::MAX) + 1), None);
        assert_eq!(bytes, [0, 0, 0xde, 0xad, 0xbe, 0xef, 0, 0]);
    }
}
