// SPDX-License-Identifier: GPL-2.0

//! The module itself (`shim/module.c`): its parameters, the certificates embedded at build
//! time, pinning it in memory, the clock.

use kernel::ffi::c_char;

extern "C" {
    fn elfsig_shim_mode_param(len: *mut usize) -> *const c_char;
    fn elfsig_shim_untrusted_param(len: *mut usize) -> *const c_char;
    fn elfsig_shim_runtime_param(len: *mut usize) -> *const c_char;
    fn elfsig_shim_lock_param() -> bool;
    fn elfsig_shim_deny_loader_param() -> bool;
    fn elfsig_shim_require_mmap_guard_param() -> bool;
    fn elfsig_shim_trust_initramfs_param() -> bool;
    fn elfsig_shim_embedded_certs(len: *mut usize) -> *const u8;
    fn elfsig_shim_embedded_policy_certs(len: *mut usize) -> *const u8;
    fn elfsig_shim_pin_module();
    fn elfsig_shim_now_ns() -> u64;
}

/// The module parameters, as given at load time.
pub(crate) struct Params {
    /// `mode`: `enforce` or `permissive` (anything else is refused by the caller).
    pub(crate) mode: &'static [u8],
    /// `untrusted`: `refuse` or `verify` (anything else is refused by the caller).
    pub(crate) untrusted: &'static [u8],
    /// `runtime`: `enforce` or `off` (anything else is refused by the caller).
    pub(crate) runtime: &'static [u8],
    /// `deny_loader`.
    pub(crate) deny_loader: bool,
    /// `lock`.
    pub(crate) lock: bool,
    /// `require_mmap_guard`.
    pub(crate) require_mmap_guard: bool,
    /// `trust_initramfs`.
    pub(crate) trust_initramfs: bool,
}

/// A string parameter's bytes, as the shim returns them.
///
/// # Safety
///
/// `get` must return a buffer that lives as long as the module, holds `len` initialised bytes,
/// and is written only while the module loads (a 0444 parameter).
unsafe fn string_param(get: unsafe extern "C" fn(*mut usize) -> *const c_char) -> &'static [u8] {
    let mut len = 0usize;
    // SAFETY: the caller guarantees `get` returns a parameter's buffer and its string length.
    let ptr = unsafe { get(&mut len) };
    if ptr.is_null() {
        &[][..]
    } else {
        // SAFETY: the caller guarantees the buffer lives as long as the module, holds `len`
        // initialised bytes, and is no longer written.
        unsafe { core::slice::from_raw_parts(ptr.cast::<u8>(), len) }
    }
}

/// Reads the module parameters.
pub(crate) fn params() -> Params {
    Params {
        // SAFETY: the shim returns the `mode` parameter's buffer, a 0444 parameter.
        mode: unsafe { string_param(elfsig_shim_mode_param) },
        // SAFETY: the shim returns the `untrusted` parameter's buffer, a 0444 parameter.
        untrusted: unsafe { string_param(elfsig_shim_untrusted_param) },
        // SAFETY: the shim returns the `runtime` parameter's buffer, a 0444 parameter.
        runtime: unsafe { string_param(elfsig_shim_runtime_param) },
        // SAFETY: reads a module parameter, fixed at load time.
        deny_loader: unsafe { elfsig_shim_deny_loader_param() },
        // SAFETY: reads a module parameter, fixed at load time.
        lock: unsafe { elfsig_shim_lock_param() },
        // SAFETY: reads a module parameter, fixed at load time.
        require_mmap_guard: unsafe { elfsig_shim_require_mmap_guard_param() },
        // SAFETY: reads a module parameter, fixed at load time.
        trust_initramfs: unsafe { elfsig_shim_trust_initramfs_param() },
    }
}

/// Certificates embedded at build time, concatenated DER.
pub(crate) fn embedded_certs() -> &'static [u8] {
    let mut len = 0usize;
    // SAFETY: the shim returns the bounds of a static array in the module's .rodata.
    let ptr = unsafe { elfsig_shim_embedded_certs(&mut len) };
    static_bytes(ptr, len)
}

/// Certificates of the policy keys embedded at build time, concatenated DER.
pub(crate) fn embedded_policy_certs() -> &'static [u8] {
    let mut len = 0usize;
    // SAFETY: the shim returns the bounds of a static array in the module's .rodata.
    let ptr = unsafe { elfsig_shim_embedded_policy_certs(&mut len) };
    static_bytes(ptr, len)
}

fn static_bytes(ptr: *const u8, len: usize) -> &'static [u8] {
    if ptr.is_null() || len == 0 {
        return &[];
    }
    // SAFETY: `ptr` and `len` describe a static array of the module, which lives as long as
    // the module.
    unsafe { core::slice::from_raw_parts(ptr, len) }
}

/// Takes a reference on this module that is never dropped, so that it cannot be unloaded.
/// Cannot fail.
pub(crate) fn pin() {
    // SAFETY: `__module_get(THIS_MODULE)` on the running module.
    unsafe { elfsig_shim_pin_module() }
}

/// Monotonic time in ns.
pub(crate) fn now_ns() -> u64 {
    // SAFETY: reads the clock.
    unsafe { elfsig_shim_now_ns() }
}
