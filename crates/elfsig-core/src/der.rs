//! The one piece of DER the core needs: the length of the outer SEQUENCE of a PKCS#7 blob, so
//! that a payload whose signature blob is truncated or padded is refused before any crypto code
//! sees it.

const SEQUENCE: u8 = 0x30;

/// Total length (tag, length and contents) of the DER SEQUENCE that starts `bytes`, or `None`
/// when `bytes` does not start with one in definite, minimal length encoding. The contents are
/// not inspected and may extend past `bytes`.
pub fn sequence_len(bytes: &[u8]) -> Option<usize> {
    if *bytes.first()? != SEQUENCE {
        return None;
    }
    let first = *bytes.get(1)?;
    if first < 0x80 {
        return 2usize.checked_add(usize::from(first));
    }
    // Long form: the low bits give the number of length bytes. 0 is BER's indefinite length,
    // which DER forbids; more than 4 would describe more than 4 GiB.
    let count = usize::from(first & 0x7f);
    if count == 0 || count > 4 {
        return None;
    }
    let length_bytes = bytes.get(2..2usize.checked_add(count)?)?;
    if length_bytes.first() == Some(&0) {
        return None;
    }
    let mut len: usize = 0;
    for &b in length_bytes {
        len = len.checked_mul(256)?.checked_add(usize::from(b))?;
    }
    if len < 0x80 {
        return None;
    }
    len.checked_add(2)?.checked_add(count)
}

/// Whether `bytes` is exactly one DER SEQUENCE, nothing missing and nothing after it.
pub fn is_single_sequence(bytes: &[u8]) -> bool {
    sequence_len(bytes) == Some(bytes.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_and_long_forms() {
        assert_eq!(sequence_len(&[0x30, 0x00]), Some(2));
        assert_eq!(sequence_len(&[0x30, 0x7f]), Some(0x81));
        assert_eq!(sequence_len(&[0x30, 0x81, 0x80]), Some(0x83));
        assert_eq!(sequence_len(&[0x30, 0x82, 0x01, 0x00]), Some(0x104));
        assert!(is_single_sequence(&[0x30, 0x01, 0xff]));
        assert!(!is_single_sequence(&[0x30, 0x01, 0xff, 0x00]));
        assert!(!is_single_sequence(&[0x30, 0x02, 0xff]));
    }

    #[test]
    fn refuses_non_der() {
        assert_eq!(sequence_len(&[]), None);
        assert_eq!(sequence_len(&[0x31, 0x00]), None);
        assert_eq!(sequence_len(&[0x30]), None);
        assert_eq!(sequence_len(&[0x30, 0x80]), None); // indefinite
        assert_eq!(sequence_len(&[0x30, 0x81, 0x7f]), None); // not minimal
        assert_eq!(sequence_len(&[0x30, 0x82, 0x00, 0x80]), None); // leading zero
        assert_eq!(sequence_len(&[0x30, 0x85, 1, 1, 1, 1, 1]), None);
        assert_eq!(sequence_len(&[0x30, 0x84, 0xff, 0xff, 0xff]), None);
    }
}
