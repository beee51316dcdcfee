#!/bin/sh
# Guest half of bench/usercopy: copy_to_user() throughput from a vmalloc()ed
# buffer (kmt_usercopy) at several copy sizes, with kmt_vmalloc's churn
# kthread doing vmalloc()/vfree() and purges meanwhile. In a boot with
# hardened_usercopy=off there is one variant, "ceiling"; otherwise, per
# round and in the same boot: "check" (the kernel's own check), "fastpath"
# (usercopy-fastpath on) and "patched" (the livepatch in place for
# rstat-yield, usercopy-fastpath off: what the replacement costs by itself).
# One line per measurement: USERCOPY <variant> <size> <copies> <elapsed_ns>
. /tests/lib.sh

K=/sys/kernel/kmemctl/mitigations
U=/sys/module/kmt_usercopy/parameters
LP=/sys/kernel/livepatch/kmemctl
ROUNDS=${BENCH_ROUNDS:-3}
SIZES=${BENCH_SIZES:-64 256 1024 4096 16384 65536}
COPIES=1000

load_mod kmemctl probes=0
load_mod kmt_usercopy pages=32 copies=$COPIES
load_mod kmt_vmalloc

# About the same bytes per size, and never fewer than 10 reads.
reads_for() {
	r=$((25600 / $1))
	[ $r -ge 10 ] && echo $r || echo 10
}

# The churn kthread never leaves its CPU, which holds up livepatch
# transitions: it runs only while measuring.
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

settled() {
	[ "$(cat $K/$1/state)" = "$2" ] && { [ "$2" = off ] || [ "$(cat $LP/transition)" = 0 ]; }
}

mode() {
	write_ok $K/$1/mode "$2"
	wait_for 120 settled "$1" "$2"
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
		mode usercopy-fastpath on
		measure fastpath
		mode rstat-yield on
		mode usercopy-fastpath off
		measure patched
		mode rstat-yield off
		wait_for 120 sh -c "[ ! -d $LP ]"
	done
fi

unload_mod kmt_vmalloc
unload_mod kmt_usercopy
unload_mod kmemctl
