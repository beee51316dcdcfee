#!/bin/bash
# kmemd stores reports off its event loop, on a thread and connection of
# their own (daemon/ingest-worker.h). Another process holds the store's
# write lock to keep reports waiting for their commit:
# - the loop goes on serving (health, an operator's read) meanwhile, and
#   once the lock is let go each report is acknowledged and stored;
# - kmemd stopped (SIGTERM) with reports waiting stores them all before it
#   exits, and every report it acknowledged is stored;
# - a report whose ingest fails is answered 503 with the other report of
#   its batch, and neither is stored; the next one is.
set -euo pipefail

BUILD=${1:?usage: kmemd-writer.sh BUILD_DIR SOURCE_DIR}
SRC=${2:?usage: kmemd-writer.sh BUILD_DIR SOURCE_DIR}
KMEMCTL=$BUILD/cli/kmemctl
KMEMD=$BUILD/daemon/kmemd
AGENT=$BUILD/agent/kmem-agent
EDIT=$BUILD/tests/integration/report-edit

work=$(mktemp -d "$BUILD/writer.XXXXXX")
chmod 755 "$work"
# shellcheck source=tests/integration/lib.sh
. "$SRC/tests/integration/lib.sh"
in_work

pki_fleet
pki_hosts h1 h2
# a batch stays open a second: reports handed over together share it
{
	kmemd_conf
	echo "batch_wait = 1s"
} >kmemd.conf
kmemd_start
# a restart listens where the first start did
sed -i "s/^listen = .*/listen = 127.0.0.1:$port/" kmemd.conf

comms=$(cat /proc/$kmemd_pid/task/*/comm | sort | tr '\n' ' ')
grep -q "kmemd-ingest" <<<"$comms" && grep -q "kmemd-series" <<<"$comms" ||
	fail "kmemd's threads: $comms"
echo "ok: kmemd runs threads kmemd-ingest and kmemd-series"

# a real report, spooled by an agent that cannot reach kmemd
agent_conf h1 1 web | sed "s/state-h1/state-spool/" >spool.conf
$AGENT -r "$SRC/tests/fixtures/host-6.1" -c spool.conf >spool.log 2>&1 &
spooler=$!
wait_for 10 sh -c 'ls state-spool/spool/*.report >/dev/null 2>&1' || fail "nothing spooled"
kill $spooler
wait $spooler || true
report=$(ls state-spool/spool/*.report | sed -n 1p)

post() { # cert-name body-file: prints the status code
	curl -sS --cacert pki/ca.crt --cert pki/$1.crt --key pki/$1.key -o /dev/null \
		-w '%{http_code}' -H 'Content-Type: application/x-protobuf' \
		--data-binary @"$2" "$URL/v1/agent/report" 2>&1 || true
}
stored() { # host seq: rows of the report in the store
	sqlite3 kmemd.sqlite "SELECT count(*) FROM counters WHERE host_id = '$1' AND seq = $2"
}

# names are admitted on the loop's connection: known before the lock is taken
$EDIT "$report" first.bin seq=1
[ "$(post h1 first.bin)" = 200 ] || fail "h1's first report"

# lock: another process holds the store's write lock until unlock
lock() {
	mkfifo lock.in
	command sqlite3 kmemd.sqlite <lock.in >lock.out 2>&1 &
	locker=$!
	exec {lockfd}>lock.in
	echo "BEGIN IMMEDIATE; INSERT INTO audit (actor) VALUES ('test');" >&$lockfd
	wait_for 10 sh -c '! command sqlite3 kmemd.sqlite "BEGIN IMMEDIATE; ROLLBACK" 2>/dev/null' ||
		fail "the test's lock on the store"
}
unlock() {
	echo "COMMIT;" >&$lockfd
	exec {lockfd}>&-
	wait $locker || fail "the test's lock: $(cat lock.out)"
	rm lock.in
}
# made HOST SEQ...: each report's file, made before the lock is taken so
# that the lock is held no longer than the sending takes: past the
# store's 5 s busy timeout a busy machine would see batches fail
made() {
	local h=$1 seq
	shift
	for seq in "$@"; do
		$EDIT "$report" r-$h-$seq.bin seq=$seq host=$h
	done
}
# send HOST SEQ...: each report (made) posted in the background; its status in code-HOST-SEQ
posters=()
send() {
	local h=$1 seq
	shift
	for seq in "$@"; do
		[ -f r-$h-$seq.bin ] || made $h $seq
		post $h r-$h-$seq.bin >code-$h-$seq &
		posters+=($!)
	done
}
# handed SEQ...: kmemd read each (its debug line), and handed it to the writer
handed() {
	local seq
	for seq in "$@"; do
		wait_for 20 grep -q "report $seq from '" kmemd.log || fail "report $seq never arrived"
	done
}

made h1 $(seq 101 108)
lock
send h1 $(seq 101 108)
handed $(seq 101 108)
code=$(curl -sS --cacert pki/ca.crt -o /dev/null -w '%{http_code}' "$URL/v1/health")
[ "$code" = 200 ] || fail "health while reports wait for the store: $code"
out=$(api ops GET /v1/hosts)
[ "$(tail -1 <<<"$out")" = 200 ] && grep -q '"h1"' <<<"$out" ||
	fail "an operator's read while reports wait for the store: $out"
for p in "${posters[@]}"; do
	kill -0 $p 2>/dev/null || fail "a report was answered before its commit could be made"
done
echo "ok: the loop serves health and reads while 8 reports wait for the store's lock"
unlock
wait "${posters[@]}"
posters=()
for s in $(seq 101 108); do
	[ "$(cat code-h1-$s)" = 200 ] || fail "report $s: $(cat code-h1-$s)"
	[ "$(stored h1 $s)" = 1 ] || fail "report $s acknowledged, not stored"
done
echo "ok: once the lock is let go all 8 are acknowledged and stored"

# SIGTERM with reports waiting for their commit
made h1 $(seq 201 208)
lock
send h1 $(seq 201 208)
handed $(seq 201 208)
kill -TERM $kmemd_pid
unlock
wait $kmemd_pid || fail "kmemd exited with $? on SIGTERM"
kmemd_pid=
wait "${posters[@]}" || true
posters=()
acks=0
for s in $(seq 201 208); do
	[ "$(stored h1 $s)" = 1 ] || fail "report $s, handed over before SIGTERM, not stored"
	[ "$(cat code-h1-$s)" != 200 ] || acks=$((acks + 1))
done
# the replies of those committed at shutdown may not reach their agents: they send again
echo "ok: stopped with 8 reports waiting, kmemd stored all of them ($acks acknowledged)"

# a report that fails to store fails its batch
kmemd_start
sqlite3 kmemd.sqlite "CREATE TRIGGER refuse_h2 BEFORE INSERT ON counters
	WHEN NEW.host_id = 'h2' BEGIN SELECT RAISE(ABORT, 'refused by the test'); END"
made h1 301
made h2 1
lock
send h1 301
handed 301
send h2 1
handed 1
unlock
wait "${posters[@]}"
posters=()
[ "$(cat code-h1-301)" = 503 ] && [ "$(cat code-h2-1)" = 503 ] ||
	fail "a batch whose report failed: h1 $(cat code-h1-301), h2 $(cat code-h2-1)"
grep -q "storing report 1 from 'h2' failed: refused by the test" kmemd.log ||
	fail "the failed report is not logged"
grep -q "dropping the 1 other reports of its batch" kmemd.log || fail "the dropped batch is not logged"
[ "$(stored h1 301)" = 0 ] || fail "a report of a batch that failed is stored"
[ "$(sqlite3 kmemd.sqlite "SELECT count(*) FROM hosts WHERE host_id = 'h2'")" = 0 ] ||
	fail "part of the report that failed is stored"
sqlite3 kmemd.sqlite "DROP TRIGGER refuse_h2"
send h2 2
wait "${posters[@]}"
posters=()
[ "$(cat code-h2-2)" = 200 ] && [ "$(stored h2 2)" = 1 ] ||
	fail "the report after a failed batch: $(cat code-h2-2)"
echo "ok: a report that fails to store fails its batch: both 503, neither stored; the next is"

kill $kmemd_pid
wait $kmemd_pid || fail "kmemd exited with $? on SIGTERM"
kmemd_pid=
echo PASS
