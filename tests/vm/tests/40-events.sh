#!/bin/sh
# /dev/kmemctl delivers a record when a probe crosses its threshold, and
# when the soft-lockup watchdog or RCU stall detector reports.
. /tests/lib.sh

P=/sys/kernel/kmemctl/probes

load_mod kmemctl
load_mod kmt_vmalloc

# Nothing queued yet: a non-blocking read finds the stream empty, and a
# buffer smaller than one record is refused.
assert_eq "$(evread -N)" empty "fresh stream"
out=$(evread -N -s 32) && die "a 32-byte read succeeded"
assert_eq "$out" "errno=EINVAL" "32-byte read"

# Any purge takes more than 1 ns.
write_ok $P/vmap-purge/threshold_ns 1
echo 10 >/sys/kernel/kmt_vmalloc/run
out=$(evread -t 10000 -n 1) || die "no threshold event: $out"
log "$out"
case "$out" in
"seq=1 type=threshold source=vmap-purge "*" threshold=1 "*) ;;
*) die "unexpected event: $out" ;;
esac
write_ok $P/vmap-purge/threshold_ns 0

# A new reader starts at the oldest record held, then blocks in poll()
# until the next one is queued. Background purges may have queued more
# than one record above, so count what is held first.
opened() {
	ls -l /proc/$1/fd 2>/dev/null | grep -q /dev/kmemctl
}
held=$(evread -N -n 2000 | grep -c '^seq=')
evread -t 20000 -n $((held + 1)) >/tmp/ev.out &
reader=$!
wait_for 10 sh -c "[ \$(grep -c '^seq=' /tmp/ev.out) -eq $held ]"
opened $reader || die "the reader did not stay blocked: $(cat /tmp/ev.out)"
write_ok $P/vmap-purge/threshold_ns 1
echo 10 >/sys/kernel/kmt_vmalloc/run
wait $reader || die "blocked reader got no event: $(cat /tmp/ev.out)"
grep -q "^seq=$((held + 1)) type=threshold source=vmap-purge" /tmp/ev.out ||
	die "blocked reader: $(cat /tmp/ev.out)"
write_ok $P/vmap-purge/threshold_ns 0

# An open /dev/kmemctl pins the module.
evread -t 5000 -n 1000 >/dev/null &
reader=$!
wait_for 10 opened $reader
rmmod kmemctl 2>/dev/null && die "rmmod succeeded with /dev/kmemctl open"
kill $reader
wait $reader || true

# Soft lockup: spin with preemption off past 2 * watchdog_thresh.
if [ -e /proc/sys/kernel/watchdog_thresh ]; then
	load_mod kmt_lockup
	thresh=$(cat /proc/sys/kernel/watchdog_thresh)
	echo 1 >/proc/sys/kernel/watchdog_thresh
	R=/sys/module/rcupdate/parameters/rcu_cpu_stall_timeout
	[ -w $R ] && rcu_timeout=$(cat $R) && echo 3 >$R
	evread -t 60000 -n 1000 >/tmp/lockup.out &
	reader=$!
	expect_splat_begin
	echo 8 >/sys/kernel/kmt_lockup/spin
	wait_for 30 grep -q "type=softlockup" /tmp/lockup.out
	expect_splat_end
	kill $reader 2>/dev/null || true
	wait $reader || true
	log "$(grep -c type=softlockup /tmp/lockup.out) soft-lockup, $(grep -c type=rcu-stall /tmp/lockup.out) rcu-stall records"
	grep -q "type=rcu-stall" /tmp/lockup.out || log "no RCU stall reported in 8 s"
	echo "$thresh" >/proc/sys/kernel/watchdog_thresh
	[ -w $R ] && echo "$rcu_timeout" >$R
	unload_mod kmt_lockup
else
	log "no soft-lockup watchdog in this kernel"
fi

unload_mod kmt_vmalloc
unload_mod kmemctl
check_dmesg_clean
