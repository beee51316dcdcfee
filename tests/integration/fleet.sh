#!/bin/bash
# kmemd with a real SQLite file (or KMEM_STORE_URL's PostgreSQL database,
# under tests/pg/with-cluster) and three real kmem-agents on fixture
# trees: an operator uploads a signed policy and assigns it to the hosts
# labelled role=web; those agents apply it, the third does not, and the
# states come back to kmemd. The admin API's refusals are checked on the
# way: wrong certificate role, no certificate, tampered or unsigned
# bundles, a version uploaded twice, bad selectors, unknown policies.
set -euo pipefail

BUILD=${1:?usage: fleet.sh BUILD_DIR SOURCE_DIR}
SRC=${2:?usage: fleet.sh BUILD_DIR SOURCE_DIR}
KMEMCTL=$BUILD/cli/kmemctl
KMEMD=$BUILD/daemon/kmemd
AGENT=$BUILD/agent/kmem-agent

work=$(mktemp -d "$BUILD/fleet.XXXXXX")
chmod 755 "$work"
# shellcheck source=tests/integration/lib.sh
. "$SRC/tests/integration/lib.sh"
in_work

pki_fleet
# web-1 and web-2 get certificates from the operator; db-1 enrolls
pki_hosts web-1 web-2

kmemd_conf >kmemd.conf
cat >>kmemd.conf <<CONF
[ca]
key = $work/pki/ca.key
[enroll]
rate = 10
CONF
kmemd_start
pids+=("$kmemd_pid")
kmemd_pid=

# enrollment: a secret from the admin API, then `kmemctl enroll`; the
# secret routes take JSON only, which a page cannot send cross-site
for route in /v1/enroll/secrets /v1/enroll/secrets/revoke; do
	out=$(api ops POST $route -H 'Content-Type: text/plain' --data '{"id":1}')
	[ "$(echo "$out" | tail -1)" = 415 ] || fail "POST $route as text/plain: $out"
done
[ "$(api ops POST /v1/enroll/secrets | tail -1)" = 415 ] || fail "POST /v1/enroll/secrets with no type"
# the operator's CLI: the secret alone on stdout, its id on stderr
ops_cli=($KMEMCTL -s 127.0.0.1:$port --ca pki/ca.crt --cert pki/ops.crt --key pki/ops.key)
"${ops_cli[@]}" secret create --expires 10m >secret 2>secret.err ||
	fail "kmemctl secret create: $(cat secret.err)"
secret_id=$(sed -n 's/^kmemctl: secret \([0-9]*\), expires in 10m;.*/\1/p' secret.err)
grep -qx '[0-9a-f]\{48\}' secret && [ -n "$secret_id" ] ||
	fail "no enrollment secret: $(cat secret secret.err)"
mkdir enrolled
$KMEMCTL enroll -s 127.0.0.1:$port -C pki/ca.crt -S secret -n db-1 -o enrolled >enroll.out ||
	fail "enrollment of db-1 failed: $(cat enroll.out)"
[ "$(stat -c %a enrolled/db-1.key)" = 600 ] || fail "the enrolled key is not 0600"
openssl verify -CAfile pki/ca.crt enrolled/db-1.crt >/dev/null || fail "db-1's cert does not verify"
grep -q "OU = host, CN = db-1" <<<"$(openssl x509 -in enrolled/db-1.crt -noout -subject)" ||
	fail "db-1's cert subject: $(openssl x509 -in enrolled/db-1.crt -noout -subject)"
cp enrolled/db-1.key enrolled/db-1.crt pki/
echo "ok: db-1 enrolled with a secret; the secret routes refuse what is not JSON"
echo 0000 >bad-secret
rc=0
$KMEMCTL enroll -s 127.0.0.1:$port -C pki/ca.crt -S bad-secret -n db-2 -o enrolled \
	>enroll.out 2>&1 || rc=$?
[ "$rc" = 4 ] && grep -q "unknown enrollment secret" enroll.out ||
	fail "a bad secret: exit $rc, $(cat enroll.out)"
[ ! -e enrolled/db-2.key ] || fail "a refused enrollment left a key"
grep -q "^secret $secret_id revoked" <<<"$("${ops_cli[@]}" secret revoke "$secret_id")" ||
	fail "revoking the secret"
rc=0
$KMEMCTL enroll -s 127.0.0.1:$port -C pki/ca.crt -S secret -n db-3 -o enrolled \
	>enroll.out 2>&1 || rc=$?
[ "$rc" = 4 ] && grep -q "revoked" enroll.out || fail "a revoked secret: exit $rc, $(cat enroll.out)"
echo "ok: a bad or revoked secret is refused"
limited=0
for i in $(seq 12); do
	$KMEMCTL enroll -s 127.0.0.1:$port -C pki/ca.crt -S bad-secret -n db-4 -o enrolled \
		>enroll.out 2>&1 || true
	grep -q "(429)" enroll.out && limited=1 && break
done
[ $limited = 1 ] || fail "12 quick enrollments from one address were not rate-limited"
echo "ok: enrollment is rate-limited per address"

for h in web-1 web-2 db-1; do
	cp -r "$SRC/tests/fixtures/host-6.1" root-$h
	sed -i 's/ kmemctl.disable=1//' root-$h/proc/cmdline
	role=${h%%-*}
	agent_conf $h $port $role >agent-$h.conf
	$AGENT -d -r "$work/root-$h" -c agent-$h.conf >agent-$h.log 2>&1 &
	pids+=($!)
done
hosts_known() {
	[ "$(api ops GET /v1/hosts | grep -o '"host_id":' | wc -l)" = 3 ]
}
wait_for 20 hosts_known || fail "kmemd does not know the three hosts: $(api ops GET /v1/hosts)"
echo "ok: three agents report and kmemd stores them"

# each agent keeps its connection from report to report: over five more
# reports of each, the one new TLS handshake is the second scrape's own
acked() { # HOST [AT_LEAST]: how many reports HOST saw acknowledged; with
	# AT_LEAST, whether that many
	local n
	n=$(grep -c "report [0-9]* acknowledged" agent-$1.log || true)
	if [ $# = 1 ]; then echo "$n"; else [ "$n" -ge "$2" ]; fi
}
declare -A want
hs=$(metric kmemd_handshakes_completed_total)
for h in web-1 web-2 db-1; do
	want[$h]=$(($(acked $h) + 5))
done
for h in web-1 web-2 db-1; do
	wait_for 30 acked $h "${want[$h]}" || fail "$h did not report five more times"
done
hs=$(($(metric kmemd_handshakes_completed_total) - hs))
[ "$hs" = 1 ] || fail "$((hs - 1)) TLS handshakes over 15 reports: agents reconnect between reports"
echo "ok: 15 reports on the agents' kept connections, no new handshake"

printf '{"mitigations":{"usercopy-fastpath":{"mode":"on"},"rstat-yield":{"mode":"off"}}}' >doc.json
$KMEMCTL policy sign -k signer.key -n web -v 1 -s ops -o web-1.bundle doc.json
PB=(-H 'Content-Type: application/x-protobuf')
JS=(-H 'Content-Type: application/json')

expect 403 "may not call" "a host certificate on an admin route" \
	web-1 POST /v1/policies "${PB[@]}" --data-binary @web-1.bundle
out=$(curl -sS --cacert pki/ca.crt -w '\n%{http_code}\n' "$URL/v1/hosts")
[ "$(echo "$out" | tail -1)" = 401 ] || fail "no client certificate: $out"
echo "ok: no client certificate on an admin route is 401"
off=$(grep -obUa '"on"' web-1.bundle | sed -n 1p | cut -d: -f1)
cp web-1.bundle tampered.bundle
printf f | dd of=tampered.bundle bs=1 seek=$((off + 2)) conv=notrunc status=none
expect 400 "not a validly signed policy" "a tampered bundle" \
	ops POST /v1/policies "${PB[@]}" --data-binary @tampered.bundle
head -c 30 web-1.bundle >cut.bundle
expect 400 "not a validly signed policy" "a truncated bundle" \
	ops POST /v1/policies "${PB[@]}" --data-binary @cut.bundle
$KMEMCTL policy keygen stranger >/dev/null
$KMEMCTL policy sign -k stranger.key -n web -v 1 -o stranger.bundle doc.json
expect 400 "does not pin" "a bundle by an unpinned key" \
	ops POST /v1/policies "${PB[@]}" --data-binary @stranger.bundle
expect 400 "signed bundles only" "an unsigned policy" \
	ops POST /v1/policies "${JS[@]}" --data '{"name":"web","version":1,"document":{}}'
expect 415 "signed bundle" "a wrong content type" \
	ops POST /v1/policies -H 'Content-Type: text/plain' --data-binary @web-1.bundle
printf '{"mitigations":{"usercopy-fastpth":{"mode":"on"}}}' >typo.json
$KMEMCTL policy sign -k signer.key -n web -v 1 -s ops -o typo.bundle typo.json
expect 400 'unknown mitigation \\"usercopy-fastpth\\"' "a signed policy with an unknown mitigation" \
	ops POST /v1/policies "${PB[@]}" --data-binary @typo.bundle
printf '{"mitigations":{"rstat-yield":{"params":{"every_cpus":0}}}}' >range.json
$KMEMCTL policy sign -k signer.key -n web -v 1 -s ops -o range.bundle range.json
expect 400 'every_cpus: 0 is out of range \[1, 4096\]' "a param out of range" \
	ops POST /v1/policies "${PB[@]}" --data-binary @range.bundle
expect 201 '"signed":true' "a signed policy is uploaded" \
	ops POST /v1/policies "${PB[@]}" --data-binary @web-1.bundle
expect 409 "immutable" "the same version again" \
	ops POST /v1/policies "${PB[@]}" --data-binary @web-1.bundle
expect 200 '"name":"web","version":1' "the policy is listed" ops GET /v1/policies

expect 400 "empty selector" "an empty selector" ops POST /v1/assignments "${JS[@]}" \
	--data '{"policy":"web","version":1,"selector":{}}'
expect 400 'unknown key \\"role\\"' "a selector with an unknown key" \
	ops POST /v1/assignments "${JS[@]}" --data '{"policy":"web","version":1,"selector":{"role":"web"}}'
expect 400 "want" "an assignment without a version" ops POST /v1/assignments "${JS[@]}" \
	--data '{"policy":"web","selector":{"all":true}}'
expect 404 "no policy web version 7" "an unknown policy version" \
	ops POST /v1/assignments "${JS[@]}" --data '{"policy":"web","version":7,"selector":{"all":true}}'
expect 201 '"id":' "the policy is assigned to role=web" ops POST /v1/assignments "${JS[@]}" \
	--data '{"policy":"web","version":1,"selector":{"labels":{"role":"web"}}}'

mode() {
	cat root-$1/sys/kernel/kmemctl/mitigations/usercopy-fastpath/mode
}
for h in web-1 web-2; do
	wait_for 30 grep -q "policy web version 1 from kmemd accepted" agent-$h.log ||
		fail "$h did not get the policy: $(tail -5 agent-$h.log)"
	# accepted is logged before the policy is enacted
	wait_for 10 grep -qx on root-$h/sys/kernel/kmemctl/mitigations/usercopy-fastpath/mode ||
		fail "$h: usercopy-fastpath is $(mode $h)"
done
[ "$(mode db-1)" = off ] || fail "db-1 got a policy meant for role=web"
grep -q "from kmemd" agent-db-1.log && fail "db-1 was sent a policy"
echo "ok: the assignment reaches role=web and only it"

state_back() {
	grep -q "\"host_id\":\"$1\".*\"policy\":{\"name\":\"web\",\"version\":1}.*\"id\":\"usercopy-fastpath\",\"state\":\"off\",\"mode\":\"on\",\"source\":\"policy\"" <<<"$(api ops GET /v1/hosts)"
}
for h in web-1 web-2; do
	wait_for 20 state_back $h || fail "$h's state did not come back: $(api ops GET /v1/hosts)"
done
echo "ok: the states come back to kmemd"
audit=$(db 'SELECT actor, action FROM audit ORDER BY id' | tr '\n' ' ')
[ "$audit" = "ops|enroll.secret.add db-1|host.enroll ops|enroll.secret.revoke ops|policy.add ops|policy.assign " ] ||
	fail "audit log: $audit"
echo "ok: every change is in the audit log"

# web-1's vmap-purge probe records 10 more purges, 6 of them near 1 ms
P=root-web-1/sys/kernel/kmemctl/probes/vmap-purge
printf '131072 7\n1048576 6\n4194304 1\n' >$P/hist.new && mv $P/hist.new $P/hist
echo 14 >$P/count
echo 9000000 >$P/sum_ns
telemetry() {
	head -1 <<<"$(api ops GET "/v1/telemetry?probe=vmap-purge&$1")"
}
has_purges() {
	grep -q '"count":10,' <<<"$(telemetry "label=role:web")"
}
wait_for 20 has_purges || fail "web-1's purges did not reach kmemd: $(telemetry label=role:web)"
out=$(telemetry "label=role:web")
grep -q '"hosts":2,' <<<"$out" || fail "role=web telemetry: $out"
grep -q '"buckets":\[\[131072,4\],\[1048576,6\]\]' <<<"$out" || fail "buckets: $out"
p90=$(echo "$out" | sed -n 's/.*"p90_ns":\([0-9]*\),.*/\1/p')
[ "$p90" -gt 524288 ] && [ "$p90" -le 1048576 ] || fail "p90 is not in (0.5, 1] ms: $out"
grep -q '"count":0,' <<<"$(telemetry "label=role:db")" || fail "role=db: $(telemetry label=role:db)"
grep -q '"count":0,' <<<"$(telemetry "host=web-2")" || fail "web-2: $(telemetry host=web-2)"
expect 400 "probe is required" "a telemetry query without a probe" ops GET "/v1/telemetry?host=web-1"
expect 400 "KEY:VALUE" "a telemetry query with a bad label" ops GET "/v1/telemetry?probe=x&label=role"
expect 400 "unix milliseconds" "a telemetry query with a bad time" \
	ops GET "/v1/telemetry?probe=x&from=yesterday"
echo "ok: telemetry merged across hosts and filtered by label and host"

# what the dashboard draws from: fleet counts, pages of hosts, a host over time
expect 200 '"hosts":3,"kernels":\[\["6.1.0-57-amd64",3\]\]' "fleet counts" ops GET /v1/fleet
expect 200 '^\[{"host_id":"web-1"' "a page of hosts" ops GET "/v1/hosts?limit=1&after=db-1"
[ "$(api ops GET "/v1/hosts?match=web" | grep -o '"host_id"' | wc -l)" = 2 ] ||
	fail "hosts matching web: $(api ops GET "/v1/hosts?match=web")"
detail() {
	head -1 <<<"$(api ops GET "/v1/hosts/detail?id=web-1&$1")"
}
out=$(detail "step=1000")
grep -q '^{"host":{"host_id":"web-1"' <<<"$out" || fail "host detail: $out"
# the 10 purges are in one step of web-1's vmap-purge series
sum=$(echo "$out" | sed 's/.*"vmap-purge":{"count":\[\([0-9,]*\)\].*/\1/' | tr , '\n' |
	awk '{ s += $1 } END { print s }')
[ "$sum" = 10 ] || fail "web-1's vmap-purge counts add up to $sum, not 10: $out"
for bad in "limit=0" "limit=1001" "limit=x" "after=$(printf 'a%.0s' $(seq 130))"; do
	expect 400 "want \[?limit=1..1000" "a page of hosts with $bad" ops GET "/v1/hosts?$bad"
done
for bad in "" "id=../etc" "id=web-1&from=x" "id=web-1&step=-1"; do
	expect 400 "want ?id=HOST" "host detail with '$bad'" ops GET "/v1/hosts/detail?$bad"
done
expect 400 "from must be before to" "host detail from after to" \
	ops GET "/v1/hosts/detail?id=web-1&from=2000&to=1000"
expect 404 "no host nobody" "host detail of an unknown host" ops GET "/v1/hosts/detail?id=nobody"
expect 400 "want ?name=ROLLOUT" "rollout series without a name" ops GET "/v1/rollouts/series"
expect 400 "want ?name=ROLLOUT" "rollout series with a bad wave" ops GET "/v1/rollouts/series?name=a&wave=x"
expect 404 "no rollout nothere" "series of an unknown rollout" ops GET "/v1/rollouts/series?name=nothere"
[ "$(api web-1 GET /v1/fleet | tail -1)" = 403 ] || fail "a host certificate got /v1/fleet"
echo "ok: the dashboard's queries answer, and refuse bad input"

# the dashboard's files: operators only, plain names of known types only
web() { # who path: the status code and content type
	curl -sS --path-as-is --cacert pki/ca.crt --cert pki/$1.crt --key pki/$1.key \
		-o web.out -D web.headers -w '%{http_code} %{content_type}' "$URL$2"
}
[ "$(web ops /)" = "200 text/html; charset=utf-8" ] || fail "GET /: $(web ops /)"
grep -q "<title>kmemctl</title>" web.out || fail "GET /: $(head -5 web.out)"
grep -qi "^content-security-policy: default-src 'self'" web.headers || fail "no CSP: $(cat web.headers)"
[ "$(web ops /static/app.js)" = "200 text/javascript; charset=utf-8" ] || fail "app.js: $(web ops /static/app.js)"
cmp -s web.out "$SRC/web/app.js" || fail "app.js is not the file"
[ "$(web ops /static/uplot.min.js)" = "200 text/javascript; charset=utf-8" ] ||
	fail "uPlot: $(web ops /static/uplot.min.js)"
cmp -s web.out "$BUILD/web/npm/node_modules/uplot/dist/uPlot.iife.min.js" ||
	fail "uplot.min.js is not uPlot's file from npm"
for bad in /static/../kmemd.conf /static/.hidden.js /static/kmemd.conf /static/ /static/nothere.js; do
	[ "$(web ops $bad | cut -d' ' -f1)" = 404 ] || fail "GET $bad: $(web ops $bad)"
done
[ "$(web web-1 / | cut -d' ' -f1)" = 403 ] || fail "a host certificate got the dashboard"
echo "ok: kmemd serves the dashboard's files to operators, and nothing outside them"

api ops GET /metrics | sed '$d' >metrics.txt
promtool check metrics <metrics.txt || fail "promtool: $(cat metrics.txt)"
grep -q '^kmemd_hosts 3$' metrics.txt || fail "metrics: no kmemd_hosts 3"
grep -q '^kmemd_mitigation_hosts{mitigation="usercopy-fastpath",state="off"} 3$' metrics.txt ||
	fail "metrics: mitigation states: $(grep mitigation_hosts metrics.txt)"
# the purges came from hosts running web version 1: that cohort's series
grep -q '^kmemd_probe_seconds_count{probe="vmap-purge",policy="web@1"} 10$' metrics.txt ||
	fail "metrics: probe histogram: $(grep vmap-purge metrics.txt)"
grep -q '^kmemd_heap_bytes [0-9]' metrics.txt || fail "metrics: no kmemd_heap_bytes"
grep -q '[{,]host\(_id\)\?=' metrics.txt && fail "a per-host label in /metrics"
grep -q '^kmemd_hosts_silent{for="5m"} 0$' metrics.txt ||
	fail "metrics: reporting hosts counted as silent: $(grep hosts_silent metrics.txt)"
echo "ok: /metrics passes promtool check metrics"
# kmemd holds no read snapshot between rounds: another writer's rows are
# seen, and a checkpoint can empty the write-ahead log (between batches)
checkpointed() {
	[ "$(db "PRAGMA wal_checkpoint(TRUNCATE)" | cut -d'|' -f1)" = 0 ]
}
if [ -z "${KMEM_STORE_URL:-}" ]; then
	wait_for 10 checkpointed || fail "kmemd keeps the store's log from being checkpointed"
	echo "ok: the store's write-ahead log checkpoints while kmemd runs"
fi
# hosts that stopped reporting: one two hours ago, and a revoked one that is
# not counted
ago=$(($(date +%s) * 1000 - 7200000))
db "INSERT INTO hosts (host_id, last_seq, last_seen_ms) VALUES
	('gone-1', 5, $ago); INSERT INTO hosts (host_id, last_seq, last_seen_ms, revoked)
	VALUES ('gone-2', 5, $ago, 1)"
api ops GET /metrics | sed '$d' >metrics.txt
for want in '5m"} 1' '15m"} 1' '1h"} 1' '1d"} 0'; do
	grep -q "^kmemd_hosts_silent{for=\"$want\$" metrics.txt ||
		fail "metrics: silent hosts, want for=\"$want: $(grep hosts_silent metrics.txt)"
done
db "DELETE FROM hosts WHERE host_id LIKE 'gone-%'"
echo "ok: /metrics counts the hosts that stopped reporting, by how long, revoked ones not"

# a rollout of another policy over role=web: one host, then both, then aborted
printf '{"mitigations":{"rstat-yield":{"mode":"on"}}}' >rstat.json
$KMEMCTL policy sign -k signer.key -n rstat -v 1 -s ops -o rstat.bundle rstat.json
expect 201 '"signed":true' "the rollout's policy is uploaded" \
	ops POST /v1/policies "${PB[@]}" --data-binary @rstat.bundle
ROLLOUT='{"name":"rstat-on","policy":"rstat","version":1,"selector":{"labels":{"role":"web"}},
	"waves":[{"count":1},{"percent":100}],"holdback_percent":0}'
expect 404 "no policy rstat version 9" "a rollout of an unknown policy" \
	ops POST /v1/rollouts "${JS[@]}" --data "${ROLLOUT/\"version\":1/\"version\":9}"
expect 400 'smaller than the wave before' "a rollout whose waves shrink" \
	ops POST /v1/rollouts "${JS[@]}" --data "${ROLLOUT/\"count\":1\},\{\"percent\":100/\"percent\":50\},\{\"percent\":10}"
expect 201 '"state":"pending"' "a rollout is created" ops POST /v1/rollouts "${JS[@]}" --data "$ROLLOUT"
expect 409 "exists" "the same rollout name again" ops POST /v1/rollouts "${JS[@]}" --data "$ROLLOUT"
expect 400 "no action" "an unknown action" \
	ops POST /v1/rollouts/action "${JS[@]}" --data '{"name":"rstat-on","action":"go"}'
expect 409 "cannot promote" "promoting a pending rollout" \
	ops POST /v1/rollouts/action "${JS[@]}" --data '{"name":"rstat-on","action":"promote"}'
UNDO='{"name":"no-undo","policy":"web","version":1,"selector":{"labels":{"role":"web"}},
	"waves":[{"percent":100}],"rollback":{"policy":"rstat","version":1}}'
expect 409 'would not undo web version 1: mitigations.usercopy-fastpath: the mode is not stated' \
	"a rollback policy that leaves a mitigation as the rollout set it" \
	ops POST /v1/rollouts "${JS[@]}" --data "$UNDO"
DBROLL='{"name":"db-roll","policy":"rstat","version":1,"selector":{"labels":{"role":"db"}},"waves":[{"percent":100}]}'
expect 201 '"state":"pending"' "a rollout over db-1" ops POST /v1/rollouts "${JS[@]}" --data "$DBROLL"
expect 409 "runs no policy" "a rollout with nothing to roll back to" \
	ops POST /v1/rollouts/action "${JS[@]}" --data '{"name":"db-roll","action":"start"}'
expect 200 '"state":"running","wave":0' "the rollout starts" \
	ops POST /v1/rollouts/action "${JS[@]}" --data '{"name":"rstat-on","action":"start"}'
runs() { # host policy
	[ "$(db "SELECT policy_name FROM hosts WHERE host_id = '$1'")" = "$2" ]
}
web_run() { # policy why
	for h in web-1 web-2; do
		wait_for 30 runs $h "$1" || fail "$h $2: $(api ops GET /v1/hosts)"
	done
}
waves=$(db "SELECT count(*) FROM rollout_hosts WHERE rollout = 'rstat-on' GROUP BY wave
	ORDER BY wave" | paste -sd,)
[ "$waves" = 1,1 ] || fail "rollout members per wave: $waves"
grep -q '"members":\[1,1\]' <<<"$(api ops GET /v1/rollouts | sed -n 1p)" ||
	fail "GET /v1/rollouts: $(api ops GET /v1/rollouts)"
wait_for 30 sh -c "grep -q 'policy rstat version 1 from kmemd accepted' agent-web-1.log agent-web-2.log" ||
	fail "wave 1 reached no host"
canary=$(grep -l 'policy rstat version 1 from kmemd accepted' agent-web-1.log agent-web-2.log)
[ "$(echo "$canary" | wc -l)" = 1 ] || fail "wave 1 reached both hosts"
echo "ok: wave 1 reaches one host ($canary)"
expect 200 '"state":"running","wave":1' "the rollout is promoted" \
	ops POST /v1/rollouts/action "${JS[@]}" --data '{"name":"rstat-on","action":"promote"}'
web_run rstat "did not get rstat"
echo "ok: wave 2 reaches both"
expect 200 '"state":"aborted"' "the rollout is aborted" \
	ops POST /v1/rollouts/action "${JS[@]}" --data '{"name":"rstat-on","action":"abort"}'
web_run web "was not rolled back to web"
runs db-1 rstat && fail "db-1 got the rollout's policy"
echo "ok: an aborted rollout sends every host it reached back to what it ran"

# the fleet stop: every agent turns every mitigation off at its next
# report and holds them off, through a restart, until the fleet resumes
FLEET=(--server 127.0.0.1:$port --ca pki/ca.crt --cert pki/ops.crt --key pki/ops.key)
all_modes() { # the mode of every mitigation of every host, one word each
	local f
	for f in root-*/sys/kernel/kmemctl/mitigations/*/mode; do
		echo "$(<"$f")"
	done | sort -u | xargs
}
host_off() { # HOST OFF: kmemd's record of why HOST applies nothing
	[ "$(api ops GET /v1/hosts | sed -n 1p | python3 -c 'import json, sys
print({h["host_id"]: h["off"] for h in json.load(sys.stdin)}[sys.argv[1]])' "$1")" = "$2" ]
}
[ "$(all_modes)" = "off on" ] || fail "before the stop, modes are: $(all_modes)"
$KMEMCTL "${FLEET[@]}" fleet stop --reason "lockups after the update" >stop.out
grep -q "the fleet is STOPPED.*by ops.*lockups after the update" stop.out || fail "fleet stop: $(cat stop.out)"
stopped_ms=$(date +%s%3N)
for h in web-1 web-2 db-1; do
	wait_for 20 host_off $h fleet-stop || fail "$h does not report the fleet stop"
done
[ "$(all_modes)" = off ] || fail "under the fleet stop, modes are: $(all_modes)"
$KMEMCTL "${FLEET[@]}" fleet status >status.out
grep -q "^3 of 3 hosts report the fleet stop" status.out || fail "fleet status: $(cat status.out)"
grep -q '"source":"fleet-stop"' <<<"$(api ops GET /v1/hosts)" || fail "no mitigation's source is the fleet stop"
echo "ok: the fleet stop reached all 3 agents: every mitigation off ($(( $(date +%s%3N) - stopped_ms )) ms, reports every second)"
# held through an agent's restart: it comes up stopped, before kmemd says so
for i in "${!pids[@]}"; do
	if grep -q "web-1" /proc/${pids[$i]}/cmdline 2>/dev/null; then
		kill "${pids[$i]}"
		wait "${pids[$i]}" 2>/dev/null || true
		unset "pids[$i]"
	fi
done
$AGENT -d -r "$work/root-web-1" -c agent-web-1.conf >agent-web-1-2.log 2>&1 &
pids+=($!)
wait_for 20 grep -q "fleet stop held when the agent last ran" agent-web-1-2.log ||
	fail "web-1 did not come up stopped: $(head -20 agent-web-1-2.log)"
wait_for 20 grep -q "report [0-9]* acknowledged" agent-web-1-2.log || fail "web-1 does not report after its restart"
[ "$(all_modes)" = off ] || fail "after web-1's restart under the stop, modes are: $(all_modes)"
echo "ok: the stop holds through an agent's restart"
$KMEMCTL "${FLEET[@]}" fleet stop >again.out
grep -q "^no change: the fleet is STOPPED" again.out || fail "a second stop: $(cat again.out)"
$KMEMCTL "${FLEET[@]}" fleet resume >resume.out
grep -q "the fleet runs its policies (resumed by ops" resume.out || fail "fleet resume: $(cat resume.out)"
for h in web-1 web-2; do
	wait_for 20 grep -qx on root-$h/sys/kernel/kmemctl/mitigations/usercopy-fastpath/mode ||
		fail "$h did not apply its policy again: $(mode $h)"
done
for h in web-1 web-2 db-1; do
	wait_for 20 host_off $h none || fail "$h still reports a stop"
done
[ "$(mode db-1)" = off ] || fail "db-1 turned on what no policy of it says"
[ "$(db "SELECT action FROM audit WHERE action LIKE 'fleet.%' ORDER BY id" | xargs)" = "fleet.stop fleet.stop fleet.resume" ] ||
	fail "the fleet stop's audit rows: $(db "SELECT action, detail FROM audit WHERE action LIKE 'fleet.%'")"
echo "ok: resumed, every agent applies its policy again"

# everything stops cleanly (under the sanitizers: without leaks)
for p in "${pids[@]}"; do
	kill "$p"
	wait "$p" || fail "process $p exited with $? on SIGTERM"
done
pids=()
echo PASS
