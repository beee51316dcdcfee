#!/bin/sh
# Guest half of bench/usercopy: copy_to_user() throughput from a vmalloc()ed
# buffer (kmt_usercopy) at several copy sizes, with kmt_vmalloc's churn
# kthread doing vmalloc()/vfree() and purges meanwhile, and KEEP one-page
# areas held (the vmap stacks of a host's threads). In a boot with
# hardened_usercopy=off there is one variant, "ceiling"; otherwise, per
# round and in the same boot: "check" (the kernel's own check), "fastpath"
# (usercopy-fastpath on) and "untimed" (on, with kmemctl's breaker=0, so its
# calls are not timed: what the breaker costs the fast path).
# One line per measurement: USERCOPY <variant> <size> <copies> <elapsed_ns>
. /tests/lib.sh

K=/sys/kernel/kmemctl/mitigations
U=/sys/module/kmt_usercopy/parameters
ROUNDS=${BENCH_ROUNDS:-3}
SIZES=${BENCH_SIZES:-64 256 1024 4096 16384 65536}
KEEP=${BENCH_KEEP:-4096}
COPIES=1000

load_mod kmemctl probes=0
load_mod kmt_usercopy pages=32 copies=$COPIES
load_mod kmt_vmalloc keep=$KEEP churn_purge=${BENCH_PURGE:-1}

# About the same bytes per size, and never fewer than 10 reads.
reads_for() {
	r=$((25600 / $1))
	[ $r -ge 10 ] && echo $r || echo 10
}

churn() {
	echo "$1" >/sys/module/kmt_vmalloc/parameters/churn
}

measure() {
	churn 1
	for size in $SIZES; do
		echo "$size" >$U/size
		reads=$(reads_for "$size")
		ioloop -n 2 -b "$size" -c 1 /dev/kmt_usercopy >/dev/null
		ns=$(ioloop -n "$reads" -b "$size" -c 1 /dev/kmt_usercopy |
			sed -n 's/.*elapsed_ns=\([0-9]*\).*/\1/p')
		echo "USERCOPY $1 $size $((reads * COPIES)) $ns"
	done
	churn 0
}


if grep -q "hardened_usercopy=off" /proc/cmdline; then
	for r in $(seq "$ROUNDS"); do
		measure ceiling
	done
else
	[ "$(cat $K/usercopy-fastpath/state)" = off ] ||
		skip "usercopy-fastpath: $(cat $K/usercopy-fastpath/reason)"
	for r in $(seq "$ROUNDS"); do
		measure check
		write_ok $K/usercopy-fastpath/mode on
		measure fastpath
		echo 0 >/sys/module/kmemctl/parameters/breaker
		measure untimed
		echo 1 >/sys/module/kmemctl/parameters/breaker
		write_ok $K/usercopy-fastpath/mode off
	done
fi

unload_mod kmt_vmalloc keep=$KEEP churn_purge=${BENCH_PURGE:-1}
unload_mod kmt_usercopy
unload_mod kmemctl
