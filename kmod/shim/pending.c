// SPDX-License-Identifier: GPL-2.0
/*
 * What each exec under way expects to find mapped at its end (kmod/pending.rs decides what
 * goes in): one entry per task, allocated when the binfmt handler lets the task's exec
 * through, replaced by its next exec, freed when the exec ends (sched_process_exec) or the
 * task exits (sched_process_exit).
 *
 * An exec that fails after the handler (binfmt_elf refusing a relocatable object, say) leaves
 * its entry until the task execs again or exits, so there are never more entries than live
 * tasks, and a task's entry never displaces another's: no number of failed execs can make an
 * unrelated exec fail, as a fixed table could. An entry costs a small allocation per live task
 * that failed an exec, far less than the task itself.
 *
 * The tracepoint probes run with preemption disabled: taking and forgetting neither sleep
 * nor allocate (kfree does not sleep).
 */

#include <linux/atomic.h>
#include <linux/build_bug.h>
#include <linux/hash.h>
#include <linux/list.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/stddef.h>

#include "shim.h"

static_assert(sizeof(struct elfsig_expectation) == ELFSIG_EXPECTATION_SIZE);
static_assert(offsetof(struct elfsig_expectation, interpreter) == 16);

#define ELFSIG_PENDING_BITS 8

struct elfsig_pending {
	struct hlist_node node;
	uintptr_t task;
	struct elfsig_expectation expectation;
};

struct elfsig_pending_bucket {
	spinlock_t lock;
	struct hlist_head entries;
};

static struct elfsig_pending_bucket elfsig_pending_table[1 << ELFSIG_PENDING_BITS] = {
	[0 ... (1 << ELFSIG_PENDING_BITS) - 1] = {
		.lock = __SPIN_LOCK_UNLOCKED(elfsig_pending_table.lock),
	},
};
static atomic64_t elfsig_pending_entries = ATOMIC64_INIT(0);

static struct elfsig_pending_bucket *elfsig_pending_bucket(uintptr_t task)
{
	return &elfsig_pending_table[hash_long(task, ELFSIG_PENDING_BITS)];
}

/* Removes and returns the task's entry, under the bucket's lock. */
static struct elfsig_pending *elfsig_pending_unlink(struct elfsig_pending_bucket *bucket,
						    uintptr_t task)
{
	struct elfsig_pending *entry;

	hlist_for_each_entry(entry, &bucket->entries, node) {
		if (entry->task == task) {
			hlist_del(&entry->node);
			return entry;
		}
	}
	return NULL;
}

static void elfsig_pending_free(struct elfsig_pending *entry)
{
	if (entry) {
		atomic64_dec(&elfsig_pending_entries);
		kfree(entry);
	}
}

/* Records what the task's exec expects, replacing what its last exec left. May sleep. */
int elfsig_shim_pending_put(uintptr_t task, const struct elfsig_expectation *expectation)
{
	struct elfsig_pending_bucket *bucket = elfsig_pending_bucket(task);
	struct elfsig_pending *entry = kmalloc(sizeof(*entry), GFP_KERNEL_ACCOUNT), *old;

	if (!entry)
		return -ENOMEM;
	entry->task = task;
	entry->expectation = *expectation;
	atomic64_inc(&elfsig_pending_entries);
	spin_lock(&bucket->lock);
	old = elfsig_pending_unlink(bucket, task);
	hlist_add_head(&entry->node, &bucket->entries);
	spin_unlock(&bucket->lock);
	elfsig_pending_free(old);
	return 0;
}

/* Takes the task's entry back: false when it has none. Does not sleep. */
bool elfsig_shim_pending_take(uintptr_t task, struct elfsig_expectation *expectation)
{
	struct elfsig_pending_bucket *bucket = elfsig_pending_bucket(task);
	struct elfsig_pending *entry;

	spin_lock(&bucket->lock);
	entry = elfsig_pending_unlink(bucket, task);
	spin_unlock(&bucket->lock);
	if (!entry)
		return false;
	*expectation = entry->expectation;
	elfsig_pending_free(entry);
	return true;
}

/* Copies the task's entry, leaving it in place: false when it has none. Does not sleep. */
bool elfsig_shim_pending_peek(uintptr_t task, struct elfsig_expectation *expectation)
{
	struct elfsig_pending_bucket *bucket = elfsig_pending_bucket(task);
	struct elfsig_pending *entry;
	bool found = false;

	spin_lock(&bucket->lock);
	hlist_for_each_entry(entry, &bucket->entries, node) {
		if (entry->task == task) {
			*expectation = entry->expectation;
			found = true;
			break;
		}
	}
	spin_unlock(&bucket->lock);
	return found;
}

/* Forgets the task's entry: its exec was refused, or it exits. Does not sleep. */
void elfsig_shim_pending_forget(uintptr_t task)
{
	struct elfsig_pending_bucket *bucket = elfsig_pending_bucket(task);
	struct elfsig_pending *entry;

	/* Most tasks exit with nothing recorded. */
	if (!atomic64_read(&elfsig_pending_entries))
		return;
	spin_lock(&bucket->lock);
	entry = elfsig_pending_unlink(bucket, task);
	spin_unlock(&bucket->lock);
	elfsig_pending_free(entry);
}

/* Frees every entry: the module unloads, and neither the handler nor the probes run any more. */
void elfsig_shim_pending_clear(void)
{
	struct elfsig_pending *entry;
	struct hlist_node *next;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(elfsig_pending_table); i++) {
		struct elfsig_pending_bucket *bucket = &elfsig_pending_table[i];

		spin_lock(&bucket->lock);
		hlist_for_each_entry_safe(entry, next, &bucket->entries, node) {
			hlist_del(&entry->node);
			atomic64_dec(&elfsig_pending_entries);
			kfree(entry);
		}
		spin_unlock(&bucket->lock);
	}
}

/* How many entries there are: execs under way, and failed ones of tasks still alive. */
u64 elfsig_shim_pending_count(void)
{
	return atomic64_read(&elfsig_pending_entries);
}
