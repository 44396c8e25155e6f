// SPDX-License-Identifier: GPL-2.0
/*
 * The mapping guard's kfuncs, which its BPF LSM programs call (guard.c registers them and does
 * their work). They are alone in this file, the one file of the module compiled with debug
 * information, because the module's BTF is made from its DWARF and must describe their
 * arguments as the kernel's own types: the verifier checks that the program passes the
 * kernel's struct file, and a module type of the same name is another type. A file that
 * includes linux/module.h describes struct module, and with it most of the kernel's types,
 * which on some kernels (Debian's 7.2: its own modules show it too) do not deduplicate
 * against vmlinux's BTF and stay the module's own copies. So the rest of the module, and the
 * .mod.c that Kbuild generates, are built with -g0 (KCFLAGS, which kmod/dkms/build and
 * `cargo xtask build-kmod` pass), and this file declares what it needs and no more.
 */

#include <linux/btf.h>

#include "shim.h"

__bpf_kfunc_start_defs();

__bpf_kfunc int elfsig_kfunc_mmap_file(struct file *file, unsigned long prot)
{
	return elfsig_shim_guard_mmap_file(file, prot);
}

__bpf_kfunc int elfsig_kfunc_mmap_anonymous(unsigned long prot)
{
	return elfsig_shim_guard_mmap_anonymous(prot);
}

__bpf_kfunc int elfsig_kfunc_mprotect_exec(struct vm_area_struct *vma, unsigned long prot)
{
	return elfsig_shim_guard_mprotect_exec(vma, prot);
}

__bpf_kfunc void elfsig_kfunc_key_added(struct key *key)
{
	elfsig_shim_guard_key_added(key);
}

__bpf_kfunc int elfsig_kfunc_exec_starts(struct linux_binprm *bprm)
{
	return elfsig_shim_guard_exec_starts(bprm);
}

__bpf_kfunc void elfsig_kfunc_exec_committed(void)
{
	elfsig_shim_guard_exec_committed();
}

__bpf_kfunc int elfsig_kfunc_task_alloc(struct task_struct *task)
{
	return elfsig_shim_guard_task_alloc(task);
}

__bpf_kfunc int elfsig_kfunc_file_open(struct file *file)
{
	return elfsig_shim_guard_file_open(file);
}

__bpf_kfunc void elfsig_kfunc_file_release(struct file *file)
{
	elfsig_shim_guard_file_release(file);
}

__bpf_kfunc int elfsig_kfunc_memory_placed(void)
{
	return elfsig_shim_guard_memory_placed();
}

__bpf_kfunc int elfsig_kfunc_ptrace(void)
{
	return elfsig_shim_guard_ptrace();
}

__bpf_kfunc int elfsig_kfunc_ptrace_traceme(struct task_struct *parent)
{
	return elfsig_shim_guard_ptrace_traceme(parent);
}

__bpf_kfunc int elfsig_kfunc_anon_inode(const struct qstr *name)
{
	return elfsig_shim_guard_anon_inode(name);
}

__bpf_kfunc int elfsig_kfunc_bpf_prog(struct bpf_prog *prog)
{
	return elfsig_shim_guard_bpf_prog(prog);
}

__bpf_kfunc_end_defs();
