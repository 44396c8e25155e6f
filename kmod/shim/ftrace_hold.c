// SPDX-License-Identifier: GPL-2.0
/*
 * ftrace kept on while the module holds the guard. The guard's programs run from BPF
 * trampolines that ftrace patches into the LSM hooks (bpf_lsm_*: functions ftrace manages).
 * Writing 0 to kernel.ftrace_enabled, which root may, would turn every ftrace call site back
 * into a no-op, the trampolines' with them: the guard would stop checking mappings and
 * entitlements while still attached and held. The kernel refuses that write (EBUSY) while an
 * ftrace_ops marked FTRACE_OPS_FL_PERMANENT is registered, as it does for livepatch; this is
 * one, on a function of the module's own that nothing calls, so it never runs. Registering it
 * fails while ftrace is off, so the module refuses links handed over then: they would not run.
 * Without dynamic ftrace the trampolines are not ftrace's (text_poke patches them) and there
 * is nothing to hold.
 */

#include <linux/compiler.h>
#include <linux/errno.h>
#include <linux/ftrace.h>
#include <linux/module.h>

#include "shim.h"

#ifdef CONFIG_DYNAMIC_FTRACE
/* The function the hold's ops traces: never called, never inlined. */
noinline void elfsig_shim_ftrace_anchor(void)
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

/*
 * 0, -EAGAIN while ftrace is off (kernel.ftrace_enabled=0), or the kernel's error. The filter
 * stays set from one hold to the next, and goes at module exit: ftrace_free_filter() leaves
 * the ops pointing at the hashes it freed, for ops that are not used again.
 */
int elfsig_shim_ftrace_hold(void)
{
	int err;

	err = ftrace_set_filter_ip(&elfsig_ftrace_hold_ops, (unsigned long)elfsig_shim_ftrace_anchor, 0, 1);
	if (err)
		return err;
	err = register_ftrace_function(&elfsig_ftrace_hold_ops);
	return err == -EBUSY ? -EAGAIN : err;
}

/*
 * Lets ftrace be switched off again: the guard's links are gone. Unregistering waits for every
 * task to leave the ops' trampoline (RCU tasks), which may take a while. It fails only once
 * ftrace has killed itself (a bug it found): the ops stays on its list then, so the module
 * must stay loaded.
 */
void elfsig_shim_ftrace_release(void)
{
	if (unregister_ftrace_function(&elfsig_ftrace_hold_ops))
		__module_get(THIS_MODULE);
}

/* At module exit, the guard released: the ops' filter, if it was ever set. */
void elfsig_shim_ftrace_exit(void)
{
	ftrace_free_filter(&elfsig_ftrace_hold_ops);
}
#else
int elfsig_shim_ftrace_hold(void)
{
	return 0;
}

void elfsig_shim_ftrace_release(void) {}

void elfsig_shim_ftrace_exit(void) {}
#endif
