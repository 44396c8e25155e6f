//! Replays every input in `tests/regressions/` through the CLI's round trip (the fuzz target's
//! checks, in `common/roundtrip.rs`): inputs that once broke it, and inputs fuzzing found that
//! reach what the fixtures do not.

#[allow(unreachable_pub)]
mod common;

#[test]
fn regressions_hold() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/regressions");
    for (name, bytes) in elfsig_fixtures::regression_inputs(&dir).unwrap() {
        common::roundtrip::check(&bytes, &name);
    }
}
