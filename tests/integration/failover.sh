#!/bin/bash
# Two kmemd on one store, and the first SIGKILLed mid-rollout: one SQLite
# file both open, or with KMEM_STORE_URL (tests/pg/with-cluster) one
# PostgreSQL database, the production setup for kmemd on several machines.
# - Exactly one runs the rollout engine: the first, whose lease holds.
# - Enrollment's rate limit is the store's: three enrollments a minute from
#   a network, whichever kmemd they go to.
# - Agents list both and each reports to the one its name picks (one host
#   on each); kmemctl reads through the first.
# - The second hangs (SIGSTOP): its host's reports go to the first within
#   the agent's interval; it wakes full, and the host trying it again is
#   turned back (503); with room, the host's next try stays there.
# - The first goes in wave 2's bake: the second takes the engine's lease
#   within a tick, resumes the same wave from its start and its wave 1
#   verdict, and finishes the rollout; the first's host turns to it, the
#   other stays; both report through it and run
#   the rollout's policy; kmemctl reads and changes through it; no report an
#   agent saw acknowledged is lost.
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
kmemd_conf >kmemd.conf
printf '[rollout]\ntick = 500ms\n[ca]\nkey = %s\n[enroll]\nrate = 3\n' "$work/pki/ca.key" >>kmemd.conf
kmemd_start
pa=$port
$KMEMD -d -c kmemd.conf >kmemd-b.log 2>&1 &
kmemd_b=$!
pids+=($kmemd_b)
wait_for 10 grep -q "listening on port" kmemd-b.log || fail "the second kmemd did not start"
pb=$(sed -n 's/.*listening on port \([0-9]*\).*/\1/p' kmemd-b.log | sed -n 1p)
ops_cli=($KMEMCTL -s "127.0.0.1:$pa, 127.0.0.1:$pb" --ca pki/ca.crt --cert pki/ops.crt
	--key pki/ops.key)
leader() { # PORT: its kmemd_engine_leader
	curl -sS --cacert pki/ca.crt --cert pki/ops.crt --key pki/ops.key \
		"https://127.0.0.1:$1/metrics" | awk '$1 == "kmemd_engine_leader" { print $2 }'
}
is_leader() { # PORT
	[ "$(leader "$1")" = 1 ]
}
wait_for 10 grep -q "runs the rollout engine" kmemd.log || fail "the first kmemd runs no engine"
[ "$(leader $pa)" = 1 ] && [ "$(leader $pb)" = 0 ] ||
	fail "engine leaders: first $(leader $pa), second $(leader $pb)"
! grep -q "runs the rollout engine" kmemd-b.log || fail "the second kmemd ran the engine too"
echo "ok: of two kmemd on one store, the first runs the rollout engine, the second stands by"

echo 0000 >unknown-secret
enroll() { # PORT: kmemctl enroll's exit, with a secret no kmemd knows
	local rc=0
	$KMEMCTL enroll -s 127.0.0.1:$1 -C pki/ca.crt -S unknown-secret -n e1 -o . >enroll.out 2>&1 ||
		rc=$?
	echo $rc
}
for p in $pa $pb $pa; do
	[ "$(enroll $p)" = 4 ] && grep -q "unknown enrollment secret" enroll.out ||
		fail "an enrollment within the rate: $(cat enroll.out)"
done
[ "$(enroll $pb)" = 4 ] && grep -q "(429)" enroll.out ||
	fail "a fourth enrollment from one network in a minute, to the second kmemd: $(cat enroll.out)"
echo "ok: three enrollments a minute from one network, counted across both kmemd"

# The agents list both (agent_conf writes server = 127.0.0.1:PORT), and each
# starts on the one its name picks (hostport_order()): h1 a host that picks
# the first, h2 one that picks the second, named here for these ports.
servers="127.0.0.1:$pa,127.0.0.1:$pb"
for i in $(seq 200); do
	case $($BUILD/tests/integration/server-order host-$i "$servers" | sed -n 1p) in
	0) h1=${h1:-host-$i} ;;
	1) h2=${h2:-host-$i} ;;
	esac
	[ -z "${h1:-}" ] || [ -z "${h2:-}" ] || break
done
[ -n "${h1:-}" ] && [ -n "${h2:-}" ] || fail "200 host names all start on one kmemd"
pki_hosts $h1 $h2
for h in $h1 $h2; do
	port="$pa,127.0.0.1:$pb" fixture_agent $h web
done
port=$pa
acked() { # HOST
	grep -c "report [0-9]* acknowledged" agent-$1.log || true
}
for h in $h1 $h2; do
	wait_for 20 sh -c "[ \$(grep -c 'report [0-9]* acknowledged' agent-$h.log) -ge 2 ]" ||
		fail "$h's first reports: $(tail -3 agent-$h.log)"
done
grep -q "report [0-9]* from '$h1'" kmemd.log || fail "$h1 did not report to the first kmemd"
! grep -q "report [0-9]* from '$h1'" kmemd-b.log || fail "$h1 reported to the second kmemd"
grep -q "report [0-9]* from '$h2'" kmemd-b.log || fail "$h2 did not report to the second kmemd"
! grep -q "report [0-9]* from '$h2'" kmemd.log || fail "$h2 reported to the first kmemd"
"${ops_cli[@]}" host list >hosts.out 2>hosts.err || fail "kmemctl host list: $(cat hosts.err)"
grep -q "^$h1 " hosts.out && grep -q "^$h2 " hosts.out || fail "hosts not listed: $(cat hosts.out)"
echo "ok: each agent reports to the kmemd its name picks; kmemctl reads through the first"

# A kmemd that hangs (SIGSTOP: its connections are accepted and never
# answered): its host's report gets no reply within the interval, goes to
# the other kmemd, which then finds that report stored by the other. It
# wakes full (max_connections 1, held by another host's connection): ten
# reports on, the host tries it again, is answered 503, and goes back to
# the first; once it has room, the host's next try stays there. The other
# host's connection is made while there is room (a connection past the
# bound holds no slot), and the bound lowered below what is open.
(sleep 90) | openssl s_client -quiet -connect 127.0.0.1:$pb -cert pki/$h1.crt \
	-key pki/$h1.key -CAfile pki/ca.crt >/dev/null 2>&1 &
holder=$!
pids+=($holder)
hosts_b() {
	curl -sS --cacert pki/ca.crt --cert pki/ops.crt --key pki/ops.key \
		"https://127.0.0.1:$pb/metrics" | awk '$1 == "kmemd_connections_hosts" { print $2 }'
}
wait_for 10 sh -c "[ \"\$(curl -sS --cacert pki/ca.crt --cert pki/ops.crt --key pki/ops.key \
	https://127.0.0.1:$pb/metrics | awk '\$1 == \"kmemd_connections_hosts\" { print \$2 }')\" = 2 ]" ||
	fail "the other host's connection and $h2's are not both open: $(hosts_b)"
cp kmemd.conf kmemd.conf.good
printf '[server]\nmax_connections = 1\nio_timeout = 90s\n' >>kmemd.conf
kill -HUP "$kmemd_b"
wait_for 10 grep -q "policy keys reloaded" kmemd-b.log || fail "the second kmemd did not reload"
kill -STOP "$kmemd_b"
wait_for 20 grep -q "kmemd at 127.0.0.1:$pb sent no reply within 1 s" agent-$h2.log ||
	fail "$h2 did not give up on the hung kmemd: $(tail -3 agent-$h2.log)"
grep -q "did not answer: reporting to 127.0.0.1:$pa" agent-$h2.log ||
	fail "$h2 did not turn to the first kmemd: $(tail -3 agent-$h2.log)"
n=$(acked $h2)
wait_for 20 sh -c "[ \$(grep -c 'report [0-9]* acknowledged' agent-$h2.log) -ge $((n + 2)) ]" ||
	fail "$h2 did not report through the first kmemd: $(tail -3 agent-$h2.log)"
grep -q "report [0-9]* from '$h2'" kmemd.log || fail "the first kmemd stored none of $h2's"
kill -CONT "$kmemd_b"
wait_for 30 grep -q "is unavailable (503): reporting to 127.0.0.1:$pa" agent-$h2.log ||
	fail "$h2 did not try the full kmemd again, or was not turned away: $(tail -3 agent-$h2.log)"
grep -q "trying kmemd at 127.0.0.1:$pb again" agent-$h2.log ||
	fail "$h2 did not say it tried the second kmemd again: $(tail -3 agent-$h2.log)"
echo "ok: a hung kmemd's host reports through the other within its interval; tried again ten reports on, a full kmemd's 503 turns it back"
cp kmemd.conf.good kmemd.conf
kill -HUP "$kmemd_b"
kill "$holder"
n=$(grep -c "report [0-9]* from '$h2'" kmemd-b.log)
wait_for 30 sh -c "[ \$(grep -c \"report [0-9]* from '$h2'\" kmemd-b.log) -ge $((n + 2)) ]" ||
	fail "$h2 did not come back to the second kmemd: $(tail -3 agent-$h2.log)"
moves() { # HOST: its agent's moves between kmemd, the last one last
	grep -E 'reporting to|trying kmemd at' agent-$1.log || true
}
grep -q "trying kmemd at 127.0.0.1:$pb again" <<<"$(moves $h2 | tail -1)" ||
	fail "$h2 is not back on the second kmemd: $(moves $h2 | tail -3)"
echo "ok: with room again, the host's next try stays on the kmemd its name picks"

state() {
	db "SELECT state || ' ' || (wave + 1) FROM rollouts WHERE name = 'r'"
}
in_state() { # state wave
	[ "$(state)" = "$1 $2" ]
}
verdicts() {
	db "SELECT (wave + 1) || ' ' || verdict FROM verdicts WHERE rollout = 'r' ORDER BY id" |
		tr '\n' ','
}
running() { # policy: both hosts run it
	[ "$(db "SELECT count(*) FROM hosts WHERE policy_name = '$1'")" = 2 ]
}
JS=(-H 'Content-Type: application/json')
sign_policy base '{"mitigations":{"rstat-yield":{"mode":"off"}}}'
sign_policy good '{"mitigations":{"rstat-yield":{"mode":"on"}}}'
expect 201 '"id":' "base is assigned to both hosts" ops POST /v1/assignments "${JS[@]}" \
	--data '{"policy":"base","version":1,"selector":{"all":true}}'
wait_for 30 running base || fail "the hosts do not run base: $(db 'SELECT host_id, policy_name FROM hosts')"
# one host, then both, 4 s each; two hosts carry no information on a ratio: waves pass, saying so
expect 201 '"state":"pending"' "rollout r is created" ops POST /v1/rollouts "${JS[@]}" --data \
	'{"name":"r","policy":"good","version":1,"selector":{"all":true},
	"waves":[{"count":1},{"percent":100}],"bake_s":4,"holdback_percent":0,
	"gates":{"min_exposure_h":0.0001,"min_hosts":1,"underpowered":"pass"}}'
expect 200 '"state":"running"' "rollout r starts" ops POST /v1/rollouts/action "${JS[@]}" \
	--data '{"name":"r","action":"start"}'
wait_for 30 in_state running 2 || fail "r did not reach wave 2: $(state), $(verdicts)"
[ "$(verdicts)" = "1 pass," ] || fail "wave 1's verdicts: $(verdicts)"
before=$(db "SELECT wave || ' ' || wave_started_ms FROM rollouts WHERE name = 'r'")
# whichever holds the lease: a tick-short lease (3/4 of this test's tick)
# can pass to the second kmemd while a busy machine stalls the first
grep -q "rollout r wave 1: pass" kmemd.log kmemd-b.log || fail "no kmemd judged wave 1"
echo "ok: the engine passed wave 1"

# the first goes in wave 2's bake
h2_moves=$(moves $h2 | wc -l)
kill -9 "$kmemd_pid"
wait "$kmemd_pid" 2>/dev/null || true
kmemd_pid=
# its log may say so from before: on a busy machine the lease can pass to
# it and back while the first stalls (above)
wait_for 10 is_leader $pb || fail "the second kmemd did not take the engine over: kmemd_engine_leader $(leader $pb)"
grep -q "runs the rollout engine" kmemd-b.log || fail "the second kmemd did not log taking the engine over"
after=$(db "SELECT wave || ' ' || wave_started_ms FROM rollouts WHERE name = 'r'")
[ "$before" = "$after" ] || fail "after the takeover the wave is $after, was $before"
echo "ok: the second kmemd took the engine over in wave 2, its start unchanged"
wait_for 60 in_state 'done' 2 || fail "r did not finish: $(state), $(verdicts)"
[ "$(verdicts)" = "1 pass,2 pass," ] || fail "r's verdicts: $(verdicts)"
grep -q "rollout r wave 2: pass" kmemd-b.log || fail "the second kmemd did not judge wave 2"
wait_for 30 running good || fail "the hosts do not run good: $(db 'SELECT host_id, policy_name FROM hosts')"
grep -q "did not answer: reporting to 127.0.0.1:$pb" agent-$h1.log ||
	fail "$h1 did not turn to the second kmemd: $(tail -3 agent-$h1.log)"
[ "$(moves $h2 | wc -l)" = "$h2_moves" ] ||
	fail "$h2 changed kmemd when the first went: $(moves $h2 | tail -3)"
for h in $h1 $h2; do
	grep -q "report [0-9]* from '$h'" kmemd-b.log || fail "the second kmemd stored none of $h's"
done
echo "ok: the second kmemd finished r (wave 1 pass, wave 2 pass); the agents report to it and run good"

# kmemctl: a read and a change go to the second, past the first that takes no connection
"${ops_cli[@]}" host list >hosts.out 2>hosts.err || fail "kmemctl host list: $(cat hosts.err)"
grep -q "^$h1 " hosts.out || fail "$h1 not listed by the second kmemd: $(cat hosts.out)"
grep -q "kmemctl: trying kmemd at 127.0.0.1:$pb" hosts.err ||
	fail "kmemctl did not say it tried the second: $(cat hosts.err)"
"${ops_cli[@]}" secret create --expires 10m >secret.out 2>secret.err ||
	fail "kmemctl secret create through the second: $(cat secret.err)"
grep -q "kmemctl: trying kmemd at 127.0.0.1:$pb" secret.err ||
	fail "the change did not go to the second: $(cat secret.err)"
echo "ok: kmemctl reads and changes through the second kmemd when the first is gone"

for h in $h1 $h2; do
	kill "${agent[$h]}"
	wait "${agent[$h]}" 2>/dev/null || true
done
no_report_lost $h1 $h2
echo "ok: every report the agents saw acknowledged, by either kmemd, is stored"
! grep -q "store query failed\|failed:" kmemd-b.log || fail "the second kmemd logged a failure"

# stopped cleanly, the engine's holder gives its lease up: the next need not wait it out
kill "$kmemd_b"
wait "$kmemd_b" || fail "the second kmemd exited with $? on SIGTERM"
grep -q "stops: it gave the rollout engine's lease up" kmemd-b.log ||
	fail "the second kmemd did not give the lease up: $(tail -3 kmemd-b.log)"
now_ms=$(date +%s%3N)
[ "$(db "SELECT count(*) FROM leases WHERE name = 'engine' AND expires_ms < $now_ms")" = 1 ] ||
	fail "the lease after a clean stop: $(db 'SELECT * FROM leases')"
echo "ok: a kmemd stopped cleanly gives the engine's lease up"
