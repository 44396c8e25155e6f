// SPDX-License-Identifier: GPL-2.0
/*
 * ftrace kept on once the module has held the guard, until it unloads. The guard's programs run
 * from BPF trampolines that ftrace patches into the LSM hooks (bpf_lsm_*: functions ftrace
 * manages). Writing 0 to kernel.ftrace_enabled, which root may, would turn every ftrace call
 * site back into a no-op, the trampolines' with them: the guard would stop checking mappings
 * and entitlements while still attached and held. The kernel refuses that write (EBUSY) while
 * an ftrace_ops marked FTRACE_OPS_FL_PERMANENT is registered, as it does for livepatch; this
 * is one, on a function of the module's own that nothing calls, so it never runs. Registering
 * it fails while ftrace is off, so the module refuses links handed over then: they would not
 * run. It stays registered after a release, until module exit: the kernel frees released links
 * in a worker, and ftrace switched off while it does leaves its records with stale flags (7.2
 * then WARNs and kills ftrace); at exit the links are gone, since the programs hold the module.
 * Without dynamic ftrace the trampolines are not ftrace's (text_poke patches them) and there
 * is nothing to hold. Called under the guard's lock (guard.c), and at exit.
 */

#include <linux/compiler.h>
#include <linux/errno.h>
#include <linux/ftrace.h>

#include "shim.h"

#ifdef CONFIG_DYNAMIC_FTRACE
/* The function the hold's ops traces: never called, never inlined. */
static noinline void elfsig_ftrace_anchor(void)
{
	barrier();
}

static void notrace elfsig_ftrace_hold_func(unsigned long ip, unsigned long parent_ip, struct ftrace_ops *op,
					    struct ftrace_regs *fregs)
{
}

static struct ftrace_ops elfsig_ftrace_hold_ops = {
	.func = elfsig_ftrace_hold_func,
	.flags = FTRACE_OPS_FL_PERMANENT,
};

static bool elfsig_ftrace_held;

/*
 * 0 once held (at once when it is already), -EAGAIN while ftrace is off
 * (kernel.ftrace_enabled=0: the kernel's EBUSY for a permanent ops), or the kernel's error.
 */
int elfsig_shim_ftrace_hold(void)
{
	int err;

	if (elfsig_ftrace_held)
		return 0;
	err = ftrace_set_filter_ip(&elfsig_ftrace_hold_ops, (unsigned long)elfsig_ftrace_anchor, 0, 1);
	if (err)
		return err;
	err = register_ftrace_function(&elfsig_ftrace_hold_ops);
	if (err)
		return err == -EBUSY ? -EAGAIN : err;
	elfsig_ftrace_held = true;
	return 0;
}

/*
 * At module exit: ftrace may be switched off again. Unregistering fails only once ftrace has
 * killed itself (a bug it found), and then leaves the ops on its list, which exit cannot help:
 * its filter is kept then, as a freed one would be followed. 6.12's ftrace_free_filter()
 * leaves the ops pointing at the hashes it freed, which is why it runs here only.
 */
void elfsig_shim_ftrace_exit(void)
{
	if (elfsig_ftrace_held && unregister_ftrace_function(&elfsig_ftrace_hold_ops))
		return;
	ftrace_free_filter(&elfsig_ftrace_hold_ops);
}
#else
int elfsig_shim_ftrace_hold(void)
{
	return 0;
}

void elfsig_shim_ftrace_exit(void) {}
#endif
