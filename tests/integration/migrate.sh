#!/bin/bash
# kmemd migrate: a SQLite store a fleet ran on, copied into PostgreSQL
# (KMEM_STORE_URL: run it under tests/pg/with-cluster), and kmemd on it.
# - Every table's rows arrive, and kmemd serves them: hosts, their states,
#   a revoked host still refused, the assignment, the secret.
# - The agents report on through the kmemd on PostgreSQL, and new rows take
#   ids after the copied ones.
# - A second copy into the database is refused, and changes nothing; so is a
#   SQLite file that is not there.
# - A [store] url not PostgreSQL's, or whose server is not there, is refused;
#   the URL, which may hold a password, is not logged.
set -euo pipefail

BUILD=${1:?usage: migrate.sh BUILD_DIR SOURCE_DIR}
SRC=${2:?usage: migrate.sh BUILD_DIR SOURCE_DIR}
KMEMCTL=$BUILD/cli/kmemctl
KMEMD=$BUILD/daemon/kmemd
AGENT=$BUILD/agent/kmem-agent
: "${KMEM_STORE_URL:?run under tests/pg/with-cluster}"
url=$KMEM_STORE_URL

work=$(mktemp -d "$BUILD/migrate.XXXXXX")
chmod 755 "$work"
# shellcheck source=tests/integration/lib.sh
. "$SRC/tests/integration/lib.sh"
in_work

pki_fleet
pki_hosts h1 h2 h3
# first on SQLite, as a fleet that grew up on it
KMEM_STORE_URL= kmemd_conf >kmemd.conf
KMEM_STORE_URL= kmemd_start
for h in h1 h2; do
	fixture_agent $h web
done
wait_for 30 sh -c "[ \$(grep -c 'report [0-9]* acknowledged' agent-h1.log) -ge 2 ] &&
	[ \$(grep -c 'report [0-9]* acknowledged' agent-h2.log) -ge 2 ]" || fail "the agents did not report"
sign_policy base '{"mitigations":{"rstat-yield":{"mode":"on"}}}'
expect 201 '"id":' "base is assigned to h1" ops POST /v1/assignments \
	-H 'Content-Type: application/json' --data '{"policy":"base","version":1,"selector":{"host":"h1"}}'
expect 200 '"revoked":true' "h3 is revoked" ops POST /v1/hosts/revoke \
	-H 'Content-Type: application/json' --data '{"host":"h3"}'
expect 201 '"secret":' "an enrollment secret is made" ops POST /v1/enroll/secrets \
	-H 'Content-Type: application/json' --data '{"expires_in_s":3600}'
for h in h1 h2; do
	kill "${agent[$h]}"
	wait "${agent[$h]}" 2>/dev/null || true
done
kill "$kmemd_pid"
wait "$kmemd_pid" || fail "kmemd on SQLite exited with $?"
kmemd_pid=

tables="hosts states report_samples counters events policies assignments audit enroll_secrets
rollups rollouts rollout_hosts verdicts names enrollments"
for t in $tables; do
	sqlite3 kmemd.sqlite "SELECT count(*) FROM $t" >>counts-sqlite
done
$KMEMD migrate kmemd.sqlite "$url" >migrate.out 2>migrate.err ||
	fail "kmemd migrate: $(cat migrate.err)"
grep -q "^counters  *[1-9][0-9]* rows$" migrate.out || fail "migrate's counts: $(cat migrate.out)"
for t in $tables; do
	db "SELECT count(*) FROM $t" >>counts-pg
done
diff counts-sqlite counts-pg >/dev/null ||
	fail "rows per table, SQLite then PostgreSQL: $(paste counts-sqlite counts-pg | tr '\n' ' ')"
[ "$(db "SELECT max(version) FROM schema_version")" -ge 1 ] || fail "no schema version"
sum() { # DB-COMMAND TABLE
	$1 "SELECT coalesce(sum(length(probes)) + sum(length(counts)), 0) FROM report_samples"
}
[ "$(sum "sqlite3 kmemd.sqlite")" = "$(sum db)" ] || fail "the samples' bytes differ"
echo "ok: kmemd migrate copied every table's rows ($(paste -sd+ counts-pg | bc) rows)"

# the second copy is refused and leaves the database as it was
! $KMEMD migrate kmemd.sqlite "$url" >again.out 2>again.err || fail "a second migrate was taken"
grep -q "holds a store already" again.err || fail "the second migrate's error: $(cat again.err)"
! $KMEMD migrate nothing-here.sqlite "$url" >none.out 2>none.err || fail "a missing file was taken"
grep -q "nothing-here.sqlite: No such file" none.err || fail "a missing file's error: $(cat none.err)"
[ ! -e nothing-here.sqlite ] || fail "migrate made the SQLite file it was to read"
for t in $tables; do
	db "SELECT count(*) FROM $t"
done | diff - counts-pg >/dev/null || fail "a refused migrate changed the database"
echo "ok: a second migrate, and one from no file, are refused and change nothing"

# kmemd on PostgreSQL serves what was copied
kmemd_conf >kmemd.conf
grep -q "^url = postgresql://" kmemd.conf || fail "kmemd.conf names no PostgreSQL store"
mv kmemd.log kmemd-sqlite.log
kmemd_start
expect 200 '"host_id":"h1"' "h1 is served from PostgreSQL" ops GET '/v1/hosts/detail?id=h1'
expect 200 '"rstat-yield"' "h1's states are served" ops GET '/v1/hosts/detail?id=h1'
expect 200 '"revoked":true' "h3 is still revoked" ops GET '/v1/hosts/detail?id=h3'
old_id=$(db "SELECT max(id) FROM assignments")
expect 201 "\"id\":$((old_id + 1))" "a new assignment takes the next id" ops POST /v1/assignments \
	-H 'Content-Type: application/json' --data '{"policy":"base","version":1,"selector":{"host":"h2"}}'
before=$(db "SELECT count(*) FROM counters")
# the same agents, their state (seq, spool) kept: their fixture roots made anew
for h in h1 h2; do
	fd=${kmsg[$h]}
	exec {fd}>&-
	rm -rf root-$h
	fixture_agent $h web
done
wait_for 30 sh -c "[ \$(grep -c 'report [0-9]* acknowledged' agent-h1.log) -ge 2 ]" ||
	fail "h1 did not report to kmemd on PostgreSQL: $(tail -3 agent-h1.log)"
wait_for 30 sh -c "[ \"\$(psql -X -A -t -d '$url' -c \"SELECT policy_name FROM hosts WHERE host_id = 'h2'\")\" = base ]" ||
	fail "h2 does not run base: $(db "SELECT host_id, policy_name FROM hosts")"
[ "$(db "SELECT count(*) FROM counters")" -gt "$before" ] || fail "no new reports were stored"
for h in h1 h2; do
	kill "${agent[$h]}"
	wait "${agent[$h]}" 2>/dev/null || true
done
no_report_lost h1 h2
echo "ok: the agents report on through kmemd on PostgreSQL, and none of their reports is lost"

# [store] url: one not PostgreSQL's is refused by the check; one whose server
# is not there stops kmemd at start with libpq's reason, and the URL (it may
# hold a password) is never logged
sed "s|^url = .*|url = mysql://kmemd@db.example/kmemd|" kmemd.conf >bad.conf
! $KMEMD -n -c bad.conf >bad.out 2>&1 || fail "kmemd -n took a mysql:// store"
grep -q "\[store\] url is not a postgresql:// URL" bad.out || fail "the bad URL's error: $(cat bad.out)"
sed "s|^url = .*|url = postgresql://kmemd:s3cret@/kmemd?host=$PWD/no-such-dir|" kmemd.conf >gone.conf
! timeout 30 $KMEMD -c gone.conf >gone.out 2>&1 || fail "kmemd started without its database"
grep -q "store \[store\] url: .*no-such-dir" gone.out || fail "no database's error: $(cat gone.out)"
! grep -q s3cret gone.out || fail "kmemd logged the store's password: $(cat gone.out)"
echo "ok: a store URL not PostgreSQL's, or one with no server, is refused, its password not logged"
