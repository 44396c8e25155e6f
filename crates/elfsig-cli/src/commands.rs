//! The commands, one module each.

pub mod inspect;
pub mod keygen;
pub mod remove;
pub mod sign;
pub mod verify;
