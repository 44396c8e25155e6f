//! The commands, one module each.

pub mod deb;
pub mod inspect;
pub mod keygen;
pub mod oci;
pub mod policy;
pub mod remove;
pub mod settings;
pub mod sign;
pub mod status;
pub mod verify;
