#!/bin/bash
# deploy/: the Prometheus scrape config passes `promtool check config` (with
# real certificate files in place of the example paths), and the Grafana
# dashboard is valid JSON with what Grafana needs of each panel: a unique
# id, a type, a title, a grid position inside 24 columns, queries with an
# expression, and every $variable it uses defined. Which metrics the
# queries name is checked against a live kmemd in integration-rollout.
#   tests/deploy/lint.sh SOURCE_DIR BUILD_DIR
set -euo pipefail

SRC=${1:?usage: lint.sh SOURCE_DIR BUILD_DIR}
BUILD=${2:?usage: lint.sh SOURCE_DIR BUILD_DIR}
D=$SRC/deploy/grafana/kmemctl.json
work=$(mktemp -d "$BUILD/deploy-lint.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() {
	echo "FAIL: $*" >&2
	exit 1
}

cd "$work"
"$BUILD/cli/kmemctl" pki init pki >/dev/null
"$BUILD/cli/kmemctl" pki issue pki observer prometheus >/dev/null
cp "$SRC/deploy/prometheus/kmemctl-rules.yml" pki/
sed "s|/etc/prometheus/kmemctl/|$work/pki/|" "$SRC/deploy/prometheus/kmemd.yml" >kmemd.yml
promtool check config kmemd.yml >promtool.txt 2>&1 || fail "promtool: $(cat promtool.txt)"
echo "ok: deploy/prometheus/kmemd.yml passes promtool check config, with its rules"

# the alerts: they parse, each fires when it should and not before
# (kmemctl-rules.test.yml), and every series they read is one kmemd exposes
R=$SRC/deploy/prometheus/kmemctl-rules.yml
promtool check rules "$R" >promtool.txt 2>&1 || fail "promtool check rules: $(cat promtool.txt)"
(cd "$SRC/deploy/prometheus" && promtool test rules kmemctl-rules.test.yml) >promtool.txt 2>&1 ||
	fail "promtool test rules: $(cat promtool.txt)"
for alert in $(sed -n 's/^ *- alert: //p' "$R"); do
	grep -q "alertname: $alert\$" "$SRC/deploy/prometheus/kmemctl-rules.test.yml" ||
		fail "alert $alert has no case in kmemctl-rules.test.yml"
done
for m in $(grep -o 'kmemd_[a-z_]*' "$R" | sort -u); do
	grep -q "$m" "$SRC/daemon/metrics.c" || fail "$R reads $m, which kmemd's /metrics does not have"
done
echo "ok: deploy/prometheus/kmemctl-rules.yml: $(grep -c '^ *- alert:' "$R") alerts, each tested with promtool"

# q SELECT [WHERE]: over the dashboard's panels, each as p.value
q() {
	sqlite3 :memory: "SELECT $1 FROM json_each(readfile('$D'), '\$.panels') p ${2:+WHERE $2}"
}
[ "$(sqlite3 :memory: "SELECT json_valid(readfile('$D'))")" = 1 ] || fail "$D is not JSON"
for key in uid title schemaVersion panels templating; do
	[ -n "$(sqlite3 :memory: "SELECT json_extract(readfile('$D'), '\$.$key')")" ] ||
		fail "the dashboard has no $key"
done
bad=$(q "json_extract(p.value, '\$.id')" "json_extract(p.value, '\$.type') IS NULL
	OR json_extract(p.value, '\$.title') IS NULL OR json_extract(p.value, '\$.gridPos.w') IS NULL
	OR json_extract(p.value, '\$.gridPos.x') + json_extract(p.value, '\$.gridPos.w') > 24
	OR json_extract(p.value, '\$.gridPos.h') < 1
	OR json_array_length(json_extract(p.value, '\$.targets')) < 1")
[ -z "$bad" ] || fail "panels without type, title, a grid place or queries: $bad"
[ "$(q "count(DISTINCT json_extract(p.value, '\$.id'))")" = "$(q "count(*)")" ] ||
	fail "panel ids are not unique"
exprs=$(sqlite3 :memory: "SELECT json_extract(t.value, '\$.expr') FROM json_each(readfile('$D'),
	'\$.panels') p, json_each(p.value, '\$.targets') t")
[ -z "$(echo "$exprs" | grep -v .)" ] || fail "a query without an expression"
defined=$(sqlite3 :memory: "SELECT json_extract(v.value, '\$.name') FROM
	json_each(readfile('$D'), '\$.templating.list') v" | sort)
for v in $(grep -o '\$[a-z_]*' "$D" | sort -u | tr -d '$'); do
	case $v in
	__*) continue ;; # Grafana's own, such as $__rate_interval
	esac
	grep -qx "$v" <<<"$defined" || fail "\$$v is used but not a dashboard variable"
done
echo "ok: deploy/grafana/kmemctl.json: $(q "count(*)") panels, each complete; variables defined"
echo PASS
