//! What points at the payload: the `.elfsig` section's header in a file with a section header
//! table, the trailer in a file without one. Changed, they no longer describe what was signed.

use crate::common::layout::{Layout, SH_FLAGS, SH_OFFSET, SH_SIZE, put_u64};
use crate::common::messages::{
    BAD_CMS, BAD_RECORD_MAGIC, MALFORMED_SIGNATURE, NOT_SIGNED, PAYLOAD_OVER_HEADERS, PAYLOAD_PAST_END, PAYLOAD_SIZE,
    Says, refused,
};
use crate::common::{Scratch, TRAILER_LEN, keys};
use crate::{flip, section_targets, tampered, trailer_flip_verdict, trailer_targets, trailer_verdict};

#[test]
fn signature_section_header_that_no_longer_describes_the_payload() {
    let (keys, scratch) = (keys("a"), Scratch::new());
    for t in section_targets() {
        let l = Layout::of(&t.signed);
        let w = l.word();
        let header = l.section(".elfsig").header;
        let (offset_at, size_at) = (header + l.sh_field(SH_OFFSET), header + l.sh_field(SH_SIZE));
        let (offset, size) = (l.get(&t.signed, offset_at, w), l.get(&t.signed, size_at, w));

        // Moved: the record magic is no longer where the section starts. Moved later, the section
        // may also reach into the section header table, which makes the file malformed.
        for (delta, why) in [(8i64, "later"), (-8, "earlier"), (1, "later-by-1")] {
            let moved = offset.checked_add_signed(delta).unwrap();
            let says = if moved + size > l.shoff as u64 {
                Says::StartsWith("malformed ELF: section ")
            } else {
                Says::Exactly(NOT_SIGNED)
            };
            let bytes = tampered(t, |b| l.put(b, offset_at, w, moved));
            refused(&keys, &scratch, &format!("{}-elfsig-{why}", t.name), &bytes, says);
        }
        // Shortened: the PKCS#7 blob loses its last byte.
        let bytes = tampered(t, |b| l.put(b, size_at, w, size - 1));
        refused(&keys, &scratch, &format!("{}-elfsig-shorter", t.name), &bytes, Says::Exactly(BAD_CMS));
        // Lengthened: whatever follows is not part of the blob.
        let bytes = tampered(t, |b| l.put(b, size_at, w, size + 1));
        let file = format!("{}-elfsig-longer", t.name);
        refused(&keys, &scratch, &file, &bytes, Says::StartsWith(MALFORMED_SIGNATURE));
        // Made loadable, or of another type: no longer a signature section at all.
        let flags = l.low_byte(header + l.sh_field(SH_FLAGS), w);
        let bytes = tampered(t, |b| b[flags] |= 0x02);
        refused(&keys, &scratch, &format!("{}-elfsig-alloc", t.name), &bytes, Says::Exactly(NOT_SIGNED));
        let sh_type = header + 4;
        let bytes = tampered(t, |b| l.put(b, sh_type, 4, 7));
        refused(&keys, &scratch, &format!("{}-elfsig-note", t.name), &bytes, Says::Exactly(NOT_SIGNED));
    }
}

/// Every byte of the trailer of a file without a section header table matters: a broken magic
/// leaves the file unsigned, a changed offset or length no longer describes the payload.
#[test]
fn trailer_bytes() {
    let (keys, scratch) = (keys("a"), Scratch::new());
    for t in trailer_targets() {
        let at = t.trailer_at();
        let mut said = Vec::new();
        for i in 0..TRAILER_LEN {
            let says = trailer_flip_verdict(&t.signed, &t.payload, at + i);
            let bytes = tampered(t, flip(at + i));
            said.push(refused(&keys, &scratch, &format!("{}-trailer-{i}", t.name), &bytes, says));
        }
        // Whatever the values, the magic's bytes unsign the file and the fields' bytes break it.
        assert!(said[..8].iter().all(|m| m == NOT_SIGNED), "{}: {said:?}", t.name);
        assert!(said[8..].iter().all(|m| m.starts_with(MALFORMED_SIGNATURE)), "{}: {said:?}", t.name);
        // A single bit of the magic.
        let bytes = tampered(t, |b| b[at + 7] ^= 0x01);
        refused(&keys, &scratch, &format!("{}-trailer-magic-bit", t.name), &bytes, Says::Exactly(NOT_SIGNED));
    }
}

#[test]
fn a_trailer_that_no_longer_describes_the_payload() {
    let (keys, scratch) = (keys("a"), Scratch::new());
    for t in trailer_targets() {
        let at = t.trailer_at();
        let (offset, size) = (t.payload.offset as u64, t.payload.size as u64);
        let padding_after = (at - t.payload.range().end) as u64;
        assert!(padding_after < 8, "{}: {padding_after} bytes between the payload and the trailer", t.name);
        let headers_end = Layout::of(&t.signed).headers[1].end as u64;
        let cases = [
            // Moved: past the trailer, into the original or the padding before the payload, onto
            // the headers, or by a byte.
            ("later", offset + 8, size, Says::Exactly(PAYLOAD_PAST_END)),
            ("far-later", u64::MAX - 3, size, Says::Exactly(PAYLOAD_PAST_END)),
            ("earlier", offset - 8, size, Says::Exactly(BAD_RECORD_MAGIC)),
            ("into-the-original", headers_end, size, Says::Exactly(BAD_RECORD_MAGIC)),
            ("onto-the-elf-header", 0, size, Says::Exactly(PAYLOAD_OVER_HEADERS)),
            ("onto-the-program-headers", headers_end - 1, size, Says::Exactly(PAYLOAD_OVER_HEADERS)),
            (
                "later-by-1",
                offset + 1,
                size,
                Says::Exactly(if padding_after >= 1 { BAD_RECORD_MAGIC } else { PAYLOAD_PAST_END }),
            ),
            // Resized: the PKCS#7 blob loses its last byte, or gains a padding byte (or reaches
            // into the trailer), or the size is out of bounds.
            ("shorter", offset, size - 1, Says::Exactly(BAD_CMS)),
            ("longer", offset, size + 1, Says::Exactly(if padding_after >= 1 { BAD_CMS } else { PAYLOAD_PAST_END })),
            ("empty", offset, 0, Says::Exactly(PAYLOAD_SIZE)),
            ("too-small", offset, 159, Says::Exactly(PAYLOAD_SIZE)),
            ("too-large", offset, 16481, Says::Exactly(PAYLOAD_SIZE)),
            ("huge", offset, u64::MAX, Says::Exactly(PAYLOAD_SIZE)),
        ];
        for (why, new_offset, new_size, says) in cases {
            let model = trailer_verdict(&t.signed, &t.payload, new_offset, new_size);
            assert_eq!(format!("{model:?}"), format!("{says:?}"), "{}-{why}: the model disagrees", t.name);
            let bytes = tampered(t, |b| {
                put_u64(b, at + 8, new_offset);
                put_u64(b, at + 16, new_size);
            });
            refused(&keys, &scratch, &format!("{}-trailer-{why}", t.name), &bytes, says);
        }
        // The fields are little-endian whatever the ELF byte order: written big-endian, they
        // describe no payload.
        let bytes = tampered(t, |b| {
            b[at + 8..at + 16].copy_from_slice(&offset.to_be_bytes());
            b[at + 16..at + 24].copy_from_slice(&size.to_be_bytes());
        });
        refused(&keys, &scratch, &format!("{}-trailer-big-endian", t.name), &bytes, Says::Exactly(PAYLOAD_SIZE));
    }
}
