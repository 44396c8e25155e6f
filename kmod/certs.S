/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Certificates embedded in the module at build time (`cargo xtask build-kmod --cert CERT`):
 * DER, concatenated, in the file named by ELFSIG_CERTS. They seed the module's keyring. Without
 * ELFSIG_CERTS there are none (newer assemblers refuse to .incbin /dev/null). The same for the
 * keys that sign policies (`--policy-cert`, ELFSIG_POLICY_CERTS), which seed `.elfsig_policy`.
 */
	.section .rodata, "a"
	.globl elfsig_embedded_certs
elfsig_embedded_certs:
#ifdef ELFSIG_CERTS
	.incbin ELFSIG_CERTS
#endif
	.globl elfsig_embedded_certs_end
elfsig_embedded_certs_end:
	.globl elfsig_embedded_policy_certs
elfsig_embedded_policy_certs:
#ifdef ELFSIG_POLICY_CERTS
	.incbin ELFSIG_POLICY_CERTS
#endif
	.globl elfsig_embedded_policy_certs_end
elfsig_embedded_policy_certs_end:
