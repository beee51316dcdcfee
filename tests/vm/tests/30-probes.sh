#!/bin/sh
# Each probe counts the real events of its workload, stops counting when
# disabled, and zeroes on reset.
. /tests/lib.sh

P=/sys/kernel/kmemctl/probes

count() {
	cat $P/$1/count
}

# grew PROBE BEFORE: the probe's count went up since BEFORE.
grew() {
	[ "$(count "$1")" -gt "$2" ]
}

load_mod kmemctl
load_mod kmt_usercopy
load_mod kmt_vmalloc

# usercopy-vmalloc: every copy_to_user() from vmalloc memory is one lookup.
c0=$(count usercopy-vmalloc)
echo 1000 >/sys/module/kmt_usercopy/parameters/copies
ioloop -n 5 -b 4096 /dev/kmt_usercopy
c1=$(count usercopy-vmalloc)
assert_ge $((c1 - c0)) 5000 "usercopy-vmalloc lookups for 5000 copies"
# The 200 lookups of vfree() are not usercopy checks.
echo 200 >/sys/kernel/kmt_vmalloc/run
assert_ge 50 $(($(count usercopy-vmalloc) - c1)) "usercopy-vmalloc lookups during vfree()s"
[ "$(cat $P/usercopy-vmalloc/max_ns)" -gt 0 ] || die "usercopy-vmalloc max_ns is 0"

# vmap-purge: each run write ends in one purge with at least one flush.
c0=$(count vmap-purge)
f0=$(awk '{ n += $2 } END { print n + 0 }' $P/vmap-purge/flushes_hist)
for i in 1 2 3; do
	echo 100 >/sys/kernel/kmt_vmalloc/run
done
assert_ge $(($(count vmap-purge) - c0)) 3 "vmap-purge purges for 3 runs"
f1=$(awk '{ n += $2 } END { print n + 0 }' $P/vmap-purge/flushes_hist)
assert_ge $((f1 - f0)) 3 "vmap-purge flush-count samples"
assert_ge "$(cat $P/vmap-purge/flushes_max)" 1 "vmap-purge flushes_max"

# rstat-flush: reading a non-root cgroup's cpu.stat flushes rstat.
G=/sys/fs/cgroup/kmemctl-test
mkdir -p $G
c0=$(count rstat-flush)
ioloop -n 50 -b 4096 $G/cpu.stat
assert_ge $(($(count rstat-flush) - c0)) 50 "rstat-flush flushes for 50 cpu.stat reads"
[ -n "$(cat $P/rstat-flush/irqoff_hist)" ] || die "rstat-flush recorded no irqs-off stretch"
assert_ge "$(cat $P/rstat-flush/irqoff_max)" 1 "rstat-flush irqoff_max"
[ "$(cat $P/rstat-flush/irqoff_max)" -le "$(cat $P/rstat-flush/max_ns)" ] ||
	die "longest irqs-off stretch exceeds the longest flush"
cgchurn -g 8 -i 20 /sys/fs/cgroup
rmdir $G

# tlb-shootdown: munmap in a process running on two CPUs sends IPIs. Every
# call sends at most one IPI to each other CPU, and every TLB-shootdown IPI
# a CPU receives (/proc/interrupts) was sent by such a call. A call counts
# when it returns: the calls are read before and after the IPIs, so a call
# in flight at the start counts; one in flight at the end (its IPI seen,
# its return not yet) is the one call allowed for.
tlb_ipis() {
	awk '$1 == "TLB:" { for (i = 2; i <= NF && $i ~ /^[0-9]+$/; i++) n += $i }
		END { print n + 0 }' /proc/interrupts
}
cpus=$(nproc)
if [ "$cpus" -ge 2 ]; then
	c0=$(count tlb-shootdown)
	i0=$(tlb_ipis)
	tlbstorm -i 200 -t 2
	ipis=$(($(tlb_ipis) - i0))
	calls=$(($(count tlb-shootdown) - c0))
	log "tlb-shootdown: $calls calls, $ipis IPIs received"
	assert_ge "$ipis" 1 "TLB-shootdown IPIs received during 200 munmaps"
	assert_ge $(((calls + 1) * (cpus - 1))) "$ipis" "tlb-shootdown calls for $ipis IPIs"
else
	log "one CPU: no remote TLB flushes to count"
fi

# Disabled probes count nothing; reset zeroes everything.
write_ok $P/vmap-purge/enabled 0
c0=$(count vmap-purge)
echo 100 >/sys/kernel/kmt_vmalloc/run
assert_eq "$(count vmap-purge)" "$c0" "vmap-purge count while disabled"
write_ok $P/vmap-purge/enabled 1
echo 100 >/sys/kernel/kmt_vmalloc/run
grew vmap-purge "$c0" || die "vmap-purge does not count after re-enable"

for id in rstat-flush usercopy-vmalloc vmap-purge tlb-shootdown; do
	log "$id: count=$(count $id) sum_ns=$(cat $P/$id/sum_ns) max_ns=$(cat $P/$id/max_ns) missed=$(cat $P/$id/missed)"
	write_ok $P/$id/enabled 0
	write_ok $P/$id/reset 1
	assert_eq "$(count $id)" 0 "$id: count after reset"
	assert_eq "$(cat $P/$id/sum_ns)" 0 "$id: sum_ns after reset"
	assert_eq "$(cat $P/$id/max_ns)" 0 "$id: max_ns after reset"
	[ -z "$(cat $P/$id/hist)" ] || die "$id: hist not empty after reset"
done
assert_eq "$(cat $P/vmap-purge/flushes_max)" 0 "flushes_max after reset"

unload_mod kmt_vmalloc
unload_mod kmt_usercopy
unload_mod kmemctl
check_dmesg_clean
