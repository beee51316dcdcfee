#!/bin/sh
# For tests/vm/builds.sh: the module's build file, and where the kernel
# is, printed between markers on the console.
. /tests/lib.sh

KMEMCTL_GUEST_RECORD=0
load_mod kmemctl
echo "KMEMCTL-BUILD-BEGIN"
echo "text $(awk '$3 == "_text" { print $1 }' /proc/kallsyms)"
cat /sys/kernel/kmemctl/build
echo "KMEMCTL-BUILD-END"
unload_mod kmemctl
check_dmesg_clean
