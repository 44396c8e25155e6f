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
 * its mapping check on (write_denials.c). elfsig-guard then hands the programs' links to the
 * module through the `guard` control file; the module keeps a reference to each, so the guard
 * outlives its loader, and no one but the module can detach it (LSM links have no detach).
 *
 * A program that calls a module's kfunc holds a reference on that module: while the module
 * holds the links, it cannot be unloaded. Writing `release` to `guard` drops them (refused
 * once locked).
 */

#include <linux/bpf.h>
#include <linux/btf.h>
#include <linux/btf_ids.h>
#include <linux/err.h>
#include <linux/fs.h>
#include <linux/key.h>
#include <linux/key-type.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mount.h>
#include <linux/rbtree.h>
#include <linux/mutex.h>
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
 * What the kfuncs (kfuncs.c) do. mmap_file, for a mapping asked with PROT_EXEC: sleepable,
 * before mmap_lock is taken. 0 allows, a negative errno refuses. The 6.12 verifier takes the
 * hook's file for non-NULL, so an anonymous mapping (no file) is told apart here too.
 */
int elfsig_shim_guard_mmap_file(struct file *file)
{
	if (!file)
		return 0;
	/*
	 * do_mmap() refuses PROT_EXEC on a noexec mount after this hook (path_noexec(), which is
	 * not exported): nothing to verify, and no write refusal to keep for a mapping that will
	 * not exist.
	 */
	if ((file->f_path.mnt->mnt_flags & MNT_NOEXEC) ||
	    (file->f_path.mnt->mnt_sb->s_iflags & SB_I_NOEXEC))
		return 0;
	return elfsig_check_mapping(file);
}

/*
 * file_mprotect, for a file mapping that is not executable and asks for PROT_EXEC: under
 * mmap_lock, so nothing may sleep and nothing is read; the file cannot be verified there.
 */
int elfsig_shim_guard_file_mprotect(struct vm_area_struct *vma)
{
	if (!vma->vm_file)
		return 0;
	return elfsig_check_mprotect(vma->vm_file);
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
 * bprm_creds_for_exec, for execveat(AT_EXECVE_CHECK) only (the program tells it apart): the
 * kernel returns right after this hook and runs no binfmt handler, so the module answers here
 * what the handler would answer for an execve of the same file. Sleepable.
 */
int elfsig_shim_guard_exec_check(struct file *file)
{
	if (!file)
		return 0;
	return elfsig_check_exec_query(file);
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

/*
 * file_open of a file opened for writing (the program tells it apart): refused (-ETXTBSY, as
 * for a running program) while a process maps the file executable, so that no one rewrites
 * the code of a library or program under the processes running it. Sleepable.
 */
int elfsig_shim_guard_file_open(struct file *file)
{
	if (!file || !(file->f_mode & FMODE_WRITE) || !S_ISREG(file_inode(file)->i_mode))
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
BTF_ID_FLAGS(func, elfsig_kfunc_file_mprotect, KF_TRUSTED_ARGS)
BTF_ID_FLAGS(func, elfsig_kfunc_key_added, KF_TRUSTED_ARGS)
BTF_ID_FLAGS(func, elfsig_kfunc_exec_check, KF_SLEEPABLE | KF_TRUSTED_ARGS)
BTF_ID_FLAGS(func, elfsig_kfunc_file_open, KF_SLEEPABLE | KF_TRUSTED_ARGS)
BTF_ID_FLAGS(func, elfsig_kfunc_file_release, KF_TRUSTED_ARGS)
BTF_KFUNCS_END(elfsig_kfunc_ids)

/* The hooks' functions, indexed by ELFSIG_GUARD_*. */
static const char *const elfsig_guard_hooks[ELFSIG_GUARD_HOOKS] = {
	[ELFSIG_GUARD_MMAP_FILE] = "bpf_lsm_mmap_file",
	[ELFSIG_GUARD_FILE_MPROTECT] = "bpf_lsm_file_mprotect",
	[ELFSIG_GUARD_KEY_POST_CREATE] = "bpf_lsm_key_post_create_or_update",
	[ELFSIG_GUARD_BPRM_CREDS_FOR_EXEC] = "bpf_lsm_bprm_creds_for_exec",
	[ELFSIG_GUARD_FILE_OPEN] = "bpf_lsm_file_open",
	[ELFSIG_GUARD_FILE_RELEASE] = "bpf_lsm_file_release",
};

/* The kfunc each hook's program calls, in the same order. */
BTF_ID_LIST(elfsig_kfunc_by_hook)
BTF_ID(func, elfsig_kfunc_mmap_file)
BTF_ID(func, elfsig_kfunc_file_mprotect)
BTF_ID(func, elfsig_kfunc_key_added)
BTF_ID(func, elfsig_kfunc_exec_check)
BTF_ID(func, elfsig_kfunc_file_open)
BTF_ID(func, elfsig_kfunc_file_release)

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
 * and gives it back from file_release, which must see every file it took). The verifier asks
 * while it checks the program, once its attach point is known.
 */
static int elfsig_kfunc_filter(const struct bpf_prog *prog, u32 kfunc_id)
{
	int hook;

	if (!btf_id_set8_contains(&elfsig_kfunc_ids, kfunc_id))
		return 0;
	hook = elfsig_lsm_hook(prog);
	if (hook < 0 || elfsig_kfunc_by_hook[hook] != kfunc_id)
		return -EACCES;
	return 0;
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
	if (!IS_ENABLED(CONFIG_BPF_LSM))
		return ELFSIG_GUARD_NO_BPF_LSM;
#ifdef CONFIG_DEBUG_INFO_BTF_MODULES
	if (!THIS_MODULE->btf_data_size)
		return ELFSIG_GUARD_NO_MODULE_BTF;
	return register_btf_kfunc_id_set(BPF_PROG_TYPE_LSM, &elfsig_kfunc_set);
#else
	return ELFSIG_GUARD_NO_MODULE_BTF;
#endif
}

static DEFINE_MUTEX(elfsig_guard_lock);
static struct bpf_link *elfsig_guard_links[ELFSIG_GUARD_HOOKS];
/* Bumped under the lock by every attach and every release that dropped links: odd while the
 * module holds them. */
static u64 elfsig_guard_generation;

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
 * be released first), the lookup's error for a descriptor that is no BPF link.
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
		if (elfsig_guard_links[ELFSIG_GUARD_MMAP_FILE]) {
			err = -EBUSY;
		} else {
			memcpy(elfsig_guard_links, links, sizeof(links));
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
	}
	if (links[ELFSIG_GUARD_MMAP_FILE])
		WRITE_ONCE(elfsig_guard_generation, elfsig_guard_generation + 1);
	mutex_unlock(&elfsig_guard_lock);
	for (hook = 0; hook < ELFSIG_GUARD_HOOKS; hook++)
		if (links[hook])
			bpf_link_put(links[hook]);
}
