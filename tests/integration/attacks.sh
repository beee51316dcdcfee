#!/bin/bash
# Hostile connections against a real kmemd while three real agents report
# through all of it: handshakes trickled a byte at a time, requests
# trickled after an anonymous handshake (slow-loris), connections that say
# nothing before or after their handshake, and kmemd out of descriptors.
# For each: kmemd's own defence acted (it closed or evicted the attackers,
# counted on /metrics), a valid host's reports over new connections are
# all acknowledged, every route answers, and no report an agent saw
# acknowledged is missing from the store. Latencies are bench/attack's.
set -euo pipefail

BUILD=${1:?usage: attacks.sh BUILD_DIR SOURCE_DIR}
SRC=${2:?usage: attacks.sh BUILD_DIR SOURCE_DIR}
KMEMCTL=$BUILD/cli/kmemctl
KMEMD=$BUILD/daemon/kmemd
AGENT=$BUILD/agent/kmem-agent
LOAD=$BUILD/bench/attack-load

work=$(mktemp -d "$BUILD/attacks.XXXXXX")
chmod 755 "$work"
# shellcheck source=tests/integration/lib.sh
. "$SRC/tests/integration/lib.sh"
in_work

pki_fleet
pki_hosts h1 h2 h3 valid
kmemd_conf >kmemd.conf
# small bounds, short deadlines: each defence acts within the test's time
sed -i 's/^\[server\]$/[server]\nmax_handshakes = 16\nmax_anonymous = 16\nmax_per_address = 8\nhandshake_timeout = 2s\nrequest_timeout = 2s\nio_timeout = 30s/' kmemd.conf
kmemd_start
agents_reporting web h1 h2 h3

# attack MODE N NETS: N attackers from NETS networks until the valid host has
# sent 10 reports, each over a new connection (-t is a cap no loaded machine
# needs), and the routes answer meanwhile; prints attack-load's line
attack() {
	$LOAD -s 127.0.0.1:$port -C pki/ca.crt -m "$1" -n "$2" -b "$3" -i 200 -t 240 -w 2 \
		-c pki/valid.crt -k pki/valid.key -H valid -r 10 >load.out &
	local load=$!
	pids+=($load)
	wait_for 20 grep -q "^warm" load.out || fail "$1: the attack did not get under way"
	routes_answer h1
	wait $load || fail "attack-load $1 failed"
	tail -1 load.out
	grep -q " acked=10 failed=0 " load.out || fail "$1: the valid host was not served: $(cat load.out)"
}

# closed REASON: kmemd_connections_closed_total{reason=REASON}
closed() {
	metric "kmemd_connections_closed_total{reason=\"$1\"}"
}

before=$(closed evicted)
attack trickle 64 32
[ "$(closed evicted)" -gt "$before" ] || fail "trickled handshakes were not evicted"
echo "ok: 64 trickled handshakes from 32 networks: evicted, the valid host served"

before=$(closed per_address)
attack trickle 40 1
[ "$(closed per_address)" -gt "$before" ] || fail "one network held more than its share"
echo "ok: 40 trickled handshakes from one network: held to its share, the valid host served"

before=$(closed request_timeout)
attack slowloris 12 12
[ "$(closed request_timeout)" -gt "$before" ] || fail "slow requests outlived request_timeout"
echo "ok: 12 slow-loris clients: cut at request_timeout, the valid host served"

before=$(($(closed evicted) + $(closed anonymous_full)))
attack idle-tls 64 64
[ $(($(closed evicted) + $(closed anonymous_full))) -gt "$before" ] ||
	fail "64 anonymous idle connections did not exceed max_anonymous 16"
echo "ok: 64 anonymous idle connections: held to max_anonymous, the valid host served"

before=$(closed handshake_timeout)
attack idle 12 12
[ "$(closed handshake_timeout)" -gt "$before" ] || fail "silent connections outlived handshake_timeout"
echo "ok: 12 silent connections: cut at handshake_timeout, the valid host served"

# Out of descriptors: kmemd's limit lowered under it to what it holds now
# plus a few. accept() fails; kmemd rests and says so once, not in a loop.
hard=$(awk '/Max open files/ { print $5 }' /proc/$kmemd_pid/limits)
open_fds=$(ls /proc/$kmemd_pid/fd | wc -l)
prlimit --pid $kmemd_pid --nofile=$((open_fds + 4)):$hard
$LOAD -s 127.0.0.1:$port -C pki/ca.crt -m idle -n 40 -b 10 -t 4 -w 10 >load.out
prlimit --pid $kmemd_pid --nofile=$hard:$hard
kill -0 $kmemd_pid || fail "kmemd died out of descriptors"
lines=$(grep -c "accepting a connection failed" kmemd.log || true)
[ "$lines" -ge 1 ] && [ "$lines" -le 2 ] ||
	fail "out of descriptors kmemd logged $lines lines, want one"
[ "$(metric kmemd_accept_errors_total)" -gt 0 ] || fail "no accept error counted"
$LOAD -s 127.0.0.1:$port -C pki/ca.crt -m none -n 0 -t 240 -w 0 -c pki/valid.crt \
	-k pki/valid.key -H valid -r 3 >load.out
grep -q " acked=3 failed=0 " load.out || fail "after the descriptors came back: $(cat load.out)"
echo "ok: out of descriptors kmemd rests and logs once; then it serves again"

# kmemd -n refuses bounds the descriptor limit cannot hold
rc=0
printf '[server]\nmax_connections = 5000\n' >>kmemd.conf
prlimit --nofile=1024:1024 $KMEMD -n -c kmemd.conf >check.out 2>&1 || rc=$?
[ "$rc" = 1 ] && grep -q "more than the limit of 1024" check.out ||
	fail "kmemd -n took max_connections past the descriptor limit: exit $rc, $(cat check.out)"
echo "ok: kmemd -n refuses max_connections the descriptor limit cannot hold"

routes_answer h1
agents_stop_none_lost h1 h2 h3
