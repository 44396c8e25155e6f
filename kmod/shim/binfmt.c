// SPDX-License-Identifier: GPL-2.0
/*
 * The binfmt handler: registered at the head of the list, ahead of binfmt_elf, it sees every
 * exec first. Returning -ENOEXEC passes the file on to the next handler; anything else ends
 * the exec, so -EACCES refuses it.
 */

#include <linux/binfmts.h>
#include <linux/module.h>

#include "shim.h"

static int elfsig_load_binary(struct linux_binprm *bprm)
{
	return elfsig_check_exec(bprm->file, bprm->buf, BINPRM_BUF_SIZE);
}

static struct linux_binfmt elfsig_format = {
	.module = THIS_MODULE,
	.load_binary = elfsig_load_binary,
};

void elfsig_shim_binfmt_register(void)
{
	__register_binfmt(&elfsig_format, 1);
}

/*
 * No new exec enters the handler after this, and the module reference search_binary_handler()
 * holds around a running handler keeps the module loaded until it returns.
 */
void elfsig_shim_binfmt_unregister(void)
{
	unregister_binfmt(&elfsig_format);
}
