#!/bin/sh
# A livepatch transition that cannot finish is reported, not waited on: a
# task spinning in the kernel with preemption off cannot be switched, so
# mode on returns at once, state says "transition", and after
# livepatch_stall_ms the reason names the task and /dev/kmemctl carries a
# livepatch-stall event. When the task lets go the mitigation is on. The
# same for the removal. A patching transition still stalled after
# livepatch_reverse_ms is reversed: every livepatched mitigation that is on
# is tripped (the one that started it, and kasan-flush-batch, which shares
# the patch, where this kernel has it) and the patch goes away.
. /tests/lib.sh

M=/sys/kernel/kmemctl/mitigations/rstat-yield
F=/sys/kernel/kmemctl/mitigations/kasan-flush-batch
LP=/sys/kernel/livepatch/kmemctl
SPIN=/sys/kernel/kmt_lockup/spin

load_mod kmemctl probes=0 livepatch_stall_ms=1500
[ "$(cat $M/state)" = off ] || skip "rstat-yield: $(cat $M/reason)"
load_mod kmt_lockup

# hold: a task that stays in the kernel, preemption off, until release
# (60 s at most). It lets go only once the test has seen what it holds
# up, so a busy host that slows the guest changes no outcome. Lockup and
# RCU stall reports wait longer than the longest hold meanwhile.
thresh=$(cat /proc/sys/kernel/watchdog_thresh)
rcu_stall=$(cat /sys/module/rcupdate/parameters/rcu_cpu_stall_timeout)
echo 60 >/proc/sys/kernel/watchdog_thresh
echo 100 >/sys/module/rcupdate/parameters/rcu_cpu_stall_timeout
spinning() {
	dmesg_since_mark | grep -q "kmt_lockup: spinning 60 s"
}
hold() {
	dmesg_mark
	sh -c "echo 60 >$SPIN" &
	spinner=$!
	wait_for 30 spinning
}
release() {
	echo 1 >/sys/kernel/kmt_lockup/release
	wait $spinner
}

hold
write_ok $M/mode on
assert_eq "$(cat $M/state)" transition "state while tasks are switched"
wait_for 30 sh -c "grep -q stalled $M/reason"
reason=$(cat $M/reason)
log "reason: $reason"
assert_eq "$(cat $M/state)" transition "state while stalled"
case "$reason" in
"transition: livepatch switching tasks stalled for "*" ms: "*" tasks not switched, first sh:$spinner") ;;
*) die "reason does not name the spinning task $spinner: $reason" ;;
esac
evread -N -n 10 >/tmp/ev.on
log "event: $(cat /tmp/ev.on)"
grep -q "type=livepatch-stall source=rstat-yield .*threshold=1500000000 flags=1 pid=$spinner comm=sh" \
	/tmp/ev.on || die "event: $(cat /tmp/ev.on)"
release
wait_for 30 sh -c "[ \"\$(cat $M/state)\" = on ]"
assert_eq "$(cat $M/reason)" "on: enacted" "reason once the spinner is gone"
assert_eq "$(cat $LP/transition)" 0 "livepatch transition"

hold
write_ok $M/mode off
assert_eq "$(cat $M/state)" off "state after mode off"
wait_for 30 sh -c "grep -q stalled $M/reason"
log "reason: $(cat $M/reason)"
case "$(cat $M/reason)" in
"off: livepatch removal stalled for "*"first sh:$spinner") ;;
*) die "removal reason: $(cat $M/reason)" ;;
esac
write_fails $M/mode on "Device or resource busy"
evread -N -n 10 >/tmp/ev.off
grep -q "type=livepatch-stall source=rstat-yield .*flags=0 pid=$spinner" /tmp/ev.off ||
	die "removal event: $(cat /tmp/ev.off)"
release
wait_for 30 sh -c "[ ! -d $LP ]"
assert_eq "$(cat $M/reason)" "off: supported on this kernel" "reason after the removal"

# Reversal: the default waits a minute; 3 s here, and the hold outlasts it.
assert_eq "$(cat /sys/module/kmemctl/parameters/livepatch_reverse_ms)" 60000 "livepatch_reverse_ms"
echo 3000 >/sys/module/kmemctl/parameters/livepatch_reverse_ms
flush=0
[ "$(cat $F/state)" = off ] && flush=1
hold
write_ok $M/mode on
assert_eq "$(cat $M/state)" transition "state while tasks are switched"
[ $flush = 1 ] && write_ok $F/mode on
wait_for 30 sh -c "[ \"\$(cat $M/state)\" = tripped ]"
reason=$(cat $M/reason)
log "reason: $reason"
case "$reason" in
"tripped: livepatch patching stalled for "*" ms, limit 3000 ms, reversed: "*" tasks not switched, first sh:$spinner") ;;
*) die "reason after the reversal: $reason" ;;
esac
assert_eq "$(cat $M/mode)" off "mode after the reversal"
grep -qx "trips 1" $M/stats || die "stats: $(cat $M/stats)"
dmesg_since_mark | grep -q "livepatch: patching stalled for .* ms, past livepatch_reverse_ms 3000: reversing it" ||
	die "no dmesg line for the reversal"
evread -N -n 100 >/tmp/ev.rev
grep -q "type=trip source=rstat-yield .*threshold=3000000000 flags=6 pid=$spinner comm=sh" /tmp/ev.rev ||
	die "TRIP record: $(cat /tmp/ev.rev)"
if [ $flush = 1 ]; then
	wait_for 30 sh -c "[ \"\$(cat $F/state)\" = tripped ]"
	log "kasan-flush-batch: $(cat $F/reason)"
	grep -q "type=trip source=kasan-flush-batch .*flags=6 " /tmp/ev.rev ||
		die "no TRIP record for kasan-flush-batch: $(cat /tmp/ev.rev)"
fi
write_fails $M/mode on "Device or resource busy"
release
wait_for 30 sh -c "[ ! -d $LP ]"
write_ok $M/reset 1
[ $flush = 1 ] && write_ok $F/reset 1
write_ok $M/mode on
wait_for 30 sh -c "[ \"\$(cat $M/state)\" = on ]"
write_ok $M/mode off
wait_for 30 sh -c "[ ! -d $LP ]"

echo "$thresh" >/proc/sys/kernel/watchdog_thresh
echo "$rcu_stall" >/sys/module/rcupdate/parameters/rcu_cpu_stall_timeout
unload_mod kmt_lockup
unload_mod kmemctl
check_dmesg_clean
