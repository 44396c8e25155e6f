// SPDX-License-Identifier: GPL-2.0
/*
 * Files: reading them, their identity and change stamp, opening an ELF interpreter the way
 * binfmt_elf does, and naming them in the log.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/build_bug.h>
#include <linux/debugfs.h>
#include <linux/err.h>
#include <linux/fault-inject.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/iversion.h>
#include <linux/namei.h>
#include <linux/ratelimit.h>
#include <linux/slab.h>
#include <linux/stddef.h>
#include <linux/timekeeping.h>

#include "shim.h"

/* The layout Rust's FileId mirrors (glue/file.rs checks the same numbers). */
static_assert(sizeof(struct elfsig_file_id) == ELFSIG_FILE_ID_SIZE);
static_assert(offsetof(struct elfsig_file_id, version) == 48);
static_assert(offsetof(struct elfsig_file_id, cacheable) == ELFSIG_FILE_ID_CACHEABLE_OFFSET);

u64 elfsig_shim_file_size(struct file *file)
{
	return i_size_read(file_inode(file));
}

/*
 * Debug kernels (CONFIG_FAULT_INJECTION_DEBUG_FS) get /sys/kernel/debug/fail_elfsig_read, which
 * makes the module's reads of the file it verifies fail with -EIO, so that the stress tests can
 * check that a failed read refuses the exec and leaks nothing.
 */
#ifdef CONFIG_FAULT_INJECTION_DEBUG_FS
static DECLARE_FAULT_ATTR(elfsig_fail_read);
static struct dentry *elfsig_fail_read_dir;

void elfsig_shim_fault_create(void)
{
	elfsig_fail_read_dir = fault_create_debugfs_attr("fail_elfsig_read", NULL, &elfsig_fail_read);
	if (IS_ERR(elfsig_fail_read_dir))
		elfsig_fail_read_dir = NULL;
}

void elfsig_shim_fault_remove(void)
{
	debugfs_remove_recursive(elfsig_fail_read_dir);
	elfsig_fail_read_dir = NULL;
}

static bool elfsig_read_should_fail(size_t len)
{
	return should_fail(&elfsig_fail_read, len);
}
#else
void elfsig_shim_fault_create(void) {}
void elfsig_shim_fault_remove(void) {}
static bool elfsig_read_should_fail(size_t len) { return false; }
#endif

ssize_t elfsig_shim_file_read(struct file *file, u8 *buf, size_t len, u64 pos)
{
	loff_t off = pos;

	if (elfsig_read_should_fail(len))
		return -EIO;
	return kernel_read(file, buf, len, &off);
}

/* Safe in atomic context: the exec-end check calls it with preemption disabled. */
void elfsig_shim_inode_id(const struct inode *inode, struct elfsig_file_id *id)
{
	struct timespec64 ctime = inode_get_ctime(inode);
	struct timespec64 mtime = inode_get_mtime(inode);
	struct timespec64 now;

	id->dev = inode->i_sb->s_dev;
	id->ino = inode->i_ino;
	id->generation = inode->i_generation;
	id->size = i_size_read(inode);
	id->ctime_ns = timespec64_to_ns(&ctime);
	id->mtime_ns = timespec64_to_ns(&mtime);
	if (IS_I_VERSION(inode)) {
		/* Querying marks the version seen, so the next change must increment it. */
		id->version = inode_query_iversion((struct inode *)inode);
		id->cacheable = true;
	} else {
		/*
		 * Without i_version a change within the same clock tick may leave both times as
		 * they were; trust the times only once the tick they name has passed.
		 */
		ktime_get_coarse_real_ts64(&now);
		id->version = 0;
		id->cacheable = timespec64_compare(&ctime, &now) < 0;
	}
}

void elfsig_shim_file_id(struct file *file, struct elfsig_file_id *id)
{
	elfsig_shim_inode_id(file_inode(file), id);
}

/* The identity of the file a path names now, without opening it (a cache check needs no more). */
int elfsig_shim_path_id(const char *name, struct elfsig_file_id *id)
{
	struct path path;
	int err = kern_path(name, LOOKUP_FOLLOW, &path);

	if (err)
		return err;
	elfsig_shim_inode_id(d_backing_inode(path.dentry), id);
	path_put(&path);
	return 0;
}

/* Opened as binfmt_elf opens an interpreter: writes are refused (ETXTBSY) while it is open. */
struct file *elfsig_shim_open_exec(const char *path, int *err)
{
	struct file *file = open_exec(path);

	if (IS_ERR(file)) {
		*err = PTR_ERR(file);
		return NULL;
	}
	*err = 0;
	return file;
}

void elfsig_shim_close_exec(struct file *file)
{
	exe_file_allow_write_access(file);
	fput(file);
}

static DEFINE_RATELIMIT_STATE(elfsig_log_ratelimit, 5 * HZ, 20);

/*
 * Called in atomic context too (the exec-end check), so nothing here sleeps: the path buffer
 * comes from an allocation that does not wait, or, when there is none, from the stack, where a
 * long path is shown as "?".
 */
bool elfsig_shim_file_is_regular(struct file *file)
{
	return S_ISREG(file_inode(file)->i_mode);
}

/* `what` is "" for an exec, or what else was refused ("mmap of "). */
void elfsig_shim_log_refusal(struct file *file, const char *what, const char *message,
			     bool enforced)
{
	char small[128], *buf, *path;
	size_t len = PATH_MAX;

	if (!__ratelimit(&elfsig_log_ratelimit))
		return;
	buf = kmalloc(len, GFP_NOWAIT | __GFP_NOWARN);
	if (!buf) {
		buf = small;
		len = sizeof(small);
	}
	path = file_path(file, buf, len);
	if (IS_ERR(path))
		path = "?";
	pr_warn("%s %s%s: %s\n", enforced ? "refused" : "would refuse (permissive)", what, path,
		message);
	if (buf != small)
		kfree(buf);
}
