// SPDX-License-Identifier: GPL-2.0

//! elfsig: refuses to execute ELF files that do not carry a valid elfsig signature by a trusted
//! key.
//!
//! A binfmt handler at the head of the list checks every ELF program, and the ELF interpreter it
//! names, before binfmt_elf loads them; a probe at the end of every exec checks that the
//! interpreter binfmt_elf mapped is the one checked. With the mapping guard (a BPF LSM program
//! that calls the module, `guard/`), every file mapped executable is checked too: shared
//! libraries, `dlopen`, `LD_PRELOAD`, `ld.so ./program`. The signature format and the
//! verification steps come from `crates/elfsig-core`, compiled here from source.

use kernel::prelude::*;

#[allow(unused_attributes, missing_docs, unreachable_pub)]
#[rustfmt::skip]
#[path = "../crates/elfsig-core/src/lib.rs"]
pub mod elfsig_core;

// From the top down: what C calls (glue/callbacks.rs) reaches the hooks, the end-of-exec check,
// the run-time rules and the control files; they ask the verdict and report refusals; all of them read the state;
// the glue's wrappers are the ground.
mod control;
mod exec_end;
mod hooks;
mod policy;
mod runtime;

mod pending;
mod refusal;
mod verdict;

mod cache;
mod guard;
mod state;
mod stats;
mod text;

mod glue;

use glue::{binfmt, crypto, file, guard as guard_glue, keys, module, securityfs};
use state::STATE;

module! {
    type: Elfsig,
    name: "elfsig",
    description: "Verifies elfsig signatures of ELF programs on execve",
    license: "GPL",
}

/// The module, loaded: what init set up, in the order exit takes it down (fields drop in
/// declaration order), execs first.
struct Elfsig {
    _guard: guard_glue::Links,
    _binfmt: binfmt::Registration,
    _exec_end: glue::exec_end::Probe,
    _pending: glue::pending::Table,
    _records: glue::records::Table,
    _control: securityfs::ControlDir,
    _faults: file::FaultInjection,
    _policy_keyring: keys::Keyring,
    _keyring: keys::Keyring,
    _sha256: crypto::Transform,
}

impl kernel::Module for Elfsig {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let params = module::params();
        control::configure(&params)?;
        let sha256 = crypto::Transform::alloc()?;
        let keyring = keys::Keyring::programs()?;
        load_embedded_certs(module::embedded_certs(), |cert| keyring.add_cert(cert))?;
        let policy_keyring = keys::Keyring::policies()?;
        load_embedded_certs(module::embedded_policy_certs(), |cert| {
            policy_keyring.add_cert(cert)
        })?;
        let faults = file::FaultInjection::create();
        let control = securityfs::ControlDir::create(
            control::DIR,
            control::FILES.iter().map(|file| (file.name, file.mode)),
        )?;
        if params.trust_initramfs {
            if file::trust_initramfs() {
                runtime::initramfs_loaded_the_module();
                pr_info!(
                    "trusting the initramfs's own files, unchanged since it loaded the module\n"
                );
            } else {
                pr_info!("trust_initramfs ignored: not loaded from the initramfs\n");
            }
        }
        let probe = glue::exec_end::Probe::register()?;
        if let Err(why) = STATE.guard.offer() {
            // After 6.12 the print macros take the kernel's own Display, which `Arguments` has
            // and `Unavailable` has not.
            if params.require_mmap_guard {
                pr_err!(
                    "the mapping guard is unavailable: {}; require_mmap_guard=1 refuses to load\n",
                    format_args!("{why}")
                );
                return Err(ENODEV);
            }
            pr_warn!(
                "the mapping guard is unavailable: {}; only execs are checked\n",
                format_args!("{why}")
            );
        }
        // Nothing can fail from here on: execs reach the module, and the lock pins it.
        let binfmt = binfmt::Registration::register();
        if params.lock {
            STATE.lock();
        }
        Ok(Elfsig {
            _guard: guard_glue::Links::new(),
            _binfmt: binfmt,
            _exec_end: probe,
            _pending: glue::pending::Table::new(),
            _records: glue::records::Table::new(),
            _control: control,
            _faults: faults,
            _policy_keyring: policy_keyring,
            _keyring: keyring,
            _sha256: sha256,
        })
    }
}

/// Adds certificates embedded at build time (concatenated DER) with `add`.
fn load_embedded_certs(mut rest: &[u8], add: impl Fn(&[u8]) -> Result) -> Result {
    let mut index = 0usize;
    while !rest.is_empty() {
        let len = elfsig_core::der::sequence_len(rest)
            .filter(|&n| n <= rest.len())
            .ok_or_else(|| {
                pr_err!("embedded certificates are not concatenated DER\n");
                EINVAL
            })?;
        let (cert, tail) = rest.split_at(len);
        add(cert)
            .inspect_err(|e| pr_err!("cannot add embedded certificate {}: {:?}\n", index, e))?;
        index = index.saturating_add(1);
        rest = tail;
    }
    Ok(())
}
