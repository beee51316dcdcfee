#!/bin/sh
# kmem-agent on a real kernel: it loads kmemctl.ko through libkmod, applies
# a signed policy from a local file, reports the states (kmemctl status
# over the control socket), refuses a tampered bundle without changing
# anything, and its guard reverts a mitigation when a soft lockup comes
# within the guard window. Booted with kmemctl.disable=1 it loads and
# applies nothing and still reports.
. /tests/lib.sh

command -v kmem-agent >/dev/null || skip "no kmem-agent in this guest (tests/vm/run --userland)"
mod_loaded kmemctl && unload_mod kmemctl

W=/tmp/agent
rm -rf $W
mkdir -p $W/keys
chmod 755 $W
cd $W
M=/sys/kernel/kmemctl/mitigations
disabled=0
grep -q 'kmemctl.disable=1' /proc/cmdline && disabled=1

# the first mitigation this kernel supports (state off when loaded)
mit=
for e in $EXPECT_MITIGATIONS; do
	[ "${e#*=}" = off ] && [ "${e%%=*}" != tlb-gen ] && mit=${e%%=*} && break
done
log "kernel ${KMEMCTL_KERNEL}: testing with ${mit:-no supported mitigation}"

kmemctl pki init pki >/dev/null
kmemctl pki issue pki host vm-1 >/dev/null
kmemctl policy keygen op >/dev/null
cp op.pem keys/
printf '{"mitigations":{"%s":{"mode":"on"}},"probes":{"vmap-purge":{"enabled":true}}}' \
	"${mit:-rstat-yield}" >doc.json
kmemctl policy sign -k op.key -n vm -v 1 -o policy.bin doc.json

start_agent vm-1 127.0.0.1:1 $W/pki $W/keys "guard_window = 5m" "file = $W/policy.bin"

if [ $disabled = 1 ]; then
	await 60 grep -q "policy vm version 1 from file not applied: kmemctl.disable=1" agent.log ||
		agent_fail "no notice that kmemctl.disable=1 held the policy back"
	mod_loaded kmemctl && agent_fail "kmemctl.disable=1, yet the agent loaded kmemctl.ko"
	await 30 status_has "^report " || agent_fail "no report: $(cat status.txt)"
	grep -q "(off: kmemctl.disable=1)" status.txt || agent_fail "status does not say disabled"
	kmemctl mitigation set rstat-yield on >set.txt 2>&1 && agent_fail "a local set went through"
	grep -q "kmemctl.disable=1" set.txt || agent_fail "local set: $(cat set.txt)"
	log "kmemctl.disable=1: nothing loaded, nothing applied, reports made"
	exit 0
fi

await_agent_module
await 30 grep -q "kmemctl.ko loaded (/lib/kmemctl/kmemctl.ko)" agent.log ||
	agent_fail "no load notice"
await 60 grep -q "policy vm version 1 from file accepted" agent.log ||
	agent_fail "the policy file was not accepted"
assert_eq "$(cat /sys/kernel/kmemctl/probes/vmap-purge/enabled)" 1 "vmap-purge enabled"
if [ -z "$mit" ]; then
	grep -q "rstat-yield skipped" agent.log || agent_fail "a native mitigation was not skipped"
	await 30 status_has "^rstat-yield *native" || agent_fail "status: $(cat status.txt)"
else
	await 60 grep -qx on $M/$mit/state || agent_fail "$mit is $(cat $M/$mit/state)"
	await 30 status_has "^$mit *on *on *policy" || agent_fail "status: $(cat status.txt)"
fi
grep -q "^policy    vm version 1" status.txt || agent_fail "status: no policy: $(cat status.txt)"
grep -q "^host      vm-1, kernel $(uname -r)" status.txt || agent_fail "status: no host line"
log "policy applied and reported: $(grep "^${mit:-rstat-yield} " status.txt)"
await 30 sh -c 'ls state/spool/*.report >/dev/null 2>&1' || agent_fail "no report was spooled"

# a tampered bundle, read again on SIGHUP: refused, nothing changes
before=$(cat $M/*/mode | tr '\n' ' ')
# the offset of the first "on" in the document: busybox grep has no -b
off=$(od -An -v -tx1 -w1 policy.bin | awk '{ b[NR] = $1 } END {
	for (i = 1; i + 3 <= NR; i++)
		if (b[i] == "22" && b[i + 1] == "6f" && b[i + 2] == "6e" && b[i + 3] == "22") {
			print i - 1
			exit
		}
}')
[ -n "$off" ] || agent_fail "no \"on\" in the bundle"
printf f | dd of=policy.bin bs=1 seek=$((off + 2)) conv=notrunc 2>/dev/null
kill -HUP $agent
await 30 grep -q "policy from file refused" agent.log || agent_fail "the tampered bundle went through"
assert_eq "$(cat $M/*/mode | tr '\n' ' ')" "$before" "modes after a tampered bundle"
await 30 status_has "policy-refused not a validly signed policy" || agent_fail "refusal not reported"
log "tampered bundle refused, modes unchanged: $before"

[ -n "$mit" ] || exit 0
[ -e /proc/sys/kernel/watchdog_thresh ] || {
	log "no soft-lockup watchdog: guard not tested"
	exit 0
}

# a soft lockup inside the guard window: the guard turns the mitigation off
# (the module's own breaker would first; 45-breaker.sh shows that one)
echo 0 >/sys/module/kmemctl/parameters/breaker
load_mod kmt_lockup
thresh=$(cat /proc/sys/kernel/watchdog_thresh)
echo 1 >/proc/sys/kernel/watchdog_thresh
expect_splat_begin
echo 8 >/sys/kernel/kmt_lockup/spin
rc=0
await 60 grep -q "guard: $mit reverted: a soft lockup" agent.log || rc=1
expect_splat_end
echo "$thresh" >/proc/sys/kernel/watchdog_thresh
unload_mod kmt_lockup
[ $rc = 0 ] || agent_fail "the guard did not revert $mit"
await 60 grep -qx off $M/$mit/mode || agent_fail "$mit mode is $(cat $M/$mit/mode)"
await 30 status_has "^$mit .* guard" || agent_fail "status: $(cat status.txt)"
grep -q "^soft-lockup watchdog: BUG: soft lockup" status.txt &&
	grep -q "^guard-revert soft lockup" status.txt ||
	agent_fail "the lockup is not in a report: $(cat status.txt)"
log "guard reverted $mit after a soft lockup: $(grep "^$mit " status.txt)"

stop_agent
wait_for 60 sh -c "[ ! -d /sys/kernel/livepatch/kmemctl ]"
unload_mod kmemctl
check_dmesg_clean
