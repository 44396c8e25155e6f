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
