#!/bin/sh
# Every sysfs file reads; the module's mitigations, probes, params with
# their defaults and ranges, and states are exactly its interface's one
# description (kmod/uapi/kmemctl.h, printed by ifdesc); every mitigation
# and probe has the state this kernel should give it, and dmesg says the
# same reason.
. /tests/lib.sh

K=/sys/kernel/kmemctl
ifdesc >/tmp/ifdesc || die "ifdesc failed"
MITIGATIONS=$(awk '$1 == "mitigation" { print $2 }' /tmp/ifdesc | xargs)
PROBES=$(awk '$1 == "probe" { print $2 }' /tmp/ifdesc | xargs)
STATES=$(awk '$1 == "state" { print $2 }' /tmp/ifdesc | xargs)
[ -n "$MITIGATIONS" ] && [ -n "$PROBES" ] && [ -n "$STATES" ] || die "ifdesc printed '$(cat /tmp/ifdesc)'"

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

# exactly the described ids, no more
assert_eq "$(ls $K/mitigations | sort | xargs)" "$(echo $MITIGATIONS | tr ' ' '\n' | sort | xargs)" \
	"mitigation directories"
assert_eq "$(ls $K/probes | sort | xargs)" "$(echo $PROBES | tr ' ' '\n' | sort | xargs)" \
	"probe directories"

for id in $MITIGATIONS; do
	d=$K/mitigations/$id
	state=$(read_file $d/state)
	reason=$(read_file $d/reason)
	case " $STATES " in
	*" $state "*) ;;
	*) die "$id: state '$state' is not one of '$STATES'" ;;
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
awk '$1 == "probe" && $3 != "-" { print $2, $3 }' /tmp/ifdesc | while read -r id second; do
	check_hist $K/probes/$id/${second}_hist
	read_file $K/probes/$id/${second}_max | grep -qx '[0-9][0-9]*' || die "$id: bad ${second}_max"
done
n=$(ls $K/probes/*/*_hist | grep -vc '/hist$')
assert_eq "$n" "$(awk '$1 == "probe" && $3 != "-"' /tmp/ifdesc | wc -l)" "secondary histograms"

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

# Each mitigation's params: the described keys in order, at their defaults;
# a write at either end of a range is taken, one past it refused whole.
for id in $MITIGATIONS; do
	f=$K/mitigations/$id/params
	assert_eq "$(cat $f | xargs)" \
		"$(awk -v m=$id '$1 == "param" && $2 == m { print $3 "=" $4 }' /tmp/ifdesc | xargs)" \
		"$id params"
	awk -v m=$id '$1 == "param" && $2 == m { print $3, $4, $5, $6 }' /tmp/ifdesc |
		while read -r key def min max; do
			write_ok $f "$key=$max"
			write_ok $f "$key=$min"
			grep -qx "$key=$min" $f || die "$id: $key=$min not taken: $(cat $f)"
			write_fails $f "$key=$((max + 1))" "Invalid argument"
			[ "$min" = 0 ] || write_fails $f "$key=$((min - 1))" "Invalid argument"
			grep -qx "$key=$min" $f || die "$id: a refused write changed $key: $(cat $f)"
			write_ok $f "$key=$def"
		done
done
P=/sys/module/kmemctl/parameters
assert_eq "$(cat $P/breaker) $(cat $P/breaker_window_s) $(cat $P/livepatch_reverse_ms)" \
	"Y 600 60000" "breaker, breaker_window_s, livepatch_reverse_ms"

[ -c /dev/kmemctl ] || die "/dev/kmemctl is not a character device"
unload_mod kmemctl
[ ! -e $K ] || die "$K still there after unload"
check_dmesg_clean
