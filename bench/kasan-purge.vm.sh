#!/bin/sh
# Guest half of bench/kasan-purge: test_vmalloc with kasan-flush-batch off
# and on, alternating, ROUNDS times, or, where the kernel has upstream's
# fix (native), as the kernel runs. One line per run:
# PURGE <cpus> <off|on|native> <purges> <median_ns> <max_ns> <flushes_max> <run_cs>
. /tests/lib.sh

M=/sys/kernel/kmemctl/mitigations/kasan-flush-batch
P=/sys/kernel/kmemctl/probes/vmap-purge
ROUNDS=${BENCH_ROUNDS:-3}
LOOPS=${BENCH_LOOPS:-2000}
MASK=${BENCH_MASK:-7}

load_mod kmemctl
case "$(cat $M/state)" in
off) modes="off on" ;;
native) modes=native ;;
*) skip "kasan-flush-batch: $(cat $M/reason)" ;;
esac
write_ok $P/threshold_ns 1
cpus=$(grep -c ^processor /proc/cpuinfo)

# last_seq: the newest record in /dev/kmemctl's ring, 0 if none.
last_seq() {
	evread -N -n 100000 | sed -n 's/^seq=\([0-9]*\) .*/\1/p' | tail -n 1 | grep . || echo 0
}

for r in $(seq "$ROUNDS"); do
	for mode in $modes; do
		if [ $mode = on ]; then
			write_ok $M/mode on
			wait_for 120 grep -qx on $M/state
		elif [ $mode = off ]; then
			write_ok $M/mode off
			wait_for 120 sh -c "[ ! -d /sys/kernel/livepatch/kmemctl ]"
		fi
		seq0=$(last_seq)
		write_ok $P/reset 1
		t0=$(_now_cs)
		modprobe test_vmalloc test_loop_count="$LOOPS" run_test_mask="$MASK" 2>/dev/null || true
		t1=$(_now_cs)
		# threshold events arrive through an irq_work
		sleep 1
		med=$(evread -N -n 100000 | awk -v s="$seq0" '
			{ for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] } }
			f["seq"] > s && f["source"] == "vmap-purge" && f["type"] == "threshold" { v[++n] = f["value"] }
			END {
				for (i = 1; i <= n; i++)
					for (j = i + 1; j <= n; j++)
						if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
				print n ? v[int((n + 1) / 2)] : 0
			}')
		echo "PURGE $cpus $mode $(cat $P/count) $med $(cat $P/max_ns) $(cat $P/flushes_max) $((t1 - t0))"
	done
done
if [ "$modes" != native ]; then
	write_ok $M/mode off
	wait_for 120 sh -c "[ ! -d /sys/kernel/livepatch/kmemctl ]"
fi
unload_mod kmemctl
