#!/bin/bash
# Roles and operator revocation. Every route of kmemd's table (kmemd -r)
# is called by an observer, an operator, a host and no certificate: an
# observer reads and is refused (403) everything that changes state, and
# changes nothing; a host reaches no admin route. Then an operator is
# revoked while its connection is open: its next request on that very
# connection is refused, as are new ones, after a restart too, and (on
# PostgreSQL, KMEM_STORE_URL) by a second kmemd on the same store.
set -euo pipefail

BUILD=${1:?usage: roles.sh BUILD_DIR SOURCE_DIR}
SRC=${2:?usage: roles.sh BUILD_DIR SOURCE_DIR}
KMEMCTL=$BUILD/cli/kmemctl
KMEMD=$BUILD/daemon/kmemd

work=$(mktemp -d "$BUILD/roles.XXXXXX")
# shellcheck source=tests/integration/lib.sh
. "$SRC/tests/integration/lib.sh"
in_work

pki_fleet
pki_hosts h1
$KMEMCTL pki issue pki observer viewer >/dev/null
$KMEMCTL pki issue pki operator alice >/dev/null
$KMEMCTL pki issue pki operator bob >/dev/null
kmemd_conf >kmemd.conf
kmemd_start

audit_rows() {
	db 'SELECT count(*) FROM audit'
}
# code AS METHOD PATH: the status code alone (AS "-": no certificate)
code() {
	local who=$1 method=$2 path=$3 auth=()
	[ "$who" = - ] || auth=(--cert pki/$who.crt --key pki/$who.key)
	curl -sS -o body.out --cacert pki/ca.crt "${auth[@]}" -X "$method" \
		-H 'Content-Type: application/json' --data '{}' -w '%{http_code}' "$URL$path"
}

n_obs=0 n_op=0
while read -r method path role rest; do
	[ "$role" = any ] && continue
	[[ " $rest " == *" prefix "* ]] && path=${path}app.js
	c=$(code - "$method" "$path")
	[ "$c" = 401 ] || fail "$method $path without a certificate: $c, want 401"
	case $role in
	host)
		for who in viewer ops; do
			c=$(code $who "$method" "$path")
			[ "$c" = 403 ] || fail "$method $path by $who: $c, want 403 (a host's route)"
		done
		;;
	observer)
		n_obs=$((n_obs + 1))
		for who in viewer ops; do
			c=$(code $who "$method" "$path")
			case $c in 401 | 403) fail "$method $path by $who: $c, want it let in" ;; esac
		done
		c=$(code h1 "$method" "$path")
		[ "$c" = 403 ] || fail "$method $path by a host: $c, want 403"
		;;
	operator)
		n_op=$((n_op + 1))
		before=$(audit_rows)
		c=$(code viewer "$method" "$path")
		[ "$c" = 403 ] || fail "$method $path by an observer: $c, want 403"
		grep -q "observer certificate reads only" body.out ||
			fail "$method $path: the observer's refusal says $(cat body.out)"
		[ "$(audit_rows)" = "$before" ] || fail "$method $path: the observer's refusal was audited as a change"
		c=$(code h1 "$method" "$path")
		[ "$c" = 403 ] || fail "$method $path by a host: $c, want 403"
		c=$(code ops "$method" "$path")
		case $c in 401 | 403) fail "$method $path by an operator: $c, want it let in" ;; esac
		;;
	*) fail "kmemd -r: $method $path has role '$role'" ;;
	esac
done < <($KMEMD -r)
[ $n_obs -ge 12 ] && [ $n_op -ge 9 ] || fail "kmemd -r lists $n_obs observer and $n_op operator routes"
echo "ok: $n_obs observer routes read by both roles, $n_op operator routes refused to observers (403), none to hosts"

# what each says it may do, as kmemd's table has it
whoami() { # AS: role, may_change, then the routes, a line each
	$KMEMCTL -j --server 127.0.0.1:$port --ca pki/ca.crt --cert pki/$1.crt --key pki/$1.key \
		whoami | python3 -c 'import json, sys
w = json.load(sys.stdin)
print(w["role"], w["may_change"])
print("\n".join(sorted(w["routes"])))'
}
want_routes() { # ROLE...: the routes of those roles in kmemd -r
	$KMEMD -r | awk -v roles=" $* " 'index(roles, " " $3 " ") {
		print $1 " " $2 (index($0, " prefix") ? "*" : "") }' | sort
}
[ "$(whoami viewer)" = "$(printf 'observer False\n%s' "$(want_routes observer)")" ] ||
	fail "whoami as an observer: $(whoami viewer)"
[ "$(whoami alice)" = "$(printf 'operator True\n%s' "$(want_routes observer operator)")" ] ||
	fail "whoami as an operator: $(whoami alice)"
# a certificate issued as "admin" before observers existed is an operator
[ "$(whoami ops | sed -n 1p)" = "operator True" ] || fail "an \"admin\" certificate: $(whoami ops)"
echo "ok: whoami gives each role the routes kmemd lets it call"

# bad revocations change nothing
before=$(db 'SELECT count(*) FROM operators WHERE revoked_ms IS NOT NULL')
JS=(-H 'Content-Type: application/json')
expect 400 'want one of' "revoke: nothing named" ops POST /v1/operators/revoke "${JS[@]}" --data '{}'
expect 400 'want one of' "revoke: two ways at once" ops POST /v1/operators/revoke "${JS[@]}" \
	--data '{"name":"alice","fingerprint":"00"}'
expect 400 'want one of' "revoke: an unknown key" ops POST /v1/operators/revoke "${JS[@]}" \
	--data '{"nam":"alice"}'
expect 400 '64 hex digits' "revoke: a short fingerprint" ops POST /v1/operators/revoke \
	"${JS[@]}" --data '{"fingerprint":"abcd"}'
expect 400 '64 hex digits' "revoke: a fingerprint not hex" ops POST /v1/operators/revoke \
	"${JS[@]}" --data "{\"fingerprint\":\"$(printf 'z%.0s' {1..64})\"}"
expect 400 'one X.509 certificate' "revoke: a certificate not PEM" ops POST \
	/v1/operators/revoke "${JS[@]}" --data '{"certificate":"junk"}'
cat pki/alice.crt pki/bob.crt >two.crt
expect 400 'one X.509 certificate' "revoke: two certificates" ops POST /v1/operators/revoke \
	"${JS[@]}" --data "$(python3 -c 'import json; print(json.dumps({"certificate": open("two.crt").read()}))')"
expect 404 'no operator certificate named' "revoke: a name never seen" ops POST \
	/v1/operators/revoke "${JS[@]}" --data '{"name":"mallory"}'
expect 400 '1 to 64 printable' "revoke: an empty name" ops POST /v1/operators/revoke \
	"${JS[@]}" --data '{"name":""}'
[ "$(db 'SELECT count(*) FROM operators WHERE revoked_ms IS NOT NULL')" = "$before" ] ||
	fail "a refused revocation revoked something"

# alice, connected, is revoked by name between two requests on one connection:
# kmemd closes her connection at the revocation
cat >keepalive.py <<'PY'
import http.client, json, ssl, subprocess, sys
port, between = int(sys.argv[1]), sys.argv[2]
ctx = ssl.create_default_context(cafile="pki/ca.crt")
ctx.load_cert_chain("pki/alice.crt", "pki/alice.key")
c = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=20)
c.request("GET", "/v1/whoami")
r = c.getresponse()
first = (r.status, r.read())
subprocess.run(["sh", "-c", between], check=True)
try:
    c.request("GET", "/v1/whoami")
    r = c.getresponse()
    print(first[0], r.status, r.read().decode().strip())
except (http.client.RemoteDisconnected, ConnectionError, ssl.SSLError) as e:
    print(first[0], "closed", type(e).__name__)
PY
revoke_alice="$KMEMCTL --server 127.0.0.1:$port --ca pki/ca.crt --cert pki/ops.crt \
	--key pki/ops.key operator revoke alice >revoke.out"
closed_before=$(api ops GET /metrics | sed -n 's/^kmemd_connections_closed_total{reason="revoked"} //p')
out=$(python3 keepalive.py $port "$revoke_alice")
[[ "$out" == "200 closed "* ]] || fail "alice's connection across her revocation: $out"
grep -q '^1 certificate of alice revoked' revoke.out || fail "kmemctl operator revoke: $(cat revoke.out)"
closed=$(api ops GET /metrics | sed -n 's/^kmemd_connections_closed_total{reason="revoked"} //p')
[ "$closed" -gt "$closed_before" ] || fail "alice's connection was not counted closed as revoked"
expect 403 revoked "alice on a new connection" alice GET /v1/hosts
expect 200 '"role":"observer"' "the observer still" viewer GET /v1/whoami
echo "ok: an operator revoked while connected: her connection closed at once, new ones refused"

# bob was never seen: revoked by his certificate's file, refused at his first request
$KMEMCTL --server 127.0.0.1:$port --ca pki/ca.crt --cert pki/ops.crt --key pki/ops.key \
	operator revoke --cert pki/bob.crt >revoke.out
grep -q 'of bob revoked: every kmemd' revoke.out || fail "revoke --cert: $(cat revoke.out)"
expect 403 revoked "bob, revoked before he was seen" bob GET /v1/whoami
# the viewer's certificate by its fingerprint, as openssl prints it (colons, capitals)
fp=$(openssl x509 -in pki/viewer.crt -noout -fingerprint -sha256 | cut -d= -f2)
expect 200 '"revoked":1' "revoke by fingerprint $fp" ops POST /v1/operators/revoke "${JS[@]}" \
	--data "{\"fingerprint\":\"$fp\"}"
expect 200 '"revoked":0' "the same again changes nothing" ops POST /v1/operators/revoke \
	"${JS[@]}" --data "{\"fingerprint\":\"$fp\"}"
expect 403 revoked "the viewer" viewer GET /metrics
refused=$(api ops GET /metrics | sed -n 's/^kmemd_connections_closed_total{reason="revoked"} //p')
[ "$refused" -ge 4 ] || fail "kmemd_connections_closed_total{reason=\"revoked\"} is '$refused', want >= 4"
grep -q '^kmemd_operator_certificate_expiry_timestamp_seconds [0-9]' <(api ops GET /metrics) ||
	fail "no operator certificate expiry on /metrics"
echo "ok: certificates revoked by file and fingerprint; $refused refusals counted"

# the list, and the audit of it all
$KMEMCTL -j --server 127.0.0.1:$port --ca pki/ca.crt --cert pki/ops.crt --key pki/ops.key \
	operator list | python3 -c 'import json, sys
ops = {o["name"]: o for o in json.load(sys.stdin)["operators"]}
assert ops["alice"]["revoked_by"] == "ops", ops["alice"]
assert ops["bob"]["revoked_by"] == "ops" and ops["bob"]["last_seen_ms"] is None, ops["bob"]
assert ops["viewer"]["role"] == "observer" and ops["viewer"]["revoked_ms"], ops["viewer"]
assert ops["ops"]["role"] == "operator" and ops["ops"]["revoked_ms"] is None, ops["ops"]' ||
	fail "operator list"
[ "$(db "SELECT count(*) FROM audit WHERE action = 'operator.revoke' AND actor = 'ops'")" = 4 ] ||
	fail "operator.revoke audit rows: $(db "SELECT detail FROM audit WHERE action = 'operator.revoke'")"
echo "ok: operator list and the audit log have the revocations"

# revocations outlive kmemd
kill $kmemd_pid
wait $kmemd_pid || true
kmemd_start
port=$(sed -n 's/.*listening on port \([0-9]*\).*/\1/p' kmemd.log | tail -1)
URL=https://127.0.0.1:$port
expect 403 revoked "alice after a restart" alice GET /v1/whoami
expect 200 '"role":"operator"' "ops after a restart" ops GET /v1/whoami

# and every kmemd on the store refuses them
if [ -n "${KMEM_STORE_URL:-}" ]; then
	sed "s|^listen = .*|listen = 127.0.0.1:0|" kmemd.conf >kmemd2.conf
	$KMEMD -d -c kmemd2.conf >kmemd2.log 2>&1 &
	pids+=($!)
	wait_for 10 grep -q 'listening on port' kmemd2.log || fail "the second kmemd did not start"
	port2=$(sed -n 's/.*listening on port \([0-9]*\).*/\1/p' kmemd2.log | sed -n 1p)
	URL=https://127.0.0.1:$port2 expect 403 revoked "alice at a second kmemd" alice GET /v1/hosts
	# and one revoked at the second is refused at the first at once
	URL=https://127.0.0.1:$port2 expect 200 '"revoked":1' "revoke ops at the second kmemd" \
		ops POST /v1/operators/revoke "${JS[@]}" --data '{"name":"ops"}'
	expect 403 revoked "ops at the first kmemd" ops GET /v1/whoami
	echo "ok: two kmemd on one store share the revocations"
fi
echo PASS
