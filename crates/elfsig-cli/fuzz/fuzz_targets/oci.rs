//! Any bytes as a container image's layer through `elfsig oci sign` and `oci verify`: see
//! `crates/elfsig-cli/tests/common/images.rs`, which `tests/oci.rs` runs too.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../tests/common/in_process.rs"]
mod in_process;

#[path = "../../tests/common/images.rs"]
mod images;

fuzz_target!(|data: &[u8]| {
    images::check(data, "layer");
});
