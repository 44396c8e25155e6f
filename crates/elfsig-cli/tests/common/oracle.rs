//! External tools as oracles: finding and running them, and OpenSSL's own verdict on an elfsig
//! signature (`openssl cms -verify` of the PKCS#7 blob over the record), which shares no code
//! with elfsig's verifier.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use elfsig_fixtures::system_binary;

use crate::common::layout::RECORD_LEN;
use crate::common::payload;

/// The path of an external tool, or a failure naming the Debian package that provides it.
pub fn tool(name: &str, package: &str) -> PathBuf {
    system_binary(name).unwrap_or_else(|| panic!("{name} is not installed: install the Debian package {package}"))
}

/// Runs `program` in `dir`; its output, whatever its status.
pub fn run(program: &Path, args: &[&str], dir: &Path) -> Output {
    Command::new(program)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", program.display()))
}

/// Output as text, for messages.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The record and the PKCS#7 blob of a signed file.
pub fn record_and_blob(signed: &Path) -> (Vec<u8>, Vec<u8>) {
    let bytes = fs::read(signed).unwrap();
    let (offset, size) = payload(signed);
    let payload = &bytes[offset..offset + size];
    (payload[..RECORD_LEN].to_vec(), payload[RECORD_LEN..].to_vec())
}

/// `openssl cms -verify` of `blob` over `record`, trusting `cert` alone.
pub fn openssl_verify(dir: &Path, record: &[u8], blob: &[u8], cert: &Path) -> Output {
    let openssl = tool("openssl", "openssl");
    fs::write(dir.join("record.bin"), record).unwrap();
    fs::write(dir.join("sig.p7"), blob).unwrap();
    let cert = cert.to_str().unwrap();
    let args = [
        "cms",
        "-verify",
        "-binary",
        "-inform",
        "DER",
        "-in",
        "sig.p7",
        "-content",
        "record.bin",
        "-certfile",
        cert,
        "-CAfile",
        cert,
        "-partial_chain",
        "-purpose",
        "any",
        "-out",
        "/dev/null",
    ];
    run(&openssl, &args, dir)
}
