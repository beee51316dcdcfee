#!/bin/sh
# One of the two hosts of tests/vm/rollout.sh: its agent reports to kmemd
# on the machine running QEMU (10.0.2.2), which rolls policy "rstat"
# (rstat-yield on) out over both guests in two waves. Passes when the
# rollout reached this host: rstat-yield on from that policy, its livepatch
# enabled, and HOLD_S more reports acknowledged while the rollout finishes.
# With NO_RECORD=1 the module runs without its shipped records, as on a
# build the project never recorded: rstat-yield waits, "not verified",
# until the record the operator publishes to kmemd arrives, is kept and
# admitted, and then goes on with the rollout's policy, no restart.
# Needs tests/vm/run --net --userland BUILD --files DIR (DIR/pki: ca.crt,
# $VM_HOST.crt and .key; DIR/keys: the signer's public key) and --env
# VM_HOST=, KMEMD_PORT=, HOLD_S= (and NO_RECORD=).
. /tests/lib.sh

command -v kmem-agent >/dev/null || skip "no kmem-agent in this guest (tests/vm/run --userland)"
[ -r "/host/pki/$VM_HOST.crt" ] || skip "no /host/pki/$VM_HOST.crt (tests/vm/run --files)"
net_up
mod_loaded kmemctl && unload_mod kmemctl
# the agent takes the module loaded as it is
[ "${NO_RECORD:-0}" = 1 ] && load_mod kmemctl shipped_records=0

W=/tmp/fleet
M=/sys/kernel/kmemctl/mitigations
rm -rf $W
mkdir -p $W
chmod 755 $W
cd $W
start_agent "$VM_HOST" "10.0.2.2:$KMEMD_PORT" /host/pki /host/keys "" "[labels]
role = web"
acked() {
	grep -c "report [0-9]* acknowledged" agent.log || true
}

await 120 grep -q "report [0-9]* acknowledged" agent.log || agent_fail "kmemd never acknowledged a report"
log "reporting to kmemd at 10.0.2.2:$KMEMD_PORT"
await 120 grep -q "policy base version 1 from kmemd accepted" agent.log ||
	agent_fail "the assigned policy did not arrive"
if [ "${NO_RECORD:-0}" = 1 ]; then
	grep -q "not verified" $M/rstat-yield/reason || agent_fail "rstat-yield: $(cat $M/rstat-yield/reason)"
	log "rstat-yield waits for a record: $(cat $M/rstat-yield/reason)"
	await 600 grep -q "kmemd's build record for build .* kept" agent.log ||
		agent_fail "kmemd's record did not arrive"
	# the policy may have turned it on already: the module's log says it was admitted
	await 60 sh -c "dmesg | grep -q 'kmemctl: rstat-yield: off: verified: its code matches record'" ||
		agent_fail "the record did not admit rstat-yield: $(cat $M/rstat-yield/reason)"
	log "kmemd's record admitted: $(dmesg | sed -n 's/.*kmemctl: rstat-yield: off: //p')"
fi
# the rollout reaches this host in wave 1 or 2
await 600 grep -q "policy rstat version 1 from kmemd accepted" agent.log ||
	agent_fail "the rollout's policy did not arrive"
await 120 grep -qx on $M/rstat-yield/state || agent_fail "rstat-yield is $(cat $M/rstat-yield/state)"
[ -d /sys/kernel/livepatch/kmemctl ] || agent_fail "rstat-yield is on without the livepatch"
await 30 status_has "^rstat-yield *on *on *policy" || agent_fail "status: $(cat status.txt)"
grep -q "^policy    rstat version 1" status.txt || agent_fail "status: $(cat status.txt)"
log "rollout arrived: $(grep "^rstat-yield " status.txt)"
# stay in the fleet while kmemd judges the rest of the rollout
n=$(acked)
await $((HOLD_S * 4)) sh -c "[ \$(grep -c 'report [0-9]* acknowledged' agent.log) -ge $((n + HOLD_S)) ]" ||
	agent_fail "fewer than $HOLD_S reports acknowledged after the rollout arrived"
grep -qx on $M/rstat-yield/state || agent_fail "rstat-yield went $(cat $M/rstat-yield/state)"
log "$HOLD_S more reports acknowledged, rstat-yield still on"

stop_agent
echo off >$M/rstat-yield/mode
wait_for 60 sh -c "[ ! -d /sys/kernel/livepatch/kmemctl ]"
unload_mod kmemctl
check_dmesg_clean
