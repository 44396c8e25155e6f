//! The end-to-end cases, in the order they run: this file registers the groups, each in a file
//! of its own. Each case restores what it changes, except the last, which locks the module.
//!
//! The initramfs `cargo xtask test` builds holds (see xtask/src/vm/initramfs.rs):
//! `/elfsig.ko`; `/bin/busybox` (signed) and `/bin/sh`; `/t/signed/` programs signed with the
//! kernel's built-in test key; `/t/module/` signed with the key embedded in the module;
//! `/t/other/` signed with an untrusted key; `/t/unsigned/`; `/t/scripts/`; `/t/manifest` and
//! `/t/revoke.p7` for revocation; dynamic programs' libraries and a signed `ld.so`; the CLI
//! (`/bin/elfsig`, signed) and the kernel key's private key and certificate in `/t/keys/`.

mod changes;
mod exec;
mod interpreters;
mod lifecycle;
mod policy;
mod signatures;

use std::cell::RefCell;

use elfsig_guest::harness::Suite;

use crate::{admin, audit, kernel_log, mapping, runtime, signed_policy, unprivileged};

/// The checks the module hands to other CPUs (kmod/verdict/ahead.rs, the signature checked while
/// the file is hashed), alone, in a guest of two vCPUs: the module loaded and its guard attached
/// (which the vfat interpreter of `ld_so_not_in_the_page_cache_checked_after_the_program` needs:
/// a file whose verdict is not kept is known unchanged at the end of the exec only by the
/// guard's check of its mapping), nothing unloaded. True when all passed.
pub(crate) fn run_beside() -> bool {
    let mut suite = Suite::default();
    suite.case("two_cpus_online", interpreters::two_cpus_online);
    lifecycle::load_cases(&mut suite);
    mapping::attach_case(&mut suite);
    interpreters::beside_cases(&mut suite);
    suite.case("kernel_log_has_no_bug_warning_or_oops", kernel_log::is_clean);
    suite.run("elfsig: checks on other CPUs")
}

/// Runs every case; true when all passed.
pub(crate) fn run_all() -> bool {
    // What the coreutils print without the module.
    let baseline = RefCell::new(Vec::new());
    let mut suite = Suite::default();

    exec::without_module_case(&mut suite, &baseline);
    lifecycle::load_cases(&mut suite);
    mapping::attach_case(&mut suite);
    exec::cases(&mut suite, &baseline);
    signatures::cases(&mut suite);
    changes::cases(&mut suite);
    interpreters::cases(&mut suite);
    mapping::cases(&mut suite);
    admin::cases(&mut suite);
    policy::cases(&mut suite);
    signed_policy::cases(&mut suite);
    audit::cases(&mut suite);
    unprivileged::cases(&mut suite);
    runtime::cases(&mut suite);
    mapping::release_case(&mut suite);
    runtime::before_the_guard_case(&mut suite);
    mapping::unavailable_case(&mut suite);
    mapping::foreign_btf_ids_case(&mut suite);
    lifecycle::cases(&mut suite);
    lifecycle::lock_case(&mut suite, || {
        admin::refused_while_locked()?;
        signed_policy::locked()
    });
    // Last, over everything the cases did: on the debug kernel, KASAN, lockdep and the
    // atomic-sleep checks report there.
    suite.case("kernel_log_has_no_bug_warning_or_oops", kernel_log::is_clean);
    suite.run("elfsig: the kernel module's end-to-end cases")
}
