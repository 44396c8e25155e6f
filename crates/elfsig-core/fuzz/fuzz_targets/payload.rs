//! Any bytes as a signature payload: decoding never panics, and what decodes re-encodes to the
//! same bytes.
#![no_main]

use elfsig_core::{der, Payload, SignedRecord};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(payload) = Payload::parse(data) {
        assert_eq!(payload.record.encode()[..], payload.record_bytes[..]);
        assert!(der::is_single_sequence(payload.cms));
    }
    if let Ok(record) = SignedRecord::decode(data) {
        assert_eq!(record.encode()[..], data[..]);
    }
    let _ = der::sequence_len(data);
});
