#!/bin/sh
# The breaker: with a mitigation on and no agent running, the module turns
# it off by itself on each cause it can be shown here: a replacement call
# longer than trip_call_ms (returned, and still running, also on a CPU that
# came online while the mitigation was on; only the time it ran counts, not
# time preempted or asleep), a soft lockup inside a replacement (that
# mitigation alone) and outside one (every mitigation that went on within
# breaker_window_s), an RCU stall and a hung task. Each time: state
# tripped, mode off, the cause in reason and dmesg, stats trips + 1, a TRIP
# record with the cause in flags; mode on refused with EBUSY until "1" is
# written to reset. breaker=0 trips nothing.
# Hard lockups need the NMI watchdog, which QEMU's TCG cannot drive.
. /tests/lib.sh

K=/sys/kernel/kmemctl/mitigations
PARAMS=/sys/module/kmemctl/parameters
U=/sys/module/kmt_usercopy/parameters
LP=/sys/kernel/livepatch/kmemctl
UC=usercopy-fastpath
RS=rstat-yield

load_mod kmemctl probes=0
[ "$(cat $K/$UC/state)" = off ] || skip "$UC: $(cat $K/$UC/reason)"
rstat=0
[ "$(cat $K/$RS/state)" = off ] && rstat=1
load_mod kmt_usercopy pages=2
load_mod kmt_lockup
assert_eq "$(cat $PARAMS/breaker)" Y "breaker at load"
assert_eq "$(cat $PARAMS/breaker_window_s)" 600 "breaker_window_s at load"
grep -qx "trip_call_ms=1000" $K/$UC/params || die "$UC params: $(cat $K/$UC/params)"

state_is() {
	[ "$(cat $K/$1/state)" = "$2" ]
}

# on M: mode on, and wait until it is (a livepatch switches tasks first,
# after the previous patch is gone).
on() {
	wait_for 60 sh -c "[ ! -d $LP ] || [ \"\$(cat $K/$1/state)\" != off ]"
	write_ok $K/$1/mode on
	wait_for 60 state_is "$1" on
}

trips() {
	sed -n 's/^trips //p' $K/$1/stats
}

# tripped M TRIPS FLAGS REASON_PATTERN: M was tripped, for the TRIPS-th
# time, with cause FLAGS; its last TRIP record is left in $record.
tripped() {
	local reason
	wait_for 30 state_is "$1" tripped
	assert_eq "$(cat $K/$1/mode)" off "$1: mode after the trip"
	reason=$(cat $K/$1/reason)
	log "$1: $reason"
	# shellcheck disable=SC2254 # the pattern is the point
	case "$reason" in
	$4) ;;
	*) die "$1: reason '$reason' does not match '$4'" ;;
	esac
	assert_eq "$(trips "$1")" "$2" "$1: trips"
	dmesg_since_mark | grep -qF "kmemctl: $1: $reason" || die "$1: no dmesg line for the trip"
	evread -N -n 1000 | grep " type=trip source=$1 " >/tmp/trips.out || true
	assert_eq "$(grep -c . /tmp/trips.out)" "$2" "$1: TRIP records"
	record=$(tail -n 1 /tmp/trips.out)
	log "$record"
	case "$record" in
	*" flags=$3 "*) ;;
	*) die "$1: TRIP record without flags=$3: $record" ;;
	esac
}

# reset M: back to off, and counted.
reset() {
	local resets
	resets=$(sed -n 's/^resets //p' $K/$1/stats)
	write_ok $K/$1/reset 1
	assert_eq "$(cat $K/$1/state)" off "$1: state after reset"
	assert_eq "$(sed -n 's/^resets //p' $K/$1/stats)" $((resets + 1)) "$1: resets"
}

# One copy of 256 bytes across the buffer's page boundary: usercopy-fastpath
# looks its area up, and kmt_usercopy holds that lookup for stall_ms.
echo 256 >$U/size
echo 4000 >$U/offset
echo 1 >$U/copies
slow_copy() {
	echo "$1" >$U/stall_ms
	ioloop -n 1 -b 256 /dev/kmt_usercopy >/dev/null
}

# A slow call with the breaker off changes nothing.
on $UC
write_ok $K/$UC/params trip_call_ms=20
echo 0 >$PARAMS/breaker
slow_copy 100
assert_eq "$(cat $K/$UC/state)" on "$UC with breaker=0"
echo 1 >$PARAMS/breaker

# A call that ran past trip_call_ms, seen when it returns (or by the timer,
# when it comes first).
dmesg_mark
slow_copy 100
tripped $UC 1 5 "tripped: a __check_object_size replacement call * ms, limit 20 ms"
case "$record" in
*" threshold=20000000 "*) ;;
*) die "the record's threshold is not 20 ms: $record" ;;
esac
value=$(echo "$record" | sed 's/.* value=\([0-9]*\) .*/\1/')
assert_ge "$value" 20000000 "the record's value"

# Tripped: mode on is refused until reset; mode off is allowed and changes nothing.
dmesg_mark
write_fails $K/$UC/mode on "Device or resource busy"
dmesg_since_mark | grep -q "kmemctl: $UC: mode on refused: tripped: .*write 1 to reset" ||
	die "no dmesg reason for the refused mode on"
write_ok $K/$UC/mode off
assert_eq "$(cat $K/$UC/state)" tripped "state after mode off"
write_fails $K/$UC/reset 0 "Invalid argument"
write_fails $K/$UC/reset yes "Invalid argument"
assert_eq "$(cat $K/$UC/state)" tripped "state after bad resets"
reset $UC
assert_eq "$(cat $K/$UC/reason)" "off: reset after a trip" "reason after reset"
write_ok $K/$UC/reset 1
assert_eq "$(sed -n 's/^resets //p' $K/$UC/stats)" 1 "a reset of an untripped mitigation counts nothing"
on $UC

# running_trip CPUS TRIPS CPU: a call on CPUS (a taskset list) that does
# not return is tripped by the timer on CPU while it runs, for the
# TRIPS-th time.
running_trip() {
	local reader evr
	write_ok $K/$UC/params trip_call_ms=300
	dmesg_mark
	echo 6000 >$U/stall_ms
	taskset -c "$1" ioloop -n 1 -b 256 /dev/kmt_usercopy >/dev/null &
	reader=$!
	evread -t 30000 -n 1000 >/tmp/ev.out &
	evr=$!
	wait_for 30 grep -q " type=trip source=$UC " /tmp/ev.out
	kill -0 $reader 2>/dev/null || die "the call had returned before its trip record came"
	kill $evr 2>/dev/null || true
	wait $reader
	tripped $UC "$2" 5 "tripped: a __check_object_size replacement call on CPU $3 has run * ms, limit 300 ms"
	echo 0 >$U/stall_ms
	reset $UC
	write_ok $K/$UC/params trip_call_ms=1000
}

# A call that does not return: the timer trips it while it runs.
running_trip 0-1 2 "*"

# Only the time a call ran counts: on CPU 0 shared with two CPU hogs, a
# call that runs 700 ms takes about three times as long and does not trip;
# neither does one asleep for 1500 ms; one that runs 1300 ms does.
on $UC
taskset -c 0 sh -c 'while :; do :; done' &
hog1=$!
taskset -c 0 sh -c 'while :; do :; done' &
hog2=$!
echo yield >$U/stall_how
echo 700 >$U/stall_ms
taskset -c 0 ioloop -n 1 -b 256 /dev/kmt_usercopy >/dev/null
log "preempted: ran $(cat $U/stalled_run_ms) ms in $(cat $U/stalled_wall_ms) ms"
assert_ge "$(cat $U/stalled_wall_ms)" 1001 "the preempted call's wall time (it must pass trip_call_ms)"
assert_eq "$(cat $K/$UC/state)" on "$UC after a call preempted past trip_call_ms"
max=$(sed -n 's/^call_max_us //p' $K/$UC/stats)
assert_ge "$max" 700000 "call_max_us after the preempted call"
[ "$max" -lt 1000000 ] || die "call_max_us $max: it counted time the call was preempted"
echo sleep >$U/stall_how
echo 1500 >$U/stall_ms
taskset -c 0 ioloop -n 1 -b 256 /dev/kmt_usercopy >/dev/null
assert_ge "$(cat $U/stalled_wall_ms)" 1500 "the sleeping call's wall time"
assert_eq "$(cat $K/$UC/state)" on "$UC after a call asleep past trip_call_ms"
dmesg_mark
echo yield >$U/stall_how
echo 1300 >$U/stall_ms
taskset -c 0 ioloop -n 1 -b 256 /dev/kmt_usercopy >/dev/null
kill $hog1 $hog2
wait $hog1 $hog2 2>/dev/null || true
tripped $UC 3 5 "tripped: a __check_object_size replacement call * ms, limit 1000 ms"
value=$(echo "$record" | sed 's/.* value=\([0-9]*\) .*/\1/')
assert_ge "$value" 1000000000 "the record's value"
echo spin >$U/stall_how
echo 0 >$U/stall_ms
reset $UC

if [ ! -e /proc/sys/kernel/watchdog_thresh ]; then
	log "no soft-lockup watchdog in this kernel: soft lockups not provoked"
else
	thresh=$(cat /proc/sys/kernel/watchdog_thresh)

	# A soft lockup inside a replacement trips that mitigation alone, even
	# with a window of 0 that pins nothing else on it.
	on $UC
	[ $rstat = 1 ] && on $RS
	write_ok $K/$UC/params trip_call_ms=600000
	echo 0 >$PARAMS/breaker_window_s
	echo 1 >/proc/sys/kernel/watchdog_thresh
	dmesg_mark
	expect_splat_begin
	slow_copy 5000
	wait_for 30 state_is $UC tripped
	expect_splat_end
	echo 0 >$U/stall_ms
	tripped $UC 4 1 "tripped: soft lockup on CPU * (ioloop) inside a __check_object_size replacement call"
	if [ $rstat = 1 ]; then
		assert_eq "$(cat $K/$RS/state)" on "$RS after a lockup inside $UC's replacement"
		write_ok $K/$RS/mode off
	fi
	reset $UC
	write_ok $K/$UC/params trip_call_ms=1000

	# One outside every replacement trips what went on within the window.
	echo 600 >$PARAMS/breaker_window_s
	on $UC
	[ $rstat = 1 ] && on $RS
	dmesg_mark
	expect_splat_begin
	echo 5 >/sys/kernel/kmt_lockup/spin
	wait_for 30 state_is $UC tripped
	expect_splat_end
	tripped $UC 5 1 "tripped: soft lockup on CPU * (sh) within 600 s of mode on"
	if [ $rstat = 1 ]; then
		tripped $RS 1 1 "tripped: soft lockup on CPU * (sh) within 600 s of mode on"
		reset $RS
	fi
	reset $UC
	echo "$thresh" >/proc/sys/kernel/watchdog_thresh
fi

# An RCU stall: a CPU spinning with preemption off while processes come
# and go, which needs grace periods.
R=/sys/module/rcupdate/parameters/rcu_cpu_stall_timeout
if [ ! -w $R ] || dmesg | grep -q "rcu-stall notices unavailable"; then
	log "no RCU stall notices in this kernel: RCU stalls not provoked"
else
	rcu_timeout=$(cat $R)
	echo 3 >$R
	on $UC
	dmesg_mark
	sh -c 'while :; do /bin/true; done' &
	churn=$!
	expect_splat_begin
	echo 10 >/sys/kernel/kmt_lockup/spin
	kill $churn
	wait $churn 2>/dev/null || true
	await 30 state_is $UC tripped || true
	expect_splat_end
	echo "$rcu_timeout" >$R
	if dmesg_since_mark | grep -q "rcu: INFO: .* detected stalls\|rcu: INFO: .* self-detected stall"; then
		tripped $UC 6 3 "tripped: RCU stall* within 600 s of mode on"
		reset $UC
	else
		assert_eq "$(cat $K/$UC/state)" on "$UC with no RCU stall reported"
		log "no RCU stall reported in 10 s of spinning: not tested"
		write_ok $K/$UC/mode off
	fi
fi

# A hung task: one sleeping in D state past hung_task_timeout_secs.
H=/proc/sys/kernel/hung_task_timeout_secs
if [ ! -w $H ] || dmesg | grep -q "hung-task notices unavailable"; then
	log "no hung-task detector in this kernel (CONFIG_DETECT_HUNG_TASK): hung tasks not provoked"
else
	hung=$(cat $H)
	n=$(trips $UC)
	on $UC
	echo 2 >$H
	dmesg_mark
	expect_splat_begin
	sh -c 'echo 8 >/sys/kernel/kmt_lockup/sleep_d' &
	sleeper=$!
	wait_for 30 state_is $UC tripped
	wait $sleeper
	expect_splat_end
	echo "$hung" >$H
	tripped $UC $((n + 1)) 4 "tripped: hung task sh:$sleeper within 600 s of mode on"
	reset $UC
fi

# A hard lockup: spinning with irqs off past watchdog_thresh, seen by the
# NMI watchdog, which needs a PMU that QEMU's TCG does not emulate.
if dmesg | grep -q "hard-lockup notices unavailable" || ! dmesg | grep -q "NMI watchdog: Enabled"; then
	log "no NMI watchdog in this boot (QEMU TCG has no PMU): hard lockups not provoked"
else
	thresh=$(cat /proc/sys/kernel/watchdog_thresh)
	n=$(trips $UC)
	on $UC
	echo 1 >/proc/sys/kernel/watchdog_thresh
	dmesg_mark
	expect_splat_begin
	echo 4 >/sys/kernel/kmt_lockup/spin_irqoff
	wait_for 30 state_is $UC tripped
	expect_splat_end
	echo "$thresh" >/proc/sys/kernel/watchdog_thresh
	tripped $UC $((n + 1)) 2 "tripped: hard lockup on CPU * within 600 s of mode on"
	reset $UC
fi

# A CPU that comes online while a mitigation is on starts its own check
# timer: a call that does not return there trips while it runs.
C1=/sys/devices/system/cpu/cpu1/online
if [ ! -w $C1 ]; then
	log "CPU 1 cannot go offline in this boot: CPU hotplug not tested"
else
	n=$(trips $UC)
	on $UC
	echo 0 >$C1
	echo 1 >$C1
	running_trip 1 $((n + 1)) 1
fi

echo 0 >$U/stall_ms
unload_mod kmt_lockup
unload_mod kmt_usercopy
wait_for 60 sh -c "[ ! -d $LP ]"
unload_mod kmemctl
check_dmesg_clean
