// SPDX-License-Identifier: GPL-2.0
/*
 * Keys: PKCS#7 signatures checked against the builtin and secondary trusted keyrings, then the
 * module's own keyring of certificates embedded at build time; revocation through .blacklist.
 */

#include <linux/cred.h>
#include <linux/err.h>
#include <linux/key.h>
#include <linux/slab.h>
#include <linux/verification.h>
#include <keys/asymmetric-type.h>
#include <keys/system_keyring.h>

#include "shim.h"

/* The module's own keyring, holding the certificates embedded at build time. */
static struct key *elfsig_keyring;

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

int elfsig_shim_keyring_init(void)
{
	struct key *keyring = elfsig_keyring_new(".elfsig");

	if (IS_ERR(keyring))
		return PTR_ERR(keyring);
	elfsig_keyring = keyring;
	return 0;
}

void elfsig_shim_keyring_exit(void)
{
	key_put(elfsig_keyring);
	elfsig_keyring = NULL;
}

int elfsig_shim_add_cert(const u8 *der, size_t len)
{
	return elfsig_keyring_add(elfsig_keyring, NULL, der, len);
}

/* What verify_pkcs7_signature() returned, as 0, an enum elfsig_signature or a negative errno. */
int elfsig_shim_signature_result(int ret)
{
	switch (ret) {
	case -ENOKEY:
		return ELFSIG_SIGNATURE_UNKNOWN_KEY;
	case -EKEYREJECTED:
		return ELFSIG_SIGNATURE_REJECTED;
	case -EBADMSG:
	case -ENOPKG:
		return ELFSIG_SIGNATURE_MALFORMED;
	default:
		return ret;
	}
}

/*
 * 0, an enum elfsig_signature, or a negative errno: the errno numbers stay on this side.
 * `policy`, the loaded policy or NULL, adds its trusted certificates and revokes its revoked
 * ones.
 */
int elfsig_shim_verify_pkcs7(const u8 *data, size_t len, const u8 *sig, size_t sig_len,
			     const struct elfsig_policy *policy)
{
	int ret;

	/* The builtin and secondary trusted keyrings first, then the module's own, the policy's. */
	ret = verify_pkcs7_signature(data, len, sig, sig_len, VERIFY_USE_SECONDARY_KEYRING,
				     VERIFYING_UNSPECIFIED_SIGNATURE, NULL, NULL);
	if (ret == -ENOKEY && elfsig_keyring)
		ret = verify_pkcs7_signature(data, len, sig, sig_len, elfsig_keyring,
					     VERIFYING_UNSPECIFIED_SIGNATURE, NULL, NULL);
	if (ret == -ENOKEY && policy)
		ret = elfsig_shim_policy_verify_trusted(policy, data, len, sig, sig_len);
	if (ret == 0 && policy)
		ret = elfsig_shim_policy_signer_revoked(policy, data, len, sig, sig_len);
	return ret > 0 ? ret : elfsig_shim_signature_result(ret);
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
