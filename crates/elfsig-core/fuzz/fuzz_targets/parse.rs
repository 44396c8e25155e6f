//! Any bytes as a file: parsing never panics and agrees with itself; any file the parser
//! accepts can be signed, and removing the signature gives it back byte for byte.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../tests/support/invariants.rs"]
#[allow(dead_code)]
mod invariants;

fuzz_target!(|data: &[u8]| {
    invariants::parse_is_consistent(data);
    if let Some(signed) = invariants::sign_then_remove_is_identity(data) {
        invariants::parse_is_consistent(&signed);
        invariants::hashed_ranges_cover_all_but_payload(&signed);
    }
});
