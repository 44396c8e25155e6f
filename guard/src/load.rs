//! Loading and attaching the guard's programs, without libbpf: the hooks' IDs from vmlinux's
//! BTF, the kfuncs' from the module's, the programs given to the verifier with them, and one
//! link each. The programs read no kernel structure (the module does), so there is nothing to
//! relocate against the kernel's types.

use std::collections::HashMap;
use std::ffi::CString;
use std::ops::Deref;
use std::os::fd::{AsRawFd, OwnedFd};

use crate::btf::Btf;
use crate::mapped::Mapped;
use crate::object::Object;
use crate::{sys, verbose};

/// The programs, compiled by build.rs.
const OBJECT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/guard.bpf.o"));
const VMLINUX_BTF: &str = "/sys/kernel/btf/vmlinux";
/// The module whose kfuncs the programs call, as its BTF object is named.
const MODULE: &str = "elfsig";

/// The hooks, in the module's order (kmod/shim/shim.h), which it checks when it takes the
/// links.
pub(crate) const HOOKS: [&str; 13] = [
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
    "bpf_prog",
];

/// The guard's programs, each linked to its hook (in the order of `HOOKS`), and what it takes
/// to check that the module keeps them to itself once it holds them.
#[derive(Debug)]
pub(crate) struct Attached {
    pub(crate) links: Vec<OwnedFd>,
    /// The programs' IDs, each with its hook.
    ids: Vec<(&'static str, u32)>,
    /// The program for `file_release`, kfunc calls resolved, and its hook's ID.
    file_release: (Vec<u8>, u32),
    /// vmlinux's BTF ID of `security_file_open`, a function that `fmod_ret` could skip, if
    /// this kernel let root load such a program before the module held the guard.
    security_function: Option<u32>,
    license: CString,
    /// The module's BTF, which the kfunc calls name (`fd_array[1]`).
    module_fd: OwnedFd,
}

/// Loads the programs and links each to its hook.
pub(crate) fn attach() -> Result<Attached, String> {
    let mut object = Object::parse(OBJECT).map_err(|e| format!("the guard's BPF object: {e}"))?;
    let vmlinux: Box<dyn Deref<Target = [u8]>> = verbose::step("read vmlinux's BTF", || {
        // Mapped where the kernel lets its BTF be (Linux 6.16 and later): nothing copied. Else
        // in one copy from the kernel's BTF object (there once the module, which has BTF, is
        // loaded); the sysfs file gives it a page per read, over a thousand reads.
        if let Ok(mapped) = Mapped::file(VMLINUX_BTF) {
            return Ok::<_, String>(Box::new(mapped) as Box<dyn Deref<Target = [u8]>>);
        }
        Ok(Box::new(match sys::kernel_btf("vmlinux")? {
            Some((_, data)) => data,
            None => std::fs::read(VMLINUX_BTF)
                .map_err(|e| format!("cannot read {VMLINUX_BTF} (a kernel with BTF is needed): {e}"))?,
        }))
    })?;
    let (module_fd, module) = verbose::step("find the module's BTF", || sys::kernel_btf(MODULE))?
        .ok_or("the elfsig module is not loaded, or has no BTF")?;

    let (hooks, kfuncs) = verbose::step("find the hooks and kfuncs", || {
        let mut functions: Vec<String> = HOOKS.iter().map(|hook| format!("bpf_lsm_{hook}")).collect();
        functions.push(SECURITY_FUNCTION.to_owned());
        let functions: Vec<&str> = functions.iter().map(String::as_str).collect();
        let (vmlinux, hooks) = Btf::vmlinux(&vmlinux, &functions).map_err(|e| format!("{VMLINUX_BTF}: {e}"))?;
        let wanted: Vec<&str> =
            object.programs.iter().flat_map(|p| p.kfunc_calls.iter().map(|(_, name)| name.as_str())).collect();
        let (_, kfuncs) = Btf::split(&module, &vmlinux, &wanted).map_err(|e| format!("the module's BTF: {e}"))?;
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
    let file_release = (file_release_program(&object)?.to_vec(), hook_id(FILE_RELEASE)?);
    // What the seal must refuse, loaded (never attached) while the module allows it: where the
    // kernel itself refuses it, there is nothing to refuse, and the check after the hand-over
    // is left out, saying why.
    let security_function = verbose::step("fmod_ret", || {
        let Some(&id) = hooks.get(SECURITY_FUNCTION) else {
            eprintln!(
                "elfsig-guard: not checking that fmod_ret is refused: no {SECURITY_FUNCTION} in the kernel's BTF"
            );
            return None;
        };
        match skipping(id, &license) {
            Ok(_) => Some(id),
            Err(refused) => {
                eprintln!(
                    "elfsig-guard: not checking that fmod_ret is refused: the kernel refuses it on \
                     {SECURITY_FUNCTION} anyway: {refused}"
                );
                None
            }
        }
    });
    verbose::step("kfunc filter", || {
        refused_by_filter(
            load_as(&file_release.0, hook_id(FOREIGN)?, &license, &fd_array),
            &format!(
                "the module's kfunc filter let the program for {FILE_RELEASE} call its kfunc from {FOREIGN}: \
                 any BPF program could call the module's kfuncs from any hook; not attaching"
            ),
            &format!(
                "could not check the module's kfunc filter: the kernel refused the program for {FILE_RELEASE} on {FOREIGN}"
            ),
        )
    })?;
    let mut programs: HashMap<String, OwnedFd> = HashMap::new();
    verbose::step("load", || {
        for program in &object.programs {
            let attach_btf_id = hook_id(&program.hook)?;
            let fd = verbose::step(&program.hook, || {
                sys::prog_load(&sys::Program {
                    kind: sys::Kind::Lsm,
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
    let links = verbose::step("attach", || {
        HOOKS
            .iter()
            .map(|hook| {
                let program = programs.get(*hook).ok_or_else(|| format!("no program for the hook {hook}"))?;
                verbose::step(hook, || sys::link_create(program)).map_err(|e| format!("cannot attach to {hook}: {e}"))
            })
            .collect::<Result<Vec<_>, String>>()
    })?;
    let ids = HOOKS
        .iter()
        .map(|hook| {
            let program = programs.get(*hook).ok_or_else(|| format!("no program for the hook {hook}"))?;
            let id = sys::prog_id(program).map_err(|e| format!("cannot read the ID of the program for {hook}: {e}"))?;
            Ok((*hook, id))
        })
        .collect::<Result<_, String>>()?;
    Ok(Attached { links, ids, file_release, security_function, license, module_fd })
}

/// A function of the LSM framework, which calls every LSM's hook: an `fmod_ret` program on it
/// that returns anything but 0 skips them all.
const SECURITY_FUNCTION: &str = "security_file_open";

/// `r0 = 0; exit`.
const RETURN_0: [u8; 16] = [0xb7, 0, 0, 0, 0, 0, 0, 0, 0x95, 0, 0, 0, 0, 0, 0, 0];

/// Loads an `fmod_ret` program on the function whose ID is `attach_btf_id`.
fn skipping(attach_btf_id: u32, license: &CString) -> Result<OwnedFd, sys::Refused> {
    sys::prog_load(&sys::Program {
        kind: sys::Kind::ModifyReturn,
        name: "elfsig_canary",
        insns: &RETURN_0,
        license,
        sleepable: false,
        attach_btf_id,
        fd_array: &[],
    })
}

/// The hook whose program the checks of the kfunc filter offer to the verifier.
const FILE_RELEASE: &str = "file_release";
/// Another hook whose one argument is the same `struct file`.
const FOREIGN: &str = "file_open";

/// The instructions of the (non-sleepable) program for `file_release`.
fn file_release_program(object: &Object) -> Result<&[u8], String> {
    object
        .programs
        .iter()
        .find(|p| p.hook == FILE_RELEASE && !p.sleepable)
        .map(|p| p.insns.as_slice())
        .ok_or_else(|| format!("no program for the hook {FILE_RELEASE}"))
}

/// Offers `insns` to the verifier for the hook whose ID is `attach_btf_id`.
fn load_as(insns: &[u8], attach_btf_id: u32, license: &CString, fd_array: &[i32]) -> Result<OwnedFd, sys::Refused> {
    sys::prog_load(&sys::Program {
        kind: sys::Kind::Lsm,
        name: "elfsig_canary",
        insns,
        license,
        sleepable: false,
        attach_btf_id,
        fd_array,
    })
}

/// Requires that the kernel refused `loaded`, a program that calls `elfsig_kfunc_file_release`,
/// because the module's kfunc filter said no: `allowed` is the error when it let the program
/// through, `unchecked` the start of the one when it refused it for another reason.
fn refused_by_filter(loaded: Result<OwnedFd, sys::Refused>, allowed: &str, unchecked: &str) -> Result<(), String> {
    // The verifier's words when the filter says no (6.12 to 7.x); EACCES alone would also be
    // any invalid memory access.
    let filtered = format!("calling kernel function elfsig_kfunc_{FILE_RELEASE} is not allowed");
    match loaded {
        Ok(_) => Err(allowed.to_owned()),
        Err(refused) if refused.error.raw_os_error() == Some(libc::EACCES) && refused.log.contains(&filtered) => Ok(()),
        Err(other) => Err(format!("{unchecked} for another reason than the filter's: {other}")),
    }
}

impl Attached {
    /// Checks, once the module holds the links, that it keeps the guard to itself
    /// (docs/DESIGN.md): no program loaded from now on may call its kfuncs, even from their own
    /// hook (the program for `file_release`, offered for `file_release`, must be refused by the
    /// filter); no one gets a descriptor for the guard's programs (each ID must give
    /// `ENOENT`), without which they cannot be tail-called from another hook, attached again,
    /// replaced or traced; and no one may load a program that would skip the LSM hooks by
    /// changing what a `security_` function returns (`fmod_ret` on `security_file_open`, which
    /// loaded before the hand-over, must be refused with `EPERM`).
    pub(crate) fn check_sealed(&self) -> Result<(), String> {
        let fd_array = [0, self.module_fd.as_raw_fd()];
        refused_by_filter(
            load_as(&self.file_release.0, self.file_release.1, &self.license, &fd_array),
            &format!(
                "the module let a program loaded after it took the guard call its kfunc from {FILE_RELEASE}: \
                 anyone who may load BPF programs could call the module's kfuncs"
            ),
            &format!(
                "could not check that the module refuses its kfuncs to later programs: the kernel refused the \
                 program for {FILE_RELEASE}"
            ),
        )?;
        for (hook, id) in &self.ids {
            match sys::prog_by_id(*id) {
                Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {}
                Err(e) => {
                    return Err(format!(
                        "could not check that the guard's program for {hook} (ID {id}) is kept from others: {e}"
                    ));
                }
                Ok(_) => {
                    return Err(format!(
                        "the kernel gave a descriptor for the guard's program for {hook} (ID {id}): anyone who may \
                         load BPF programs could tail-call it from another hook"
                    ));
                }
            }
        }
        let Some(security_function) = self.security_function else {
            return Ok(());
        };
        match skipping(security_function, &self.license) {
            Err(refused) if refused.error.raw_os_error() == Some(libc::EPERM) => Ok(()),
            Err(refused) => Err(format!(
                "could not check that the module refuses programs that skip {SECURITY_FUNCTION}: the kernel refused \
                 one for another reason: {refused}"
            )),
            Ok(_) => Err(format!(
                "the kernel loaded an fmod_ret program on {SECURITY_FUNCTION}: anyone who may load BPF programs \
                 could skip the guard's hooks"
            )),
        }
    }
}
