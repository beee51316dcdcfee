#!/bin/sh
# A missing symbol disables exactly the probes and mitigations that need
# it, each saying which symbol in sysfs and dmesg; the rest work as usual.
# hide_symbols makes the module treat symbols of this kernel as missing.
. /tests/lib.sh

K=/sys/kernel/kmemctl
P=$K/probes
M=$K/mitigations

load_mod kmemctl hide_symbols=find_vmap_area,cgroup_rstat_lock
load_mod kmt_vmalloc

assert_eq "$(cat $P/usercopy-vmalloc/reason)" "unsupported: symbol find_vmap_area not found" \
	"usercopy-vmalloc reason"
assert_eq "$(cat $P/usercopy-vmalloc/enabled)" 0 "usercopy-vmalloc enabled"
assert_eq "$(cat $P/rstat-flush/reason)" "unsupported: symbol cgroup_rstat_lock not found" \
	"rstat-flush reason"
assert_eq "$(cat $M/usercopy-fastpath/reason)" "unsupported: symbol find_vmap_area not found" \
	"usercopy-fastpath reason"
# The native gate watches the kernel's flush release cgroup_rstat_lock:
# hidden, the fix cannot be shown, and where kmemctl has an implementation
# its symbol gate names the lock.
case "$(cat $M/rstat-yield/reason)" in
"unsupported: symbol cgroup_rstat_lock not found" | \
	"unsupported: kmemctl "*" has no implementation for $(uname -r)") ;;
*) die "rstat-yield reason: $(cat $M/rstat-yield/reason)" ;;
esac
for line in "usercopy-vmalloc: symbol find_vmap_area not found" \
	"rstat-flush: symbol cgroup_rstat_lock not found" \
	"usercopy-fastpath: symbol find_vmap_area not found"; do
	dmesg_since_mark | grep -qxF "kmemctl: $line" || die "dmesg lacks '$line'"
done

for id in vmap-purge tlb-shootdown; do
	assert_eq "$(cat $P/$id/reason)" ok "$id reason"
	assert_eq "$(cat $P/$id/enabled)" 1 "$id enabled"
done
assert_eq "$(cat $M/tlb-gen/state)" native "tlb-gen state"
c0=$(cat $P/vmap-purge/count)
echo 10 >/sys/kernel/kmt_vmalloc/run
assert_ge "$(cat $P/vmap-purge/count)" $((c0 + 1)) "vmap-purge still counts"

unload_mod kmt_vmalloc
unload_mod kmemctl
check_dmesg_clean
