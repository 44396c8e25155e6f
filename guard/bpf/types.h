/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The few kernel types the guard's programs use, instead of a vmlinux.h generated from one
 * kernel: the structures are read with CO-RE (preserve_access_index), so libbpf matches their
 * fields by name against the running kernel's BTF, wherever they are.
 */
#ifndef ELFSIG_GUARD_TYPES_H
#define ELFSIG_GUARD_TYPES_H

typedef unsigned char __u8;
typedef unsigned short __u16;
typedef unsigned int __u32;
typedef unsigned long long __u64;
typedef signed char __s8;
typedef short __s16;
typedef int __s32;
typedef long long __s64;
typedef __u16 __be16;
typedef __u32 __be32;
typedef __u32 __wsum;

/* What bpf_helpers.h needs from uapi/linux/bpf.h. */
enum bpf_map_type { BPF_MAP_TYPE_UNSPEC = 0 };

/*
 * A structure, not a forward declaration: libbpf checks the kfuncs' prototypes against the
 * module's BTF, where struct file is a structure, and a declaration is not compatible with it.
 */
struct file {
	unsigned int f_mode;
} __attribute__((preserve_access_index));

/* is_check: Linux 6.14 and later (bpf_core_field_exists tells). */
struct linux_binprm {
	struct file *file;
	unsigned int is_check:1;
} __attribute__((preserve_access_index));

struct key {
} __attribute__((preserve_access_index));

struct task_struct {
	unsigned int personality;
} __attribute__((preserve_access_index));

struct qstr {
	unsigned int len;
} __attribute__((preserve_access_index));

struct inode {
} __attribute__((preserve_access_index));

struct vm_area_struct {
	unsigned long vm_flags;
	struct file *vm_file;
} __attribute__((preserve_access_index));

/* include/uapi/asm-generic/mman-common.h and include/linux/mm.h */
/* include/uapi/linux/personality.h */
#define READ_IMPLIES_EXEC 0x0400000
#define PROT_WRITE 0x2
#define PROT_EXEC 0x4
#define VM_EXEC 0x00000004
/* include/linux/fs.h */
#define FMODE_WRITE 0x2
/* include/uapi/asm-generic/errno-base.h and include/linux/err.h */
/* include/linux/ptrace.h */
#define PTRACE_MODE_ATTACH 0x02
#define PTRACE_MODE_REALCREDS 0x10
#define EPERM 1
#define ENOMEM 12
#define EACCES 13
#define ETXTBSY 26
#define MAX_ERRNO 4095

#endif
