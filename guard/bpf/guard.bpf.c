// SPDX-License-Identifier: GPL-2.0
/*
 * elfsig's mapping guard: BPF LSM programs that hand every executable file mapping to the elfsig
 * kernel module (kmod/shim/guard.c), which verifies the file exactly as it verifies a program,
 * and every request for executable memory, which the module refuses to a process whose program
 * is not entitled to it (kmod/runtime.rs). elfsig-guard (src/main.rs) loads and attaches them,
 * and hands their links to the module.
 *
 * The programs only choose what to ask about; the module decides, counts and logs, in enforce
 * and permissive mode alike. A third program tells the module of revocations, a fourth asks it
 * about execveat(AT_EXECVE_CHECK), a fifth about opening a file for writing, a sixth tells it
 * of files released; a seventh and an eighth tell it of execs that can no longer fail and of
 * tasks forked, so that it knows what each task's program is entitled to; a ninth asks about
 * memory that READ_IMPLIES_EXEC makes executable where no other hook sees it, two more about
 * processes traced, and one about userfaultfds.
 */

#include "types.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

/*
 * The module's kfuncs: 0 allows, a negative errno refuses. The verifier wants an LSM program's
 * result known to be an errno or 0, hence the programs' `? -EACCES : 0`. Each is about the
 * current task; the module keeps, for each task, what its program is entitled to.
 */
extern int elfsig_kfunc_mmap_file(struct file *file, unsigned long prot) __ksym;
extern int elfsig_kfunc_mmap_anonymous(unsigned long prot) __ksym;
extern int elfsig_kfunc_file_mprotect(struct vm_area_struct *vma, unsigned long prot) __ksym;
extern void elfsig_kfunc_key_added(struct key *key) __ksym;
extern int elfsig_kfunc_exec_check(struct file *file) __ksym;
extern int elfsig_kfunc_exec_begins(void) __ksym;
extern void elfsig_kfunc_exec_committed(void) __ksym;
extern int elfsig_kfunc_task_alloc(struct task_struct *task) __ksym;
extern int elfsig_kfunc_file_open(struct file *file) __ksym;
extern void elfsig_kfunc_file_release(struct file *file) __ksym;
extern int elfsig_kfunc_mmap_addr(void) __ksym;
extern int elfsig_kfunc_ptrace(void) __ksym;
extern int elfsig_kfunc_ptrace_traceme(struct task_struct *parent) __ksym;
extern int elfsig_kfunc_anon_inode(const struct qstr *name) __ksym;

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
 * Memory mapped with PROT_EXEC (`prot`, with READ_IMPLIES_EXEC's addition): binfmt_elf mapping
 * a program and its interpreter, ld.so mapping a program (ld.so ./prog) and its libraries
 * (DT_NEEDED, LD_PRELOAD, dlopen), and anonymous memory. Sleepable, before mmap_lock: the
 * module may read and verify a file, and refuses writers to it until the file is released
 * (elfsig_file_release). 6.12's verifier takes `file` for non-NULL (and drops the check
 * below, so the module is given NULL for anonymous memory) while later ones know it may be
 * NULL (and require it).
 */
SEC("lsm.s/mmap_file")
int BPF_PROG(elfsig_mmap_file, struct file *file, unsigned long reqprot, unsigned long prot,
	     unsigned long flags, int ret)
{
	if (ret)
		return ret;
	if (!(prot & PROT_EXEC))
		return 0;
	if (!file)
		return elfsig_kfunc_mmap_anonymous(prot) ? -EACCES : 0;
	return elfsig_kfunc_mmap_file(file, prot) ? -EACCES : 0;
}

/*
 * A mapping asking for PROT_EXEC that is not executable yet, or asking to be writable too. Under
 * mmap_lock: the module cannot verify a file here; it refuses a file mapping made executable,
 * and what the task's program is not entitled to.
 */
SEC("lsm/file_mprotect")
int BPF_PROG(elfsig_file_mprotect, struct vm_area_struct *vma, unsigned long reqprot,
	     unsigned long prot, int ret)
{
	if (ret)
		return ret;
	if (!(prot & PROT_EXEC) || ((vma->vm_flags & VM_EXEC) && !(prot & PROT_WRITE)))
		return 0;
	return elfsig_kfunc_file_mprotect(vma, prot) ? -EACCES : 0;
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
 * The start of an exec. execveat(AT_EXECVE_CHECK) (Linux 6.14 and later): the kernel returns
 * right after this hook, before any binfmt handler, so the module's exec check would never see
 * it. The module answers as execve would. Other execs pass (the binfmt handler checks them)
 * once the module has room for what the exec's program is entitled to (elfsig_exec_committed),
 * which nothing can fail to store then. Kernels without the flag have no is_check field.
 */
SEC("lsm.s/bprm_creds_for_exec")
int BPF_PROG(elfsig_bprm_creds_for_exec, struct linux_binprm *bprm, int ret)
{
	if (ret)
		return ret;
	if (bpf_core_field_exists(bprm->is_check) && BPF_CORE_READ_BITFIELD(bprm, is_check))
		return elfsig_errno(elfsig_kfunc_exec_check(bprm->file), -EACCES);
	return elfsig_errno(elfsig_kfunc_exec_begins(), -ENOMEM);
}

/* An exec that can no longer fail, its program checked: the task is entitled to what it is. */
SEC("lsm/bprm_committed_creds")
int BPF_PROG(elfsig_bprm_committed_creds, struct linux_binprm *bprm)
{
	elfsig_kfunc_exec_committed();
	return 0;
}

/*
 * A new task (a process or a thread): it runs its parent's program, entitled as it is. The
 * fork fails when the module has no room to say so.
 */
SEC("lsm.s/task_alloc")
int BPF_PROG(elfsig_task_alloc, struct task_struct *task, unsigned long clone_flags, int ret)
{
	if (ret)
		return ret;
	return elfsig_errno(elfsig_kfunc_task_alloc(task), -ENOMEM);
}

/*
 * A file opened for writing: the module refuses it (ETXTBSY) while a process maps the file
 * executable, as the kernel refuses writing a running program, and refuses a process's memory
 * (/proc/PID/mem) to a task not entitled to it. Other opens pass at once.
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

/*
 * Memory about to be placed (mmap, mremap, and brk, which no other hook sees) by a task whose
 * personality has READ_IMPLIES_EXEC: everything readable it maps, its heap included, is
 * executable, which the module refuses to a task not entitled to it. Under mmap_lock for brk.
 */
SEC("lsm/mmap_addr")
int BPF_PROG(elfsig_mmap_addr, unsigned long addr, int ret)
{
	struct task_struct *task = bpf_get_current_task_btf();

	if (ret)
		return ret;
	if (!(task->personality & READ_IMPLIES_EXEC))
		return 0;
	return elfsig_kfunc_mmap_addr() ? -EACCES : 0;
}

/*
 * A process about to be traced, or its memory read or written, by the current task with its
 * real credentials (ptrace attach and seize, process_vm_readv and process_vm_writev): the
 * module refuses it to a tracer not entitled to it. The /proc checks (PTRACE_MODE_FSCREDS)
 * pass: a process's memory opened for writing is elfsig_file_open's.
 */
SEC("lsm/ptrace_access_check")
int BPF_PROG(elfsig_ptrace_access_check, struct task_struct *child, unsigned int mode, int ret)
{
	if (ret)
		return ret;
	if (!(mode & PTRACE_MODE_ATTACH) || !(mode & PTRACE_MODE_REALCREDS))
		return 0;
	return elfsig_errno(elfsig_kfunc_ptrace(), -EPERM);
}

/* PTRACE_TRACEME: the current task asks its parent to trace it; the parent must be entitled. */
SEC("lsm/ptrace_traceme")
int BPF_PROG(elfsig_ptrace_traceme, struct task_struct *parent, int ret)
{
	if (ret)
		return ret;
	return elfsig_errno(elfsig_kfunc_ptrace_traceme(parent), -EPERM);
}

/*
 * An anonymous inode made for a file descriptor: a userfaultfd ("[userfaultfd]") fills pages
 * it is asked for with any content, executable ones included, without anyone writing them
 * (UFFDIO_COPY), which the module refuses to a task not entitled to make code at run time.
 */
SEC("lsm/inode_init_security_anon")
int BPF_PROG(elfsig_inode_init_security_anon, struct inode *inode, const struct qstr *name,
	     const struct inode *context_inode, int ret)
{
	if (ret)
		return ret;
	return elfsig_kfunc_anon_inode(name) ? -EACCES : 0;
}

char LICENSE[] SEC("license") = "GPL";
