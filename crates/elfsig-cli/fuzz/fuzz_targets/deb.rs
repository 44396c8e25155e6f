//! Any bytes as a Debian package through `elfsig deb sign` and `deb verify`: see
//! `crates/elfsig-cli/tests/common/packages.rs`, which `tests/deb.rs` runs too.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../tests/common/in_process.rs"]
mod in_process;

#[path = "../../tests/common/packages.rs"]
mod packages;

fuzz_target!(|data: &[u8]| packages::check(data, "package"));
