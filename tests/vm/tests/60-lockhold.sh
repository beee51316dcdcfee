#!/bin/sh
# kmt_lockhold, the independent observer the mitigation tests rely on,
# sees every hold of cgroup_rstat_lock that a cpu.stat read makes.
. /tests/lib.sh

L=/sys/kernel/kmt_lockhold
G=/sys/fs/cgroup/kmemctl-lockhold

addr=$(awk '$3 == "cgroup_rstat_lock" { print $1 }' /proc/kallsyms)
case "$addr" in
"" | 0000000000000000) skip "cgroup_rstat_lock's address is not visible" ;;
esac
load_mod kmt_lockhold lock=0x$addr
mkdir -p $G
c0=$(cat $L/count)
ioloop -n 50 -b 4096 $G/cpu.stat
assert_ge $(($(cat $L/count) - c0)) 50 "holds for 50 cpu.stat reads"
[ "$(cat $L/max_ns)" -gt 0 ] || die "max_ns is 0"
[ "$(cat $L/total_ns)" -ge "$(cat $L/max_ns)" ] || die "total_ns < max_ns"
log "holds=$(cat $L/count) total_ns=$(cat $L/total_ns) max_ns=$(cat $L/max_ns)"
before=$(cat $L/count)
write_ok $L/reset 1
# The kernel's own periodic rstat flush (every 2 s, a hold or more each)
# may take the lock after the reset, the more often the longer a busy host
# makes these reads take: a count restarted from 0 stays well under the 50
# reads' 150, whatever the pace. max_ns is read first: if no hold is
# counted by the later read of count, none came before it either, and
# max_ns must be 0.
max=$(cat $L/max_ns)
after=$(cat $L/count)
[ "$after" -lt 50 ] || die "count after reset: $after (before: $before)"
[ "$after" -gt 0 ] || assert_eq "$max" 0 "max_ns after reset"
write_fails $L/reset 0 "Invalid argument"
rmdir $G
unload_mod kmt_lockhold
check_dmesg_clean
