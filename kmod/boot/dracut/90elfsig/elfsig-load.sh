#!/bin/sh
# dracut pre-udev hook: loads the elfsig module with the parameters from /etc/modprobe.d (and
# trust_initramfs=1: the initramfs's own files, which ran unchecked until now and loaded the
# module, are not verified again; everything else is), then
# loads the signed policy (/etc/elfsig/policy) when there is one, and attaches its mapping guard
# when elfsig-guard is in the initramfs. `elfsig=off` on the kernel
# command line skips both, for one boot. A module that fails to load stops the boot (dracut's
# die: a halt, or a shell with rd.shell) rather than boot unprotected; so does a guard that
# fails to attach once the module requires it (require_mmap_guard=1). /run/elfsig-initramfs
# (which survives switch_root) records what loaded the module. Sourced by dracut's init: no
# exit here.

type getarg >/dev/null 2>&1 || . /lib/dracut-lib.sh

if [ "$(getarg elfsig=)" = "off" ]; then
    warn "elfsig: not loaded (elfsig=off on the kernel command line)"
elif ! modprobe elfsig trust_initramfs=1; then
    die "elfsig: the module did not load; boot with elfsig=off to go on without it"
else
    [ -d /sys/kernel/security/elfsig ] || mount -t securityfs securityfs /sys/kernel/security
    # The signed policy, in one write, before anything from the root file system runs.
    if [ -e /etc/elfsig/policy ] &&
        ! dd if=/etc/elfsig/policy of=/sys/kernel/security/elfsig/policy bs=4194304 count=1 conv=notrunc 2>/dev/null; then
        die "elfsig: /etc/elfsig/policy was not loaded (dmesg says why when the module refused it); boot with elfsig=off to go on without it"
    fi
    if ! elfsig-guard; then
        if [ "$(cat /sys/module/elfsig/parameters/require_mmap_guard 2>/dev/null)" = "Y" ]; then
            die "elfsig: the mapping guard did not attach, and require_mmap_guard=1"
        fi
        warn "elfsig: the mapping guard did not attach: shared libraries are not checked"
    fi
    mkdir -p /run
    echo dracut >/run/elfsig-initramfs
fi
