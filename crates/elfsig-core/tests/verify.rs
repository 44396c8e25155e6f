//! The verification steps shared by the CLI and the kernel module, with stand-ins for what the
//! environment provides (a non-cryptographic hash, a trust that accepts one blob), so that each
//! step and each way it can fail is checked here, where the order lives.

#[path = "support/invariants.rs"]
#[allow(dead_code)]
mod invariants;

use std::cell::Cell;

use elfsig_core::record::HashAlgorithm;
use elfsig_core::verify::CHUNK;
use elfsig_core::view::SignedView;
use elfsig_core::{
    verify, Detail, ElfError, ElfFile, Entitlement, Entitlements, Error, IoError, LendTo, Payload, ReadAt, Reason,
    Refused, Scratch, Sha256, SignedLayout, Source, Structure, Trust, Verified,
};
use elfsig_fixtures::{self as fixtures, Class, Endian, Spec};

thread_local! {
    /// Bytes the stand-in hash was given on this thread.
    static HASHED: Cell<u64> = const { Cell::new(0) };
    /// Make the stand-in hash fail.
    static HASH_FAILS: Cell<bool> = const { Cell::new(false) };
}

/// Four FNV-1a lanes: not cryptographic, but any changed byte changes it.
struct StandInHash([u64; 4]);

impl Sha256 for StandInHash {
    fn start() -> Result<Self, i32> {
        Ok(StandInHash([0xcbf2_9ce4_8422_2325, 1, 2, 3]))
    }

    fn update(&mut self, bytes: &[u8]) -> Result<(), i32> {
        if HASH_FAILS.get() {
            return Err(22);
        }
        HASHED.set(HASHED.get() + bytes.len() as u64);
        for &b in bytes {
            for (i, lane) in self.0.iter_mut().enumerate() {
                *lane = (*lane ^ u64::from(b).wrapping_add(i as u64)).wrapping_mul(0x100_0000_01b3);
            }
        }
        Ok(())
    }

    fn finish(self) -> Result<[u8; 32], i32> {
        let mut out = [0u8; 32];
        for (chunk, lane) in out.chunks_mut(8).zip(self.0) {
            chunk.copy_from_slice(&lane.to_le_bytes());
        }
        Ok(out)
    }
}

fn digest_of(bytes: &[u8]) -> [u8; 32] {
    let mut h = StandInHash::start().unwrap();
    h.update(bytes).unwrap();
    h.finish().unwrap()
}

/// Trusts one signature blob; everything else is by an unknown key. Revokes one digest. With
/// `beside`, it checks signatures "on another CPU": it begins them, and answers when asked.
#[derive(Clone)]
struct StandInTrust {
    trusted: Vec<u8>,
    revoked: Option<[u8; 32]>,
    revocation_fails: bool,
    beside: bool,
    /// The signature begun beside, not yet asked for.
    begun: Option<(Vec<u8>, Vec<u8>)>,
    /// Signatures checked (the answers given).
    checked: usize,
}

impl Trust for StandInTrust {
    type Signer = &'static str;
    type Detail = &'static str;

    fn check_signature(&mut self, record: &[u8], cms: &[u8]) -> Result<&'static str, Refused<&'static str>> {
        if let Some(begun) = self.begun.take() {
            assert_eq!(begun, (record.to_vec(), cms.to_vec()), "asked for another signature than the one begun");
        }
        self.checked += 1;
        if cms == self.trusted {
            Ok("the stand-in key")
        } else {
            Err(Refused::by_trust(Reason::UnknownKey, "not the stand-in key"))
        }
    }

    fn begin_signature(&mut self, record: &[u8], cms: &[u8]) -> bool {
        if self.beside {
            self.begun = Some((record.to_vec(), cms.to_vec()));
        }
        self.beside
    }

    fn check_revocation(&mut self, digest: &[u8; 32]) -> Result<(), Refused<&'static str>> {
        assert!(self.begun.is_none(), "a signature begun beside was never asked for");
        if self.revocation_fails {
            return Err(Refused::errno(12));
        }
        if self.revoked == Some(*digest) {
            Err(Refused::new(Reason::Revoked))
        } else {
            Ok(())
        }
    }
}

fn trust() -> StandInTrust {
    StandInTrust {
        trusted: invariants::fake_cms(600),
        revoked: None,
        revocation_fails: false,
        beside: false,
        begun: None,
        checked: 0,
    }
}

/// Buffers from the heap, until `budget` of them have been given out.
struct Heap {
    budget: usize,
}

impl Scratch for Heap {
    type Buffer = Vec<u8>;
    fn buffer(&mut self, len: usize) -> Option<Vec<u8>> {
        assert!(len <= CHUNK.max(elfsig_core::MAX_PAYLOAD_LEN), "asked for {len} bytes");
        self.budget = self.budget.checked_sub(1)?;
        Some(vec![0; len])
    }
}

/// `data` signed as the core defines signing, with the stand-in blob and the stand-in digest.
fn sign(data: &[u8]) -> Vec<u8> {
    sign_entitled(data, Entitlements::NONE)
}

/// [`sign`], granting `entitlements`.
fn sign_entitled(data: &[u8], entitlements: Entitlements) -> Vec<u8> {
    let original = ElfFile::parse(&mut &data[..], data.len() as u64).unwrap();
    let cms = invariants::fake_cms(600);
    let layout = SignedLayout::plan(&original, Payload::encoded_len(cms.len()).unwrap() as u64).unwrap();
    let mut source: &[u8] = data;
    let unsigned = invariants::read_all(&mut SignedView::new(&mut source, layout, &[]).unwrap(), layout.file_len);
    let hashed: Vec<u8> = layout
        .payload
        .around(layout.file_len)
        .iter()
        .flat_map(|r| &unsigned[r.offset as usize..][..r.len as usize])
        .copied()
        .collect();
    let mut payload = layout.record(HashAlgorithm::Sha256, digest_of(&hashed), entitlements).encode().to_vec();
    payload.extend_from_slice(&cms);
    invariants::read_all(&mut SignedView::new(&mut source, layout, &payload).unwrap(), layout.file_len)
}

fn run(
    bytes: &[u8],
    structure: Structure,
    trust: &mut StandInTrust,
) -> Result<Verified<&'static str>, Refused<&'static str>> {
    let mut source: &[u8] = bytes;
    verify::<StandInHash, _, _>(&mut source, structure, trust, &mut Heap { budget: 2 })
}

fn program() -> Vec<u8> {
    fixtures::synth(&Spec::new(Class::Elf64, Endian::Little))
}

const BOTH: [Structure; 2] = [Structure::Locate, Structure::ValidateAll];

#[test]
fn a_signed_file_verifies_with_its_digest_in_both_structures() {
    for spec in [Spec::new(Class::Elf64, Endian::Little), Spec::new(Class::Elf32, Endian::Big)] {
        let signed = sign(&fixtures::synth(&spec));
        for structure in BOTH {
            let verified = run(&signed, structure, &mut trust()).unwrap();
            assert_eq!(verified.signer, "the stand-in key");
            let hashed: Vec<u8> = verified
                .location
                .hashed_ranges()
                .iter()
                .flat_map(|r| &signed[r.offset as usize..][..r.len as usize])
                .copied()
                .collect();
            assert_eq!(verified.digest, digest_of(&hashed));
            assert_eq!(hashed.len() + verified.location.payload.len as usize, signed.len());
        }
    }
}

#[test]
fn a_signed_file_verifies_with_the_entitlements_its_signer_granted() {
    let program = program();
    assert_eq!(run(&sign(&program), Structure::Locate, &mut trust()).unwrap().entitlements, Entitlements::NONE);
    let granted: Entitlements = Entitlement::ALL.into_iter().collect();
    for structure in BOTH {
        let verified = run(&sign_entitled(&program, granted), structure, &mut trust()).unwrap();
        assert_eq!(verified.entitlements, granted);
    }
}

#[test]
fn files_larger_than_a_chunk_are_hashed_whole() {
    let trailing: Vec<u8> = (0..3 * CHUNK + 17).map(|i| (i * 7) as u8).collect();
    let signed = sign(&fixtures::synth(&Spec::new(Class::Elf64, Endian::Little).trailing(&trailing)));
    HASHED.set(0);
    let verified = run(&signed, Structure::Locate, &mut trust()).unwrap();
    assert_eq!(HASHED.get(), verified.location.hashed_len());
    let mut changed = signed.clone();
    changed[2 * CHUNK + 5] ^= 1;
    assert_eq!(
        run(&changed, Structure::Locate, &mut trust()),
        Err(Refused { reason: Reason::Modified, detail: Detail::Digest })
    );
}

#[test]
fn an_unsigned_file_is_unsigned() {
    for structure in BOTH {
        assert_eq!(run(&program(), structure, &mut trust()), Err(Refused::new(Reason::Unsigned)));
    }
}

#[test]
fn an_unknown_key_is_refused_before_anything_is_hashed() {
    let signed = sign(&program());
    let mut other = trust();
    other.trusted = invariants::fake_cms(601);
    HASHED.set(0);
    let refused = run(&signed, Structure::Locate, &mut other).unwrap_err();
    assert_eq!(refused, Refused::by_trust(Reason::UnknownKey, "not the stand-in key"));
    assert_eq!(HASHED.get(), 0, "hashed before checking the signature");
    assert_eq!(refused.to_string(), "signed by an unknown key: not the stand-in key");
}

#[test]
fn a_changed_byte_is_a_digest_mismatch_and_a_changed_length_a_binding_mismatch() {
    let signed = sign(&program());
    let mut changed = signed.clone();
    changed[24] ^= 0xff; // e_entry
    for structure in BOTH {
        let refused = run(&changed, structure, &mut trust()).unwrap_err();
        assert_eq!(refused, Refused { reason: Reason::Modified, detail: Detail::Digest });
        assert_eq!(refused.to_string(), "modified since it was signed: digest mismatch");
    }
    let mut longer = signed.clone();
    longer.push(0);
    HASHED.set(0);
    let refused = run(&longer, Structure::Locate, &mut trust()).unwrap_err();
    assert_eq!(refused, Refused { reason: Reason::Modified, detail: Detail::Binding });
    assert_eq!(HASHED.get(), 0, "hashed a file whose length is not the signed one");
}

#[test]
fn a_signature_checked_beside_the_hashing_gives_every_answer_the_one_checked_first_gives() {
    let signed = sign(&program());
    let mut changed = signed.clone();
    changed[24] ^= 0xff; // e_entry: a digest mismatch
    let mut longer = signed.clone();
    longer.push(0); // a binding mismatch
    let mut revoked = trust();
    revoked.revoked = Some(run(&signed, Structure::Locate, &mut trust()).unwrap().digest);
    let mut failing = trust();
    failing.revocation_fails = true;
    let mut other_key = trust();
    other_key.trusted = invariants::fake_cms(601);
    for file in [&signed, &changed, &longer] {
        for trust in [trust(), other_key.clone(), revoked.clone(), failing.clone()] {
            let (mut first, mut beside) = (trust.clone(), trust);
            beside.beside = true;
            let checked_first = run(file, Structure::Locate, &mut first);
            let checked_beside = run(file, Structure::Locate, &mut beside);
            assert_eq!(checked_first, checked_beside);
            assert_eq!((first.checked, beside.checked), (1, 1), "each checks the signature once");
        }
    }
    // A file whose length is not the signed one is not hashed, beside or not.
    let mut beside = trust();
    beside.beside = true;
    HASHED.set(0);
    assert_eq!(run(&longer, Structure::Locate, &mut beside).unwrap_err().reason, Reason::Modified);
    assert_eq!(HASHED.get(), 0, "hashed a file whose length is not the signed one");
}

#[test]
fn a_revoked_digest_is_refused_and_a_failed_lookup_is_not_a_pass() {
    let signed = sign(&program());
    let digest = run(&signed, Structure::Locate, &mut trust()).unwrap().digest;
    let mut revoking = trust();
    revoking.revoked = Some(digest);
    assert_eq!(run(&signed, Structure::Locate, &mut revoking), Err(Refused::new(Reason::Revoked)));
    let mut failing = trust();
    failing.revocation_fails = true;
    assert_eq!(run(&signed, Structure::Locate, &mut failing), Err(Refused::errno(12)));
}

#[test]
fn the_whole_layout_is_checked_only_when_asked() {
    // A section past the end of the file: binfmt_elf never reads section headers, so the
    // kernel's path only finds the file modified; the CLI's path names what is wrong.
    let signed = sign(&program());
    let location = run(&signed, Structure::Locate, &mut trust()).unwrap().location;
    let shoff = u64::from_le_bytes(signed[40..48].try_into().unwrap()) as usize;
    let mut broken = signed.clone();
    broken[shoff + 64 + 24..shoff + 64 + 32].copy_from_slice(&(signed.len() as u64 * 2).to_le_bytes());
    let patched = elfsig_core::ByteRange { offset: (shoff + 64 + 24) as u64, len: 8 };
    assert!(!patched.overlaps(&location.payload), "the patched header is hashed");
    let located = run(&broken, Structure::Locate, &mut trust()).unwrap_err();
    assert_eq!(located, Refused { reason: Reason::Modified, detail: Detail::Digest });
    let validated = run(&broken, Structure::ValidateAll, &mut trust()).unwrap_err();
    assert_eq!(validated, Refused::parse(ElfError::SectionOutOfBounds { index: 1 }.into()));
    assert_eq!(validated.reason, Reason::MalformedElf);
}

/// Fails every read that reaches `from` with EIO.
struct FailingFrom<'a> {
    bytes: &'a [u8],
    from: u64,
}

impl ReadAt for FailingFrom<'_> {
    fn read_exact_at(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), IoError> {
        if offset + buf.len() as u64 > self.from {
            return Err(IoError::Errno(5));
        }
        self.bytes.read_exact_at(offset, buf)
    }
}

impl Source for FailingFrom<'_> {
    fn len(&self) -> u64 {
        self.bytes.len() as u64
    }
}

#[test]
fn a_failed_read_refuses_with_its_errno_and_failed_resources_refuse_as_errors() {
    let signed = sign(&program());
    let mut failing = FailingFrom { bytes: &signed, from: 100 };
    let refused = verify::<StandInHash, _, _>(&mut failing, Structure::Locate, &mut trust(), &mut Heap { budget: 2 });
    assert_eq!(refused, Err(Refused::parse(Error::Io(IoError::Errno(5)))));
    assert_eq!(refused.unwrap_err().reason, Reason::IoError);

    // No memory for the payload, or for the hashing chunk.
    for budget in [0, 1] {
        let mut source: &[u8] = &signed;
        let refused = verify::<StandInHash, _, _>(&mut source, Structure::Locate, &mut trust(), &mut Heap { budget });
        assert_eq!(refused, Err(Refused::errno(12)), "budget {budget}");
    }
    HASH_FAILS.set(true);
    let refused = run(&signed, Structure::Locate, &mut trust());
    HASH_FAILS.set(false);
    assert_eq!(refused, Err(Refused { reason: Reason::Error, detail: Detail::Errno(22) }));
}

/// How a [`Lending`] source lends.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Lends {
    /// Everything, in pieces of `step` bytes.
    All { step: usize },
    /// Everything but the last byte of each range.
    Short,
    /// One byte more than asked.
    Long,
    /// The first piece, then EIO.
    FailsAfterOne,
    /// Nothing, after handing one piece: it breaks its word.
    RefusesAfterOne,
    /// The ranges that start the file, and not the others (which are read).
    FirstOnly,
}

/// Memory that lends its bytes instead of being read (as the kernel's page cache does), and
/// counts the bytes read.
struct Lending<'a> {
    bytes: &'a [u8],
    lends: Lends,
    read: u64,
}

impl ReadAt for Lending<'_> {
    fn read_exact_at(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), IoError> {
        self.read += buf.len() as u64;
        self.bytes.read_exact_at(offset, buf)
    }
}

impl Source for Lending<'_> {
    fn len(&self) -> u64 {
        self.bytes.len() as u64
    }

    fn lend_at(&mut self, offset: u64, len: u64, to: &mut LendTo<'_>) -> Result<bool, IoError> {
        let range = &self.bytes[offset as usize..][..len as usize];
        let long = [range, &[0]].concat();
        let (range, step) = match self.lends {
            Lends::All { step } => (range, step),
            Lends::Short => (&range[..range.len().saturating_sub(1)], 1000),
            Lends::Long => (&long[..], 1000),
            Lends::FailsAfterOne | Lends::RefusesAfterOne => (&range[..range.len().min(10)], 10),
            Lends::FirstOnly if offset == 0 => (range, 1000),
            Lends::FirstOnly => return Ok(false),
        };
        for piece in range.chunks(step) {
            if to(piece).is_break() {
                return Ok(true);
            }
        }
        match self.lends {
            Lends::FailsAfterOne => Err(IoError::Errno(5)),
            Lends::RefusesAfterOne => Ok(false),
            _ => Ok(true),
        }
    }
}

#[test]
fn lent_bytes_are_hashed_without_a_read_or_a_buffer_and_a_lender_that_cheats_is_refused() {
    let trailing: Vec<u8> = (0..2 * CHUNK + 17).map(|i| (i * 7) as u8).collect();
    let signed = sign(&fixtures::synth(&Spec::new(Class::Elf64, Endian::Little).trailing(&trailing)));
    let read = run(&signed, Structure::Locate, &mut trust()).unwrap();
    for step in [1, 4096, 3 * CHUNK] {
        let mut lending = Lending { bytes: &signed, lends: Lends::All { step }, read: 0 };
        HASHED.set(0);
        // One buffer only: the payload's.
        let lent = verify::<StandInHash, _, _>(&mut lending, Structure::Locate, &mut trust(), &mut Heap { budget: 1 });
        assert_eq!(lent.as_ref().map(|v| v.digest), Ok(read.digest), "pieces of {step}");
        assert_eq!(HASHED.get(), read.location.hashed_len());
        assert!(lending.read < 4096, "read {} bytes it was lent", lending.read);
    }
    // Some ranges lent, the rest read through the one buffer, taken when first needed.
    let mut some = Lending { bytes: &signed, lends: Lends::FirstOnly, read: 0 };
    let mixed = verify::<StandInHash, _, _>(&mut some, Structure::Locate, &mut trust(), &mut Heap { budget: 2 });
    assert_eq!(mixed.map(|v| v.digest), Ok(read.digest));
    let tail = read.location.hashed_ranges().iter().filter(|r| r.offset != 0).map(|r| r.len).sum::<u64>();
    assert!(tail > 0 && some.read >= tail, "read {} bytes of the {tail} not lent", some.read);
    let mut changed = signed.clone();
    changed[2 * CHUNK + 5] ^= 1;
    for lends in [Lends::All { step: 4096 }, Lends::FirstOnly] {
        let mut lending = Lending { bytes: &changed, lends, read: 0 };
        assert_eq!(
            verify::<StandInHash, _, _>(&mut lending, Structure::Locate, &mut trust(), &mut Heap { budget: 2 }),
            Err(Refused { reason: Reason::Modified, detail: Detail::Digest }),
            "{lends:?}"
        );
    }
    for (lends, refused) in [
        (Lends::Short, Refused::parse(Error::Io(IoError::End))),
        (Lends::Long, Refused::parse(Error::Io(IoError::End))),
        (Lends::RefusesAfterOne, Refused::parse(Error::Io(IoError::End))),
        (Lends::FailsAfterOne, Refused::parse(Error::Io(IoError::Errno(5)))),
    ] {
        let mut lending = Lending { bytes: &signed, lends, read: 0 };
        let got = verify::<StandInHash, _, _>(&mut lending, Structure::Locate, &mut trust(), &mut Heap { budget: 2 });
        assert_eq!(got, Err(refused), "{lends:?}");
    }
    // The hash failing on a lent piece stops the lending and refuses with its errno.
    let mut lending = Lending { bytes: &signed, lends: Lends::All { step: 4096 }, read: 0 };
    HASH_FAILS.set(true);
    let refused = verify::<StandInHash, _, _>(&mut lending, Structure::Locate, &mut trust(), &mut Heap { budget: 1 });
    HASH_FAILS.set(false);
    assert_eq!(refused, Err(Refused { reason: Reason::Error, detail: Detail::Errno(22) }));
}

#[test]
fn reasons_have_one_name_each() {
    let names: Vec<&str> = Reason::ALL.iter().map(|r| r.name()).collect();
    let mut unique = names.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), names.len());
    assert!(names.iter().all(|n| n.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')), "{names:?}");
}
