//! Keys, certificates and PKCS#7 signatures, on the RustCrypto crates.

pub mod cert;
pub mod cms;
pub mod key;
