//! The two keyctl(2) operations std does not offer: describing a key and listing a keyring.
#![allow(unsafe_code)]

use std::io;

const KEYCTL_DESCRIBE: libc::c_long = 6;
const KEYCTL_READ: libc::c_long = 11;

/// What keyctl operation `op` on key `serial` returns into a buffer, grown until it fits.
fn read_into_buffer(op: libc::c_long, serial: i32) -> io::Result<Vec<u8>> {
    let mut buffer = vec![0u8; 512];
    loop {
        // SAFETY: keyctl writes at most `buffer.len()` bytes to `buffer`, which is valid for
        // that many, and returns the length the whole answer needs.
        let needed = unsafe {
            libc::syscall(libc::SYS_keyctl, op, libc::c_long::from(serial), buffer.as_mut_ptr(), buffer.len())
        };
        let needed = usize::try_from(needed).map_err(|_| io::Error::last_os_error())?;
        if needed <= buffer.len() {
            buffer.truncate(needed);
            return Ok(buffer);
        }
        buffer.resize(needed, 0);
    }
}

/// A key's type and description.
pub(super) fn describe(serial: i32) -> io::Result<(String, String)> {
    let bytes = read_into_buffer(KEYCTL_DESCRIBE, serial)?;
    let text = String::from_utf8_lossy(&bytes);
    // `type;uid;gid;perm;description`, NUL-terminated; the description may hold `;`.
    let mut fields = text.trim_end_matches('\0').splitn(5, ';');
    let kind = fields.next().unwrap_or_default().to_owned();
    let description = fields.nth(3).unwrap_or_default().to_owned();
    Ok((kind, description))
}

/// The serials of the keys a keyring links.
pub(super) fn members(keyring: i32) -> io::Result<Vec<i32>> {
    let bytes = read_into_buffer(KEYCTL_READ, keyring)?;
    Ok(bytes.chunks_exact(4).map(|c| i32::from_ne_bytes([c[0], c[1], c[2], c[3]])).collect())
}
