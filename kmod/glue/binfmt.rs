// SPDX-License-Identifier: GPL-2.0

//! The binfmt handler (`shim/binfmt.c`), at the head of the list: every exec reaches
//! `elfsig_check_exec` (`callbacks.rs`) before binfmt_elf loads anything.

extern "C" {
    fn elfsig_shim_binfmt_register();
    fn elfsig_shim_binfmt_unregister();
}

/// The handler, registered. Unregistered on drop.
pub(crate) struct Registration(());

impl Registration {
    /// Registers the handler ahead of binfmt_elf. Cannot fail: the last step of module init.
    pub(crate) fn register() -> Self {
        // SAFETY: called once, from module init, with everything the handler uses set up.
        unsafe { elfsig_shim_binfmt_register() };
        Registration(())
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        // SAFETY: undoes `register`, once; a handler still running holds a module reference.
        unsafe { elfsig_shim_binfmt_unregister() }
    }
}
