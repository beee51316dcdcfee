#!/bin/sh
# rstat-yield, judged by kmt_lockhold rather than by kmemctl: each flush
# holds cgroup_rstat_lock once when off, and once more per every_cpus CPUs
# when on. On 6.1, memcg's flushes (memory.stat under churn) run with irqs
# off around the whole flush (cgroup_rstat_flush_irqsafe()) when off, so
# no release of the lock turns them back on; when on, every release does.
# From 6.5 memcg's flushes sleep, and no release leaves irqs off either way.
# Mode flips on, off and on again; rmmod waits for the livepatch to be gone.
. /tests/lib.sh

M=/sys/kernel/kmemctl/mitigations/rstat-yield
L=/sys/kernel/kmt_lockhold
LP=/sys/kernel/livepatch/kmemctl
G=/sys/fs/cgroup/kmemctl-yield

load_mod kmemctl probes=0
case "$(cat $M/state)" in
off) ;;
native | unsupported) skip "rstat-yield: $(cat $M/reason)" ;;
*) die "rstat-yield state at load: $(cat $M/state)" ;;
esac
load_mod kmt_lockhold lock=0x$(awk '$3 == "cgroup_rstat_lock" { print $1 }' /proc/kallsyms)
mkdir -p $G
cpus=$(($(cut -d- -f2 /sys/devices/system/cpu/possible) + 1))

# holds_per_flush: cgroup_rstat_lock holds for 50 flushes, by cpu.stat reads.
holds_for_50() {
	write_ok $L/reset 1
	ioloop -n 50 -b 4096 $G/cpu.stat >/dev/null
	cat $L/count
}
patched() {
	[ -d $LP ] && [ "$(cat $LP/transition)" = 0 ]
}

# memcg_irqs_off: releases of the lock that left irqs off, under memcg churn
# and stat reads; then the holds.
memcg_irqs_off() {
	write_ok $L/reset 1
	cgchurn -g 4 -i 50 $G >/dev/null
	echo "$(cat $L/irqs_off) $(cat $L/count)"
}

off=$(holds_for_50)
log "off: $off holds for 50 flushes, $cpus possible CPUs"
assert_ge "$off" 50 "holds with rstat-yield off"
set -- $(memcg_irqs_off)
log "off, memcg churn: $1 of $2 releases left irqs off"
if grep -q ' cgroup_rstat_flush_irqsafe$' /proc/kallsyms; then
	assert_ge "$1" 1 "releases that left irqs off, rstat-yield off"
else
	assert_eq "$1" 0 "releases that left irqs off, sleepable memcg flushes"
fi

write_ok $M/mode on
case "$(cat $M/state)" in
transition | on) ;;
*) die "state after mode on: $(cat $M/state)" ;;
esac
wait_for 60 patched
wait_for 5 sh -c "[ \"\$(cat $M/state)\" = on ]"
assert_eq "$(cat $M/reason)" "on: enacted" "reason once patched"
on=$(holds_for_50)
log "on, every_cpus=1: $on holds"
assert_ge "$on" $((off + 50 * cpus - 5)) "holds with a yield after every CPU"
set -- $(memcg_irqs_off)
log "on, memcg churn: $1 of $2 releases left irqs off"
assert_eq "$1" 0 "releases that left irqs off, rstat-yield on"

write_ok $M/params every_cpus=$cpus
once=$(holds_for_50)
log "on, every_cpus=$cpus: $once holds"
assert_ge "$once" $((off + 45)) "holds with one yield per flush"
assert_ge $((off + 65)) "$once" "holds with one yield per flush"

rmmod kmemctl 2>/dev/null && die "rmmod succeeded with rstat-yield on"

log "longest timed call: $(sed -n 's/^call_max_us //p' $M/stats) us of running time"
write_ok $M/mode off
assert_eq "$(cat $M/state)" off "state after mode off"
wait_for 60 sh -c "[ ! -d $LP ]"
back=$(holds_for_50)
log "off again: $back holds"
assert_ge $((off + 10)) "$back" "holds after mode off"

# A fresh patch each time it goes on.
write_ok $M/params every_cpus=1
write_ok $M/mode on
wait_for 60 patched
assert_ge "$(holds_for_50)" $((off + 50 * cpus - 5)) "holds after on again"
write_ok $M/mode off
wait_for 60 sh -c "[ ! -d $LP ]"
grep -q "enables 2" /sys/kernel/kmemctl/mitigations/rstat-yield/stats || die "stats: $(cat $M/stats)"

rmdir $G
unload_mod kmt_lockhold
unload_mod kmemctl
check_dmesg_clean
