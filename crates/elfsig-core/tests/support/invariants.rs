//! Properties that must hold for every input, whatever its bytes: shared by the integration
//! tests and the fuzz target (which includes this file with `#[path]`).
//!
//! Each function panics (fails the test or reports a fuzzer crash) when a property does not hold.

use elfsig_core::elf::{ExecInfo, MAX_INTERP_LEN};
use elfsig_core::record::HashAlgorithm;
use elfsig_core::view::{OriginalView, SignedView};
use elfsig_core::{find_signature, ElfFile, Payload, ReadAt, SignedLayout, SignedRecord};

/// A stand-in for a PKCS#7 blob: one DER SEQUENCE of `len` bytes. The core checks only its outer
/// structure; the CLI tests use real signatures.
pub(crate) fn fake_cms(len: usize) -> Vec<u8> {
    assert!((256..=0xffff).contains(&len));
    let content = len - 4;
    let mut cms = vec![0x30, 0x82, (content >> 8) as u8, content as u8];
    cms.resize(len, 0x5a);
    cms
}

/// Reads all of `len` bytes from `source`.
pub(crate) fn read_all(source: &mut dyn ReadAt, len: u64) -> Vec<u8> {
    let mut out = vec![0u8; usize::try_from(len).unwrap()];
    source.read_exact_at(0, &mut out).expect("a view reads every byte it claims");
    out
}

/// What parsing `data` must never do: panic, or disagree with itself.
pub(crate) fn parse_is_consistent(data: &[u8]) {
    let len = data.len() as u64;
    let located = find_signature(&mut &data[..], len);
    // What the kernel reads for its loader policy: an interpreter range binfmt_elf accepts.
    if let Ok(ExecInfo { interpreter: Some(range), .. }) = ExecInfo::read(&mut &data[..], len) {
        assert!((2..=MAX_INTERP_LEN).contains(&range.len) && range.within(len), "interpreter range {range:?}");
    }
    let Ok(elf) = ElfFile::parse(&mut &data[..], len) else { return };
    // The kernel's short path must agree with full validation on every valid file.
    assert_eq!(located.ok().flatten(), elf.signature, "locator and validator disagree");
    if let Some(location) = elf.signature {
        let [before, after] = location.hashed_ranges();
        assert_eq!(before.offset, 0);
        assert_eq!(before.len, location.payload.offset);
        assert_eq!(after.offset, location.payload.end().unwrap());
        assert_eq!(after.end(), Some(len));
        assert_eq!(location.hashed_len() + location.payload.len, len);
        let mut buf = vec![0u8; elfsig_core::MAX_PAYLOAD_LEN];
        if let Ok(payload) = Payload::read(&mut &data[..], &location, &mut buf) {
            assert_eq!(SignedRecord::decode(payload.record_bytes), Ok(payload.record));
            assert_eq!(payload.record.encode()[..], payload.record_bytes[..]);
        }
    }
}

/// Signing any valid unsigned file (as the layout and views define it, with a stand-in
/// signature) gives a valid file whose signature is found where the layout put it, and removing
/// it gives the original back byte for byte. Returns the signed bytes, if `data` was signable.
pub(crate) fn sign_then_remove_is_identity(data: &[u8]) -> Option<Vec<u8>> {
    let len = data.len() as u64;
    let original = ElfFile::parse(&mut &data[..], len).ok()?;
    if original.signature.is_some() {
        return None;
    }
    let cms = fake_cms(600);
    let payload_len = Payload::encoded_len(cms.len()).unwrap() as u64;
    let layout = SignedLayout::plan(&original, payload_len).ok()?;

    // What the signer hashes and writes.
    let mut source: &[u8] = data;
    let unsigned = read_all(&mut SignedView::new(&mut source, layout, &[]).unwrap(), layout.file_len);
    let record = layout.record(HashAlgorithm::Sha256, [0x11; 32], elfsig_core::Entitlements::NONE);
    let mut payload = record.encode().to_vec();
    payload.extend_from_slice(&cms);
    let signed = read_all(&mut SignedView::new(&mut source, layout, &payload).unwrap(), layout.file_len);
    let p = usize::try_from(layout.payload.offset).unwrap();
    assert_eq!(signed[..p], unsigned[..p], "the payload is the only difference");
    assert_eq!(signed[p + payload.len()..], unsigned[p + payload.len()..]);

    // The signed file is valid, and its signature is where the layout put it.
    let signed_len = signed.len() as u64;
    let parsed = ElfFile::parse(&mut &signed[..], signed_len).expect("a signed file is valid");
    let location = parsed.signature.expect("a signed file is signed");
    assert_eq!(location.payload, layout.payload);
    assert_eq!(find_signature(&mut &signed[..], signed_len), Ok(Some(location)));
    assert_eq!(location.hashed_ranges(), layout.payload.around(layout.file_len));
    let mut buf = vec![0u8; location.payload_len()];
    let read = Payload::read(&mut &signed[..], &location, &mut buf).expect("the payload parses");
    assert_eq!(read.record, record);
    assert!(read.record.matches(&location));
    // Signing changes nothing exec reads: the interpreter and the loader flag are the same.
    let exec = |bytes: &[u8]| ExecInfo::read(&mut &bytes[..], bytes.len() as u64);
    assert_eq!(exec(&signed), exec(data), "signing changed what exec reads");

    // Removal restores the original, and re-signing it reproduces the signed file.
    let mut signed_source: &[u8] = &signed;
    let mut view = OriginalView::new(&mut signed_source, &location, &read.record).unwrap();
    let restored = read_all(&mut view, record.original.len);
    assert!(restored == data, "removal does not restore the original");
    let mut restored_source: &[u8] = &restored;
    let again = read_all(&mut SignedView::new(&mut restored_source, layout, &payload).unwrap(), layout.file_len);
    assert!(again == signed, "signing the restored original differs");
    Some(signed)
}

/// The payload of a file must be excluded from what is hashed and nothing else: flipping any
/// byte outside it changes the hashed bytes. Checks the ranges directly.
pub(crate) fn hashed_ranges_cover_all_but_payload(signed: &[u8]) {
    let len = signed.len() as u64;
    let location = find_signature(&mut &signed[..], len).unwrap().unwrap();
    let mut covered = vec![false; signed.len()];
    for range in location.hashed_ranges() {
        for chunk in range.chunks(4096) {
            for i in chunk.offset..chunk.end().unwrap() {
                assert!(!covered[i as usize], "byte {i} hashed twice");
                covered[i as usize] = true;
            }
        }
    }
    let payload = location.payload;
    for (i, c) in covered.iter().enumerate() {
        let in_payload = (payload.offset..payload.end().unwrap()).contains(&(i as u64));
        assert_eq!(*c, !in_payload, "byte {i}: hashed {c}, in payload {in_payload}");
    }
}
