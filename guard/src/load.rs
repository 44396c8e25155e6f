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
        // In one copy from the kernel's BTF object (there once the module, which has BTF, is
        // loaded); the sysfs file gives it a page per read, over a thousand reads.
        match sys::kernel_btf("vmlinux")? {
            Some((_, data)) => Ok(data),
            None => std::fs::read(VMLINUX_BTF)
                .map_err(|e| format!("cannot read {VMLINUX_BTF} (a kernel with BTF is needed): {e}")),
        }
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
    let hook_id = |hook: &str| {
        let function = format!("bpf_lsm_{hook}");
        hooks
            .get(&function)
            .copied()
            .ok_or_else(|| format!("the kernel has no LSM hook {hook} (no {function} in its BTF)"))
    };
    for program in &mut object.programs {
        program.resolve_kfuncs(|name| kfuncs.get(name).copied(), 1)?;
    }
    verbose::step("kfunc filter", || foreign_kfunc_refused(&object, &hook_id, &license, &fd_array))?;
    let mut programs: HashMap<String, OwnedFd> = HashMap::new();
    verbose::step("load", || {
        for program in &object.programs {
            let attach_btf_id = hook_id(&program.hook)?;
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

/// The module's kfunc filter at work, or an error: the program for `file_release` given to the
/// verifier for `file_open`, whose one argument is the same `struct file`, must be refused with
/// `EACCES` because it calls `elfsig_kfunc_file_release` from a hook that is not its own (docs/DESIGN.md).
/// A module whose filter let it through would let any BPF program call its kfuncs from anywhere:
/// give refusals back early, or take files into its tables from hooks that never release them.
fn foreign_kfunc_refused(
    object: &Object,
    hook_id: &dyn Fn(&str) -> Result<u32, String>,
    license: &CString,
    fd_array: &[i32],
) -> Result<(), String> {
    const OWN: &str = "file_release";
    const FOREIGN: &str = "file_open";
    let program = object
        .programs
        .iter()
        .find(|p| p.hook == OWN && !p.sleepable)
        .ok_or_else(|| format!("no program for the hook {OWN}"))?;
    let refused = sys::prog_load(&sys::Program {
        name: "elfsig_canary",
        insns: &program.insns,
        license,
        sleepable: false,
        attach_btf_id: hook_id(FOREIGN)?,
        fd_array,
    });
    // The verifier's words when the filter says no (6.12 to 7.x); EACCES alone would also be
    // any invalid memory access.
    let filtered = format!("calling kernel function elfsig_kfunc_{OWN} is not allowed");
    match refused {
        Err(refused) if refused.error.raw_os_error() == Some(libc::EACCES) && refused.log.contains(&filtered) => Ok(()),
        Err(refused) => Err(format!(
            "could not check the module's kfunc filter: the kernel refused the program for {OWN} on {FOREIGN} \
             for another reason than the filter's: {refused}"
        )),
        Ok(_) => Err(format!(
            "the module's kfunc filter let the program for {OWN} call its kfunc from {FOREIGN}: \
             any BPF program could call the module's kfuncs from any hook; not attaching"
        )),
    }
}
