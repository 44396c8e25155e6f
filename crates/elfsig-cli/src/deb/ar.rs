//! The `ar` archive a Debian package is (deb(5)): `!<arch>\n`, then members, each a 60-byte
//! header (name, mtime, owner, group, mode, decimal size) and its bytes, padded to an even
//! length with `\n`. Only what a package needs: no symbol tables, no long-name tables.

use std::ops::Range;

/// The archive's first bytes.
pub const MAGIC: &[u8; 8] = b"!<arch>\n";
/// A member header's length.
const HEADER_LEN: usize = 60;
/// Where a header's size field is, and its width.
const SIZE: Range<usize> = 48..58;
/// A header's last two bytes.
const END: &[u8; 2] = b"`\n";

/// A member of the archive, borrowed from its bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member<'a> {
    /// Its name, trailing spaces and GNU's trailing `/` removed.
    pub name: &'a str,
    /// Its header as written.
    pub header: &'a [u8],
    /// Its bytes.
    pub data: &'a [u8],
    /// The header, the bytes and the padding, as in the archive.
    pub raw: &'a [u8],
}

/// The members of the archive `bytes`, in order; a message saying what is wrong otherwise.
pub fn members(bytes: &[u8]) -> Result<Vec<Member<'_>>, String> {
    let mut rest = bytes.strip_prefix(MAGIC).ok_or("not a Debian package: no ar archive header")?;
    let mut members = Vec::new();
    while !rest.is_empty() {
        let at = bytes.len() - rest.len();
        let header = rest.get(..HEADER_LEN).ok_or_else(|| format!("truncated member header at byte {at}"))?;
        if header[HEADER_LEN - 2..] != END[..] {
            return Err(format!("malformed member header at byte {at}"));
        }
        let name = std::str::from_utf8(&header[..16])
            .map_err(|_| format!("member name at byte {at} is not text"))?
            .trim_end_matches(' ');
        let name = name.strip_suffix('/').unwrap_or(name);
        let size = field(&header[SIZE]).ok_or_else(|| format!("member {name:?}: size is not a number"))?;
        let data = usize::try_from(size)
            .ok()
            .and_then(|size| rest.get(HEADER_LEN..HEADER_LEN.checked_add(size)?))
            .ok_or_else(|| format!("member {name:?}: {size} bytes, past the end of the package"))?;
        let padded = (HEADER_LEN + data.len() + data.len() % 2).min(rest.len());
        let raw = &rest[..padded];
        rest = &rest[padded..];
        members.push(Member { name, header, data, raw });
    }
    Ok(members)
}

/// A decimal field, left-aligned and padded with spaces.
fn field(bytes: &[u8]) -> Option<u64> {
    let text = std::str::from_utf8(bytes).ok()?.trim_end_matches(' ');
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// Appends a member to `out` (which starts with [`MAGIC`]): `header` as it was but for the size,
/// which is `data`'s; then `data`, padded.
pub fn append(out: &mut Vec<u8>, header: &[u8], data: &[u8]) -> Result<(), String> {
    let size = format!("{:<10}", data.len());
    if size.len() != SIZE.len() || header.len() != HEADER_LEN {
        return Err(format!("a member of {} bytes does not fit an ar header", data.len()));
    }
    out.extend_from_slice(&header[..SIZE.start]);
    out.extend_from_slice(size.as_bytes());
    out.extend_from_slice(&header[SIZE.end..]);
    out.extend_from_slice(data);
    if data.len() % 2 == 1 {
        out.push(b'\n');
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(name: &str, size: usize) -> Vec<u8> {
        format!("{name:<16}{:<12}{:<6}{:<6}{:<8}{size:<10}`\n", 1_700_000_000, 0, 0, 100_644).into_bytes()
    }

    #[test]
    fn members_round_trip() {
        let mut archive = MAGIC.to_vec();
        append(&mut archive, &header("debian-binary", 0), b"2.0\n").unwrap();
        append(&mut archive, &header("data.tar.xz/", 0), b"odd").unwrap();
        let members = members(&archive).unwrap();
        assert_eq!(members.iter().map(|m| m.name).collect::<Vec<_>>(), ["debian-binary", "data.tar.xz"]);
        assert_eq!(members[1].data, b"odd");
        let mut again = MAGIC.to_vec();
        for member in &members {
            append(&mut again, member.header, member.data).unwrap();
        }
        assert_eq!(again, archive);
        let raw: Vec<u8> = members.iter().flat_map(|m| m.raw.iter().copied()).collect();
        assert_eq!(raw, archive[MAGIC.len()..]);
    }

    #[test]
    fn malformed_archives_are_errors() {
        assert!(members(b"not an archive").is_err());
        let mut archive = MAGIC.to_vec();
        archive.extend_from_slice(&header("data.tar", 100));
        archive.extend_from_slice(b"short");
        assert!(members(&archive).unwrap_err().contains("past the end"));
        let mut archive = MAGIC.to_vec();
        archive.extend_from_slice(&header("data.tar", 0)[..30]);
        assert!(members(&archive).unwrap_err().contains("truncated"));
        let mut archive = MAGIC.to_vec();
        let mut bad = header("x", 0);
        bad[50] = b'z';
        archive.extend_from_slice(&bad);
        assert!(members(&archive).is_err());
    }
}
