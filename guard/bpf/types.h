/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the guard's programs need instead of libbpf's headers and a vmlinux.h: the kernel's
 * structures by name only (the programs hand them to the module's kfuncs and read none of
 * their fields; the verifier knows their types from the hooks' and the kfuncs' BTF), the
 * section and extern attributes elfsig-guard's loader reads (src/object.rs), and a few
 * constants.
 */
#ifndef ELFSIG_GUARD_TYPES_H
#define ELFSIG_GUARD_TYPES_H

typedef unsigned long long __u64;

struct bpf_prog;
struct file;
struct key;
struct linux_binprm;
struct qstr;
struct task_struct;
struct vm_area_struct;

/* The program's hook: "lsm/HOOK", or "lsm.s/HOOK" for a sleepable program. */
#define SEC(name) __attribute__((section(name), used))
/* A kfunc: an undefined symbol, which the loader resolves to the module's BTF ID. */
#define __ksym __attribute__((section(".ksyms")))
#define __always_inline inline __attribute__((always_inline))

/* include/uapi/asm-generic/mman-common.h */
#define PROT_EXEC 0x4
/* include/linux/ptrace.h */
#define PTRACE_MODE_ATTACH 0x02
#define PTRACE_MODE_REALCREDS 0x10
/* include/uapi/asm-generic/errno-base.h and include/linux/err.h */
#define EPERM 1
#define ENOENT 2
#define ENOMEM 12
#define EACCES 13
#define ETXTBSY 26
#define MAX_ERRNO 4095

#endif
