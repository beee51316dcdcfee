#!/bin/sh
# Why tests/vm/run uses single-threaded TCG by default: a tracefs kprobe on
# hot functions, armed and disarmed ten times each while both vCPUs copy
# and read /proc. `tests/vm/run --tcg single tests/vm/tcg/kprobe-hot.sh`
# passes in seconds; with --tcg multi the guest stops making progress and
# is killed at its timeout (QEMU 7.2, Debian 6.1 and 6.12).
. /tests/lib.sh

T=/sys/kernel/tracing
[ -e $T/kprobe_events ] || mount -t tracefs nodev $T
load_mod kmt_usercopy
(
	i=0
	while [ $i -lt 400 ]; do
		cat /proc/self/status >/dev/null
		i=$((i + 1))
	done
) &
(
	i=0
	while [ $i -lt 400 ]; do
		cat /proc/meminfo >/dev/null
		i=$((i + 1))
	done
) &
n=0
for f in _raw_spin_lock __check_object_size kmem_cache_alloc_noprof kfree; do
	grep -qw "$f" /proc/kallsyms || continue
	for r in 1 2 3 4 5 6 7 8 9 10; do
		echo "p:hot $f" >$T/kprobe_events
		echo 1 >$T/events/kprobes/hot/enable
		echo 0 >$T/events/kprobes/hot/enable
		echo "-:hot" >>$T/kprobe_events
		n=$((n + 1))
	done
done
wait
log "armed and disarmed $n kprobes on hot functions"
assert_ge "$n" 20 "kprobes armed"
unload_mod kmt_usercopy
check_dmesg_clean
