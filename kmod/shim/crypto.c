// SPDX-License-Identifier: GPL-2.0
/* SHA-256 through the kernel's crypto API (SHA-NI, AVX2 or SSSE3 when the CPU has them). */

#include <crypto/hash.h>
#include <linux/err.h>
#include <linux/slab.h>

#include "shim.h"

static struct crypto_shash *elfsig_sha256_tfm;

struct elfsig_sha256 {
	struct shash_desc desc; /* followed by the driver's context */
};

int elfsig_shim_sha256_init(void)
{
	struct crypto_shash *tfm = crypto_alloc_shash("sha256", 0, 0);

	if (IS_ERR(tfm))
		return PTR_ERR(tfm);
	elfsig_sha256_tfm = tfm;
	return 0;
}

void elfsig_shim_sha256_exit(void)
{
	crypto_free_shash(elfsig_sha256_tfm);
	elfsig_sha256_tfm = NULL;
}

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
