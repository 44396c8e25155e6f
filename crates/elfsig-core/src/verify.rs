//! Verifying a signed file: the steps and their order, which the CLI's `verify` and the kernel
//! module both run from here. What differs between them sits behind small traits: where the
//! bytes come from ([`Source`]), how SHA-256 is computed ([`Sha256`]), which keys are trusted
//! and what is revoked ([`Trust`]), and where buffers come from ([`Scratch`]).
//!
//! The order is part of the security argument, cheapest and most telling first:
//!
//! 1. Find the signature: only what locating it needs ([`Structure::Locate`], the kernel's
//!    path on every exec), or after validating the whole ELF layout
//!    ([`Structure::ValidateAll`], the CLI, which also reports malformed files that a loader
//!    would accept).
//! 2. Read and parse the payload: the record and the PKCS#7 blob.
//! 3. Check the PKCS#7 signature over the record. It needs no hashing, so a file signed by an
//!    unknown key is refused without being read. Where the environment can check it on another
//!    CPU ([`Trust::begin_signature`], the kernel with more than one), that check runs while
//!    the file is hashed instead, and its answer is taken before anything the hashing found:
//!    the refusal is the one it would have been, the file only read for nothing.
//! 4. Check the record's binding to this file: its length and the payload's position. A
//!    signature moved from another file, or a file grown or cut since signing, fails here.
//! 5. Hash everything but the payload in bounded chunks and compare with the signed digest.
//! 6. Ask whether that digest is revoked.

use core::fmt;
use core::ops::ControlFlow;

use super::{
    find_signature, ByteRange, ElfFile, Entitlements, Error, IoError, Payload, Reason, SignatureLocation, Source,
};

/// Bytes hashed per read: large enough that reads vanish in the cost of hashing, small enough to
/// stay in cache (measured in the CLI: 64 KiB chunks hash at 87% of in-memory SHA-256 speed,
/// 1 MiB chunks at 80%), and a fixed amount of memory whatever the file size.
pub const CHUNK: usize = 64 * 1024;

/// How much of the file's structure to check before looking for its signature.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Structure {
    /// Only what locating the signature needs: the kernel, which refuses nothing a loader would
    /// not, and reads as little as possible.
    Locate,
    /// The whole layout: every table, segment and section inside the file, at most one
    /// signature section, last. The CLI, so that it never vouches for a file it does not
    /// understand.
    ValidateAll,
}

/// SHA-256, as the environment computes it: the kernel's crypto API, or a Rust crate.
pub trait Sha256: Sized {
    /// Starts a digest; fails with an errno.
    fn start() -> Result<Self, i32>;
    /// Hashes `bytes`; fails with an errno.
    fn update(&mut self, bytes: &[u8]) -> Result<(), i32>;
    /// The digest; fails with an errno.
    fn finish(self) -> Result<[u8; 32], i32>;
}

/// Who is trusted: the kernel's keyrings and revocation list, or the certificates the CLI was
/// given.
pub trait Trust {
    /// Who signed a signature that verified.
    type Signer;
    /// What the environment adds to a refusal: an errno in the kernel, a message in the CLI.
    type Detail;

    /// Checks the PKCS#7 signature `cms` over the encoded record `record`. Refuses with
    /// [`Reason::UnknownKey`], [`Reason::BadSignature`], [`Reason::MalformedSignature`] or
    /// [`Reason::Error`].
    fn check_signature(&mut self, record: &[u8], cms: &[u8]) -> Result<Self::Signer, Refused<Self::Detail>>;

    /// Starts checking the signature `cms` over `record` elsewhere, on another CPU, while the
    /// file is hashed: true when it did, and the next [`Trust::check_signature`] (with the same
    /// arguments) then waits for that check and gives its answer. By default nothing is
    /// started, and the signature is checked before the file is read.
    fn begin_signature(&mut self, record: &[u8], cms: &[u8]) -> bool {
        let _ = (record, cms);
        false
    }

    /// Refuses a revoked digest with [`Reason::Revoked`], and with [`Reason::Error`] when
    /// revocation cannot be checked: failing to look is not "not revoked".
    fn check_revocation(&mut self, digest: &[u8; 32]) -> Result<(), Refused<Self::Detail>>;
}

/// Where the verifier's two buffers come from: the payload's (at most
/// [`super::MAX_PAYLOAD_LEN`] bytes) and one hashing chunk (at most [`CHUNK`] bytes).
pub trait Scratch {
    /// A buffer; freed when dropped.
    type Buffer: AsMut<[u8]>;
    /// A zeroed buffer of `len` bytes, or `None` when there is no memory for it.
    fn buffer(&mut self, len: usize) -> Option<Self::Buffer>;
}

/// A file that verified.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Verified<S> {
    /// Who signed it.
    pub signer: S,
    /// The digest it was signed with.
    pub digest: [u8; 32],
    /// What its signer entitles it to.
    pub entitlements: Entitlements,
    /// Where its signature is.
    pub location: SignatureLocation,
}

/// Why a file was refused, and what more there is to say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Refused<D> {
    /// Why, in the vocabulary every part of elfsig shares.
    pub reason: Reason,
    /// More detail, when there is any.
    pub detail: Detail<D>,
}

/// What a refusal says beyond its [`Reason`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Detail<D> {
    /// Nothing more.
    None,
    /// Why the file or its signature could not be parsed or read.
    Parse(Error),
    /// The file's length or its payload's position is not what was signed.
    Binding,
    /// The file's digest is not the signed one.
    Digest,
    /// Hashing or an allocation failed with this errno.
    Errno(i32),
    /// What the environment's [`Trust`] said.
    Trust(D),
}

/// `ENOMEM`, the errno of a refused allocation.
const ENOMEM: i32 = 12;

impl<D> Refused<D> {
    /// A refusal with nothing more to say.
    pub fn new(reason: Reason) -> Self {
        Refused { reason, detail: Detail::None }
    }

    /// A refusal by the environment's [`Trust`], with its detail.
    pub fn by_trust(reason: Reason, detail: D) -> Self {
        Refused { reason, detail: Detail::Trust(detail) }
    }

    /// A file or signature that could not be parsed or read.
    pub fn parse(error: Error) -> Self {
        Refused { reason: Reason::of(error), detail: Detail::Parse(error) }
    }

    /// Verification could not run: the environment failed with `errno`.
    pub fn errno(errno: i32) -> Self {
        Refused { reason: Reason::Error, detail: Detail::Errno(errno) }
    }
}

impl<D: fmt::Display> fmt::Display for Detail<D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Detail::None => Ok(()),
            Detail::Parse(Error::Io(e)) => write!(f, "{e}"),
            Detail::Parse(Error::Elf(e)) => write!(f, "{e}"),
            Detail::Parse(Error::Signature(e)) => write!(f, "{e}"),
            Detail::Binding => f.write_str("its length or signature position is not what was signed"),
            Detail::Digest => f.write_str("digest mismatch"),
            Detail::Errno(errno) => write!(f, "errno {errno}"),
            Detail::Trust(detail) => write!(f, "{detail}"),
        }
    }
}

/// `reason`, then `: detail` when there is one: what the CLI prints.
impl<D: fmt::Display> fmt::Display for Refused<D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.reason)?;
        match self.detail {
            Detail::None => Ok(()),
            ref detail => write!(f, ": {detail}"),
        }
    }
}

/// Verifies `file` (see the module documentation for the steps), hashing with `H`. The file's
/// length is the one `file` reports; a file that changes while it is read fails to verify.
pub fn verify<H: Sha256, T: Trust, F: Source>(
    file: &mut F,
    structure: Structure,
    trust: &mut T,
    scratch: &mut impl Scratch,
) -> Result<Verified<T::Signer>, Refused<T::Detail>> {
    let len = file.len();
    let located = match structure {
        Structure::Locate => find_signature(file, len),
        Structure::ValidateAll => ElfFile::parse(file, len).map(|elf| elf.signature),
    };
    let location = located.map_err(Refused::parse)?.ok_or(Refused::new(Reason::Unsigned))?;

    let mut payload_buf = scratch.buffer(location.payload_len()).ok_or(Refused::errno(ENOMEM))?;
    let payload = Payload::read(file, &location, payload_buf.as_mut()).map_err(Refused::parse)?;
    let checked_first = if trust.begin_signature(payload.record_bytes, payload.cms) {
        None
    } else {
        Some(trust.check_signature(payload.record_bytes, payload.cms)?)
    };
    let record = payload.record;
    let bound = record.matches(&location);
    let hashed = bound.then(|| digest::<H, T::Detail>(file, &location.hashed_ranges(), scratch));
    // The signature's answer first, as if it had been checked before the rest.
    let signer = match checked_first {
        Some(signer) => signer,
        None => trust.check_signature(payload.record_bytes, payload.cms)?,
    };
    let Some(hashed) = hashed else {
        return Err(Refused { reason: Reason::Modified, detail: Detail::Binding });
    };
    let digest = hashed?;
    if digest != record.digest {
        return Err(Refused { reason: Reason::Modified, detail: Detail::Digest });
    }
    trust.check_revocation(&digest)?;
    Ok(Verified { signer, digest, entitlements: record.entitlements, location })
}

/// SHA-256 of `ranges` of `file`: each range hashed where the file lends it
/// ([`Source::lend_at`]), the others read in chunks of at most [`CHUNK`] bytes through one
/// buffer, taken at the first of them.
fn digest<H: Sha256, D>(
    file: &mut impl Source,
    ranges: &[ByteRange],
    scratch: &mut impl Scratch,
) -> Result<[u8; 32], Refused<D>> {
    let total = ranges.iter().map(|r| r.len).fold(0, u64::saturating_add);
    // A small file needs no more than its own size.
    let chunk_len = usize::try_from(total.max(1)).map_or(CHUNK, |total| total.min(CHUNK));
    let mut buf = None;
    let mut sha = H::start().map_err(Refused::errno)?;
    for range in ranges {
        if hash_lent(file, range, &mut sha)? {
            continue;
        }
        let buf = match buf {
            Some(ref mut buf) => buf,
            None => buf.insert(scratch.buffer(chunk_len).ok_or(Refused::errno(ENOMEM))?),
        };
        let buf = buf.as_mut();
        for chunk in range.chunks(u64::try_from(chunk_len).unwrap_or(1)) {
            let bytes = usize::try_from(chunk.len).ok().and_then(|n| buf.get_mut(..n)).ok_or(Refused::errno(ENOMEM))?;
            file.read_exact_at(chunk.offset, bytes).map_err(|e| Refused::parse(e.into()))?;
            sha.update(bytes).map_err(Refused::errno)?;
        }
    }
    sha.finish().map_err(Refused::errno)
}

/// Hashes `range` where `file` lends it: true once all of it is hashed, false when the file
/// cannot lend it (nothing hashed). A lender that hands other than `range.len` bytes, or hands
/// some and then says it cannot, is refused as a read that came up short ([`IoError::End`]).
fn hash_lent<H: Sha256, D>(file: &mut impl Source, range: &ByteRange, sha: &mut H) -> Result<bool, Refused<D>> {
    let mut lent = 0u64;
    let mut failed = None;
    let mut to = |bytes: &[u8]| {
        lent = lent.saturating_add(u64::try_from(bytes.len()).unwrap_or(u64::MAX));
        match sha.update(bytes) {
            Ok(()) => ControlFlow::Continue(()),
            Err(errno) => {
                failed = Some(errno);
                ControlFlow::Break(())
            }
        }
    };
    let done = file.lend_at(range.offset, range.len, &mut to).map_err(|e| Refused::parse(e.into()))?;
    if let Some(errno) = failed {
        return Err(Refused::errno(errno));
    }
    match (done, lent) {
        (false, 0) => Ok(false),
        (true, lent) if lent == range.len => Ok(true),
        _ => Err(Refused::parse(IoError::End.into())),
    }
}
