//! The disturbances: what happens to the module and the kernel's keyrings while the load runs
//! (cache flushes, a key added and later removed, a revocation, permissive windows, unloading
//! and reloading, with the mapping guard released and attached again), and the faults injected
//! in the second phase.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use elfsig_guest::harness::{Context, Outcome, keyring, read, unload_when_idle, write_control};
use elfsig_guest::image;
use elfsig_guest::system;

use super::load::{Shared, Slot};

/// The disturbances, spread over `phase` in twelve ticks: a cache flush at each, the key added
/// at the third and removed (with a flush) at the ninth, the revocation at the sixth, a policy
/// revoking the policy slot's file at the seventh, an unload
/// and reload at the fourth and tenth, and a 100 ms permissive window at the other even ones. A
/// reload attaches the guard again, which takes seconds on the debug kernel (while nothing is
/// judged): a tick that comes late does what it missed at once, and the phase lasts until the
/// key and the revocation events have all happened, and (up to twice its length) until an exec
/// of the revoked file and one of the new key's were judged each way: when the reloads took
/// long, what follows the revocation is short, and the check must have run; twice its length
/// counts without the time the reloads took (12 guard programs attached again under the debug
/// kernel's KASAN take a good part of the phase). For the same
/// reason the key is removed, and the digest revoked, only once an exec was judged while they
/// were good (or, failing that, at twice the phase): a reload that took the whole window
/// between the key's addition and its removal left no exec to judge "must run" (seen once in
/// CI on the debug kernel). A distribution's kernel takes neither into its keyrings
/// (harness::NEEDS_TEST_KERNEL_KEY, NEEDS_REVOCABLE_KERNEL): there a signed policy trusts the
/// key and revokes the digest, a newer one for each change, loaded again after each reload.
pub(crate) fn disturb(shared: &Shared, phase: Duration) -> Outcome {
    let start = Instant::now();
    let tick = phase / 12;
    let mut round = 0u32;
    // The policies loaded, on both kernels (the policy slot's revocation); and whether they also
    // stand in for the keyrings.
    let mut policies = ByPolicy::default();
    let by_policy = elfsig_guest::on_distro_kernel();
    let secondary = keyring(".secondary_trusted_keys")?;
    let mut added = None;
    let keyed_judged = || {
        [Slot::Revokeme, Slot::Newkey, Slot::Policy]
            .into_iter()
            .all(|slot| shared.tally.judged(slot).iter().all(|n| *n > 0))
    };
    // The time spent reloading the module, when nothing is judged: "late" counts without it,
    // since on the debug kernel attaching the guard again can take a good part of the phase.
    let reloading = std::cell::Cell::new(Duration::ZERO);
    let late = || start.elapsed() >= phase * 2 + reloading.get();
    // Whether `slot` was judged "must run", or it is too late to wait for it.
    let ran_or_late = |slot: Slot| shared.tally.judged(slot)[1] > 0 || late();
    while start.elapsed() < phase
        || shared.key_removed.done.get().is_none()
        || shared.revocation.done.get().is_none()
        || shared.policy_revocation.done.get().is_none()
        || (!keyed_judged() && !late())
    {
        round += 1;
        if let Some(wait) = (tick * round).checked_sub(start.elapsed()) {
            std::thread::sleep(wait);
        }
        write_control("flush", "1").context("flush")?;
        if round == 3 {
            let key = match by_policy {
                true => shared.key_added.run(|| policies.trust(true)).map(|()| 0)?,
                false => {
                    let cert = read(image::ADDED_CERT)?;
                    shared.key_added.run(|| system::add_key("asymmetric", "", &cert, secondary).context("add a key"))?
                }
            };
            added = Some(key);
        }
        if let (true, Some(key)) = (round >= 9 && ran_or_late(Slot::Newkey), added) {
            added = None;
            match by_policy {
                true => shared.key_removed.run(|| policies.trust(false))?,
                false => shared.key_removed.run(|| {
                    system::unlink_key(key, secondary).context("remove the key")?;
                    write_control("flush", "1").context("flush")
                })?,
            }
        }
        if round >= 6 && shared.revocation.started.get().is_none() && ran_or_late(Slot::Revokeme) {
            match by_policy {
                true => shared.revocation.run(|| policies.revoke())?,
                false => {
                    let digest = crate::manifest::value("revoke_digest")?;
                    let signature = read(image::REVOCATION)?;
                    let blacklist = keyring(".blacklist")?;
                    shared.revocation.run(|| {
                        system::add_key("blacklist", &format!("bin:{digest}"), &signature, blacklist).context("revoke")
                    })?;
                }
            }
        }
        if round >= 7 && shared.policy_revocation.started.get().is_none() && ran_or_late(Slot::Policy) {
            shared.policy_revocation.run(|| policies.revoke_slot())?;
        }
        if !round.is_multiple_of(2) {
            continue;
        }
        shared.unenforced.fetch_add(1, Ordering::SeqCst);
        let result = if round != 4 && round != 10 {
            write_control("mode", "permissive").context("set permissive").and_then(|()| {
                std::thread::sleep(Duration::from_millis(100));
                write_control("mode", "enforce").context("set enforce")
            })
        } else {
            // The module holds its mapping guard, which must be released first and attached
            // again after.
            let began = Instant::now();
            let reloaded = write_control("guard", "release").context("release the guard").and_then(|()| {
                unload_when_idle("elfsig")?;
                std::thread::sleep(Duration::from_millis(100));
                system::load_module(Path::new(image::MODULE), "").context("reload")?;
                // What the boot hooks do: the policy, right after the module.
                policies.reload()?;
                crate::guard_control::attach()
            });
            reloading.set(reloading.get() + began.elapsed());
            reloaded
        };
        shared.unenforced.fetch_add(1, Ordering::SeqCst);
        result?;
    }
    Ok(())
}

/// What the policy says: whether it trusts the added key and revokes the revoked program's
/// digest (on a distribution's kernel, for the keyrings), whether it revokes the policy slot's
/// file, and the serial of the last one loaded.
#[derive(Default)]
struct ByPolicy {
    trusting: bool,
    revoked: bool,
    revoked_slot: bool,
    serial: u64,
}

impl ByPolicy {
    fn trust(&mut self, trusting: bool) -> Outcome {
        self.trusting = trusting;
        self.load()
    }

    fn revoke(&mut self) -> Outcome {
        self.revoked = true;
        self.load()
    }

    fn revoke_slot(&mut self) -> Outcome {
        self.revoked_slot = true;
        self.load()
    }

    /// After the module was loaded again, which forgot it.
    fn reload(&mut self) -> Outcome {
        if self.trusting || self.revoked || self.revoked_slot { self.load() } else { Ok(()) }
    }

    /// A newer policy saying what this one does, loaded.
    fn load(&mut self) -> Outcome {
        self.serial += 1;
        let serial = self.serial.to_string();
        let mut args = vec!["--serial", serial.as_str()];
        if self.trusting {
            args.extend(["--trust", image::ADDED_CERT]);
        }
        if self.revoked {
            args.extend(["--revoke", image::REVOKEME]);
        }
        let slot = super::load::policy_slot();
        if self.revoked_slot {
            args.extend(["--revoke", slot.as_str()]);
        }
        crate::policy_files::apply(&format!("stress-{serial}"), &args)
    }
}

/// Sets a fault-injection attribute in debugfs.
fn fault(attr: &str, file: &str, value: &str) -> Outcome {
    std::fs::write(format!("/sys/kernel/debug/{attr}/{file}"), value).context(&format!("set {attr}/{file}"))
}

/// Arms (or, with probabilities 0, disarms) failslab and fail_page_alloc with `alloc` percent
/// and the module's read failures with `read` percent, for marked tasks only.
pub(crate) fn arm_faults(alloc: u32, read: u32) -> Outcome {
    for (attr, probability) in [("failslab", alloc), ("fail_page_alloc", alloc), ("fail_elfsig_read", read)] {
        fault(attr, "task-filter", "Y")?;
        fault(attr, "interval", "1")?;
        fault(attr, "times", "-1")?;
        fault(attr, "verbose", "0")?;
        fault(attr, "probability", &probability.to_string())?;
    }
    for attr in ["failslab", "fail_page_alloc"] {
        fault(attr, "ignore-gfp-wait", "N")?;
    }
    Ok(())
}
