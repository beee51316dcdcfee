#!/bin/sh
# kasan-flush-batch on a KASAN_VMALLOC kernel, judged by the vmap-purge
# probe (a kprobe on flush_tlb_kernel_range, not the fix): the kernel's own
# test_vmalloc passes and fails alike with the mitigation on and off, and
# a purge that flushed once per freed area when off flushes, when on, once
# for the freed range and once for the shadow: on 6.1 at most twice, and
# from 6.9, where each vmap node (one per possible CPU, up to 128) releases
# its own areas, at most once more per node. test_vmalloc also runs
# with kasan-quarantine on (small batches, a smaller quarantine), with the
# same results.
. /tests/lib.sh

M=/sys/kernel/kmemctl/mitigations/kasan-flush-batch
P=/sys/kernel/kmemctl/probes/vmap-purge

load_mod kmemctl
case "$(cat $M/state)" in
off) ;;
native | unsupported) skip "kasan-flush-batch: $(cat $M/reason)" ;;
*) die "kasan-flush-batch state at load: $(cat $M/state)" ;;
esac

# vmalloc_results ARGS: test_vmalloc's "<test> <passed> <failed>" lines,
# sorted. Its init always fails (-EAGAIN), so the module never stays.
vmalloc_results() {
	dmesg_mark
	modprobe test_vmalloc "$@" 2>/dev/null && die "test_vmalloc stayed loaded"
	dmesg_since_mark |
		sed -n 's/.*Summary: \([a-z0-9_]*\) passed: \([0-9]*\) failed: \([0-9]*\).*/\1 \2 \3/p' |
		sort
}

# purge_run: test_vmalloc's own load, then the purges it caused.
purge_run() {
	write_ok $P/reset 1
	vmalloc_results test_loop_count=500 run_test_mask=7 >/tmp/results.$1
	[ -s /tmp/results.$1 ] || die "test_vmalloc reported no results ($1)"
	echo "$(cat $P/count) $(cat $P/flushes_max) $(cat $P/max_ns)"
}

set -- $(purge_run off)
log "off: $1 purges, at most $2 flushes in one, longest $(($3 / 1000)) us"
assert_ge "$1" 1 "purges with kasan-flush-batch off"
assert_ge "$2" 3 "flushes in one purge with kasan-flush-batch off"
off_max=$3

write_ok $M/mode on
wait_for 120 grep -qx on $M/state
set -- $(purge_run on)
log "on: $1 purges, at most $2 flushes in one, longest $(($3 / 1000)) us"
assert_ge "$1" 1 "purges with kasan-flush-batch on"
bound=2
if grep -q ' purge_vmap_node$' /proc/kallsyms; then
	bound=$(($(cut -d- -f2 /sys/devices/system/cpu/possible) + 2))
fi
[ "$2" -le $bound ] || die "a purge flushed $2 times with kasan-flush-batch on, more than $bound"
log "longest purge on/off: $3/$off_max"
if ! cmp -s /tmp/results.off /tmp/results.on; then
	diff /tmp/results.off /tmp/results.on || true
	die "test_vmalloc results differ with kasan-flush-batch on"
fi

# all_results: every test_vmalloc case, a few loops each: what differs with
# the mitigation is whether a case passes, not how often it ran. align_shift_alloc_test
# asks for more vmalloc space than a small VM has and warns with a trace
# whatever the mitigation; anything else in the log is a failure.
all_results() {
	expect_splat_begin
	vmalloc_results test_loop_count=10
	expect_splat_end
	if dmesg_since_mark | grep -E "KASAN|lockup|stall|BUG|Oops" >&2; then
		die "kernel log not clean during test_vmalloc"
	fi
}

all_results >/tmp/all.on
log "longest timed call: $(sed -n 's/^call_max_us //p' $M/stats) us of running time"
write_ok $M/mode off
wait_for 120 sh -c "[ ! -d /sys/kernel/livepatch/kmemctl ]"
all_results >/tmp/all.off
log "all cases, on: $(tr '\n' ';' </tmp/all.on)"
[ "$(wc -l </tmp/all.on)" -ge 8 ] || die "test_vmalloc ran $(wc -l </tmp/all.on) cases"
if ! cmp -s /tmp/all.off /tmp/all.on; then
	diff /tmp/all.off /tmp/all.on || true
	die "test_vmalloc results differ with kasan-flush-batch on"
fi

Q=/sys/kernel/kmemctl/mitigations/kasan-quarantine
if [ "$(cat $Q/state)" = off ]; then
	write_ok $Q/params "batch_bytes=16384 max_fraction=128"
	write_ok $Q/mode on
	all_results >/tmp/all.quarantine
	log "longest timed call: $(sed -n 's/^call_max_us //p' $Q/stats) us of running time"
	write_ok $Q/mode off
	if ! cmp -s /tmp/all.off /tmp/all.quarantine; then
		diff /tmp/all.off /tmp/all.quarantine || true
		die "test_vmalloc results differ with kasan-quarantine on"
	fi
fi
check_dmesg_clean
unload_mod kmemctl
