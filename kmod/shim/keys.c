// SPDX-License-Identifier: GPL-2.0
/*
 * Keys: the module's own keyrings of certificates embedded at build time (of program keys and
 * of policy keys); PKCS#7 signatures checked against the builtin and secondary trusted
 * keyrings, then the module's own and the loaded policy's; a policy's signature checked
 * against the policy keys; revocation through .blacklist.
 */

#include <linux/err.h>
#include <linux/key.h>
#include <linux/verification.h>
#include <keys/asymmetric-type.h>
#include <keys/system_keyring.h>

#include "shim.h"

/* The module's own keyring, holding the certificates embedded at build time. */
static struct key *elfsig_keyring;

/* The keys policies must be signed by (certificates embedded at build time for that alone). */
static struct key *elfsig_policy_keyring;

/* Makes the keyring `name` into `*slot`; 0 or a negative errno. */
static int elfsig_keyring_init(struct key **slot, const char *name)
{
	struct key *keyring = elfsig_keyring_new(name);

	if (IS_ERR(keyring))
		return PTR_ERR(keyring);
	*slot = keyring;
	return 0;
}

int elfsig_shim_keyring_init(void)
{
	return elfsig_keyring_init(&elfsig_keyring, ".elfsig");
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

int elfsig_shim_policy_keyring_init(void)
{
	return elfsig_keyring_init(&elfsig_policy_keyring, ".elfsig_policy");
}

int elfsig_shim_policy_add_key(const u8 *der, size_t len)
{
	return elfsig_keyring_add(elfsig_policy_keyring, NULL, der, len);
}

void elfsig_shim_policy_keyring_exit(void)
{
	elfsig_shim_policy_install(NULL);
	key_put(elfsig_policy_keyring);
	elfsig_policy_keyring = NULL;
}

/* What verify_pkcs7_signature() returned, as 0, an enum elfsig_signature or a negative errno. */
static int elfsig_shim_signature_result(int ret)
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

	/*
	 * The module's own keyring first, the builtin and secondary trusted keyrings next, then
	 * the policy's: a key in any of them will do, so the order changes no answer, only the
	 * work. Each try parses the signature, digests the record and looks its digest up in
	 * .blacklist before it searches its keyring, and the module's keyring holds the keys that
	 * sign what a host runs (the distribution's kernel keyrings hold its own).
	 */
	ret = -ENOKEY;
	if (elfsig_keyring)
		ret = verify_pkcs7_signature(data, len, sig, sig_len, elfsig_keyring,
					     VERIFYING_UNSPECIFIED_SIGNATURE, NULL, NULL);
	if (ret == -ENOKEY)
		ret = verify_pkcs7_signature(data, len, sig, sig_len, VERIFY_USE_SECONDARY_KEYRING,
					     VERIFYING_UNSPECIFIED_SIGNATURE, NULL, NULL);
	if (ret == -ENOKEY && policy)
		ret = elfsig_shim_policy_verify_trusted(policy, data, len, sig, sig_len);
	if (ret == 0 && policy)
		ret = elfsig_shim_policy_signer_revoked(policy, data, len, sig, sig_len);
	return ret > 0 ? ret : elfsig_shim_signature_result(ret);
}

/* 0, an enum elfsig_signature, or a negative errno, as for a file's signature. */
int elfsig_shim_policy_verify(const u8 *data, size_t len, const u8 *sig, size_t sig_len)
{
	/* A NULL keyring would mean the builtin one to verify_pkcs7_signature(). */
	if (!elfsig_policy_keyring)
		return ELFSIG_SIGNATURE_UNKNOWN_KEY;
	return elfsig_shim_signature_result(verify_pkcs7_signature(data, len, sig, sig_len,
			elfsig_policy_keyring, VERIFYING_UNSPECIFIED_SIGNATURE, NULL, NULL));
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
