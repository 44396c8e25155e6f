#!/bin/bash
# dracut module (/usr/lib/dracut/modules.d/90elfsig/): puts the elfsig module, its parameters
# (/etc/modprobe.d/elfsig.conf) and elfsig-guard into the initramfs, and loads them before udev
# starts (elfsig-load.sh), so that everything the root file system runs is verified.
#
# A kernel without the module fails the initramfs build rather than boot a host that is meant
# to refuse unsigned code without it: install its package first (elfsig-modules-VERSION), or
# build it (`dkms install elfsig`).

check() {
    return 0
}

depends() {
    return 0
}

installkernel() {
    # Stripping rewrites the programs the initramfs copies in, and breaks their signatures:
    # the module would refuse them (udevd, elfsig-guard) once loaded.
    # kmod/boot/dracut/90-elfsig.conf (in /etc/dracut.conf.d/) sets do_strip=no.
    if [ "$do_strip" = "yes" ]; then
        derror "elfsig: dracut would strip the signed programs it copies in: set do_strip=\"no\" (kmod/boot/dracut/90-elfsig.conf)"
        return 1
    fi
    if ! hostonly='' instmods -c elfsig; then
        derror "elfsig: no elfsig module for kernel $kernel: install elfsig-modules-$kernel, or build it (dkms install elfsig/VERSION -k $kernel)"
        return 1
    fi
}

install() {
    # dracut finds libraries with ldd, which runs the dynamic loader directly: under
    # `elfsig loader deny` the module refuses that, and the initramfs would lack them.
    if ! ldd "$(command -v elfsig-guard)" 2>/dev/null | grep -q 'libc\.so'; then
        derror "elfsig: ldd cannot list libraries: the module refuses running the dynamic loader directly (elfsig loader: deny); keep it at allow on hosts that rebuild their initramfs"
        return 1
    fi
    inst_hook pre-udev 00 "$moddir/elfsig-load.sh"
    inst_multiple elfsig-guard
    [ -f /etc/modprobe.d/elfsig.conf ] && inst_simple /etc/modprobe.d/elfsig.conf
    # The signed policy (docs/POLICY.md), loaded with the module; dd writes it in one piece.
    if [ -f /etc/elfsig/policy ]; then
        inst_simple /etc/elfsig/policy
        inst_multiple dd
    fi
    return 0
}
