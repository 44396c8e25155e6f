// SPDX-License-Identifier: GPL-2.0
/*
 * elfsig's C shim: the binfmt registration, file and inode access, the kernel crypto and keyring
 * calls, and the securityfs files, each a thin wrapper around one kernel API. See shim.h.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <crypto/hash.h>
#include <linux/binfmts.h>
#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/debugfs.h>
#include <linux/err.h>
#include <linux/fault-inject.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/iversion.h>
#include <linux/key.h>
#include <linux/module.h>
#include <linux/namei.h>
#include <linux/moduleparam.h>
#include <linux/ratelimit.h>
#include <linux/security.h>
#include <linux/slab.h>
#include <linux/timekeeping.h>
#include <linux/uaccess.h>
#include <linux/verification.h>
#include <keys/asymmetric-type.h>
#include <keys/system_keyring.h>

#include "shim.h"

/* Module parameters: the mode at load time, and whether to lock it at once. */
static char elfsig_mode[16] = "enforce";
module_param_string(mode, elfsig_mode, sizeof(elfsig_mode), 0444);
MODULE_PARM_DESC(mode, "enforce (refuse) or permissive (log and allow) at load time");
static bool elfsig_lock;
module_param_named(lock, elfsig_lock, bool, 0444);
MODULE_PARM_DESC(lock, "lock enforce mode until reboot and refuse unloading");

const char *elfsig_shim_mode_param(size_t *len)
{
	*len = strnlen(elfsig_mode, sizeof(elfsig_mode));
	return elfsig_mode;
}

bool elfsig_shim_lock_param(void)
{
	return elfsig_lock;
}

static bool elfsig_deny_loader;
module_param_named(deny_loader, elfsig_deny_loader, bool, 0444);
MODULE_PARM_DESC(deny_loader, "refuse running the dynamic loader directly (ld.so ./program)");

bool elfsig_shim_deny_loader_param(void)
{
	return elfsig_deny_loader;
}

/* Certificates embedded at build time (certs.S): concatenated DER. */
extern const u8 elfsig_embedded_certs[];
extern const u8 elfsig_embedded_certs_end[];

const u8 *elfsig_shim_embedded_certs(size_t *len)
{
	*len = elfsig_embedded_certs_end - elfsig_embedded_certs;
	return elfsig_embedded_certs;
}

/* ---- Files ---------------------------------------------------------------------------- */

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

static void elfsig_fault_create(void)
{
	elfsig_fail_read_dir = fault_create_debugfs_attr("fail_elfsig_read", NULL, &elfsig_fail_read);
	if (IS_ERR(elfsig_fail_read_dir))
		elfsig_fail_read_dir = NULL;
}

static void elfsig_fault_remove(void)
{
	debugfs_remove_recursive(elfsig_fail_read_dir);
	elfsig_fail_read_dir = NULL;
}

static bool elfsig_read_should_fail(size_t len)
{
	return should_fail(&elfsig_fail_read, len);
}
#else
static void elfsig_fault_create(void) {}
static void elfsig_fault_remove(void) {}
static bool elfsig_read_should_fail(size_t len) { return false; }
#endif

ssize_t elfsig_shim_file_read(struct file *file, u8 *buf, size_t len, u64 pos)
{
	loff_t off = pos;

	if (elfsig_read_should_fail(len))
		return -EIO;
	return kernel_read(file, buf, len, &off);
}

static void elfsig_inode_id(struct inode *inode, struct elfsig_file_id *id)
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
		id->version = inode_query_iversion(inode);
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
	elfsig_inode_id(file_inode(file), id);
}

/* The identity of the file a path names now, without opening it (a cache check needs no more). */
int elfsig_shim_path_id(const char *name, struct elfsig_file_id *id)
{
	struct path path;
	int err = kern_path(name, LOOKUP_FOLLOW, &path);

	if (err)
		return err;
	elfsig_inode_id(d_backing_inode(path.dentry), id);
	path_put(&path);
	return 0;
}

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

/* ---- SHA-256 through the crypto API (SHA-NI, AVX2 or SSSE3 when the CPU has them) ------- */

static struct crypto_shash *elfsig_sha256_tfm;

struct elfsig_sha256 {
	struct shash_desc desc; /* followed by the driver's context */
};

struct elfsig_sha256 *elfsig_shim_sha256_new(void)
{
	struct elfsig_sha256 *hash;

	hash = kmalloc(sizeof(*hash) + crypto_shash_descsize(elfsig_sha256_tfm), GFP_KERNEL);
	if (!hash)
		return NULL;
	hash->desc.tfm = elfsig_sha256_tfm;
	if (crypto_shash_init(&hash->desc)) {
		kfree(hash);
		return NULL;
	}
	return hash;
}

int elfsig_shim_sha256_update(struct elfsig_sha256 *hash, const u8 *data, size_t len)
{
	return crypto_shash_update(&hash->desc, data, len);
}

int elfsig_shim_sha256_final(struct elfsig_sha256 *hash, u8 *digest)
{
	return crypto_shash_final(&hash->desc, digest);
}

void elfsig_shim_sha256_free(struct elfsig_sha256 *hash)
{
	kfree_sensitive(hash);
}

/* ---- Signatures, keyrings, revocation --------------------------------------------------- */

/* The module's own keyring, holding the certificates embedded at build time. */
static struct key *elfsig_keyring;

/* Refuses every link into the module keyring (restrict_link_reject is not exported). */
static int elfsig_restrict_all(struct key *dest_keyring, const struct key_type *type,
			       const union key_payload *payload, struct key *restriction_key)
{
	return -EPERM;
}

int elfsig_shim_verify_pkcs7(const u8 *data, size_t len, const u8 *sig, size_t sig_len)
{
	int ret;

	/* The builtin and secondary trusted keyrings first, then the module's own. */
	ret = verify_pkcs7_signature(data, len, sig, sig_len, VERIFY_USE_SECONDARY_KEYRING,
				     VERIFYING_UNSPECIFIED_SIGNATURE, NULL, NULL);
	if (ret == -ENOKEY && elfsig_keyring)
		ret = verify_pkcs7_signature(data, len, sig, sig_len, elfsig_keyring,
					     VERIFYING_UNSPECIFIED_SIGNATURE, NULL, NULL);
	return ret;
}

/*
 * 1 when a "bin:<hex>" key for the digest is in .blacklist, 0 when none is found, a negative
 * errno when the description could not be allocated. Not is_binary_blacklisted(): it answers
 * "not revoked" when that allocation fails, which let a revoked program run under memory
 * pressure. (A keyring search that fails still reads as "not found": the keyring is not
 * exported, so the module cannot search it itself.)
 */
int elfsig_shim_revocation(const u8 *digest, size_t len)
{
#ifdef CONFIG_SYSTEM_BLACKLIST_KEYRING
	int ret = is_hash_blacklisted(digest, len, BLACKLIST_HASH_BINARY);

	if (ret == -EKEYREJECTED)
		return 1;
	return ret;
#else
	return 0;
#endif
}

int elfsig_shim_add_cert(const u8 *der, size_t len)
{
	key_ref_t key;

	key = key_create_or_update(make_key_ref(elfsig_keyring, 1), "asymmetric", NULL, der, len,
				   (KEY_POS_ALL & ~KEY_POS_SETATTR) | KEY_USR_VIEW | KEY_USR_READ,
				   KEY_ALLOC_NOT_IN_QUOTA | KEY_ALLOC_BUILT_IN |
				   KEY_ALLOC_BYPASS_RESTRICTION);
	if (IS_ERR(key))
		return PTR_ERR(key);
	key_ref_put(key);
	return 0;
}

/* ---- Logging, time, privileges ---------------------------------------------------------- */

static DEFINE_RATELIMIT_STATE(elfsig_log_ratelimit, 5 * HZ, 20);

void elfsig_shim_log_refusal(struct file *file, const char *message, bool enforced)
{
	char *buf, *path = "?";

	if (!__ratelimit(&elfsig_log_ratelimit))
		return;
	buf = kmalloc(PATH_MAX, GFP_KERNEL);
	if (buf) {
		path = file_path(file, buf, PATH_MAX);
		if (IS_ERR(path))
			path = "?";
	}
	pr_warn("%s %s: %s\n", enforced ? "refused" : "would refuse (permissive)", path, message);
	kfree(buf);
}

u64 elfsig_shim_now_ns(void)
{
	return ktime_get_ns();
}

bool elfsig_shim_pin_module(void)
{
	return try_module_get(THIS_MODULE);
}

/* ---- securityfs: /sys/kernel/security/elfsig/ ------------------------------------------- */

static struct dentry *elfsig_dir;
static const char *const elfsig_file_names[5] = { "mode", "lock", "stats", "flush", "loader" };
static const umode_t elfsig_file_modes[5] = { 0600, 0600, 0400, 0200, 0600 };

static ssize_t elfsig_fs_read(struct file *file, char __user *ubuf, size_t count, loff_t *ppos)
{
	unsigned int which = (uintptr_t)file_inode(file)->i_private;
	char *buf;
	ssize_t len;

	buf = kzalloc(PAGE_SIZE, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	len = elfsig_control_read(which, buf, PAGE_SIZE);
	if (len >= 0)
		len = simple_read_from_buffer(ubuf, count, ppos, buf, len);
	kfree(buf);
	return len;
}

static ssize_t elfsig_fs_write(struct file *file, const char __user *ubuf, size_t count,
			       loff_t *ppos)
{
	unsigned int which = (uintptr_t)file_inode(file)->i_private;
	char buf[64];
	ssize_t ret;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	if (*ppos != 0 || count >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, count))
		return -EFAULT;
	buf[count] = '\0';
	ret = elfsig_control_write(which, buf, count);
	return ret < 0 ? ret : count;
}

/*
 * .owner makes an open control file hold a reference on the module: unloading is refused
 * (EWOULDBLOCK) until it is closed, instead of leaving a descriptor whose operations point
 * into freed code.
 */
static const struct file_operations elfsig_fs_ops = {
	.owner = THIS_MODULE,
	.read = elfsig_fs_read,
	.write = elfsig_fs_write,
	.llseek = generic_file_llseek,
};

/*
 * Recursive removal unhashes every entry even while something (a path lookup, a child that
 * inherited a descriptor across fork) still holds a reference; removing the files one by one
 * and then the directory leaves the directory behind in that case, and the next load fails
 * with -EEXIST.
 */
static void elfsig_fs_remove(void)
{
	securityfs_recursive_remove(elfsig_dir);
	elfsig_dir = NULL;
}

static int elfsig_fs_create(void)
{
	int i;

	elfsig_dir = securityfs_create_dir("elfsig", NULL);
	if (IS_ERR(elfsig_dir)) {
		int err = PTR_ERR(elfsig_dir);

		elfsig_dir = NULL;
		return err;
	}
	for (i = 0; i < ARRAY_SIZE(elfsig_file_names); i++) {
		struct dentry *d = securityfs_create_file(elfsig_file_names[i], elfsig_file_modes[i],
							  elfsig_dir, (void *)(uintptr_t)i,
							  &elfsig_fs_ops);
		if (IS_ERR(d)) {
			elfsig_fs_remove();
			return PTR_ERR(d);
		}
	}
	return 0;
}

/* ---- The binfmt handler ----------------------------------------------------------------- */

static int elfsig_load_binary(struct linux_binprm *bprm)
{
	/* -ENOEXEC passes the file on to the next handler (binfmt_elf); anything else ends the exec. */
	return elfsig_check_exec(bprm->file, bprm->buf, BINPRM_BUF_SIZE);
}

static struct linux_binfmt elfsig_format = {
	.module = THIS_MODULE,
	.load_binary = elfsig_load_binary,
};

/* ---- Set-up and tear-down --------------------------------------------------------------- */

int elfsig_shim_init(void)
{
	struct key_restriction *restriction;
	int err;

	elfsig_sha256_tfm = crypto_alloc_shash("sha256", 0, 0);
	if (IS_ERR(elfsig_sha256_tfm)) {
		err = PTR_ERR(elfsig_sha256_tfm);
		elfsig_sha256_tfm = NULL;
		return err;
	}
	pr_info("hashing with %s\n", crypto_shash_driver_name(elfsig_sha256_tfm));

	/* Nothing may be linked in after init; the keyring frees the restriction with itself. */
	restriction = kzalloc(sizeof(*restriction), GFP_KERNEL);
	if (!restriction) {
		err = -ENOMEM;
		goto free_tfm;
	}
	restriction->check = elfsig_restrict_all;
	elfsig_keyring = keyring_alloc(".elfsig", GLOBAL_ROOT_UID, GLOBAL_ROOT_GID, current_cred(),
				       (KEY_POS_ALL & ~KEY_POS_SETATTR) | KEY_USR_VIEW | KEY_USR_READ |
				       KEY_USR_SEARCH,
				       KEY_ALLOC_NOT_IN_QUOTA, restriction, NULL);
	if (IS_ERR(elfsig_keyring)) {
		err = PTR_ERR(elfsig_keyring);
		elfsig_keyring = NULL;
		kfree(restriction);
		goto free_tfm;
	}

	return 0;

free_tfm:
	crypto_free_shash(elfsig_sha256_tfm);
	elfsig_sha256_tfm = NULL;
	return err;
}

/*
 * Called last in module init, after everything that can fail but this: the control files
 * appear, then execs reach the Rust code, which is ready. A control file opened during an init
 * that then failed would hold a reference on a module that is freed anyway.
 */
int elfsig_shim_register(void)
{
	int err = elfsig_fs_create();

	if (err)
		return err;
	elfsig_fault_create();
	__register_binfmt(&elfsig_format, 1);
	return 0;
}

/*
 * Called first in module exit. No new exec enters the handler after this, and the module
 * reference search_binary_handler() holds around a running handler keeps the module loaded
 * until it returns.
 */
void elfsig_shim_unregister(void)
{
	unregister_binfmt(&elfsig_format);
}

/* Undoes elfsig_shim_init(): also on an init failure, before anything was registered. */
void elfsig_shim_exit(void)
{
	elfsig_fault_remove();
	elfsig_fs_remove();
	key_put(elfsig_keyring);
	elfsig_keyring = NULL;
	crypto_free_shash(elfsig_sha256_tfm);
	elfsig_sha256_tfm = NULL;
}
