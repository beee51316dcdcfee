#!/bin/sh
# Boot 1 of tests/vm/confirm.sh, on a new ext4 disk: the standalone agent, its
# state on the disk, turns usercopy-fastpath on from policy "confirm"
# version 1 with a 10-minute guard window; with the mitigation on and its
# boot confirmation record pending, the guest panics inside the window.
# Needs tests/vm/run --crash --disk FILE --userland BUILD --files DIR
# (DIR/keys: the policy key; DIR/v1.bundle).
. /tests/lib.sh

command -v kmem-agent >/dev/null || skip "no kmem-agent in this guest (tests/vm/run --userland)"
[ -r /host/v1.bundle ] || skip "no /host/v1.bundle (tests/vm/run --files)"
MIT=usercopy-fastpath
M=/sys/kernel/kmemctl/mitigations/$MIT
W=/tmp/confirm
mkdir -p $W
cd $W
disk_up $W/disk
[ ! -e $W/disk/state ] || die "the disk is not new: it has a state directory"

start_agent_alone $W/disk/state /host/keys "guard_window = 10m" "file = /host/v1.bundle"
await_agent_module
state=$(cat $M/state)
[ "$state" != unsupported ] || agent_fail "$MIT is unsupported here: $(cat $M/reason)"
await 60 grep -q "policy confirm version 1 from file accepted" agent.log ||
	agent_fail "the policy file was not accepted"
await 120 grep -qx on $M/state || agent_fail "$MIT is $(cat $M/state)"
await 30 status_has "^$MIT *on *on *policy" || agent_fail "status: $(cat status.txt)"
[ ! -e disk/state/intent ] || agent_fail "a change is still under way: $(cat disk/state/intent)"
boot=$(cat /proc/sys/kernel/random/boot_id)
grep -q "^$MIT pending $boot [0-9]* confirm 1\$" disk/state/confirm ||
	agent_fail "no pending record of this boot: $(cat disk/state/confirm)"
assert_eq "$(sed -n 's/^enables //p' $M/stats)" 1 "$MIT enables"
log "$MIT on, its record pending: $(cat disk/state/confirm)"
crash_now
