// SPDX-License-Identifier: GPL-2.0
/*
 * Writers refused to a file mapped executable from its mapping check until the file is
 * released, as exec refuses them to the program it runs (deny_write_access). The mapping
 * guard's check (hooks.rs) refuses writers to the file's real inode before it looks at the
 * file, and hands that refusal here once the file verified: no writer can open the file
 * between the verdict and the mapping, whatever the scheduler does. The guard's file_release
 * program (guard.c) gives it back when the file's last reference goes (the mapping holds one).
 *
 * A table keyed by the struct file (compared, never followed): the file is alive while it is
 * in the table, since file_release removes it before the file is freed. That holds only while
 * the module holds the guard's links, the file_release program among them: the table takes
 * entries only between elfsig_shim_write_denials_start() (the links taken) and
 * elfsig_shim_write_denials_stop() (before they are dropped), which gives every refusal back.
 * The real inode stays alive as long as the file: it is the file's own, or under overlayfs
 * the upper or lower inode the overlay inode holds.
 */

#include <linux/fs.h>
#include <linux/hashtable.h>
#include <linux/rcupdate.h>
#include <linux/slab.h>
#include <linux/spinlock.h>

#include "shim.h"

struct elfsig_write_denial {
	struct hlist_node node;
	const struct file *file;
	struct inode *real;
	struct rcu_head rcu;
};

/* 4096 buckets: a busy host maps tens of thousands of files executable. */
static DEFINE_HASHTABLE(elfsig_write_denials, 12);
static DEFINE_SPINLOCK(elfsig_write_denials_lock);
/* Whether the table takes entries (under the lock). */
static bool elfsig_write_denials_open;
static atomic64_t elfsig_write_denials_held = ATOMIC64_INIT(0);

static struct elfsig_write_denial *elfsig_write_denial_find(const struct file *file)
{
	struct elfsig_write_denial *denial;

	hash_for_each_possible_rcu(elfsig_write_denials, denial, node, (unsigned long)file)
		if (denial->file == file)
			return denial;
	return NULL;
}

/* Gives the refusal back and frees the entry. Under the lock. */
static void elfsig_write_denial_drop(struct elfsig_write_denial *denial)
{
	hash_del_rcu(&denial->node);
	atomic_inc(&denial->real->i_writecount);
	atomic64_dec(&elfsig_write_denials_held);
	kfree_rcu(denial, rcu);
}

/*
 * Keeps the writers refused to `real` (by elfsig_shim_deny_writes() on `file`) until `file` is
 * released. 0 when the table took the refusal over; otherwise the caller still owns it and
 * gives it back: -EEXIST when the file holds one already (a second executable mapping of
 * it), -ESRCH when the guard's links are not held (nothing would give it back), -ENOMEM.
 * The entry is charged to the caller's memory cgroup. May sleep.
 */
int elfsig_shim_hold_write_denial(const struct file *file, struct inode *real)
{
	struct elfsig_write_denial *denial = kmalloc(sizeof(*denial), GFP_KERNEL_ACCOUNT);
	int err = 0;

	if (!denial)
		return -ENOMEM;
	denial->file = file;
	denial->real = real;
	spin_lock(&elfsig_write_denials_lock);
	if (!elfsig_write_denials_open)
		err = -ESRCH;
	else if (elfsig_write_denial_find(file))
		err = -EEXIST;
	else
		hash_add_rcu(elfsig_write_denials, &denial->node, (unsigned long)file);
	if (!err)
		atomic64_inc(&elfsig_write_denials_held);
	spin_unlock(&elfsig_write_denials_lock);
	if (err)
		kfree(denial);
	return err;
}

/*
 * `file` is being released (the guard's file_release program, on every release in the
 * system): writers may come back if it held a refusal. Does not sleep; the common case, a file
 * that holds none, takes no lock.
 */
void elfsig_shim_file_released(const struct file *file)
{
	struct elfsig_write_denial *denial;
	bool held;

	rcu_read_lock();
	held = elfsig_write_denial_find(file);
	rcu_read_unlock();
	if (!held)
		return;
	spin_lock(&elfsig_write_denials_lock);
	denial = elfsig_write_denial_find(file);
	if (denial)
		elfsig_write_denial_drop(denial);
	spin_unlock(&elfsig_write_denials_lock);
}

/* The module holds the guard's links, file_release's among them: the table takes entries. */
void elfsig_shim_write_denials_start(void)
{
	spin_lock(&elfsig_write_denials_lock);
	elfsig_write_denials_open = true;
	spin_unlock(&elfsig_write_denials_lock);
}

/*
 * The links are about to be dropped: every refusal is given back, and no more are taken.
 * The files in the table are alive: the file_release program still runs.
 */
void elfsig_shim_write_denials_stop(void)
{
	struct elfsig_write_denial *denial;
	struct hlist_node *next;
	unsigned int bucket;

	spin_lock(&elfsig_write_denials_lock);
	elfsig_write_denials_open = false;
	hash_for_each_safe(elfsig_write_denials, bucket, next, denial, node)
		elfsig_write_denial_drop(denial);
	spin_unlock(&elfsig_write_denials_lock);
}

/* How many files hold a refusal now. */
u64 elfsig_shim_write_denials_held(void)
{
	return atomic64_read(&elfsig_write_denials_held);
}
