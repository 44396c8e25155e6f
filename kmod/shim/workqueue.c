// SPDX-License-Identifier: GPL-2.0
/*
 * Work done on another CPU while the task that asked for it goes on, then waits: a program's ELF
 * interpreter checked while the task verifies the program (kmod/verdict/ahead.rs), a signature
 * checked while the task hashes the file (kmod/verdict/verify.rs). A job is a work item on the
 * unbound workqueue; its owner waits for it with flush_work() (or, when no worker has taken it
 * yet, takes it back and runs it itself) before it frees it or touches what it works on, so a
 * job never outlives the call that started it. The worker runs the Rust
 * function it was given (glue/callbacks.rs). While it does, a read it makes stops when the task
 * it works for is killed (elfsig_shim_job_client(), which file.c's elfsig_shim_killed() asks),
 * as the task's own reads stop.
 */

#include <linux/cpumask.h>
#include <linux/sched.h>
#include <linux/sched/task.h>
#include <linux/slab.h>
#include <linux/workqueue.h>

#include "shim.h"

struct elfsig_job {
	struct work_struct work;
	void (*run)(void *data);
	void *data;
	/* The task the job works for (a reference held until it is waited for). */
	struct task_struct *client;
};

static void elfsig_job_work(struct work_struct *work)
{
	struct elfsig_job *job = container_of(work, struct elfsig_job, work);

	job->run(job->data);
}

/*
 * Whether a job can run beside the current task: more than one CPU online, and the task not a
 * worker itself (a job's own verification does its parts in turn: a worker waiting for another
 * work item of the same workqueue could wait for a worker that memory pressure keeps from being
 * made).
 */
bool elfsig_shim_job_possible(void)
{
	return num_online_cpus() > 1 && !(current->flags & PF_WQ_WORKER);
}

/* Starts `run(data)` on a worker; NULL when there is no memory for it (nothing started). */
struct elfsig_job *elfsig_shim_job_start(void (*run)(void *data), void *data)
{
	struct elfsig_job *job = kmalloc(sizeof(*job), GFP_KERNEL);

	if (!job)
		return NULL;
	INIT_WORK(&job->work, elfsig_job_work);
	job->run = run;
	job->data = data;
	job->client = get_task_struct(current);
	queue_work(system_unbound_wq, &job->work);
	return job;
}

/*
 * Waits until the job has run, and frees it. A job no worker has taken yet (none free, or no
 * memory to make one) is taken back and run here, by the task itself: it never waits for a
 * worker to exist, and a small program's exec does not wait for a worker to wake.
 */
void elfsig_shim_job_wait(struct elfsig_job *job)
{
	if (cancel_work(&job->work))
		job->run(job->data);
	else
		flush_work(&job->work);
	put_task_struct(job->client);
	kfree(job);
}

/* The task the current worker runs a job for; the current task itself everywhere else. */
struct task_struct *elfsig_shim_job_client(void)
{
	struct work_struct *work = current_work();

	if (work && work->func == elfsig_job_work)
		return container_of(work, struct elfsig_job, work)->client;
	return current;
}
