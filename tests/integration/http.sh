#!/bin/bash
# kmemd's own HTTP/1.1 (daemon/conn.c, daemon/http1.c) against what real
# clients send and what hostile ones may: pipelined requests, chunked
# bodies, Expect: 100-continue, HTTP/1.0, Connection: close, headers and
# bodies past their bounds, bytes that are not HTTP, another version, and a
# client that sends requests and never reads the replies. Each is answered
# as HTTP says or refused with its status and closed, while a real agent
# reports through all of it: kmemd keeps running and no report it
# acknowledged is lost.
set -euo pipefail

BUILD=${1:?usage: http.sh BUILD_DIR SOURCE_DIR}
SRC=${2:?usage: http.sh BUILD_DIR SOURCE_DIR}
KMEMCTL=$BUILD/cli/kmemctl
KMEMD=$BUILD/daemon/kmemd
AGENT=$BUILD/agent/kmem-agent
RAW=$SRC/tests/integration/http-raw.py

work=$(mktemp -d "$BUILD/http.XXXXXX")
chmod 755 "$work"
# shellcheck source=tests/integration/lib.sh
. "$SRC/tests/integration/lib.sh"
in_work

pki_fleet
pki_hosts h1
kmemd_conf >kmemd.conf
# the client that does not read is closed within the test's time
sed -i 's/^\[server\]$/[server]\nio_timeout = 2s/' kmemd.conf
kmemd_start
agents_reporting web h1

raw() {
	python3 "$RAW" "$port" pki/ca.crt pki/ops.crt pki/ops.key "$@" || fail "$1"
}
for c in pipelined chunked continue http10 close headers-too-long not-http version too-large; do
	raw $c
done
raw no-reader 2

kill -0 "$kmemd_pid" || fail "kmemd died"
routes_answer h1
n=$(grep -c "report [0-9]* acknowledged" agent-h1.log)
wait_for 10 sh -c "[ \$(grep -c 'report [0-9]* acknowledged' agent-h1.log) -gt $n ]" ||
	fail "h1's reports stopped being acknowledged"
agents_stop_none_lost h1
