//! A file's bytes mapped into memory rather than read: vmlinux's BTF, five megabytes, which
//! the kernel lets be mapped since Linux 6.16 (no copy, and no pages to fault in and zero).

#![allow(unsafe_code)]

use std::io;
use std::os::fd::AsRawFd;

/// A file's bytes, mapped read-only and private; unmapped when dropped.
#[derive(Debug)]
pub(crate) struct Mapped {
    addr: std::ptr::NonNull<libc::c_void>,
    len: usize,
}

impl Mapped {
    /// The whole of the file at `path`, where its filesystem maps it (vmlinux's BTF in sysfs:
    /// Linux 6.16 and later; earlier ones refuse, and so does an empty file).
    pub(crate) fn file(path: &str) -> io::Result<Mapped> {
        let file = std::fs::File::open(path)?;
        let len = usize::try_from(file.metadata()?.len()).map_err(|_| io::Error::from_raw_os_error(libc::EFBIG))?;
        if len == 0 {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        // SAFETY: a new private, read-only mapping of `len` bytes of an open file, placed by
        // the kernel: nothing else refers to the memory it takes.
        let addr =
            unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ, libc::MAP_PRIVATE, file.as_raw_fd(), 0) };
        if addr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let addr = std::ptr::NonNull::new(addr).ok_or_else(|| io::Error::from_raw_os_error(libc::EINVAL))?;
        Ok(Mapped { addr, len })
    }
}

impl std::ops::Deref for Mapped {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        // SAFETY: `len` readable bytes at `addr`, mapped until `self` is dropped; no one
        // writes them (a private, read-only mapping of the kernel's read-only BTF).
        unsafe { std::slice::from_raw_parts(self.addr.as_ptr().cast::<u8>(), self.len) }
    }
}

impl Drop for Mapped {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `file`, unmapped once.
        unsafe { libc::munmap(self.addr.as_ptr(), self.len) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_mapped_whole_and_an_empty_or_missing_one_is_refused() {
        let dir = std::env::temp_dir().join(format!("elfsig-guard-mapped-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (full, empty) = (dir.join("full"), dir.join("empty"));
        let bytes: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&full, &bytes).unwrap();
        std::fs::write(&empty, b"").unwrap();
        let mapped = Mapped::file(full.to_str().unwrap()).unwrap();
        assert_eq!(&*mapped, &bytes[..]);
        assert_eq!(Mapped::file(empty.to_str().unwrap()).unwrap_err().raw_os_error(), Some(libc::EINVAL));
        assert!(Mapped::file(dir.join("absent").to_str().unwrap()).is_err());
        drop(mapped);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
