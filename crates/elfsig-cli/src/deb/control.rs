//! A package's `control.tar`: its `control` file, whose fields say what the package is for, and
//! what signing changes in it: the `md5sums` of the signed files, and `Installed-Size`.

use std::collections::BTreeMap;
use std::io::{Read, Write};

use crate::tar_stream::resign::Changes;
use crate::tar_stream::{self as tar, Dialect, TarError};

/// The most bytes a control file may hold (dpkg's own files are a few kilobytes).
const MAX_FILE: u64 = 16 << 20;

/// The `Architecture` of the `control` file of the uncompressed `control.tar`.
pub fn architecture(control_tar: &[u8]) -> Result<String, String> {
    let mut reader = tar::Reader::new(control_tar, Dialect::Dpkg);
    let mut found = None;
    while let Some(entry) = reader.next_entry(&mut Vec::new()).map_err(|e| format!("control.tar: {e}"))? {
        let path = entry.relative_path();
        if path == b"control" || path == b"md5sums" {
            if entry.kind != tar::Kind::Regular {
                return Err(format!("control.tar: {} is not a regular file", entry.display()));
            }
            // dpkg extracts control.tar with tar, where the last copy wins; here the first
            // would be read: a package with two is refused.
            if path == b"control" && found.is_some() {
                return Err("control.tar holds two control files".into());
            }
        }
        if path == b"control" {
            let text = contents(&mut reader, &entry)?;
            found = Some(field(&String::from_utf8_lossy(&text), "Architecture").unwrap_or_default().to_owned());
        }
    }
    found.ok_or_else(|| "control.tar has no control file".into())
}

/// A field's value in a control file (first line only: the fields read here have one).
pub fn field<'t>(text: &'t str, name: &str) -> Option<&'t str> {
    text.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        (!line.starts_with([' ', '\t']) && key.eq_ignore_ascii_case(name)).then(|| value.trim())
    })
}

fn contents(reader: &mut tar::Reader<&[u8]>, entry: &tar::Entry) -> Result<Vec<u8>, String> {
    if entry.size > MAX_FILE {
        return Err(format!("control.tar: {} is {} bytes", entry.display(), entry.size));
    }
    let mut bytes = Vec::new();
    reader.contents().read_to_end(&mut bytes).map_err(|e| format!("control.tar: {}: {e}", entry.display()))?;
    Ok(bytes)
}

/// The uncompressed `control.tar` with `md5sums` and `Installed-Size` updated for `changes`;
/// every other byte as it was.
pub fn rewrite(control_tar: &[u8], changes: &Changes) -> Result<Vec<u8>, String> {
    let mut reader = tar::Reader::new(control_tar, Dialect::Dpkg);
    let mut out = Vec::with_capacity(control_tar.len() + 1024);
    let mut end = Vec::new();
    let failed = |e: TarError| format!("control.tar: {e}");
    while let Some(mut entry) = reader.next_entry(&mut end).map_err(failed)? {
        let new = match (entry.kind, entry.relative_path()) {
            (tar::Kind::Regular, b"md5sums") => Some(md5sums(&contents(&mut reader, &entry)?, &changes.md5)?),
            (tar::Kind::Regular, b"control") => {
                Some(installed_size(&contents(&mut reader, &entry)?, changes.installed_kib)?)
            }
            _ => None,
        };
        let written = match new {
            Some(new) => {
                entry.header.set_size(new.len() as u64);
                entry.size = new.len() as u64;
                tar::write_entry(&mut out, &entry, &mut &new[..])
            }
            None => tar::write_head(&mut out, &entry).and_then(|()| reader.copy_rest(&mut out)),
        };
        written.map_err(|e| format!("control.tar: {}: {e}", entry.display()))?;
    }
    out.write_all(&end).map_err(|e| e.to_string())?;
    reader.rest(&mut out).map_err(|e| format!("control.tar: {e}"))?;
    Ok(out)
}

/// `md5sums` with the sums of the changed files replaced. Every changed file it lists must be
/// found (a file dpkg does not sum, such as a conffile, is not listed).
fn md5sums(text: &[u8], md5: &BTreeMap<Vec<u8>, [u8; 16]>) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(text.len());
    for line in text.split_inclusive(|&b| b == b'\n') {
        let body = line.strip_suffix(b"\n").unwrap_or(line);
        match body.get(32..34).filter(|sep| *sep == b"  ").and_then(|_| md5.get(&body[34..])) {
            Some(sum) => {
                out.extend_from_slice(crate::hex::encode(sum).as_bytes());
                out.extend_from_slice(&line[32..]);
            }
            None => out.extend_from_slice(line),
        }
    }
    Ok(out)
}

/// The control file with `Installed-Size` moved by `kib`.
fn installed_size(text: &[u8], kib: i64) -> Result<Vec<u8>, String> {
    let text = std::str::from_utf8(text).map_err(|_| "control is not UTF-8".to_owned())?;
    let mut out = String::with_capacity(text.len() + 8);
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches('\n');
        match body.split_once(':').filter(|(key, _)| key.eq_ignore_ascii_case("Installed-Size")) {
            Some((key, value)) if kib != 0 => {
                let size: i64 =
                    value.trim().parse().map_err(|_| format!("Installed-Size is not a number: {:?}", value.trim()))?;
                let size = size.checked_add(kib).ok_or_else(|| format!("Installed-Size {size} is out of range"))?;
                out.push_str(&format!("{key}: {}", size.max(0)));
                out.push_str(&line[body.len()..]);
            }
            _ => out.push_str(line),
        }
    }
    Ok(out.into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn md5sums_change_only_for_changed_files() {
        let text = b"0123456789abcdef0123456789abcdef  usr/bin/a\nffffffffffffffffffffffffffffffff  usr/share/doc/x\n";
        let changed = BTreeMap::from([(b"usr/bin/a".to_vec(), [0x11u8; 16])]);
        let out = md5sums(text, &changed).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "11111111111111111111111111111111  usr/bin/a\nffffffffffffffffffffffffffffffff  usr/share/doc/x\n"
        );
    }

    #[test]
    fn installed_size_moves_and_nothing_else_does() {
        let text = b"Package: a\nVersion: 1\nInstalled-Size: 100\nDescription: x\n Installed-Size: 5\n";
        let out = installed_size(text, 7).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "Package: a\nVersion: 1\nInstalled-Size: 107\nDescription: x\n Installed-Size: 5\n"
        );
        assert_eq!(installed_size(text, 0).unwrap(), text);
        assert_eq!(field(std::str::from_utf8(text).unwrap(), "version"), Some("1"));
    }
}
