#!/bin/sh
# Boot 3 of tests/vm/confirm.sh, on the disk boot 2 left with
# usercopy-fastpath confirmed under policy "confirm" version 2: the agent,
# with no policy file, runs its last known good policy (version 2) and
# turns usercopy-fastpath on, new again in this boot, not quarantined.
# Needs tests/vm/run --disk FILE --userland BUILD --files DIR (DIR/keys).
. /tests/lib.sh

command -v kmem-agent >/dev/null || skip "no kmem-agent in this guest (tests/vm/run --userland)"
[ -d /host/keys ] || skip "no /host/keys (tests/vm/run --files)"
MIT=usercopy-fastpath
M=/sys/kernel/kmemctl/mitigations/$MIT
W=/tmp/confirm
mkdir -p $W
cd $W
disk_up $W/disk
boot=$(cat /proc/sys/kernel/random/boot_id)
record=$(grep "^$MIT " disk/state/confirm) || die "boot 2 left no record of $MIT on the disk"
# shellcheck disable=SC2086 # its fields
set -- $record
[ "$2" = confirmed ] && [ "$3" != "$boot" ] || die "boot 2's record is not confirmed: $record"
log "boot 2 left: $record"

start_agent_alone $W/disk/state /host/keys "guard_window = 10m"
await 60 grep -q "policy confirm version 2 from disk accepted" agent.log ||
	agent_fail "the last known good policy was not run"
await 120 grep -qx on $M/state || agent_fail "$MIT is $(cat $M/state)"
await 30 status_has "^$MIT *on *on *policy" || agent_fail "status: $(cat status.txt)"
grep -q "^policy    confirm version 2" status.txt || agent_fail "status: $(cat status.txt)"
! grep -q "^quarantine " status.txt || agent_fail "a quarantine is reported: $(cat status.txt)"
! grep -q " quarantined under " agent.log || agent_fail "the agent quarantined something"
grep -q "^$MIT pending $boot [0-9]* confirm 2\$" disk/state/confirm ||
	agent_fail "no pending record of this boot: $(cat disk/state/confirm)"
assert_eq "$(sed -n 's/^enables //p' $M/stats)" 1 "$MIT enables"
log "re-enabled from the last known good policy: $(grep "^$MIT " status.txt)"

stop_agent
echo off >$M/mode
wait_for 60 sh -c "[ ! -d /sys/kernel/livepatch/kmemctl ]"
unload_mod kmemctl
disk_down $W/disk
check_dmesg_clean
