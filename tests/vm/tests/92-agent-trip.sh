#!/bin/sh
# The module's breaker while the agent is stopped (SIGSTOP), on a real
# kernel: a mitigation the agent turned on from a signed policy has a
# replacement call held past its trip_call_ms (kmt_usercopy stalls
# usercopy-fastpath's vmalloc lookup), and the module turns it off with no
# agent running. Once the agent runs again it reads the TRIP record, reports
# the trip with its cause, and quarantines the mitigation under the
# policy: it stays off, and the same policy version never turns it back on.
. /tests/lib.sh

command -v kmem-agent >/dev/null || skip "no kmem-agent in this guest (tests/vm/run --userland)"
grep -q 'kmemctl.disable=1' /proc/cmdline && skip "booted with kmemctl.disable=1"
mod_loaded kmemctl && unload_mod kmemctl
UC=usercopy-fastpath
M=/sys/kernel/kmemctl/mitigations/$UC
U=/sys/module/kmt_usercopy/parameters
W=/tmp/agent-trip
rm -rf $W
mkdir -p $W/keys
chmod 755 $W
cd $W

kmemctl policy keygen op >/dev/null
cp op.pem keys/
printf '{"mitigations":{"%s":{"mode":"on","params":{"trip_call_ms":50}}}}' $UC >doc.json
kmemctl policy sign -k op.key -n trip -v 1 -o policy.bin doc.json
start_agent_alone $W/state $W/keys "guard_window = 10m" "file = $W/policy.bin"
await_agent_module
case "$(cat $M/state)" in
unsupported | native)
	stop_agent
	skip "$UC: $(cat $M/reason)" ;;
esac
await 60 grep -qx on $M/mode || agent_fail "$UC is $(cat $M/state): $(cat $M/reason)"
await 30 status_has "^$UC  *on  *on  *policy" || agent_fail "status: $(cat status.txt)"

load_mod kmt_usercopy pages=2
# one 256-byte copy across the buffer's page boundary: its lookup is held
echo 256 >$U/size
echo 4000 >$U/offset
echo 1 >$U/copies
kill -STOP "$agent"
dmesg_mark
echo 500 >$U/stall_ms
ioloop -n 1 -b 256 /dev/kmt_usercopy >/dev/null
echo 0 >$U/stall_ms
wait_for 10 grep -qx tripped $M/state
assert_eq "$(cat $M/mode)" off "$UC mode, tripped with the agent stopped"
log "with the agent stopped: $(cat $M/reason)"
grep -q "$UC tripped" agent.log && agent_fail "the stopped agent handled the trip"

kill -CONT "$agent"
await 30 grep -q "kmemctl.ko tripped $UC: slow call" agent.log ||
	agent_fail "the agent did not see the trip of $UC"
await 30 grep -qx "$UC trip 1" $W/state/quarantine || agent_fail "$UC is not in the quarantine"
await 30 status_has "^$UC  *tripped  *off  *quarantine" || agent_fail "status: $(cat status.txt)"
grep -q "^trip .*$UC tripped: slow call" status.txt ||
	agent_fail "the trip and its cause are not in a report: $(cat status.txt)"
log "after the agent resumed: $(grep "^$UC " status.txt)"

# the same policy, read again, leaves it tripped and off
kill -HUP "$agent"
await 30 grep -q "policy trip version 1 from file" agent.log || agent_fail "no reload"
await 30 status_has "^report " || agent_fail "no report after the reload"
assert_eq "$(cat $M/state)" tripped "$UC state after the policy was read again"
assert_eq "$(sed -n 's/^enables //p' $M/stats)" 1 "$UC enables"
stop_agent
unload_mod kmt_usercopy
unload_mod kmemctl
check_dmesg_clean
