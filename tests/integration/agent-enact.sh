#!/bin/bash
# kmem-agent's enactment on a fixture tree, standalone: each change logged
# with OLD= and NEW=; boot confirmation across agent restarts and "reboots"
# (a new boot id, the module's modes back to off): a mitigation the host
# died with while it was new is quarantined, not turned on again, while a
# restart in the same boot keeps its window and a confirmed one comes back;
# a trip seen in the module's state (its record lost) is quarantined and
# reported, and only a new policy version writes reset and mode on.
set -euo pipefail

BUILD=${1:?usage: agent-enact.sh BUILD_DIR SOURCE_DIR}
SRC=${2:?usage: agent-enact.sh BUILD_DIR SOURCE_DIR}
KMEMCTL=$BUILD/cli/kmemctl
AGENT=$BUILD/agent/kmem-agent

work=$(mktemp -d "$BUILD/agent-enact.XXXXXX")
chmod 755 "$work"
agent_pid=
cleanup() {
	[ -n "$agent_pid" ] && kill "$agent_pid" 2>/dev/null && wait "$agent_pid" 2>/dev/null
	[ -n "${KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
cd "$work"

fail() {
	echo "FAIL: $*" >&2
	echo "--- agent log" >&2
	cat agent.log >&2 || true
	echo "--- state" >&2
	head state/confirm state/quarantine >&2 || true
	exit 1
}

# wait_more FILE PATTERN N: until PATTERN is on more than N lines of FILE
wait_more() {
	local i
	for i in $(seq 100); do
		[ "$(grep -c -- "$2" "$1")" -gt "$3" ] && return 0
		sleep 0.1
	done
	fail "'$2' did not appear again in $1"
}

wait_for() { # file pattern: 40 s at most, as lib.sh's wait_for 10
	local i
	for i in $(seq 400); do
		grep -q -- "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	fail "'$2' did not appear in $1"
}

# the agent logs a change before it records its quarantine or drops its
# confirmation record: files are waited for, never read once after a log line
wait_gone() { # file
	local i
	for i in $(seq 100); do
		[ ! -e "$1" ] && return 0
		sleep 0.1
	done
	fail "$1 was kept: $(cat "$1")"
}

cp -r "$SRC/tests/fixtures/host-6.1" root
sed -i 's/ kmemctl.disable=1//' root/proc/cmdline
MIT=root/sys/kernel/kmemctl/mitigations
UC=$MIT/usercopy-fastpath
export KMEMCTL_AGENT_SOCKET=$work/ctl.sock

$KMEMCTL policy keygen op >/dev/null
mkdir keys
cp op.pem keys/
printf '{"mitigations":{"usercopy-fastpath":{"mode":"on"}}}' >doc.json
sign() { # version
	$KMEMCTL policy sign -k op.key -n base -v "$1" -o policy.bin doc.json
}
sign 2
cat >agent.conf <<CONF
[agent]
host_id = host-1
interval = 1s
guard_window = 3s
state_dir = $work/state
user = nobody
control = $work/ctl.sock
[policy]
keys_dir = $work/keys
file = $work/policy.bin
CONF

start() {
	# the last run's log must not answer for this one
	rm -f agent.log
	$AGENT -d -r "$work/root" -c agent.conf >agent.log 2>&1 &
	agent_pid=$!
	wait_for agent.log "control socket at"
}
# the host dies: nothing the agent would do at a stop happens
crash() {
	kill -KILL "$agent_pid"
	wait "$agent_pid" 2>/dev/null || true
	agent_pid=
}
# the next boot: another boot id, and a fresh module, every mode off
reboot() {
	printf '%s\n' "$1" >root/proc/sys/kernel/random/boot_id
	echo off >$UC/mode
}
status_until() {
	local i
	for i in $(seq 50); do
		$KMEMCTL status >status.txt 2>&1 || fail "kmemctl status failed: $(cat status.txt)"
		grep -q "$1" status.txt && return 0
		sleep 0.2
	done
	fail "status never showed '$1': $(cat status.txt)"
}

start
[ "$(cat $UC/mode)" = on ] || fail "usercopy-fastpath was not turned on"
grep -q "policy base/2: usercopy-fastpath applied: on (was off) .*OLD=off NEW=on SOURCE=policy" \
	agent.log || fail "the change was not logged with OLD= and NEW="
boot1=$(cat root/proc/sys/kernel/random/boot_id)
grep -q "^usercopy-fastpath pending $boot1 [0-9]* base 2$" state/confirm ||
	fail "no pending boot confirmation record: $(cat state/confirm)"
echo "ok: mode on is logged with OLD= and NEW=, after its boot confirmation record"

# the host dies inside the guard window and boots again
crash
reboot 0b4e1d2c-3a59-4f68-8e7d-6c5b4a392817
start
wait_for agent.log "usercopy-fastpath quarantined under policy base/2: the host restarted while it was new"
grep -q "SOURCE=confirmation REASON=the host restarted while it was new" agent.log ||
	fail "the quarantine is not logged with SOURCE=confirmation"
wait_for agent.log "policy base: usercopy-fastpath skipped: quarantined under this policy version"
[ "$(cat $UC/mode)" = off ] || fail "a mitigation the host died with was turned on again"
grep -q "^usercopy-fastpath base 2$" state/quarantine || fail "not quarantined: $(cat state/quarantine)"
[ ! -e state/confirm ] || fail "the lost record was kept: $(cat state/confirm)"
status_until "quarantine the host restarted while it was new"
grep -q "^usercopy-fastpath .* quarantine " status.txt || fail "status: $(cat status.txt)"
echo "ok: a host that died while a mitigation was new comes back with it quarantined and off"

# and again, in the same boot: still off, nothing new to report
crash
start
wait_for agent.log "usercopy-fastpath skipped: quarantined"
[ "$(cat $UC/mode)" = off ] || fail "a restart turned the quarantined mitigation on"
[ "$(grep -c "restarted while it was new" agent.log)" = 0 ] || fail "quarantined twice"
echo "ok: a crash loop cannot follow: the quarantine holds across restarts"

# a new version of the policy turns it on again; the agent dies within the
# window and comes back in the same boot: the window runs on from the start
sign 3
kill -HUP "$agent_pid"
wait_for agent.log "policy base/3: usercopy-fastpath applied: on (was off)"
since=$(awk '{ print $4 }' state/confirm)
crash
start
[ "$(cat $UC/mode)" = on ] || fail "a restart in the same boot turned it off"
grep -q "restarted while it was new" agent.log && fail "a restart in the same boot quarantined it"
[ "$(awk '{ print $4 }' state/confirm)" = "$since" ] || fail "the window started over"
wait_for agent.log "boot confirmation: usercopy-fastpath confirmed"
grep -q "^usercopy-fastpath confirmed 0b4e1d2c-3a59-4f68-8e7d-6c5b4a392817 $since base 3$" \
	state/confirm || fail "not confirmed: $(cat state/confirm)"
echo "ok: an agent restart keeps the window; after it the mitigation is confirmed"

# a healthy boot confirmed it: the next boot turns it on again
crash
reboot "$boot1"
start
[ "$(cat $UC/mode)" = on ] || fail "a confirmed mitigation was not turned on at the next boot"
grep -q "restarted while it was new" agent.log && fail "a confirmed mitigation was quarantined"
grep -q "^usercopy-fastpath pending $boot1 " state/confirm || fail "no new record: $(cat state/confirm)"
echo "ok: after a boot that confirmed it, a reboot turns it on again"

# the module's breaker trips it while the agent is not looking, and the
# record is lost: the state says so, and the agent quarantines and reports it
echo tripped >$UC/state
echo off >$UC/mode
echo "tripped: soft lockup on CPU 1" >$UC/reason
wait_for agent.log "kmemctl.ko tripped usercopy-fastpath: tripped: soft lockup on CPU 1 (off, was on)"
grep -q "SOURCE=trip" agent.log || fail "the trip is not logged with SOURCE=trip"
wait_for state/quarantine "^usercopy-fastpath base 3$"
wait_gone state/confirm
status_until "trip usercopy-fastpath tripped (its record was lost): tripped: soft lockup"
skipped=$(grep -c "usercopy-fastpath skipped: quarantined" agent.log || true)
kill -HUP "$agent_pid"
wait_more agent.log "usercopy-fastpath skipped: quarantined" "$skipped"
[ -z "$(cat $UC/reset)" ] && [ "$(cat $UC/mode)" = off ] ||
	fail "a quarantined trip was reset or turned on"
[ "$(grep -c "kmemctl.ko tripped usercopy-fastpath" agent.log)" = 1 ] ||
	fail "one trip was handled more than once"
echo "ok: a trip seen in the state is quarantined once and reported; the same version leaves it"

# a new version turns it on: reset, then mode on
sign 4
kill -HUP "$agent_pid"
wait_for agent.log "policy base/4: usercopy-fastpath applied: on (was off)"
[ "$(cat $UC/reset)" = 1 ] || fail "no reset before mode on"
[ "$(cat $UC/mode)" = on ] || fail "the new version did not turn it on"
echo "ok: a new policy version resets the tripped mitigation and turns it on"

# the breaker trips it while the agent is stopped (SIGSTOP), and this time
# its record waits on /dev/kmemctl (a FIFO here, held open by the test):
# reported with its cause once the agent resumes, and quarantined once
kill "$agent_pid"
wait "$agent_pid" || fail "the agent did not stop cleanly"
echo on >$UC/state
mkdir -p root/dev
mkfifo root/dev/kmemctl
exec 3<>root/dev/kmemctl
start
wait_for agent.log "reading kmemctl.ko's events from /dev/kmemctl"
kill -STOP "$agent_pid"
echo tripped >$UC/state
echo off >$UC/mode
echo "tripped: slow call: 2100 ms in a replacement, over trip_call_ms" >$UC/reason
# struct kmemctl_event: TRIP of usercopy-fastpath (3) on cpu 1, seq 1, a
# slow call (flags 5) of 2.1 s over a limit of 2 s, pid 93
printf '\x02\x00\x03\x00\x01\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00' >&3
printf '\x00\x00\x00\x00\x00\x00\x00\x00\x00\x75\x2b\x7d\x00\x00\x00\x00' >&3
printf '\x00\x94\x35\x77\x00\x00\x00\x00\x5d\x00\x00\x00\x05\x00\x00\x00' >&3
printf 'kworker/1:1\x00\x00\x00\x00\x00' >&3
kill -CONT "$agent_pid"
wait_for agent.log "kmemctl.ko tripped usercopy-fastpath: slow call (off, was on)"
wait_for state/quarantine "^usercopy-fastpath base 4$"
status_until "trip usercopy-fastpath tripped: slow call, ran 2100 ms, over its limit of 2000 ms"
status_until "^report    [0-9]"
skipped=$(grep -c "usercopy-fastpath skipped: quarantined" agent.log || true)
kill -HUP "$agent_pid"
wait_more agent.log "usercopy-fastpath skipped: quarantined" "$skipped"
[ "$(grep -c "kmemctl.ko tripped usercopy-fastpath" agent.log)" = 1 ] ||
	fail "the trip was handled twice, from its record and its state"
[ "$(grep -c "^trip " status.txt)" = 1 ] || fail "the trip was reported twice: $(cat status.txt)"
echo "ok: a trip recorded while the agent was stopped is reported with its cause and quarantined once"
exec 3>&-
kill "$agent_pid"
wait "$agent_pid" || fail "the agent did not stop cleanly"
agent_pid=
echo PASS
