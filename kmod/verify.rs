// SPDX-License-Identifier: GPL-2.0

//! Verifying one file: elfsig-core locates the signature and parses the payload, the kernel
//! checks the PKCS#7 signature against its keyrings, the file is hashed in bounded chunks
//! through the kernel's SHA-256, and the digest is checked against the record and the
//! `.blacklist` keyring.

use core::fmt;

use kernel::alloc::KVVec;
use kernel::error::{code, Error};
use kernel::prelude::*;
use kernel::str::CStr;

use crate::elfsig_core::elf::ExecInfo;
use crate::elfsig_core::{self as core_format, find_signature, ByteRange, IoError, Payload, ReadAt, Rejection};
use crate::ffi::{self, pkcs7_errno, FileRef, Sha256};
use crate::policy::STATE;
use crate::stats::{Reason, Stats};

/// Bytes hashed per read: large enough to amortise each `kernel_read`, small enough to stay in
/// cache, and a fixed cost whatever the file size.
const CHUNK: usize = 64 * 1024;

/// Small reads (headers, the payload's magic, the interpreter's name) go through a window of
/// this many bytes, so that walking the program headers is one `kernel_read`.
const WINDOW: usize = 1024;

/// Why a file is refused, with what the log says about it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Failure {
    /// The category, counted in the stats.
    pub(crate) reason: Reason,
    /// The core's description of a malformed file.
    pub(crate) detail: Option<core_format::Error>,
    /// The errno behind an I/O or internal error.
    pub(crate) errno: i32,
    /// Whether the failure is the ELF interpreter's rather than the program's.
    pub(crate) interpreter: bool,
}

impl Failure {
    /// A failure for `reason`.
    pub(crate) fn new(reason: Reason) -> Self {
        Failure { reason, detail: None, errno: 0, interpreter: false }
    }

    fn errno(reason: Reason, error: Error) -> Self {
        Failure { errno: error.to_errno(), ..Failure::new(reason) }
    }

    /// An I/O error.
    pub(crate) fn io(error: Error) -> Self {
        Failure::errno(Reason::IoError, error)
    }

    /// Running out of memory, or another internal error.
    pub(crate) fn internal(error: Error) -> Self {
        Failure::errno(Reason::Error, error)
    }

    /// The same failure, about the ELF interpreter.
    pub(crate) fn in_interpreter(self) -> Self {
        Failure { interpreter: true, ..self }
    }

    fn from_core(error: core_format::Error, reader: &KernelReader<'_>) -> Self {
        match Rejection::from(error) {
            Rejection::Io => Failure::io(reader.error.unwrap_or(code::EIO)),
            _ => Failure { detail: Some(error), ..Failure::new(Reason::Malformed) },
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.interpreter {
            f.write_str("ELF interpreter: ")?;
        }
        f.write_str(self.reason.name())?;
        if let Some(detail) = self.detail {
            write!(f, " ({detail})")?;
        }
        if self.errno != 0 {
            write!(f, " (errno {})", self.errno)?;
        }
        Ok(())
    }
}

/// Reads a file for the core through `kernel_read`, remembering the last error.
struct KernelReader<'a> {
    file: FileRef<'a>,
    len: u64,
    error: Option<Error>,
    window: [u8; WINDOW],
    window_start: u64,
    window_len: usize,
}

impl<'a> KernelReader<'a> {
    fn new(file: FileRef<'a>) -> Self {
        KernelReader { file, len: file.size(), error: None, window: [0; WINDOW], window_start: 0, window_len: 0 }
    }

    /// Reads all of `buf` from `offset`, straight from the file.
    fn read_direct(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), IoError> {
        read_fully(self.file, &mut self.error, offset, buf)
    }
}

/// Reads all of `buf` from `offset` of `file`; on failure records why in `error`.
fn read_fully(file: FileRef<'_>, error: &mut Option<Error>, offset: u64, buf: &mut [u8]) -> Result<(), IoError> {
    let mut done = 0usize;
    while done < buf.len() {
        let pos = offset.checked_add(done as u64).ok_or(IoError)?;
        let rest = buf.get_mut(done..).ok_or(IoError)?;
        match file.read_at(pos, rest) {
            Ok(0) => {
                // The file is shorter than its size said: it shrank under us.
                *error = Some(code::EIO);
                return Err(IoError);
            }
            Ok(n) => done = done.checked_add(n).ok_or(IoError)?,
            Err(e) => {
                *error = Some(e);
                return Err(IoError);
            }
        }
    }
    Ok(())
}

impl ReadAt for KernelReader<'_> {
    fn read_exact_at(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), IoError> {
        let end = offset.checked_add(buf.len() as u64).ok_or(IoError)?;
        if buf.len() > WINDOW {
            return self.read_direct(offset, buf);
        }
        let window_end = self.window_start.saturating_add(self.window_len as u64);
        if offset < self.window_start || end > window_end {
            let len = self.len.saturating_sub(offset).min(WINDOW as u64) as usize;
            if len < buf.len() {
                self.error = Some(code::EIO);
                return Err(IoError);
            }
            self.window_len = 0;
            read_fully(self.file, &mut self.error, offset, self.window.get_mut(..len).ok_or(IoError)?)?;
            self.window_start = offset;
            self.window_len = len;
        }
        let start = usize::try_from(offset.checked_sub(self.window_start).ok_or(IoError)?).map_err(|_| IoError)?;
        let src = self.window.get(start..start.saturating_add(buf.len())).ok_or(IoError)?;
        for (d, s) in buf.iter_mut().zip(src) {
            *d = *s;
        }
        Ok(())
    }
}

/// A file that verified.
pub(crate) struct Verified<'n> {
    /// The digest it was signed with.
    pub(crate) digest: [u8; 32],
    /// What exec makes of it, read from the verified content.
    pub(crate) exec: Exec<'n>,
}

/// Verifies `file`; returns its digest and what exec makes of it (the interpreter's name goes
/// into `name`), read through the same reader so the headers are not read twice.
pub(crate) fn verify_file<'n>(file: FileRef<'_>, name: &'n mut KVec<u8>) -> Result<Verified<'n>, Failure> {
    let stats = &STATE.stats;
    let mut reader = KernelReader::new(file);
    let len = reader.len;
    let location = match find_signature(&mut reader, len) {
        Ok(Some(location)) => location,
        Ok(None) => return Err(Failure::new(Reason::Unsigned)),
        Err(e) => return Err(Failure::from_core(e, &reader)),
    };

    let mut payload_buf = KVec::from_elem(0u8, location.payload_len(), GFP_KERNEL)
        .map_err(|_| Failure::internal(code::ENOMEM))?;
    let _payload_charge = stats.charge(payload_buf.len());
    let payload = match Payload::read(&mut reader, &location, &mut payload_buf) {
        Ok(payload) => payload,
        Err(e) => return Err(Failure::from_core(e, &reader)),
    };

    // The signature over the record first: it needs no hashing, so a file signed by an unknown
    // key is refused without reading it.
    if let Err(errno) = ffi::verify_pkcs7(payload.record_bytes, payload.cms) {
        return Err(match errno {
            pkcs7_errno::ENOKEY => Failure::new(Reason::UnknownKey),
            pkcs7_errno::EKEYREJECTED => Failure::new(Reason::BadSignature),
            pkcs7_errno::EBADMSG | pkcs7_errno::ENOPKG => Failure {
                detail: Some(core_format::SignatureError::BadCms.into()),
                ..Failure::new(Reason::Malformed)
            },
            other => Failure::internal(Error::from_errno(other)),
        });
    }
    let record = payload.record;
    if !record.matches(&location) {
        return Err(Failure::new(Reason::Modified));
    }
    let digest = hash(&mut reader, &location.hashed_ranges(), stats)?;
    if digest != record.digest {
        return Err(Failure::new(Reason::Modified));
    }
    not_revoked(&digest)?;
    Ok(Verified { digest, exec: read_exec(&mut reader, name)? })
}

/// Refuses a revoked digest, and refuses when revocation cannot be checked.
pub(crate) fn not_revoked(digest: &[u8; 32]) -> Result<(), Failure> {
    match ffi::is_revoked(digest) {
        Ok(false) => Ok(()),
        Ok(true) => Err(Failure::new(Reason::Revoked)),
        Err(error) => Err(Failure::internal(error)),
    }
}

/// SHA-256 of `ranges` of the file, read in chunks of at most [`CHUNK`] bytes.
fn hash(reader: &mut KernelReader<'_>, ranges: &[ByteRange], stats: &Stats) -> Result<[u8; 32], Failure> {
    let total: u64 = ranges.iter().map(|r| r.len).fold(0, u64::saturating_add);
    let chunk_len = (CHUNK as u64).min(total.max(1)) as usize;
    let mut buf = KVVec::from_elem(0u8, chunk_len, GFP_KERNEL).map_err(|_| Failure::internal(code::ENOMEM))?;
    let _charge = stats.charge(buf.len());
    let mut sha = Sha256::new().map_err(Failure::internal)?;
    for range in ranges {
        for chunk in range.chunks(chunk_len as u64) {
            let bytes = buf.get_mut(..chunk.len as usize).ok_or(Failure::internal(code::EINVAL))?;
            reader.read_direct(chunk.offset, bytes).map_err(|IoError| Failure::io(reader.error.unwrap_or(code::EIO)))?;
            sha.update(bytes).map_err(Failure::internal)?;
            Stats::add(&stats.bytes_hashed, chunk.len);
        }
    }
    sha.finish().map_err(Failure::internal)
}

/// What exec makes of a file.
pub(crate) struct Exec<'n> {
    /// The ELF interpreter it names in its first `PT_INTERP`, as binfmt_elf reads it.
    pub(crate) interpreter: Option<&'n CStr>,
    /// Whether it is a dynamic loader (see [`ExecInfo`]).
    pub(crate) loader: bool,
}

/// Reads what exec makes of `file`; the interpreter's name goes into `name` (NUL-terminated).
pub(crate) fn exec_info<'n>(file: FileRef<'_>, name: &'n mut KVec<u8>) -> Result<Exec<'n>, Failure> {
    read_exec(&mut KernelReader::new(file), name)
}

fn read_exec<'n>(reader: &mut KernelReader<'_>, name: &'n mut KVec<u8>) -> Result<Exec<'n>, Failure> {
    let len = reader.len;
    let info = ExecInfo::read(reader, len).map_err(|e| Failure::from_core(e, reader))?;
    let Some(range) = info.interpreter else { return Ok(Exec { interpreter: None, loader: info.loader }) };
    *name = KVec::from_elem(0u8, range.len as usize, GFP_KERNEL).map_err(|_| Failure::internal(code::ENOMEM))?;
    reader.read_exact_at(range.offset, name).map_err(|IoError| Failure::io(reader.error.unwrap_or(code::EIO)))?;
    // binfmt_elf requires the last byte to be NUL and uses the string up to the first one.
    if name.last() != Some(&0) {
        return Err(Failure::new(Reason::Malformed));
    }
    let first_nul = name.iter().position(|b| *b == 0).unwrap_or(0);
    let with_nul = name.get(..=first_nul).ok_or(Failure::new(Reason::Malformed))?;
    let interpreter = CStr::from_bytes_with_nul(with_nul).map_err(|_| Failure::new(Reason::Malformed))?;
    Ok(Exec { interpreter: Some(interpreter), loader: info.loader })
}
