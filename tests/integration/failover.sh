#!/bin/bash
# An agent and kmemctl given two kmemd fail over when the first goes.
# Two kmemd serve one store (here the same SQLite file; the production
# setup for several kmemd is PostgreSQL, docs/operations.md); the agent
# reports to the first it lists until it is SIGKILLed, then to the second,
# with no acknowledged report lost; kmemctl reads and changes through the
# second when the first takes no connection.
set -euo pipefail

BUILD=${1:?usage: failover.sh BUILD_DIR SOURCE_DIR}
SRC=${2:?usage: failover.sh BUILD_DIR SOURCE_DIR}
KMEMCTL=$BUILD/cli/kmemctl
KMEMD=$BUILD/daemon/kmemd
AGENT=$BUILD/agent/kmem-agent

work=$(mktemp -d "$BUILD/failover.XXXXXX")
chmod 755 "$work"
# shellcheck source=tests/integration/lib.sh
. "$SRC/tests/integration/lib.sh"
in_work

pki_fleet
pki_hosts h1
kmemd_conf >kmemd.conf
kmemd_start
pa=$port
$KMEMD -d -c kmemd.conf >kmemd-b.log 2>&1 &
kmemd_b=$!
pids+=($kmemd_b)
wait_for 10 grep -q "listening on port" kmemd-b.log || fail "the second kmemd did not start"
pb=$(sed -n 's/.*listening on port \([0-9]*\).*/\1/p' kmemd-b.log | head -1)
both="127.0.0.1:$pa, 127.0.0.1:$pb"
ops_cli=($KMEMCTL -s "$both" --ca pki/ca.crt --cert pki/ops.crt --key pki/ops.key)

# the agent lists both (agent_conf writes server = 127.0.0.1:PORT); it reports to the first
port="$pa,127.0.0.1:$pb" fixture_agent h1 web
port=$pa
acked() { grep -c "report [0-9]* acknowledged" agent-h1.log || true; }
wait_for 20 sh -c "[ \$(grep -c 'report [0-9]* acknowledged' agent-h1.log) -ge 3 ]" ||
	fail "h1's first reports: $(tail -3 agent-h1.log)"
grep -q "report [0-9]* from 'h1'" kmemd.log || fail "h1 did not report to the first kmemd"
! grep -q "report [0-9]* from 'h1'" kmemd-b.log || fail "h1 reported to the second kmemd too"
"${ops_cli[@]}" host list >hosts.out 2>hosts.err || fail "kmemctl host list: $(cat hosts.err)"
grep -q "^h1 " hosts.out || fail "h1 not listed: $(cat hosts.out)"
echo "ok: h1 reports to the first kmemd it lists; kmemctl reads through it"

# the first goes: reports go to the second, in order, none lost
kill -9 "$kmemd_pid"
wait "$kmemd_pid" 2>/dev/null || true
kmemd_pid=
n=$(acked)
wait_for 30 grep -q "did not answer: reporting to 127.0.0.1:$pb" agent-h1.log ||
	fail "h1 did not turn to the second kmemd: $(tail -3 agent-h1.log)"
wait_for 30 sh -c "[ \$(grep -c 'report [0-9]* acknowledged' agent-h1.log) -ge $((n + 3)) ]" ||
	fail "h1's reports were not acknowledged by the second kmemd: $(tail -3 agent-h1.log)"
grep -q "report [0-9]* from 'h1'" kmemd-b.log || fail "the second kmemd stored none of h1's reports"
echo "ok: with the first SIGKILLed, h1 reports to the second ($(acked) acknowledged in all)"

# kmemctl: a read and a change go to the second, past the first that takes no connection
"${ops_cli[@]}" host list >hosts.out 2>hosts.err || fail "kmemctl host list: $(cat hosts.err)"
grep -q "^h1 " hosts.out || fail "h1 not listed by the second kmemd: $(cat hosts.out)"
grep -q "kmemctl: trying kmemd at 127.0.0.1:$pb" hosts.err ||
	fail "kmemctl did not say it tried the second: $(cat hosts.err)"
"${ops_cli[@]}" secret create --expires 10m >secret.out 2>secret.err ||
	fail "kmemctl secret create through the second: $(cat secret.err)"
grep -q "kmemctl: trying kmemd at 127.0.0.1:$pb" secret.err ||
	fail "the change did not go to the second: $(cat secret.err)"
echo "ok: kmemctl reads and changes through the second kmemd when the first is gone"

kill "${agent[h1]}"
wait "${agent[h1]}" 2>/dev/null || true
no_report_lost h1
echo "ok: every report h1 saw acknowledged, by either kmemd, is stored"
! grep -q "store query failed\|failed:" kmemd-b.log || fail "the second kmemd logged a failure"
