// SPDX-License-Identifier: GPL-2.0
/*
 * The module's keyrings, made and filled: `.elfsig` and `.elfsig_policy` (keys.c), and each
 * loaded policy's trusted and revoked certificates (policy.c).
 */

#include <linux/cred.h>
#include <linux/err.h>
#include <linux/key.h>
#include <linux/slab.h>

#include "shim.h"

/* Refuses every link into the module's keyrings (restrict_link_reject is not exported). */
static int elfsig_restrict_all(struct key *dest_keyring, const struct key_type *type,
			       const union key_payload *payload, struct key *restriction_key)
{
	return -EPERM;
}

/*
 * A keyring of the module's called `name`, which nothing can be linked into but through
 * elfsig_keyring_add(); the keyring frees the restriction with itself. Kept (KEY_ALLOC_SET_KEEP,
 * which the keys linked in inherit): not even root can invalidate, revoke or clear it, which
 * would make a search in it find nothing, and a revoked key look unrevoked. Root may view and
 * read it; only the module, which possesses it, searches it.
 */
struct key *elfsig_keyring_new(const char *name)
{
	struct key_restriction *restriction;
	struct key *keyring;

	restriction = kzalloc(sizeof(*restriction), GFP_KERNEL);
	if (!restriction)
		return ERR_PTR(-ENOMEM);
	restriction->check = elfsig_restrict_all;
	keyring = keyring_alloc(name, GLOBAL_ROOT_UID, GLOBAL_ROOT_GID, current_cred(),
				(KEY_POS_ALL & ~KEY_POS_SETATTR) | KEY_USR_VIEW | KEY_USR_READ,
				KEY_ALLOC_NOT_IN_QUOTA | KEY_ALLOC_SET_KEEP, restriction, NULL);
	if (IS_ERR(keyring))
		kfree(restriction);
	return keyring;
}

/*
 * Adds the DER certificate `der` to one of the module's keyrings, as `description` (NULL: the
 * kernel's, "subject: key id", under which a second certificate of the same subject and key
 * would replace the first).
 */
int elfsig_keyring_add(struct key *keyring, const char *description, const u8 *der, size_t len)
{
	key_ref_t key;

	key = key_create_or_update(make_key_ref(keyring, 1), "asymmetric", description, der, len,
				   (KEY_POS_ALL & ~KEY_POS_SETATTR) | KEY_USR_VIEW | KEY_USR_READ,
				   KEY_ALLOC_NOT_IN_QUOTA | KEY_ALLOC_BUILT_IN |
				   KEY_ALLOC_BYPASS_RESTRICTION);
	if (IS_ERR(key))
		return PTR_ERR(key);
	key_ref_put(key);
	return 0;
}
