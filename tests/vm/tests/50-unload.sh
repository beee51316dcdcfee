#!/bin/sh
# kmemctl unloads cleanly at any time, including while every probe fires
# under load and events are being queued.
. /tests/lib.sh

P=/sys/kernel/kmemctl/probes
G=/sys/fs/cgroup/kmemctl-unload

load_mod kmt_usercopy
load_mod kmt_vmalloc
mkdir -p $G

# Background load on every probed path, until told to stop. vmalloc churn
# comes in small runs, each purged at once: on a KASAN_VMALLOC kernel a
# purge flushes the TLB once per area, and the churn kthread's big batches
# starve the guest.
touch /tmp/load.run
(while [ -e /tmp/load.run ]; do ioloop -n 5 -w 20 /sys/kernel/kmt_vmalloc/run >/dev/null; done) &
l0=$!
(while [ -e /tmp/load.run ]; do ioloop -n 20 -b 4096 /dev/kmt_usercopy >/dev/null; done) &
l1=$!
(while [ -e /tmp/load.run ]; do ioloop -n 20 -b 4096 $G/cpu.stat >/dev/null; done) &
l2=$!
(while [ -e /tmp/load.run ]; do tlbstorm -i 50 -t 2 >/dev/null; done) &
l3=$!

for round in 1 2 3 4 5; do
	load_mod kmemctl
	for p in rstat-flush usercopy-vmalloc vmap-purge tlb-shootdown; do
		write_ok $P/$p/threshold_ns 1
	done
	evread -t 3000 -n 100000 >/dev/null &
	reader=$!
	wait_for 20 sh -c "[ \$(cat $P/usercopy-vmalloc/count) -gt 100 ] &&
		[ \$(cat $P/vmap-purge/count) -gt 0 ] && [ \$(cat $P/rstat-flush/count) -gt 0 ]"
	# Toggle probes while their handlers run.
	write_ok $P/usercopy-vmalloc/enabled 0
	write_ok $P/usercopy-vmalloc/enabled 1
	kill $reader 2>/dev/null || true
	wait $reader || true
	log "round $round: usercopy=$(cat $P/usercopy-vmalloc/count) purge=$(cat $P/vmap-purge/count) rstat=$(cat $P/rstat-flush/count) tlb=$(cat $P/tlb-shootdown/count)"
	unload_mod kmemctl
done

rm /tmp/load.run
wait $l0 $l1 $l2 $l3 || true
rmdir $G
unload_mod kmt_vmalloc
unload_mod kmt_usercopy
check_dmesg_clean
