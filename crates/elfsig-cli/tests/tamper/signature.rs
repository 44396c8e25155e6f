//! The signature payload: its record and PKCS#7 bytes, another file's payload in its place, and a
//! certificate other than the signer's.

use std::fs;

use crate::common::layout::{Layout, RECORD_DIGEST, RECORD_LEN};
use crate::common::messages::{
    BAD_RECORD_MAGIC, BAD_SIGNATURE, MALFORMED_SIGNATURE, MODIFIED, MOVED, NOT_SIGNED, Says, UNKNOWN_KEY, refused,
};
use crate::common::{Scratch, find_payload, keys, sign, verify};
use crate::{flip, tampered, targets};

#[test]
fn signature_bytes() {
    let (keys, scratch) = (keys("a"), Scratch::new());
    for t in targets() {
        let p = t.payload;
        let end = p.offset + p.size;
        // Without the record magic, a last section is not a signature section; a trailer still
        // names the payload, which is then malformed.
        let no_magic = if t.has_sections() { NOT_SIGNED } else { BAD_RECORD_MAGIC };
        let cases = [
            ("rsa-last", end - 1, Says::Exactly(BAD_SIGNATURE)),
            ("rsa-middle", end - 128, Says::Exactly(BAD_SIGNATURE)),
            ("record-digest", p.offset + RECORD_DIGEST, Says::Exactly(BAD_SIGNATURE)),
            ("record-digest-last", p.offset + RECORD_LEN - 1, Says::Exactly(BAD_SIGNATURE)),
            ("record-signed-length", p.offset + 16, Says::Exactly(BAD_SIGNATURE)),
            ("record-magic", p.offset, Says::Exactly(no_magic)),
            ("record-magic-last", p.offset + 7, Says::Exactly(no_magic)),
        ];
        for (what, at, says) in cases {
            refused(&keys, &scratch, &format!("{}-{what}", t.name), &tampered(t, flip(at)), says);
        }
    }
}

const SHA512_OID: &[u8] = &[0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x03];

const RSA_ENCRYPTION_NULL: &[u8] = &[0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01, 0x05, 0x00];

/// Changes the byte `at_in(blob)` of each target's PKCS#7 blob to `value` and checks that
/// `verify` calls the signature malformed.
fn refuse_blob_change(what: &str, at_in: impl Fn(&[u8]) -> usize, value: u8) {
    let (keys, scratch) = (keys("a"), Scratch::new());
    for t in targets() {
        let p = t.payload;
        let cms_at = p.offset + RECORD_LEN;
        let at = cms_at + at_in(&t.signed[cms_at..p.offset + p.size]);
        assert_ne!(t.signed[at], value);
        let bytes = tampered(t, |b| b[at] = value);
        refused(&keys, &scratch, &format!("{}-{what}", t.name), &bytes, Says::StartsWith(MALFORMED_SIGNATURE));
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> usize {
    haystack.windows(needle.len()).position(|w| w == needle).expect("the blob has the algorithm identifier")
}

/// The RSA signature covers the record, not the PKCS#7 blob around it, so `verify` must accept
/// only the blob the signer writes: otherwise the signed file is malleable (its bytes change and
/// it still verifies). Here the SignedData's `digestAlgorithms` set (the first SHA-512
/// identifier in the blob) says SHA-256, which OpenSSL refuses ("no matching digest").
#[test]
fn pkcs7_digest_algorithms_cannot_change() {
    refuse_blob_change("cms-digest-algorithms", |cms| find(cms, SHA512_OID) + SHA512_OID.len() - 1, 0x01);
}

/// Both of the blob's digest algorithms changed to SHA-256, which elfsig accepts from RSA keys
/// (what it signed with before): the blob is canonical again, and the signature still fails,
/// since PKCS#1 v1.5 signs the hash's name with the digest.
#[test]
fn pkcs7_hash_named_in_the_rsa_signature() {
    let (keys, scratch) = (keys("a"), Scratch::new());
    for t in targets() {
        let p = t.payload;
        let cms_at = p.offset + RECORD_LEN;
        let cms = &t.signed[cms_at..p.offset + p.size];
        let ats: Vec<usize> = cms
            .windows(SHA512_OID.len())
            .enumerate()
            .filter(|(_, w)| *w == SHA512_OID)
            .map(|(i, _)| cms_at + i + SHA512_OID.len() - 1)
            .collect();
        assert_eq!(ats.len(), 2, "{}: the set and the signer's", t.name);
        let bytes = tampered(t, |b| ats.iter().for_each(|&at| b[at] = 0x01));
        refused(&keys, &scratch, &format!("{}-cms-both-digests", t.name), &bytes, Says::Exactly(BAD_SIGNATURE));
    }
}

/// As above: the NULL parameters of rsaEncryption become an empty OCTET STRING.
#[test]
fn pkcs7_signature_algorithm_parameters_cannot_change() {
    refuse_blob_change(
        "cms-rsa-parameters",
        |cms| find(cms, RSA_ENCRYPTION_NULL) + RSA_ENCRYPTION_NULL.len() - 2,
        0x04,
    );
}

/// A byte in the middle of what the original's sections, or for a file without sections its
/// last non-empty loadable segment, hold: content that changes no layout.
fn content_byte(original: &[u8]) -> usize {
    let l = Layout::of(original);
    if l.shoff != 0 {
        let rodata = l.section(".rodata");
        return rodata.offset + rodata.size / 2;
    }
    let segment = l.load_contents.iter().rev().find(|s| !s.is_empty()).expect("a loadable segment");
    let at = segment.start + segment.len() / 2;
    assert!(!l.headers.iter().any(|h| h.contains(&at)), "the middle of the last segment is in the headers");
    at
}

#[test]
fn a_signature_moved_from_another_file() {
    let (keys, scratch) = (keys("a"), Scratch::new());
    let targets = targets();
    for (i, a) in targets.iter().enumerate() {
        let pa = a.payload;
        let payload_a = a.signed[pa.range()].to_vec();

        // Another program's signature, pasted over this one's.
        let b = &targets[(i + 1) % targets.len()];
        let pb = b.payload;
        assert_eq!(pa.size, pb.size, "one key, one payload size");
        assert_ne!(a.signed.len(), b.signed.len(), "{} and {} should differ in length", a.name, b.name);
        let bytes = tampered(a, |f| f[pa.range()].copy_from_slice(&b.signed[pb.range()]));
        refused(&keys, &scratch, &format!("{}-with-{}-signature", a.name, b.name), &bytes, Says::Exactly(MOVED));

        // A twin of the same length, changed in one byte and signed itself: same layout, so only
        // the digest can tell them apart.
        let mut twin = a.original.clone();
        twin[content_byte(&a.original)] ^= 0xff;
        let twin_path = scratch.write(&format!("{}-twin", a.name), &twin);
        sign(&keys, &twin_path);
        verify(&keys, &twin_path).success();
        let signed_twin = fs::read(&twin_path).unwrap();
        assert_eq!(signed_twin.len(), a.signed.len());
        assert_eq!(find_payload(&signed_twin), Some(pa), "{}: the twin's payload", a.name);
        let mut bytes = signed_twin;
        bytes[pa.range()].copy_from_slice(&payload_a);
        let file = format!("{}-twin-with-original-signature", a.name);
        refused(&keys, &scratch, &file, &bytes, Says::Exactly(MODIFIED));
    }
}

#[test]
fn the_wrong_certificate() {
    let scratch = Scratch::new();
    let other = keys("b");
    for t in targets() {
        let message = refused(&other, &scratch, &t.name, &t.signed, Says::StartsWith(UNKNOWN_KEY));
        assert!(message.contains("CN=elfsig test key a"), "{message:?} does not name the signer");
    }
}
