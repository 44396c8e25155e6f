// SPDX-License-Identifier: GPL-2.0

//! elfsig: refuses to execute ELF files that do not carry a valid elfsig signature by a trusted
//! key.
//!
//! A binfmt handler at the head of the list checks every ELF program, and the ELF interpreter it
//! names, before binfmt_elf loads them. The signature format comes from `crates/elfsig-core`,
//! compiled here from source.

use kernel::prelude::*;

#[allow(unused_attributes, missing_docs, unreachable_pub)]
#[path = "../crates/elfsig-core/src/lib.rs"]
pub mod elfsig_core;

mod cache;
mod control;
mod ffi;
mod policy;
mod stats;
mod verify;

module! {
    type: Elfsig,
    name: "elfsig",
    author: "elfsig developers",
    description: "Verifies elfsig signatures of ELF programs on execve",
    license: "GPL",
}

struct Elfsig;

impl kernel::Module for Elfsig {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        policy::configure(ffi::mode_param(), ffi::deny_loader_param(), ffi::lock_param())?;
        ffi::init()?;
        let registered = load_embedded_certs().and_then(|certs| ffi::register().map(|()| certs));
        let certs = match registered {
            Ok(n) => n,
            Err(e) => {
                ffi::exit();
                return Err(e);
            }
        };
        pr_info!(
            "{}{}{}, {} embedded certificate(s)\n",
            if policy::STATE.enforcing() { "enforcing" } else { "permissive" },
            if policy::STATE.denying_loader() { ", refusing direct runs of the dynamic loader" } else { "" },
            if policy::STATE.locked() { " (locked)" } else { "" },
            certs
        );
        Ok(Elfsig)
    }
}

impl Drop for Elfsig {
    fn drop(&mut self) {
        ffi::unregister();
        ffi::exit();
        pr_info!("unloaded\n");
    }
}

/// Adds the certificates embedded at build time (concatenated DER) to the module keyring.
fn load_embedded_certs() -> Result<usize> {
    let mut rest = ffi::embedded_certs();
    let mut count = 0usize;
    while !rest.is_empty() {
        let len = elfsig_core::der::sequence_len(rest).filter(|&n| n <= rest.len()).ok_or_else(|| {
            pr_err!("embedded certificates are not concatenated DER\n");
            EINVAL
        })?;
        let (cert, tail) = rest.split_at(len);
        ffi::add_cert(cert).inspect_err(|e| pr_err!("cannot add embedded certificate {}: {:?}\n", count, e))?;
        count = count.saturating_add(1);
        rest = tail;
    }
    Ok(count)
}
