//! The bpf(2) system call, and the commands that elfsig's guard loader (`guard/src/sys.rs`)
//! and its tests (`crates/elfsig-guest`) both make: finding objects by ID, asking for an
//! object's information, a program's ID and a descriptor by it. Each command's attributes are a
//! `#[repr(C)]` structure laid out as the kernel's `union bpf_attr` member
//! (include/uapi/linux/bpf.h); the kernel accepts a shorter one than its own, zeros after it.

#![allow(unsafe_code)]

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// `BPF_PROG_LOAD`.
pub const PROG_LOAD: libc::c_long = 5;
/// `BPF_PROG_GET_FD_BY_ID`.
pub const PROG_GET_FD_BY_ID: libc::c_long = 13;
/// `BPF_OBJ_GET_INFO_BY_FD`.
pub const OBJ_GET_INFO_BY_FD: libc::c_long = 15;
/// `BPF_BTF_GET_FD_BY_ID`.
pub const BTF_GET_FD_BY_ID: libc::c_long = 19;
/// `BPF_BTF_GET_NEXT_ID`.
pub const BTF_GET_NEXT_ID: libc::c_long = 23;
/// `BPF_LINK_CREATE`.
pub const LINK_CREATE: libc::c_long = 28;
/// `BPF_LINK_GET_FD_BY_ID`.
pub const LINK_GET_FD_BY_ID: libc::c_long = 30;
/// `BPF_LINK_GET_NEXT_ID`.
pub const LINK_GET_NEXT_ID: libc::c_long = 31;

/// Runs one command; its result, a descriptor or 0, or the error.
///
/// # Safety
///
/// `attr` must be `cmd`'s attribute structure, laid out as the kernel's; every pointer in it
/// must point at memory valid for what the kernel reads or writes there (as long as the size
/// next to it says), for the length of the call.
pub unsafe fn bpf<T>(cmd: libc::c_long, attr: &mut T) -> io::Result<libc::c_long> {
    // SAFETY: the caller's promise; the size is `attr`'s own.
    let ret = unsafe { libc::syscall(libc::SYS_bpf, cmd, attr as *mut T, size_of::<T>() as libc::c_uint) };
    if ret < 0 { Err(io::Error::last_os_error()) } else { Ok(ret) }
}

/// A descriptor that a bpf command just returned, owned from now on.
///
/// # Safety
///
/// `fd` must be a descriptor the caller just opened and that nothing else owns.
pub unsafe fn owned(fd: libc::c_long) -> io::Result<OwnedFd> {
    let fd = i32::try_from(fd).map_err(|_| io::Error::other("the kernel returned no descriptor"))?;
    // SAFETY: the caller's promise.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The attributes of the `*_GET_NEXT_ID` and `*_GET_FD_BY_ID` commands.
#[repr(C)]
#[derive(Debug, Default)]
pub struct GetId {
    /// The ID to start after, or to open.
    pub id: u32,
    /// The next ID, as the kernel answers.
    pub next_id: u32,
    /// Flags for opening (maps only).
    pub open_flags: u32,
}

/// The attributes of `BPF_PROG_LOAD` (`union bpf_attr`'s first member), as far as elfsig goes.
#[repr(C)]
#[derive(Debug, Default)]
#[allow(missing_docs)]
pub struct ProgLoad {
    pub prog_type: u32,
    pub insn_cnt: u32,
    pub insns: u64,
    pub license: u64,
    pub log_level: u32,
    pub log_size: u32,
    pub log_buf: u64,
    pub kern_version: u32,
    pub prog_flags: u32,
    pub prog_name: [u8; 16],
    pub prog_ifindex: u32,
    pub expected_attach_type: u32,
    pub prog_btf_fd: u32,
    pub func_info_rec_size: u32,
    pub func_info: u64,
    pub func_info_cnt: u32,
    pub line_info_rec_size: u32,
    pub line_info: u64,
    pub line_info_cnt: u32,
    pub attach_btf_id: u32,
    pub attach_btf_obj_fd: u32,
    pub core_relo_cnt: u32,
    pub fd_array: u64,
    pub core_relos: u64,
    pub core_relo_rec_size: u32,
    pub log_true_size: u32,
}

// The layout of include/uapi/linux/bpf.h.
const _: () = assert!(size_of::<ProgLoad>() == 144 && std::mem::offset_of!(ProgLoad, fd_array) == 120);
const _: () = assert!(std::mem::offset_of!(ProgLoad, attach_btf_id) == 108);

/// The ID after `id` that `cmd` (`*_GET_NEXT_ID`) finds, or `None` past the last.
pub fn next_id(cmd: libc::c_long, id: u32) -> io::Result<Option<u32>> {
    let mut next = GetId { id, ..GetId::default() };
    // SAFETY: the attributes of every `*_GET_NEXT_ID`, which hold no pointer.
    match unsafe { bpf(cmd, &mut next) } {
        Ok(_) => Ok(Some(next.next_id)),
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(None),
        Err(e) => Err(e),
    }
}

/// A descriptor for the object whose ID is `id`, from `cmd` (`*_GET_FD_BY_ID`).
pub fn by_id(cmd: libc::c_long, id: u32) -> io::Result<OwnedFd> {
    let mut attr = GetId { id, ..GetId::default() };
    // SAFETY: the attributes of every `*_GET_FD_BY_ID`, which hold no pointer; the descriptor
    // is the one the command just opened.
    unsafe { owned(bpf(cmd, &mut attr)?) }
}

/// Fills `info` (the start of the object's `struct bpf_*_info`, whose pointers it may set) with
/// what the kernel says of the object behind `fd`: no more than `info` has room for.
///
/// # Safety
///
/// `info` must be laid out as the start of the kernel's `struct bpf_*_info` for the object's
/// kind, and every buffer it points at valid for as many bytes as the length next to it says.
pub unsafe fn info<T>(fd: &OwnedFd, info: &mut T) -> io::Result<()> {
    #[repr(C)]
    struct GetInfo {
        bpf_fd: u32,
        info_len: u32,
        info: u64,
    }
    let mut attr =
        GetInfo { bpf_fd: fd.as_raw_fd() as u32, info_len: size_of::<T>() as u32, info: info as *mut T as u64 };
    // SAFETY: `GetInfo` is the command's attributes; `info` is the caller's promise.
    unsafe { bpf(OBJ_GET_INFO_BY_FD, &mut attr) }.map(drop)
}

/// The start of `struct bpf_prog_info`.
#[repr(C)]
#[derive(Default)]
struct ProgInfo {
    prog_type: u32,
    id: u32,
}

/// The ID of a loaded program, as `BPF_PROG_GET_FD_BY_ID` and `bpftool prog` know it.
pub fn prog_id(prog: &OwnedFd) -> io::Result<u32> {
    let mut prog_info = ProgInfo::default();
    // SAFETY: the start of `struct bpf_prog_info`, without pointers.
    unsafe { info(prog, &mut prog_info)? };
    Ok(prog_info.id)
}

/// A descriptor for the program whose ID is `id`.
pub fn prog_by_id(id: u32) -> io::Result<OwnedFd> {
    by_id(PROG_GET_FD_BY_ID, id)
}
