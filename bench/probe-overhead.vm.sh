#!/bin/sh
# Guest half of bench/probe-overhead: for each probe, time its workload with
# every probe off and with only that probe on, alternating, ROUNDS times,
# in the same boot. Prints one line per round:
#   BENCH <probe> <ops> <off_ns> <on_ns> <events>
. /tests/lib.sh

P=/sys/kernel/kmemctl/probes
ROUNDS=${BENCH_ROUNDS:-5}
G=/sys/fs/cgroup/bench

load_mod kmemctl probes=0
load_mod kmt_usercopy
load_mod kmt_vmalloc
mkdir -p $G
echo 1000 >/sys/module/kmt_usercopy/parameters/copies

# elapsed CMD...: the elapsed_ns= that a timing program prints.
elapsed() {
	"$@" | sed -n 's/.*elapsed_ns=\([0-9]*\).*/\1/p'
}

# workload PROBE: run it once; print "<operations> <elapsed_ns>".
workload() {
	case $1 in
	rstat-flush) echo 2000 "$(elapsed ioloop -n 2000 -b 4096 $G/cpu.stat)" ;;
	usercopy-vmalloc) echo 200000 "$(elapsed ioloop -n 200 -b 4096 /dev/kmt_usercopy)" ;;
	vmap-purge) echo 200 "$(elapsed ioloop -n 200 -w 20 /sys/kernel/kmt_vmalloc/run)" ;;
	tlb-shootdown) echo 5000 "$(elapsed tlbstorm -i 5000 -t 2)" ;;
	esac
}

for p in rstat-flush usercopy-vmalloc vmap-purge kasan-reduce tlb-shootdown; do
	if [ "$(cat $P/$p/reason)" != ok ]; then
		echo "BENCH $p unsupported"
		continue
	fi
	workload $p >/dev/null
	for r in $(seq "$ROUNDS"); do
		set -- $(workload $p)
		off=$2
		write_ok $P/$p/enabled 1
		c0=$(cat $P/$p/count)
		set -- $(workload $p)
		events=$(($(cat $P/$p/count) - c0))
		write_ok $P/$p/enabled 0
		echo "BENCH $p $1 $off $2 $events"
	done
done

rmdir $G
unload_mod kmt_vmalloc
unload_mod kmt_usercopy
unload_mod kmemctl
