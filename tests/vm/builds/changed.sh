#!/bin/sh
# For tests/vm/builds.sh: this build differs from the one of /host/first in
# cgroup_rstat_flush_locked() alone (kernels/kasan-6.1-changed.patch). A
# record made from /host/first admits every mitigation here but
# rstat-yield, which stays unsupported naming the function and this build;
# the admitted ones enact as before.
. /tests/lib.sh

K=/sys/kernel/kmemctl
M=$K/mitigations
[ -f /host/first ] || skip "no build file of another build in /host (tests/vm/builds.sh)"

# The records shipped with the module (scripts/kmod-records: made by
# kmemctl build record from the unchanged KASAN build, every copy checked
# against Debian's source) refuse this build's rstat-yield alone.
load_mod kmemctl
[ -n "$(cat $K/records)" ] || die "the module ships no record"
reason=$(cat $M/rstat-yield/reason)
echo "$reason" | grep -q '^unsupported: build .* not verified: cgroup_rstat_flush_locked differs from every verified copy' ||
	die "rstat-yield with the shipped records: $reason"
log "rstat-yield with the shipped records: $reason"
for id in kasan-flush-batch usercopy-fastpath kasan-quarantine; do
	reason=$(cat $M/$id/reason)
	echo "$reason" | grep -q '^off: verified: its code matches record .* linux-source-6\.1 ' ||
		die "$id with the shipped records: $reason"
done
unload_mod kmemctl

# The same with a record made here from the unchanged build's file alone.
load_mod kmemctl shipped_records=0
grep -v '^text ' /host/first >first
cat $K/build >this
first_id=$(sed -n 's/^build_id //p' first)
this_id=$(sed -n 's/^build_id //p' this)
[ "$first_id" != "$this_id" ] || die "the same build id $this_id: not another build"
# Relinked everywhere, changed in one function: only its fingerprint moved.
diff=$(diff first this | grep '^[-+]func ' || true)
[ "$(echo "$diff" | cut -d' ' -f3 | sort -u)" = cgroup_rstat_flush_locked ] ||
	die "func lines that differ: $diff"
set -- $(grep '^func rstat-yield cgroup_rstat_flush_locked ' this)
size=$4 fp=$5

write_ok $K/records "$(build_record "unchecked $(cat /host/kernel)" <first)"
want="unsupported: build $(echo "$this_id" | cut -c1-12) ($(uname -r)) not verified: cgroup_rstat_flush_locked differs from every verified copy (size $size, fingerprint $fp)"
assert_eq "$(cat $M/rstat-yield/state)" unsupported "rstat-yield state"
assert_eq "$(cat $M/rstat-yield/reason)" "$want" "rstat-yield reason"
write_fails $M/rstat-yield/mode on "Operation not supported"
log "rstat-yield: $want"

verified="off: verified: its code matches record $(echo "$first_id" | cut -c1-12) ($(uname -r), unchecked $(cat /host/kernel))"
for id in kasan-flush-batch usercopy-fastpath kasan-quarantine; do
	assert_eq "$(cat $M/$id/reason)" "$verified" "$id reason"
	log "$id: $verified"
done
write_ok $M/kasan-quarantine/mode on
assert_eq "$(cat $M/kasan-quarantine/state)" on "kasan-quarantine state"
write_ok $M/kasan-quarantine/mode off
log "kasan-quarantine: on and off"
unload_mod kmemctl
check_dmesg_clean
