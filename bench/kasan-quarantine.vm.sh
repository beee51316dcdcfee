#!/bin/sh
# Guest half of bench/kasan-quarantine: kmalloc/kfree churn with
# kasan-quarantine off, then on at each batch size, ROUNDS times. One line
# per run: QUAR <off|batch_bytes> <reduce_max_ns> <reductions of 256 us or
# more> <alloc_mean_ns> <alloc_max_ns> <bytes held>
. /tests/lib.sh

M=/sys/kernel/kmemctl/mitigations/kasan-quarantine
R=/sys/kernel/kmemctl/probes/kasan-reduce
K=/sys/kernel/kmt_kasan
ROUNDS=${BENCH_ROUNDS:-3}
BATCHES=${BENCH_BATCHES:-16384}
CHURN=$((${BENCH_CHURN:-16} << 20))
SIZE=${BENCH_SIZE:-32}

load_mod kmemctl
# one online CPU, as in tests/vm/tests/84-kasan-quarantine.sh: a reduction
# spanning the other vCPU's turn under single-threaded TCG lasts that turn
C=/sys/devices/system/cpu/cpu1/online
if [ -w $C ]; then
	write_ok $C 0
	trap 'echo 1 >$C' EXIT
fi
[ "$(cat $M/state)" = off ] || skip "kasan-quarantine: $(cat $M/reason)"
load_mod kmt_kasan size="$SIZE"
# up to the quarantine's limit, so every run reduces
write_ok $K/churn $(($(sed -n 's/^max_bytes //p' $M/stats) + (4 << 20)))

run() {
	label=$1
	write_ok $R/reset 1
	write_ok $K/reset 1
	write_ok $K/churn $CHURN
	slow=$(awk '$1 > 262144 { n += $2 } END { print n + 0 }' $R/hist)
	set -- $(sed 's/^[a-z_]* //' $K/stats)
	echo "QUAR $label $(cat $R/max_ns) $slow $(($2 / $1)) $3 $(sed -n 's/^held_bytes //p' $M/stats)"
}

for r in $(seq "$ROUNDS"); do
	write_ok $M/mode off
	run off
	write_ok $M/mode on
	for b in $BATCHES; do
		write_ok $M/params "batch_bytes=$b"
		run "$b"
	done
done
write_ok $M/mode off
unload_mod kmt_kasan
unload_mod kmemctl
