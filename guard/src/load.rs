//! Loading and attaching the guard's programs, without libbpf: the hooks' IDs from vmlinux's
//! BTF, the kfuncs' from the module's, the programs given to the verifier with them, and one
//! link each. The programs read no kernel structure (the module does), so there is nothing to
//! relocate against the kernel's types.

use std::collections::HashMap;
use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd};

use crate::btf::Btf;
use crate::object::Object;
use crate::{sys, verbose};

/// The programs, compiled by build.rs.
const OBJECT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/guard.bpf.o"));
const VMLINUX_BTF: &str = "/sys/kernel/btf/vmlinux";
/// The module whose kfuncs the programs call, as its BTF object is named.
const MODULE: &str = "elfsig";

/// The hooks, in the module's order (kmod/shim/shim.h), which it checks when it takes the
/// links.
pub(crate) const HOOKS: [&str; 12] = [
    "mmap_file",
    "file_mprotect",
    "key_post_create_or_update",
    "bprm_creds_for_exec",
    "file_open",
    "file_release",
    "bprm_committed_creds",
    "task_alloc",
    "mmap_addr",
    "ptrace_access_check",
    "ptrace_traceme",
    "inode_init_security_anon",
];

/// Loads the programs and links each to its hook, in the order of `HOOKS`.
pub(crate) fn attach() -> Result<Vec<OwnedFd>, String> {
    let mut object = Object::parse(OBJECT).map_err(|e| format!("the guard's BPF object: {e}"))?;
    let vmlinux = verbose::step("read vmlinux's BTF", || {
        std::fs::read(VMLINUX_BTF).map_err(|e| format!("cannot read {VMLINUX_BTF} (a kernel with BTF is needed): {e}"))
    })?;
    let vmlinux = Btf::vmlinux(&vmlinux).map_err(|e| format!("{VMLINUX_BTF}: {e}"))?;
    let (module_fd, module) = verbose::step("find the module's BTF", || sys::kernel_btf(MODULE))?
        .ok_or("the elfsig module is not loaded, or has no BTF")?;
    let module = Btf::split(&module, &vmlinux).map_err(|e| format!("the module's BTF: {e}"))?;

    let (hooks, kfuncs) = verbose::step("find the hooks and kfuncs", || {
        let functions: Vec<String> = HOOKS.iter().map(|hook| format!("bpf_lsm_{hook}")).collect();
        let hooks = vmlinux.functions(&functions.iter().map(String::as_str).collect::<Vec<_>>(), None)?;
        let wanted: Vec<&str> =
            object.programs.iter().flat_map(|p| p.kfunc_calls.iter().map(|(_, name)| name.as_str())).collect();
        let kfuncs = module.functions(&wanted, Some(&vmlinux))?;
        Ok::<_, String>((hooks, kfuncs))
    })?;
    // fd_array[0] stands for vmlinux, unused; the module's BTF is 1.
    let fd_array = [0, module_fd.as_raw_fd()];
    let license = CString::new(object.license.clone()).map_err(|_| "a license with a NUL byte")?;
    let mut programs: HashMap<String, OwnedFd> = HashMap::new();
    verbose::step("load", || {
        for program in &mut object.programs {
            program.resolve_kfuncs(|name| kfuncs.get(name).copied(), 1)?;
            let function = format!("bpf_lsm_{}", program.hook);
            let attach_btf_id = *hooks
                .get(&function)
                .ok_or_else(|| format!("the kernel has no LSM hook {} (no {function} in its BTF)", program.hook))?;
            let fd = verbose::step(&program.hook, || {
                sys::prog_load(&sys::Program {
                    name: &program.name,
                    insns: &program.insns,
                    license: &license,
                    sleepable: program.sleepable,
                    attach_btf_id,
                    fd_array: &fd_array,
                })
            })
            .map_err(|e| format!("the kernel refused the program for {}: {e}", program.hook))?;
            programs.insert(program.hook.clone(), fd);
        }
        Ok::<_, String>(())
    })?;
    verbose::step("attach", || {
        HOOKS
            .iter()
            .map(|hook| {
                let program = programs.get(*hook).ok_or_else(|| format!("no program for the hook {hook}"))?;
                verbose::step(hook, || sys::link_create(program)).map_err(|e| format!("cannot attach to {hook}: {e}"))
            })
            .collect()
    })
}
