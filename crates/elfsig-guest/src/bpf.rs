//! The bpf(2) commands the guard's cases use to play root trying to reach the guard's programs:
//! list the LSM links and their programs' IDs, ask for a program by its ID (elfsig-bpf's), and
//! load a program of one's own.

#![allow(unsafe_code)]

use std::io;
use std::os::fd::OwnedFd;

use elfsig_bpf::{LINK_GET_FD_BY_ID, LINK_GET_NEXT_ID, PROG_LOAD, ProgLoad, bpf, by_id, info, next_id, owned};
pub use elfsig_bpf::{prog_by_id as program_by_id, prog_id as program_id};

const BPF_PROG_TYPE_SOCKET_FILTER: u32 = 1;
const BPF_LINK_TYPE_TRACING: u32 = 2;
const BPF_LSM_MAC: u32 = 27;

/// The start of `struct bpf_link_info`, with its `tracing` member.
#[repr(C)]
#[derive(Default)]
struct LinkInfo {
    link_type: u32,
    id: u32,
    prog_id: u32,
    _pad: u32,
    attach_type: u32,
    target_obj_id: u32,
    target_btf_id: u32,
}

/// The IDs of the programs that BPF LSM links run (a link's descriptor is made for anyone with
/// the capabilities: no LSM hook asks about links).
pub fn lsm_programs() -> io::Result<Vec<u32>> {
    let mut programs = Vec::new();
    let mut id = 0;
    while let Some(next) = next_id(LINK_GET_NEXT_ID, id)? {
        id = next;
        let link = match by_id(LINK_GET_FD_BY_ID, id) {
            Ok(link) => link,
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => continue,
            Err(e) => return Err(e),
        };
        let mut link_info = LinkInfo::default();
        // SAFETY: `LinkInfo` is the start of `struct bpf_link_info`, without pointers.
        unsafe { info(&link, &mut link_info)? };
        if link_info.link_type == BPF_LINK_TYPE_TRACING && link_info.attach_type == BPF_LSM_MAC {
            programs.push(link_info.prog_id);
        }
    }
    Ok(programs)
}

/// A socket filter that accepts nothing (`r0 = 0; exit`): a program of one's own.
pub fn load_socket_filter() -> io::Result<OwnedFd> {
    // BPF_ALU64 | BPF_MOV | BPF_K into r0, imm 0; BPF_JMP | BPF_EXIT.
    let insns: [u64; 2] = [0xb7, 0x95];
    let license = c"GPL";
    let mut attr = ProgLoad {
        prog_type: BPF_PROG_TYPE_SOCKET_FILTER,
        insn_cnt: insns.len() as u32,
        insns: insns.as_ptr() as u64,
        license: license.as_ptr() as u64,
        ..ProgLoad::default()
    };
    // SAFETY: `ProgLoad` is the command's attributes, its pointers to `insns` and `license`,
    // which outlive the call; the descriptor is the one the command just opened.
    unsafe { owned(bpf(PROG_LOAD, &mut attr)?) }
}
