// SPDX-License-Identifier: GPL-2.0

//! Formatting into fixed buffers, without allocating: the control files' contents and log
//! messages.

use core::fmt;

/// Writes into a byte buffer; a write that does not fit fails and writes nothing.
pub(crate) struct Cursor<'a> {
    out: &'a mut [u8],
    len: usize,
}

impl<'a> Cursor<'a> {
    /// An empty text at the start of `out`.
    pub(crate) fn new(out: &'a mut [u8]) -> Self {
        Cursor { out, len: 0 }
    }

    /// How many bytes were written.
    pub(crate) fn len(&self) -> usize {
        self.len
    }
}

impl fmt::Write for Cursor<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let end = self.len.checked_add(s.len()).ok_or(fmt::Error)?;
        let dst = self.out.get_mut(self.len..end).ok_or(fmt::Error)?;
        dst.copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// A log message: what fits of `message`, NUL-terminated.
pub(crate) struct Message {
    buf: [u8; 200],
    len: usize,
}

impl Message {
    /// Formats `message`, cut where it stops fitting (the last byte stays for the NUL).
    pub(crate) fn new(message: &dyn fmt::Display) -> Self {
        let mut buf = [0u8; 200];
        let len = {
            let (text, _nul) = buf.split_at_mut(199);
            let mut cursor = Cursor::new(text);
            let _ = fmt::Write::write_fmt(&mut cursor, format_args!("{message}"));
            cursor.len()
        };
        Message { buf, len }
    }

    /// The message; a message with a NUL inside reads as "?".
    pub(crate) fn as_cstr(&self) -> &core::ffi::CStr {
        self.buf
            .get(..=self.len)
            .and_then(|bytes| core::ffi::CStr::from_bytes_with_nul(bytes).ok())
            .unwrap_or(c"?")
    }
}
