//! A pax extended header's records (POSIX.1-2001 `pax`, typeflag `x`): `LENGTH KEY=VALUE\n`,
//! LENGTH counting the whole record, as Go's `archive/tar` reads them. Parsed by length, not by
//! line, because values may hold newlines: an extended attribute such as
//! `SCHILY.xattr.security.capability` is binary.

use super::{TarError, malformed};

/// The most bytes a pax header may hold (Go's reader: 1 MiB).
pub const MAX_HEADER: u64 = 1 << 20;

/// What elfsig reads of a pax header: the records that decide what the entry after it is. The
/// rest (owners, times, extended attributes) are kept as they are written.
#[derive(Debug, Default)]
pub struct Records {
    /// `path`: the entry's name.
    pub path: Option<Vec<u8>>,
    /// `linkpath`: what a link names.
    pub link: Option<Vec<u8>>,
    /// `size`: how many bytes of contents follow.
    pub size: Option<u64>,
}

impl Records {
    /// Parses the header's contents; records elfsig cannot follow (sparse files) are refused.
    pub fn parse(data: &[u8]) -> Result<Records, TarError> {
        let mut records = Records::default();
        for (key, value) in each(data) {
            let (key, value) = (key?, value);
            match key {
                b"path" => records.path = Some(name(value)?),
                b"linkpath" => records.link = Some(name(value)?),
                b"size" => {
                    let size = std::str::from_utf8(value).ok().and_then(|v| v.parse::<u64>().ok());
                    records.size = Some(size.ok_or_else(|| malformed("a pax size record that is not a size"))?);
                }
                _ if key.starts_with(b"GNU.sparse.") => {
                    return Err(malformed("a sparse file (GNU sparse pax records): not re-signed"));
                }
                _ => {}
            }
        }
        Ok(records)
    }
}

/// A path record's value: no NUL in it (Go's reader refuses one).
fn name(value: &[u8]) -> Result<Vec<u8>, TarError> {
    if value.contains(&0) {
        return Err(malformed("a pax path with a NUL byte in it"));
    }
    Ok(value.to_vec())
}

/// Each record's key (an error if the record is malformed) and value.
fn each(mut data: &[u8]) -> impl Iterator<Item = (Result<&[u8], TarError>, &[u8])> {
    std::iter::from_fn(move || {
        if data.is_empty() {
            return None;
        }
        match split(data) {
            Some((key, value, rest)) => {
                data = rest;
                Some((Ok(key), value))
            }
            None => {
                data = &[];
                Some((Err(malformed("a malformed pax record")), &[][..]))
            }
        }
    })
}

/// The first record of `data`: its key, its value, and what follows it.
fn split(data: &[u8]) -> Option<(&[u8], &[u8], &[u8])> {
    let space = data.iter().position(|&b| b == b' ')?;
    let digits = &data[..space];
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let length: usize = std::str::from_utf8(digits).ok()?.parse().ok()?;
    let record = data.get(..length).filter(|r| r.len() > space + 1)?;
    let body = record.strip_suffix(b"\n")?.get(space + 1..)?;
    let equals = body.iter().position(|&b| b == b'=')?;
    let key = &body[..equals];
    if key.is_empty() {
        return None;
    }
    Some((key, &body[equals + 1..], &data[length..]))
}

/// The header's contents with its `size` record saying `size`; every other record as it was,
/// in its place.
pub fn with_size(data: &[u8], size: u64) -> Result<Vec<u8>, TarError> {
    let mut out = Vec::with_capacity(data.len() + 8);
    let mut rest = data;
    while !rest.is_empty() {
        let (key, _, after) = split(rest).ok_or_else(|| malformed("a malformed pax record"))?;
        if key == b"size" {
            out.extend_from_slice(&record(key, size.to_string().as_bytes()));
        } else {
            out.extend_from_slice(&rest[..rest.len() - after.len()]);
        }
        rest = after;
    }
    Ok(out)
}

/// One record: its length counts its own digits.
pub(super) fn record(key: &[u8], value: &[u8]) -> Vec<u8> {
    let body = key.len() + value.len() + 3; // ' ', '=', '\n'
    let mut length = body + 1;
    while length != body + length.to_string().len() {
        length = body + length.to_string().len();
    }
    let mut out = format!("{length} ").into_bytes();
    out.extend_from_slice(key);
    out.push(b'=');
    out.extend_from_slice(value);
    out.push(b'\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_read_by_length_and_binary_values_kept() {
        let capability = b"\x01\x00\x00\x02\n\x20\x00\x00";
        let mut data = record(b"path", b"usr/bin/ping");
        data.extend(record(b"SCHILY.xattr.security.capability", capability));
        data.extend(record(b"size", b"12"));
        let records = Records::parse(&data).unwrap();
        assert_eq!(records.path.as_deref(), Some(&b"usr/bin/ping"[..]));
        assert_eq!(records.size, Some(12));
        let resized = with_size(&data, 123_456_789).unwrap();
        let mut expected = record(b"path", b"usr/bin/ping");
        expected.extend(record(b"SCHILY.xattr.security.capability", capability));
        expected.extend(record(b"size", b"123456789"));
        assert_eq!(resized, expected);
        assert_eq!(Records::parse(&resized).unwrap().size, Some(123_456_789));
    }

    #[test]
    fn lengths_count_their_own_digits() {
        for value_len in 0..200 {
            let value = vec![b'a'; value_len];
            let record = record(b"k", &value);
            let digits = record.iter().position(|&b| b == b' ').unwrap();
            let length: usize = std::str::from_utf8(&record[..digits]).unwrap().parse().unwrap();
            assert_eq!(length, record.len(), "value of {value_len}");
        }
    }

    #[test]
    fn malformed_records_are_refused() {
        for bad in [
            b"11 path=abc".to_vec(),
            b"5 path=abc\n".to_vec(),
            b"x path=abc\n".to_vec(),
            b"9 =value\n".to_vec(),
            b"12 pathabcde\n".to_vec(),
            record(b"GNU.sparse.major", b"1"),
            record(b"size", b"12x45"),
            record(b"size", b"-1"),
            record(b"path", b"a\0bc"),
        ] {
            assert!(Records::parse(&bad).is_err(), "{}", String::from_utf8_lossy(&bad));
        }
    }
}
