// SPDX-License-Identifier: GPL-2.0
/*
 * The end of a successful exec: the sched_process_exec tracepoint fires after binfmt_elf has
 * mapped the program and its ELF interpreter, and before the task runs a single instruction of
 * either. binfmt_elf opens the interpreter by path after the binfmt handler has checked it, so
 * that is where the module checks that the interpreter it verified is the one that got mapped
 * (and, under overlayfs, that the program's real file is still the one verified).
 *
 * A second probe, on sched_process_exit, lets the module forget what a task's failed exec left.
 * The probes run with preemption disabled: nothing here sleeps.
 */

#include <linux/binfmts.h>
#include <linux/errno.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/mmap_lock.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/string.h>
#include <linux/tracepoint.h>

#include "shim.h"

#ifdef CONFIG_TRACEPOINTS
static struct tracepoint *elfsig_exec_tp, *elfsig_exit_tp;

static void elfsig_exec_probe(void *data, struct task_struct *task, pid_t old_pid,
			      struct linux_binprm *bprm)
{
	elfsig_exec_loaded(bprm->file);
}

/*
 * The probe's prototype is the tracepoint's: sched_process_exit gained `bool group_dead` after
 * 6.12 (7.2 has it; Kbuild tells from the tree's header, which a version test would not).
 */
#ifdef ELFSIG_EXIT_GROUP_DEAD
static void elfsig_exit_probe(void *data, struct task_struct *task, bool group_dead)
#else
static void elfsig_exit_probe(void *data, struct task_struct *task)
#endif
{
	elfsig_task_exit();
}

static void elfsig_find_tracepoints(struct tracepoint *tp, void *priv)
{
	if (!strcmp(tp->name, "sched_process_exec"))
		elfsig_exec_tp = tp;
	else if (!strcmp(tp->name, "sched_process_exit"))
		elfsig_exit_tp = tp;
}

int elfsig_shim_exec_end_register(void)
{
	int err;

	for_each_kernel_tracepoint(elfsig_find_tracepoints, NULL);
	if (!elfsig_exec_tp || !elfsig_exit_tp)
		return -ENOENT;
	err = tracepoint_probe_register(elfsig_exit_tp, elfsig_exit_probe, NULL);
	if (err)
		return err;
	err = tracepoint_probe_register(elfsig_exec_tp, elfsig_exec_probe, NULL);
	if (err) {
		tracepoint_probe_unregister(elfsig_exit_tp, elfsig_exit_probe, NULL);
		tracepoint_synchronize_unregister();
	}
	return err;
}

/* Returns once no probe runs any more, so that the module's code can go. */
void elfsig_shim_exec_end_unregister(void)
{
	tracepoint_probe_unregister(elfsig_exec_tp, elfsig_exec_probe, NULL);
	tracepoint_probe_unregister(elfsig_exit_tp, elfsig_exit_probe, NULL);
	tracepoint_synchronize_unregister();
}
#else
int elfsig_shim_exec_end_register(void)
{
	return -EOPNOTSUPP;
}

void elfsig_shim_exec_end_unregister(void) {}
#endif

/* Which exec this is: the task, and its exec count, which each successful exec increments. */
void elfsig_shim_current_exec(uintptr_t *task, u64 *exec_id)
{
	*task = (uintptr_t)current;
	*exec_id = READ_ONCE(current->self_exec_id);
}

/*
 * What the new image maps, by the real inodes that hold the data (under overlayfs, a mapping's
 * file is the backing file in a layer, the one the program's overlay file hands its mappings
 * to, through every overlay stacked below it; under FUSE passthrough, a backing file whose
 * user inode is the program's): the program's
 * (ELFSIG_MAPPED_PROGRAM, into *program_id) and the one other file, its ELF interpreter
 * (ELFSIG_MAPPED_INTERPRETER, into *interpreter_id). -EMLINK when more than one other file is
 * mapped or the program's mappings are of more than one file, -EAGAIN when the address space
 * is locked by someone else (the caller refuses then: it cannot tell what was mapped).
 */
int elfsig_shim_mapped_files(struct file *program, struct elfsig_file_id *program_id,
			     struct elfsig_file_id *interpreter_id)
{
	const struct file *program_mapped = elfsig_shim_mapped_real_file(program);
	const struct file *program_file = NULL;
	const struct inode *own = file_inode(program), *real = NULL, *found = NULL;
	struct mm_struct *mm = current->mm;
	struct vm_area_struct *vma;
	VMA_ITERATOR(vmi, mm, 0);
	int ret = 0;

	if (!mm)
		return 0;
	if (!mmap_read_trylock(mm))
		return -EAGAIN;
	for_each_vma(vmi, vma) {
		const struct inode *inode;

		if (!vma->vm_file)
			continue;
		inode = file_inode(vma->vm_file);
		/* A FUSE passthrough backing file, by its user inode; overlayfs' by the file. */
		if (vma->vm_file == program || vma->vm_file == program_mapped ||
		    (program_mapped == program && file_user_inode(vma->vm_file) == own)) {
			/* One file holds the program's mappings, or what they are cannot be told. */
			if (program_file && program_file != vma->vm_file) {
				ret = -EMLINK;
				break;
			}
			program_file = vma->vm_file;
			real = inode;
			continue;
		}
		if (inode == found)
			continue;
		if (found) {
			ret = -EMLINK;
			break;
		}
		found = inode;
	}
	if (!ret) {
		if (real) {
			elfsig_shim_inode_id(real, program_id);
			ret |= ELFSIG_MAPPED_PROGRAM;
		}
		if (found) {
			elfsig_shim_inode_id(found, interpreter_id);
			ret |= ELFSIG_MAPPED_INTERPRETER;
		}
	}
	mmap_read_unlock(mm);
	return ret;
}

/* Ends the task before it returns to user space: it never runs an instruction of the image. */
void elfsig_shim_kill_current(void)
{
	force_sig(SIGKILL);
}
