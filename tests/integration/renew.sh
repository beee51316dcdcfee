#!/bin/bash
# Host certificates renew themselves. h1's first certificate runs for a
# minute and has 20 s left: its agent asks kmemd for a new one with it at
# its first report (two thirds of its lifetime are gone), uses it for its
# next connection and keeps it in its files, and goes on reporting after
# the first one expired, through a restart too. kmemd audits the renewal
# and refuses it to a revoked host, for another host's id, to an operator,
# and more than twice a minute per host; an agent with [tls] renew = no
# keeps its certificate.
set -euo pipefail

BUILD=${1:?usage: renew.sh BUILD_DIR SOURCE_DIR}
SRC=${2:?usage: renew.sh BUILD_DIR SOURCE_DIR}
KMEMCTL=$BUILD/cli/kmemctl
KMEMD=$BUILD/daemon/kmemd
AGENT=$BUILD/agent/kmem-agent

work=$(mktemp -d "$BUILD/renew.XXXXXX")
chmod 755 "$work"
# shellcheck source=tests/integration/lib.sh
. "$SRC/tests/integration/lib.sh"
in_work

pki_fleet
pki_hosts h2 h4
kmemd_conf >kmemd.conf
printf '[ca]\nkey = %s\n' "$work/pki/ca.key" >>kmemd.conf
kmemd_start
# made just before their agents start, whose first report must come
# before they expire; h3's as h1's, 5 s longer: the first to expire once
# h1 renewed
"$BUILD/tests/integration/pki-expired" pki h1 -40 20
"$BUILD/tests/integration/pki-expired" pki h3 -40 25

not_after() { # FILE: its notAfter in unix seconds
	date -d "$(openssl x509 -in "$1" -noout -enddate | cut -d= -f2)" +%s
}
old_end=$(not_after pki/h1.crt)
old_key=$(sha256sum <pki/h1.key)
[ $((old_end - $(date +%s))) -le 21 ] || fail "h1's first certificate runs until $old_end"

h3_cert=$(sha256sum <pki/h3.crt)
fixture_agent h1 web
# h3 as h1, but with [tls] renew = no from its start
fixture_agent h3 web "" "renew = no"
renewed() {
	grep -q "renewed host certificate is kept" agent-h1.log
}
wait_for 20 renewed || fail "h1 did not renew its certificate: $(grep -i renew agent-h1.log)"
new_end=$(not_after pki/h1.crt)
[ $((new_end - $(date +%s))) -gt $((300 * 86400)) ] ||
	fail "h1's renewed certificate runs until $new_end, not [enroll] host_cert_days"
[ "$(sha256sum <pki/h1.key)" != "$old_key" ] || fail "h1's key was not replaced"
[ "$(stat -c %a pki/h1.key)" = 600 ] || fail "h1's new key is mode $(stat -c %a pki/h1.key)"
grep -q 'CN *= *h1' <<<"$(openssl x509 -in pki/h1.crt -noout -subject)" || fail "h1's new certificate's subject"
[ ! -e pki/h1.key.prev ] && [ ! -e pki/h1.key.new ] && [ ! -e pki/h1.crt.new ] ||
	fail "files of the renewal left behind: $(ls pki/h1.*)"
[ "$(db "SELECT count(*) FROM audit WHERE action = 'host.renew' AND actor = 'h1' AND host = 'h1'")" = 1 ] ||
	fail "the renewal's audit rows: $(db "SELECT actor, action, host, detail FROM audit")"
echo "ok: h1 renewed its certificate 20 s before it expired, and keeps the new key and certificate"
# /metrics: the first host certificate in use to expire is h3's now, h1's renewed one counting
h3_end=$(not_after pki/h3.crt)
metric() {
	api ops GET /metrics | sed -n "s/^$1 //p"
}
h1_reported_renewed() { # a report over a connection with the new certificate
	[ "$(metric kmemd_host_certificate_expiry_timestamp_seconds)" = "$h3_end" ]
}
wait_for 10 h1_reported_renewed ||
	fail "kmemd_host_certificate_expiry_timestamp_seconds is $(metric kmemd_host_certificate_expiry_timestamp_seconds), want h3's $h3_end"
[ "$(metric kmemd_host_certificates)" = 2 ] || fail "kmemd_host_certificates is $(metric kmemd_host_certificates)"

# past the first certificate's end, h1 still reports
sleep_until=$((old_end + 3))
reports_after() { # HOST UNIX_S: a report of HOST stored after then
	[ "$(db "SELECT count(*) FROM counters WHERE host_id = '$1' AND unix_ms > $2 * 1000")" -gt 0 ]
}
wait_for 40 reports_after h1 $sleep_until || fail "h1's reports stopped when its first certificate expired"
kill "${agent[h1]}"
wait "${agent[h1]}" 2>/dev/null || true
restarted=$(date +%s)
$AGENT -d -r "$PWD/root-h1" -c agent-h1.conf >agent-h1-2.log 2>&1 &
pids+=($!)
wait_for 20 reports_after h1 "$restarted" || fail "h1 did not report after a restart with its renewed files"
echo "ok: h1 reports after its first certificate expired, and after a restart with the new files"
# h3, as old as h1 was, renewed nothing
grep -q "asking kmemd for a new one" agent-h3.log && fail "h3 ([tls] renew = no) asked to renew"
[ "$(sha256sum <pki/h3.crt)" = "$h3_cert" ] || fail "h3's certificate changed"
[ "$(db "SELECT count(*) FROM audit WHERE action = 'host.renew' AND actor = 'h3'")" = 0 ] ||
	fail "h3 renewed"
echo "ok: h3, with [tls] renew = no, kept its certificate"

# kmemd's refusals, with requests made here (enroll_request)
renew_as() { # CERT HOST_ID CSR_FILE: the status code
	enroll_request "$2" "$3" >body.bin
	curl -sS -o reply.bin -w '%{http_code}' --cacert pki/ca.crt --cert pki/$1.crt \
		--key pki/$1.key -H 'Content-Type: application/x-protobuf' --data-binary @body.bin \
		"$URL/v1/agent/renew"
}
openssl genpkey -algorithm ed25519 -out new.key 2>/dev/null
openssl req -new -key new.key -subj /CN=h2 -out h2.csr
openssl req -new -key new.key -subj /CN=h3 -out h3.csr
openssl req -new -key new.key -subj /CN=h4 -out h4.csr
# ids are byte strings: h4\0x, read as a C string, would be h4's own
[ "$(renew_as h4 'h4\0x' h4.csr)" = 400 ] || fail "a renewal for h4\\0x was not refused: $(cat reply.bin)"
[ "$(db "SELECT count(*) FROM audit WHERE action = 'host.renew' AND actor = 'h4'")" = 0 ] ||
	fail "h4 renewed as h4\\0x"
# nor does enrollment take one, or an id outside the grammar ("-rf", "..")
secret=$(api ops POST /v1/enroll/secrets -H 'Content-Type: application/json' --data '{}' |
	sed -n 1p | python3 -c 'import json, sys; print(json.load(sys.stdin)["secret"])')
enroll_raw() { # HOST_ID CSR_FILE: the status code of an enrollment without a certificate
	enroll_request "$1" "$2" "$secret" >body.bin
	curl -sS -o reply.bin -w '%{http_code}' --cacert pki/ca.crt \
		-H 'Content-Type: application/x-protobuf' --data-binary @body.bin "$URL/v1/enroll"
}
openssl req -new -key new.key -subj /CN=w-6 -out w-6.csr
[ "$(enroll_raw 'w-6\0' w-6.csr)" = 400 ] || fail "enrolling w-6\\0 was not refused: $(cat reply.bin)"
for id in -rf ..; do
	openssl req -new -key new.key -subj "/CN=$id" -out bad.csr
	[ "$(enroll_raw "$id" bad.csr)" = 400 ] || fail "enrolling '$id' was not refused: $(cat reply.bin)"
done
rc=0
$KMEMCTL enroll -s 127.0.0.1:$port -C pki/ca.crt -S /dev/null -n -rf -o . >enroll.out 2>&1 || rc=$?
[ "$rc" = 2 ] && grep -q "is not 1 to 64 of" enroll.out || fail "kmemctl enroll -n -rf: exit $rc, $(cat enroll.out)"
[ "$(db "SELECT count(*) FROM audit WHERE action = 'host.enroll' AND detail LIKE 'w-6%'")" = 0 ] ||
	fail "an id with a NUL was enrolled"
# JSON's \u0000 is refused as well: h4 stays unrevoked
out=$(api ops POST /v1/hosts/revoke -H 'Content-Type: application/json' --data '{"host":"h4\u0000x"}')
[ "$(tail -1 <<<"$out")" = 400 ] || fail "revoking h4\\u0000x: $out"
[ "$(db "SELECT count(*) FROM hosts WHERE host_id = 'h4' AND revoked = 1")" = 0 ] || fail "h4 was revoked"
echo "ok: a renewal for h4\\0x, enrollments of w-6\\0, -rf and .., and kmemctl enroll -n -rf are refused"
[ "$(renew_as h4 h3 h3.csr)" = 403 ] || fail "h4 renewing h3's certificate was not refused"
grep -q "its own certificate only" reply.bin || fail "h4 for h3: $(cat reply.bin)"
[ "$(renew_as h4 h4 h3.csr)" = 400 ] || fail "h4's request with h3's CSR was not refused"
printf 'junk' >junk.csr
[ "$(renew_as h4 h4 junk.csr)" = 400 ] || fail "a CSR that is not one was not refused"
[ "$(renew_as ops h2 h2.csr)" = 403 ] || fail "an operator renewing a host's certificate was not refused"
[ "$(renew_as h2 h2 h2.csr)" = 200 ] || fail "h2's renewal: $(cat reply.bin)"
[ "$(renew_as h2 h2 h2.csr)" = 200 ] || fail "h2's second renewal in a minute: $(cat reply.bin)"
[ "$(renew_as h2 h2 h2.csr)" = 429 ] || fail "h2's third renewal in a minute was not limited"
api ops POST /v1/hosts/revoke -H 'Content-Type: application/json' --data '{"host":"h2"}' >/dev/null
[ "$(renew_as h2 h2 h2.csr)" = 403 ] && grep -q revoked reply.bin ||
	fail "a revoked host's renewal: $(cat reply.bin)"
[ "$(db "SELECT count(*) FROM audit WHERE action = 'host.renew'")" = 3 ] ||
	fail "renewals audited: $(db "SELECT actor, detail FROM audit WHERE action = 'host.renew'")"
echo "ok: kmemd refuses renewals for another id, with another key's CSR, to operators, past its rate and to revoked hosts"
echo PASS
