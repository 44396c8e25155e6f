// SPDX-License-Identifier: GPL-2.0
/*
 * elfsig's mapping guard: BPF LSM programs that hand every executable file mapping to the elfsig
 * kernel module (kmod/shim/guard.c), which verifies the file exactly as it verifies a program.
 * elfsig-guard (src/main.rs) loads and attaches them, and hands their links to the module.
 *
 * The programs only choose what to ask about; the module decides, counts and logs, in enforce
 * and permissive mode alike. A third program tells the module of revocations, a fourth asks it
 * about execveat(AT_EXECVE_CHECK), a fifth about opening a file for writing, a sixth tells it
 * of files released.
 */

#include "types.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

/*
 * The module's kfuncs: 0 allows, -EACCES refuses. The verifier wants an LSM program's result
 * known to be an errno or 0, hence the programs' `? -EACCES : 0`.
 */
extern int elfsig_kfunc_mmap_file(struct file *file) __ksym;
extern int elfsig_kfunc_file_mprotect(struct vm_area_struct *vma) __ksym;
extern void elfsig_kfunc_key_added(struct key *key) __ksym;
extern int elfsig_kfunc_exec_check(struct file *file) __ksym;
extern int elfsig_kfunc_file_open(struct file *file) __ksym;
extern void elfsig_kfunc_file_release(struct file *file) __ksym;

/* An errno the module returned, bounded as the verifier wants an LSM program's result. */
static __always_inline int elfsig_errno(int ret, int otherwise)
{
	if (ret >= 0)
		return 0;
	if (ret < -MAX_ERRNO)
		return otherwise;
	return ret;
}

/*
 * A file mapped with PROT_EXEC: binfmt_elf mapping a program and its interpreter, ld.so mapping
 * a program (ld.so ./prog) and its libraries (DT_NEEDED, LD_PRELOAD, dlopen). Sleepable, before
 * mmap_lock: the module may read and verify the file, and refuses writers to it until the file
 * is released (elfsig_file_release). Anonymous mappings (no file) are let
 * through: here, and by the module too, since 6.12's verifier takes `file` for non-NULL (and
 * drops this check) while later ones know it may be NULL (and require it).
 */
SEC("lsm.s/mmap_file")
int BPF_PROG(elfsig_mmap_file, struct file *file, unsigned long reqprot, unsigned long prot,
	     unsigned long flags, int ret)
{
	if (ret)
		return ret;
	if (!(prot & PROT_EXEC) || !file)
		return 0;
	return elfsig_kfunc_mmap_file(file) ? -EACCES : 0;
}

/*
 * A mapping asking for PROT_EXEC: only a file mapping that is not executable yet concerns the
 * guard (anonymous memory is out of scope). Under mmap_lock: the module cannot verify the file
 * here, and refuses.
 */
SEC("lsm/file_mprotect")
int BPF_PROG(elfsig_file_mprotect, struct vm_area_struct *vma, unsigned long reqprot,
	     unsigned long prot, int ret)
{
	if (ret)
		return ret;
	if (!(prot & PROT_EXEC) || !vma->vm_file || (vma->vm_flags & VM_EXEC))
		return 0;
	return elfsig_kfunc_file_mprotect(vma) ? -EACCES : 0;
}

/*
 * A key added to a keyring or updated: the module flushes its verdict cache when it is a
 * revocation (a key in .blacklist), which spares it a .blacklist lookup on every cached verdict
 * while the guard runs.
 */
SEC("lsm/key_post_create_or_update")
int BPF_PROG(elfsig_key_post_create_or_update, struct key *keyring, struct key *key,
	     const void *payload, unsigned long plen, unsigned long flags, _Bool create)
{
	if (key)
		elfsig_kfunc_key_added(key);
	return 0;
}

/*
 * execveat(AT_EXECVE_CHECK) (Linux 6.14 and later): the kernel returns right after this hook,
 * before any binfmt handler, so the module's exec check would never see it. The module
 * answers as execve would. Other execs pass: the binfmt handler checks them. Kernels without
 * the flag have no is_check field, and the program only ever lets execs pass there.
 */
SEC("lsm.s/bprm_creds_for_exec")
int BPF_PROG(elfsig_bprm_creds_for_exec, struct linux_binprm *bprm, int ret)
{
	if (ret)
		return ret;
	if (!bpf_core_field_exists(bprm->is_check) || !BPF_CORE_READ_BITFIELD(bprm, is_check))
		return 0;
	return elfsig_errno(elfsig_kfunc_exec_check(bprm->file), -EACCES);
}

/*
 * A file opened for writing: the module refuses it (ETXTBSY) while a process maps the file
 * executable, as the kernel refuses writing a running program. Other opens pass at once.
 */
SEC("lsm.s/file_open")
int BPF_PROG(elfsig_file_open, struct file *file, int ret)
{
	if (ret)
		return ret;
	if (!(file->f_mode & FMODE_WRITE))
		return 0;
	return elfsig_errno(elfsig_kfunc_file_open(file), -ETXTBSY);
}

/*
 * A file released (its last reference gone): the module refuses writers to a file mapped
 * executable from its mapping check until then, so that none can appear between the verdict
 * and the mapping, and lets them back here. Every file's release passes here; the module
 * looks it up without a lock.
 */
SEC("lsm/file_release")
int BPF_PROG(elfsig_file_release, struct file *file)
{
	elfsig_kfunc_file_release(file);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
