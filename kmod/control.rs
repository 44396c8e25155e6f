// SPDX-License-Identifier: GPL-2.0

//! The control files in `/sys/kernel/security/elfsig/`: what they show and what writing them
//! does. The shim checks CAP_SYS_ADMIN before any write reaches here.
//!
//! - `mode`: `enforce` or `permissive`; writable unless locked.
//! - `lock`: `1` once enforce is locked until reboot (which also refuses unloading); write `1`.
//! - `stats`: the counters, `name value` per line.
//! - `flush`: write anything to empty the verdict cache (after removing a trusted key).
//! - `loader`: `deny` refuses running the dynamic loader directly (`ld.so ./program`), `allow`
//!   lets it run (the default); `allow` is refused while locked.

use core::fmt::{self, Write};

use kernel::error::code;
use kernel::prelude::*;

use crate::policy::STATE;

const MODE: u32 = 0;
const LOCK: u32 = 1;
const STATS: u32 = 2;
const FLUSH: u32 = 3;
const LOADER: u32 = 4;

/// Writes into a byte buffer, failing when it is full.
struct Cursor<'a> {
    out: &'a mut [u8],
    len: usize,
}

impl Write for Cursor<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let end = self.len.checked_add(s.len()).ok_or(fmt::Error)?;
        let dst = self.out.get_mut(self.len..end).ok_or(fmt::Error)?;
        for (d, b) in dst.iter_mut().zip(s.bytes()) {
            *d = b;
        }
        self.len = end;
        Ok(())
    }
}

/// Fills `out` with the contents of control file `which`; returns the length.
pub(crate) fn read(which: u32, out: &mut [u8]) -> Result<usize> {
    let mut cursor = Cursor { out, len: 0 };
    let written = match which {
        MODE => cursor.write_str(if STATE.enforcing() { "enforce\n" } else { "permissive\n" }),
        LOCK => cursor.write_str(if STATE.locked() { "1\n" } else { "0\n" }),
        STATS => STATE.stats.write_to(&mut cursor),
        LOADER => cursor.write_str(if STATE.denying_loader() { "deny\n" } else { "allow\n" }),
        _ => return Err(code::EINVAL),
    };
    written.map_err(|_| code::ENOSPC)?;
    Ok(cursor.len)
}

/// Applies what was written to control file `which`.
pub(crate) fn write(which: u32, input: &[u8]) -> Result {
    let word = input.trim_ascii();
    match (which, word) {
        (MODE, b"enforce") => STATE.set_enforcing(true),
        (MODE, b"permissive") => STATE.set_enforcing(false),
        (LOCK, b"1") => STATE.lock(),
        (LOCK, b"0") if STATE.locked() => Err(code::EPERM),
        (LOCK, b"0") => Ok(()),
        (LOADER, b"deny") => STATE.set_deny_loader(true),
        (LOADER, b"allow") => STATE.set_deny_loader(false),
        (FLUSH, _) => {
            STATE.cache.flush();
            Ok(())
        }
        _ => Err(code::EINVAL),
    }
}
