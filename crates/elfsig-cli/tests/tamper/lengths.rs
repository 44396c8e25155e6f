//! The file's length: bytes appended after what was signed, or cut from its end or from the
//! padding before the trailer.

use crate::common::messages::{MOVED, NOT_SIGNED, SECTION_TABLE_PAST_END, Says, refused};
use crate::common::{Scratch, keys};
use crate::{tampered, targets, trailer_targets};

#[test]
fn a_byte_appended() {
    let (keys, scratch) = (keys("a"), Scratch::new());
    for t in targets() {
        // After a trailer, appended bytes leave no trailer at the end: the file is not signed.
        let says = if t.has_sections() { MOVED } else { NOT_SIGNED };
        for extra in [&[0u8][..], b"\x7fELF"] {
            let bytes = tampered(t, |b| b.extend_from_slice(extra));
            let file = format!("{}-appended-{}", t.name, extra.len());
            refused(&keys, &scratch, &file, &bytes, Says::Exactly(says));
        }
    }
    // Bytes appended, then the trailer again, so that the file ends with a trailer describing
    // the payload: the signed length no longer matches.
    for t in trailer_targets() {
        let trailer = t.signed[t.trailer_at()..].to_vec();
        for (what, extra) in [("trailer-again", Vec::new()), ("bytes-and-trailer", b"appended".to_vec())] {
            let bytes = tampered(t, |b| {
                b.extend_from_slice(&extra);
                b.extend_from_slice(&trailer);
            });
            refused(&keys, &scratch, &format!("{}-{what}", t.name), &bytes, Says::Exactly(MOVED));
        }
    }
}

#[test]
fn a_byte_truncated() {
    let (keys, scratch) = (keys("a"), Scratch::new());
    for t in targets() {
        let bytes = tampered(t, |b| {
            b.pop();
        });
        // The section header table ends a file with sections; the trailer, one without.
        let says = if t.has_sections() { SECTION_TABLE_PAST_END } else { NOT_SIGNED };
        refused(&keys, &scratch, &format!("{}-truncated", t.name), &bytes, Says::Exactly(says));
    }
    let mut moved_trailers = 0;
    for t in trailer_targets() {
        let at = t.trailer_at();
        // The whole trailer cut off: nothing says the file is signed.
        let bytes = tampered(t, |b| b.truncate(at));
        refused(&keys, &scratch, &format!("{}-no-trailer", t.name), &bytes, Says::Exactly(NOT_SIGNED));
        // The padding before the trailer cut out: the trailer still describes the payload, but
        // the file is shorter than what was signed.
        if at > t.payload.range().end {
            let bytes = tampered(t, |b| {
                b.drain(t.payload.range().end..at);
            });
            refused(&keys, &scratch, &format!("{}-trailer-moved", t.name), &bytes, Says::Exactly(MOVED));
            moved_trailers += 1;
        }
    }
    assert!(moved_trailers > 0, "no target has padding before its trailer");
}
