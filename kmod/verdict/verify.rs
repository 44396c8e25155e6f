// SPDX-License-Identifier: GPL-2.0

//! The kernel's side of elfsig-core's verifier, which owns the steps and their order: files
//! read through `kernel_read` (and hashed where the page cache holds them, where it can),
//! SHA-256 from the crypto API, the kernel's keyrings, the loaded policy and the revocation
//! list, buffers from `kvmalloc` counted in the stats; with more than one CPU, the signature
//! checked on a worker while the file is hashed. And what exec makes of a file that verified,
//! read through the same reader.

use core::ffi::CStr;
use kernel::alloc::KVVec;
use kernel::prelude::*;

use crate::elfsig_core::elf::ExecInfo;
use crate::elfsig_core::{
    verify, Entitlements, IoError, LendTo, ReadAt, Reason, Refused, Scratch, Sha256,
    SignatureError, Source, Structure, Trust, Windowed,
};
use crate::glue::crypto;
use crate::glue::file::FileRef;
use crate::glue::keys::{self, SignatureError as KeyError};
use crate::glue::policy::Held;
use crate::glue::workqueue::{self, Job, Running};
use crate::refusal::{Failure, KernelDetail, Refusal};
use crate::state::STATE;
use crate::stats::{MemoryCharge, Stats};

/// Small reads (headers, the payload's magic, the interpreter's name) go through a window of
/// this many bytes, so that walking the program headers is one `kernel_read`.
const WINDOW: usize = 1024;

/// A file, read for verification.
pub(crate) type Reader<'a> = Windowed<FileRef<'a>, [u8; WINDOW]>;

/// A reader over `file`, whose length is its size now.
pub(crate) fn reader(file: FileRef<'_>) -> Reader<'_> {
    Windowed::new(file, file.size(), [0; WINDOW])
}

/// A file read for verification, counting the bytes its page cache lends
/// (`bytes_hashed_in_cache`, of `bytes_hashed`).
struct CountingLent<'r, 'a>(&'r mut Reader<'a>);

impl ReadAt for CountingLent<'_, '_> {
    fn read_exact_at(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), IoError> {
        self.0.read_exact_at(offset, buf)
    }
}

impl Source for CountingLent<'_, '_> {
    fn len(&self) -> u64 {
        self.0.len()
    }

    fn lend_at(&mut self, offset: u64, len: u64, to: &mut LendTo<'_>) -> Result<bool, IoError> {
        self.0.lend_at(offset, len, &mut |bytes| {
            Stats::add(
                &STATE.stats.bytes_hashed_in_cache,
                u64::try_from(bytes.len()).unwrap_or(u64::MAX),
            );
            to(bytes)
        })
    }
}

/// SHA-256 through the crypto API, counting what it hashes.
struct KernelSha256(crypto::Sha256);

impl Sha256 for KernelSha256 {
    fn start() -> Result<Self, i32> {
        crypto::Sha256::new()
            .map(KernelSha256)
            .map_err(|e| e.to_errno())
    }

    fn update(&mut self, bytes: &[u8]) -> Result<(), i32> {
        Stats::add(
            &STATE.stats.bytes_hashed,
            u64::try_from(bytes.len()).unwrap_or(u64::MAX),
        );
        Stats::timed(&STATE.stats.hash_ns, || self.0.update(bytes)).map_err(|e| e.to_errno())
    }

    fn finish(self) -> Result<[u8; 32], i32> {
        Stats::timed(&STATE.stats.hash_ns, || self.0.finish()).map_err(|e| e.to_errno())
    }
}

/// The builtin and secondary trusted keyrings, the module's own, `.blacklist`, and the policy
/// loaded when the verification began (held to its end, so that it sees one policy whole). With
/// more than one CPU, the signature is checked on a worker while the file is hashed (`beside`,
/// which holds the policy meanwhile).
struct Keyrings {
    policy: Option<Held>,
    beside: Option<Running<SignatureCheck>>,
}

impl Keyrings {
    fn new() -> Self {
        Keyrings {
            policy: Held::current(),
            beside: None,
        }
    }
}

/// A signature checked on a worker: copies of the record and the PKCS#7 blob (a few KiB), and
/// the policy the verification holds, given back with the answer.
struct SignatureCheck {
    record: KVec<u8>,
    cms: KVec<u8>,
    policy: Option<Held>,
    outcome: Option<Result<(), KeyError>>,
}

impl Job for SignatureCheck {
    fn run(&mut self) {
        let (record, cms, policy) = (&self.record, &self.cms, self.policy.as_ref());
        self.outcome = Some(Stats::timed(&STATE.stats.signature_ns, || {
            keys::verify_pkcs7(record, cms, policy)
        }));
    }
}

/// A copy of `bytes`.
fn copied(bytes: &[u8]) -> Option<KVec<u8>> {
    let mut copy = KVec::with_capacity(bytes.len(), GFP_KERNEL).ok()?;
    copy.extend_from_slice(bytes, GFP_KERNEL).ok()?;
    Some(copy)
}

impl Trust for Keyrings {
    type Signer = ();
    type Detail = KernelDetail;

    fn begin_signature(&mut self, record: &[u8], cms: &[u8]) -> bool {
        if !workqueue::possible() {
            return false;
        }
        let (Some(record), Some(cms)) = (copied(record), copied(cms)) else {
            return false;
        };
        let check = SignatureCheck {
            record,
            cms,
            policy: None,
            outcome: None,
        };
        let Ok(mut check) = KBox::new(check, GFP_KERNEL) else {
            return false;
        };
        check.policy = self.policy.take();
        match workqueue::start(check) {
            Ok(running) => {
                Stats::add(&STATE.stats.signatures_beside, 1);
                self.beside = Some(running);
                true
            }
            Err(mut check) => {
                self.policy = check.policy.take();
                false
            }
        }
    }

    fn check_signature(&mut self, record: &[u8], cms: &[u8]) -> Result<(), Refusal> {
        let outcome = match self.beside.take() {
            Some(running) => {
                let mut check = running.wait();
                self.policy = check.policy.take();
                check.outcome.unwrap_or(Err(KeyError::Failed(EINVAL)))
            }
            None => {
                let policy = self.policy.as_ref();
                Stats::timed(&STATE.stats.signature_ns, || {
                    keys::verify_pkcs7(record, cms, policy)
                })
            }
        };
        outcome.map_err(|error| match error {
            KeyError::UnknownKey => Refused::new(Reason::UnknownKey),
            KeyError::Rejected => Refused::new(Reason::BadSignature),
            KeyError::RevokedKey => Refused::by_trust(Reason::Revoked, KernelDetail::RevokedKey),
            KeyError::Malformed => Refused::parse(SignatureError::BadCms.into()),
            KeyError::Failed(e) => {
                Refused::by_trust(Reason::Error, KernelDetail::Errno(e.to_errno()))
            }
        })
    }

    fn check_revocation(&mut self, digest: &[u8; 32]) -> Result<(), Refusal> {
        // elfsig-core asks for the signature's answer first; a check still running beside
        // holds the policy this one needs: refuse rather than look without it.
        if let Some(running) = self.beside.take() {
            self.policy = running.wait().policy.take();
            return Err(Refused::by_trust(
                Reason::Error,
                KernelDetail::Errno(EINVAL.to_errno()),
            ));
        }
        let by_policy = self
            .policy
            .as_ref()
            .is_some_and(|policy| crate::elfsig_core::policy::lists(policy.digests(), digest));
        match keys::is_revoked(digest) {
            Ok(false) if !by_policy => Ok(()),
            Ok(_) => Err(Refused::by_trust(
                Reason::Revoked,
                KernelDetail::Revoked(*digest),
            )),
            Err(e) => Err(Refused::by_trust(
                Reason::Error,
                KernelDetail::Errno(e.to_errno()),
            )),
        }
    }
}

/// A buffer from `kvmalloc`, counted in the stats while it lives.
struct Charged {
    buf: KVVec<u8>,
    _charge: MemoryCharge<'static>,
}

impl AsMut<[u8]> for Charged {
    fn as_mut(&mut self) -> &mut [u8] {
        &mut self.buf
    }
}

/// Buffers from `kvmalloc` (the hashing chunk is 64 KiB, which `kmalloc` may fail to find
/// contiguous under fragmentation).
struct Vmalloc;

impl Scratch for Vmalloc {
    type Buffer = Charged;

    fn buffer(&mut self, len: usize) -> Option<Charged> {
        let buf = KVVec::from_elem(0u8, len, GFP_KERNEL).ok()?;
        Some(Charged {
            buf,
            _charge: STATE.stats.charge(len),
        })
    }
}

/// A file that verified.
pub(crate) struct Verified<'n> {
    /// The digest it was signed with.
    pub(crate) digest: [u8; 32],
    /// What its signature entitles it to.
    pub(crate) entitlements: Entitlements,
    /// What exec makes of it, read from the verified content.
    pub(crate) exec: Exec<'n>,
}

/// Verifies `file` with elfsig-core's verifier on the kernel's path (only what locating the
/// signature needs: the signature covers the rest); returns its digest and what exec makes of
/// it, read through the same reader (the interpreter's name goes into `name`).
pub(crate) fn verify_file<'n>(
    file: FileRef<'_>,
    name: &'n mut KVec<u8>,
) -> Result<Verified<'n>, Failure> {
    let mut reader = reader(file);
    let mut keyrings = Keyrings::new();
    let mut counted = CountingLent(&mut reader);
    let verified =
        verify::<KernelSha256, _, _>(&mut counted, Structure::Locate, &mut keyrings, &mut Vmalloc)?;
    Ok(Verified {
        digest: verified.digest,
        entitlements: verified.entitlements,
        exec: read_exec(&mut reader, name)?,
    })
}

/// Refuses a digest revoked in `.blacklist`, and refuses when revocation cannot be checked. A
/// cached verdict needs no check against the policy: loading one empties the cache.
pub(crate) fn not_revoked(digest: &[u8; 32]) -> Result<(), Failure> {
    Ok(Keyrings {
        policy: None,
        beside: None,
    }
    .check_revocation(digest)?)
}

/// What exec makes of a file.
pub(crate) struct Exec<'n> {
    /// The ELF interpreter it names in its first `PT_INTERP`, as binfmt_elf reads it.
    pub(crate) interpreter: Option<&'n CStr>,
    /// Whether it is a dynamic loader (see [`ExecInfo`]).
    pub(crate) loader: bool,
    /// Whether exec gives it an executable stack (see [`ExecInfo`]).
    pub(crate) executable_stack: bool,
    /// Whether a segment exec maps is writable and executable (see [`ExecInfo`]).
    pub(crate) writable_executable: bool,
}

/// Reads what exec makes of `file`; the interpreter's name goes into `name` (NUL-terminated).
pub(crate) fn exec_info<'n>(
    file: FileRef<'_>,
    name: &'n mut KVec<u8>,
) -> Result<Exec<'n>, Failure> {
    read_exec(&mut reader(file), name)
}

fn read_exec<'n>(reader: &mut Reader<'_>, name: &'n mut KVec<u8>) -> Result<Exec<'n>, Failure> {
    let len = reader.len();
    let info = ExecInfo::read(reader, len).map_err(Refusal::parse)?;
    let Some(range) = info.interpreter else {
        return Ok(Exec {
            interpreter: None,
            loader: info.loader,
            executable_stack: info.executable_stack,
            writable_executable: info.writable_executable,
        });
    };
    let malformed = || Failure::new(Reason::MalformedElf);
    let name_len = usize::try_from(range.len).map_err(|_| malformed())?;
    *name = KVec::from_elem(0u8, name_len, GFP_KERNEL).map_err(|_| Failure::error(ENOMEM))?;
    reader
        .read_exact_at(range.offset, name)
        .map_err(|e| Refusal::parse(e.into()))?;
    // binfmt_elf requires the last byte to be NUL and uses the string up to the first one.
    if name.last() != Some(&0) {
        return Err(malformed());
    }
    // A range, not `position`: rustc 1.85 keeps position's overflow check (a panic).
    let first_nul = (0..name.len())
        .find(|&i| name.get(i) == Some(&0))
        .unwrap_or(0);
    let with_nul = name.get(..=first_nul).ok_or_else(malformed)?;
    let interpreter = CStr::from_bytes_with_nul(with_nul).map_err(|_| malformed())?;
    Ok(Exec {
        interpreter: Some(interpreter),
        loader: info.loader,
        executable_stack: info.executable_stack,
        writable_executable: info.writable_executable,
    })
}
