#!/bin/bash
# kmemd's telemetry upkeep on a real SQLite file: three days of per-report
# samples from 60 hosts (more than one rollup step) are, at start, rolled
# up into hourly histograms past [store] raw_retention, with nothing lost
# from what /v1/telemetry answers; counters keep one row per host and hour.
set -euo pipefail

BUILD=${1:?usage: kmemd-upkeep.sh BUILD_DIR SOURCE_DIR}
SRC=${2:?usage: kmemd-upkeep.sh BUILD_DIR SOURCE_DIR}
KMEMCTL=$BUILD/cli/kmemctl
KMEMD=$BUILD/daemon/kmemd

work=$(mktemp -d "$BUILD/upkeep.XXXXXX")
# shellcheck source=tests/integration/lib.sh
. "$SRC/tests/integration/lib.sh"
in_work

pki_fleet
{
	kmemd_conf
	printf 'raw_retention = 1h\nretention = 30d\n'
} >kmemd.conf

start_kmemd() {
	: >kmemd.log
	$KMEMD -c kmemd.conf >kmemd.log 2>&1 &
	kmemd_pid=$!
	wait_for 10 grep -q "listening on port" kmemd.log || fail "kmemd did not start"
}
stop_kmemd() {
	kill "$kmemd_pid"
	wait "$kmemd_pid" || fail "kmemd exited with $? on SIGTERM"
	kmemd_pid=
}

# a raw_retention longer than retention is refused by the check
printf '[store]\nraw_retention = 40d\n' >bad.conf
cat kmemd.conf bad.conf >both.conf
if $KMEMD -n -c both.conf 2>check.err; then
	fail "kmemd -n accepted raw_retention > retention"
fi
grep -q "raw_retention is longer than retention" check.err || fail "check: $(cat check.err)"
echo "ok: raw_retention longer than retention is refused"

# a max_request an agent's largest report would not fit in is refused
printf '[server]\nmax_request = 64K\n' >small.conf
cat kmemd.conf small.conf >both.conf
if $KMEMD -n -c both.conf 2>check.err; then
	fail "kmemd -n accepted max_request = 64K"
fi
grep -q "max_request is below 128K, the largest report an agent sends" check.err ||
	fail "check: $(cat check.err)"
printf '[server]\nmax_request = 128K\n' >small.conf
cat kmemd.conf small.conf >both.conf
$KMEMD -n -c both.conf 2>check.err || fail "kmemd -n refused max_request = 128K: $(cat check.err)"
echo "ok: max_request below the largest report is refused"
# nor can max_bodies hold less than one request of max_request
printf '[server]\nmax_request = 4M\nmax_bodies = 2M\n' >small.conf
cat kmemd.conf small.conf >both.conf
if $KMEMD -n -c both.conf 2>check.err; then
	fail "kmemd -n accepted max_bodies below max_request"
fi
grep -q "max_bodies is below max_request" check.err || fail "check: $(cat check.err)"
printf '[server]\nmax_request = 4M\nmax_bodies = 4M\n' >small.conf
cat kmemd.conf small.conf >both.conf
$KMEMD -n -c both.conf 2>check.err || fail "kmemd -n refused max_bodies = max_request: $(cat check.err)"
echo "ok: max_bodies below max_request is refused"
$KMEMD -h >usage.txt || fail "kmemd -h failed"
grep -q "^  -h " usage.txt || fail "kmemd's usage omits -h: $(cat usage.txt)"

# under systemd (Type=notify, WatchdogSec=): READY once, then the loop's
# pings at half the period
$BUILD/tests/integration/notify-listen "$work/notify.sock" 3 >notify.txt &
listener=$!
wait_for 10 test -S "$work/notify.sock" || fail "no notify socket"
: >kmemd.log
NOTIFY_SOCKET=$work/notify.sock WATCHDOG_USEC=400000 $KMEMD -c kmemd.conf >kmemd.log 2>&1 &
kmemd_pid=$!
wait $listener
[ "$(grep -c '^READY=1$' notify.txt)" = 1 ] || fail "READY=1: $(cat notify.txt)"
pings=$(grep -c '^WATCHDOG=1$' notify.txt || true)
[ "$pings" -ge 8 ] || fail "$pings watchdog pings in 3 s after READY at a 400 ms period"
echo "ok: systemd notifications: READY, $pings watchdog pings"

# the schema, then three days of history written as agents would have
stop_kmemd
now=$(($(date +%s) * 1000))
cut=$((now - 3600000))
gap=300000
rows=8640
# (reports of one vmap-purge sample each, stored by kmemd's store code:
# HOST UNIX_MS SEQ SOFT_LOCKUPS PROBE START_MS FIRST_BUCKET COUNTS COUNT SUM_NS MAX_NS)
awk -v rows=$rows -v now=$now -v cut=$cut -v gap=$gap 'BEGIN {
	for (i = 0; i < rows; i++) {
		t = now - i * 30000
		if (t - cut > gap || cut - t > gap)
			printf "h%02d %.0f %d %d vmap-purge %.0f 20 3 3 %d %d\n", i % 60, t, rows - i,
				rows - i, t - 10000, 3000000 + i, 2000000 + i
	}
}' | $BUILD/tests/integration/store-rows ingest kmemd.sqlite
# the rows within a few minutes of the raw window's edge are left out:
# kmemd's clock at its pass is not this script's; one sample a row
n=$(sqlite3 kmemd.sqlite "SELECT count(*) FROM report_samples")
hours=$(sqlite3 kmemd.sqlite "SELECT count(DISTINCT host_id || '/' || (unix_ms / 3600000))
	FROM counters WHERE unix_ms < $now - 3600000")
recent=$(sqlite3 kmemd.sqlite "SELECT count(*) FROM counters WHERE unix_ms >= $now - 3600000")

start_kmemd
port=$(sed -n 's/.*listening on port \([0-9]*\).*/\1/p' kmemd.log | sed -n 1p)
wait_for 20 grep -q "rolled [0-9]* rows of telemetry" kmemd.log || fail "no rollup pass"
old=$(sqlite3 kmemd.sqlite "SELECT count(*) FROM report_samples WHERE end_ms < $now - 3600000")
[ "$old" = 0 ] || fail "$old raw samples older than raw_retention remain"
rollups=$(sqlite3 kmemd.sqlite "SELECT count(*) FROM rollups")
[ "$rollups" -gt 1000 ] || fail "only $rollups hourly rows"
echo "ok: $n samples of 60 hosts over 3 days: the old ones now $rollups hourly rows"

out=$(curl -sS --cacert pki/ca.crt --cert pki/ops.crt --key pki/ops.key \
	"https://127.0.0.1:$port/v1/telemetry?probe=vmap-purge")
grep -q "\"samples\":$n," <<<"$out" || fail "telemetry lost samples: $out"
grep -q "\"count\":$((n * 3))," <<<"$out" || fail "telemetry lost counts: $out"
grep -q "\"max_ns\":$((2000000 + rows - 1))," <<<"$out" || fail "telemetry lost the max: $out"
grep -q "\"hosts\":60," <<<"$out" || fail "telemetry lost hosts: $out"
echo "ok: /v1/telemetry over raw and hourly rows: every sample, count and the max"

kept=$(sqlite3 kmemd.sqlite "SELECT count(*) FROM counters")
[ "$kept" = $((hours + recent)) ] ||
	fail "counters: $kept rows, want one per host and hour ($hours) plus $recent recent"
last=$(sqlite3 kmemd.sqlite "SELECT max(seq) = max(soft_lockups) FROM counters")
[ "$last" = 1 ] || fail "counters lost the hours' last reports"
echo "ok: old counters keep each host's last report of each hour ($hours rows)"
stop_kmemd
echo PASS
