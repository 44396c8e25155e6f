//! Entitlements: what a signed program may do beyond running its own signed code, granted by
//! whoever signed it, as macOS's hardened runtime grants `allow-jit` and `get-task-allow`.
//! They live in the signed record (format version 2, `docs/FORMAT.md`), so the signature covers
//! them like every other byte; a version 1 record, what elfsig wrote before, carries none.
//!
//! The set is versioned with the record: version 2 knows the entitlements below, and a record
//! naming any other is malformed, so that no verifier ever reads a grant it does not understand
//! as none.

use core::fmt;

/// One entitlement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Entitlement {
    /// The program may make memory executable at run time: anonymous memory mapped or made
    /// executable, a stack made executable (JIT compilers, libffi's closures).
    Jit,
    /// The program may write another process's code: `ptrace` attach, `process_vm_writev`
    /// (debuggers, tracers).
    Debugger,
}

impl Entitlement {
    /// Every entitlement record version 2 knows, in the order they are shown.
    pub const ALL: [Entitlement; 2] = [Entitlement::Jit, Entitlement::Debugger];

    /// Its name, as `elfsig sign --entitle` takes it and `inspect` shows it.
    pub fn name(self) -> &'static str {
        match self {
            Entitlement::Jit => "jit",
            Entitlement::Debugger => "debugger",
        }
    }

    /// The entitlement named `name`.
    pub fn from_name(name: &[u8]) -> Option<Self> {
        Self::ALL.into_iter().find(|e| e.name().as_bytes() == name)
    }

    /// What it grants, for help texts.
    pub fn grants(self) -> &'static str {
        match self {
            Entitlement::Jit => "make memory executable at run time (JIT compilers, libffi)",
            Entitlement::Debugger => "write other processes' code (ptrace, process_vm_writev)",
        }
    }

    /// Its bit in the record.
    fn bit(self) -> u32 {
        match self {
            Entitlement::Jit => 1,
            Entitlement::Debugger => 2,
        }
    }
}

impl fmt::Display for Entitlement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A set of entitlements.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Entitlements(u32);

impl Entitlements {
    /// None: what every version 1 record carries.
    pub const NONE: Entitlements = Entitlements(0);

    /// The set the record's bits name; `None` when a bit names no entitlement this version
    /// knows.
    pub fn from_bits(bits: u32) -> Option<Self> {
        let known = Entitlement::ALL.iter().fold(0, |all, e| all | e.bit());
        (bits & !known == 0).then_some(Entitlements(bits))
    }

    /// The bits stored in the record.
    pub fn bits(self) -> u32 {
        self.0
    }

    /// This set with `entitlement` added.
    pub fn with(self, entitlement: Entitlement) -> Self {
        Entitlements(self.0 | entitlement.bit())
    }

    /// Whether the set grants `entitlement`.
    pub fn has(self, entitlement: Entitlement) -> bool {
        self.0 & entitlement.bit() != 0
    }

    /// Whether the set grants nothing.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The entitlements in the set, in [`Entitlement::ALL`]'s order.
    pub fn iter(self) -> impl Iterator<Item = Entitlement> {
        Entitlement::ALL.into_iter().filter(move |e| self.has(*e))
    }
}

impl FromIterator<Entitlement> for Entitlements {
    fn from_iter<I: IntoIterator<Item = Entitlement>>(iter: I) -> Self {
        iter.into_iter().fold(Entitlements::NONE, Entitlements::with)
    }
}

/// The names, comma-separated (`jit,debugger`), or `none`.
impl fmt::Display for Entitlements {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() {
            return f.write_str("none");
        }
        // Not `enumerate`: its counter's overflow check is a panic path in the kernel.
        let mut separator = "";
        for entitlement in self.iter() {
            f.write_str(separator)?;
            f.write_str(entitlement.name())?;
            separator = ",";
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::string::ToString;

    #[test]
    fn names_round_trip() {
        for e in Entitlement::ALL {
            assert_eq!(Entitlement::from_name(e.name().as_bytes()), Some(e));
        }
        assert_eq!(Entitlement::from_name(b"JIT"), None);
        assert_eq!(Entitlement::from_name(b""), None);
    }

    #[test]
    fn bits_are_known_or_refused() {
        assert_eq!(Entitlements::from_bits(0), Some(Entitlements::NONE));
        assert_eq!(Entitlements::from_bits(3).map(|s| s.to_string()), Some("jit,debugger".into()));
        assert_eq!(Entitlements::from_bits(4), None);
        assert_eq!(Entitlements::from_bits(1 << 31), None);
        let jit: Entitlements = [Entitlement::Jit].into_iter().collect();
        assert!(jit.has(Entitlement::Jit) && !jit.has(Entitlement::Debugger));
        assert_eq!(Entitlements::NONE.to_string(), "none");
    }
}
