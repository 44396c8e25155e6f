//! The bpf(2) commands the loader uses, and nothing else: load a program, link it to its hook,
//! find a module's BTF. Each command's attributes are a `#[repr(C)]` structure laid out as the
//! kernel's `union bpf_attr` member (include/uapi/linux/bpf.h); the kernel accepts a shorter
//! one than its own, zeros after it.

#![allow(unsafe_code)]

use std::ffi::CStr;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

const BPF_PROG_LOAD: libc::c_long = 5;
const BPF_OBJ_GET_INFO_BY_FD: libc::c_long = 15;
const BPF_BTF_GET_FD_BY_ID: libc::c_long = 19;
const BPF_BTF_GET_NEXT_ID: libc::c_long = 23;
const BPF_LINK_CREATE: libc::c_long = 28;

const BPF_PROG_TYPE_LSM: u32 = 29;
const BPF_LSM_MAC: u32 = 27;
/// A sleepable program (`lsm.s/`).
const BPF_F_SLEEPABLE: u32 = 1 << 4;
/// `bpf_insn.src_reg` of a call to a kfunc, whose `imm` is its BTF ID and `off` its BTF's
/// place in the program's `fd_array`.
pub(crate) const BPF_PSEUDO_KFUNC_CALL: u8 = 2;

/// Runs one command; its result, a descriptor or 0, or the error.
fn bpf<T>(cmd: libc::c_long, attr: &mut T) -> io::Result<libc::c_long> {
    // SAFETY: `attr` is the command's attribute structure, as large as its size says; any
    // pointer in it points at memory that outlives the call (the callers' locals).
    let ret = unsafe { libc::syscall(libc::SYS_bpf, cmd, attr as *mut T, size_of::<T>() as libc::c_uint) };
    if ret < 0 { Err(io::Error::last_os_error()) } else { Ok(ret) }
}

/// A descriptor the kernel just returned.
fn owned(fd: libc::c_long) -> io::Result<OwnedFd> {
    let fd = i32::try_from(fd).map_err(|_| io::Error::other("the kernel returned no descriptor"))?;
    // SAFETY: a descriptor the bpf call just opened for us, owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

#[repr(C)]
#[derive(Default)]
struct ProgLoad {
    prog_type: u32,
    insn_cnt: u32,
    insns: u64,
    license: u64,
    log_level: u32,
    log_size: u32,
    log_buf: u64,
    kern_version: u32,
    prog_flags: u32,
    prog_name: [u8; 16],
    prog_ifindex: u32,
    expected_attach_type: u32,
    prog_btf_fd: u32,
    func_info_rec_size: u32,
    func_info: u64,
    func_info_cnt: u32,
    line_info_rec_size: u32,
    line_info: u64,
    line_info_cnt: u32,
    attach_btf_id: u32,
    attach_btf_obj_fd: u32,
    core_relo_cnt: u32,
    fd_array: u64,
    core_relos: u64,
    core_relo_rec_size: u32,
    log_true_size: u32,
}

// The layout of include/uapi/linux/bpf.h, as far as this program goes.
const _: () = assert!(size_of::<ProgLoad>() == 144 && std::mem::offset_of!(ProgLoad, fd_array) == 120);
const _: () = assert!(std::mem::offset_of!(ProgLoad, attach_btf_id) == 108);

/// What loading a program needs.
#[derive(Debug)]
pub(crate) struct Program<'a> {
    /// Its name in `bpftool prog` (at most 15 bytes are kept).
    pub(crate) name: &'a str,
    /// Its instructions, 8 bytes each, kfunc calls resolved.
    pub(crate) insns: &'a [u8],
    pub(crate) license: &'a CStr,
    pub(crate) sleepable: bool,
    /// vmlinux's BTF ID of the hook's `bpf_lsm_` function.
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

/// Loads an LSM program; on a refusal, the verifier's log (its end) is in the error.
pub(crate) fn prog_load(program: &Program<'_>) -> Result<OwnedFd, Refused> {
    let mut name = [0u8; 16];
    let kept = program.name.len().min(15);
    name[..kept].copy_from_slice(&program.name.as_bytes()[..kept]);
    let mut attr = ProgLoad {
        prog_type: BPF_PROG_TYPE_LSM,
        insn_cnt: (program.insns.len() / 8) as u32,
        insns: program.insns.as_ptr() as u64,
        license: program.license.as_ptr() as u64,
        prog_flags: if program.sleepable { BPF_F_SLEEPABLE } else { 0 },
        prog_name: name,
        expected_attach_type: BPF_LSM_MAC,
        attach_btf_id: program.attach_btf_id,
        fd_array: program.fd_array.as_ptr() as u64,
        ..ProgLoad::default()
    };
    match bpf(BPF_PROG_LOAD, &mut attr) {
        Ok(fd) => owned(fd).map_err(|error| Refused { error, log: String::new() }),
        Err(error) => {
            // Again, with the verifier's log, to say why.
            let mut log = vec![0u8; 1 << 20];
            attr.log_level = 1;
            attr.log_size = log.len() as u32;
            attr.log_buf = log.as_mut_ptr() as u64;
            let _ = bpf(BPF_PROG_LOAD, &mut attr);
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
    owned(bpf(BPF_LINK_CREATE, &mut attr)?)
}

#[repr(C)]
#[derive(Default)]
struct GetId {
    id: u32,
    next_id: u32,
    open_flags: u32,
}

#[repr(C)]
#[derive(Default)]
struct GetInfo {
    bpf_fd: u32,
    info_len: u32,
    info: u64,
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
        let mut next = GetId { id, ..GetId::default() };
        match bpf(BPF_BTF_GET_NEXT_ID, &mut next) {
            Ok(_) => id = next.next_id,
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok(None),
            Err(e) => return Err(format!("cannot list the kernel's BTF objects: {e}")),
        }
        let mut get = GetId { id, ..GetId::default() };
        let fd = match bpf(BPF_BTF_GET_FD_BY_ID, &mut get) {
            Ok(fd) => owned(fd).map_err(|e| e.to_string())?,
            // Gone since it was listed (a module unloaded).
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => continue,
            Err(e) => return Err(format!("cannot open BTF object {id}: {e}")),
        };
        let mut found = [0u8; 64];
        let mut info = BtfInfo { name: found.as_mut_ptr() as u64, name_len: found.len() as u32, ..BtfInfo::default() };
        btf_info(&fd, &mut info).map_err(|e| format!("cannot read BTF object {id}: {e}"))?;
        let end = found.iter().position(|&b| b == 0).unwrap_or(found.len());
        if info.kernel_btf == 0 || &found[..end] != name.as_bytes() {
            continue;
        }
        let mut data = vec![0u8; info.btf_size as usize];
        let mut info = BtfInfo { btf: data.as_mut_ptr() as u64, btf_size: data.len() as u32, ..BtfInfo::default() };
        btf_info(&fd, &mut info).map_err(|e| format!("cannot read {name}'s BTF: {e}"))?;
        data.truncate(info.btf_size as usize);
        return Ok(Some((fd, data)));
    }
}

fn btf_info(fd: &OwnedFd, info: &mut BtfInfo) -> io::Result<()> {
    let mut attr = GetInfo {
        bpf_fd: fd.as_raw_fd() as u32,
        info_len: size_of::<BtfInfo>() as u32,
        info: info as *mut BtfInfo as u64,
    };
    bpf(BPF_OBJ_GET_INFO_BY_FD, &mut attr).map(drop)
}
