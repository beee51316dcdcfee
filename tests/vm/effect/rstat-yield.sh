#!/bin/sh
# rstat-yield's effect where it matters, many possible CPUs (run with
# --maxcpus 64): memcg churn on the online CPUs while a reader flushes
# memory.stat and cpu.stat. kmt_lockhold, outside kmemctl, times every hold
# of cgroup_rstat_lock (irqs off). With every_cpus=1 a flush holds the lock
# once per CPU instead of once for all 64: the test counts holds per flush
# (50 cpu.stat reads flush 50 times). Hold times are only logged: under TCG
# they depend on what else the machine runs (bench/rstat measures them).
# memcg's flushes keep irqs off past the lock's release when off, and must
# not when on.
. /tests/lib.sh

M=/sys/kernel/kmemctl/mitigations/rstat-yield
L=/sys/kernel/kmt_lockhold
LP=/sys/kernel/livepatch/kmemctl
G=/sys/fs/cgroup/kmemctl-effect

possible=$(($(cut -d- -f2 /sys/devices/system/cpu/possible) + 1))
[ "$possible" -ge 32 ] || skip "$possible possible CPUs; boot with --maxcpus 64"
load_mod kmemctl probes=0
[ "$(cat $M/state)" = off ] || skip "rstat-yield: $(cat $M/reason)"
load_mod kmt_lockhold lock=0x$(awk '$3 == "cgroup_rstat_lock" { print $1 }' /proc/kallsyms)
mkdir -p $G

# churn: "<reads> <elapsed_ns> <holds> <total_ns> <max_ns> <irqs_off>" for
# one cgchurn run.
churn() {
	write_ok $L/reset 1
	set -- $(cgchurn -g 8 -i 10 $G | sed 's/[a-z_]*=//g')
	echo "$2 $3 $(cat $L/count) $(cat $L/total_ns) $(cat $L/max_ns) $(cat $L/irqs_off)"
}

# holds_for_50: cgroup_rstat_lock holds for 50 flushes, by cpu.stat reads.
holds_for_50() {
	write_ok $L/reset 1
	ioloop -n 50 -b 4096 $G/cpu.stat >/dev/null
	cat $L/count
}

off_holds=$(holds_for_50)
log "off: $off_holds holds for 50 flushes, $possible possible CPUs"
assert_ge "$off_holds" 50 "holds for 50 flushes, rstat-yield off"
set -- $(churn)
off_mean=$(($4 / $3))
off_max=$5
log "off: $3 holds ($6 left irqs off), mean $off_mean ns, max $off_max ns, $1 reads in $2 ns"

write_ok $M/mode on
wait_for 120 sh -c "[ \"\$(cat $M/state)\" = on ]"
on_holds=$(holds_for_50)
log "on: $on_holds holds for 50 flushes"
assert_ge "$on_holds" $((off_holds + 50 * possible - 5)) "holds for 50 flushes, a yield after every CPU"
set -- $(churn)
on_mean=$(($4 / $3))
on_max=$5
log "on: $3 holds ($6 left irqs off), mean $on_mean ns, max $on_max ns, $1 reads in $2 ns"
assert_eq "$6" 0 "holds that left irqs off, on"
log "mean hold off/on: $((off_mean / (on_mean > 0 ? on_mean : 1)))x, max off/on: $((off_max / (on_max > 0 ? on_max : 1)))x"

write_ok $M/mode off
wait_for 120 sh -c "[ ! -d $LP ]"
rmdir $G
unload_mod kmt_lockhold
unload_mod kmemctl
check_dmesg_clean
