#!/bin/bash
# Rollouts judged by kmemd's engine from real agents' telemetry: twelve
# kmem-agents on fixture trees, each with a FIFO for /dev/kmsg that this
# script writes the kernel's lockup reports into.
# - A good policy (rstat-yield on) waits while most baselines are silent
#   (inconclusive: held, one verdict), survives kmemd being SIGKILLed and
#   restarted in that wave (same wave, start and verdicts), then passes
#   every wave once the baselines report again, and is done.
# - A bad policy (usercopy-fastpath on too), whose hosts log soft lockups while it runs,
#   fails its first wave on the sequential lockup test long before its bake is over, and is
#   rolled back: every host
#   runs the good policy again, usercopy-fastpath is off everywhere, and the rollout
#   ends rolled-back.
# - A dry run of the bad policy plans and judges its waves, and sends it
#   to no host.
# - on_fail = pause holds a failed wave (its canaries keep the policy) for
#   the operator; a manual gate before a wave waits for promote.
# - A policy whose mitigation kmemctl.ko's breaker trips fails its first
#   wave on health (the canaries report the trip), without a lockup.
set -euo pipefail

BUILD=${1:?usage: rollout.sh BUILD_DIR SOURCE_DIR}
SRC=${2:?usage: rollout.sh BUILD_DIR SOURCE_DIR}
KMEMCTL=$BUILD/cli/kmemctl
KMEMD=$BUILD/daemon/kmemd
AGENT=$BUILD/agent/kmem-agent
N=12

work=$(mktemp -d "$BUILD/rollout.XXXXXX")
chmod 755 "$work"
# shellcheck source=tests/integration/lib.sh
. "$SRC/tests/integration/lib.sh"
in_work

mapfile -t hosts < <(seq -f 'h%02g' $N)
pki_fleet
pki_hosts "${hosts[@]}"
# a webhook receiver: each body POSTed to it, a line of hooks.jsonl
cat >receiver.py <<'PY'
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        with open("hooks.jsonl", "ab") as f:
            f.write(body + b"\n")
        self.send_response(204)
        self.end_headers()
    def log_message(self, *a):
        pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
open("receiver.port", "w").write(str(s.server_port))
s.serve_forever()
PY
python3 receiver.py &
receiver=$!
pids+=($receiver)
wait_for 10 test -s receiver.port || fail "the webhook receiver did not start"
kmemd_conf >kmemd.conf
cat >>kmemd.conf <<CONF
[rollout]
tick = 500ms
[notify]
webhook = http://127.0.0.1:$(cat receiver.port)/kmemctl?team=mm
CONF
# a webhook kmemd cannot use stops it at start, saying why
sed 's|^webhook = .*|webhook = ftp://127.0.0.1/x|' kmemd.conf >bad-hook.conf
$KMEMD -c bad-hook.conf >bad-hook.log 2>&1 && fail "kmemd started with an ftp:// webhook"
grep -q "not an http:// or https:// URL" bad-hook.log || fail "the bad webhook: $(cat bad-hook.log)"
kmemd_start
# restarts come back on the same port, where the agents look for kmemd
sed -i "s/^listen = .*/listen = 127.0.0.1:$port/" kmemd.conf

for h in "${hosts[@]}"; do
	# lockups here come from the policies, not from the agent's own guard
	fixture_agent $h web "guard_window = 0"
done
reported() {
	[ "$(db "SELECT count(*) FROM hosts WHERE last_seq > 0")" = $N ]
}
wait_for 30 reported || fail "the $N agents did not all report"
echo "ok: $N agents report"

JS=(-H 'Content-Type: application/json')
sign_policy base '{"mitigations":{"rstat-yield":{"mode":"off"},"usercopy-fastpath":{"mode":"off"}}}'
sign_policy good '{"mitigations":{"rstat-yield":{"mode":"on"},"usercopy-fastpath":{"mode":"off"}}}'
sign_policy bad '{"mitigations":{"rstat-yield":{"mode":"on"},"usercopy-fastpath":{"mode":"on"}}}'
expect 201 '"id":' "base is assigned to every host" ops POST /v1/assignments "${JS[@]}" \
	--data '{"policy":"base","version":1,"selector":{"all":true}}'
running() { # policy: every host runs it
	[ "$(db "SELECT count(*) FROM hosts WHERE policy_name = '$1'")" = $N ]
}
wait_for 30 running base || fail "not every host runs base: $(db 'SELECT host_id, policy_name FROM hosts')"

state() { # rollout: state and wave (1-based)
	db "SELECT state || ' ' || (wave + 1) FROM rollouts WHERE name = '$1'"
}
in_state() { # rollout state wave
	[ "$(state $1)" = "$2 $3" ]
}
verdicts() { # rollout
	db "SELECT (wave + 1) || ' ' || verdict || ' ' || gate FROM verdicts WHERE rollout = '$1'
		ORDER BY id" | tr '\n' ','
}
act() { # rollout action
	api ops POST /v1/rollouts/action "${JS[@]}" --data "{\"name\":\"$1\",\"action\":\"$2\"}" >/dev/null
}
# twelve hosts: no holdback (the last wave is every host), and waves without
# lockups carry no information about a ratio: they pass, saying so
GATES='"holdback_percent":0,"gates":{"min_exposure_h":0.001,"min_hosts":3,"underpowered":"pass"}'

# the good policy: 3, 6, then 12 hosts, 3 s each
expect 201 '"state":"pending"' "rollout good is created" ops POST /v1/rollouts "${JS[@]}" --data \
	"{\"name\":\"good\",\"policy\":\"good\",\"version\":1,\"selector\":{\"labels\":{\"role\":\"web\"}},
	\"waves\":[{\"percent\":25},{\"percent\":50},{\"percent\":100}],\"bake_s\":3,$GATES}"
# seven of the nine baselines of wave 1 go silent
silent=$(db "SELECT host_id FROM rollout_hosts WHERE rollout = 'good' AND wave > 0" 2>/dev/null || true)
[ -z "$silent" ] || fail "members before the start: $silent"
act good start
silent=$(db "SELECT host_id FROM rollout_hosts WHERE rollout = 'good' AND wave > 0
	ORDER BY host_id LIMIT 7")
[ "$(echo "$silent" | wc -l)" = 7 ] || fail "wave 1 left $(echo "$silent" | wc -l) hosts out, not 9"
for i in $silent; do
	kill -STOP ${agent[$i]}
done
wait_for 30 in_state good holding 1 || fail "good was not held: $(state good)"
[ "$(verdicts good)" = "1 inconclusive baselines," ] || fail "verdicts while held: $(verdicts good)"
grep -q "matched baselines reported, fewer than 3" <<<"$(db "SELECT reason FROM rollouts WHERE name = 'good'")" ||
	fail "hold reason: $(db "SELECT reason FROM rollouts WHERE name = 'good'")"
# the held verdict's evidence, as an operator reads it
kmemctl() {
	"$KMEMCTL" --server 127.0.0.1:$port --ca pki/ca.crt --cert pki/ops.crt --key pki/ops.key "$@"
}
kmemctl rollout status good >status.txt || fail "rollout status good: $(cat status.txt)"
grep -q "^  sequential likelihood ratio [0-9.e+-]*, fails at 200$" status.txt ||
	fail "rollout status shows no evidence: $(cat status.txt)"
echo "ok: missing telemetry holds the wave"

# kmemd killed in the held wave: it resumes the same wave and verdicts
before=$(db "SELECT wave || ' ' || wave_started_ms FROM rollouts WHERE name = 'good'")
kill -9 $kmemd_pid
wait $kmemd_pid 2>/dev/null || true
kmemd_start
ticks=$(grep -c "listening on port" kmemd.log)
judged_since_start() { # two engine passes since the last start
	awk '/listening on port/ { n = 0 } /rollouts judged/ { n++ } END { exit !(n >= 2) }' kmemd.log
}
wait_for 10 judged_since_start || fail "the restarted kmemd judged no rollout"
after=$(db "SELECT wave || ' ' || wave_started_ms FROM rollouts WHERE name = 'good'")
[ "$before" = "$after" ] || fail "after the restart the wave is $after, was $before"
in_state good holding 1 || fail "after the restart good is $(state good)"
[ "$(verdicts good)" = "1 inconclusive baselines," ] || fail "verdicts after the restart: $(verdicts good)"
[ "$ticks" = 2 ] || fail "kmemd started $ticks times"
echo "ok: kmemd SIGKILLed and restarted: the same wave, its start and its verdicts"

for i in $silent; do
	kill -CONT ${agent[$i]}
done
wait_for 60 in_state good 'done' 3 || fail "good did not finish: $(state good), $(verdicts good)"
[ "$(verdicts good)" = "1 inconclusive baselines,1 pass ,2 pass ,3 pass ," ] ||
	fail "good's verdicts: $(verdicts good)"
wait_for 30 running good || fail "not every host runs good: $(db 'SELECT host_id, policy_name FROM hosts')"
for h in "${hosts[@]}"; do
	[ "$(cat root-$h/sys/kernel/kmemctl/mitigations/rstat-yield/mode)" = on ] ||
		fail "$h: rstat-yield is not on"
done
# the verdicts keep their numbers: wave 2 compared 6 canaries with 6 baselines
out=$(api ops GET "/v1/rollouts/status?name=good")
grep -q '"strata":{"[^"]*":{"canaries":6,"baselines":6}}' <<<"$(sed -n 1p <<<"$out")" ||
	fail "wave 2's verdict: $out"
grep -q "rollout good wave 3: pass" kmemd.log || fail "no verdict in kmemd's log"
echo "ok: the good policy passes every wave and reaches every host"

# the bad policy: its hosts log two soft lockups a second while usercopy-fastpath is on
lockups() { # host fd
	local seq=1000
	while sleep 0.5; do
		[ "$(cat root-$1/sys/kernel/kmemctl/mitigations/usercopy-fastpath/mode)" = on ] || continue
		seq=$((seq + 1))
		printf '0,%d,%d,-;watchdog: BUG: soft lockup - CPU#0 stuck for 23s! [kworker/0:1:42]\n' \
			$seq $((seq * 1000000)) >&"$2"
	done
}
for h in "${hosts[@]}"; do
	lockups $h ${kmsg[$h]} &
	pids+=($!)
done
# a dry run of the bad policy: members, waves and verdicts, and no host is
# sent it (were one, its lockups would fail the waves)
expect 201 '"state":"pending"' "a dry run of bad is created" ops POST /v1/rollouts "${JS[@]}" --data \
	"{\"name\":\"bad-dry\",\"policy\":\"bad\",\"version\":1,\"selector\":{\"all\":true},
	\"dry_run\":true,\"waves\":[{\"percent\":25},{\"percent\":100}],\"bake_s\":3,$GATES}"
act bad-dry start
wait_for 60 in_state bad-dry 'done' 2 || fail "the dry run did not finish: $(state bad-dry), $(verdicts bad-dry)"
[ "$(verdicts bad-dry)" = "1 pass ,2 pass ," ] || fail "the dry run's verdicts: $(verdicts bad-dry)"
[ "$(db "SELECT count(*) FROM rollout_hosts WHERE rollout = 'bad-dry'")" = $N ] ||
	fail "the dry run's members: $(db "SELECT count(*) FROM rollout_hosts WHERE rollout = 'bad-dry'")"
running good || fail "the dry run moved hosts: $(db 'SELECT host_id, policy_name FROM hosts')"
grep -l "policy bad version 1 from kmemd accepted" agent-*.log && fail "the dry run sent bad to a host"
for h in "${hosts[@]}"; do
	[ "$(cat root-$h/sys/kernel/kmemctl/mitigations/usercopy-fastpath/mode)" = off ] ||
		fail "$h: the dry run turned usercopy-fastpath on"
done
echo "ok: a dry run plans, judges both waves and changes no host"

expect 201 '"state":"pending"' "rollout bad is created" ops POST /v1/rollouts "${JS[@]}" --data \
	"{\"name\":\"bad\",\"policy\":\"bad\",\"version\":1,\"selector\":{\"all\":true},
	\"waves\":[{\"percent\":25},{\"percent\":100}],\"bake_s\":600,$GATES}"
act bad start
# the sequential test stops it long before its 10-minute bake is over
wait_for 60 in_state bad rolled-back 1 ||
	fail "bad was not rolled back: $(state bad), $(verdicts bad); hosts: $(db 'SELECT host_id, policy_name FROM hosts'); usercopy-fastpath on in: $(grep -l on root-*/sys/kernel/kmemctl/mitigations/usercopy-fastpath/mode | cut -d/ -f1)"
[ "$(verdicts bad)" = "1 fail lockups-sequential," ] || fail "bad's verdicts: $(verdicts bad)"
reason=$(db "SELECT reason FROM verdicts WHERE rollout = 'bad'")
grep -q "^lockups: likelihood ratio [0-9.e+]* of canaries at a higher rate, at least 200$" <<<"$reason" ||
	fail "bad's verdict: $reason"
detail=$(db "SELECT detail FROM verdicts WHERE rollout = 'bad'")
lr=$(python3 -c 'import json, sys
l = json.loads(sys.argv[1])["evidence"]["lockups"]
print(int(l["lr"] >= 200 and l["lr_threshold"] == 200))' "$detail")
[ "$lr" = 1 ] || fail "bad's verdict's evidence: $detail"
canaries=$(db "SELECT count(*) FROM rollout_hosts WHERE rollout = 'bad' AND wave = 0")
[ "$canaries" = 3 ] || fail "bad's first wave had $canaries hosts"
running good || fail "after the rollback: $(db 'SELECT host_id, policy_name FROM hosts')"
for h in "${hosts[@]}"; do
	[ "$(cat root-$h/sys/kernel/kmemctl/mitigations/usercopy-fastpath/mode)" = off ] ||
		fail "$h: usercopy-fastpath is still on"
done
canary=$(db "SELECT host_id FROM rollout_hosts WHERE rollout = 'bad' AND wave = 0 LIMIT 1")
grep -q "kernel reported a soft lockup" "agent-$canary.log" || fail "$canary's agent saw no lockup"
# the CLI's views of the same: the canary's events, the wave's series
grep -q "soft-lockup .*watchdog: BUG: soft lockup" <<<"$(kmemctl host events "$canary")" ||
	fail "kmemctl host events $canary: $(kmemctl host events "$canary" | sed -n 1,5p)"
kmemctl rollout series bad --wave 1 >series.txt || fail "kmemctl rollout series bad failed"
grep -q "^rollout bad, wave 1: canaries against their baselines" series.txt &&
	grep -q " canary " series.txt && grep -q " baseline " series.txt ||
	fail "kmemctl rollout series: $(head -5 series.txt)"
echo "ok: canaries' soft lockups fail the wave; every host is back on good: $reason"
# the lockups end here: what follows is the breaker's
for p in "${pids[@]}"; do
	[[ " ${agent[*]} $receiver " == *" $p "* ]] && continue
	kill "$p" 2>/dev/null || true
	wait "$p" 2>/dev/null || true
done
pids=("${agent[@]}" "$receiver")

# a policy whose mitigation the module's breaker trips (the fixture trees
# stand in for it: usercopy-fastpath trips as soon as it is on, its record
# lost): the canaries report the trip and the tripped state, quarantine it,
# and the wave fails on health, no lockup needed
breaker() { # host
	local m=root-$1/sys/kernel/kmemctl/mitigations/usercopy-fastpath
	while sleep 0.2; do
		[ "$(cat $m/mode)" = on ] || continue
		echo "tripped: slow call: 2100 ms in a replacement, over trip_call_ms" >$m/reason
		echo tripped >$m/state
		echo off >$m/mode
	done
}
for h in "${hosts[@]}"; do
	breaker $h &
	pids+=($!)
done
sign_policy tripping '{"mitigations":{"rstat-yield":{"mode":"on"},"usercopy-fastpath":{"mode":"on"}}}'
expect 201 '"state":"pending"' "rollout tripping is created" ops POST /v1/rollouts "${JS[@]}" --data \
	"{\"name\":\"tripping\",\"policy\":\"tripping\",\"version\":1,\"selector\":{\"all\":true},
	\"waves\":[{\"percent\":25},{\"percent\":100}],\"bake_s\":6,$GATES}"
act tripping start
wait_for 60 in_state tripping rolled-back 1 ||
	fail "tripping was not rolled back: $(state tripping), $(verdicts tripping)"
[ "$(verdicts tripping)" = "1 fail health," ] || fail "tripping's verdicts: $(verdicts tripping)"
reason=$(db "SELECT reason FROM verdicts WHERE rollout = 'tripping'")
grep -q "^h[0-9]*: mitigation usercopy-fastpath tripped: tripped: slow call" <<<"$reason" ||
	fail "tripping's verdict: $reason"
running good || fail "after the rollback: $(db 'SELECT host_id, policy_name FROM hosts')"
canary=$(db "SELECT host_id FROM rollout_hosts WHERE rollout = 'tripping' AND wave = 0 LIMIT 1")
grep -q "kmemctl.ko tripped usercopy-fastpath" "agent-$canary.log" ||
	fail "$canary's agent did not see the trip"
[ "$(db "SELECT count(*) FROM events WHERE host_id = '$canary' AND kind = 'trip'")" = 1 ] ||
	fail "$canary reported $(db "SELECT count(*) FROM events WHERE host_id = '$canary' AND kind = 'trip'") trips, not 1"
echo "ok: a trip on the canaries fails the wave on health: $reason"

# a plan stores nothing and says what its waves can detect at the fleet's
# rate: the bad policy's lockups are its history now, and three canaries
# baked for a second expect far fewer lockups than 2x needs
cat >plan.json <<'JSON'
{"name": "short", "policy": "good", "version": 1, "selector": {"all": true},
 "waves": [{"percent": 25}, {"percent": 100}], "bake_s": 1, "holdback_percent": 0}
JSON
kmemctl rollout plan plan.json >plan.txt 2>plan.err || fail "rollout plan: $(cat plan.txt plan.err)"
grep -q "^warning: wave 1 (3 canaries, bake 1s) can detect .*, not 2x, with power 0.8: it needs a bake of [0-9.]*[smhd], or it is held until then$" plan.err ||
	fail "rollout plan's warning: $(cat plan.txt plan.err)"
grep -q "^1 *3 *9 *1s " plan.txt || fail "rollout plan's wave 1: $(cat plan.txt)"
kmemctl -j rollout plan plan.json >plan-j.json 2>/dev/null || fail "rollout plan -j failed"
jget() { # path: from plan-j.json
	sqlite3 :memory: "SELECT json_extract(readfile('plan-j.json'), '$1')"
}
[ "$(jget '$.schema') $(jget '$.members') $(jget '$.plan.waves[0].canaries') $(jget '$.plan.waves[0].baselines')" = "1 12 3 9" ] ||
	fail "rollout plan -j: $(cat plan-j.json)"
[ "$(sqlite3 :memory: "SELECT json_extract(j, '$.plan.waves[0].final_look') = 1
	AND json_extract(j, '$.plan.waves[0].mu0_at_bake_end') > 0
	AND json_extract(j, '$.plan.waves[0].mu0_at_bake_end') < json_extract(j, '$.plan.waves[0].mu_needed')
	AND json_extract(j, '$.plan.waves[0].bake_needed_s') > 1
	AND json_extract(j, '$.plan.waves[1].final_look') = 0
	AND json_extract(j, '$.plan.p_reach_all_at_most') > 0.9
	FROM (SELECT readfile('plan-j.json') AS j)")" = 1 ] || fail "rollout plan -j numbers: $(cat plan-j.json)"
rate=$(sqlite3 :memory: "SELECT json_extract(value, '$.per_host_hour') > 0 FROM json_each(readfile('plan-j.json'), '$.plan.rates')")
[ "$rate" = 1 ] || fail "rollout plan -j rates: $(cat plan-j.json)"
[ "$(db "SELECT count(*) FROM rollouts WHERE name = 'short'")" = 0 ] || fail "a plan stored a rollout"
echo "ok: a plan whose first wave cannot have the information says so: $(grep '^warning: wave 1' plan.err)"
# a wave that adds no host would bake the same canaries again: refused at create
expect 409 "wave 2 (50%) adds no host after wave 1 (6 of 12)" "a wave adding no host is refused" \
	ops POST /v1/rollouts "${JS[@]}" --data \
	'{"name":"same","policy":"good","version":1,"selector":{"all":true},
	"waves":[{"count":6},{"percent":50},{"percent":100}],"holdback_percent":0}'
[ "$(db "SELECT count(*) FROM rollouts WHERE name = 'same'")" = 0 ] || fail "the refused rollout was stored"

# /metrics: each rollout's progress and the inputs of its last verdict
api ops GET /metrics | sed '$d' >metrics.txt
promtool check metrics <metrics.txt || fail "promtool: $(grep rollout metrics.txt)"
has() {
	grep -qx -- "$1" metrics.txt || fail "/metrics has no '$1': $(grep kmemd_rollout metrics.txt)"
}
has 'kmemd_rollout_info{rollout="good",policy="good@1",state="done"} 1'
has 'kmemd_rollout_info{rollout="bad",policy="bad@1",state="rolled-back"} 1'
has 'kmemd_rollout_wave{rollout="good"} 3'
has "kmemd_rollout_hosts{rollout=\"good\",phase=\"running\"} $N"
has 'kmemd_rollout_hosts{rollout="bad",phase="reached"} 3'
has 'kmemd_rollout_hosts{rollout="bad",phase="running"} 0'
has 'kmemd_rollout_verdicts{rollout="good",verdict="pass"} 3'
has 'kmemd_rollout_verdicts{rollout="good",verdict="inconclusive"} 1'
has 'kmemd_rollout_verdicts{rollout="bad",verdict="fail"} 1'
has 'kmemd_rollout_gate_lockups{rollout="bad",side="baseline"} 0'
lockups=$(sed -n 's/^kmemd_rollout_gate_lockups{rollout="bad",side="canary"} //p' metrics.txt)
[ "${lockups:-0}" -ge 4 ] || fail "/metrics: the bad rollout's canary lockups: '$lockups'"
# the sequential test decided, before any final look: no p-value, and its likelihood ratio
! grep -q '^kmemd_rollout_gate_lockup_p{rollout="bad"}' metrics.txt || fail "/metrics: a lockup p for bad"
lr=$(sed -n 's/^kmemd_rollout_sequential_lr{rollout="bad"} //p' metrics.txt)
awk -v lr="${lr:-0}" 'BEGIN { exit !(lr >= 200) }' || fail "/metrics: bad's sequential LR: '$lr'"
# no final look at bake end: no information to show; the last wave of good compared nothing
! grep -q '^kmemd_rollout_expected_canary_lockups{rollout="\(bad\|good\)"}' metrics.txt ||
	fail "/metrics: expected canary lockups without a final look: $(grep expected_canary metrics.txt)"
echo "ok: /metrics has each rollout's progress and gate inputs ($lockups canary lockups)"
# events: a counter since kmemd started (every kind, from zero) and the
# store's rows, a gauge, since retention deletes them
soft=$(sed -n 's/^kmemd_kernel_events_total{kind="soft-lockup"} //p' metrics.txt)
[ "${soft:-0}" -ge 4 ] || fail "/metrics: soft lockups counted: '$soft'"
grep -q '^kmemd_kernel_events_total{kind="quarantine"} [0-9]*$' metrics.txt ||
	fail "/metrics: a kind without events is not a zero counter"
grep -q '^# TYPE kmemd_kernel_events_stored gauge$' metrics.txt &&
	grep -q '^kmemd_kernel_events_stored{kind="soft-lockup"} [1-9]' metrics.txt ||
	fail "/metrics: no stored-events gauge: $(grep events_stored metrics.txt)"
echo "ok: /metrics counts $soft soft lockups since start, and the stored events as a gauge"
# the webhook had every verdict and the canaries' trips, each as it came
hooks() { # JQ-like: python over hooks.jsonl's objects
	python3 -c "import json, sys
h = [json.loads(l) for l in open('hooks.jsonl')]
$1"
}
[ "$(hooks 'print(sorted({(x["rollout"], x["verdict"]) for x in h if x["kind"] == "verdict" and x["rollout"] in ("good", "bad", "tripping")}))')" = \
	"[('bad', 'fail'), ('good', 'inconclusive'), ('good', 'pass'), ('tripping', 'fail')]" ] ||
	fail "the webhook's verdicts: $(grep -c verdict hooks.jsonl) of them: $(head -c 2000 hooks.jsonl)"
[ "$(hooks 'print(sum(1 for x in h if x["kind"] == "verdict" and x["rollout"] == "good"))')" = 4 ] ||
	fail "the webhook had $(grep -c '"rollout":"good"' hooks.jsonl) verdicts of good, not 4"
grep -q "'mitigation': 'usercopy-fastpath'" <<<"$(hooks 'print(next(x for x in h if x["kind"] == "trip"))')" ||
	fail "the webhook had no trip: $(grep trip hooks.jsonl | sed -n 1,3p)"
sent=$(grep -c . hooks.jsonl)
grep -q '^kmemd_webhook_posts_total{outcome="sent"} [1-9]' metrics.txt &&
	grep -q '^kmemd_webhook_posts_total{outcome="failed"} 0$' metrics.txt ||
	fail "/metrics' webhook counts: $(grep webhook metrics.txt)"
echo "ok: the webhook had every verdict and the trips ($sent posts)"
# every metric the Grafana dashboard queries is one kmemd serves
families=$(sed -n 's/^# TYPE \([a-z_]*\) .*/\1/p' metrics.txt)
for m in $(grep -o '\(kmemd\|process\)_[a-z_]*' "$SRC/deploy/grafana/kmemctl.json" | sort -u); do
	grep -qx "$m\|${m%_bucket}\|${m%_count}\|${m%_sum}" <<<"$families" ||
		fail "deploy/grafana/kmemctl.json queries $m, which /metrics does not have"
done
echo "ok: the Grafana dashboard queries only metrics kmemd serves"

# on_fail = pause: the tripping policy again, its failed first wave held
# for the operator (its canaries keep the policy) until it is aborted
sign_policy tripping2 '{"mitigations":{"rstat-yield":{"mode":"on"},"usercopy-fastpath":{"mode":"on"}}}'
expect 201 '"state":"pending"' "rollout tripping2 (on_fail pause) is created" ops POST /v1/rollouts \
	"${JS[@]}" --data "{\"name\":\"tripping2\",\"policy\":\"tripping2\",\"version\":1,
	\"selector\":{\"all\":true},\"on_fail\":\"pause\",
	\"waves\":[{\"percent\":25},{\"percent\":100}],\"bake_s\":6,$GATES}"
act tripping2 start
wait_for 60 in_state tripping2 paused 1 || fail "tripping2 did not pause: $(state tripping2), $(verdicts tripping2)"
canaries() { [ "$(db "SELECT count(*) FROM hosts WHERE policy_name = 'tripping2'")" = 3 ]; }
wait_for 20 canaries || fail "the paused wave's canaries do not run tripping2"
sleep 3 # six engine ticks: none may move it
in_state tripping2 paused 1 || fail "tripping2 left its pause: $(state tripping2)"
[ "$(verdicts tripping2)" = "1 fail health," ] || fail "tripping2's verdicts: $(verdicts tripping2)"
canaries || fail "the paused wave's canaries were moved"
grep -q "paused (on_fail = pause)" <<<"$(db "SELECT reason FROM rollouts WHERE name = 'tripping2'")" ||
	fail "tripping2's reason: $(db "SELECT reason FROM rollouts WHERE name = 'tripping2'")"
act tripping2 abort
wait_for 30 running good || fail "the aborted rollout's hosts are not back on good"
echo "ok: on_fail = pause holds a failed wave for the operator, one verdict, until abort"

# a manual gate before the last wave: wave 1 passes, and nothing more moves
# until promote (the trips above are over: the module shows the mitigation off)
for p in "${pids[@]}"; do
	[[ " ${agent[*]} $receiver " == *" $p "* ]] && continue
	kill "$p" 2>/dev/null || true
	wait "$p" 2>/dev/null || true
done
pids=("${agent[@]}" "$receiver")
for h in "${hosts[@]}"; do
	echo off >root-$h/sys/kernel/kmemctl/mitigations/usercopy-fastpath/state
done
untripped() {
	[ "$(db "SELECT count(*) FROM states WHERE state = 'tripped'")" = 0 ]
}
wait_for 20 untripped || fail "hosts still report a trip"
expect 201 '"state":"pending"' "rollout gated is created" ops POST /v1/rollouts "${JS[@]}" --data \
	"{\"name\":\"gated\",\"policy\":\"base\",\"version\":1,\"selector\":{\"all\":true},
	\"waves\":[{\"percent\":25},{\"percent\":100,\"manual\":true}],\"bake_s\":2,$GATES}"
act gated start
wait_for 60 in_state gated paused 1 || fail "gated did not stop at its gate: $(state gated), $(verdicts gated)"
grep -q "wave 2 waits for kmemctl rollout promote" <<<"$(db "SELECT reason FROM rollouts WHERE name = 'gated'")" ||
	fail "gated's reason: $(db "SELECT reason FROM rollouts WHERE name = 'gated'")"
sleep 3 # six engine ticks: none may move it
in_state gated paused 1 || fail "gated moved past its gate by itself: $(state gated)"
[ "$(db "SELECT count(*) FROM hosts WHERE policy_name = 'base'")" = 3 ] ||
	fail "hosts past the gate run base: $(db "SELECT count(*) FROM hosts WHERE policy_name = 'base'")"
act gated promote
wait_for 60 in_state gated done 2 || fail "gated did not finish after promote: $(state gated), $(verdicts gated)"
wait_for 30 running base || fail "not every host runs base after the promote"
echo "ok: a manual gate waits for kmemctl rollout promote"

for p in "${pids[@]}"; do
	kill "$p" 2>/dev/null
	wait "$p" 2>/dev/null || true
done
pids=()
kill $kmemd_pid
wait $kmemd_pid || fail "kmemd exited with $? on SIGTERM"
kmemd_pid=
echo PASS
