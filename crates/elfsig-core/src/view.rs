//! Two read-only views that define signing and removal byte for byte: the signed file as a
//! function of the original ([`SignedView`]) and the original as a function of the signed file
//! ([`OriginalView`]).
//!
//! The signer streams a `SignedView` into its output, `remove` streams an `OriginalView`, and
//! `remove` first checks that the file still is the `SignedView` of the original it recovers, so
//! that it never drops bytes it did not write.

use core::fmt;

use super::elf::{FileHeader, SectionFields, SectionHeader};
use super::layout::LayoutAnchor;
use super::locate::encode_trailer;
use super::{Error, IoError, ReadAt, SignatureError, SignatureLocation, SignedLayout, SignedRecord};

/// The first bytes of a file, up to the end of its ELF header, with the section-table fields
/// replaced.
#[derive(Clone, Copy, Debug)]
struct PatchedHeader {
    bytes: [u8; FileHeader::MAX_LEN],
    len: usize,
}

impl PatchedHeader {
    fn read(file: &mut dyn ReadAt, header: &FileHeader, fields: SectionFields) -> Result<Self, Error> {
        let mut bytes = [0u8; FileHeader::MAX_LEN];
        let len = usize::try_from(header.class.header_len()).map_err(|_| Error::END)?;
        let window = bytes.get_mut(..len).ok_or(Error::END)?;
        file.read_exact_at(0, window)?;
        header.write_section_fields(window, fields)?;
        Ok(PatchedHeader { bytes, len })
    }

    /// Replaces those bytes of `buf`, which holds the file from `offset` on, that lie in the
    /// header.
    fn overlay(&self, offset: u64, buf: &mut [u8]) {
        let header = self.bytes.get(..self.len).unwrap_or(&[]);
        let src = usize::try_from(offset).ok().and_then(|start| header.get(start..)).unwrap_or(&[]);
        copy_prefix(buf, src);
    }
}

/// Copies as much of `src` as fits into the front of `dst`; returns how much.
fn copy_prefix(dst: &mut [u8], src: &[u8]) -> usize {
    let mut copied = 0usize;
    for (d, s) in dst.iter_mut().zip(src) {
        *d = *s;
        copied = copied.saturating_add(1);
    }
    copied
}

/// What lies in one stretch of the signed file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Piece {
    /// Original bytes, at the same offsets, with the ELF header patched.
    Original,
    /// Alignment padding.
    Zeros,
    /// Section names copied from the original's name table.
    CopiedNames,
    /// The bytes appended to the name table.
    NamesSuffix,
    /// The payload.
    Payload,
    /// The new section header table.
    Sections,
    /// The trailer of a file without a section header table.
    Trailer,
}

/// The signed file, computed on demand from the original and a layout.
pub struct SignedView<'a> {
    original: &'a mut dyn ReadAt,
    layout: SignedLayout,
    header: PatchedHeader,
    payload: &'a [u8],
}

impl fmt::Debug for SignedView<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SignedView").field("layout", &self.layout).finish_non_exhaustive()
    }
}

impl<'a> SignedView<'a> {
    /// A view of the signed file. `payload` is the payload, or empty to read zeros in its
    /// place, which is all that hashing needs.
    pub fn new(original: &'a mut dyn ReadAt, layout: SignedLayout, payload: &'a [u8]) -> Result<Self, Error> {
        if !payload.is_empty() && u64::try_from(payload.len()) != Ok(layout.payload.len) {
            return Err(SignatureError::PayloadSize.into());
        }
        let header = PatchedHeader::read(original, &layout.header, layout.header_fields())?;
        Ok(SignedView { original, layout, header, payload })
    }

    /// The layout this view follows.
    pub fn layout(&self) -> &SignedLayout {
        &self.layout
    }

    /// The piece holding `pos`, with its start and end.
    fn piece(&self, pos: u64) -> Option<(Piece, u64, u64)> {
        let l = &self.layout;
        let names_copied_end = l.names.offset.checked_add(l.names_source.len)?;
        let (anchor_piece, anchor) = match l.anchor {
            LayoutAnchor::Sections { range, .. } => (Piece::Sections, range),
            LayoutAnchor::Trailer { range } => (Piece::Trailer, range),
        };
        // Contiguous, in file order: each piece starts where the previous one ends (the names are
        // empty for a trailer).
        let pieces = [
            (Piece::Original, l.original_len),
            (Piece::Zeros, l.names.offset),
            (Piece::CopiedNames, names_copied_end),
            (Piece::NamesSuffix, l.names.end()?),
            (Piece::Zeros, l.payload.offset),
            (Piece::Payload, l.payload.end()?),
            (Piece::Zeros, anchor.offset),
            (anchor_piece, anchor.end()?),
        ];
        let mut start = 0u64;
        for (piece, end) in pieces {
            if pos < end {
                return Some((piece, start, end));
            }
            start = end;
        }
        None
    }

    /// Entry `index` of the new section header table.
    fn section(&mut self, index: u64) -> Result<SectionHeader, IoError> {
        let copied = self.layout.copied_sections();
        match (index.checked_sub(copied), self.layout.original_sections) {
            (None, Some(table)) => {
                let original = table.entry(self.original, index).map_err(|e| match e {
                    Error::Io(io) => io,
                    _ => IoError::End,
                })?;
                Ok(self.layout.copied_section(index, original))
            }
            (Some(k), _) => self.layout.added_section(k).ok_or(IoError::End),
            (None, None) => Err(IoError::End),
        }
    }

    /// Fills a prefix of `out` with the file from `pos` on, up to the end of a piece (or of a
    /// section header); returns how many bytes it filled (at least one when `out` is not empty).
    fn fill(&mut self, pos: u64, out: &mut [u8]) -> Result<usize, IoError> {
        let (piece, start, end) = self.piece(pos).ok_or(IoError::End)?;
        let within = pos.checked_sub(start).ok_or(IoError::End)?;
        let left_in_piece = usize::try_from(end.saturating_sub(pos)).unwrap_or(usize::MAX);
        let n = out.len().min(left_in_piece);
        let out = out.get_mut(..n).ok_or(IoError::End)?;
        let within_usize = usize::try_from(within).map_err(|_| IoError::End)?;
        match piece {
            Piece::Original => {
                self.original.read_exact_at(pos, out)?;
                self.header.overlay(pos, out);
                Ok(n)
            }
            Piece::Zeros => {
                out.fill(0);
                Ok(n)
            }
            Piece::CopiedNames => {
                let from = self.layout.names_source.offset.checked_add(within).ok_or(IoError::End)?;
                self.original.read_exact_at(from, out)?;
                Ok(n)
            }
            Piece::NamesSuffix => {
                Ok(copy_prefix(out, self.layout.names_suffix.get(within_usize..).ok_or(IoError::End)?))
            }
            Piece::Payload if self.payload.is_empty() => {
                out.fill(0);
                Ok(n)
            }
            Piece::Payload => Ok(copy_prefix(out, self.payload.get(within_usize..).ok_or(IoError::End)?)),
            Piece::Trailer => {
                let trailer = encode_trailer(self.layout.payload);
                Ok(copy_prefix(out, trailer.get(within_usize..).ok_or(IoError::End)?))
            }
            Piece::Sections => {
                let class = self.layout.header.class;
                let entry_len = class.section_header_len();
                let index = within.checked_div(entry_len).ok_or(IoError::End)?;
                let skip =
                    usize::try_from(within.checked_rem(entry_len).ok_or(IoError::End)?).map_err(|_| IoError::End)?;
                let section = self.section(index)?;
                let mut encoded = [0u8; SectionHeader::MAX_LEN];
                section.write(&mut encoded, class, self.layout.header.endian).map_err(|_| IoError::End)?;
                let entry = encoded.get(..usize::try_from(entry_len).map_err(|_| IoError::End)?).ok_or(IoError::End)?;
                Ok(copy_prefix(out, entry.get(skip..).ok_or(IoError::End)?))
            }
        }
    }
}

impl ReadAt for SignedView<'_> {
    fn read_exact_at(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), IoError> {
        let mut pos = offset;
        let mut rest = buf;
        while !rest.is_empty() {
            let n = self.fill(pos, rest)?;
            if n == 0 {
                return Err(IoError::End);
            }
            pos = pos.checked_add(u64::try_from(n).map_err(|_| IoError::End)?).ok_or(IoError::End)?;
            rest = rest.get_mut(n..).ok_or(IoError::End)?;
        }
        Ok(())
    }
}

/// The original file, computed on demand from a signed file: its first `original.len` bytes with
/// the ELF header's section-table fields restored.
pub struct OriginalView<'a> {
    signed: &'a mut dyn ReadAt,
    header: PatchedHeader,
    len: u64,
}

impl fmt::Debug for OriginalView<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OriginalView").field("len", &self.len).finish_non_exhaustive()
    }
}

impl<'a> OriginalView<'a> {
    /// A view of the original of the signed file `signed`, whose signature is at `location` and
    /// carries `record`.
    pub fn new(signed: &'a mut dyn ReadAt, location: &SignatureLocation, record: &SignedRecord) -> Result<Self, Error> {
        let header = PatchedHeader::read(signed, &location.header, record.original.sections)?;
        Ok(OriginalView { signed, header, len: record.original.len })
    }

    /// Length of the original file.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the original file is empty (it never is for a record that decoded).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl ReadAt for OriginalView<'_> {
    fn read_exact_at(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), IoError> {
        let len = u64::try_from(buf.len()).map_err(|_| IoError::End)?;
        if !offset.checked_add(len).is_some_and(|end| end <= self.len) {
            return Err(IoError::End);
        }
        self.signed.read_exact_at(offset, buf)?;
        self.header.overlay(offset, buf);
        Ok(())
    }
}
