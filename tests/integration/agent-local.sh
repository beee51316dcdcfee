#!/bin/bash
# kmem-agent on its own host, with no kmemd: a signed build record from
# [agent] builds is written to the module at start, and a policy bundle
# put in its place is refused on reload; a signed policy from a local
# file is applied to kmemctl.ko's sysfs (a fixture tree), shown by
# `kmemctl status`, and kept; a tampered bundle is refused on reload and
# nothing changes; a local override through the control socket goes
# through; bad requests get clear errors and the agent runs on. Without
# [agent] server it runs standalone, with no network child.
set -euo pipefail

BUILD=${1:?usage: agent-local.sh BUILD_DIR SOURCE_DIR}
SRC=${2:?usage: agent-local.sh BUILD_DIR SOURCE_DIR}
KMEMCTL=$BUILD/cli/kmemctl
AGENT=$BUILD/agent/kmem-agent

work=$(mktemp -d "$BUILD/agent-local.XXXXXX")
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
	exit 1
}

wait_for() { # file pattern: 40 s at most, as lib.sh's wait_for 10
	local i
	for i in $(seq 400); do
		grep -q -- "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	fail "'$2' did not appear in $1"
}

cp -r "$SRC/tests/fixtures/host-6.1" root
MIT=root/sys/kernel/kmemctl/mitigations
export KMEMCTL_AGENT_SOCKET=$work/ctl.sock

$KMEMCTL pki init pki >/dev/null
$KMEMCTL pki issue pki host host-1 >/dev/null
$KMEMCTL policy keygen op >/dev/null
mkdir keys
cp op.pem keys/
printf '{"mitigations":{"usercopy-fastpath":{"mode":"on"}},"probes":{"vmap-purge":{"threshold_ns":5000000}}}' >doc.json
$KMEMCTL policy sign -k op.key -n base -v 2 -o policy.bin doc.json

# a build file as kmemctl.ko shows it, and a signed record for it in [agent] builds
cat >root/sys/kernel/kmemctl/build <<BUILD
build_id 3a1f5c9e0d7b2a4c
release 6.1.0-57-amd64
version #1 SMP PREEMPT_DYNAMIC Debian 6.1.192-3 (2026-11-20)
copy usercopy-fastpath usercopy_fastpath.c:kmem_check_object 0011223344556677
func usercopy-fastpath __check_object_size 412 0123456789abcdef
BUILD
: >root/sys/kernel/kmemctl/records
{
	echo "kmemctl-build-record 2"
	sed -n 1,3p root/sys/kernel/kmemctl/build
	echo "source linux-source-6.1 6.1.192-3"
	sed -n 4,5p root/sys/kernel/kmemctl/build
	echo end
} >build.rec
mkdir builds
$KMEMCTL build sign -k op.key -o builds/a-this.bundle build.rec

cat >agent.conf <<CONF
[agent]
host_id = host-1
# nothing listens here: reports spool
server = 127.0.0.1:1
interval = 1s
state_dir = $work/state
user = nobody
control = $work/ctl.sock
[tls]
cert = $work/pki/host-1.crt
key = $work/pki/host-1.key
ca = $work/pki/ca.crt
[policy]
keys_dir = $work/keys
file = $work/policy.bin
CONF
sed -i "s|^control = .*|&\nbuilds = $work/builds|" agent.conf
$AGENT -n -c agent.conf || fail "the configuration does not check"
$AGENT -h >usage.txt || fail "kmem-agent -h failed"
grep -q "^  -h " usage.txt || fail "kmem-agent's usage omits -h: $(cat usage.txt)"

# the fixture's kernel command line has kmemctl.disable=1: nothing applies
$AGENT -d -r "$work/root" -c agent.conf >agent.log 2>&1 &
agent_pid=$!
wait_for agent.log "policy base version 2 from file not applied: kmemctl.disable=1"
[ "$(cat $MIT/usercopy-fastpath/mode)" = off ] || fail "kmemctl.disable=1 applied a policy"
wait_for agent.log "control socket at"
grep -q "build record bundle 'a-this.bundle' admitted" agent.log || fail "the build record was not admitted"
cmp -s build.rec root/sys/kernel/kmemctl/records || fail "the records file is not the record"
echo "ok: a signed build record is written to the module at start"
rc=0
$KMEMCTL mitigation set usercopy-fastpath on >bad.txt 2>&1 || rc=$?
[ "$rc" = 1 ] && grep -q "kmemctl.disable=1" bad.txt || fail "disable=1: set: $(cat bad.txt)"
[ "$(cat $MIT/usercopy-fastpath/mode)" = off ] || fail "kmemctl.disable=1 let a local set in"
kill "$agent_pid"
wait "$agent_pid" || fail "the agent did not stop cleanly"
echo "ok: kmemctl.disable=1 applies nothing"

sed -i 's/ kmemctl.disable=1//' root/proc/cmdline
$AGENT -d -r "$work/root" -c agent.conf >agent.log 2>&1 &
agent_pid=$!
wait_for agent.log "policy base version 2 from file accepted"
wait_for agent.log "control socket at"
[ "$(cat $MIT/usercopy-fastpath/mode)" = on ] || fail "usercopy-fastpath was not turned on"
[ "$(cat root/sys/kernel/kmemctl/probes/vmap-purge/threshold_ns)" = 5000000 ] ||
	fail "vmap-purge's threshold was not set"
echo "ok: the policy file was applied"

# status_until PATTERN: kmemctl status into status.txt until it shows
# PATTERN (10 s); the status is the last report, made once a second
status_until() {
	local i
	for i in $(seq 50); do
		$KMEMCTL status >status.txt 2>&1 || fail "kmemctl status failed: $(cat status.txt)"
		grep -q "$1" status.txt && return 0
		sleep 0.2
	done
	fail "status never showed '$1': $(cat status.txt)"
}
# wait for a report made after the apply
status_until "^usercopy-fastpath .* policy"
grep -q "^policy    base version 2" status.txt || fail "status shows no policy: $(cat status.txt)"
grep -q "^host      host-1, kernel 6.1.0-57-amd64" status.txt || fail "status: no host line"
$KMEMCTL status --json >status.json
grep -q '"kernel_release": "6.1.0-57-amd64"' status.json || fail "status --json has no facts"
echo "ok: kmemctl status shows the policy's states"

# a bundle with one byte changed, then a reload: refused, nothing changes
off=$(grep -obUa '"on"' policy.bin | sed -n 1p | cut -d: -f1)
printf f | dd of=policy.bin bs=1 seek=$((off + 2)) conv=notrunc status=none
# and a policy bundle where a build record belongs
cp policy.bin builds/b-policy.bundle
kill -HUP "$agent_pid"
wait_for agent.log "policy from file refused"
wait_for agent.log "build record bundle 'b-policy.bundle' refused"
[ "$(cat $MIT/usercopy-fastpath/mode)" = on ] || fail "a tampered policy changed the mode"
status_until "policy-refused not a validly signed policy"
echo "ok: a tampered bundle is refused and nothing changes"

# watch: every report as it is made, one JSON object per line
rc=0
timeout 3 $KMEMCTL watch >watch.txt 2>&1 || rc=$?
[ "$rc" = 124 ] || fail "kmemctl watch ended by itself (exit $rc): $(cat watch.txt)"
[ "$(grep -c '^{"ok":true,"agent":{.*"report":{"seq":' watch.txt)" -ge 2 ] ||
	fail "watch: $(cat watch.txt)"
echo "ok: kmemctl watch follows the reports"
rc=0
timeout 3 $KMEMCTL telemetry watch >twatch.txt 2>&1 || rc=$?
[ "$rc" = 124 ] || fail "kmemctl telemetry watch ended by itself (exit $rc): $(cat twatch.txt)"
[ "$(grep -c '^PROBE  *COUNT  *P50  *P99  *MAX$' twatch.txt)" -ge 2 ] &&
	grep -q '^vmap-purge ' twatch.txt || fail "telemetry watch: $(cat twatch.txt)"
echo "ok: kmemctl telemetry watch shows the probes of each report"

# a local override
$KMEMCTL mitigation set usercopy-fastpath off >set.txt || fail "set failed: $(cat set.txt)"
grep -q "^usercopy-fastpath: applied" set.txt || fail "set: $(cat set.txt)"
[ "$(cat $MIT/usercopy-fastpath/mode)" = off ] || fail "the local override did not apply"
wait_for agent.log "local override: usercopy-fastpath off"
echo "ok: a local override through the control socket"

# bad requests: clear errors, the agent runs on
rc=0
$KMEMCTL mitigation set ../../etc on >bad.txt 2>&1 || rc=$?
[ "$rc" = 1 ] && grep -q "kmem-agent: mitigations: bad id" bad.txt ||
	fail "a bad id: exit $rc, $(cat bad.txt)"
rc=0
$KMEMCTL mitigation set usercopy-fastpath sideways >bad.txt 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "a bad mode: exit $rc"
rc=0
$KMEMCTL probe set vmap-purge on threshold_ns=-1 >bad.txt 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "a negative threshold: exit $rc"
$KMEMCTL mitigation set tlb-gen on >bad.txt 2>&1 || rc=$?
grep -q "^tlb-gen: skipped" bad.txt || fail "a native mitigation: $(cat bad.txt)"
kill -0 "$agent_pid" || fail "the agent died"
$KMEMCTL status >/dev/null || fail "status after bad requests"
echo "ok: bad requests are refused and the agent runs on"

# the local kill switch: everything off, nothing applied, across a restart
$KMEMCTL mitigation set usercopy-fastpath on >/dev/null || fail "set on"
$KMEMCTL disable >switch.txt || fail "disable: $(cat switch.txt)"
grep -q "^kill switch on" switch.txt || fail "disable: $(cat switch.txt)"
[ "$(cat $MIT/usercopy-fastpath/mode)" = off ] || fail "the kill switch left usercopy-fastpath on"
[ "$(cat $MIT/rstat-yield/mode)" = off ] || fail "the kill switch left rstat-yield on"
wait_for agent.log "kill switch: .* mitigations turned off"
rc=0
$KMEMCTL mitigation set usercopy-fastpath on >bad.txt 2>&1 || rc=$?
[ "$rc" = 1 ] && grep -q "applying nothing under the local kill switch" bad.txt ||
	fail "a local override under the kill switch: exit $rc, $(cat bad.txt)"
$KMEMCTL status >status.txt
grep -q "^agent .*(off: the local kill switch (kmemctl disable))" status.txt ||
	fail "status does not say off: $(cat status.txt)"
kill "$agent_pid"
wait "$agent_pid" || fail "the agent exited with $? on SIGTERM"
$AGENT -d -r "$work/root" -c agent.conf >agent2.log 2>&1 &
agent_pid=$!
wait_for agent2.log "control socket at"
grep -q "the local kill switch is on" agent2.log || fail "the kill switch was lost in a restart"
[ "$(cat $MIT/usercopy-fastpath/mode)" = off ] || fail "a restart under the kill switch applied"
$KMEMCTL disable >switch.txt && grep -q "already on" switch.txt || fail "disable twice: $(cat switch.txt)"
$KMEMCTL enable >switch.txt || fail "enable: $(cat switch.txt)"
grep -q "^kill switch off" switch.txt || fail "enable: $(cat switch.txt)"
wait_for agent2.log "kill switch released"
[ "$(cat $MIT/usercopy-fastpath/mode)" = on ] || fail "enable did not apply the policy again"
echo "ok: kmemctl disable turns everything off, survives a restart, and enable undoes it"

# the control process: at most 32 connections; one more is told so and
# closed, and the agent serves again once they go
watchers=()
for i in $(seq 32); do
	$KMEMCTL watch >watch-$i.txt 2>&1 &
	watchers+=($!)
done
# a watcher is connected once it has shown a report; they connect in their
# own time, which on a busy machine (sanitizers, the other core taken) is
# more than a minute
for i in $(seq 1500); do
	n=0
	for f in watch-*.txt; do
		[ -s "$f" ] && n=$((n + 1))
	done
	[ "$n" = 32 ] && break
	sleep 0.2
done
[ "$n" = 32 ] || fail "$n of 32 watchers connected"
rc=0
$KMEMCTL status >bad.txt 2>&1 || rc=$?
grep -q "too many control connections: at most 32 at once" bad.txt ||
	fail "a 33rd connection was not refused: exit $rc, $(cat bad.txt), $(head -2 watch-1.txt)"
wait_for agent2.log "control socket: a connection refused, 32 are open already"
kill "${watchers[@]}"
wait "${watchers[@]}" 2>/dev/null || true
status_until "^agent "
echo "ok: the control socket takes 32 connections, refuses the 33rd, and serves again"

# a control process that dies is started again; the agent runs on
ctl=$(ps -o pid=,comm= --ppid "$agent_pid" | awk '$2 == "kmem-agent-ctl" { print $1 }')
[ -n "$ctl" ] || fail "no control process"
kill -KILL "$ctl"
wait_for agent2.log "the control process killed by signal .*; starting another in 1 s"
status_until "^agent "
kill -0 "$agent_pid" || fail "the agent died with its control process"
[ "$(ps -o comm= --ppid "$agent_pid" | grep -c '^kmem-agent-ctl$')" = 1 ] ||
	fail "not one control process after the restart"
echo "ok: a control process killed is started again, and the agent runs on"

# a user outside root and the group, even with the socket's mode opened up
if [ "$(id -u)" = 0 ]; then
	chmod 666 ctl.sock
	rc=0
	su nobody -s /bin/sh -c "KMEMCTL_AGENT_SOCKET=$work/ctl.sock $KMEMCTL status" \
		>bad.txt 2>&1 || rc=$?
	[ "$rc" = 1 ] && grep -q "permission denied" bad.txt ||
		fail "nobody was not refused: exit $rc, $(cat bad.txt)"
	echo "ok: a user outside root and the kmemctl group is refused"
fi
# under systemd: READY once, STATUS about kmemd, WATCHDOG at half the period
kill "$agent_pid"
wait "$agent_pid" || fail "the agent did not stop cleanly"
$BUILD/tests/integration/notify-listen "$work/notify.sock" 4 >notify.txt &
listener=$!
wait_for_sock() {
	local i
	for i in $(seq 50); do
		[ -S "$1" ] && return 0
		sleep 0.1
	done
	fail "no socket $1"
}
wait_for_sock "$work/notify.sock"
NOTIFY_SOCKET=$work/notify.sock WATCHDOG_USEC=400000 \
	$AGENT -r "$work/root" -c agent.conf >agent.log 2>&1 &
agent_pid=$!
wait $listener
[ "$(grep -c '^READY=1$' notify.txt)" = 1 ] || fail "READY=1: $(cat notify.txt)"
pings=$(grep -c '^WATCHDOG=1$' notify.txt || true)
[ "$pings" -ge 10 ] || fail "$pings watchdog pings in 4 s after READY at a 400 ms period"
grep -q '^STATUS=kmemd unreachable; [0-9]* reports spooled$' notify.txt ||
	fail "no STATUS: $(cat notify.txt)"
echo "ok: systemd notifications: READY, STATUS, $pings watchdog pings"

# socket activation, as kmem-agent.socket does it: the passed socket is
# blocking, and it must serve one client after another (a blocking
# listener stopped the loop, and with it the watchdog, at the second)
kill "$agent_pid"
wait "$agent_pid" || fail "the agent did not stop cleanly"
rm -f "$work/ctl.sock"
systemd-socket-activate --seqpacket -l "$work/ctl.sock" \
	$AGENT -r "$work/root" -c agent.conf >agent.log 2>&1 &
agent_pid=$!
wait_for_sock "$work/ctl.sock"
for i in 1 2 3; do
	timeout 5 $KMEMCTL status >status.txt 2>&1 ||
		fail "client $i over the passed control socket: $(cat status.txt)"
done
grep -q "^agent " status.txt ||
	fail "status over the passed socket: $(cat status.txt)"
echo "ok: socket activation: the passed control socket serves three clients in turn"

# a kernel file whose read never returns (a FIFO nobody writes): reports go
# on at the deadline without that collector, naming it, and the agent
# keeps answering; once the read returns, rounds are whole again
kill "$agent_pid"
wait "$agent_pid" || fail "the agent did not stop cleanly"
mkdir -p root/sys/fs/cgroup agent.conf.d
mkfifo root/sys/fs/cgroup/memory.stat
printf '[agent]\ncollector_timeout = 300ms\nmemstat = /sys/fs/cgroup/memory.stat\n' \
	>agent.conf.d/stuck.conf
$AGENT -d -r "$work/root" -c agent.conf >agent.log 2>&1 &
agent_pid=$!
wait_for agent.log "collector memory.stat: no answer within the deadline"
wait_for agent.log "collector probes: not run, waiting on another"
timeout 5 $KMEMCTL status >status.txt || fail "status while a collector hangs: $(cat status.txt)"
grep -q "^failed    memory.stat: no answer within the deadline" status.txt ||
	fail "status does not name the stuck collector: $(cat status.txt)"
exec 3>root/sys/fs/cgroup/memory.stat
rm root/sys/fs/cgroup/memory.stat
exec 3>&-
for i in $(seq 50); do
	$KMEMCTL status >status.txt
	grep -q "^failed" status.txt || break
	sleep 0.2
done
grep -q "^failed" status.txt && fail "rounds did not recover: $(cat status.txt)"
grep -q "^usercopy-fastpath " status.txt || fail "no mitigations after recovery"
echo "ok: a hanging collector is reported as failed and does not stop the agent"

# standalone: no [agent] server and no [tls]: no network child and no
# reports sent, while the policy file, kmemctl status and the kill switch
# work as ever
kill "$agent_pid"
wait "$agent_pid" || fail "the agent did not stop cleanly"
$KMEMCTL policy sign -k op.key -n base -v 3 -o standalone.bin doc.json
echo off >$MIT/usercopy-fastpath/mode
cat >standalone.conf <<CONF
[agent]
host_id = host-1
interval = 1s
state_dir = $work/state-standalone
# the control process's user
user = nobody
control = $work/ctl.sock
[policy]
keys_dir = $work/keys
file = $work/standalone.bin
CONF
$AGENT -n -c standalone.conf 2>check.err || fail "-n refuses a configuration without a server"
grep -q "will run standalone" check.err || fail "-n: $(cat check.err)"
rc=0
$AGENT -o -r "$work/root" -c standalone.conf >once.log 2>&1 || rc=$?
[ "$rc" = 1 ] && grep -q "\[agent\] server is not set" once.log || fail "-o: exit $rc, $(cat once.log)"
$AGENT -d -r "$work/root" -c standalone.conf >agent.log 2>&1 &
agent_pid=$!
wait_for agent.log "no \[agent\] server: running standalone"
wait_for agent.log "policy base version 3 from file accepted"
wait_for agent.log "control socket at"
[ "$(cat $MIT/usercopy-fastpath/mode)" = on ] || fail "standalone: the policy file was not applied"
[ "$(grep -c "running standalone" agent.log)" = 1 ] || fail "standalone is logged more than once"
status_until "^report    [2-9]"
grep -q "^kmemd     none: standalone" status.txt || fail "standalone: status: $(cat status.txt)"
grep -q "^policy    base version 3" status.txt || fail "standalone: no policy: $(cat status.txt)"
[ ! -e state-standalone/spool ] || fail "standalone: a spool was made"
[ "$(ps -o comm= --ppid "$agent_pid")" = kmem-agent-ctl ] ||
	fail "standalone: the agent's children are $(ps -o comm= --ppid "$agent_pid" | xargs), not the control process alone"
$KMEMCTL disable >switch.txt || fail "standalone: disable: $(cat switch.txt)"
[ "$(cat $MIT/usercopy-fastpath/mode)" = off ] || fail "standalone: the kill switch left it on"
$KMEMCTL enable >switch.txt || fail "standalone: enable: $(cat switch.txt)"
[ "$(cat $MIT/usercopy-fastpath/mode)" = on ] || fail "standalone: enable did not apply again"
kill -0 "$agent_pid" || fail "the standalone agent died"
kill "$agent_pid"
wait "$agent_pid" || fail "the standalone agent exited with $? on SIGTERM"
agent_pid=
echo "ok: without [agent] server the agent runs standalone: policy file, status, kill switch"
echo PASS
