#!/bin/bash
# What a host (or a stolen host key) and anyone who can reach kmemd may
# send, against a real kmemd while real agents report throughout: strings
# that are not text, names without end, numbers past every bound, host
# ids that forge log lines, and enrollments that take over identities or
# overspend secrets. Each is refused (with its reason) or bounded, and
# counted; a store poisoned before these checks existed still serves every
# route; and no report an agent saw acknowledged is missing.
set -euo pipefail

BUILD=${1:?usage: hostile-reports.sh BUILD_DIR SOURCE_DIR}
SRC=${2:?usage: hostile-reports.sh BUILD_DIR SOURCE_DIR}
KMEMCTL=$BUILD/cli/kmemctl
KMEMD=$BUILD/daemon/kmemd
AGENT=$BUILD/agent/kmem-agent
EDIT=$BUILD/tests/integration/report-edit

work=$(mktemp -d "$BUILD/hostile.XXXXXX")
chmod 755 "$work"
# shellcheck source=tests/integration/lib.sh
. "$SRC/tests/integration/lib.sh"
in_work

pki_fleet
pki_hosts h1 h2 h3 evil
kmemd_conf >kmemd.conf
cat >>kmemd.conf <<CONF
[ca]
key = $work/pki/ca.key
[enroll]
rate = 1000
global_rate = 30
[limits]
names = 8
host_names = 4
CONF
kmemd_start
agents_reporting web h1 h2 h3

report=$(spooled_report evil)

post() { # cert-name body-file: prints the status code; the reply in body.out
	curl -sS --cacert pki/ca.crt --cert pki/$1.crt --key pki/$1.key -o body.out \
		-w '%{http_code}' -H "Content-Type: application/x-protobuf" \
		-H 'Expect: 100-continue' --data-binary @"$2" "$URL/v1/agent/report" || true
}
refused() { # what field edits...: a report so edited is refused, its reason naming field
	local what=$1 field=$2 code
	shift 2
	$EDIT "$report" edited.bin "$@" || fail "report-edit $*"
	code=$(post evil edited.bin)
	[ "$code" = 400 ] || fail "$what: status $code, want 400"
	grep -aq "$field" body.out || fail "$what: the reason does not name $field: $(cat body.out)"
	echo "ok: $what: 400, naming $field"
}

# 1. Log lines: a host id with a newline (first: refusals are logged at a bounded rate)
$EDIT "$report" edited.bin host=$'h1\nkmemd: forged'
[ "$(post evil edited.bin)" = 403 ] || fail "a report for another host id: $(cat body.out)"
grep -q "^kmemd: forged" kmemd.log && fail "a host id forged a line in kmemd's log"
grep -q 'tried to report as .h1\\nkmemd: forged' kmemd.log ||
	fail "the refusal is not logged with the host id escaped"
echo "ok: a host id with a newline is logged escaped, on one line"

# 2. Strings: checked where the report is decoded
refused "a hostname that is not UTF-8" facts.hostname hostname=$'web\xff'
refused "a hostname with a newline" facts.hostname hostname=$'web\nkmemd: forged'
refused "a kernel release with an escape" facts.kernel_release kernel=$'6.1\x1b[2J'
refused "a mitigation reason that is not UTF-8" mitigations.reason reason=$'\xc0\xaf'
refused "an event message with a newline" events.message message=$'lockup\nkmemd: forged'
refused "an event comm past its length" events.comm comm=$(printf 'c%.0s' $(seq 80))
[ "$(sqlite3 kmemd.sqlite "SELECT count(*) FROM counters WHERE host_id = 'evil'")" = 0 ] ||
	fail "a refused report left rows"
grep -q "^kmemd: forged" kmemd.log && fail "a host's text forged a line in kmemd's log"
echo "ok: nothing of a refused report is stored; no forged log line"

# 3. Numbers: checked before any arithmetic
refused "a histogram whose counts wrap" probes.hist probe=vmap-purge count=18446744073709551615
refused "a counter past 2^53" counters.soft_lockups soft_lockups=$((1 << 60))
$EDIT "$report" edited.bin seq=18446744073709551615
[ "$(post evil edited.bin)" = 400 ] && grep -aq seq body.out || fail "a seq past int64"
expect_code() { # code what path
	local got
	got=$(curl -sS --cacert pki/ca.crt --cert pki/ops.crt --key pki/ops.key -o body.out \
		-w '%{http_code}' "$URL$3") || true
	[ "$got" = "$1" ] || fail "$2: $got, want $1: $(cat body.out)"
}
for q in "to=9223372036854775807" "from=-1" "step=99999999999999999999" "to=1e9" \
	"from=253402300800000"; do
	expect_code 400 "host detail with $q" "/v1/hosts/detail?id=h1&$q"
done
expect_code 400 "telemetry with a time past int64" "/v1/telemetry?probe=vmap-purge&to=18446744073709551616"
expect_code 400 "telemetry with a label key that is no name" "/v1/telemetry?probe=vmap-purge&label=a%22b:c"
expect_code 400 "hosts with a limit past int64" "/v1/hosts?limit=9223372036854775808"
for body in '{"expires_in_s": 9223372036854775807}' '{"expires_in_s": -1}' '{"uses": -1}' \
	'{"uses": 1000001}' '{"hosts": "a/b"}'; do
	out=$(api ops POST /v1/enroll/secrets -H 'Content-Type: application/json' --data "$body")
	[ "$(echo "$out" | tail -1)" = 400 ] || fail "secret $body: $out"
done
echo "ok: numbers past their bounds are 400, before any arithmetic"

# 4. Names: bounded per host and fleet-wide, the rest of the report stored
$EDIT "$report" edited.bin probes=60 seq=900
[ "$(post evil edited.bin)" = 200 ] || fail "a report with 60 probe names: $(cat body.out)"
grep -aq "left out" body.out || fail "the reply does not say what was left out"
[ "$(sqlite3 kmemd.sqlite "SELECT count(*) FROM counters WHERE host_id = 'evil' AND seq = 900")" = 1 ] ||
	fail "the rest of the report was not stored"
[ "$($BUILD/tests/integration/store-rows probes kmemd.sqlite evil | wc -l)" = 4 ] ||
	fail "one host brought in more than host_names = 4"
# h3 brings in four more; then the fleet's eight are all there are, for h2 too
for h in h3 h2; do
	# after the samples its agent stores meanwhile (it reports every second):
	# kmemd leaves out samples that overlap the host's stored ones
	$EDIT "$report" edited.bin probes=60 seq=901 host=$h span=1 time=$(($(date +%s%3N) + 5000))
	[ "$(post $h edited.bin)" = 200 ] || fail "$h's report with 60 probe names: $(cat body.out)"
	[ "$($BUILD/tests/integration/store-rows probes kmemd.sqlite $h | grep -c '^p')" = 8 ] ||
		fail "$h's samples are not the fleet's eight names"
done
[ "$(metric 'kmemd_names{kind="probe"}')" = 8 ] || fail "the fleet holds other than names = 8"
[ "$(metric 'kmemd_names_dropped_total{kind="probe"}')" -ge 160 ] || fail "dropped names not counted"
lines=$(curl -sS --cacert pki/ca.crt --cert pki/ops.crt --key pki/ops.key "$URL/metrics" | wc -l)
[ "$lines" -lt 1500 ] || fail "/metrics grew to $lines lines"
echo "ok: 60 probe names: 4 kept (host_names), the rest left out and counted; /metrics $lines lines"

# 5. A store poisoned before kmemd checked text (or by another program)
sqlite3 kmemd.sqlite <<SQL
UPDATE hosts SET hostname = CAST(X'776562ff0a41' AS TEXT),
	kernel_release = CAST(X'362e311b5b324a' AS TEXT),
	labels = CAST(X'7b22726f6c65223a2277ff227d' AS TEXT) WHERE host_id = 'h1';
UPDATE states SET reason = CAST(X'c0af0a' AS TEXT) WHERE host_id = 'h1';
INSERT INTO events (host_id, unix_ms, kind, cpu, duration_ns, comm, pid, stack, mitigation,
	probe, message) VALUES ('h1', CAST(strftime('%s', 'now') AS INTEGER) * 1000,
	CAST(X'736f6674ff' AS TEXT), 0, 1, CAST(X'c3' AS TEXT), 1, CAST(X'5b2266ff225d' AS TEXT),
	CAST(X'ff' AS TEXT), '', CAST(X'eda080' AS TEXT));
INSERT INTO states (host_id, id, state, mode, source, reason, updated_ms)
	VALUES ('h2', CAST(X'6dff' AS TEXT), 'on', 'on', 'policy', 'x', 1);
SQL
routes_answer h1
ops_cli=($KMEMCTL -s 127.0.0.1:$port --ca pki/ca.crt --cert pki/ops.crt --key pki/ops.key)
"${ops_cli[@]}" host list >list.out || fail "kmemctl host list on a poisoned store"
"${ops_cli[@]}" host show h1 >show.out || fail "kmemctl host show on a poisoned store"
! grep -q $'\x1b' list.out show.out || fail "kmemctl printed a host's escape sequence"
echo "ok: a poisoned store: every route answers JSON, kmemctl prints no raw control bytes"

# 6. Enrollment: secrets limited in uses and host ids; a taken id only when marked
secret() { # args for kmemctl secret create: the secret in secret.txt
	"${ops_cli[@]}" secret create --expires 10m "$@" >secret.txt 2>secret.err ||
		fail "kmemctl secret create $*: $(cat secret.err)"
}
enroll() { # host: exit status of kmemctl enroll, its output in enroll.out
	local rc=0 dir
	dir=$(mktemp -d enrolled.XXXXXX)
	$KMEMCTL enroll -s 127.0.0.1:$port -C pki/ca.crt -S secret.txt -n "$1" -o "$dir" \
		>enroll.out 2>&1 || rc=$?
	echo $rc
}
secret --uses 1
[ "$(enroll new-1)" = 0 ] || fail "the first use of a one-use secret: $(cat enroll.out)"
[ "$(enroll new-2)" = 4 ] && grep -q "as many hosts as it may" enroll.out ||
	fail "a one-use secret enrolled twice: $(cat enroll.out)"
secret --hosts 'db-*'
[ "$(enroll web-9)" = 4 ] && grep -q "may not enroll this host id" enroll.out ||
	fail "a db-* secret enrolled web-9: $(cat enroll.out)"
[ "$(enroll db-9)" = 0 ] || fail "a db-* secret and db-9: $(cat enroll.out)"
secret
[ "$(enroll h1)" = 4 ] && grep -q "enrolled already" enroll.out ||
	fail "a reporting host's id was enrolled again: $(cat enroll.out)"
[ "$(enroll db-9)" = 4 ] || fail "an enrolled id was enrolled again"
"${ops_cli[@]}" host reenroll h1 >/dev/null
[ "$(enroll h1)" = 0 ] || fail "h1 marked for re-enrollment: $(cat enroll.out)"
[ "$(enroll h1)" = 4 ] || fail "the mark was not spent"
grep -q '"action": *"host.reenroll"\|host.reenroll' kmemd.log || fail "no audit of the mark"
echo "ok: secrets hold their uses and host ids; a taken id enrolls only once marked"
# Failed guesses spend a bucket of all networks: it holds 30 and gains one
# every 2 s, so however slow this machine, past 30 + (seconds so far) / 2
# guesses one must have been refused 429; a good secret is not, then.
secret
cp secret.txt good.txt
openssl rand -hex 24 >secret.txt
limited=0
start=$(date +%s)
i=0
while [ $i -lt 200 ]; do
	i=$((i + 1))
	[ "$(enroll rate-$i)" = 4 ] || fail "a guessed secret enrolled rate-$i: $(cat enroll.out)"
	grep -q "(429)" enroll.out && limited=1 && break
	grep -q "unknown enrollment secret" enroll.out || fail "guess $i: $(cat enroll.out)"
	[ $i -le $((30 + ($(date +%s) - start) / 2 + 1)) ] || break
done
[ $limited = 1 ] ||
	fail "$i failed guesses in $(($(date +%s) - start)) s passed global_rate = 30"
cp good.txt secret.txt
[ "$(enroll rate-good)" = 0 ] || fail "a good secret after the guesses: $(cat enroll.out)"
echo "ok: failed guesses have a global rate beside the per-network one; a good secret still enrolls"

routes_answer h2
agents_stop_none_lost h1 h2 h3
