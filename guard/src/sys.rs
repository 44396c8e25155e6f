//! The bpf(2) commands the loader uses, and nothing else: load a program, link it to its hook,
//! find a module's BTF, and a program's ID and a descriptor by it (to check that no one else
//! can get one once the module holds the programs). The system call and the commands that the
//! guest's tests make too are `elfsig-bpf`'s; each command's attributes are a `#[repr(C)]`
//! structure laid out as the kernel's `union bpf_attr` member (include/uapi/linux/bpf.h).

#![allow(unsafe_code)]

use std::ffi::CStr;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};

use elfsig_bpf::{BTF_GET_FD_BY_ID, BTF_GET_NEXT_ID, LINK_CREATE, PROG_LOAD, ProgLoad, bpf, owned};
pub(crate) use elfsig_bpf::{prog_by_id, prog_id};

const BPF_PROG_TYPE_TRACING: u32 = 26;
const BPF_PROG_TYPE_LSM: u32 = 29;
const BPF_MODIFY_RETURN: u32 = 26;
const BPF_LSM_MAC: u32 = 27;
/// A sleepable program (`lsm.s/`).
const BPF_F_SLEEPABLE: u32 = 1 << 4;
/// `bpf_insn.src_reg` of a call to a kfunc, whose `imm` is its BTF ID and `off` its BTF's
/// place in the program's `fd_array`.
pub(crate) const BPF_PSEUDO_KFUNC_CALL: u8 = 2;

/// What a program is attached as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A BPF LSM program, on a `bpf_lsm_` function.
    Lsm,
    /// A tracing program that changes what a function returns (`fmod_ret`).
    ModifyReturn,
}

/// What loading a program needs.
#[derive(Debug)]
pub(crate) struct Program<'a> {
    pub(crate) kind: Kind,
    /// Its name in `bpftool prog` (at most 15 bytes are kept).
    pub(crate) name: &'a str,
    /// Its instructions, 8 bytes each, kfunc calls resolved.
    pub(crate) insns: &'a [u8],
    pub(crate) license: &'a CStr,
    pub(crate) sleepable: bool,
    /// vmlinux's BTF ID of the function it attaches to (the hook's `bpf_lsm_` function).
    pub(crate) attach_btf_id: u32,
    /// The BTF objects the kfunc calls name by place (`off`); the first is vmlinux's, unused.
    pub(crate) fd_array: &'a [i32],
}

/// A program the kernel refused.
#[derive(Debug)]
pub(crate) struct Refused {
    pub(crate) error: io::Error,
    /// The end of the verifier's log, if it said anything.
    pub(crate) log: String,
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.log.is_empty() {
            write!(f, "{}", self.error)
        } else {
            write!(f, "{}; the verifier said:\n{}", self.error, self.log)
        }
    }
}

/// Loads a program; on a refusal, the verifier's log (its end) is in the error.
pub(crate) fn prog_load(program: &Program<'_>) -> Result<OwnedFd, Refused> {
    let mut name = [0u8; 16];
    let kept = program.name.len().min(15);
    name[..kept].copy_from_slice(&program.name.as_bytes()[..kept]);
    let (prog_type, expected_attach_type) = match program.kind {
        Kind::Lsm => (BPF_PROG_TYPE_LSM, BPF_LSM_MAC),
        Kind::ModifyReturn => (BPF_PROG_TYPE_TRACING, BPF_MODIFY_RETURN),
    };
    let mut attr = ProgLoad {
        prog_type,
        insn_cnt: (program.insns.len() / 8) as u32,
        insns: program.insns.as_ptr() as u64,
        license: program.license.as_ptr() as u64,
        prog_flags: if program.sleepable { BPF_F_SLEEPABLE } else { 0 },
        prog_name: name,
        expected_attach_type,
        attach_btf_id: program.attach_btf_id,
        fd_array: if program.fd_array.is_empty() { 0 } else { program.fd_array.as_ptr() as u64 },
        ..ProgLoad::default()
    };
    // SAFETY: `ProgLoad` is the command's attributes; its pointers are to `program`'s
    // instructions, license (NUL-terminated) and fd_array (or 0), which outlive the call.
    match unsafe { bpf(PROG_LOAD, &mut attr) } {
        // SAFETY: the descriptor the command just opened.
        Ok(fd) => unsafe { owned(fd) }.map_err(|error| Refused { error, log: String::new() }),
        Err(error) => {
            // Again, with the verifier's log, to say why.
            let mut log = vec![0u8; 1 << 20];
            attr.log_level = 1;
            attr.log_size = log.len() as u32;
            attr.log_buf = log.as_mut_ptr() as u64;
            // SAFETY: as above, and the log buffer is `log`, as long as `log_size` says. A
            // program loaded this time is not expected; its descriptor would leak.
            let _ = unsafe { bpf(PROG_LOAD, &mut attr) };
            let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
            let text = String::from_utf8_lossy(&log[..end]);
            let lines: Vec<&str> = text.lines().collect();
            Err(Refused { error, log: lines[lines.len().saturating_sub(20)..].join("\n") })
        }
    }
}

#[repr(C)]
#[derive(Default)]
struct LinkCreate {
    prog_fd: u32,
    target_fd: u32,
    attach_type: u32,
    flags: u32,
    target_btf_id: u32,
    _pad: u32,
    cookie: u64,
}

/// Links a loaded LSM program to its hook: the program runs from now on, while the link lives.
pub(crate) fn link_create(prog: &OwnedFd) -> io::Result<OwnedFd> {
    let mut attr = LinkCreate { prog_fd: prog.as_raw_fd() as u32, attach_type: BPF_LSM_MAC, ..LinkCreate::default() };
    // SAFETY: `LinkCreate` is the command's attributes, without pointers; the descriptor is the
    // one the command just opened.
    unsafe { owned(bpf(LINK_CREATE, &mut attr)?) }
}

#[repr(C)]
#[derive(Default)]
struct BtfInfo {
    btf: u64,
    btf_size: u32,
    id: u32,
    name: u64,
    name_len: u32,
    kernel_btf: u32,
}

/// The kernel's BTF object named `name` (`vmlinux`, or a module's), opened, with its data.
pub(crate) fn kernel_btf(name: &str) -> Result<Option<(OwnedFd, Vec<u8>)>, String> {
    let mut id = 0;
    loop {
        id = match elfsig_bpf::next_id(BTF_GET_NEXT_ID, id) {
            Ok(Some(next)) => next,
            Ok(None) => return Ok(None),
            Err(e) => return Err(format!("cannot list the kernel's BTF objects: {e}")),
        };
        let fd = match elfsig_bpf::by_id(BTF_GET_FD_BY_ID, id) {
            Ok(fd) => fd,
            // Gone since it was listed (a module unloaded).
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => continue,
            Err(e) => return Err(format!("cannot open BTF object {id}: {e}")),
        };
        let mut found = [0u8; 64];
        let mut info = BtfInfo { name: found.as_mut_ptr() as u64, name_len: found.len() as u32, ..BtfInfo::default() };
        // SAFETY: `BtfInfo` is the start of `struct bpf_btf_info`; its name is `found`, as long
        // as `name_len` says.
        unsafe { elfsig_bpf::info(&fd, &mut info) }.map_err(|e| format!("cannot read BTF object {id}: {e}"))?;
        let end = found.iter().position(|&b| b == 0).unwrap_or(found.len());
        if info.kernel_btf == 0 || &found[..end] != name.as_bytes() {
            continue;
        }
        let mut data = vec![0u8; info.btf_size as usize];
        let mut info = BtfInfo { btf: data.as_mut_ptr() as u64, btf_size: data.len() as u32, ..BtfInfo::default() };
        // SAFETY: as above; its data is `data`, as long as `btf_size` says.
        unsafe { elfsig_bpf::info(&fd, &mut info) }.map_err(|e| format!("cannot read {name}'s BTF: {e}"))?;
        data.truncate(info.btf_size as usize);
        return Ok(Some((fd, data)));
    }
}
