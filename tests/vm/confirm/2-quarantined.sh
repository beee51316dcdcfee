#!/bin/sh
# Boot 2 of tests/vm/confirm.sh, on the disk of boot 1, which panicked
# while usercopy-fastpath was new: under the same policy (version 1) the
# agent leaves it off and quarantined, says why in its log and in its
# report's events, and the module never had it on in this boot. Version 2
# of the policy, the same document, turns it on again; after the guard
# window (10 s here) its record is confirmed. The boot ends cleanly.
# Needs tests/vm/run --disk FILE --userland BUILD --files DIR (DIR/keys,
# DIR/v1.bundle, DIR/v2.bundle).
. /tests/lib.sh

command -v kmem-agent >/dev/null || skip "no kmem-agent in this guest (tests/vm/run --userland)"
[ -r /host/v2.bundle ] || skip "no /host/v2.bundle (tests/vm/run --files)"
MIT=usercopy-fastpath
M=/sys/kernel/kmemctl/mitigations/$MIT
W=/tmp/confirm
mkdir -p $W
cd $W
disk_up $W/disk
boot=$(cat /proc/sys/kernel/random/boot_id)
record=$(grep "^$MIT " disk/state/confirm) || die "boot 1 left no record of $MIT on the disk"
# shellcheck disable=SC2086 # its fields
set -- $record
[ "$2" = pending ] && [ "$3" != "$boot" ] || die "boot 1's record is not pending: $record"
log "boot 1 left: $record"

cp /host/v1.bundle policy.bundle
start_agent_alone $W/disk/state /host/keys "guard_window = 10s" "file = $W/policy.bundle"
await 60 grep -q "policy confirm version 1 from file accepted" agent.log ||
	agent_fail "the policy file was not accepted"
grep -q "$MIT quarantined under policy confirm/1: the host restarted while it was new" agent.log ||
	agent_fail "no quarantine of $MIT in the log"
await 30 status_has "^$MIT *off *off *quarantine" || agent_fail "status: $(cat status.txt)"
await 30 status_has "^quarantine the host restarted while it was new" ||
	agent_fail "no quarantine event reported: $(cat status.txt)"
assert_eq "$(cat $M/mode)" off "$MIT mode under version 1"
assert_eq "$(sed -n 's/^enables //p' $M/stats)" 0 "$MIT enables in this boot"
grep -q "^$MIT confirm 1\$" disk/state/quarantine || die "quarantine: $(cat disk/state/quarantine)"
! grep -q "^$MIT " disk/state/confirm 2>/dev/null || die "a record is left: $(cat disk/state/confirm)"
log "quarantined, off, never on in this boot: $(grep "^$MIT " status.txt)"

# a new version of the policy is not under the quarantine
cp /host/v2.bundle policy.bundle
kill -HUP "$agent"
await 60 grep -q "policy confirm version 2 from file accepted" agent.log ||
	agent_fail "version 2 was not accepted"
await 120 grep -qx on $M/state || agent_fail "$MIT is $(cat $M/state) under version 2"
await 120 grep -q "^$MIT confirmed $boot [0-9]* confirm 2\$" disk/state/confirm ||
	agent_fail "not confirmed: $(cat disk/state/confirm)"
grep -q "boot confirmation: $MIT confirmed" agent.log || agent_fail "no confirmation in the log"
await 30 status_has "^$MIT *on *on *policy" || agent_fail "status: $(cat status.txt)"
assert_eq "$(sed -n 's/^enables //p' $M/stats)" 1 "$MIT enables under version 2"
log "version 2: on and confirmed: $(cat disk/state/confirm)"

stop_agent
echo off >$M/mode
wait_for 60 sh -c "[ ! -d /sys/kernel/livepatch/kmemctl ]"
unload_mod kmemctl
disk_down $W/disk
check_dmesg_clean
