// SPDX-License-Identifier: GPL-2.0
/*
 * The module itself: its parameters, the certificates embedded at build time, pinning it, and
 * the clock.
 */

#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/string.h>
#include <linux/timekeeping.h>

#include "shim.h"

/* Here rather than in module!, whose key is `author` up to 6.12 and `authors` after. */
MODULE_AUTHOR("elfsig developers");
/* elfsig's version, from the build (Kbuild): /sys/module/elfsig/version, `elfsig status`. */
MODULE_VERSION(ELFSIG_VERSION);

/* The mode at load time, the loader policy, and whether to lock at once. */
static char elfsig_mode[16] = "enforce";

module_param_string(mode, elfsig_mode, sizeof(elfsig_mode), 0444);
MODULE_PARM_DESC(mode, "enforce (refuse) or permissive (log and allow) at load time");

static char elfsig_untrusted[16] = "refuse";

module_param_string(untrusted, elfsig_untrusted, sizeof(elfsig_untrusted), 0444);
MODULE_PARM_DESC(untrusted,
		 "files on mounts the kernel does not trust (a user namespace's, FUSE): refuse, or verify every time");

static char elfsig_runtime[16] = "enforce";

module_param_string(runtime, elfsig_runtime, sizeof(elfsig_runtime), 0444);
MODULE_PARM_DESC(runtime,
		 "no executable memory but signed files' without the jit entitlement (with the mapping guard): enforce, or off");

static bool elfsig_lock;
module_param_named(lock, elfsig_lock, bool, 0444);
MODULE_PARM_DESC(lock, "lock enforce mode until reboot and refuse unloading");

static bool elfsig_deny_loader;
module_param_named(deny_loader, elfsig_deny_loader, bool, 0444);
MODULE_PARM_DESC(deny_loader, "refuse running the dynamic loader directly (ld.so ./program)");

static bool elfsig_require_mmap_guard;
module_param_named(require_mmap_guard, elfsig_require_mmap_guard, bool, 0444);
MODULE_PARM_DESC(require_mmap_guard,
		 "fail to load where the kernel cannot run the mapping guard (BPF LSM, module BTF)");

static bool elfsig_trust_initramfs;
module_param_named(trust_initramfs, elfsig_trust_initramfs, bool, 0444);
MODULE_PARM_DESC(trust_initramfs,
		 "loaded from the initramfs: its own files, unchanged since, run unverified (the boot hooks set it)");

/* memchr, not strnlen: gcc's fortified strnlen brings a panic path (__fortify_panic). */
static const char *elfsig_string_param(const char *param, size_t size, size_t *len)
{
	const char *nul = memchr(param, 0, size);

	*len = nul ? (size_t)(nul - param) : size;
	return param;
}

const char *elfsig_shim_mode_param(size_t *len)
{
	return elfsig_string_param(elfsig_mode, sizeof(elfsig_mode), len);
}

const char *elfsig_shim_untrusted_param(size_t *len)
{
	return elfsig_string_param(elfsig_untrusted, sizeof(elfsig_untrusted), len);
}

const char *elfsig_shim_runtime_param(size_t *len)
{
	return elfsig_string_param(elfsig_runtime, sizeof(elfsig_runtime), len);
}

bool elfsig_shim_lock_param(void)
{
	return elfsig_lock;
}

bool elfsig_shim_deny_loader_param(void)
{
	return elfsig_deny_loader;
}

bool elfsig_shim_require_mmap_guard_param(void)
{
	return elfsig_require_mmap_guard;
}

bool elfsig_shim_trust_initramfs_param(void)
{
	return elfsig_trust_initramfs;
}

/* Certificates embedded at build time (certs.S): concatenated DER. */
extern const u8 elfsig_embedded_certs[];
extern const u8 elfsig_embedded_certs_end[];

const u8 *elfsig_shim_embedded_certs(size_t *len)
{
	*len = elfsig_embedded_certs_end - elfsig_embedded_certs;
	return elfsig_embedded_certs;
}

/* Certificates of the keys that sign policies, embedded the same way. */
extern const u8 elfsig_embedded_policy_certs[];
extern const u8 elfsig_embedded_policy_certs_end[];

const u8 *elfsig_shim_embedded_policy_certs(size_t *len)
{
	*len = elfsig_embedded_policy_certs_end - elfsig_embedded_policy_certs;
	return elfsig_embedded_policy_certs;
}

/* A reference that is never dropped: the module cannot be unloaded any more. Cannot fail. */
void elfsig_shim_pin_module(void)
{
	__module_get(THIS_MODULE);
}

u64 elfsig_shim_now_ns(void)
{
	return ktime_get_ns();
}
