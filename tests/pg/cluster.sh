#!/bin/bash
# tests/pg/cluster: two throwaway PostgreSQL clusters at once, each on its
# own socket in its own directory, run by an unprivileged user; each
# answers as the kmemd role in database kmemd, keeps what it is given,
# and is gone, server and all, once stopped.
set -euo pipefail

BUILD=${1:?usage: cluster.sh BUILD_DIR SOURCE_DIR}
SRC=${2:?usage: cluster.sh BUILD_DIR SOURCE_DIR}
CLUSTER=$SRC/tests/pg/cluster

work=$(mktemp -d "$BUILD/pg.XXXXXX")
# the clusters' user (nobody, under root) reaches their directories through it
chmod 755 "$work"
mkdir "$work/a" "$work/b"
stop() {
	"$CLUSTER" stop "$work/a" || true
	"$CLUSTER" stop "$work/b" || true
	rm -rf "$work"
}
trap stop EXIT
fail() {
	echo "FAIL: $*"
	exit 1
}

a=$("$CLUSTER" start "$work/a") || fail "the first cluster did not start"
b=$("$CLUSTER" start "$work/b") || fail "the second cluster did not start"
[ "$a" != "$b" ] || fail "both clusters have the URL $a"
psql "$a" -XAtq -c "CREATE TABLE t (x int); INSERT INTO t VALUES (1), (2)"
psql "$b" -XAtq -c "CREATE TABLE t (x int); INSERT INTO t VALUES (40)"
[ "$(psql "$a" -XAt -c "SELECT current_user || ' ' || current_database() || ' ' || sum(x) FROM t")" = \
	"kmemd kmemd 3" ] || fail "the first cluster: $(psql "$a" -XAt -c 'SELECT * FROM t')"
[ "$(psql "$b" -XAt -c "SELECT sum(x) FROM t")" = 40 ] || fail "the second cluster's rows"
pid=$(head -1 "$work/a/data/postmaster.pid")
owner=$(ps -o user= -p "$pid")
if [ "$(id -u)" = 0 ]; then
	[ "$owner" = nobody ] || fail "the server runs as $owner, not nobody"
fi
echo "ok: two clusters at once, each with its own rows, the server run by $owner"

"$CLUSTER" stop "$work/a"
# gone, or a zombie its reaper has not yet collected
running() {
	case "$(ps -o stat= -p "$pid" 2>/dev/null)" in
	"" | Z*) return 1 ;;
	esac
}
for _ in $(seq 50); do
	running || break
	sleep 0.1
done
! running || fail "the first cluster's server still runs"
[ ! -e "$work/a/data/postmaster.pid" ] || fail "the first cluster left its pid file"
[ "$(psql "$b" -XAt -c "SELECT sum(x) FROM t")" = 40 ] || fail "stopping one stopped the other"
echo "ok: stopped, the server is gone and the other cluster serves on"
