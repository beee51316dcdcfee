#!/bin/bash
# Golden tests of kmemctl's output: text and JSON, and its errors, against
# a real kmemd and real agents on fixture trees. Each case runs one
# kmemctl command; what it printed (stdout, then stderr prefixed "! ") and
# its exit status, with the run's variable parts replaced (port, work
# directory, times, measured hours and p-values), must equal
# tests/cli/golden/CASE. UPDATE_GOLDEN=1 writes them instead.
#
#   tests/cli/run.sh BUILD_DIR SOURCE_DIR
set -euo pipefail

BUILD=${1:?usage: run.sh BUILD_DIR SOURCE_DIR}
SRC=${2:?usage: run.sh BUILD_DIR SOURCE_DIR}
KMEMCTL=$BUILD/cli/kmemctl
KMEMD=$BUILD/daemon/kmemd
AGENT=$BUILD/agent/kmem-agent
GOLDEN=$SRC/tests/cli/golden

work=$(mktemp -d "$BUILD/cli.XXXXXX")
chmod 755 "$work"
# shellcheck source=tests/integration/lib.sh
. "$SRC/tests/integration/lib.sh"
in_work

pki_fleet
pki_hosts h1 h2 h3 h4
# a certificate from another CA, and a host's certificate on admin routes
mkdir other
$KMEMCTL pki init other >/dev/null
$KMEMCTL pki issue other admin stranger >/dev/null
# an observer, and an operator to revoke
$KMEMCTL pki issue pki observer viewer >/dev/null
$KMEMCTL pki issue pki operator leaver >/dev/null
kmemd_conf >kmemd.conf
cat >>kmemd.conf <<CONF
[rollout]
tick = 200ms
CONF
kmemd_start
for h in h1 h2 h3 h4; do
	cp -r "$SRC/tests/fixtures/host-6.1" root-$h
	sed -i 's/ kmemctl.disable=1//' root-$h/proc/cmdline
	agent_conf $h $port web >agent-$h.conf
	$AGENT -d -r "$work/root-$h" -c agent-$h.conf >agent-$h.log 2>&1 &
	pids+=($!)
done
mkdir -p home/kmemctl
cat >home/kmemctl/config <<CONF
# what an operator keeps in ~/.config/kmemctl/config
[kmemd]
server = 127.0.0.1:$port
ca = $work/pki/ca.crt
cert = $work/pki/ops.crt
key = $work/pki/ops.key
CONF
export XDG_CONFIG_HOME=$work/home NO_COLOR=1
AS_VIEWER=(--cert "$work/pki/viewer.crt" --key "$work/pki/viewer.key")
reported() {
	[ "$(sqlite3 kmemd.sqlite "SELECT count(*) FROM hosts WHERE last_seq > 0")" = 4 ]
}
wait_for 30 reported || fail "the agents did not report"

failed=0
# run CASE ARGS...: kmemctl ARGS against the golden file CASE
run() {
	local name=$1 rc=0
	shift
	"$KMEMCTL" "$@" >out.txt 2>err.txt || rc=$?
	{
		echo "\$ kmemctl $*"
		cat out.txt
		sed 's/^/! /' err.txt
		echo "[exit $rc]"
	} | normalize >"$name.got"
	if [ -n "${UPDATE_GOLDEN:-}" ]; then
		cp "$name.got" "$GOLDEN/$name"
	elif ! diff -u "$GOLDEN/$name" "$name.got"; then
		echo "FAIL: $name differs from tests/cli/golden/$name" >&2
		failed=1
	else
		echo "ok: $name"
	fi
}

# What changes from run to run: the port, the work directory, times, and
# the numbers measured from reporting hosts.
normalize() {
	sed -e "s|$work|WORK|g" -e "s/127\.0\.0\.1:$port/127.0.0.1:PORT/g" \
		-e 's/[0-9]\+[smhd] ago */AGO  /g' -e 's/ *$//' -e 's/^WHEN  */WHEN  /' \
		-e 's/[0-9.e+-]\+ host-hours/N host-hours/g' \
		-e 's/"\([a-z_]*_ms\)":[0-9]\+/"\1":0/g' \
		-e 's/"\(last_seq\|seq\|hours\|p\|u\|effect\|lockup_p\|min_exposure_h\)":[0-9.e+-]\+/"\1":N/g' \
		-e 's/\(host-hours\|p =\|P(slower) =\|report\) [0-9.e+-]\+/\1 N/g' \
		-e 's/acked [0-9]\+/acked N/' -e 's/^report    [0-9]\+$/report    N/' \
		-e 's/\(lockups: \)[0-9]\+ in/\1N in/' -e 's/\b[0-9a-f]\{48\}\b/SECRET/g' \
		-e 's/\b[0-9a-f]\{16\}\b/KEYID/g' \
		-e 's/\(ended the connection in TLS\): .*/\1: REASON/' \
		-e 's/expected [0-9.e+-]\+ canary/expected N canary/g' \
		-e 's/\b[0-9a-f]\{64\}\b/FINGERPRINT/g' -e 's/in [0-9]\+ \(days\|hours\)/in N \1/g' \
		-e 's/in use: [0-9]\+ hosts run it/in use: N hosts run it/' \
		-e 's/[0-9.e+-]\+ needed to detect/N needed to detect/g'
}

# usage and errors
run usage-none
run usage-object frob
run usage-verb rollout frob
run usage-args rollout status
run usage-option --colour always host list
run help-rollout rollout help
KMEMCTL_AGENT_SOCKET=$work/no-agent.sock run agent-missing status
run kmemd-unreachable --server 127.0.0.1:1 host list
run kmemd-no-config --config "$work/nothing" host list
printf '[kmemd]\nserver = 127.0.0.1:%s\nca = relative/ca.crt\nsurprise = 1\n' "$port" >bad.conf
run kmemd-bad-config --config "$work/bad.conf" host list
run cert-foreign-ca --cert "$work/other/stranger.crt" --key "$work/other/stranger.key" host list
run cert-host-role --cert "$work/pki/h1.crt" --key "$work/pki/h1.key" host list
printf '{"mitigations":{"rstat-yield":{"mode":"on","params":{"every_cpus":0}}}}' >range.json
run policy-validate-range policy validate range.json
printf '{"mitigations":{"rstat-yield":{"mod":"on"}}}' >typo.json
run policy-validate-key policy validate typo.json
printf '{"mitigations":{"rstat-yield":{"mode":"on"}}}' >good.json
run policy-validate-ok policy validate good.json

# the fleet
run host-list host list
run host-list-filter host list kernel='6.1.*' role=web policy=none
run host-list-json -j host list role=db
run host-show host show h2
run host-show-unknown host show h9
# enrollment secrets: shown once, on stdout alone, for `kmemctl enroll -S`
run secret-create secret create --expires 1h
run secret-create-json -j secret create
run secret-create-bad secret create --expires soon
run secret-create-limited secret create --expires 1h --uses 2 --hosts 'web-*'
run secret-create-uses-bad secret create --uses 0
run secret-create-hosts-bad secret create --hosts 'web/*'
run secret-revoke secret revoke 1
run secret-revoke-unknown secret revoke 99
run secret-revoke-bad secret revoke one
# h1's vmap-purge probe records 10 purges, 6 of them near 1 ms
P=root-h1/sys/kernel/kmemctl/probes/vmap-purge
printf '131072 7\n1048576 6\n4194304 1\n' >$P/hist.new && mv $P/hist.new $P/hist
echo 14 >$P/count
echo 9000000 >$P/sum_ns
purges() {
	grep -q '"count":10,' <<<"$("$KMEMCTL" -j telemetry query vmap-purge host=h1)"
}
wait_for 20 purges || fail "h1's purges did not reach kmemd"
run telemetry-query telemetry query vmap-purge host=h1
run telemetry-query-label telemetry query vmap-purge host=h2 label=role:web
run telemetry-query-bad telemetry query vmap-purge since=yesterday

# policies signed here and uploaded, then a rollout watched to its end
printf '{"mitigations":{"rstat-yield":{"mode":"off"}}}' >base.json
printf '{"mitigations":{"rstat-yield":{"mode":"on"},"usercopy-fastpath":{"mode":"on"}}}' >good2.json
$KMEMCTL policy sign -k signer.key -n base -v 1 -s ops -o base.bundle base.json >/dev/null
$KMEMCTL policy sign -k signer.key -n good -v 1 -s ops -o good.bundle good.json >/dev/null
$KMEMCTL policy sign -k signer.key -n good -v 2 -s ops -o good2.bundle good2.json >/dev/null
run policy-create policy create good.bundle
run policy-create-again policy create good.bundle
$KMEMCTL policy create base.bundle >/dev/null
$KMEMCTL policy create good2.bundle >/dev/null
run policy-list policy list
run policy-show policy show good
run policy-show-json -j policy show good 1
run policy-diff policy diff good 1 2
run policy-show-unknown policy show good 7
curl -sS --cacert pki/ca.crt --cert pki/ops.crt --key pki/ops.key \
	-H 'Content-Type: application/json' "$URL/v1/assignments" \
	--data '{"policy":"base","version":1,"selector":{"all":true}}' >/dev/null
on_base() {
	[ "$(sqlite3 kmemd.sqlite "SELECT count(*) FROM hosts WHERE policy_name = 'base'")" = 4 ]
}
wait_for 30 on_base || fail "the hosts do not run base"
cat >rollout.json <<'JSON'
{"name": "rstat-on", "policy": "good", "version": 1, "selector": {"labels": {"role": "web"}},
 "waves": [{"count": 2}, {"percent": 100}], "bake_s": 2,
 "holdback_percent": 0, "gates": {"min_hosts": 2, "min_exposure_h": 0.0002, "underpowered": "pass"}}
JSON
run rollout-plan rollout plan rollout.json
run rollout-plan-json -j rollout plan rollout.json
run rollout-start rollout start rollout.json
run rollout-start-again rollout start rollout.json
run rollout-status-watch rollout status rstat-on --watch
run rollout-list rollout list
run rollout-list-json -j rollout list
run rollout-promote-done rollout promote rstat-on
run rollout-status-unknown rollout status nope
run rollout-series-unknown rollout series nope
run rollout-series-bad rollout series rstat-on --wave zero
run host-events-unknown host events h9
run rollout-list-color --color always rollout list
# the hosts run good@1 now: another rollout of it could not roll them back
sed -e 's/"rstat-on"/"again"/' rollout.json >again.json
run rollout-start-refused rollout start again.json
# the operator's moves on a rollout that bakes for an hour
sed -e 's/"rstat-on"/"slow"/' -e 's/"bake_s": 2/"bake_s": 3600/' \
	-e 's/"policy": "good"/"policy": "base"/' rollout.json >slow.json
run rollout-start-slow rollout start slow.json
run rollout-pause rollout pause slow
run rollout-pause-again rollout pause slow
run rollout-resume rollout resume slow
run rollout-abort rollout abort slow
run rollout-archive-unknown rollout archive nope
run rollout-archive rollout archive rstat-on
run rollout-list-archived rollout list
run rollout-list-all rollout list --all
run policy-retire-busy policy retire good 1
run policy-retire policy retire good 2
run policy-retire-bad policy retire good two
run assignment-retired assignment create good@2 all
run policy-list-retired policy list
run policy-list-all policy list --all
aborted_ms=$(date +%s%3N)
# A host told base just before the abort still shows good in its row until
# its next report says base, so rows are read once each host has reported
# three times since: the first one's answer is good, the second may have
# been made before that answer came, the third runs what it said.
since_abort() { # N: every host made N reports since the abort
	[ "$(sqlite3 kmemd.sqlite "SELECT count(*) FROM (SELECT host_id FROM counters
		WHERE unix_ms > $aborted_ms GROUP BY host_id HAVING count(*) >= $1)")" = 4 ]
}
on_good() {
	[ "$(sqlite3 kmemd.sqlite "SELECT count(*) FROM hosts WHERE policy_name = 'good'")" = 4 ]
}
wait_for 30 since_abort 3 || fail "the hosts did not report after the abort"
on_good || fail "the aborted rollout's hosts did not go back to good"
run rollout-status-aborted rollout status slow --watch

# this host, through h1's agent
export KMEMCTL_AGENT_SOCKET=$work/ctl-h1.sock
run local-status status
run local-facts facts
run local-mitigation-list mitigation list
run local-mitigation-show mitigation show rstat-yield
run local-mitigation-show-unknown mitigation show rstat-yeld
run local-mitigation-set-bad mitigation set usercopy-fastpath maybe
run local-mitigation-set mitigation set usercopy-fastpath on
run local-probe-list probe list
run local-probe-show-json -j probe show vmap-purge
run local-probe-disable probe disable vmap-purge
run local-probe-enable-bad probe enable vmap-purge threshold=5
run local-disable disable
run local-disable-again disable
run local-set-disabled mitigation set rstat-yield on
run local-enable enable

# the fleet stop, once every host reports it holding
run fleet-stop fleet stop --reason 'lockups after the update'
all_stopped() {
	[ "$(sqlite3 kmemd.sqlite "SELECT count(*) FROM hosts WHERE off = 4")" = 4 ]
}
wait_for 30 all_stopped || fail "the hosts do not report the fleet stop"
run fleet-status fleet status
run fleet-status-json -j fleet status
run fleet-stop-again fleet stop
run fleet-stop-usage fleet stop now
run observer-stop "${AS_VIEWER[@]}" fleet stop
run host-show-stopped host show h2
run fleet-resume fleet resume

# last: h4 is revoked, and its reports are refused from now on
run host-revoke host revoke h4
run host-revoke-bad host revoke 'h 4'
run host-reenroll host reenroll h3
run host-reenroll-bad host reenroll

# who may do what, and who did
AS_LEAVER=(--cert "$work/pki/leaver.crt" --key "$work/pki/leaver.key")
run whoami whoami
run whoami-observer "${AS_VIEWER[@]}" whoami
run whoami-json -j "${AS_VIEWER[@]}" whoami
run observer-refused "${AS_VIEWER[@]}" host revoke h3
run pki-issue-bad pki issue pki viewer someone
run audit-list audit list --action host.revoke
run audit-list-json -j audit list --host h3 --limit 5
run audit-list-bad audit list --since soon
run audit-list-option audit list --acter ops
"$KMEMCTL" "${AS_LEAVER[@]}" whoami >/dev/null
run operator-revoke operator revoke leaver
run operator-revoke-unknown operator revoke nobody
run operator-revoke-usage operator revoke
run operator-revoked "${AS_LEAVER[@]}" whoami
run operator-list operator list

# lists and deletions
run secret-list secret list
run assignment-create assignment create good@1 role=db zone=a
run assignment-create-host assignment create good@1 host=h3
run assignment-create-bad assignment create good role=db
run assignment-create-unknown assignment create good@9 all
run assignment-list assignment list
run assignment-show assignment show 2
run assignment-show-json -j assignment show 2
run assignment-delete assignment delete 2
run assignment-delete-again assignment delete 2
run assignment-delete-bad assignment delete two
run host-forget-busy host forget h4
sqlite3 kmemd.sqlite "UPDATE hosts SET last_seen_ms = last_seen_ms - 7200000 WHERE host_id = 'h4'"
run host-forget host forget h4
run host-forget-unknown host forget h9

[ $failed = 0 ] || fail "kmemctl's output differs from the golden files"
echo PASS
