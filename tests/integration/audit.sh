#!/bin/bash
# Every route kmemd's table flags as audited (kmemd -r: "audited": every
# change, and the reads of who may do what or who did) writes exactly one
# audit row, with its action and the caller as actor, when it answers 2xx,
# and none when it refuses. The routes come from the binary, so a new
# audited route without a case here fails this test. Then GET /v1/audit
# and kmemctl audit list give back the rows the test made, by each filter.
set -euo pipefail

BUILD=${1:?usage: audit.sh BUILD_DIR SOURCE_DIR}
SRC=${2:?usage: audit.sh BUILD_DIR SOURCE_DIR}
KMEMCTL=$BUILD/cli/kmemctl
KMEMD=$BUILD/daemon/kmemd

work=$(mktemp -d "$BUILD/audit.XXXXXX")
# shellcheck source=tests/integration/lib.sh
. "$SRC/tests/integration/lib.sh"
in_work

pki_fleet
pki_hosts h1
kmemd_conf >kmemd.conf
cat >>kmemd.conf <<CONF
[ca]
key = $work/pki/ca.key
CONF
kmemd_start

JS=(-H 'Content-Type: application/json')
rows() {
	sqlite3 kmemd.sqlite 'SELECT count(*) FROM audit'
}
last() {
	sqlite3 kmemd.sqlite 'SELECT actor || " " || action FROM audit ORDER BY id DESC LIMIT 1'
}

# call PATH CODE ACTOR api-args...: PATH answers CODE; a 2xx adds one row
# by ACTOR with PATH's action, anything else none
call() {
	local path=$1 code=$2 actor=$3 before out want
	shift 3
	before=$(rows)
	out=$("$@") || fail "$path: the call failed: $out"
	[ "$(echo "$out" | tail -1)" = "$code" ] || fail "$path: got $out, want $code"
	if [ "${code:0:1}" != 2 ]; then
		[ "$(rows)" = "$before" ] || fail "$path refused ($code) but wrote an audit row: $(last)"
		return
	fi
	[ "$(rows)" = $((before + 1)) ] || fail "$path: $(($(rows) - before)) audit rows, want 1"
	want="$actor ${action[$path]}"
	[ "$(last)" = "$want" ] || fail "$path: audit row '$(last)', want '$want'"
	done_paths+=("$path")
}

declare -A action
while read -r method path rest; do
	[[ " $rest " == *" audited "* ]] || continue
	[ "$method" = POST ] || [[ " /v1/audit /v1/operators /v1/enroll/secrets " == *" $path "* ]] ||
		fail "$method $path is audited: only POST changes state, and only the audit log, operators and secrets are sensitive reads"
	# an audited read is its own case, beside a change on the same path
	[ "$method" = POST ] || path="GET $path"
	action[$path]=${rest##* }
done < <($KMEMD -r)
[ ${#action[@]} -ge 20 ] || fail "kmemd -r lists ${#action[@]} audited routes: $($KMEMD -r)"
echo "ok: kmemd lists ${#action[@]} audited routes"
done_paths=()

# enrollment secrets, and a host enrolling with one (its own actor)
call /v1/enroll/secrets 400 ops api ops POST /v1/enroll/secrets "${JS[@]}" --data '{"uses":-1}'
call /v1/enroll/secrets 201 ops api ops POST /v1/enroll/secrets "${JS[@]}" --data '{"uses":5}'
secret_id=$(sqlite3 kmemd.sqlite 'SELECT max(id) FROM enroll_secrets')
api ops POST /v1/enroll/secrets "${JS[@]}" --data '{}' | sed -n 1p |
	python3 -c 'import json, sys; print(json.load(sys.stdin)["secret"])' >secret
enroll() { # host secret-file: kmemctl enroll's exit status, then the code it stands for
	local rc=0
	$KMEMCTL enroll -s 127.0.0.1:$port -C pki/ca.crt -S "$2" -n "$1" -o enrolled \
		>enroll.out 2>&1 || rc=$?
	printf '%s\n%s\n' "$(cat enroll.out)" "$([ $rc = 0 ] && echo 200 || echo 403)"
}
mkdir enrolled
echo 0000 >bad-secret
call /v1/enroll 403 db-1 enroll db-1 bad-secret
call /v1/enroll 200 db-1 enroll db-1 secret
call /v1/enroll/secrets/revoke 404 ops api ops POST /v1/enroll/secrets/revoke "${JS[@]}" \
	--data '{"id":99999}'
call /v1/enroll/secrets/revoke 200 ops api ops POST /v1/enroll/secrets/revoke "${JS[@]}" \
	--data "{\"id\":$secret_id}"

# a host renewing its own certificate (EnrollRequest: host_id 2, csr_pem 3)
renew() { # HOST CSR: the reply, then its code
	enroll_request "$1" "$2" >renew.bin
	curl -sS --cacert pki/ca.crt --cert enrolled/db-1.crt --key enrolled/db-1.key \
		-H 'Content-Type: application/x-protobuf' --data-binary @renew.bin -w '\n%{http_code}\n' \
		"$URL/v1/agent/renew" | tail -1
}
openssl req -new -key enrolled/db-1.key -subj /CN=db-1 -out db-1.csr
openssl req -new -key enrolled/db-1.key -subj /CN=db-2 -out db-2.csr
call /v1/agent/renew 400 db-1 renew db-1 db-2.csr
call /v1/agent/renew 200 db-1 renew db-1 db-1.csr

# hosts
call /v1/hosts/revoke 400 ops api ops POST /v1/hosts/revoke "${JS[@]}" --data '{"host":"a b"}'
call /v1/hosts/revoke 200 ops api ops POST /v1/hosts/revoke "${JS[@]}" --data '{"host":"h1"}'
call /v1/hosts/reenroll 400 ops api ops POST /v1/hosts/reenroll "${JS[@]}" --data '{}'
call /v1/hosts/reenroll 200 ops api ops POST /v1/hosts/reenroll "${JS[@]}" \
	--data '{"host":"db-1"}'

# policies, assignments, rollouts
printf '%s' '{"mitigations":{"rstat-yield":{"mode":"on"}}}' >p.json
$KMEMCTL policy sign -k signer.key -n p -v 1 -s ops -o p.bundle p.json
call /v1/policies 415 ops api ops POST /v1/policies -H 'Content-Type: text/plain' --data x
call /v1/policies 201 ops api ops POST /v1/policies -H 'Content-Type: application/x-protobuf' \
	--data-binary @p.bundle
call /v1/assignments 404 ops api ops POST /v1/assignments "${JS[@]}" \
	--data '{"policy":"p","version":2,"selector":{"all":true}}'
call /v1/assignments 201 ops api ops POST /v1/assignments "${JS[@]}" \
	--data '{"policy":"p","version":1,"selector":{"all":true}}'
call /v1/policies/retire 409 ops api ops POST /v1/policies/retire "${JS[@]}" \
	--data '{"name":"p","version":1}'
call /v1/policies/retire 404 ops api ops POST /v1/policies/retire "${JS[@]}" \
	--data '{"name":"p","version":5}'
$KMEMCTL policy sign -k signer.key -n p -v 2 -s ops -o p2.bundle p.json
api ops POST /v1/policies -H 'Content-Type: application/x-protobuf' --data-binary @p2.bundle >/dev/null
call /v1/policies/retire 200 ops api ops POST /v1/policies/retire "${JS[@]}" \
	--data '{"name":"p","version":2}'
expect 409 'is retired' "a retired version is assigned no more" ops POST /v1/assignments \
	"${JS[@]}" --data '{"policy":"p","version":2,"selector":{"all":true}}'
[ "$(api ops GET /v1/policies | sed -n 1p | grep -o '"version":2')" = "" ] ||
	fail "GET /v1/policies lists the retired version"
grep -q '"version":2,.*"retired_ms":' <<<"$(api ops GET '/v1/policies?retired=1' | sed -n 1p)" ||
	fail "GET /v1/policies?retired=1 has no retired version"
rollout='{"name":"r","policy":"p","version":1,"selector":{"all":true},"waves":[{"percent":100}]}'
call /v1/rollouts 400 ops api ops POST /v1/rollouts "${JS[@]}" --data '{"name":"r"}'
call /v1/rollouts 201 ops api ops POST /v1/rollouts "${JS[@]}" --data "$rollout"
call /v1/rollouts/action 400 ops api ops POST /v1/rollouts/action "${JS[@]}" \
	--data '{"name":"r","action":"fly"}'
call /v1/rollouts/archive 409 ops api ops POST /v1/rollouts/archive "${JS[@]}" \
	--data '{"name":"r"}'
call /v1/rollouts/action 200 ops api ops POST /v1/rollouts/action "${JS[@]}" \
	--data '{"name":"r","action":"abort"}'
call /v1/rollouts/archive 404 ops api ops POST /v1/rollouts/archive "${JS[@]}" \
	--data '{"name":"nope"}'
call /v1/rollouts/archive 200 ops api ops POST /v1/rollouts/archive "${JS[@]}" \
	--data '{"name":"r"}'

# reads and deletions: secrets listed, an assignment deleted, a silent host forgotten
call 'GET /v1/enroll/secrets' 200 ops api ops GET /v1/enroll/secrets
assignment=$(db 'SELECT max(id) FROM assignments')
call /v1/assignments/delete 404 ops api ops POST /v1/assignments/delete "${JS[@]}" --data '{"id":99999}'
call /v1/assignments/delete 200 ops api ops POST /v1/assignments/delete "${JS[@]}" \
	--data "{\"id\":$assignment}"
db "INSERT INTO hosts (host_id, first_seen_ms, last_seen_ms, last_seq) VALUES ('old-1', $(date +%s%3N), $(date +%s%3N), 1)"
call /v1/hosts/forget 409 ops api ops POST /v1/hosts/forget "${JS[@]}" --data '{"host":"old-1"}'
db "UPDATE hosts SET last_seen_ms = last_seen_ms - 7200000 WHERE host_id = 'old-1'"
call /v1/hosts/forget 200 ops api ops POST /v1/hosts/forget "${JS[@]}" --data '{"host":"old-1"}'
call /v1/hosts/forget 404 ops api ops POST /v1/hosts/forget "${JS[@]}" --data '{"host":"old-1"}'

# the fleet stop
call /v1/fleet/stop 400 ops api ops POST /v1/fleet/stop "${JS[@]}" --data '{"reason":7}'
call /v1/fleet/stop 200 ops api ops POST /v1/fleet/stop "${JS[@]}" --data '{"reason":"test"}'
call /v1/fleet/resume 400 ops api ops POST /v1/fleet/resume "${JS[@]}" --data '{"now":true}'
call /v1/fleet/resume 200 ops api ops POST /v1/fleet/resume

# a build record, published ahead of any host of its build
cat >b.rec <<'REC'
kmemctl-build-record 2
build_id 0a1b2c3d
release 6.1.0-58-amd64
version #1 SMP PREEMPT_DYNAMIC Debian 6.1.193-1
source linux-source-6.1 6.1.193-1
copy usercopy-fastpath usercopy_fastpath.c:overlaps 32a81a5e20dc8926
func usercopy-fastpath is_vmalloc_addr 80 8973d27156fab43c
end
REC
$KMEMCTL build sign -k signer.key -s ops -o b.bundle b.rec
OCTET=(-H 'Content-Type: application/octet-stream')
call /v1/builds/records 400 ops api ops POST /v1/builds/records "${OCTET[@]}" --data x
call /v1/builds/records 201 ops api ops POST /v1/builds/records "${OCTET[@]}" \
	--data-binary @b.bundle

# operators, and the sensitive reads
$KMEMCTL pki issue pki operator carol >/dev/null
api carol GET /v1/whoami >/dev/null
call 'GET /v1/operators' 200 ops api ops GET /v1/operators
call /v1/operators/revoke 404 ops api ops POST /v1/operators/revoke "${JS[@]}" \
	--data '{"name":"dave"}'
call /v1/operators/revoke 200 ops api ops POST /v1/operators/revoke "${JS[@]}" \
	--data '{"name":"carol"}'
call 'GET /v1/audit' 400 ops api ops GET '/v1/audit?limit=0'
call 'GET /v1/audit' 200 ops api ops GET '/v1/audit?limit=1'

for path in "${!action[@]}"; do
	grep -qxF "$path" <<<"$(printf '%s\n' "${done_paths[@]}")" ||
		fail "audited route $path has no case here: add one that changes state through it"
done
echo "ok: each of the ${#action[@]} audited routes writes one audit row on 2xx, none on a refusal"

# what only reads writes nothing
before=$(rows)
for path in /v1/hosts /v1/policies /v1/rollouts /metrics /v1/whoami; do
	api ops GET $path >/dev/null
done
[ "$(rows)" = "$before" ] || fail "a read wrote an audit row: $(last)"
echo "ok: reads write no audit row"

# the log through the API, by each filter, against the rows this test made
AL=(--server 127.0.0.1:$port --ca pki/ca.crt --cert pki/ops.crt --key pki/ops.key)
audit_json() { # kmemctl audit list ARGS: "actor action host" a row, newest first
	$KMEMCTL -j "${AL[@]}" audit list "$@" | python3 -c 'import json, sys
for e in json.load(sys.stdin)["entries"]:
    print(e["actor"], e["action"], e["host"] or "-")'
}
[ "$(audit_json --action host.revoke)" = "ops host.revoke h1" ] ||
	fail "audit list --action host.revoke: $(audit_json --action host.revoke)"
[ "$(audit_json --host db-1)" = "$(printf 'ops host.reenroll db-1\ndb-1 host.renew db-1\ndb-1 host.enroll db-1')" ] ||
	fail "audit list --host db-1: $(audit_json --host db-1)"
[ "$(audit_json --actor db-1)" = "$(printf 'db-1 host.renew db-1\ndb-1 host.enroll db-1')" ] ||
	fail "audit list --actor db-1: $(audit_json --actor db-1)"
[ "$(audit_json --actor ops --action rollout.action)" = "ops rollout.action -" ] ||
	fail "audit list --actor ops --action rollout.action"
total=$(sqlite3 kmemd.sqlite 'SELECT count(*) FROM audit')
[ "$(audit_json --since 1h | wc -l)" = "$total" ] || fail "audit list --since 1h is not every row"
[ -z "$(audit_json --until 1h)" ] || fail "audit list --until 1h: $(audit_json --until 1h)"
# pages: two at a time, each below the last, down to the first row
total=$(sqlite3 kmemd.sqlite 'SELECT count(*) FROM audit')
seen=0 before=
while :; do
	page=$(api ops GET "/v1/audit?limit=2${before:+&before=$before}" | sed -n 1p)
	n=$(python3 -c 'import json, sys; print(len(json.loads(sys.argv[1])["entries"]))' "$page")
	seen=$((seen + n))
	before=$(python3 -c 'import json, sys; n = json.loads(sys.argv[1])["next_before"]; print("" if n is None else n)' "$page")
	[ -n "$before" ] || break
done
# each page read is itself a row, newer than the ones paged through
[ "$seen" -ge "$total" ] || fail "paging gave $seen rows of $total"
for bad in 'limit=1001' 'from=yesterday' 'host=a%20b' 'before=-1' 'actor=%01' 'surprise=1&limit=x'; do
	expect 400 'limit 1 to 1000' "GET /v1/audit?$bad is refused" ops GET "/v1/audit?$bad"
done
$KMEMCTL "${AL[@]}" audit list --since tomorrow 2>err.out && fail "--since tomorrow was taken"
grep -q "want a duration" err.out || fail "audit list --since tomorrow: $(cat err.out)"
echo "ok: GET /v1/audit and kmemctl audit list filter by actor, action, host and time, and page"
