// SPDX-License-Identifier: GPL-2.0
/*
 * Audit records, and the log line of a refusal that names a process rather than a file.
 *
 * Audit records: one AUDIT_INTEGRITY_DATA record (type 1800, the type of IMA's appraisal
 * results) for every refusal, and for every would-be refusal in permissive mode, with IMA's
 * field names where IMA has one, so that ausearch and audit rules written for IMA's records
 * match these too. kmod/README.md documents the record. Without CONFIG_AUDIT (or with audit
 * disabled), audit_log_start() returns NULL and nothing is recorded.
 *
 * The mprotect hook runs under mmap_lock in a non-sleeping BPF program, so nothing here sleeps:
 * GFP_NOWAIT throughout (audit_log_start() then never waits for the backlog either).
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/audit.h>
#include <linux/err.h>
#include <linux/fs.h>
#include <linux/limits.h>
#include <linux/ratelimit.h>
#include <linux/cred.h>
#include <linux/sched.h>
#include <linux/string.h>
#include <linux/uidgid.h>
#include <linux/slab.h>

#include "shim.h"

#define ELFSIG_AUDIT_GFP (GFP_NOWAIT | __GFP_NOWARN)

/*
 * Appends ` key=value`: quoted, or as hex when the value holds a quote, a space or a byte
 * outside printable ASCII, as the audit subsystem writes untrusted strings (its own helper for
 * that is not exported to modules).
 */
static void elfsig_audit_untrusted(struct audit_buffer *ab, const char *key, const char *value)
{
	const unsigned char *p;

	for (p = (const unsigned char *)value; *p; p++)
		if (*p == '"' || *p < 0x21 || *p > 0x7e)
			break;
	if (!*p) {
		audit_log_format(ab, " %s=\"%s\"", key, value);
		return;
	}
	audit_log_format(ab, " %s=", key);
	for (p = (const unsigned char *)value; *p; p++)
		audit_log_format(ab, "%02X", *p);
}

void elfsig_shim_audit_refusal(struct file *file, const char *op, const char *cause,
			       const u8 *digest, bool enforced)
{
	struct inode *inode = file_inode(file);
	struct audit_buffer *ab;
	char *buf, *path = "?";

	ab = audit_log_start(audit_context(), ELFSIG_AUDIT_GFP, AUDIT_INTEGRITY_DATA);
	if (!ab)
		return;
	audit_log_format(ab, "op=%s cause=%s", op, cause);
	/* ppid pid auid uid gid euid suid fsuid egid sgid fsgid tty ses comm exe subj */
	audit_log_task_info(ab);
	buf = kmalloc(PATH_MAX, ELFSIG_AUDIT_GFP);
	if (buf) {
		path = file_path(file, buf, PATH_MAX);
		if (IS_ERR(path))
			path = "?";
	}
	elfsig_audit_untrusted(ab, "name", path);
	kfree(buf);
	elfsig_audit_untrusted(ab, "dev", inode->i_sb->s_id);
	/* i_ino is unsigned long up to 6.x and u64 from 7.0. */
	audit_log_format(ab, " ino=%llu", (unsigned long long)inode->i_ino);
	if (digest)
		audit_log_format(ab, " digest=sha256:%*phN", 32, digest);
	audit_log_format(ab, " enforcing=%d res=%d", enforced, !enforced);
	audit_log_end(ab);
}

/*
 * The current task's name, copied without task_lock (which the ptrace hooks hold, or must not
 * take under tasklist_lock): a name changed meanwhile by the task itself may come out torn,
 * which a log line survives.
 */
static void elfsig_current_comm(char comm[TASK_COMM_LEN])
{
	memcpy(comm, current->comm, TASK_COMM_LEN);
	comm[TASK_COMM_LEN - 1] = 0;
}

/*
 * A refusal about what the current process asks of memory (kmod/runtime.rs): no file to name.
 * The process is named by pid, uid, login uid, session and name, read without a lock:
 * audit_log_task_info() takes task_lock, which the ptrace hooks hold.
 */
void elfsig_shim_audit_task_refusal(const char *op, const char *cause, bool enforced)
{
	struct audit_buffer *ab;
	char comm[TASK_COMM_LEN];

	ab = audit_log_start(audit_context(), ELFSIG_AUDIT_GFP, AUDIT_INTEGRITY_DATA);
	if (!ab)
		return;
	audit_log_format(ab, "op=%s cause=%s pid=%d auid=%u uid=%u ses=%u", op, cause,
			 task_tgid_nr(current),
			 from_kuid(&init_user_ns, audit_get_loginuid(current)),
			 from_kuid(&init_user_ns, current_uid()), audit_get_sessionid(current));
	elfsig_current_comm(comm);
	elfsig_audit_untrusted(ab, "comm", comm);
	audit_log_format(ab, " enforcing=%d res=%d", enforced, !enforced);
	audit_log_end(ab);
}

static DEFINE_RATELIMIT_STATE(elfsig_task_log_ratelimit, 5 * HZ, 20);

/* The log line of such a refusal, naming the process by its name and pid. Takes no lock. */
void elfsig_shim_log_task_refusal(const char *what, const char *message, bool enforced)
{
	char comm[TASK_COMM_LEN];

	if (!__ratelimit(&elfsig_task_log_ratelimit))
		return;
	elfsig_current_comm(comm);
	pr_warn("%s %s%s (pid %d): %s\n", enforced ? "refused" : "would refuse (permissive)", what,
		comm, task_tgid_nr(current), message);
}

/*
 * A policy written to the `policy` control file: loaded (or cleared), or refused and why. In
 * process context (a write), but nothing here needs to sleep either.
 */
void elfsig_shim_audit_policy(const char *cause, u64 serial, bool loaded)
{
	struct audit_buffer *ab;

	ab = audit_log_start(audit_context(), ELFSIG_AUDIT_GFP, AUDIT_INTEGRITY_DATA);
	if (!ab)
		return;
	audit_log_format(ab, "op=elfsig_policy cause=%s serial=%llu", cause,
			 (unsigned long long)serial);
	audit_log_task_info(ab);
	audit_log_format(ab, " res=%d", loaded);
	audit_log_end(ab);
}
