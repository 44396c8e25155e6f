//! A FUSE filesystem of one read-only file, served from memory over `/dev/fuse`: the daemon a
//! FUSE mount's owner runs, which decides what every read returns. Just the requests a lookup,
//! an exec and a read make (the kernel's FUSE protocol, include/uapi/linux/fuse.h).

use std::fs::File;
use std::io::{Read, Write};

const FUSE_LOOKUP: u32 = 1;
const FUSE_FORGET: u32 = 2;
const FUSE_GETATTR: u32 = 3;
const FUSE_OPEN: u32 = 14;
const FUSE_READ: u32 = 15;
const FUSE_RELEASE: u32 = 18;
const FUSE_FLUSH: u32 = 25;
const FUSE_INIT: u32 = 26;
const FUSE_INTERRUPT: u32 = 36;
const FUSE_BATCH_FORGET: u32 = 42;
const FUSE_DESTROY: u32 = 38;

const ROOT: u64 = 1;
const FILE: u64 = 2;
/// `struct fuse_in_header`'s size.
const IN_HEADER: usize = 40;

/// What the daemon serves: one file in the root directory.
pub(crate) struct OneFile<'a> {
    /// Its name.
    pub(crate) name: &'a str,
    /// Its bytes.
    pub(crate) contents: &'a [u8],
    /// Its owner.
    pub(crate) uid: u32,
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4).map_or(0, |s| u32::from_le_bytes(s.try_into().unwrap_or([0; 4])))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    b.get(at..at + 8).map_or(0, |s| u64::from_le_bytes(s.try_into().unwrap_or([0; 8])))
}

/// `struct fuse_attr` (88 bytes).
fn attr(out: &mut Vec<u8>, node: u64, size: u64, mode: u32, uid: u32) {
    for v in [node, size, size.div_ceil(512), 0, 0, 0] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    for v in [0u32, 0, 0, mode, 1, uid, uid, 0, 4096, 0] {
        out.extend_from_slice(&v.to_le_bytes());
    }
}

impl OneFile<'_> {
    /// Answers requests on `device` until the filesystem is unmounted (or the device fails).
    pub(crate) fn serve(&self, mut device: File) {
        let mut request = vec![0u8; 1 << 17];
        loop {
            let n = match device.read(&mut request) {
                Ok(n) => n,
                Err(e) if e.raw_os_error() == Some(libc::EINTR) || e.raw_os_error() == Some(libc::ENOENT) => continue,
                Err(_) => return,
            };
            let request = &request[..n];
            let (opcode, unique, node) = (u32_at(request, 4), u64_at(request, 8), u64_at(request, 16));
            let body = &request[IN_HEADER.min(n)..];
            let reply = match opcode {
                FUSE_FORGET | FUSE_BATCH_FORGET | FUSE_INTERRUPT => continue,
                FUSE_DESTROY => return,
                _ => self.answer(opcode, node, body),
            };
            let (error, payload) = match reply {
                Ok(payload) => (0i32, payload),
                Err(errno) => (-errno, Vec::new()),
            };
            let mut out = Vec::with_capacity(16 + payload.len());
            out.extend_from_slice(&((16 + payload.len()) as u32).to_le_bytes());
            out.extend_from_slice(&error.to_le_bytes());
            out.extend_from_slice(&unique.to_le_bytes());
            out.extend_from_slice(&payload);
            // A reply the kernel refuses (the request was interrupted) ends nothing.
            let _ = device.write_all(&out);
        }
    }

    fn answer(&self, opcode: u32, node: u64, body: &[u8]) -> Result<Vec<u8>, i32> {
        let mut out = Vec::new();
        match (opcode, node) {
            (FUSE_INIT, _) => {
                // major 7, minor 31, max_readahead, flags, max_background, congestion_threshold,
                // max_write, time_gran, max_pages, map_alignment, flags2, then unused words.
                for v in [7u32, 31, 1 << 16, 0] {
                    out.extend_from_slice(&v.to_le_bytes());
                }
                out.extend_from_slice(&16u16.to_le_bytes());
                out.extend_from_slice(&12u16.to_le_bytes());
                out.extend_from_slice(&(1u32 << 16).to_le_bytes());
                out.extend_from_slice(&1u32.to_le_bytes());
                out.extend_from_slice(&32u16.to_le_bytes());
                out.extend_from_slice(&0u16.to_le_bytes());
                out.resize(64, 0);
            }
            (FUSE_LOOKUP, ROOT) => {
                let name = body.split(|b| *b == 0).next().unwrap_or_default();
                if name != self.name.as_bytes() {
                    return Err(libc::ENOENT);
                }
                // nodeid, generation, entry_valid, attr_valid (seconds), their nanoseconds.
                for v in [FILE, 1, 1, 1] {
                    out.extend_from_slice(&v.to_le_bytes());
                }
                out.extend_from_slice(&[0; 8]);
                attr(&mut out, FILE, self.contents.len() as u64, libc::S_IFREG | 0o755, self.uid);
            }
            (FUSE_GETATTR, ROOT | FILE) => {
                out.extend_from_slice(&1u64.to_le_bytes());
                out.extend_from_slice(&[0; 8]);
                if node == ROOT {
                    attr(&mut out, ROOT, 0, libc::S_IFDIR | 0o755, self.uid);
                } else {
                    attr(&mut out, FILE, self.contents.len() as u64, libc::S_IFREG | 0o755, self.uid);
                }
            }
            (FUSE_OPEN, FILE) => out.extend_from_slice(&[0; 16]),
            (FUSE_READ, FILE) => {
                let (offset, size) = (u64_at(body, 8) as usize, u32_at(body, 16) as usize);
                let start = offset.min(self.contents.len());
                let end = start.saturating_add(size).min(self.contents.len());
                out.extend_from_slice(&self.contents[start..end]);
            }
            (FUSE_RELEASE | FUSE_FLUSH, _) => {}
            _ => return Err(libc::ENOSYS),
        }
        Ok(out)
    }
}
