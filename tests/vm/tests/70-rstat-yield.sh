#!/bin/sh
# rstat-yield on 6.1, judged by kmt_lockhold rather than by kmemctl: each
# flush holds cgroup_rstat_lock once when off, and once more per
# every_cpus CPUs when on. Mode flips on, off and on again; rmmod waits for
# the livepatch to be gone.
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

off=$(holds_for_50)
log "off: $off holds for 50 flushes, $cpus possible CPUs"
assert_ge "$off" 50 "holds with rstat-yield off"

write_ok $M/mode on
assert_eq "$(cat $M/state)" on "state after mode on"
assert_eq "$(cat $M/reason)" "on: enacted" "reason after mode on"
wait_for 60 patched
on=$(holds_for_50)
log "on, every_cpus=1: $on holds"
assert_ge "$on" $((off + 50 * cpus - 5)) "holds with a yield after every CPU"

write_ok $M/params every_cpus=$cpus
once=$(holds_for_50)
log "on, every_cpus=$cpus: $once holds"
assert_ge "$once" $((off + 45)) "holds with one yield per flush"
assert_ge $((off + 55)) "$once" "holds with one yield per flush"

rmmod kmemctl 2>/dev/null && die "rmmod succeeded with rstat-yield on"

write_ok $M/mode off
assert_eq "$(cat $M/state)" off "state after mode off"
wait_for 60 sh -c "[ ! -d $LP ]"
back=$(holds_for_50)
log "off again: $back holds"
assert_ge $((off + 5)) "$back" "holds after mode off"

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
