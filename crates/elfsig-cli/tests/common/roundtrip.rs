//! The CLI's round trip on any bytes, exactly as a user runs the commands (in this process):
//! `sign` either signs or leaves the file untouched; a signed file verifies, re-signing it with
//! the same key changes nothing, changing any byte of it stops it verifying, and `remove` gives
//! back the file as it was before it was signed, byte for byte. Never a panic.
//!
//! Shared by the fuzz target (`crates/elfsig-cli/fuzz`, which includes this file by path) and
//! `tests/regressions.rs`, which replays the inputs that once broke it. How it runs the CLI:
//! `in_process.rs`.

use std::fs;
use std::path::Path;

use super::in_process::{Setup, elfsig, path, setup};

fn sign(s: &Setup, file: &Path) -> bool {
    elfsig(&["sign", "--key", path(&s.key), "--cert", path(&s.cert), path(file)])
}

fn verify(s: &Setup, file: &Path) -> bool {
    elfsig(&["verify", "--cert", path(&s.cert), path(file)])
}

/// Runs the round trip on `data` as a file; panics on any broken promise. `name` keeps
/// callers on several threads out of each other's files.
pub fn check(data: &[u8], name: &str) {
    let s = setup();
    let file = s.dir.join(name);
    fs::write(&file, data).unwrap();

    // What `remove` must give back: the input without any signature it already carries.
    let unsigned = if elfsig(&["remove", path(&file)]) { fs::read(&file).unwrap() } else { data.to_vec() };
    if !elfsig(&["remove", path(&file)]) {
        assert_eq!(fs::read(&file).unwrap(), unsigned, "a failed remove changed the file");
    }
    fs::write(&file, data).unwrap();

    if !sign(s, &file) {
        assert_eq!(fs::read(&file).unwrap(), data, "a failed sign changed the file");
        assert!(!verify(s, &file), "a file that could not be signed verifies");
        return;
    }
    let signed = fs::read(&file).unwrap();
    assert!(verify(s, &file), "a freshly signed file does not verify");

    // Re-signing with the same key replaces the signature with the same bytes.
    assert!(sign(s, &file), "re-signing failed");
    assert!(fs::read(&file).unwrap() == signed, "re-signing with the same key changed the file");

    // Any changed byte stops verification.
    let at = data.iter().fold(0usize, |h, b| h.wrapping_mul(31).wrapping_add(usize::from(*b))) % signed.len();
    let mut tampered = signed.clone();
    tampered[at] ^= 0x01;
    let other = s.dir.join(format!("{name}.tampered"));
    fs::write(&other, &tampered).unwrap();
    assert!(!verify(s, &other), "changing byte {at} of a signed file went unnoticed");

    // Removing gives back the file as it was before it was signed.
    assert!(elfsig(&["remove", path(&file)]), "remove failed on a file sign just wrote");
    assert_eq!(fs::read(&file).unwrap(), unsigned, "remove did not restore the original");
}
