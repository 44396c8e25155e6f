//! Keys, certificates and PKCS#7 signatures, on the RustCrypto crates, and what the core's
//! verifier needs from them.

pub mod cert;
pub mod cms;
pub mod key;
pub mod signature;
pub mod trust;
