#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# kmemctl.ko loads, shows its version and ABI, and unloads cleanly.
# shellcheck source=tests/vm/lib.sh
. /tests/lib.sh

log "kernel $(uname -r) ($KMEMCTL_KERNEL)"
load_mod kmemctl
wait_for 5 test -d /sys/kernel/kmemctl
assert_eq "$(read_file /sys/kernel/kmemctl/version)" "$KMEMCTL_VERSION" "module version"
assert_eq "$(read_file /sys/kernel/kmemctl/abi)" "$KMEMCTL_ABI" "module ABI"
write_fails /sys/kernel/kmemctl/abi 3 "Permission denied"
unload_mod kmemctl
wait_for 5 test ! -e /sys/kernel/kmemctl
check_dmesg_clean
