//! Any bytes through the CLI's round trip: see `crates/elfsig-cli/tests/common/roundtrip.rs`,
//! which the regression test replays too.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../tests/common/in_process.rs"]
mod in_process;

#[path = "../../tests/common/roundtrip.rs"]
mod roundtrip;

fuzz_target!(|data: &[u8]| roundtrip::check(data, "file"));
