//! Hexadecimal, for digests, serial numbers and key identifiers: written lowercase, read in
//! either case.

/// `bytes` as lowercase hex.
pub fn encode(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0xf)]));
    }
    out
}

/// The bytes `text` spells in hex (either case), or `None` when it is not an even number of
/// hex digits.
pub fn decode(text: &str) -> Option<Vec<u8>> {
    let digit = |c: u8| char::from(c).to_digit(16).and_then(|d| u8::try_from(d).ok());
    let bytes = text.as_bytes();
    if bytes.len() % 2 != 0 {
        return None;
    }
    bytes.chunks_exact(2).map(|pair| Some(digit(pair[0])? << 4 | digit(pair[1])?)).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn decodes_what_it_encodes_and_nothing_else() {
        assert_eq!(super::decode("009fFF"), Some(vec![0x00, 0x9f, 0xff]));
        assert_eq!(super::decode(""), Some(vec![]));
        for bad in ["0", "0g", "+1", " 00"] {
            assert_eq!(super::decode(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn encodes() {
        assert_eq!(super::encode(&[0x00, 0x9f, 0xff]), "009fff");
        assert_eq!(super::encode(&[]), "");
    }
}
