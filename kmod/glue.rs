// SPDX-License-Identifier: GPL-2.0

//! Safe wrappers around the C shim in `shim/`, one module per kernel abstraction, and the one
//! door through which C calls the module (`callbacks`).
//!
//! Every raw pointer, every call into C and every callback from C is in these modules; the
//! code above them reads like ordinary Rust. The wrappers import nothing of the module's own
//! but elfsig-core; `callbacks` alone calls up, into the rooms that decide. Resources the shim
//! sets up are tokens whose `Drop` undoes them, so that a failed module init unwinds in order.

pub(crate) mod audit;
pub(crate) mod binfmt;
pub(crate) mod callbacks;
pub(crate) mod crypto;
pub(crate) mod exec_end;
pub(crate) mod file;
pub(crate) mod guard;
pub(crate) mod keys;
pub(crate) mod module;
pub(crate) mod pending;
pub(crate) mod policy;
pub(crate) mod records;
pub(crate) mod securityfs;
pub(crate) mod workqueue;

use kernel::error::Error;
use kernel::ffi::c_int;
use kernel::prelude::*;

/// A shim call's return value: negative is an errno.
fn to_result(ret: c_int) -> Result {
    if ret < 0 {
        Err(Error::from_errno(ret))
    } else {
        Ok(())
    }
}
