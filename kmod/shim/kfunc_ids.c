// SPDX-License-Identifier: GPL-2.0
/*
 * Whether the kfuncs' BTF IDs that resolve_btfids wrote into the module at build time (guard.c's
 * set and list) are the IDs the running kernel asks the set's filter about. They are when the
 * module's BTF was made against this kernel's vmlinux, as its build does it (kmod/dkms/build and
 * `cargo xtask build-kmod` turn off pahole's distilled base, which out-of-tree builds otherwise
 * get from 6.11 on): the kernel then takes the module's type IDs as they are.
 *
 * With a distilled base, the kernel renumbers the module's types when it loads them onto
 * vmlinux's and asks the filter with the new IDs, which a module cannot map back: the base is
 * freed before module init, and nothing a module may call names the renumbering. A filter that
 * compared the old IDs would recognise none of its kfuncs. So such a module does not offer them
 * (the guard is unavailable, and says why). A module built against another build of the same
 * kernel release would name vmlinux's types by IDs this kernel gives to other types: the filter
 * checks the types the kfuncs take, and refuses every kfunc when one is not what it was.
 */

#include <linux/binfmts.h>
#include <linux/bpf.h>
#include <linux/btf.h>
#include <linux/btf_ids.h>
#include <linux/dcache.h>
#include <linux/fs.h>
#include <linux/key.h>
#include <linux/mm_types.h>
#include <linux/module.h>
#include <linux/printk.h>
#include <linux/sched.h>

#include "shim.h"

/* vmlinux's types that the kfuncs take, as the module's build numbered them. */
BTF_ID_LIST(elfsig_kfunc_arg_types)
BTF_ID(struct, file)
BTF_ID(struct, vm_area_struct)
BTF_ID(struct, key)
BTF_ID(struct, linux_binprm)
BTF_ID(struct, task_struct)
BTF_ID(struct, qstr)
BTF_ID(struct, bpf_prog)

/* Their sizes here, in the same order: what this kernel's BTF must say of those IDs. */
static const u32 elfsig_kfunc_arg_sizes[] = {
	sizeof(struct file),
	sizeof(struct vm_area_struct),
	sizeof(struct key),
	sizeof(struct linux_binprm),
	sizeof(struct task_struct),
	sizeof(struct qstr),
	sizeof(struct bpf_prog),
};

/*
 * 0, or ELFSIG_GUARD_DISTILLED_BTF when the kernel renumbered the module's BTF (it had a
 * distilled base; only its size is left to see by module init).
 */
int elfsig_shim_kfunc_ids_init(void)
{
#ifdef CONFIG_DEBUG_INFO_BTF_MODULES
	if (THIS_MODULE->btf_base_data_size)
		return ELFSIG_GUARD_DISTILLED_BTF;
#endif
	return 0;
}

/*
 * Whether vmlinux's BTF, as `prog` (an LSM program: its hooks are vmlinux's functions) was
 * checked against, gives the kfuncs' argument types the IDs the module was built with.
 */
bool elfsig_shim_kfunc_ids_match(const struct bpf_prog *prog)
{
	const struct btf *vmlinux = prog->aux->attach_btf;
	int i;

	if (!vmlinux)
		return false;
	for (i = 0; i < ARRAY_SIZE(elfsig_kfunc_arg_sizes); i++) {
		const struct btf_type *type = btf_type_by_id(vmlinux, elfsig_kfunc_arg_types[i]);

		if (!type || BTF_INFO_KIND(type->info) != BTF_KIND_STRUCT ||
		    type->size != elfsig_kfunc_arg_sizes[i]) {
			pr_err_once("elfsig: this module's BTF was made for another build of the kernel (its ID %u for a kfunc's argument is another type here): no BPF program may call its kfuncs; rebuild it for this kernel\n",
				    elfsig_kfunc_arg_types[i]);
			return false;
		}
	}
	return true;
}
