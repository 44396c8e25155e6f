//! The interpreter a `#!` script names, read as the kernel's binfmt_script reads it: what the
//! kernel module answers `execveat(AT_EXECVE_CHECK)` of a script with.

use core::ffi::CStr;

/// How much of a file binfmt_script reads to find the interpreter (`BINPRM_BUF_SIZE`).
pub const HEAD_LEN: usize = 256;

/// How many nested `#!` scripts an exec follows (binfmt_script's `BINPRM_MAX_RECURSION`).
pub const MAX_NESTING: u32 = 4;

/// The interpreter a `#!` script names in its first bytes `head`, as binfmt_script reads it,
/// NUL-terminated in `out`; `None` when `head` is no script execve would run. Only the first
/// [`HEAD_LEN`] bytes of `head` count, as only they reach binfmt_script. (No `split`,
/// `position` or pushing: their index arithmetic brings overflow panics into the module.)
pub fn interpreter<'b>(head: &[u8], out: &'b mut [u8; HEAD_LEN]) -> Option<&'b CStr> {
    let head = head.get(..HEAD_LEN).unwrap_or(head);
    let rest = head.strip_prefix(b"#!")?;
    // Without a newline in the buffer, binfmt_script wants the name to end within it.
    let complete = rest.contains(&b'\n') || head.len() < HEAD_LEN;
    let blank = |b: &u8| *b == b' ' || *b == b'\t';
    let mut ended = false;
    let name = rest.iter().take_while(|b| **b != b'\n').skip_while(|b| blank(b)).take_while(|b| {
        ended = blank(b) || **b == 0;
        !ended
    });
    *out = [0; HEAD_LEN];
    let mut named = false;
    // The name is shorter than `rest`, itself shorter than `out`: a NUL stays after it.
    for (slot, b) in out.iter_mut().zip(name) {
        *slot = *b;
        named = true;
    }
    if !named || !(complete || ended) {
        return None;
    }
    CStr::from_bytes_until_nul(out).ok()
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::vec::Vec;

    fn named(head: &[u8]) -> Option<Vec<u8>> {
        let mut out = [0xaa; HEAD_LEN];
        interpreter(head, &mut out).map(|name| name.to_bytes().to_vec())
    }

    #[test]
    fn the_name_ends_at_a_blank_a_newline_or_a_nul() {
        assert_eq!(named(b"#!/bin/sh\necho hi\n").unwrap(), b"/bin/sh");
        assert_eq!(named(b"#! \t/usr/bin/env python3\n").unwrap(), b"/usr/bin/env");
        assert_eq!(named(b"#!/bin/sh\0junk\n").unwrap(), b"/bin/sh");
        assert_eq!(named(b"#!/bin/sh").unwrap(), b"/bin/sh");
    }

    #[test]
    fn no_script_names_nothing() {
        assert_eq!(named(b""), None);
        assert_eq!(named(b"\x7fELF"), None);
        assert_eq!(named(b"#"), None);
        assert_eq!(named(b"#!"), None);
        assert_eq!(named(b"#!   \n/bin/sh"), None);
        assert_eq!(named(b" #!/bin/sh\n"), None);
    }

    #[test]
    fn a_name_cut_off_by_the_buffer_is_no_name() {
        // binfmt_script refuses a name that runs past the bytes it read.
        let mut head = b"#!/".to_vec();
        head.resize(HEAD_LEN, b'a');
        assert_eq!(named(&head), None);
        // Ended by a blank within them, it is read.
        head[HEAD_LEN - 2] = b' ';
        assert_eq!(named(&head).unwrap().len(), HEAD_LEN - 4);
        // A newline anywhere in the buffer completes the line.
        head[HEAD_LEN - 2] = b'\n';
        assert_eq!(named(&head).unwrap().len(), HEAD_LEN - 4);
    }

    #[test]
    fn only_the_first_bytes_count() {
        let mut head = b"#!/".to_vec();
        head.resize(HEAD_LEN + 10, b'a');
        head.push(b'\n');
        assert_eq!(named(&head), None);
    }

    #[test]
    fn out_holds_the_name_and_nothing_of_before() {
        let mut out = [b'x'; HEAD_LEN];
        let name = interpreter(b"#!/a\n", &mut out).unwrap();
        assert_eq!(name.to_bytes_with_nul(), b"/a\0");
        assert!(out[2..].iter().all(|b| *b == 0));
    }
}
