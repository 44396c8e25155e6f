//! Writing a cpio archive in the "newc" format the kernel unpacks as its initramfs.

use std::collections::BTreeSet;

/// An archive being built. Parent directories are added as needed.
#[derive(Debug, Default)]
pub struct Cpio {
    out: Vec<u8>,
    dirs: BTreeSet<String>,
    next_ino: u32,
}

const S_IFDIR: u32 = 0o040000;
const S_IFREG: u32 = 0o100000;
const S_IFLNK: u32 = 0o120000;
const S_IFCHR: u32 = 0o020000;

impl Cpio {
    /// An empty archive.
    pub fn new() -> Self {
        Cpio::default()
    }

    fn entry(&mut self, path: &str, mode: u32, rdev: (u32, u32), data: &[u8]) {
        let name = path.trim_start_matches('/');
        self.next_ino += 1;
        let fields = [
            self.next_ino,
            mode,
            0,
            0,
            if mode & S_IFDIR != 0 { 2 } else { 1 },
            0,
            data.len() as u32,
            0,
            0,
            rdev.0,
            rdev.1,
            name.len() as u32 + 1,
            0,
        ];
        self.out.extend_from_slice(b"070701");
        for field in fields {
            self.out.extend_from_slice(format!("{field:08x}").as_bytes());
        }
        self.out.extend_from_slice(name.as_bytes());
        self.out.push(0);
        self.pad();
        self.out.extend_from_slice(data);
        self.pad();
    }

    fn pad(&mut self) {
        while !self.out.len().is_multiple_of(4) {
            self.out.push(0);
        }
    }

    fn parents(&mut self, path: &str) {
        let mut prefix = String::new();
        let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
        for part in &parts[..parts.len().saturating_sub(1)] {
            prefix.push('/');
            prefix.push_str(part);
            if self.dirs.insert(prefix.clone()) {
                let dir = prefix.clone();
                self.entry(&dir, S_IFDIR | 0o755, (0, 0), &[]);
            }
        }
    }

    /// A regular file with permission bits `perm`.
    pub fn file(&mut self, path: &str, perm: u32, data: &[u8]) {
        self.parents(path);
        self.entry(path, S_IFREG | perm, (0, 0), data);
    }

    /// A symbolic link.
    pub fn symlink(&mut self, path: &str, target: &str) {
        self.parents(path);
        self.entry(path, S_IFLNK | 0o777, (0, 0), target.as_bytes());
    }

    /// A character device.
    pub fn chardev(&mut self, path: &str, major: u32, minor: u32) {
        self.parents(path);
        self.entry(path, S_IFCHR | 0o600, (major, minor), &[]);
    }

    /// The archive, with its trailer.
    pub fn finish(mut self) -> Vec<u8> {
        self.entry("TRAILER!!!", 0, (0, 0), &[]);
        self.out
    }
}
