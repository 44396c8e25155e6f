// SPDX-License-Identifier: GPL-2.0
/*
 * The signed policy's kernel objects (policy.rs decides what goes in them): the loaded policy,
 * an immutable object with a reference count: its revoked digests, a keyring of the
 * certificates it trusts and one of those it revokes, and what `policy` shows of it. (The
 * keyring of policy keys, which checks a policy's signature, is keys.c's.)
 * Whoever verifies takes a reference to the current one for the whole verification, so that no
 * verification sees half of one policy and half of the next; loading replaces the pointer
 * under a spinlock.
 */

#include <linux/cred.h>
#include <linux/err.h>
#include <linux/key.h>
#include <linux/refcount.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/sprintf.h>
#include <linux/string.h>
#include <linux/verification.h>
#include <keys/asymmetric-type.h>

#include "shim.h"

struct elfsig_policy {
	refcount_t ref;
	struct elfsig_policy_summary summary;
	/* Revoked SHA-256 digests, 32 bytes each, ascending. */
	u8 *digests;
	size_t digests_len;
	struct key *trusted;
	struct key *revoked;
};

static DEFINE_SPINLOCK(elfsig_policy_lock);
static struct elfsig_policy *elfsig_policy_current;

/* A keyring for a policy's certificates, or NULL with the errno in `err`. */
static struct key *elfsig_policy_keyring_new(const char *name, int *err)
{
	struct key *keyring = elfsig_keyring_new(name);

	*err = PTR_ERR_OR_ZERO(keyring);
	return IS_ERR(keyring) ? NULL : keyring;
}

struct elfsig_policy *elfsig_shim_policy_new(const struct elfsig_policy_summary *summary,
					     const u8 *digests, size_t digests_len, int *err)
{
	struct elfsig_policy *policy = kzalloc(sizeof(*policy), GFP_KERNEL);

	*err = -ENOMEM;
	if (!policy)
		return NULL;
	refcount_set(&policy->ref, 1);
	policy->summary = *summary;
	if (digests_len) {
		policy->digests = kvmemdup(digests, digests_len, GFP_KERNEL);
		if (!policy->digests)
			goto fail;
		policy->digests_len = digests_len;
	}
	policy->trusted = elfsig_policy_keyring_new(".elfsig_policy_trusted", err);
	if (!policy->trusted)
		goto fail;
	policy->revoked = elfsig_policy_keyring_new(".elfsig_policy_revoked", err);
	if (!policy->revoked)
		goto fail;
	return policy;
fail:
	elfsig_shim_policy_put(policy);
	return NULL;
}

/*
 * Each certificate under a description of its own (its list and place in it): two certificates
 * of one key and subject (a renewal) are two keys, each found by its own issuer and serial.
 */
int elfsig_shim_policy_add_cert(struct elfsig_policy *policy, bool trusted, u32 index,
				const u8 *der, size_t len)
{
	char description[32];

	snprintf(description, sizeof(description), "elfsig-policy-%s-%u",
		 trusted ? "trusted" : "revoked", index);
	return elfsig_keyring_add(trusted ? policy->trusted : policy->revoked, description, der,
				  len);
}

/* Makes `policy` the current one; the reference passes to the module. */
void elfsig_shim_policy_install(struct elfsig_policy *policy)
{
	struct elfsig_policy *old;

	spin_lock(&elfsig_policy_lock);
	old = elfsig_policy_current;
	elfsig_policy_current = policy;
	spin_unlock(&elfsig_policy_lock);
	elfsig_shim_policy_put(old);
}

/* A reference to the current policy, or NULL when none is loaded. */
struct elfsig_policy *elfsig_shim_policy_get(void)
{
	struct elfsig_policy *policy;

	spin_lock(&elfsig_policy_lock);
	policy = elfsig_policy_current;
	if (policy)
		refcount_inc(&policy->ref);
	spin_unlock(&elfsig_policy_lock);
	return policy;
}

void elfsig_shim_policy_put(struct elfsig_policy *policy)
{
	if (!policy || !refcount_dec_and_test(&policy->ref))
		return;
	key_put(policy->trusted);
	key_put(policy->revoked);
	kvfree(policy->digests);
	kfree(policy);
}

const struct elfsig_policy_summary *elfsig_shim_policy_summary(const struct elfsig_policy *policy)
{
	return &policy->summary;
}

const u8 *elfsig_shim_policy_digests(const struct elfsig_policy *policy, size_t *len)
{
	*len = policy->digests_len;
	return policy->digests;
}

/*
 * A signature that verified, checked against the certificates the policy revokes: 0 when none
 * of them is the signer, ELFSIG_SIGNATURE_REVOKED_KEY when one is (its identity names the
 * signer, whether or not its key verifies the signature), or a negative errno.
 */
int elfsig_shim_policy_signer_revoked(const struct elfsig_policy *policy, const u8 *data,
				      size_t len, const u8 *sig, size_t sig_len)
{
	int ret;

	if (!policy->summary.revoked_certs)
		return 0;
	ret = verify_pkcs7_signature(data, len, sig, sig_len, policy->revoked,
				     VERIFYING_UNSPECIFIED_SIGNATURE, NULL, NULL);
	switch (ret) {
	case -ENOKEY:
		return 0;
	case 0:
	case -EKEYREJECTED:
		return ELFSIG_SIGNATURE_REVOKED_KEY;
	default:
		return ret < 0 ? ret : -EINVAL;
	}
}

/* The policy's trusted certificates, for a signature no other keyring knows the key of. */
int elfsig_shim_policy_verify_trusted(const struct elfsig_policy *policy, const u8 *data,
				      size_t len, const u8 *sig, size_t sig_len)
{
	if (!policy->summary.trusted_certs)
		return -ENOKEY;
	return verify_pkcs7_signature(data, len, sig, sig_len, policy->trusted,
				      VERIFYING_UNSPECIFIED_SIGNATURE, NULL, NULL);
}
