// SPDX-License-Identifier: GPL-2.0
/*
 * elfsig's mapping guard: BPF LSM programs that hand every executable file mapping to the elfsig
 * kernel module (kmod/shim/guard.c), which verifies the file exactly as it verifies a program,
 * and every request for executable memory, which the module refuses to a process whose program
 * is not entitled to it (kmod/runtime.rs). elfsig-guard (src/load.rs) loads and attaches them,
 * and hands their links to the module.
 *
 * The programs only choose what to ask about; the module decides, counts and logs, in enforce
 * and permissive mode alike. A third program tells the module of revocations, a fourth asks it
 * about execveat(AT_EXECVE_CHECK), a fifth about opening a file for writing, a sixth tells it
 * of files released; a seventh and an eighth tell it of execs that can no longer fail and of
 * tasks forked, so that it knows what each task's program is entitled to; a ninth asks about
 * memory that READ_IMPLIES_EXEC makes executable where no other hook sees it, two more about
 * processes traced, and one about userfaultfds. The last keeps them all from anyone else:
 * once the module holds them, no file descriptor is made for any of them.
 *
 * The programs read no field of any kernel structure: the module, built against the running
 * kernel, reads those it needs. So the programs need no relocation against the kernel's types
 * (no CO-RE), and elfsig-guard loads them with no more than the IDs of the hooks and kfuncs
 * (src/load.rs). Each program is its hook's arguments, one 64-bit word each, in `ctx`.
 */

#include "types.h"

/*
 * The module's kfuncs: 0 allows, a negative errno refuses. The verifier wants an LSM program's
 * result known to be an errno or 0, hence the programs' `? -EACCES : 0`. Each is about the
 * current task; the module keeps, for each task, what its program is entitled to.
 */
extern int elfsig_kfunc_mmap_file(struct file *file, unsigned long prot) __ksym;
extern int elfsig_kfunc_mmap_anonymous(unsigned long prot) __ksym;
extern int elfsig_kfunc_mprotect_exec(struct vm_area_struct *vma, unsigned long prot) __ksym;
extern void elfsig_kfunc_key_added(struct key *key) __ksym;
extern int elfsig_kfunc_exec_starts(struct linux_binprm *bprm) __ksym;
extern void elfsig_kfunc_exec_committed(void) __ksym;
extern int elfsig_kfunc_task_alloc(struct task_struct *task) __ksym;
extern int elfsig_kfunc_file_open(struct file *file) __ksym;
extern void elfsig_kfunc_file_release(struct file *file) __ksym;
extern int elfsig_kfunc_memory_placed(void) __ksym;
extern int elfsig_kfunc_ptrace(void) __ksym;
extern int elfsig_kfunc_ptrace_traceme(struct task_struct *parent) __ksym;
extern int elfsig_kfunc_anon_inode(const struct qstr *name) __ksym;
extern int elfsig_kfunc_bpf_prog(struct bpf_prog *prog) __ksym;

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
 * (guard_file_release). 6.12's verifier takes `file` for non-NULL (and drops the check
 * below, so the module is given NULL for anonymous memory) while later ones know it may be
 * NULL (and require it).
 */
SEC("lsm.s/mmap_file")
int guard_mmap_file(__u64 *ctx)
{
	struct file *file = (struct file *)ctx[0];
	unsigned long prot = ctx[2];
	int ret = ctx[4];

	if (ret)
		return ret;
	if (!(prot & PROT_EXEC))
		return 0;
	if (!file)
		return elfsig_kfunc_mmap_anonymous(prot) ? -EACCES : 0;
	return elfsig_kfunc_mmap_file(file, prot) ? -EACCES : 0;
}

/*
 * A mapping's protection changed. Under mmap_lock: the module cannot verify a file here; it
 * refuses a file mapping made executable, and what the task's program is not entitled to. It
 * looks no further at a request without PROT_EXEC, or one that keeps an executable mapping
 * executable and not writable.
 */
SEC("lsm/file_mprotect")
int guard_file_mprotect(__u64 *ctx)
{
	struct vm_area_struct *vma = (struct vm_area_struct *)ctx[0];
	unsigned long prot = ctx[2];
	int ret = ctx[3];

	if (ret)
		return ret;
	if (!(prot & PROT_EXEC))
		return 0;
	return elfsig_kfunc_mprotect_exec(vma, prot) ? -EACCES : 0;
}

/*
 * A key added to a keyring or updated: the module flushes its verdict cache when it is a
 * revocation (a key in .blacklist), which spares it a .blacklist lookup on every cached verdict
 * while the guard runs.
 */
SEC("lsm/key_post_create_or_update")
int guard_key_post_create_or_update(__u64 *ctx)
{
	struct key *key = (struct key *)ctx[1];

	if (key)
		elfsig_kfunc_key_added(key);
	return 0;
}

/*
 * The start of an exec. execveat(AT_EXECVE_CHECK) (Linux 6.14 and later): the kernel returns
 * right after this hook, before any binfmt handler, so the module's exec check would never see
 * it; the module answers as execve would. Other execs pass (the binfmt handler checks them)
 * once the module has room for what the exec's program is entitled to (elfsig_exec_committed),
 * which nothing can fail to store then.
 */
SEC("lsm.s/bprm_creds_for_exec")
int guard_bprm_creds_for_exec(__u64 *ctx)
{
	struct linux_binprm *bprm = (struct linux_binprm *)ctx[0];
	int ret = ctx[1];

	if (ret)
		return ret;
	return elfsig_errno(elfsig_kfunc_exec_starts(bprm), -EACCES);
}

/* An exec that can no longer fail, its program checked: the task is entitled to what it is. */
SEC("lsm/bprm_committed_creds")
int guard_bprm_committed_creds(__u64 *ctx)
{
	elfsig_kfunc_exec_committed();
	return 0;
}

/*
 * A new task (a process or a thread): it runs its parent's program, entitled as it is. The
 * fork fails when the module has no room to say so.
 */
SEC("lsm.s/task_alloc")
int guard_task_alloc(__u64 *ctx)
{
	struct task_struct *task = (struct task_struct *)ctx[0];
	int ret = ctx[2];

	if (ret)
		return ret;
	return elfsig_errno(elfsig_kfunc_task_alloc(task), -ENOMEM);
}

/*
 * A file opened: the module refuses opening for writing (ETXTBSY) a file that a process maps
 * executable, as the kernel refuses writing a running program, and a process's memory
 * (/proc/PID/mem) to a task not entitled to it. Other opens pass at once.
 */
SEC("lsm.s/file_open")
int guard_file_open(__u64 *ctx)
{
	struct file *file = (struct file *)ctx[0];
	int ret = ctx[1];

	if (ret)
		return ret;
	return elfsig_errno(elfsig_kfunc_file_open(file), -ETXTBSY);
}

/*
 * A file released (its last reference gone): the module refuses writers to a file mapped
 * executable from its mapping check until then, so that none can appear between the verdict
 * and the mapping, and lets them back here. Every file's release passes here; the module
 * looks it up without a lock.
 */
SEC("lsm/file_release")
int guard_file_release(__u64 *ctx)
{
	elfsig_kfunc_file_release((struct file *)ctx[0]);
	return 0;
}

/*
 * Memory about to be placed (mmap, mremap, and brk, which no other hook sees): for a task whose
 * personality has READ_IMPLIES_EXEC, everything readable it maps, its heap included, is
 * executable, which the module refuses to a task not entitled to it. Under mmap_lock for brk.
 */
SEC("lsm/mmap_addr")
int guard_mmap_addr(__u64 *ctx)
{
	int ret = ctx[1];

	if (ret)
		return ret;
	return elfsig_kfunc_memory_placed() ? -EACCES : 0;
}

/*
 * A process about to be traced, or its memory read or written, by the current task with its
 * real credentials (ptrace attach and seize, process_vm_readv and process_vm_writev): the
 * module refuses it to a tracer not entitled to it. The /proc checks (PTRACE_MODE_FSCREDS)
 * pass: a process's memory opened for writing is guard_file_open's.
 */
SEC("lsm/ptrace_access_check")
int guard_ptrace_access_check(__u64 *ctx)
{
	unsigned int mode = ctx[1];
	int ret = ctx[2];

	if (ret)
		return ret;
	if (!(mode & PTRACE_MODE_ATTACH) || !(mode & PTRACE_MODE_REALCREDS))
		return 0;
	return elfsig_errno(elfsig_kfunc_ptrace(), -EPERM);
}

/* PTRACE_TRACEME: the current task asks its parent to trace it; the parent must be entitled. */
SEC("lsm/ptrace_traceme")
int guard_ptrace_traceme(__u64 *ctx)
{
	struct task_struct *parent = (struct task_struct *)ctx[0];
	int ret = ctx[1];

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
int guard_inode_init_security_anon(__u64 *ctx)
{
	const struct qstr *name = (const struct qstr *)ctx[1];
	int ret = ctx[3];

	if (ret)
		return ret;
	return elfsig_kfunc_anon_inode(name) ? -EACCES : 0;
}

/*
 * A file descriptor about to be made for a BPF program (loaded, found by its ID, or got from a
 * pinned path): the module refuses one for the programs above once it holds them, so that no
 * one can tail-call them from another hook, attach them again, replace their functions or
 * trace them; and one for a program that would skip a security_ function (fmod_ret), which
 * fails its load.
 */
SEC("lsm/bpf_prog")
int guard_bpf_prog(__u64 *ctx)
{
	struct bpf_prog *prog = (struct bpf_prog *)ctx[0];
	int ret = ctx[1];

	if (ret)
		return ret;
	return elfsig_errno(elfsig_kfunc_bpf_prog(prog), -ENOENT);
}

char LICENSE[] SEC("license") = "GPL";
