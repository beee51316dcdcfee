#!/bin/bash
# Golden tests of the admin API's JSON at the HTTP level: a real kmemd
# over TLS on a SQLite store seeded with fixed rows (hosts, states,
# telemetry, policies, assignments, rollouts with members and verdicts;
# JSON in them as kmemd writes it, numbers as jansson prints them), each
# admin GET route asked with curl and an admin certificate. The body
# and status of each must equal tests/golden/admin/CASE byte for byte,
# but for computed_ms (when the series worker computed an answer).
# UPDATE_GOLDEN=1 writes them instead.
#
#   tests/integration/admin-golden.sh BUILD_DIR SOURCE_DIR
set -euo pipefail

BUILD=${1:?usage: admin-golden.sh BUILD_DIR SOURCE_DIR}
SRC=${2:?usage: admin-golden.sh BUILD_DIR SOURCE_DIR}
KMEMCTL=$BUILD/cli/kmemctl
KMEMD=$BUILD/daemon/kmemd
GOLDEN=$SRC/tests/golden/admin

work=$(mktemp -d "$BUILD/admin-golden.XXXXXX")
# shellcheck source=tests/integration/lib.sh
. "$SRC/tests/integration/lib.sh"
in_work

pki_fleet
kmemd_conf >kmemd.conf
# the seeded rows are from a fixed past: kept, and never rolled up
cat >>kmemd.conf <<CONF
retention = 36500d
raw_retention = 36500d
CONF
# the first start makes the schema; the rows go in while kmemd is stopped
kmemd_start
kill "$kmemd_pid"
wait "$kmemd_pid" 2>/dev/null || true
sed -i "s/^listen = .*/listen = 127.0.0.1:$port/" kmemd.conf

# T: 2023-11-14 22:13:20 UTC; every time is T plus or minus whole minutes
T=1700000000000
# probe samples are binary rows: stored as reports by kmemd's store code,
# whose hosts and counters rows the SQL below then replaces with its own
$BUILD/tests/integration/store-rows ingest kmemd.sqlite <<ROWS
h1 $((T - 1200000)) 1 0 reclaim $((T - 1260000)) 10 3 3 3000 1500
h1 $((T - 600000)) 2 0 reclaim $((T - 660000)) 12 5 5 20000 6000
h3 $((T - 600000)) 1 0 reclaim $((T - 660000)) 11 2 2 4000 2500
ROWS
sqlite3 kmemd.sqlite <<SQL
BEGIN;
DELETE FROM hosts;
DELETE FROM counters;
INSERT INTO hosts VALUES ('h1', 'web-1.example', '6.1.0-57-amd64', 'b1d0', 8, 8, 16777216000,
	0, '0.9.0', '{"role":"web","zone":"a"}', $T - 3600000, $T, 61, 'good', 1, 0, 1, NULL);
INSERT INTO hosts VALUES ('h2', 'db-1.example', '6.12.0-1-amd64', 'b2d0', 4, 2, 8388608000,
	1, '0.9.0', '{"role":"db","note":"quote \" and é"}', $T - 3600000, $T - 60000, 60,
	'base', 1, 0, 3, NULL);
INSERT INTO hosts VALUES ('h3', 'web-2.example', '6.1.0-57-amd64', 'b1d0', 8, 8, 16777216000,
	0, '0.9.0', '{"role":"web"}', $T - 3600000, $T - 120000, 59, 'good', 1, 0, 4, NULL);
INSERT INTO hosts (host_id, first_seen_ms, revoked) VALUES ('h9', $T, 1);
INSERT INTO hosts VALUES ('h4', 'web-3.example', '6.1.0-57-amd64', 'b1d0', 8, 8, 16777216000,
	0, NULL, '{}', $T - 3600000, $T - 60000, 61, NULL, NULL, 0, NULL, NULL);
INSERT INTO states VALUES ('h1', 'rstat-yield', 'on', 'on', 'policy', '', $T - 600000);
INSERT INTO states VALUES ('h1', 'usercopy-fastpath', 'tripped', 'on', 'policy',
	'breaker: 3 calls over budget', $T - 300000);
INSERT INTO states VALUES ('h2', 'rstat-yield', 'off', 'off', 'default', '', $T - 600000);
INSERT INTO counters VALUES ('h1', $T - 1200000, 59, 0, 0, 0, 0, 10, 0, 0, 0, 1000);
INSERT INTO counters VALUES ('h1', $T - 600000, 60, 1, 0, 0, 0, 12, 1, 0, 0, 601000);
INSERT INTO counters VALUES ('h1', $T, 61, 2, 0, 1, 0, 15, 1, 0, 0, 1201000);
INSERT INTO counters VALUES ('h3', $T - 600000, 58, 0, 0, 0, 0, 1, 0, 0, 0, 1000);
INSERT INTO counters VALUES ('h3', $T - 120000, 59, 0, 0, 0, 0, 2, 0, 0, 0, 481000);
INSERT INTO events VALUES ('h1', $T - 590000, 'soft-lockup', 3, 22000000000, 'kworker/3:1',
	142, '["shrink_node","balance_pgdat"]', NULL, NULL, 'BUG: soft lockup - CPU#3 stuck');
INSERT INTO events VALUES ('h1', $T - 300000, 'trip', 1, 0, NULL, 0, '[]',
	'usercopy-fastpath', NULL, 'breaker: 3 calls over budget');
INSERT INTO policies VALUES ('base', 1, '{"mitigations":{"rstat-yield":{"mode":"off"}}}',
	NULL, 'ops', '', $T - 7200000, NULL);
INSERT INTO policies VALUES ('good', 1, '{"mitigations":{"rstat-yield":{"mode":"on"}}}',
	X'0a00', 'ops', '8d3f20a1c2b4e5f6', $T - 7100000, NULL);
INSERT INTO policies VALUES ('good', 2, '{"mitigations":{"rstat-yield":{"mode":"auto"}}}',
	NULL, 'ops', '', $T - 7000000, NULL);
INSERT INTO assignments VALUES (1, 'base', 1, '{"all":true}', $T - 6900000);
INSERT INTO assignments VALUES (2, 'good', 1, '{"labels":{"role":"web"}}', $T - 6800000);
INSERT INTO rollouts VALUES ('r-back', '{"name":"r-back","policy":"good","version":2,
	"selector":{"labels":{"role":"web"}},"waves":[{"percent":50},{"percent":100}],
	"bake_s":600}', 'rolled-back', 0, $T - 1800000, 'wave 1 failed: lockups', $T - 3000000,
	$T - 900000, NULL, NULL);
INSERT INTO rollouts VALUES ('r-done', '{"name":"r-done","policy":"good","version":1,
	"selector":{"all":true},"waves":[{"percent":100}],"bake_s":60}', 'done', 0,
	$T - 5000000, 'every wave passed', $T - 6000000, $T - 4000000, NULL, NULL);
INSERT INTO rollouts VALUES ('r-new', '{"name":"r-new","policy":"base","version":1,
	"selector":{"host":"h2"},"waves":[{"percent":100}]}', 'pending', 0, NULL, NULL, $T - 60000,
	$T - 60000, NULL, NULL);
INSERT INTO rollout_hosts VALUES ('r-back', 'h1', 'web', 0.25, 0, 'good', 1);
INSERT INTO rollout_hosts VALUES ('r-back', 'h3', 'web', 0.75, 1, 'good', 1);
INSERT INTO rollout_hosts VALUES ('r-back', 'h4', 'web', 0.5, 0, NULL, NULL);
INSERT INTO rollout_hosts VALUES ('r-done', 'h1', '', 0.1, 0, 'base', 1);
INSERT INTO rollout_hosts VALUES ('r-done', 'h2', '', 0.2, 0, 'base', 1);
INSERT INTO verdicts VALUES (1, 'r-back', 0, $T - 1200000, 'inconclusive', 'baselines',
	'matched baselines reported, fewer than 3', '{"canary":{"events":0,"hours":0.125}}');
INSERT INTO verdicts VALUES (2, 'r-back', 0, $T - 900000, 'fail', 'lockups',
	'canaries locked up', '{"canary":{"events":2,"hours":0.375},"baseline":{"events":0,
	"hours":0.25},"lockup_p":0.012}');
INSERT INTO verdicts VALUES (3, 'r-done', 0, $T - 4000000, 'pass', '', 'every gate passed',
	'{}');
COMMIT;
SQL
kmemd_start

failed=0
# get CASE PATH: GET PATH as ops against tests/golden/admin/CASE
get() {
	local name=$1 path=$2 code
	code=$(curl -sS --cacert pki/ca.crt --cert pki/ops.crt --key pki/ops.key \
		-o body.out -w '%{http_code}' "$URL$path") || fail "GET $path: curl failed"
	{
		echo "GET $path $code"
		sed -E 's/"computed_ms": ?[0-9]+/"computed_ms":"<ms>"/' body.out
		echo
	} >"$name.got"
	if [ -n "${UPDATE_GOLDEN:-}" ]; then
		cp "$name.got" "$GOLDEN/$name"
	elif ! diff -u "$GOLDEN/$name" "$name.got"; then
		echo "FAIL: $name differs from tests/golden/admin/$name" >&2
		failed=1
	else
		echo "ok: $name"
	fi
}

W="from=$((T - 1800000))&to=$((T + 60000))&step=600000"
get health /v1/health
get hosts /v1/hosts
get hosts-page "/v1/hosts?limit=2"
get hosts-page-after "/v1/hosts?limit=2&after=h2"
get hosts-match "/v1/hosts?match=web-"
get hosts-match-none "/v1/hosts?match=nothing"
get hosts-bad "/v1/hosts?limit=0"
get host-detail "/v1/hosts/detail?id=h1&$W"
get host-detail-none "/v1/hosts/detail?id=h7&$W"
get fleet /v1/fleet
get policies /v1/policies
get rollouts /v1/rollouts
get rollout-status "/v1/rollouts/status?name=r-back"
get rollout-status-done "/v1/rollouts/status?name=r-done"
get rollout-status-pending "/v1/rollouts/status?name=r-new"
get rollout-status-none "/v1/rollouts/status?name=nothere"
# the first members only; every one still counted per wave
get rollout-status-first "/v1/rollouts/status?name=r-back&members=1"
get rollout-status-no-members "/v1/rollouts/status?name=r-back&members=0"
get rollout-status-bad "/v1/rollouts/status?name=r-back&members=-1"
get rollout-status-bad-big "/v1/rollouts/status?name=r-back&members=10000001"
get rollout-series "/v1/rollouts/series?name=r-back&wave=1&$W"
get telemetry "/v1/telemetry?probe=reclaim&from=$((T - 3600000))&to=$T"
get telemetry-host "/v1/telemetry?probe=reclaim&host=h3&from=$((T - 3600000))&to=$T"
# /metrics: the lines the store's rows decide (not the process's own counters)
curl -sS --cacert pki/ca.crt --cert pki/ops.crt --key pki/ops.key "$URL/metrics" |
	grep -E '^kmemd_(hosts|mitigation_hosts|kernel_events_stored|rollout_)' >metrics.got ||
	fail "GET /metrics"
if [ -n "${UPDATE_GOLDEN:-}" ]; then
	cp metrics.got "$GOLDEN/metrics"
elif ! diff -u "$GOLDEN/metrics" metrics.got; then
	echo "FAIL: metrics differs from tests/golden/admin/metrics" >&2
	failed=1
else
	echo "ok: metrics"
fi
# every case has a golden file, and every golden file a case
cases=$(ls -- *.got | sed 's/\.got$//' | sort)
[ "$cases" = "$(ls "$GOLDEN" | sort)" ] || fail "cases and golden files differ"
[ $failed = 0 ] || exit 1
! grep -q "store query failed\|failed:" kmemd.log || fail "kmemd logged a failure"
