#!/bin/sh
# For scripts/kmod-verdicts: with the records the module ships, each
# mitigation's state and reason on this build under this CPU model, on the
# console for the host's table.
. /tests/lib.sh

load_mod kmemctl
echo "KMEMCTL-VERDICT-BUILD $(sed -n 's/^build_id //p' /sys/kernel/kmemctl/build)"
verdicts KMEMCTL-VERDICT
unload_mod kmemctl
check_dmesg_clean
