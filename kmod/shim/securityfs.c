// SPDX-License-Identifier: GPL-2.0
/*
 * The control files in /sys/kernel/security/elfsig/. Which files there are, their modes and
 * contents are Rust's (control.rs); this file creates them and moves bytes.
 *
 * Privilege is checked once, when a file is opened for writing, against the opener's
 * capabilities (as securityfs files of IMA do), not at write time: a descriptor passed to a
 * less privileged process keeps what its opener could do, and nothing more. A readable file's
 * contents are taken once, at open, so that a reader reading in small pieces sees one
 * snapshot.
 */

#include <linux/capability.h>
#include <linux/err.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/security.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <linux/version.h>

#include "shim.h"

static struct dentry *elfsig_dir;

/* What one open of a readable file shows. */
struct elfsig_snapshot {
	size_t len;
	char text[];
};

static unsigned int elfsig_which(struct file *file)
{
	return (uintptr_t)file_inode(file)->i_private;
}

static int elfsig_fs_open(struct inode *inode, struct file *file)
{
	struct elfsig_snapshot *snapshot;
	ssize_t len;

	if ((file->f_mode & FMODE_WRITE) && !capable(CAP_SYS_ADMIN))
		return -EPERM;
	if (!(file->f_mode & FMODE_READ))
		return 0;
	snapshot = kzalloc(PAGE_SIZE, GFP_KERNEL);
	if (!snapshot)
		return -ENOMEM;
	len = elfsig_control_read(elfsig_which(file), snapshot->text,
				  PAGE_SIZE - sizeof(*snapshot));
	if (len < 0) {
		kfree(snapshot);
		return len;
	}
	snapshot->len = len;
	file->private_data = snapshot;
	return 0;
}

static ssize_t elfsig_fs_read(struct file *file, char __user *ubuf, size_t count, loff_t *ppos)
{
	struct elfsig_snapshot *snapshot = file->private_data;

	if (!snapshot)
		return -EINVAL;
	return simple_read_from_buffer(ubuf, count, ppos, snapshot->text, snapshot->len);
}

/* What one write brings is applied whole: a setting's word, or a signed policy. */
static ssize_t elfsig_fs_write(struct file *file, const char __user *ubuf, size_t count,
			       loff_t *ppos)
{
	unsigned int which = elfsig_which(file);
	char *buf;
	ssize_t ret;

	if (*ppos != 0 || count > elfsig_control_write_max(which))
		return -EINVAL;
	buf = vmemdup_user(ubuf, count);
	if (IS_ERR(buf))
		return PTR_ERR(buf);
	ret = elfsig_control_write(which, buf, count);
	kvfree(buf);
	return ret < 0 ? ret : count;
}

static int elfsig_fs_release(struct inode *inode, struct file *file)
{
	kfree(file->private_data);
	return 0;
}

/*
 * .owner makes an open control file hold a reference on the module: unloading is refused
 * (EWOULDBLOCK) until it is closed, instead of leaving a descriptor whose operations point
 * into freed code.
 */
static const struct file_operations elfsig_fs_ops = {
	.owner = THIS_MODULE,
	.open = elfsig_fs_open,
	.read = elfsig_fs_read,
	.write = elfsig_fs_write,
	.release = elfsig_fs_release,
	.llseek = generic_file_llseek,
};

int elfsig_shim_fs_create_dir(const char *name)
{
	struct dentry *dir = securityfs_create_dir(name, NULL);

	if (IS_ERR(dir))
		return PTR_ERR(dir);
	elfsig_dir = dir;
	return 0;
}

int elfsig_shim_fs_create_file(const char *name, u16 mode, unsigned int which)
{
	struct dentry *file = securityfs_create_file(name, mode, elfsig_dir,
						     (void *)(uintptr_t)which, &elfsig_fs_ops);

	return PTR_ERR_OR_ZERO(file);
}

/*
 * Recursive removal unhashes every entry even while something (a path lookup, a child that
 * inherited a descriptor across fork) still holds a reference; removing the files one by one
 * and then the directory leaves the directory behind in that case, and the next load fails
 * with -EEXIST.
 */
void elfsig_shim_fs_remove(void)
{
	/*
	 * Since 6.17 securityfs_remove() is recursive and securityfs_recursive_remove() a macro
	 * naming it, which 6.19 dropped. A kernel of 6.17 or 6.18 has the macro.
	 */
#if defined(securityfs_recursive_remove) || LINUX_VERSION_CODE >= KERNEL_VERSION(6, 19, 0)
	securityfs_remove(elfsig_dir);
#else
	securityfs_recursive_remove(elfsig_dir);
#endif
	elfsig_dir = NULL;
}
