//! The elfsig signature format: ELF layout parsing, the byte ranges a signature covers, and the
//! signed record.
//!
//! This crate is shared. The `elfsig` CLI links it as a crate and the kernel module compiles these
//! same files with `#[path]`, so it is `#![no_std]`, has no dependencies, contains no `unsafe`, and
//! cannot panic: in the kernel a panic is a `BUG()`. Every offset is computed with checked
//! arithmetic and every byte is read with `get`; the clippy lints below hold the line.
//!
//! Paths inside the crate are relative (`super::`), never `crate::`: in the kernel module this
//! crate is a module, and `crate::` would name the module's own root.
//!
//! The format itself is described in `docs/FORMAT.md`. In short: the signer appends a copy of the
//! section-name table, a signature payload and a new section header table to the untouched original
//! file, and the last section header describes the payload (files without a section header table
//! get the payload and a trailer pointing at it instead). Everything except the payload is
//! hashed; the payload holds a [`SignedRecord`] (which pins the file length, the payload position,
//! the digest and what `remove` needs) followed by a detached PKCS#7 signature over the record.
//!
//! The signature section is an ordinary `SHT_PROGBITS` section without flags (so that every ELF
//! tool accepts it and no loader maps it), recognised by being last and by the record magic its
//! contents start with.
#![no_std]
#![forbid(unsafe_code)]
#![deny(
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::unreachable,
    clippy::todo,
    clippy::unimplemented,
    clippy::as_conversions,
    missing_docs
)]

#[cfg(test)]
extern crate std;

pub mod control;
pub mod der;
pub mod elf;
pub mod endian;
pub mod entitlements;
pub mod error;
pub mod filesystem;
#[cfg(feature = "signer")]
pub mod layout;
pub mod locate;
pub mod payload;
pub mod policy;
pub mod range;
pub mod read;
pub mod record;
pub mod script;
pub mod verify;
#[cfg(feature = "signer")]
pub mod view;

pub use elf::{Class, ElfFile, FileHeader, SectionHeader, SectionTable};
pub use endian::Endian;
pub use entitlements::{Entitlement, Entitlements};
pub use error::{ElfError, Error, Reason, SignatureError};
#[cfg(feature = "signer")]
pub use layout::{LayoutAnchor, SignedLayout};
pub use locate::{find_signature, Anchor, SignatureLocation};
pub use payload::Payload;
pub use policy::{PolicyError, SignedPolicy};
pub use range::ByteRange;
pub use read::{IoError, LendTo, ReadAt, ReadSomeAt, Source, Windowed};
pub use record::{HashAlgorithm, Original, SignedRecord};
pub use verify::{verify, Detail, Refused, Scratch, Sha256, Structure, Trust, Verified};
#[cfg(feature = "signer")]
pub use view::{OriginalView, SignedView};

/// Name of the signature section in the section-name string table.
pub const SIGNATURE_SECTION_NAME: &[u8] = b".elfsig";

/// Smallest PKCS#7 blob accepted: anything shorter cannot hold a SignedData.
pub const MIN_CMS_LEN: usize = 64;

/// Largest PKCS#7 blob accepted. A detached SignedData with one RSA-4096 signer and no
/// certificates takes under 1 KiB; the bound leaves room for long issuer names while letting a
/// parser refuse absurd sizes before allocating anything.
pub const MAX_CMS_LEN: usize = 16 * 1024;

/// Largest signature payload (record plus PKCS#7) accepted.
pub const MAX_PAYLOAD_LEN: usize = SignedRecord::LEN + MAX_CMS_LEN;

/// Smallest signature payload accepted.
pub const MIN_PAYLOAD_LEN: usize = SignedRecord::LEN + MIN_CMS_LEN;
