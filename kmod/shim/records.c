// SPDX-License-Identifier: GPL-2.0
/*
 * What each process's program is entitled to (kmod/runtime.rs decides what goes in): one
 * entry per task, made when the task is forked (the parent's, copied) or when it begins an
 * exec (before the exec can no longer fail, so that nothing can fail to store it), set when
 * its exec can no longer fail, dropped when the task exits and again when it is freed (a fork
 * that fails after the guard's task_alloc program never exits).
 *
 * The entries are the module's, not a BPF map's: no one, root included, writes them but the
 * module, from the guard's programs' kfuncs. Lookups take no lock (RCU): the hooks that ask
 * run under mmap_lock, task_lock or tasklist_lock, or (task_free) from an RCU callback; every
 * writer takes the bucket's lock with interrupts off.
 */

#include <linux/atomic.h>
#include <linux/hash.h>
#include <linux/list.h>
#include <linux/rculist.h>
#include <linux/slab.h>
#include <linux/spinlock.h>

#include "shim.h"

#define ELFSIG_RECORDS_BITS 10

struct elfsig_record_entry {
	struct hlist_node node;
	uintptr_t task;
	u32 record;
	struct rcu_head rcu;
};

struct elfsig_records_bucket {
	spinlock_t lock;
	struct hlist_head entries;
};

static struct elfsig_records_bucket elfsig_records[1 << ELFSIG_RECORDS_BITS] = {
	[0 ... (1 << ELFSIG_RECORDS_BITS) - 1] = {
		.lock = __SPIN_LOCK_UNLOCKED(elfsig_records.lock),
	},
};
static atomic64_t elfsig_records_count = ATOMIC64_INIT(0);

static struct elfsig_records_bucket *elfsig_records_bucket(uintptr_t task)
{
	return &elfsig_records[hash_long(task, ELFSIG_RECORDS_BITS)];
}

/* The task's entry, under the bucket's lock or rcu_read_lock(). */
static struct elfsig_record_entry *elfsig_record_find(struct elfsig_records_bucket *bucket,
						       uintptr_t task)
{
	struct elfsig_record_entry *entry;

	hlist_for_each_entry_rcu(entry, &bucket->entries, node, lockdep_is_held(&bucket->lock))
		if (entry->task == task)
			return entry;
	return NULL;
}

/*
 * Gives the task `record`, replacing what an earlier task at the same address left. May sleep
 * (the allocation); -ENOMEM when there is no memory, charged to the caller's memory cgroup.
 */
int elfsig_shim_record_put(uintptr_t task, u32 record)
{
	struct elfsig_records_bucket *bucket = elfsig_records_bucket(task);
	struct elfsig_record_entry *entry = kmalloc(sizeof(*entry), GFP_KERNEL_ACCOUNT), *old;
	unsigned long flags;

	if (!entry)
		return -ENOMEM;
	entry->task = task;
	entry->record = record;
	spin_lock_irqsave(&bucket->lock, flags);
	old = elfsig_record_find(bucket, task);
	if (old)
		hlist_replace_rcu(&old->node, &entry->node);
	else
		hlist_add_head_rcu(&entry->node, &bucket->entries);
	spin_unlock_irqrestore(&bucket->lock, flags);
	if (old)
		kfree_rcu(old, rcu);
	else
		atomic64_inc(&elfsig_records_count);
	return 0;
}

/* Sets the task's record, when it has an entry: false when it has none. Does not sleep. */
bool elfsig_shim_record_set(uintptr_t task, u32 record)
{
	struct elfsig_records_bucket *bucket = elfsig_records_bucket(task);
	struct elfsig_record_entry *entry;
	unsigned long flags;

	spin_lock_irqsave(&bucket->lock, flags);
	entry = elfsig_record_find(bucket, task);
	if (entry)
		WRITE_ONCE(entry->record, record);
	spin_unlock_irqrestore(&bucket->lock, flags);
	return entry;
}

/* Whether the task has an entry, and its record in *record. Does not sleep, takes no lock. */
bool elfsig_shim_record_get(uintptr_t task, u32 *record)
{
	struct elfsig_record_entry *entry;

	rcu_read_lock();
	entry = elfsig_record_find(elfsig_records_bucket(task), task);
	if (entry)
		*record = READ_ONCE(entry->record);
	rcu_read_unlock();
	return entry;
}

/* Drops the task's entry: it exits, or is freed. Does not sleep; any context. */
void elfsig_shim_record_forget(uintptr_t task)
{
	struct elfsig_records_bucket *bucket = elfsig_records_bucket(task);
	struct elfsig_record_entry *entry;
	unsigned long flags;

	if (!atomic64_read(&elfsig_records_count))
		return;
	spin_lock_irqsave(&bucket->lock, flags);
	entry = elfsig_record_find(bucket, task);
	if (entry)
		hlist_del_rcu(&entry->node);
	spin_unlock_irqrestore(&bucket->lock, flags);
	if (entry) {
		atomic64_dec(&elfsig_records_count);
		kfree_rcu(entry, rcu);
	}
}

/* Frees every entry: the module unloads, and no program or probe calls in any more. */
void elfsig_shim_records_clear(void)
{
	struct elfsig_record_entry *entry;
	struct hlist_node *next;
	unsigned long flags;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(elfsig_records); i++) {
		struct elfsig_records_bucket *bucket = &elfsig_records[i];

		spin_lock_irqsave(&bucket->lock, flags);
		hlist_for_each_entry_safe(entry, next, &bucket->entries, node) {
			hlist_del_rcu(&entry->node);
			atomic64_dec(&elfsig_records_count);
			kfree_rcu(entry, rcu);
		}
		spin_unlock_irqrestore(&bucket->lock, flags);
	}
}

/* How many entries there are: tasks with a record. */
u64 elfsig_shim_records_count(void)
{
	return atomic64_read(&elfsig_records_count);
}
