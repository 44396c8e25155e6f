// SPDX-License-Identifier: GPL-2.0
/*
 * The mapping guard's kernel half (docs/DESIGN.md). A module cannot register LSM hooks, so
 * BPF LSM programs (guard/bpf/guard.bpf.c, attached from user space by elfsig-guard) run on
 * mmap_file and file_mprotect and call the kfuncs below, which hand the decision to Rust
 * (glue/callbacks.rs, then hooks.rs); a third, on key_post_create_or_update, tells the module
 * of every revocation, so that cached verdicts need no revocation lookup while the guard runs;
 * a fourth, on bprm_creds_for_exec, answers execveat(AT_EXECVE_CHECK), which no binfmt handler
 * sees; a fifth, on file_open, refuses opening for writing a file that a process maps
 * executable; a sixth, on file_release, lets writers at a file again that refused them from
 * its mapping check on (write_denials.c). Six more serve the run-time rules (kmod/runtime.rs):
 * on bprm_creds_for_exec and bprm_committed_creds and on task_alloc, they tell the module what
 * each task's program is entitled to (records.c); on mmap_addr, ptrace_access_check,
 * ptrace_traceme and inode_init_security_anon, with mmap_file, file_mprotect and file_open,
 * they ask it about memory. elfsig-guard then hands the programs' links to the
 * module through the `guard` control file; the module keeps a reference to each, so the guard
 * outlives its loader, and no one but the module can detach it (LSM links have no detach).
 *
 * Once it holds them, the guard is sealed: no program loaded later may call the kfuncs (the
 * filter below refuses them all), and a thirteenth program, on bpf_prog, refuses a file
 * descriptor for any of the guard's programs (elfsig_shim_guard_bpf_prog()). Without a
 * descriptor, no one can put them in a program array and tail-call them from another hook
 * with the same arguments (file_set_fowner into file_release's program would give write
 * refusals back early), attach them again, replace their functions (freplace) or trace them.
 * Nor may anyone load a program that skips a security_ function (fmod_ret), and with it the
 * guard's hook.
 *
 * A program that calls a module's kfunc holds a reference on that module: while the module
 * holds the links, it cannot be unloaded. Writing `release` to `guard` drops them (refused
 * once locked).
 */

#include <linux/binfmts.h>
#include <linux/bpf.h>
#include <linux/btf.h>
#include <linux/btf_ids.h>
#include <linux/err.h>
#include <linux/fcntl.h>
#include <linux/fs.h>
#include <linux/key.h>
#include <linux/key-type.h>
#include <linux/magic.h>
#include <linux/mm.h>
#include <linux/mman.h>
#include <linux/module.h>
#include <linux/mount.h>
#include <linux/rbtree.h>
#include <linux/mutex.h>
#include <linux/personality.h>
#include <linux/sched.h>
#include <linux/string.h>
#include <linux/version.h>

#include "shim.h"

/* A namespace became a string in 6.13. */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 13, 0)
MODULE_IMPORT_NS("BPF_INTERNAL");
#else
MODULE_IMPORT_NS(BPF_INTERNAL);
#endif

/*
 * What the kfuncs (kfuncs.c) do, for the current task. mmap_file, for memory mapped with
 * PROT_EXEC: sleepable, before mmap_lock is taken. 0 allows, a negative errno refuses. The
 * 6.12 verifier takes the hook's file for non-NULL, so an anonymous mapping (no file) may come
 * here too; later ones send it to elfsig_shim_guard_mmap_anonymous().
 */
int elfsig_shim_guard_mmap_file(struct file *file, unsigned long prot)
{
	if (!file)
		return elfsig_shim_guard_mmap_anonymous(prot);
	/*
	 * do_mmap() refuses PROT_EXEC on a noexec mount after this hook (path_noexec(), which is
	 * not exported): nothing to verify, and no write refusal to keep for a mapping that will
	 * not exist.
	 */
	if ((file->f_path.mnt->mnt_flags & MNT_NOEXEC) ||
	    (file->f_path.mnt->mnt_sb->s_iflags & SB_I_NOEXEC))
		return 0;
	return elfsig_check_mapping(file, prot & PROT_WRITE);
}

/* mmap_file, for anonymous memory mapped with PROT_EXEC (private or shared). */
int elfsig_shim_guard_mmap_anonymous(unsigned long prot)
{
	return elfsig_check_mapping(NULL, prot & PROT_WRITE);
}

/*
 * file_mprotect, for a mapping asking for PROT_EXEC: under mmap_lock, so nothing may sleep and
 * nothing is read; a file cannot be verified there. An executable mapping that stays
 * executable and does not ask to be writable changes nothing the module answers for.
 */
int elfsig_shim_guard_mprotect_exec(struct vm_area_struct *vma, unsigned long prot)
{
	struct file *file = vma->vm_file;

	if ((vma->vm_flags & VM_EXEC) && !(prot & PROT_WRITE))
		return 0;

	/*
	 * Shared anonymous memory and SysV shared memory are the kernel's own shmem files
	 * (S_PRIVATE): no one's file content, anonymous memory to the run-time rules.
	 */
	if (file && IS_PRIVATE(file_inode(file)))
		file = NULL;
	return elfsig_check_mprotect(file, vma->vm_flags & VM_EXEC, prot & PROT_WRITE);
}

/*
 * bprm_creds_for_exec. For execveat(AT_EXECVE_CHECK) (6.14 and later), the kernel returns right
 * after this hook and runs no binfmt handler, so the module answers here what the handler would
 * answer for an execve of the same file. For an exec, the task gets the entry its exec's record
 * will go in (records.c), or the exec fails with -ENOMEM. Sleepable.
 */
int elfsig_shim_guard_exec_starts(struct linux_binprm *bprm)
{
#ifdef AT_EXECVE_CHECK
	if (bprm->is_check)
		return bprm->file ? elfsig_check_exec_query(bprm->file) : 0;
#endif
	return elfsig_exec_begins();
}

/* bprm_committed_creds: the current task's exec can no longer fail. Does not sleep. */
void elfsig_shim_guard_exec_committed(void)
{
	elfsig_exec_committed();
}

/* task_alloc: the current task forks `task` (0, or -ENOMEM, which fails the fork). Sleepable. */
int elfsig_shim_guard_task_alloc(struct task_struct *task)
{
	return elfsig_task_alloc((uintptr_t)task);
}

/*
 * mmap_addr, of every mapping placed: for a task whose personality has READ_IMPLIES_EXEC,
 * whatever it maps readable is executable, its heap (brk) included, which no other hook sees.
 * Under mmap_lock for brk.
 */
int elfsig_shim_guard_memory_placed(void)
{
	if (!(current->personality & READ_IMPLIES_EXEC))
		return 0;
	return elfsig_check_implied_exec();
}

/*
 * ptrace_access_check, for PTRACE_MODE_ATTACH with the real credentials (ptrace attach and
 * seize, process_vm_readv and process_vm_writev); ptrace_traceme, for the parent asked to
 * trace the current task. Under task_lock or tasklist_lock: nothing may sleep or take them.
 */
int elfsig_shim_guard_ptrace(void)
{
	return elfsig_check_ptrace();
}

int elfsig_shim_guard_ptrace_traceme(struct task_struct *parent)
{
	return elfsig_check_traced_by((uintptr_t)parent);
}

/*
 * inode_init_security_anon: an anonymous inode made for a descriptor. A userfaultfd fills the
 * pages it is asked for, executable ones too, with any content and without anyone writing
 * them.
 */
int elfsig_shim_guard_anon_inode(const struct qstr *name)
{
	static const char userfaultfd[] = "[userfaultfd]";

	if (!name || name->len != sizeof(userfaultfd) - 1 ||
	    memcmp(name->name, userfaultfd, sizeof(userfaultfd) - 1))
		return 0;
	return elfsig_check_userfaultfd();
}

static DEFINE_MUTEX(elfsig_guard_lock);
static struct bpf_link *elfsig_guard_links[ELFSIG_GUARD_HOOKS];
/* Bumped under the lock by every attach and every release that dropped links: odd while the
 * module holds them. */
static u64 elfsig_guard_generation;

/*
 * The programs of the links the module holds, for elfsig_shim_guard_bpf_prog()'s comparisons:
 * set and cleared under elfsig_guard_lock with the links, read without it, compared and
 * never followed.
 */
static const struct bpf_prog *elfsig_guard_progs[ELFSIG_GUARD_HOOKS];

/*
 * bpf_prog: a file descriptor is about to be made for `prog` (loaded, found by its ID, or got
 * from a pinned path). One of the programs the module holds gets none: -ENOENT, which tools
 * that list programs (bpftool prog show) take for a program gone and skip, as they must go on
 * listing the others. Refusing a program's first descriptor fails its load. Does not sleep.
 */
int elfsig_shim_guard_bpf_prog(const struct bpf_prog *prog)
{
	static const char security[] = "security_";
	int hook;

	for (hook = 0; hook < ELFSIG_GUARD_HOOKS; hook++)
		if (READ_ONCE(elfsig_guard_progs[hook]) == prog)
			return -ENOENT;
	/*
	 * A program that changes what a security_ function returns (fmod_ret), which the
	 * trampoline skips, every LSM's hook with it, whenever the program says anything but 0:
	 * on a void hook that leaves the guard's work undone (a revocation's cache flush, an
	 * exec's entitlements), on mmap_addr it places memory unchecked. Refused while the
	 * module holds the guard (-EPERM: the load fails).
	 */
	if ((READ_ONCE(elfsig_guard_generation) & 1) && prog->type == BPF_PROG_TYPE_TRACING &&
	    prog->expected_attach_type == BPF_MODIFY_RETURN && prog->aux->attach_func_name &&
	    !strncmp(prog->aux->attach_func_name, security, sizeof(security) - 1))
		return -EPERM;
	return 0;
}

/*
 * key_post_create_or_update: a key was added to a keyring or updated. A key of the blacklist
 * type (which can only go in .blacklist) may revoke a digest the verdict cache holds. The key
 * is linked, and visible to lookups, by the time this runs.
 */
void elfsig_shim_guard_key_added(struct key *key)
{
	if (key->type && key->type->name && !strcmp(key->type->name, "blacklist"))
		elfsig_revocation_added();
}

/*
 * file_release, of every file in the system: the writers refused since its mapping check may
 * come back (write_denials.c). Does not sleep.
 */
void elfsig_shim_guard_file_release(struct file *file)
{
	elfsig_shim_file_released(file);
}

/*
 * Whether any process maps the inode's pages executable. The tree is walked under
 * i_mmap_rwsem (the hooks that call this may sleep); the mappings of an overlayfs file are in
 * its real inode's tree, under the backing file.
 */
static bool elfsig_mapped_executable(struct address_space *mapping)
{
	struct rb_node *node;
	bool exec = false;

	if (!mapping_mapped(mapping))
		return false;
	i_mmap_lock_read(mapping);
	for (node = rb_first_cached(&mapping->i_mmap); node; node = rb_next(node)) {
		struct vm_area_struct *vma = rb_entry(node, struct vm_area_struct, shared.rb);

		if (vma->vm_flags & VM_EXEC) {
			exec = true;
			break;
		}
	}
	i_mmap_unlock_read(mapping);
	return exec;
}

/* Whether `file` is a process's memory, /proc/PID/mem (or /proc/PID/task/TID/mem). */
static bool elfsig_proc_mem(const struct file *file)
{
	return file->f_path.mnt->mnt_sb->s_magic == PROC_SUPER_MAGIC &&
	       !strcmp(file->f_path.dentry->d_name.name, "mem");
}

/*
 * file_open, of every file opened; one opened for writing is refused (-ETXTBSY, as for a
 * running program) while a process maps the file
 * executable, so that no one rewrites the code of a library or program under the processes
 * running it; a process's memory (/proc/PID/mem), into which the kernel may force writes past
 * the protection of its pages, is the run-time rules'. Sleepable.
 */
int elfsig_shim_guard_file_open(struct file *file)
{
	if (!file || !(file->f_mode & FMODE_WRITE))
		return 0;
	if (elfsig_proc_mem(file))
		return elfsig_check_proc_mem();
	if (!S_ISREG(file_inode(file)->i_mode))
		return 0;
	if (!elfsig_mapped_executable(file->f_mapping))
		return 0;
	return elfsig_check_write(file);
}

/*
 * The kfuncs, defined in kfuncs.c. Kfunc arguments became trusted by default in 6.19 (or so),
 * and the flag went away.
 */
#ifndef KF_TRUSTED_ARGS
#define KF_TRUSTED_ARGS 0
#endif

BTF_KFUNCS_START(elfsig_kfunc_ids)
BTF_ID_FLAGS(func, elfsig_kfunc_mmap_file, KF_SLEEPABLE | KF_TRUSTED_ARGS)
BTF_ID_FLAGS(func, elfsig_kfunc_mmap_anonymous, KF_SLEEPABLE)
BTF_ID_FLAGS(func, elfsig_kfunc_mprotect_exec, KF_TRUSTED_ARGS)
BTF_ID_FLAGS(func, elfsig_kfunc_key_added, KF_TRUSTED_ARGS)
BTF_ID_FLAGS(func, elfsig_kfunc_exec_starts, KF_SLEEPABLE | KF_TRUSTED_ARGS)
BTF_ID_FLAGS(func, elfsig_kfunc_exec_committed)
BTF_ID_FLAGS(func, elfsig_kfunc_task_alloc, KF_SLEEPABLE | KF_TRUSTED_ARGS)
BTF_ID_FLAGS(func, elfsig_kfunc_file_open, KF_SLEEPABLE | KF_TRUSTED_ARGS)
BTF_ID_FLAGS(func, elfsig_kfunc_file_release, KF_TRUSTED_ARGS)
BTF_ID_FLAGS(func, elfsig_kfunc_memory_placed)
BTF_ID_FLAGS(func, elfsig_kfunc_ptrace)
BTF_ID_FLAGS(func, elfsig_kfunc_ptrace_traceme, KF_TRUSTED_ARGS)
BTF_ID_FLAGS(func, elfsig_kfunc_anon_inode, KF_TRUSTED_ARGS)
BTF_ID_FLAGS(func, elfsig_kfunc_bpf_prog, KF_TRUSTED_ARGS)
BTF_KFUNCS_END(elfsig_kfunc_ids)

/* The hooks' functions, indexed by ELFSIG_GUARD_*. */
static const char *const elfsig_guard_hooks[ELFSIG_GUARD_HOOKS] = {
	[ELFSIG_GUARD_MMAP_FILE] = "bpf_lsm_mmap_file",
	[ELFSIG_GUARD_FILE_MPROTECT] = "bpf_lsm_file_mprotect",
	[ELFSIG_GUARD_KEY_POST_CREATE] = "bpf_lsm_key_post_create_or_update",
	[ELFSIG_GUARD_BPRM_CREDS_FOR_EXEC] = "bpf_lsm_bprm_creds_for_exec",
	[ELFSIG_GUARD_FILE_OPEN] = "bpf_lsm_file_open",
	[ELFSIG_GUARD_FILE_RELEASE] = "bpf_lsm_file_release",
	[ELFSIG_GUARD_BPRM_COMMITTED_CREDS] = "bpf_lsm_bprm_committed_creds",
	[ELFSIG_GUARD_TASK_ALLOC] = "bpf_lsm_task_alloc",
	[ELFSIG_GUARD_MMAP_ADDR] = "bpf_lsm_mmap_addr",
	[ELFSIG_GUARD_PTRACE_ACCESS_CHECK] = "bpf_lsm_ptrace_access_check",
	[ELFSIG_GUARD_PTRACE_TRACEME] = "bpf_lsm_ptrace_traceme",
	[ELFSIG_GUARD_INODE_INIT_SECURITY_ANON] = "bpf_lsm_inode_init_security_anon",
	[ELFSIG_GUARD_BPF_PROG] = "bpf_lsm_bpf_prog",
};

/* The kfuncs, each with the hook whose program may call it. */
BTF_ID_LIST(elfsig_kfunc_list)
BTF_ID(func, elfsig_kfunc_mmap_file)
BTF_ID(func, elfsig_kfunc_mmap_anonymous)
BTF_ID(func, elfsig_kfunc_mprotect_exec)
BTF_ID(func, elfsig_kfunc_key_added)
BTF_ID(func, elfsig_kfunc_exec_starts)
BTF_ID(func, elfsig_kfunc_exec_committed)
BTF_ID(func, elfsig_kfunc_task_alloc)
BTF_ID(func, elfsig_kfunc_file_open)
BTF_ID(func, elfsig_kfunc_file_release)
BTF_ID(func, elfsig_kfunc_memory_placed)
BTF_ID(func, elfsig_kfunc_ptrace)
BTF_ID(func, elfsig_kfunc_ptrace_traceme)
BTF_ID(func, elfsig_kfunc_anon_inode)
BTF_ID(func, elfsig_kfunc_bpf_prog)

static const int elfsig_kfunc_hook[] = {
	ELFSIG_GUARD_MMAP_FILE,
	ELFSIG_GUARD_MMAP_FILE,
	ELFSIG_GUARD_FILE_MPROTECT,
	ELFSIG_GUARD_KEY_POST_CREATE,
	ELFSIG_GUARD_BPRM_CREDS_FOR_EXEC,
	ELFSIG_GUARD_BPRM_COMMITTED_CREDS,
	ELFSIG_GUARD_TASK_ALLOC,
	ELFSIG_GUARD_FILE_OPEN,
	ELFSIG_GUARD_FILE_RELEASE,
	ELFSIG_GUARD_MMAP_ADDR,
	ELFSIG_GUARD_PTRACE_ACCESS_CHECK,
	ELFSIG_GUARD_PTRACE_TRACEME,
	ELFSIG_GUARD_INODE_INIT_SECURITY_ANON,
	ELFSIG_GUARD_BPF_PROG,
};

/* Which of the guard's hooks `prog` is an LSM program on, or -EINVAL. */
static int elfsig_lsm_hook(const struct bpf_prog *prog)
{
	const char *name = prog->aux->attach_func_name;
	int hook;

	if (prog->type != BPF_PROG_TYPE_LSM || !name)
		return -EINVAL;
	for (hook = 0; hook < ELFSIG_GUARD_HOOKS; hook++)
		if (!strcmp(name, elfsig_guard_hooks[hook]))
			return hook;
	return -EINVAL;
}

/*
 * Each kfunc only from the LSM program on its own hook: what the module does with the file
 * depends on the hook it comes from (the table of write_denials.c takes a file from mmap_file
 * and gives it back from file_release, which must see every file it took). And none once the
 * module holds the guard's links: the guard's own programs are verified by then, and any
 * later one, even on the right hook, would be someone else's (a second file_release, say,
 * giving refusals back twice). The verifier asks while it checks the program, once its attach
 * point is known.
 */
static int elfsig_kfunc_filter(const struct bpf_prog *prog, u32 kfunc_id)
{
	int hook = elfsig_lsm_hook(prog), i;

	if (READ_ONCE(elfsig_guard_generation) & 1)
		return -EACCES;
	/* The kernel asks only about this module's kfuncs, with the IDs its build wrote when they
	 * are the kernel's (kfunc_ids.c): an ID this table does not hold is refused. */
	if (hook < 0 || !elfsig_shim_kfunc_ids_match(prog))
		return -EACCES;
	for (i = 0; i < ARRAY_SIZE(elfsig_kfunc_hook); i++)
		if (elfsig_kfunc_list[i] == kfunc_id && elfsig_kfunc_hook[i] == hook)
			return 0;
	return -EACCES;
}

static const struct btf_kfunc_id_set elfsig_kfunc_set = {
	.owner = THIS_MODULE,
	.set = &elfsig_kfunc_ids,
	.filter = elfsig_kfunc_filter,
};

/*
 * Offers the kfuncs to BPF LSM programs: 0, a negative errno, or why the kernel cannot run the
 * guard (enum elfsig_guard_unavailable). Without module BTF, register_btf_kfunc_id_set() only
 * warns, and no program could find the kfuncs.
 */
int elfsig_shim_guard_init(void)
{
	int __maybe_unused err;

	if (!IS_ENABLED(CONFIG_BPF_LSM))
		return ELFSIG_GUARD_NO_BPF_LSM;
#ifdef CONFIG_DEBUG_INFO_BTF_MODULES
	if (!THIS_MODULE->btf_data_size)
		return ELFSIG_GUARD_NO_MODULE_BTF;
	err = elfsig_shim_kfunc_ids_init();
	if (err)
		return err;
	return register_btf_kfunc_id_set(BPF_PROG_TYPE_LSM, &elfsig_kfunc_set);
#else
	return ELFSIG_GUARD_NO_MODULE_BTF;
#endif
}

/* Which hook the link's program is an LSM program on, or -EINVAL. */
static int elfsig_guard_hook(const struct bpf_link *link)
{
	const struct bpf_prog *prog = link->prog;

	if (link->type != BPF_LINK_TYPE_TRACING)
		return -EINVAL;
	return elfsig_lsm_hook(prog);
}

/*
 * Takes the links behind the caller's descriptors `fds`, one LSM program on each hook, all or
 * none: -EINVAL when they are not that, -EBUSY when the module holds links already (they must
 * be released first), -EAGAIN while ftrace is switched off (their trampolines would not run:
 * ftrace_hold.c, which keeps it on from here until the module unloads), the lookup's error for
 * a descriptor that is no BPF link.
 */
int elfsig_shim_guard_attach(const int *fds, unsigned int count)
{
	struct bpf_link *links[ELFSIG_GUARD_HOOKS] = {};
	unsigned int i;
	int hook, err = 0;

	if (count != ELFSIG_GUARD_HOOKS)
		return -EINVAL;
	for (i = 0; i < count; i++) {
		struct bpf_link *link = fds[i] < 0 ? ERR_PTR(-EBADF) : bpf_link_get_from_fd(fds[i]);

		if (IS_ERR(link)) {
			err = PTR_ERR(link);
			break;
		}
		hook = elfsig_guard_hook(link);
		if (hook < 0 || links[hook]) {
			bpf_link_put(link);
			err = -EINVAL;
			break;
		}
		links[hook] = link;
	}
	if (!err) {
		mutex_lock(&elfsig_guard_lock);
		if (elfsig_guard_links[ELFSIG_GUARD_MMAP_FILE])
			err = -EBUSY;
		else
			err = elfsig_shim_ftrace_hold();
		if (!err) {
			memcpy(elfsig_guard_links, links, sizeof(links));
			for (hook = 0; hook < ELFSIG_GUARD_HOOKS; hook++)
				WRITE_ONCE(elfsig_guard_progs[hook], links[hook]->prog);
			WRITE_ONCE(elfsig_guard_generation, elfsig_guard_generation + 1);
			/* file_release's program is held: refusals kept until release come back. */
			elfsig_shim_write_denials_start();
		}
		mutex_unlock(&elfsig_guard_lock);
	}
	if (err)
		for (hook = 0; hook < ELFSIG_GUARD_HOOKS; hook++)
			if (links[hook])
				bpf_link_put(links[hook]);
	return err;
}

/*
 * Which links the module holds: a number bumped by every attach and every release, odd while
 * it holds them (all of them: attaching takes all or none). Lock-free, for the exec path.
 */
u64 elfsig_shim_guard_generation(void)
{
	return READ_ONCE(elfsig_guard_generation);
}

/*
 * Drops the module's links. The programs go once nothing else holds them, and with them their
 * references on this module (after an RCU grace period: unloading may have to wait a moment).
 * First, while file_release's program still runs, every write refusal the files mapped
 * executable hold is given back: nothing would give it back later.
 */
void elfsig_shim_guard_release(void)
{
	struct bpf_link *links[ELFSIG_GUARD_HOOKS];
	int hook;

	mutex_lock(&elfsig_guard_lock);
	elfsig_shim_write_denials_stop();
	for (hook = 0; hook < ELFSIG_GUARD_HOOKS; hook++) {
		links[hook] = elfsig_guard_links[hook];
		elfsig_guard_links[hook] = NULL;
		WRITE_ONCE(elfsig_guard_progs[hook], NULL);
	}
	if (links[ELFSIG_GUARD_MMAP_FILE])
		WRITE_ONCE(elfsig_guard_generation, elfsig_guard_generation + 1);
	mutex_unlock(&elfsig_guard_lock);
	for (hook = 0; hook < ELFSIG_GUARD_HOOKS; hook++)
		if (links[hook])
			bpf_link_put(links[hook]);
}

/* At module exit: the links released, and with them the hold on ftrace (ftrace_hold.c). */
void elfsig_shim_guard_exit(void)
{
	elfsig_shim_guard_release();
	elfsig_shim_ftrace_exit();
}
