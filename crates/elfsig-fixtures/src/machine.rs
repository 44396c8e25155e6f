//! The target machine of each class/byte-order combination, and the hand-assembled code that
//! synthetic executables run.
//!
//! Every combination gets real code for its machine that does `write(1, msg, len)` and then
//! `exit(written - len)`, so a successful run prints [`HELLO_OUTPUT`](crate::HELLO_OUTPUT) and
//! exits 0. The message lives in `.rodata` and its length in `.data`, so a run also proves that
//! both load segments were mapped from the right file offsets. The code is position-independent
//! (PC-relative addressing), so it runs at any load address, which is what lets `ET_DYN` files run
//! too.

use crate::elf::{Class, EM_386, EM_PPC, EM_S390, EM_X86_64, Endian};

/// Per-machine constants of a synthetic file.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Machine {
    /// `e_machine`.
    pub(crate) e_machine: u16,
    /// Page size the linker would assume (`p_align` of `PT_LOAD`).
    pub(crate) page: u64,
    /// Load address of an `ET_EXEC` file (the GNU ld default for this machine).
    pub(crate) exec_base: u64,
    /// Length of [`Machine::hello_code`]'s output.
    pub(crate) code_len: u64,
}

impl Machine {
    /// x86-64 for 64-bit little-endian, i386 for 32-bit little-endian, s390x for 64-bit
    /// big-endian and 32-bit PowerPC for 32-bit big-endian.
    pub(crate) fn of(class: Class, endian: Endian) -> Machine {
        match (class, endian) {
            (Class::Elf64, Endian::Little) => {
                Machine { e_machine: EM_X86_64, page: 0x1000, exec_base: 0x40_0000, code_len: 39 }
            }
            (Class::Elf32, Endian::Little) => {
                Machine { e_machine: EM_386, page: 0x1000, exec_base: 0x0804_8000, code_len: 41 }
            }
            (Class::Elf64, Endian::Big) => {
                Machine { e_machine: EM_S390, page: 0x1000, exec_base: 0x100_0000, code_len: 30 }
            }
            (Class::Elf32, Endian::Big) => {
                Machine { e_machine: EM_PPC, page: 0x1_0000, exec_base: 0x1000_0000, code_len: 48 }
            }
        }
    }

    /// Code placed at virtual address `text` that writes the message at address `msg`, whose
    /// length is the word (of the class's width) at address `len`. Only the differences between
    /// the addresses matter.
    pub(crate) fn hello_code(self, text: u64, msg: u64, len: u64) -> Vec<u8> {
        let code = match self.e_machine {
            EM_X86_64 => x86_64(text, msg, len),
            EM_386 => i386(text, msg, len),
            EM_S390 => s390x(text, msg, len),
            _ => ppc32(text, msg, len),
        };
        assert_eq!(code.len() as u64, self.code_len, "code length table is stale");
        code
    }
}

/// Signed 32-bit displacement `to - from`, which the layout keeps small.
fn disp32(from: u64, to: u64) -> i32 {
    let d = i128::from(to) - i128::from(from);
    i32::try_from(d).expect("synthetic layout displacement exceeds 32 bits")
}

fn x86_64(text: u64, msg: u64, len: u64) -> Vec<u8> {
    let mut c = Vec::new();
    // lea rsi, [rip + msg]
    c.extend_from_slice(&[0x48, 0x8d, 0x35]);
    c.extend_from_slice(&disp32(text + 7, msg).to_le_bytes());
    // mov rdx, [rip + len]
    c.extend_from_slice(&[0x48, 0x8b, 0x15]);
    c.extend_from_slice(&disp32(text + 14, len).to_le_bytes());
    c.extend_from_slice(&[
        0xbf, 0x01, 0x00, 0x00, 0x00, // mov edi, 1
        0xb8, 0x01, 0x00, 0x00, 0x00, // mov eax, 1 (write)
        0x0f, 0x05, // syscall
        0x48, 0x29, 0xd0, // sub rax, rdx
        0x48, 0x89, 0xc7, // mov rdi, rax
        0xb8, 0x3c, 0x00, 0x00, 0x00, // mov eax, 60 (exit)
        0x0f, 0x05, // syscall
    ]);
    c
}

fn i386(text: u64, msg: u64, len: u64) -> Vec<u8> {
    // The address of the instruction after the call, which the pop loads into ecx.
    let anchor = text + 5;
    let mut c = vec![
        0xe8, 0x00, 0x00, 0x00, 0x00, // call anchor
        0x59, // anchor: pop ecx
        0x8b, 0x91, // mov edx, [ecx + disp32]
    ];
    c.extend_from_slice(&disp32(anchor, len).to_le_bytes());
    c.extend_from_slice(&[0x81, 0xc1]); // add ecx, imm32
    c.extend_from_slice(&disp32(anchor, msg).to_le_bytes());
    c.extend_from_slice(&[
        0xbb, 0x01, 0x00, 0x00, 0x00, // mov ebx, 1
        0xb8, 0x04, 0x00, 0x00, 0x00, // mov eax, 4 (write)
        0xcd, 0x80, // int 0x80
        0x29, 0xd0, // sub eax, edx
        0x89, 0xc3, // mov ebx, eax
        0xb8, 0x01, 0x00, 0x00, 0x00, // mov eax, 1 (exit)
        0xcd, 0x80, // int 0x80
    ]);
    c
}

fn s390x(text: u64, msg: u64, len: u64) -> Vec<u8> {
    // larl takes a halfword offset from its own address; the layout keeps targets even.
    let halfwords = |from: u64, to: u64| {
        let d = disp32(from, to);
        assert!(d % 2 == 0, "larl target is not halfword aligned");
        (d / 2).to_be_bytes()
    };
    let mut c = vec![0xa7, 0x29, 0x00, 0x01]; // lghi %r2, 1
    c.extend_from_slice(&[0xc0, 0x30]); // larl %r3, msg
    c.extend_from_slice(&halfwords(text + 4, msg));
    c.extend_from_slice(&[0xc0, 0x40]); // larl %r4, len
    c.extend_from_slice(&halfwords(text + 10, len));
    c.extend_from_slice(&[
        0xe3, 0x40, 0x40, 0x00, 0x00, 0x04, // lg %r4, 0(%r4)
        0x0a, 0x04, // svc 4 (write)
        0xb9, 0x09, 0x00, 0x24, // sgr %r2, %r4
        0x0a, 0x01, // svc 1 (exit)
    ]);
    c
}

fn ppc32(text: u64, msg: u64, len: u64) -> Vec<u8> {
    // `bl` to the next instruction leaves its address in the link register.
    let anchor = text + 4;
    let split = |to: u64| {
        let d = disp32(anchor, to);
        // addis takes the high half adjusted for the sign of the low half.
        let lo = (d & 0xffff) as u32;
        let ha = ((d.wrapping_add(0x8000) >> 16) & 0xffff) as u32;
        (ha, lo)
    };
    let (len_ha, len_lo) = split(len);
    let (msg_ha, msg_lo) = split(msg);
    let words: [u32; 12] = [
        0x4800_0005,          // bl anchor
        0x7c88_02a6,          // anchor: mflr r4
        0x3cc4_0000 | len_ha, // addis r6, r4, len@ha
        0x80a6_0000 | len_lo, // lwz r5, len@l(r6)
        0x3c84_0000 | msg_ha, // addis r4, r4, msg@ha
        0x3884_0000 | msg_lo, // addi r4, r4, msg@l
        0x3860_0001,          // li r3, 1
        0x3800_0004,          // li r0, 4 (write)
        0x4400_0002,          // sc
        0x7c65_1850,          // subf r3, r5, r3
        0x3800_0001,          // li r0, 1 (exit)
        0x4400_0002,          // sc
    ];
    words.iter().flat_map(|w| w.to_be_bytes()).collect()
}
