#!/bin/sh
# kasan-quarantine on a generic KASAN kernel. kmt_kasan churns kmalloc/kfree
# through the quarantine; the kasan-reduce probe (a kretprobe on
# kasan_quarantine_reduce, re-registered in front of the redirect) times
# each reduction, and the stats file reads the kernel's own quarantine
# counters and the copy's. A small batch_bytes bounds what one reduction
# frees (bytes, compared with the kernel's batch: how long a reduction
# takes depends on this machine and belongs to bench/kasan-quarantine), a
# larger max_fraction holds less, a use-after-free is still reported, and
# off puts the kernel's limits back.
. /tests/lib.sh

M=/sys/kernel/kmemctl/mitigations/kasan-quarantine
R=/sys/kernel/kmemctl/probes/kasan-reduce
K=/sys/kernel/kmt_kasan
CHURN=$((4 << 20))

load_mod kmemctl
# One online CPU: under single-threaded TCG a reduction that spans the
# other vCPU's turn lasts that turn too (a few ms), hiding what is measured.
C=/sys/devices/system/cpu/cpu1/online
if [ -w $C ]; then
	write_ok $C 0
	trap 'echo 1 >$C' EXIT
fi
case "$(cat $M/state)" in
off) ;;
native | unsupported) skip "kasan-quarantine: $(cat $M/reason)" ;;
*) die "kasan-quarantine state at load: $(cat $M/state)" ;;
esac
stat() {
	sed -n "s/^$1 //p" $M/stats
}

# Fill the quarantine to its limit first, with pages (a few thousand
# frees, not a million); the kernel's reduction then computes the limit
# for the RAM and CPUs of now. The quarantine is the kernel's: it keeps
# what the module freed after the module goes.
load_mod kmt_kasan size=4096
write_ok $K/churn $(($(stat max_bytes) + (4 << 20)))
unload_mod kmt_kasan
# small objects: a 1 MiB batch is thousands of frees
load_mod kmt_kasan size=32

# reduce_run: churn, then "<reductions> <longest ns> <bytes held>".
reduce_run() {
	write_ok $R/reset 1
	write_ok $K/churn $CHURN
	echo "$(cat $R/count) $(cat $R/max_ns) $(stat held_bytes)"
}

off_limit=$(stat max_bytes)
off_batch=$(stat batch_bytes)
set -- $(reduce_run)
oldest=$(stat oldest_batch_bytes)
log "off: $1 reductions, longest $(($2 / 1000)) us, $(($3 >> 10)) KiB held of $((off_limit >> 10)) KiB, batch $((off_batch >> 10)) KiB, oldest $((oldest >> 10)) KiB"
assert_ge "$3" $((off_limit / 2)) "bytes held with kasan-quarantine off"
# the kernel's next reduction frees the whole oldest batch
assert_ge "$oldest" $((1 << 20)) "bytes in the oldest batch, kasan-quarantine off"
off_held=$3

write_ok $M/params "batch_bytes=16384"
write_ok $M/mode on
assert_eq "$(cat $M/state)" on "state after mode on"
set -- $(reduce_run)
log "on, batch_bytes=16384: $1 reductions, longest $(($2 / 1000)) us, $(($3 >> 10)) KiB held"
assert_ge "$1" 1 "reductions with kasan-quarantine on"
assert_eq "$(stat batch_bytes)" 16384 "the kernel's batch size"
log "on: the copy made $(stat reductions) reductions, the largest freed $(stat reduce_max_bytes) bytes"
assert_ge "$(stat reductions)" 64 "reductions of the copy for $((CHURN >> 20)) MiB churned"
assert_ge 16384 "$(stat reduce_max_bytes)" "the most one reduction freed, batch_bytes=16384"
assert_ge "$3" $((off_held / 2)) "bytes held with the default fraction"

write_ok $M/params "max_fraction=128"
set -- $(reduce_run)
limit=$(stat max_bytes)
log "on, max_fraction=128: $1 reductions, $(($3 >> 10)) KiB held of $((limit >> 10)) KiB"
[ $((limit * 3)) -le "$off_limit" ] || die "limit $limit with max_fraction=128, $off_limit at 32"
[ "$3" -le $((limit + (1 << 20))) ] || die "$3 bytes held over a limit of $limit"
[ $(($3 * 2)) -le "$off_held" ] || die "$3 bytes held with max_fraction=128, $off_held at 32"

# A use-after-free after 1 MiB of churn, well inside the smaller
# quarantine, is still caught.
dmesg_mark
expect_splat_begin
write_ok $K/uaf $((1 << 20))
expect_splat_end
# 6.4 names it slab-use-after-free
dmesg_since_mark | grep -Eq "BUG: KASAN: (slab-)?use-after-free in uaf_store" ||
	die "no KASAN use-after-free report with kasan-quarantine on"

log "longest timed call: $(sed -n 's/^call_max_us //p' $M/stats) us of running time"
write_ok $M/mode off
assert_eq "$(stat max_bytes)" "$off_limit" "the kernel's limit after mode off"
assert_eq "$(stat batch_bytes)" "$off_batch" "the kernel's batch size after mode off"
set -- $(reduce_run)
log "off again: $1 reductions, $(($3 >> 10)) KiB held"
assert_ge "$3" $((limit + (2 << 20))) "bytes held after mode off"
check_dmesg_clean
unload_mod kmt_kasan
unload_mod kmemctl
