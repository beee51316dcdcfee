#!/bin/bash
# The dashboard's rollout page against a 10,000-member rollout while a
# host reports. kmemd computes a rollout's series off its loop
# (daemon/series-worker.h): every report is acknowledged, and reports go
# on being acknowledged while each new query is computed (series-load
# counts them); a refreshed page gets the kept answer with when it was
# computed; errors are answered and not kept. Meanwhile the engine judges
# the rollout every 250 ms on its own thread (daemon/engine-worker.h),
# beside the writer and the series worker, each with its connection.
set -euo pipefail

BUILD=${1:?usage: series.sh BUILD_DIR SOURCE_DIR}
SRC=${2:?usage: series.sh BUILD_DIR SOURCE_DIR}
KMEMCTL=$BUILD/cli/kmemctl
KMEMD=$BUILD/daemon/kmemd
LOAD=$BUILD/tests/integration/series-load

work=$(mktemp -d "$BUILD/series.XXXXXX")
# shellcheck source=tests/integration/lib.sh
. "$SRC/tests/integration/lib.sh"
in_work

pki_fleet
pki_hosts load-1
$LOAD seed kmemd.sqlite 10000 12 || fail "seeding a store with a 10,000-member rollout"
kmemd_conf >kmemd.conf
printf '[rollout]\ntick = 250ms\n' >>kmemd.conf
kmemd_start

# 5 new queries, then a page refreshed 20 times, while load-1 reports
$LOAD run "127.0.0.1:$port" pki/ca.crt pki/ops pki/load-1 5 20 >load.out 2>&1 ||
	fail "$(cat load.out)"
cat load.out
grep -q "^series answers 25 (5 new queries, 20 refreshes): 100 canaries, 9900 baselines$" load.out ||
	fail "the series' sides: $(cat load.out)"
echo "ok: every report acknowledged, and reports served while each new series was computed"
wait_for 60 sh -c '[ "$(grep -c "1 rollouts judged in" kmemd.log)" -ge 2 ]' ||
	fail "the engine did not judge the rollout twice: $(grep -c "rollouts judged" kmemd.log)"
echo "ok: the engine judges the 10,000-member rollout on its thread ($(grep -c "1 rollouts judged in" kmemd.log) passes)"

# a kept answer says when it was computed; asked again it is the same one
a=$(api ops GET "/v1/rollouts/series?name=bench&wave=1")
b=$(api ops GET "/v1/rollouts/series?name=bench&wave=1")
if [ "$(tail -1 <<<"$a")" != 200 ] || [ "$(tail -1 <<<"$b")" != 200 ]; then
	fail "the page's series: $a $b"
fi
ca=$(head -1 <<<"$a" | jq .computed_ms)
cb=$(head -1 <<<"$b" | jq .computed_ms)
if [ "$ca" -le 0 ] || [ "$cb" -lt "$ca" ]; then
	fail "computed_ms went from $ca to $cb"
fi
echo "ok: the page's series says when it was computed ($ca, then $cb)"

# errors go to the request and are not kept
for i in 1 2; do
	expect 404 "no rollout nothere" "series of an unknown rollout ($i)" \
		ops GET "/v1/rollouts/series?name=nothere"
	expect 400 "rollout bench has not reached wave 2" "series of a wave not reached ($i)" \
		ops GET "/v1/rollouts/series?name=bench&wave=2"
done
expect 400 "from must be before to" "series over an empty window" \
	ops GET "/v1/rollouts/series?name=bench&from=2000&to=1000"
echo "ok: errors answered each time"
! grep -q "store query failed\|failed:" kmemd.log || fail "kmemd logged a failure"
