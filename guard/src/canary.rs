//! The canary: an unsigned file mapped executable, which the guard must refuse. Attaching
//! succeeds even where the programs never run (`bpf` not among the active LSMs, a program that
//! does not call the module); this shows that they do.

#![allow(unsafe_code)]

use std::ffi::CStr;
use std::io::Write;
use std::os::fd::{FromRawFd, OwnedFd};

const CONTENT: &[u8] = b"elfsig-guard canary: not a signed ELF file\n";

/// Maps an unsigned in-memory file executable; returns whether that was refused (`EACCES`). The
/// file is sealed against writes, as the module wants a memfd to be before it looks at its
/// contents: the refusal shows that the module verified it (`malformed_elf`), not only that it
/// refuses unsealed memfds.
pub(crate) fn executable_mapping_refused() -> Result<bool, String> {
    let name: &CStr = c"elfsig-guard-canary";
    // SAFETY: a NUL-terminated name and flags; the return value is checked.
    let fd = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING) };
    if fd < 0 {
        return Err(format!("cannot create the canary file: {}", std::io::Error::last_os_error()));
    }
    // SAFETY: `fd` is a descriptor memfd_create just returned, owned by nothing else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut file = std::fs::File::from(fd);
    file.write_all(CONTENT).map_err(|e| format!("cannot write the canary file: {e}"))?;
    let fd = std::os::fd::AsRawFd::as_raw_fd(&file);
    let seals = libc::F_SEAL_WRITE | libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_SEAL;
    // SAFETY: fcntl on the descriptor just made, with an integer argument.
    if unsafe { libc::fcntl(fd, libc::F_ADD_SEALS, seals) } != 0 {
        return Err(format!("cannot seal the canary file: {}", std::io::Error::last_os_error()));
    }
    // SAFETY: a new private mapping chosen by the kernel, of a file open for reading; unmapped
    // below and never accessed.
    let addr = unsafe {
        libc::mmap(std::ptr::null_mut(), CONTENT.len(), libc::PROT_READ | libc::PROT_EXEC, libc::MAP_PRIVATE, fd, 0)
    };
    if addr == libc::MAP_FAILED {
        let error = std::io::Error::last_os_error();
        return match error.raw_os_error() {
            Some(libc::EACCES) => Ok(true),
            _ => Err(format!("mapping the canary failed otherwise than refused: {error}")),
        };
    }
    // SAFETY: unmaps the mapping just made, which nothing refers to.
    unsafe { libc::munmap(addr, CONTENT.len()) };
    Ok(false)
}
