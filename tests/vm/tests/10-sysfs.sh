#!/bin/sh
# Every sysfs file reads; every mitigation and probe id is present with the
# state this kernel should give it, and dmesg says the same reason.
. /tests/lib.sh

K=/sys/kernel/kmemctl
MITIGATIONS="kasan-flush-batch tlb-gen rstat-yield usercopy-fastpath kasan-quarantine"
PROBES="rstat-flush usercopy-vmalloc vmap-purge kasan-reduce tlb-shootdown"

# hist text: "<power of two> <count>" lines with increasing bounds.
check_hist() {
	awk -v f="$1" '
		NF != 2 || $1 !~ /^[0-9]+$/ || $2 !~ /^[1-9][0-9]*$/ { print f ": bad line: " $0; bad = 1 }
		{ b = $1; while (b > 1 && b % 2 == 0) b /= 2; if (b != 1) { print f ": not a power of two: " $1; bad = 1 } }
		$1 + 0 <= last + 0 && NR > 1 { print f ": bounds not increasing"; bad = 1 }
		{ last = $1 }
		END { exit bad }' "$1" || die "'$1' is not a log2 histogram"
}

load_mod kmemctl

assert_eq "$(read_file $K/abi)" "$KMEMCTL_ABI" "abi"
assert_eq "$(read_file $K/version)" "$KMEMCTL_VERSION" "version"

n=0
for f in $(find $K -type f); do
	case "$(stat -c %a "$f")" in
	2?? | 0) continue ;;
	esac
	read_file "$f" >/dev/null
	n=$((n + 1))
done
log "$n readable files read"

for id in $MITIGATIONS; do
	d=$K/mitigations/$id
	[ -d "$d" ] || die "mitigation '$id' missing"
	state=$(read_file $d/state)
	reason=$(read_file $d/reason)
	case "$state" in
	unsupported | native | off | on | tripped | transition) ;;
	*) die "$id: bad state '$state'" ;;
	esac
	case "$reason" in
	"$state: "*) ;;
	*) die "$id: reason '$reason' does not start with its state '$state'" ;;
	esac
	assert_eq "$(read_file $d/mode)" off "$id: mode at load"
	for counter in enables disables trips resets; do
		grep -qx "$counter 0" $d/stats || die "$id: stats lack '$counter 0'"
	done
	[ -f $d/reset ] && [ "$(stat -c %a $d/reset)" = 200 ] || die "$id: no write-only reset file"
	dmesg_since_mark | grep -qxF "kmemctl: $id: $reason" || die "$id: dmesg lacks '$reason'"
	log "$id: $reason"
done

for id in $PROBES; do
	d=$K/probes/$id
	[ -d "$d" ] || die "probe '$id' missing"
	reason=$(read_file $d/reason)
	enabled=$(read_file $d/enabled)
	if [ "$reason" = ok ]; then
		assert_eq "$enabled" 1 "$id: enabled at load"
	else
		assert_eq "$enabled" 0 "$id: unsupported probe enabled"
	fi
	check_hist $d/hist
	log "$id: $reason"
done
check_hist $K/probes/rstat-flush/irqoff_hist
check_hist $K/probes/vmap-purge/flushes_hist

# What this kernel should say, from its tests/vm/kernels/*.conf: entries
# "id=state" or "id=state:prefix", prefix being how the reason goes on.
[ -n "${EXPECT_MITIGATIONS:-}" ] || die "the kernel conf sets no EXPECT_MITIGATIONS"
for pair in $EXPECT_MITIGATIONS; do
	id=${pair%%=*}
	want=${pair#*=}
	got=$(cat $K/mitigations/$id/reason)
	case "$got" in
	"${want%%:*}: ${want#*:}"* | "$want:"*) ;;
	*) die "$id: got '$got', expected '$want'" ;;
	esac
done
for pair in ${EXPECT_PROBES:-}; do
	id=${pair%%=*}
	want=${pair#*=}
	got=$(cat $K/probes/$id/reason)
	case "$got" in
	"$want"*) ;;
	*) die "probe $id: got '$got', expected '$want'" ;;
	esac
done

# Every mitigation with a replacement has trip_call_ms, at its default.
for pair in kasan-flush-batch=5000 rstat-yield=5000 usercopy-fastpath=1000 kasan-quarantine=2000; do
	grep -qx "trip_call_ms=${pair#*=}" $K/mitigations/${pair%%=*}/params ||
		die "${pair%%=*}: params lack trip_call_ms=${pair#*=}: $(cat $K/mitigations/${pair%%=*}/params)"
done
assert_eq "$(cat $K/mitigations/tlb-gen/params)" "" "tlb-gen params"
P=/sys/module/kmemctl/parameters
assert_eq "$(cat $P/breaker) $(cat $P/breaker_window_s) $(cat $P/livepatch_reverse_ms)" \
	"Y 600 60000" "breaker, breaker_window_s, livepatch_reverse_ms"

[ -c /dev/kmemctl ] || die "/dev/kmemctl is not a character device"
unload_mod kmemctl
[ ! -e $K ] || die "$K still there after unload"
check_dmesg_clean
