//! The two figures a bench run gives, one per guest clock: how the report names each, and what
//! the names of the files measured with it end with.

use crate::vm::qemu;

/// How the report names the figure a guest clock gives, and what its files' names end with.
pub fn figure(clock: qemu::Clock) -> (&'static str, &'static str) {
    match clock {
        qemu::Clock::Instructions => ("instructions", "-instructions"),
        qemu::Clock::Host => ("host time", ""),
    }
}
