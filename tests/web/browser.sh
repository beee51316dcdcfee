#!/bin/bash
# The dashboard in Debian's Chromium (headless), driven by playwright-core,
# against a real kmemd: a store seeded with 10,000 hosts by kmemd's own
# store code, and six real kmem-agents on fixture trees whose /dev/kmsg
# FIFOs this script writes lockups into and whose probe histograms it
# grows. Two rollouts run for real: "good" passes both waves, "bad"
# (usercopy-fastpath on; its hosts lock up and slow down) fails its first
# wave on a gate and is rolled back. tests/web/dashboard.js then loads
# every page with the operator's certificate (and the fleet with an
# observer's), compares what they show with the API and saves screenshots
# in $BUILD/test-output/web.
set -euo pipefail

BUILD=${1:?usage: browser.sh BUILD_DIR SOURCE_DIR}
SRC=${2:?usage: browser.sh BUILD_DIR SOURCE_DIR}
KMEMCTL=$BUILD/cli/kmemctl
KMEMD=$BUILD/daemon/kmemd
AGENT=$BUILD/agent/kmem-agent
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
OUT=$BUILD/test-output/web
N=6
FLEET=10000

[ -x "$CHROMIUM" ] || { echo "FAIL: no $CHROMIUM (scripts/install-deps browser)" >&2; exit 1; }
work=$(mktemp -d "$BUILD/browser.XXXXXX")
chmod 755 "$work"
# shellcheck source=tests/integration/lib.sh
. "$SRC/tests/integration/lib.sh"
in_work
rm -rf "$OUT"
mkdir -p "$OUT"

mapfile -t hosts < <(seq -f 'h%02g' $N)
pki_fleet
pki_hosts "${hosts[@]}"
$KMEMCTL pki issue pki observer viewer >/dev/null
"$BUILD/tests/web/seed-store" kmemd.sqlite $FLEET
kmemd_conf >kmemd.conf
printf '[rollout]\ntick = 500ms\n' >>kmemd.conf
kmemd_start

# vmap-purge's histogram as the module keeps it: cumulative, one more purge
# per call; 4 ms ones while usercopy-fastpath is on, 128 µs ones otherwise
grow() { # host
	local d=root-$1/sys/kernel/kmemctl/probes/vmap-purge fast=0 slow=0
	while sleep 0.5; do
		if [ "$(cat root-$1/sys/kernel/kmemctl/mitigations/usercopy-fastpath/mode)" = on ]; then
			slow=$((slow + 1))
		else
			fast=$((fast + 1))
		fi
		printf '131072 %d\n4194304 %d\n' $fast $slow >$d/hist.new
		echo $((fast * 131072 + slow * 4194304)) >$d/sum_ns.new
		mv $d/hist.new $d/hist
		mv $d/sum_ns.new $d/sum_ns
	done
}
# the kernel's soft lockup report with its stack while usercopy-fastpath is on,
# one kmsg record per line as the kernel writes them
lockups() { # host fd
	local seq=1000 line
	while sleep 0.5; do
		[ "$(cat root-$1/sys/kernel/kmemctl/mitigations/usercopy-fastpath/mode)" = on ] || continue
		for line in '0;watchdog: BUG: soft lockup - CPU#1 stuck for 23s! [kworker/1:2:81]' \
			'4;Call Trace:' '4; <TASK>' '4; __purge_vmap_area_lazy+0x2d1/0x770' \
			'4; _vm_unmap_aliases+0x1a5/0x1f0' '4; change_page_attr_set_clr+0x13c/0x420' \
			'4; set_memory_ro+0x26/0x30' '4; </TASK>'; do
			seq=$((seq + 1))
			printf '%s,%d,%d,-;%s\n' "${line%%;*}" $seq $((seq * 1000)) "${line#*;}"
		done >&"$2"
	done
}
for h in "${hosts[@]}"; do
	# lockups here come from the policies, not from the agent's own guard
	fixture_agent $h web "guard_window = 0"
	grow $h &
	pids+=($!)
	lockups $h ${kmsg[$h]} &
	pids+=($!)
done
db() {
	sqlite3 kmemd.sqlite "$1"
}
reported() {
	[ "$(db "SELECT count(*) FROM hosts WHERE last_seq > 0 AND host_id LIKE 'h%'")" = $N ]
}
wait_for 30 reported || fail "the $N agents did not all report"

JS=(-H 'Content-Type: application/json')
sign_policy base '{"mitigations":{"rstat-yield":{"mode":"off"},"usercopy-fastpath":{"mode":"off"}}}'
sign_policy good '{"mitigations":{"rstat-yield":{"mode":"on"},"usercopy-fastpath":{"mode":"off"}}}'
sign_policy bad '{"mitigations":{"rstat-yield":{"mode":"on"},"usercopy-fastpath":{"mode":"on"}}}'
expect 201 '"id":' "base is assigned to the agents' hosts" ops POST /v1/assignments "${JS[@]}" \
	--data '{"policy":"base","version":1,"selector":{"labels":{"role":"web"}}}'
running_base() {
	[ "$(db "SELECT count(*) FROM hosts WHERE policy_name = 'base' AND host_id LIKE 'h%'")" = $N ]
}
wait_for 30 running_base || fail "not every agent runs base: $(db 'SELECT host_id, policy_name FROM hosts WHERE host_id LIKE \"h%\"')"
in_state() { # rollout state
	[ "$(db "SELECT state FROM rollouts WHERE name = '$1'")" = "$2" ]
}
# six hosts: no holdback (it would leave one baseline, fewer than min_hosts),
# and waves without lockups carry no information about a ratio: they pass, saying so
GATES='"holdback_percent":0,"gates":{"min_exposure_h":0.0005,"min_hosts":3,"latency_probes":["vmap-purge"],"underpowered":"pass"}'
rollout() { # name policy bake_s
	expect 201 '"state":"pending"' "rollout $1 is created" ops POST /v1/rollouts "${JS[@]}" --data \
		"{\"name\":\"$1\",\"policy\":\"$2\",\"version\":1,\"selector\":{\"labels\":{\"role\":\"web\"}},
		\"waves\":[{\"percent\":50},{\"percent\":100}],\"bake_s\":$3,$GATES}"
	expect 200 '"state":"running"' "rollout $1 is started" ops POST /v1/rollouts/action "${JS[@]}" \
		--data "{\"name\":\"$1\",\"action\":\"start\"}"
}
rollout good good 4
wait_for 40 in_state good 'done' || fail "good did not finish: $(db "SELECT state, reason FROM rollouts")"
rollout bad bad 8
wait_for 90 in_state bad rolled-back || fail "bad was not rolled back: $(db "SELECT state, reason FROM rollouts")"
echo "ok: rollout good is done, bad failed $(db "SELECT gate FROM verdicts WHERE verdict = 'fail'") and is rolled back"

URL=$URL CA=pki/ca.crt CERT=pki/ops.crt KEY=pki/ops.key OUT=$OUT FLEET=$((FLEET + N)) \
	VIEWER_CERT=pki/viewer.crt VIEWER_KEY=pki/viewer.key \
	CHROMIUM=$CHROMIUM node "$SRC/tests/web/dashboard.js" || fail "the dashboard's checks failed"
ls "$OUT"/*.png
echo PASS
