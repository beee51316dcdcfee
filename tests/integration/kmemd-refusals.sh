#!/bin/bash
# kmemd refuses what it must, each with the right status, while a real
# agent keeps reporting through all of it: no client certificate, a
# foreign CA, an expired certificate, a revoked host, a host reporting as
# another, malformed, truncated and oversized reports, a wrong content
# type, a slow-loris client. Then kmemd is killed (SIGKILL) mid-stream and
# restarted: every report it acknowledged is in its SQLite file.
set -euo pipefail

BUILD=${1:?usage: kmemd-refusals.sh BUILD_DIR SOURCE_DIR}
SRC=${2:?usage: kmemd-refusals.sh BUILD_DIR SOURCE_DIR}
KMEMCTL=$BUILD/cli/kmemctl
KMEMD=$BUILD/daemon/kmemd
AGENT=$BUILD/agent/kmem-agent
FIXTURE=$SRC/tests/fixtures/host-6.1

work=$(mktemp -d "$BUILD/refusals.XXXXXX")
chmod 755 "$work"
# shellcheck source=tests/integration/lib.sh
. "$SRC/tests/integration/lib.sh"
in_work

pki_fleet
for h in h1 h2 h3 h4 h5; do
	$KMEMCTL pki issue pki host $h >/dev/null
done
$BUILD/tests/integration/pki-expired pki old
$KMEMCTL pki init foreign >/dev/null
$KMEMCTL pki issue foreign host h1 >/dev/null

start_kmemd() { # listen address
	cat >kmemd.conf <<CONF
[server]
listen = $1
cert = $work/pki/kmemd.crt
key = $work/pki/kmemd.key
ca = $work/pki/ca.crt
max_request = 128K
io_timeout = 1s
[store]
path = $work/kmemd.sqlite
[rollout]
tick = 1s
CONF
	$KMEMD -d -c kmemd.conf >>kmemd.log 2>&1 &
	kmemd_pid=$!
	wait_for 10 grep -q "listening on port" kmemd.log || fail "kmemd did not start"
}
start_kmemd 127.0.0.1:0
port=$(sed -n 's/.*listening on port \([0-9]*\).*/\1/p' kmemd.log | sed -n 1p)
URL=https://127.0.0.1:$port

# the listener's backlog holds a fleet reconnecting at once: the kernel's
# bound, not libevent's 128 (ss shows a listener's backlog as its Send-Q)
backlog=$(ss -Hltn "sport = :$port" | awk '{ print $3 }')
want=$(($(cat /proc/sys/net/core/somaxconn) < 4096 ? $(cat /proc/sys/net/core/somaxconn) : 4096))
[ "$backlog" = "$want" ] || fail "kmemd's listen backlog is '$backlog', not $want"
echo "ok: a listen backlog of $backlog"

agent_conf() { # host_id cert-dir cert-name
	cat <<CONF
[agent]
host_id = $1
server = 127.0.0.1:$port
interval = 1s
state_dir = $work/state-$1
user = nobody
control = $work/ctl-$1.sock
[tls]
cert = $work/$2/$3.crt
key = $work/$2/$3.key
ca = $work/pki/ca.crt
CONF
}

# h1 reports every second throughout
agent_conf h1 pki h1 >h1.conf
$AGENT -d -r "$FIXTURE" -c h1.conf >h1.log 2>&1 &
agent_pid=$!
acked() {
	grep -c "report [0-9]* acknowledged" h1.log || true
}
wait_for 10 grep -q "report 1 acknowledged" h1.log || fail "h1's first report: $(cat h1.log)"

# a real report to take apart: one kmemd acknowledged, from h1's own run
agent_conf h1 pki h1 | sed "s/^server = .*/server = 127.0.0.1:1/; s/state-h1/state-spool/" >spool.conf
$AGENT -r "$FIXTURE" -c spool.conf >spool.log 2>&1 &
spooler=$!
wait_for 10 sh -c 'ls state-spool/spool/*.report >/dev/null 2>&1' || fail "nothing spooled"
kill $spooler
wait $spooler || true
report=$(ls state-spool/spool/*.report | sed -n 1p)

# The body waits for kmemd's go-ahead (100-continue): a refusal sent on
# the headers alone then never races the upload into a reset connection.
post() { # cert-name content-type body-file: prints the status code
	curl -sS --cacert pki/ca.crt --cert pki/$1.crt --key pki/$1.key -o body.out \
		-w '%{http_code}' -H "Content-Type: $2" -H 'Expect: 100-continue' \
		--data-binary @"$3" "$URL/v1/agent/report" || true
}
expect_status() { # code what cert type file
	local code=$1 what=$2 got
	shift 2
	got=$(post "$@")
	[ "$got" = "$code" ] || fail "$what: status $got, want $code ($(cat body.out 2>/dev/null))"
	echo "ok: $what: $code"
}

expect_status 200 "a real report" h1 application/x-protobuf "$report"
printf 'this is not protobuf at all' >garbage.bin
expect_status 400 "a malformed report" h1 application/x-protobuf garbage.bin
head -c 40 "$report" >truncated.bin
expect_status 400 "a truncated report" h1 application/x-protobuf truncated.bin
head -c 200000 /dev/zero >big.bin
expect_status 413 "an oversized report" h1 application/x-protobuf big.bin
expect_status 415 "a wrong content type" h1 application/json "$report"
$BUILD/tests/integration/report-edit "$report" badname.bin 'probe=vmap purge"} 1'
expect_status 400 "a probe name that is no name" h1 application/x-protobuf badname.bin
grep -q "probes.probe" body.out || fail "no reason for the bad probe name: $(cat body.out)"
$BUILD/tests/integration/report-edit "$report" badhist.bin probe=vmap-purge count=5
expect_status 400 "a histogram that does not add up" h1 application/x-protobuf badhist.bin
grep -q "inconsistent" body.out || fail "no reason for the bad histogram: $(cat body.out)"
expect_status 403 "h2 reporting as h1" h2 application/x-protobuf "$report"
# a host id with a NUL in it: as a C string it would read "h2", h2's own
$BUILD/tests/integration/report-edit "$report" nulhost.bin host=h2Xh1
python3 -c 'import sys; d = open(sys.argv[1], "rb").read(); assert d.count(b"h2Xh1") == 1
open(sys.argv[2], "wb").write(d.replace(b"h2Xh1", b"h2\0h1"))' nulhost.bin nulhost2.bin
expect_status 400 "h2 reporting as h2\\0h1" h2 application/x-protobuf nulhost2.bin
grep -q "facts.host_id holds a NUL byte" body.out || fail "no reason for the NUL: $(cat body.out)"

code=$(curl -sS --cacert pki/ca.crt -o /dev/null -w '%{http_code}' \
	-H 'Content-Type: application/x-protobuf' --data-binary @"$report" "$URL/v1/agent/report")
[ "$code" = 401 ] || fail "no client certificate: $code"
echo "ok: no client certificate: 401"
# without one, a body goes to enrollment only, of 16 KiB at most, refused at its headers
head -c 16385 /dev/zero >anon.bin
code=$(curl -sS --cacert pki/ca.crt -o body.out -w '%{http_code}' -H 'Expect: 100-continue' \
	-H 'Content-Type: application/x-protobuf' --data-binary @anon.bin "$URL/v1/enroll")
[ "$code" = 413 ] || fail "an anonymous enrollment of 16 KiB + 1: $code"
code=$(curl -sS --cacert pki/ca.crt -o body.out -w '%{http_code}' -H 'Expect: 100-continue' \
	-H 'Content-Type: application/json' --data '{}' "$URL/v1/policies")
[ "$code" = 401 ] || fail "an anonymous body to /v1/policies: $code"
echo "ok: without a certificate, a body of 16 KiB + 1 to enrollment is 413, one to another route 401"
rc=0
curl -sS --cacert pki/ca.crt --cert foreign/h1.crt --key foreign/h1.key -o /dev/null \
	-H 'Content-Type: application/x-protobuf' --data-binary @"$report" \
	"$URL/v1/agent/report" 2>curl.err || rc=$?
[ "$rc" != 0 ] || fail "a certificate from a foreign CA was taken"
echo "ok: a certificate from a foreign CA: TLS refused (curl exit $rc)"
rc=0
curl -sS --cacert pki/ca.crt --cert pki/old.crt --key pki/old.key -o /dev/null \
	-H 'Content-Type: application/x-protobuf' --data-binary @"$report" \
	"$URL/v1/agent/report" 2>curl.err || rc=$?
[ "$rc" != 0 ] || fail "an expired certificate was taken"
echo "ok: an expired certificate: TLS refused (curl exit $rc)"

# a revoked host
out=$(curl -sS --cacert pki/ca.crt --cert pki/ops.crt --key pki/ops.key \
	-H 'Content-Type: application/json' --data '{"host":"h3"}' "$URL/v1/hosts/revoke")
grep -q '"revoked":true' <<<"$out" || fail "revoke: $out"
agent_conf h3 pki h3 >h3.conf
rc=0
$AGENT -o -r "$FIXTURE" -c h3.conf >h3.log 2>&1 || rc=$?
[ "$rc" = 4 ] && grep -q "revoked" h3.log || fail "revoked h3: exit $rc, $(cat h3.log)"
echo "ok: a revoked host is refused (agent exit 4)"

# A host revoked while its agent reports over an open connection: kmemd
# closes that connection when it learns of the revocation (at once when it
# is made here, at the next engine tick, 1 s here, for a revocation
# straight into the store, which stands for one made by another kmemd
# sharing it), and refuses its new ones at their first request.
revoked_while_connected() { # host how
	local before
	agent_conf $1 pki $1 >$1.conf
	$AGENT -d -r "$FIXTURE" -c $1.conf >$1.log 2>&1 &
	local pid=$!
	wait_for 10 grep -q "report 3 acknowledged" $1.log || fail "$1's reports: $(cat $1.log)"
	before=$(metric 'kmemd_connections_closed_total{reason="revoked"}')
	$2 $1
	wait_for 10 grep -q "revoked" $1.log ||
		fail "$1 revoked ($2) while connected: still acknowledged: $(tail -3 $1.log)"
	# the report route may refuse it first (it asks the store); the
	# connection is closed at the tick that reads the revocation
	closed_revoked() {
		[ "$(metric 'kmemd_connections_closed_total{reason="revoked"}')" -gt "$before" ]
	}
	wait_for 10 closed_revoked || fail "kmemd did not close $1's connections as revoked"
	kill $pid
	wait $pid || true
	echo "ok: $1 revoked ($2) while connected: its connection closed, its reports refused"
}
revoke_api() {
	curl -sSf --cacert pki/ca.crt --cert pki/ops.crt --key pki/ops.key -o /dev/null \
		-H 'Content-Type: application/json' --data "{\"host\":\"$1\"}" "$URL/v1/hosts/revoke"
}
revoke_store() {
	sqlite3 -cmd '.timeout 5000' kmemd.sqlite "UPDATE hosts SET revoked = 1 WHERE host_id = '$1'"
}
revoked_while_connected h4 revoke_api
revoked_while_connected h5 revoke_store

# slow loris: headers trickle in; kmemd drops the connection at io_timeout
(printf 'POST /v1/agent/report HTTP/1.1\r\nHost: x\r\n'; sleep 8) |
	openssl s_client -quiet -connect 127.0.0.1:$port -cert pki/h1.crt -key pki/h1.key \
		-CAfile pki/ca.crt >loris.out 2>&1 &
loris=$!
start=$(date +%s%N)
wait_for 5 sh -c "! kill -0 $loris 2>/dev/null" || fail "a slow-loris client held its connection 5 s"
took=$((($(date +%s%N) - start) / 1000000))
echo "ok: a slow-loris client is dropped after ${took} ms (io_timeout 1 s)"
kill -0 "$kmemd_pid" || fail "kmemd died"
before=$(acked)
wait_for 10 sh -c "[ \$(grep -c 'report [0-9]* acknowledged' h1.log) -gt $before ]" ||
	fail "h1's reports stopped being acknowledged"
echo "ok: h1's reports kept flowing throughout ($(acked) acknowledged)"

# SIGHUP: a new server certificate for new connections; a bad config changes nothing
serial() {
	openssl s_client -connect 127.0.0.1:$port -CAfile pki/ca.crt </dev/null 2>/dev/null |
		openssl x509 -noout -serial
}
old_serial=$(serial)
$KMEMCTL pki issue pki server kmemd ip 127.0.0.1 >/dev/null
kill -HUP "$kmemd_pid"
wait_for 10 grep -q "configuration, certificates and policy keys reloaded" kmemd.log ||
	fail "no reload"
new_serial=$(serial)
[ -n "$new_serial" ] && [ "$new_serial" != "$old_serial" ] ||
	fail "the server certificate did not change on SIGHUP: $old_serial / $new_serial"
cp kmemd.conf kmemd.conf.good
printf '[server]\nio_timeout = forever\n' >>kmemd.conf
kill -HUP "$kmemd_pid"
wait_for 10 grep -q "reload failed" kmemd.log || fail "a bad configuration was not refused"
cp kmemd.conf.good kmemd.conf
[ "$(serial)" = "$new_serial" ] || fail "a failed reload changed the certificate"
before=$(acked)
wait_for 10 sh -c "[ \$(grep -c 'report [0-9]* acknowledged' h1.log) -gt $before ]" ||
	fail "reports stopped after the reloads"
echo "ok: SIGHUP reloads the certificate; a bad configuration is refused and changes nothing"

# max_connections: h2 fills the pool with idle connections beside h1's
# agent (when its connection is open), and h2 asking for one more is told
# to go away: an identity holding at least its share takes no other's slot
# (a newcomer would take one of an identity holding two: insiders.sh).
# Operators have their own bound (max_operators), which hosts cannot fill.
printf '[server]\nmax_connections = 2\nmax_operators = 2\nio_timeout = 8s\n' >>kmemd.conf
kill -HUP "$kmemd_pid"
wait_for 10 sh -c '[ $(grep -c "policy keys reloaded" kmemd.log) -ge 2 ]' || fail "no second reload"
holders=()
for i in 1 2 3; do
	(sleep 6) | openssl s_client -quiet -connect 127.0.0.1:$port -cert pki/h2.crt \
		-key pki/h2.key -CAfile pki/ca.crt >/dev/null 2>&1 &
	holders+=($!)
done
for i in $(seq 50); do
	[ "$(metric kmemd_connections_hosts)" = 2 ] && break
	sleep 0.1
done
code=$(curl -sS --cacert pki/ca.crt --cert pki/h2.crt --key pki/h2.key -o body.out \
	-w '%{http_code}' "$URL/v1/health")
[ "$code" = 503 ] && grep -q "max_connections" body.out ||
	fail "over max_connections: $code $(cat body.out)"
# it bounds hosts: a client without a certificate is not counted, nor an operator
code=$(curl -sS --cacert pki/ca.crt -o body.out -w '%{http_code}' "$URL/v1/health")
[ "$code" = 200 ] || fail "an anonymous client over max_connections: $code $(cat body.out)"
code=$(curl -sS --cacert pki/ca.crt --cert pki/ops.crt --key pki/ops.key -o body.out \
	-w '%{http_code}' "$URL/v1/hosts")
[ "$code" = 200 ] || fail "an operator while hosts fill max_connections: $code $(cat body.out)"
hold_operator() {
	(sleep 6) | openssl s_client -quiet -connect 127.0.0.1:$port -cert pki/ops.crt \
		-key pki/ops.key -CAfile pki/ca.crt >/dev/null 2>&1 &
	holders+=($!)
	sleep 1
}
operators() { # until the operator holding its connection and the one asking are counted
	local i n
	for i in $(seq 25); do
		n=$(metric kmemd_connections_operators)
		[ "$n" != 2 ] || return 0
		sleep 0.2
	done
	fail "kmemd_connections_operators: $n, want 2"
}
hold_operator
operators
hold_operator
# the second holder counted (a third asks): a third is refused
for i in $(seq 25); do
	code=$(curl -sS --cacert pki/ca.crt --cert pki/ops.crt --key pki/ops.key -o body.out \
		-w '%{http_code}' "$URL/v1/hosts")
	[ "$code" != 200 ] && break
	sleep 0.2
done
[ "$code" = 503 ] && grep -q "max_operators" body.out ||
	fail "a third operator over max_operators 2: $code $(cat body.out)"
kill "${holders[@]}" 2>/dev/null || true
wait "${holders[@]}" 2>/dev/null || true
cp kmemd.conf.good kmemd.conf
kill -HUP "$kmemd_pid"
wait_for 10 sh -c '[ $(grep -c "policy keys reloaded" kmemd.log) -ge 3 ]' || fail "no third reload"
code=$(curl -sS --cacert pki/ca.crt -o body.out -w '%{http_code}' "$URL/v1/health")
[ "$code" = 200 ] || fail "after the holders left: $code"
echo "ok: a host over max_connections gets 503, an operator 200 (its own bound, max_operators); once they close, 200"

# max_handshakes: two silent clients hold both handshake slots; once they
# have stood still past kmemd's eviction time (100 ms without a
# ClientHello, a second after one) a third client takes the place of one
# of them, and is served
printf '[server]\nmax_handshakes = 2\nio_timeout = 8s\n' >>kmemd.conf
kill -HUP "$kmemd_pid"
wait_for 10 sh -c '[ $(grep -c "policy keys reloaded" kmemd.log) -ge 4 ]' || fail "no fourth reload"
exec 5<>/dev/tcp/127.0.0.1/$port 6<>/dev/tcp/127.0.0.1/$port
# a handshake that moved more recently may be a host's in progress
sleep 1.5
code=$(curl -sS --max-time 20 --cacert pki/ca.crt -o /dev/null -w '%{http_code}' "$URL/v1/health")
[ "$code" = 200 ] || fail "with the handshake slots held by silent clients: $code"
closed=0
for fd in 5 6; do
	timeout 2 cat <&$fd >/dev/null && closed=$((closed + 1))
done
exec 5>&- 6>&-
[ "$closed" = 1 ] || fail "$closed of the two silent clients were closed, want the oldest one"
cp kmemd.conf.good kmemd.conf
kill -HUP "$kmemd_pid"
wait_for 10 sh -c '[ $(grep -c "policy keys reloaded" kmemd.log) -ge 5 ]' || fail "no fifth reload"
echo "ok: at max_handshakes the oldest silent handshake gives way to a new client"

# a separate admin CA: its certificates are the operators, the fleet CA's are not
$KMEMCTL pki init admin-pki >/dev/null
$KMEMCTL pki issue admin-pki admin alice >/dev/null
$KMEMCTL pki issue admin-pki host h1 >/dev/null
call() { # cert-dir cert-name path: prints the status code
	curl -sS --cacert pki/ca.crt --cert "$1/$2.crt" --key "$1/$2.key" -o body.out \
		-w '%{http_code}' "$URL$3" || true
}
[ "$(call pki ops /v1/hosts)" = 200 ] || fail "the fleet CA's operator before admin_ca"
printf '[server]\nadmin_ca = %s\n' "$work/pki/ca.crt" >>kmemd.conf
kill -HUP "$kmemd_pid"
wait_for 10 sh -c '[ $(grep -c "reload failed" kmemd.log) -ge 2 ]' ||
	fail "admin_ca = ca was not refused"
grep -q "must be another CA" kmemd.log || fail "no reason for refusing admin_ca = ca"
cp kmemd.conf.good kmemd.conf
printf '[server]\nadmin_ca = %s\n' "$work/admin-pki/ca.crt" >>kmemd.conf
kill -HUP "$kmemd_pid"
wait_for 10 sh -c '[ $(grep -c "policy keys reloaded" kmemd.log) -ge 6 ]' || fail "no sixth reload"
code=$(call admin-pki alice /v1/hosts)
[ "$code" = 200 ] || fail "an admin CA operator: $code $(cat body.out)"
code=$(call pki ops /v1/hosts)
[ "$code" = 403 ] || fail "a fleet CA certificate with OU=admin under admin_ca: $code"
code=$(curl -sS --cacert pki/ca.crt --cert admin-pki/h1.crt --key admin-pki/h1.key \
	-o body.out -w '%{http_code}' -H 'Content-Type: application/x-protobuf' \
	--data-binary @"$report" "$URL/v1/agent/report" || true)
[ "$code" = 403 ] || fail "a host certificate from the admin CA reported: $code"
before=$(acked)
wait_for 10 sh -c "[ \$(grep -c 'report [0-9]* acknowledged' h1.log) -gt $before ]" ||
	fail "fleet hosts stopped reporting under admin_ca"
cp kmemd.conf.good kmemd.conf
kill -HUP "$kmemd_pid"
wait_for 10 sh -c '[ $(grep -c "policy keys reloaded" kmemd.log) -ge 7 ]' || fail "no seventh reload"
echo "ok: with admin_ca only its certificates are operators (fleet OU=admin: 403; its hosts: 403)"

# SIGKILL mid-stream, restart on the same port: nothing acknowledged is lost
kill -9 "$kmemd_pid"
wait "$kmemd_pid" 2>/dev/null || true
kmemd_pid=
sleep 1
start_kmemd 127.0.0.1:$port
before=$(acked)
wait_for 30 sh -c "[ \$(grep -c 'report [0-9]* acknowledged' h1.log) -gt $((before + 2)) ]" ||
	fail "h1 did not come back after kmemd's restart: $(tail -5 h1.log)"
kill "$agent_pid"
wait "$agent_pid" || true
agent_pid=
sed -n 's/.* report \([0-9]*\) acknowledged.*/\1/p' h1.log | sort >acked.txt
sqlite3 kmemd.sqlite "SELECT seq FROM counters WHERE host_id = 'h1'" | sort >stored.txt
missing=$(comm -23 acked.txt stored.txt | tr '\n' ' ')
[ -z "$missing" ] || fail "acknowledged but not stored: $missing"
echo "ok: kmemd killed and restarted: all $(wc -l <acked.txt) acknowledged reports are stored"
kill "$kmemd_pid"
wait "$kmemd_pid" || fail "kmemd exited with $? on SIGTERM"
kmemd_pid=
echo PASS
