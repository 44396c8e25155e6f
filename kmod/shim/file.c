// SPDX-License-Identifier: GPL-2.0
/*
 * Files: reading them, their identity, change stamp and the facts the verdict rests on (of the
 * inode that holds their data), refusing writers while they are verified, opening an ELF
 * interpreter the way binfmt_elf does, and naming them in the log.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/backing-dev.h>
#include <linux/build_bug.h>
#include <linux/debugfs.h>
#include <linux/err.h>
#include <linux/exportfs.h>
#include <linux/fault-inject.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/fs_struct.h>
#include <linux/fsnotify.h>
#include <linux/highmem.h>
#include <linux/hugetlb.h>
#include <linux/iversion.h>
#include <linux/magic.h>
#include <linux/namei.h>
#include <linux/pagemap.h>
#include <linux/ratelimit.h>
#include <linux/rcupdate.h>
#include <linux/rcupdate_wait.h>
#include <linux/sched/task.h>
#include <linux/shmem_fs.h>
#include <linux/slab.h>
#include <linux/stddef.h>
#include <linux/timekeeping.h>
#include <linux/user_namespace.h>
#include <linux/version.h>
#include <linux/xarray.h>

#include "shim.h"

/* The layout Rust's FileId mirrors (glue/file.rs checks the same numbers). */
static_assert(sizeof(struct elfsig_file_id) == ELFSIG_FILE_ID_SIZE);
static_assert(offsetof(struct elfsig_file_id, inode) == 80);
static_assert(offsetof(struct elfsig_file_id, facts) == ELFSIG_FILE_ID_FACTS_OFFSET);

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

/*
 * Whether the current task has a fatal signal pending (SIGKILL): it will never run again. On a
 * worker checking a file for a task (workqueue.c), whether that task has.
 */
bool elfsig_shim_killed(void)
{
	return fatal_signal_pending(elfsig_shim_job_client());
}

ssize_t elfsig_shim_file_read(struct file *file, u8 *buf, size_t len, u64 pos)
{
	loff_t off = pos;

	if (elfsig_read_should_fail(len))
		return -EIO;
	return kernel_read(file, buf, len, &off);
}

/*
 * Whether the module may hash this file's bytes where the page cache holds them, instead of
 * copying them out with kernel_read() (which reads them from there too): a regular file of one
 * of the local file systems below, whose page cache is what read() returns and what exec maps,
 * read in by read_folio() and readahead alone. Not the others: a network or cluster file
 * system's read takes locks or revalidates first (NFS, GFS2, OCFS2), FUSE's server decides
 * what a read returns, overlayfs and tmpfs have no read_folio(). Not DAX (no page cache), not
 * opened for direct I/O, not a file whose reads first let a watcher fill it in (fanotify's
 * pre-content events, 6.14 on). The first read of every verification, its headers, goes
 * through kernel_read() and the checks it makes (rw_verify_area()) all the same.
 */
bool elfsig_shim_file_lendable(struct file *file)
{
	struct inode *inode = file_inode(file);
	struct address_space *mapping = file->f_mapping;

#ifdef FMODE_FSNOTIFY_HSM
	if (FMODE_FSNOTIFY_HSM(file->f_mode))
		return false;
#endif
	if (!(file->f_mode & FMODE_READ) || (file->f_flags & O_DIRECT) || !S_ISREG(inode->i_mode) ||
	    IS_DAX(inode) || !mapping || mapping->host != inode || !mapping->a_ops ||
	    !mapping->a_ops->read_folio)
		return false;
	switch (inode->i_sb->s_magic) {
	case EXT4_SUPER_MAGIC: /* and ext2, ext3 */
	case XFS_SUPER_MAGIC:
	case BTRFS_SUPER_MAGIC:
	case F2FS_SUPER_MAGIC:
	case MSDOS_SUPER_MAGIC: /* vfat, msdos */
	case EXFAT_SUPER_MAGIC:
	case SQUASHFS_MAGIC:
	case EROFS_SUPER_MAGIC_V1:
	case ISOFS_SUPER_MAGIC:
		return true;
	default:
		return false;
	}
}

/*
 * Whether reading the whole file now needs neither I/O nor memory, nor anyone's answer: a
 * regular file of a local disk file system (elfsig_shim_file_lendable()), tmpfs or ramfs, every
 * page of which the page cache holds, on a file system no fanotify permission event watches. Such a file can be checked on a worker (kmod/verdict/ahead.rs) and cost the
 * same as in its task: no read charged to another cgroup, no credentials asked of a server.
 * A page reclaimed meanwhile is read in again as any read would, only charged to the worker.
 */
bool elfsig_shim_file_resident(struct file *file)
{
	struct inode *inode = file_inode(file);
	struct address_space *mapping = file->f_mapping;
	unsigned long magic = inode->i_sb->s_magic;

	if (!elfsig_shim_file_lendable(file)) {
#ifdef FMODE_FSNOTIFY_HSM
		if (FMODE_FSNOTIFY_HSM(file->f_mode))
			return false;
#endif
		if (!(file->f_mode & FMODE_READ) || !S_ISREG(inode->i_mode) || !mapping ||
		    mapping->host != inode || (magic != TMPFS_MAGIC && magic != RAMFS_MAGIC))
			return false;
	}
	/* fanotify permission events would name the worker, and hold the task unkillable. */
	if (fsnotify_sb_has_priority_watchers(inode->i_sb, FSNOTIFY_PRIO_CONTENT))
		return false;
	return READ_ONCE(mapping->nrpages) >= DIV_ROUND_UP(i_size_read(inode), PAGE_SIZE);
}

/* The most bytes handed out at once: what kernel_read() chunks were, so that no one SHA-256
 * update (with preemption off while it uses the FPU) covers a whole large folio. */
#define ELFSIG_LEND_MAX (64 * 1024)

/*
 * Maps the bytes from `pos` on, up to `end`, within one folio (one page where pages need
 * mapping one by one) and at most ELFSIG_LEND_MAX, of a lendable file's page cache, reading
 * them in first when they are not there, as filemap_read() does: readahead on a miss, the next
 * window once the marked folio is reached, the read itself under the invalidate lock as a
 * page fault's. Returns 0, 1 when the file no longer reaches `end`, or -errno. The folio is
 * held until elfsig_shim_file_unlend(); the caller holds writers off (deny_write_access), so
 * its bytes are the file's.
 */
int elfsig_shim_file_lend(struct file *file, u64 pos, u64 end, struct elfsig_lent *lent)
{
	struct address_space *mapping = file->f_mapping;
	pgoff_t index = pos >> PAGE_SHIFT;
	unsigned long wanted;
	struct folio *folio;
	size_t offset, len;

	cond_resched();
	if (pos >= end || end > (u64)i_size_read(mapping->host))
		return 1;
	if (elfsig_read_should_fail(end - pos))
		return -EIO;
	wanted = ((end - 1) >> PAGE_SHIFT) - index + 1;
	folio = filemap_get_folio(mapping, index);
	if (IS_ERR(folio)) {
		page_cache_sync_readahead(mapping, &file->f_ra, file, index, wanted);
	} else {
		if (folio_test_readahead(folio))
			page_cache_async_readahead(mapping, &file->f_ra, file, folio, wanted);
		if (folio_test_uptodate(folio))
			goto found;
		folio_put(folio);
	}
	/* Waits for the readahead's read, or reads the folio itself. */
	filemap_invalidate_lock_shared(mapping);
	folio = read_mapping_folio(mapping, index, file);
	filemap_invalidate_unlock_shared(mapping);
	if (IS_ERR(folio))
		return PTR_ERR(folio);
found:
	offset = offset_in_folio(folio, pos);
	len = min_t(u64, end - pos, folio_size(folio) - offset);
	len = min_t(size_t, len, ELFSIG_LEND_MAX);
	if (IS_ENABLED(CONFIG_HIGHMEM))
		len = min_t(size_t, len, PAGE_SIZE - offset_in_page(offset));
	folio_mark_accessed(folio);
	file->f_ra.prev_pos = pos + len;
	lent->data = kmap_local_folio(folio, offset);
	lent->len = len;
	lent->folio = folio;
	return 0;
}

void elfsig_shim_file_unlend(struct elfsig_lent *lent)
{
	kunmap_local(lent->data);
	folio_put(lent->folio);
}

/*
 * A memfd's (shmem's or hugetlbfs') seals, as mm/memfd.c finds them; false for other files.
 * Files on a kernel-internal mount (memfd, SysV shared memory) come from alloc_file_pseudo(),
 * which never takes write access: a writable descriptor of one leaves i_writecount at 0, so
 * only seals say that no one can write it.
 */
static bool elfsig_seals(struct inode *inode, u32 *seals)
{
	if (shmem_mapping(inode->i_mapping)) {
		*seals = READ_ONCE(SHMEM_I(inode)->seals);
		return true;
	}
#ifdef CONFIG_HUGETLBFS
	if (inode->i_sb->s_magic == HUGETLBFS_MAGIC) {
		*seals = READ_ONCE(HUGETLBFS_I(inode)->seals);
		return true;
	}
#endif
	return false;
}

/*
 * The initramfs the module was loaded from (trust_initramfs): the initial root file system,
 * which the kernel unpacked the initramfs into and which every process's root is until
 * switch_root, and the time the module loaded. A file there whose change time is earlier is
 * the initramfs's own, as the kernel unpacked it or as the initramfs, which ran unchecked and
 * loaded the module, left it: ELFSIG_FACT_INITRAMFS. Any write (or chmod, link, rename)
 * since moves the change time. Set once, at init, before the binfmt handler is registered;
 * cleared for good the first time the clock reads earlier than the load (set back, by time
 * synchronisation or by hand), since a file written then would carry an earlier change time.
 */
static const struct super_block *elfsig_initramfs_sb;
static struct timespec64 elfsig_initramfs_since;

/* Whether `sb` is the kernel's rootfs, which it unpacks the initramfs into ("rootfs"). */
static bool elfsig_is_rootfs(const struct super_block *sb)
{
	static const char rootfs[] = "rootfs";
	const char *name = sb->s_type->name;
	size_t i;

	/* A loop, not strcmp: gcc's fortified string functions bring a panic path. */
	for (i = 0; i < sizeof(rootfs); i++)
		if (name[i] != rootfs[i])
			return false;
	return true;
}

/*
 * Whether the current process's root is the initial root file system: the initramfs's, until
 * switch_root. Not init_task's root alone: PID 1 shares init_task's fs_struct (CLONE_FS), so
 * switch_root's chroot moves both to the real root; the initial one is the top of rootfs.
 */
bool elfsig_shim_root_is_initial(void)
{
	struct path ours, initial;
	bool same;

	get_fs_root(current->fs, &ours);
	get_fs_root(init_task.fs, &initial);
	same = path_equal(&ours, &initial) && ours.dentry == ours.mnt->mnt_root &&
	       elfsig_is_rootfs(ours.mnt->mnt_sb);
	path_put(&initial);
	path_put(&ours);
	return same;
}

/* Whether the module is being loaded by a process whose root is the initial root file system. */
bool elfsig_shim_trust_initramfs(void)
{
	struct path initial;

	if (!elfsig_shim_root_is_initial())
		return false;
	get_fs_root(init_task.fs, &initial);
	elfsig_initramfs_sb = initial.mnt->mnt_sb;
	ktime_get_coarse_real_ts64(&elfsig_initramfs_since);
	path_put(&initial);
	return true;
}

/*
 * Safe in atomic context: the exec-end check calls it with preemption disabled, on the real
 * inode a mapping shows (for overlayfs, the backing file's). No file handle here.
 */
void elfsig_shim_inode_id(const struct inode *inode, struct elfsig_file_id *id)
{
	const struct super_block *sb = inode->i_sb;
	struct timespec64 ctime = inode_get_ctime(inode);
	struct timespec64 mtime = inode_get_mtime(inode);
	const char *fs = sb->s_type->name;
	struct timespec64 now;
	u32 facts = 0;
	size_t i;

	memset(id, 0, sizeof(*id));
	id->dev = sb->s_dev;
	id->ino = inode->i_ino;
	id->generation = inode->i_generation;
	id->size = i_size_read(inode);
	id->ctime_ns = timespec64_to_ns(&ctime);
	id->mtime_ns = timespec64_to_ns(&mtime);
	id->inode = (uintptr_t)inode;
	/* A loop, not strscpy_pad: gcc's fortified string functions bring a panic path. */
	for (i = 0; i + 1 < sizeof(id->fs) && fs[i]; i++)
		id->fs[i] = fs[i];
	if (IS_I_VERSION(inode)) {
		/* Querying marks the version seen, so the next change must increment it. */
		id->version = inode_query_iversion((struct inode *)inode);
		facts |= ELFSIG_FACT_IVERSION;
	}
	/*
	 * Without i_version a change within the same clock tick may leave both times as they
	 * were: they tell a change apart only once the tick they name has passed.
	 */
	ktime_get_coarse_real_ts64(&now);
	if (timespec64_compare(&ctime, &now) < 0)
		facts |= ELFSIG_FACT_SETTLED;
	if (READ_ONCE(elfsig_initramfs_sb) && timespec64_compare(&now, &elfsig_initramfs_since) < 0)
		WRITE_ONCE(elfsig_initramfs_sb, NULL);
	if (sb->s_user_ns != &init_user_ns)
		facts |= ELFSIG_FACT_USERNS;
	if (sb->s_iflags & (SB_I_UNTRUSTED_MOUNTER | SB_I_IMA_UNVERIFIABLE_SIGNATURE))
		facts |= ELFSIG_FACT_UNVERIFIABLE;
	if (sb->s_flags & SB_KERNMOUNT)
		facts |= ELFSIG_FACT_INTERNAL;
	if (elfsig_seals((struct inode *)inode, &id->seals))
		facts |= ELFSIG_FACT_SEALABLE;
	if (mapping_writably_mapped(inode->i_mapping))
		facts |= ELFSIG_FACT_WRITABLY_MAPPED;
	if (atomic_read(&inode->i_writecount) > 0)
		facts |= ELFSIG_FACT_WRITERS;
	if (!mapping_can_writeback(inode->i_mapping))
		facts |= ELFSIG_FACT_NO_WRITEBACK;
	if (sb == READ_ONCE(elfsig_initramfs_sb) &&
	    timespec64_compare(&ctime, &elfsig_initramfs_since) < 0)
		facts |= ELFSIG_FACT_INITRAMFS;
	id->facts = facts;
}

/*
 * Whether any page of the file may be pinned for DMA: io_uring's registered buffers over a
 * shared mapping keep writing the page cache after the mapping and its descriptor are gone,
 * with no writer counted and no stamp moved (pinning faulted the page writable, which moved
 * the stamp once, then). Only filesystems without dirty tracking (shmem, ramfs) let such
 * long-term pins exist (writable_file_mapping_allowed()). May sleep.
 */
static bool elfsig_pinned(struct address_space *mapping)
{
	XA_STATE(xas, &mapping->i_pages, 0);
	struct folio *folio;
	bool pinned = false;

	rcu_read_lock();
	xas_for_each(&xas, folio, ULONG_MAX) {
		if (xas_retry(&xas, folio) || xa_is_value(folio))
			continue;
		if (folio_maybe_dma_pinned(folio)) {
			pinned = true;
			break;
		}
		if (need_resched()) {
			xas_pause(&xas);
			cond_resched_rcu();
		}
	}
	rcu_read_unlock();
	return pinned;
}

/*
 * The real file an overlayfs file maps: the one it opened, which a copy-up since then leaves
 * behind (reads follow the copy, ovl_mmap() does not). overlayfs keeps it in private_data:
 * the file itself up to 6.12, the first member of struct ovl_file from 6.13. NULL for other
 * files.
 */
static struct file *elfsig_overlay_mapped(struct file *file)
{
	if (file_inode(file)->i_sb->s_magic != OVERLAYFS_SUPER_MAGIC || !S_ISREG(file_inode(file)->i_mode) ||
	    !file->private_data)
		return NULL;
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 13, 0)
	return *(struct file **)file->private_data;
#else
	return file->private_data;
#endif
}

/*
 * The file handle (exportfs): what names one file of a filesystem for good, where the inode
 * number alone does not (a btrfs subvolume's inode numbers start where every other one's do).
 */
static void elfsig_handle(struct inode *inode, struct elfsig_file_id *id)
{
#if IS_ENABLED(CONFIG_EXPORTFS)
	u32 handle[ARRAY_SIZE(id->handle)] = {};
	int len = ARRAY_SIZE(handle), i;
	int type = exportfs_encode_inode_fh(inode, (struct fid *)handle, &len, NULL,
					    EXPORT_FH_FID);

	/* What the handle did not fill stays zero, so that equal handles compare equal. */
	if (type > 0 && type != FILEID_INVALID && len > 0 && len <= ARRAY_SIZE(handle)) {
		for (i = 0; i < len; i++)
			id->handle[i] = handle[i];
		id->facts |= ELFSIG_FACT_HANDLE;
	}
#endif
}

/*
 * The inode that holds a file's data: under overlayfs the real file in an upper or lower
 * layer (whose changes do not move the overlay inode's times, size or i_version, and which
 * the exec's write denial does not cover), the file's own inode elsewhere, down through
 * overlays stacked as lower layers (d_real() follows them; an overlay is never an upper
 * layer, which overlayfs refuses). May sleep (overlayfs may look up lazily where a metacopy's
 * data lies).
 */
static struct inode *elfsig_real_inode(struct file *file)
{
	return d_real_inode(file->f_path.dentry);
}

static void elfsig_real_id(struct inode *real, const struct inode *own, struct elfsig_file_id *id)
{
	elfsig_shim_inode_id(real, id);
	elfsig_handle(real, id);
	if (real != own)
		id->facts |= ELFSIG_FACT_STACKED;
}

/* Whether pages of the file's real inode may be pinned for DMA (elfsig_pinned). May sleep. */
bool elfsig_shim_file_pinned(struct file *file)
{
	return elfsig_pinned(elfsig_real_inode(file)->i_mapping);
}

/*
 * The file a mapping of `file` ends up holding: under overlayfs, the real file each overlay
 * opened, down through every overlay stacked below it (containers in containers: an overlay
 * whose lower layer is itself an overlay, whose mmap hands the mapping on in turn). `file`
 * itself for other files. Past the deepest stacking overlayfs allows, the overlay file it
 * stopped at, which is no real inode: refused as opened before its copy-up.
 */
struct file *elfsig_shim_mapped_real_file(struct file *file)
{
	struct file *mapped;
	int depth;

	for (depth = 0; depth <= FILESYSTEM_MAX_STACK_DEPTH; depth++) {
		mapped = elfsig_overlay_mapped(file);
		if (!mapped)
			break;
		file = mapped;
	}
	return file;
}

void elfsig_shim_file_id(struct file *file, struct elfsig_file_id *id)
{
	struct inode *real = elfsig_real_inode(file);
	struct file *mapped = elfsig_shim_mapped_real_file(file);

	elfsig_real_id(real, file_inode(file), id);
	if (mapped != file && file_inode(mapped) != real)
		id->facts |= ELFSIG_FACT_STALE_OPEN;
}

/* The identity of the file a path names now, without opening it (a cache check needs no more). */
int elfsig_shim_path_id(const char *name, struct elfsig_file_id *id)
{
	struct path path;
	int err = kern_path(name, LOOKUP_FOLLOW, &path);

	if (err)
		return err;
	elfsig_real_id(d_real_inode(path.dentry), d_backing_inode(path.dentry), id);
	path_put(&path);
	return 0;
}

/*
 * Refuses writers to the file's real inode while it is verified, as exec does for the inode
 * it opened (deny_write_access()): -ETXTBSY when someone has it open for writing. Under
 * overlayfs, exec's own denial covers only the overlay inode.
 */
int elfsig_shim_deny_writes(struct file *file, struct inode **real)
{
	struct inode *inode = elfsig_real_inode(file);

	if (!atomic_dec_unless_positive(&inode->i_writecount))
		return -ETXTBSY;
	*real = inode;
	return 0;
}

/* The file `real` belongs to is still open: the inode cannot have gone. */
void elfsig_shim_allow_writes(struct inode *real)
{
	atomic_inc(&real->i_writecount);
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
