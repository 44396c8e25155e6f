// SPDX-License-Identifier: GPL-2.0
/*
 * Audit records: one AUDIT_INTEGRITY_DATA record (type 1800, the type of IMA's appraisal
 * results) for every refusal, and for every would-be refusal in permissive mode, with IMA's
 * field names where IMA has one, so that ausearch and audit rules written for IMA's records
 * match these too. kmod/README.md documents the record. Without CONFIG_AUDIT (or with audit
 * disabled), audit_log_start() returns NULL and nothing is recorded.
 *
 * The mprotect hook runs under mmap_lock in a non-sleeping BPF program, so nothing here sleeps:
 * GFP_NOWAIT throughout (audit_log_start() then never waits for the backlog either).
 */

#include <linux/audit.h>
#include <linux/err.h>
#include <linux/fs.h>
#include <linux/limits.h>
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
