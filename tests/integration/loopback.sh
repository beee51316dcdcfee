#!/bin/bash
# kmemd and kmem-agent on loopback with real certificates from `kmemctl pki`:
# a report is acknowledged; a host reporting as another host, a certificate
# from a foreign CA and an unreachable kmemd are each told apart by the
# agent's exit code; kmemd keeps serving throughout.
set -euo pipefail

BUILD=${1:?usage: loopback.sh BUILD_DIR SOURCE_DIR}
SRC=${2:?usage: loopback.sh BUILD_DIR SOURCE_DIR}
KMEMCTL=$BUILD/cli/kmemctl
KMEMD=$BUILD/daemon/kmemd
AGENT=$BUILD/agent/kmem-agent
FIXTURE=$SRC/tests/fixtures/host-6.1

work=$(mktemp -d "$BUILD/loopback.XXXXXX")
# the agent's network child runs as nobody and must reach its spool
chmod 755 "$work"
# shellcheck source=tests/integration/lib.sh
. "$SRC/tests/integration/lib.sh"

expect_rc() {
	local want=$1 what=$2 rc=0
	shift 2
	"$@" >"$work/out" 2>&1 || rc=$?
	[ "$rc" = "$want" ] || { cat "$work/out" >&2; fail "$what: exit $rc, expected $want"; }
	echo "ok: $what"
}

in_work
$KMEMCTL pki init pki >/dev/null
$KMEMCTL pki issue pki server kmemd ip 127.0.0.1 dns localhost >/dev/null
$KMEMCTL pki issue pki host host-1 >/dev/null
$KMEMCTL pki init foreign >/dev/null
$KMEMCTL pki issue foreign host host-1 >/dev/null

kmemd_conf >kmemd.conf
expect_rc 0 "kmemd -n accepts a good configuration" $KMEMD -n -c kmemd.conf
printf '[server]\nlisten = 127.0.0.1:0\nio_timeout = forever\n' >bad.conf
expect_rc 1 "kmemd -n refuses a bad configuration" $KMEMD -n -c bad.conf
grep -q "bad.conf:3: bad value 'forever' for 'io_timeout'" out || fail "no file:line error"

$KMEMD -d -c kmemd.conf >kmemd.log 2>&1 &
kmemd_pid=$!
wait_for 10 grep -q "listening on port" kmemd.log || fail "kmemd did not start"
port=$(sed -n 's/.*listening on port \([0-9]*\).*/\1/p' kmemd.log)

agent_conf() { # host_id cert-dir port
	cat <<CONF
[agent]
host_id = $1
server = 127.0.0.1:$3
state_dir = $work/agent
user = nobody
control = $work/ctl.sock
[tls]
cert = $work/$2/host-1.crt
key = $work/$2/host-1.key
ca = $work/pki/ca.crt
[labels]
role = test
CONF
}

agent_conf host-1 pki "$port" >good.conf
agent_conf host-2 pki "$port" >wrong-host.conf
agent_conf host-1 foreign "$port" >foreign.conf
agent_conf host-1 pki 1 >closed.conf

expect_rc 0 "agent report is acknowledged" $AGENT -o -r "$FIXTURE" -c good.conf
wait_for 10 grep -q "report 1 from 'host-1' (kernel '6.1.0-57-amd64', 4 cpus)" kmemd.log ||
	fail "kmemd did not log host-1's report"
expect_rc 4 "host-1 reporting as host-2 is refused" $AGENT -o -r "$FIXTURE" -c wrong-host.conf
grep -q "certificate is for another host" out || fail "refusal reason not shown"
expect_rc 3 "a certificate from a foreign CA gets no answer" \
	$AGENT -o -r "$FIXTURE" -c foreign.conf
expect_rc 3 "a closed port is unreachable" $AGENT -o -r "$FIXTURE" -c closed.conf
expect_rc 0 "kmemd still serves after the refusals" $AGENT -o -r "$FIXTURE" -c good.conf
expect_rc 2 "kmemctl names valid objects for an unknown one" $KMEMCTL frobnicate
grep -q "unknown object 'frobnicate'" out || fail "no helpful error"
kill -0 "$kmemd_pid" || fail "kmemd died"

# Spooling: with kmemd away, a running agent keeps its reports on disk; once
# kmemd is back on the same port they all arrive, oldest first, none lost.
kill "$kmemd_pid"
wait "$kmemd_pid" 2>/dev/null || true
kmemd_pid=
agent_conf host-1 pki "$port" | sed 's/^\[agent\]$/[agent]\ninterval = 1s/' >spool.conf
$AGENT -d -r "$FIXTURE" -c spool.conf >agent-spool.log 2>&1 &
agent_pid=$!
spooled() {
	find "$work/agent/spool" -name '*.report' | wc -l
}
for i in $(seq 100); do
	[ "$(spooled)" -ge 3 ] && break
	sleep 0.1
done
[ "$(spooled)" -ge 3 ] || {
	cat agent-spool.log >&2
	fail "the agent spooled $(spooled) reports while kmemd was away"
}
echo "ok: $(spooled) reports spooled while kmemd was away"
sed "s/^listen = .*/listen = 127.0.0.1:$port/" kmemd.conf >kmemd2.conf
$KMEMD -d -c kmemd2.conf >kmemd.log 2>&1 &
kmemd_pid=$!
# the agent's back-off reaches 8 s (with jitter, 10 s) after four misses
for i in $(seq 300); do
	grep -q "report 5 from 'host-1'" kmemd.log && break
	sleep 0.1
done
seqs=$(sed -n "s/.*report \([0-9]*\) from 'host-1'.*/\1/p" kmemd.log | tr '\n' ' ')
[ "${seqs%% *}" = 1 ] || fail "kmemd's first report after the outage is not 1: $seqs"
echo "$seqs" | awk '{ for (i = 2; i <= NF; i++) if ($i != $(i - 1) + 1) exit 1; exit NF < 5 }' ||
	fail "reports after the outage are not 1, 2, 3, ... in order: $seqs"
echo "ok: spooled reports delivered in order: $seqs"
echo "loopback: all checks passed"
