//! Any bytes as a Debian package through `elfsig deb sign` and `elfsig deb verify`, exactly as
//! a user runs them (in this process): never a panic; a failed `deb sign` writes nothing; what
//! `deb sign` writes passes `deb verify` with the signing certificate, and signing it again
//! changes nothing.
//!
//! Shared by the fuzz target `deb` (`crates/elfsig-cli/fuzz`, which includes this file by path)
//! and `tests/deb.rs`.

use std::fs;
use std::path::Path;

use super::in_process::{Setup, elfsig, path, setup};

fn sign(s: &Setup, input: &Path, out_dir: &Path) -> bool {
    elfsig(&["deb", "sign", "--key", path(&s.key), "--cert", path(&s.cert), "-o", path(out_dir), path(input)])
}

/// Runs `data` through both commands as the package `name`.deb; panics on any broken promise.
pub fn check(data: &[u8], name: &str) {
    let s = setup();
    let input = s.dir.join(format!("{name}.deb"));
    fs::write(&input, data).unwrap();
    let out_dir = s.dir.join(format!("{name}-signed"));
    let _ = fs::remove_dir_all(&out_dir);
    // Whatever it says, it says it without a panic.
    elfsig(&["deb", "verify", "--cert", path(&s.cert), path(&input)]);
    let output = out_dir.join(format!("{name}.deb"));
    if !sign(s, &input, &out_dir) {
        assert!(!output.exists(), "a failed deb sign wrote a package");
        return;
    }
    let signed = fs::read(&output).unwrap();
    assert!(elfsig(&["deb", "verify", "--cert", path(&s.cert), path(&output)]), "what deb sign wrote does not verify");
    let again = s.dir.join(format!("{name}-again"));
    let _ = fs::remove_dir_all(&again);
    assert!(sign(s, &output, &again), "deb sign failed on what it wrote");
    assert!(
        fs::read(again.join(format!("{name}.deb"))).unwrap() == signed,
        "signing a signed package again changed it"
    );
}
