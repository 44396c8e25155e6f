//! The elfsig kernel module's control files (`/sys/kernel/security/elfsig/`), as user space
//! reads and writes them. This crate is that interface's one definition outside the module:
//! the `elfsig` CLI's admin commands (`status`, `mode`, `loader`, `untrusted`, `flush`),
//! `elfsig-guard` and
//! the VM tests use it. kmod/README.md documents the files; kmod/control.rs makes them.
//!
//! Every error says what to do about it: the module not loaded, not root, locked, or a file
//! whose contents this version does not understand (a module newer than the tool).

mod dir;
mod error;
pub mod keys;
mod policy;
mod settings;
mod stats;

pub use dir::{Control, DEFAULT_DIR, DIR_VARIABLE};
pub use error::Error;
pub use policy::LoadedPolicy;
pub use settings::{Filesystems, Guard, Loader, Mode, Runtime, Untrusted};
pub use stats::Stats;
