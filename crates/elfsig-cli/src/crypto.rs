//! Keys (in files, or on PKCS#11 tokens), certificates and PKCS#7 signatures, on the RustCrypto
//! crates, and what the core's verifier needs from them.

pub mod cert;
pub mod cms;
pub mod ecdsa;
pub mod key;
pub mod pkcs11;
pub mod public_key;
pub mod signature;
pub mod trust;
