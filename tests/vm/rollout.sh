#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# A rollout across two QEMU guests running Debian's 6.1 kernel: kmemd runs
# here, on loopback; each guest's kmem-agent reaches it at 10.0.2.2 through
# QEMU's user network (tests/vm/run --net) with its own host certificate.
# Both run policy "base" (rstat-yield off); the rollout moves them to
# "rstat" (rstat-yield on, a livepatch on 6.1) one guest per wave, each
# wave judged by the engine from the guests' real reports. vm-2's module
# runs without its shipped records, as on a build the project never
# recorded: kmemctl build list shows its build waiting for rstat-yield's
# record, which kmemctl build record --build-id and build publish make from
# kmemd's copy of its build file and hand to it, while the rollout runs.
# Passes when the rollout is done with a pass verdict per wave, kmemd has
# both hosts reporting rstat-yield on from the policy, and both guests' own
# checks (tests/vm/fleet/rollout-host.sh) pass with a clean kernel log.
#
#   tests/vm/rollout.sh BUILD_DIR [OUT_DIR]
set -euo pipefail

BUILD=$(realpath "${1:?usage: rollout.sh BUILD_DIR [OUT_DIR]}")
SRC=$(cd "$(dirname "$0")/../.." && pwd)
KMEMCTL=$BUILD/cli/kmemctl
KMEMD=$BUILD/daemon/kmemd
HOLD_S=30

work=${2:-$BUILD/vm/rollout}
rm -rf "$work"
mkdir -p "$work"
work=$(cd "$work" && pwd)
# the guests' console logs stay for whoever reads a failure
KEEP=1
# shellcheck source=tests/integration/lib.sh
. "$SRC/tests/integration/lib.sh"
in_work

# the guests reach kmemd at 10.0.2.2; host/ becomes their /host
pki_fleet 10.0.2.2
pki_hosts vm-1 vm-2
mkdir -p host/pki
cp -r keys host/
cp pki/ca.crt pki/vm-?.crt pki/vm-?.key host/pki/
kmemd_conf >kmemd.conf
cat >>kmemd.conf <<CONF
[rollout]
tick = 1s
CONF
kmemd_start
echo "kmemd on 127.0.0.1:$port"

vms=()
for h in vm-1 vm-2; do
	"$SRC/tests/vm/run" --kernel debian-6.1 --net --userland "$BUILD" --files host \
		--env VM_HOST=$h --env KMEMD_PORT=$port --env HOLD_S=$HOLD_S \
		--env NO_RECORD="$([ $h = vm-2 ] && echo 1 || echo 0)" --timeout 900 \
		--out "$work/$h" "$SRC/tests/vm/fleet/rollout-host.sh" >$h.log 2>&1 &
	vms+=($!)
	pids+=($!)
done
FAIL_LOG=kmemd.log
db() {
	sqlite3 kmemd.sqlite "$1"
}
vm_fail() {
	local h
	for h in vm-1 vm-2; do
		echo "--- $h" >&2
		tail -30 $h.log >&2
	done
	fail "$@"
}

PB=(-H 'Content-Type: application/x-protobuf')
JS=(-H 'Content-Type: application/json')
printf '{"mitigations":{"rstat-yield":{"mode":"off"}}}' >base.json
printf '{"mitigations":{"rstat-yield":{"mode":"on"}}}' >rstat.json
for p in base rstat; do
	$KMEMCTL policy sign -k signer.key -n $p -v 1 -s ops -o $p.bundle $p.json
	expect 201 '"signed":true' "policy $p is uploaded" ops POST /v1/policies "${PB[@]}" \
		--data-binary @$p.bundle
done
expect 201 '"id":' "base is assigned to role=web" ops POST /v1/assignments "${JS[@]}" \
	--data '{"policy":"base","version":1,"selector":{"labels":{"role":"web"}}}'

both_on() { # policy
	[ "$(db "SELECT count(*) FROM hosts WHERE policy_name = '$1'")" = 2 ]
}
# the guests build kmemctl.ko, boot and load it first
wait_for 900 both_on base || vm_fail "the guests do not both run base: $(db 'SELECT host_id, policy_name FROM hosts')"
echo "ok: both guests enrolled in the fleet and run base"

expect 201 '"state":"pending"' "the rollout is created" ops POST /v1/rollouts "${JS[@]}" --data \
	'{"name":"rstat-on","policy":"rstat","version":1,"selector":{"labels":{"role":"web"}},
	"waves":[{"percent":50},{"percent":100}],"bake_s":10,"holdback_percent":0,
	"gates":{"min_hosts":1,"min_exposure_h":0.001,"underpowered":"pass"}}'
expect 200 '"state":"running"' "the rollout starts" ops POST /v1/rollouts/action "${JS[@]}" \
	--data '{"name":"rstat-on","action":"start"}'
state() {
	db "SELECT state || ' ' || (wave + 1) || ': ' || reason FROM rollouts WHERE name = 'rstat-on'"
}
done_() {
	[ "$(db "SELECT state FROM rollouts WHERE name = 'rstat-on'")" = 'done' ]
}
# vm-2 waits for its build's record: made from kmemd's copy, and published
OPS=(--server "127.0.0.1:$port" --ca pki/ca.crt --cert pki/ops.crt --key pki/ops.key)
waiting() {
	"$KMEMCTL" "${OPS[@]}" build list >builds.txt 2>&1 && grep -qE " rstat-yield 1(,|$| )" builds.txt
}
wait_for 120 waiting || vm_fail "vm-2's build does not wait for rstat-yield: $(cat builds.txt)"
echo "ok: kmemctl build list: $(sed -n 2p builds.txt)"
id=$("$KMEMCTL" -j "${OPS[@]}" build list | sed -n 's/.*"build_id": *"\([0-9a-f]*\)".*/\1/p')
[ -n "$id" ] || fail "no build id in kmemctl -j build list"
"$KMEMCTL" "${OPS[@]}" build record --build-id "$id" --source /usr/src/linux-source-6.1.tar.xz \
	--kmod "$SRC/kmod" -o vm-2.rec || fail "kmemctl build record --build-id $id"
$KMEMCTL build sign -k signer.key -s ops -o vm-2.bundle vm-2.rec
"$KMEMCTL" "${OPS[@]}" build publish vm-2.bundle || fail "kmemctl build publish"
echo "ok: vm-2's build record made from kmemd's copy and published"

wait_for 600 done_ || vm_fail "the rollout did not finish: $(state)"
verdicts=$(db "SELECT (wave + 1) || ' ' || verdict FROM verdicts WHERE rollout = 'rstat-on'
	AND verdict != 'inconclusive' ORDER BY id" | tr '\n' ',')
[ "$verdicts" = "1 pass,2 pass," ] || fail "verdicts: $verdicts"
# a wave with vm-2 among its canaries was held until its record arrived, for nothing else
held=$(db "SELECT count(*) || ' ' || count(NULLIF(gate, 'build-record')) FROM verdicts
	WHERE rollout = 'rstat-on' AND verdict = 'inconclusive'")
[ "${held#* }" = 0 ] || fail "waves held for another reason than vm-2's record: $(db "SELECT * FROM verdicts")"
echo "ok: $held verdicts held a wave while vm-2 waited for its record"
echo "ok: the rollout is done: $(state)"

# what the guests report, as kmemd has it
enacted() {
	[ "$(db "SELECT count(*) FROM states s JOIN hosts h USING (host_id)
		WHERE s.id = 'rstat-yield' AND s.state = 'on' AND s.source = 'policy'
		AND h.policy_name = 'rstat' AND h.policy_version = 1")" = 2 ]
}
wait_for 60 enacted || fail "kmemd's view: $(db "SELECT host_id, id, state, source FROM states WHERE id = 'rstat-yield'")"
echo "ok: kmemd has rstat-yield on from policy rstat on both guests"

rc=0
for i in 0 1; do
	wait ${vms[$i]} || rc=1
done
[ $rc = 0 ] || vm_fail "a guest failed"
grep -h "ok:\|PASS" vm-1.log vm-2.log
kill $kmemd_pid
wait $kmemd_pid || fail "kmemd exited with $? on SIGTERM"
kmemd_pid=
echo PASS
