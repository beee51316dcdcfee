#!/bin/sh
# Guest half of bench/rstat: memcg churn plus memory.stat and cpu.stat
# reads with rstat-yield off and on, alternating, ROUNDS times, or, where
# the kernel has upstream's fix (native), as the kernel runs; the hold of
# cgroup_rstat_lock is measured by kmt_lockhold, outside kmemctl, unless
# BENCH_LOCKHOLD=0 (then holds, total_ns and max_ns are "-"). One line per
# run: RSTAT <possible> <off|on|native> <reads> <elapsed_ns> <holds> <total_ns> <max_ns>
. /tests/lib.sh

L=/sys/kernel/kmt_lockhold
M=/sys/kernel/kmemctl/mitigations/rstat-yield
LP=/sys/kernel/livepatch/kmemctl
G=/sys/fs/cgroup/bench
ROUNDS=${BENCH_ROUNDS:-3}
GROUPS=${BENCH_GROUPS:-8}
READS=${BENCH_READS:-50}
LOCKHOLD=${BENCH_LOCKHOLD:-1}

load_mod kmemctl probes=0
case "$(cat $M/state)" in
off) modes="off on" ;;
native) modes=native ;;
*) skip "rstat-yield: $(cat $M/reason)" ;;
esac
[ "$LOCKHOLD" = 0 ] ||
	load_mod kmt_lockhold lock=0x$(awk '$3 == "cgroup_rstat_lock" { print $1 }' /proc/kallsyms)
mkdir -p $G
possible=$(($(cut -d- -f2 /sys/devices/system/cpu/possible) + 1))

patched() {
	[ -d $LP ] && [ "$(cat $LP/transition)" = 0 ]
}

unpatched() {
	[ ! -d $LP ]
}

for r in $(seq "$ROUNDS"); do
	for mode in $modes; do
		if [ $mode != native ]; then
			write_ok $M/mode $mode
			if [ $mode = on ]; then wait_for 120 patched; else wait_for 120 unpatched; fi
		fi
		[ "$LOCKHOLD" = 0 ] || write_ok $L/reset 1
		set -- $(cgchurn -g "$GROUPS" -i "$READS" $G | sed 's/[a-z_]*=//g')
		if [ "$LOCKHOLD" = 0 ]; then
			echo "RSTAT $possible $mode $2 $3 - - -"
		else
			echo "RSTAT $possible $mode $2 $3 $(cat $L/count) $(cat $L/total_ns) $(cat $L/max_ns)"
		fi
	done
done
[ "$modes" = native ] || { write_ok $M/mode off && wait_for 120 unpatched; }
rmdir $G
[ "$LOCKHOLD" = 0 ] || unload_mod kmt_lockhold
unload_mod kmemctl
