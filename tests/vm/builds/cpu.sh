#!/bin/sh
# For tests/vm/cpus.sh, on one CPU model: the module's build file and each
# mitigation's verdict with the shipped records, between markers on the
# console; then, with a kprobe's int3 on one instruction of one target of
# each mitigation with copies, that mitigation is refused naming the
# function; with the kprobes gone it is admitted again.
. /tests/lib.sh

K=/sys/kernel/kmemctl
M=$K/mitigations
T=/sys/kernel/tracing
L=/sys/kernel/debug/kprobes/list

load_mod kmemctl
cat $K/build >/tmp/build
echo "KMEMCTL-BUILD-BEGIN"
cat /tmp/build
echo "KMEMCTL-BUILD-END"
verdicts KMEMCTL-VERDICT
copies=$(awk '$1 == "func" { print $2 }' /tmp/build | uniq)
[ -n "$copies" ] || die "no func line in the build file"
# shellcheck disable=SC2086 # a list
shipped_verify "with the shipped records" $copies
unload_mod kmemctl

# arm ID: a kprobe on one instruction of one of ID's targets, not the
# fentry site (ftrace's, which the fingerprint leaves out by design);
# prints the target
n=0
arm() {
	local sym size name off

	for sym in $(awk -v id="$1" '$1 == "func" && $2 == id { print $3 ":" $4 }' /tmp/build); do
		size=${sym#*:}
		sym=${sym%:*}
		off=1
		while [ $off -lt "$size" ] && [ $off -lt 64 ]; do
			n=$((n + 1))
			name=kmt$n
			if echo "p:$name $sym+$off" >>$T/kprobe_events 2>/dev/null; then
				echo 1 >$T/events/kprobes/$name/enable
				# the list says "<addr>  k  <sym>+0x<off>[/0x<size>]  [FTRACE]"
				if ! awk -v s="$sym+0x$(printf %x $off)" '
					($3 == s || index($3, s "/") == 1) && /\[FTRACE\]/ { f = 1 }
					END { exit !f }' $L; then
					echo "$sym"
					return
				fi
				echo 0 >$T/events/kprobes/$name/enable
				echo "-:$name" >>$T/kprobe_events
			fi
			off=$((off + 1))
		done
	done
	die "$1: no instruction of its targets takes a kprobe"
}

[ -e $T/kprobe_events ] || mount -t tracefs nodev $T
probed=
for id in $copies; do
	probed="$probed $id:$(arm "$id")"
done
log "kprobes: $(grep -c . $L) ($(awk '{ print $3, $4 }' $L | tr '\n' ' '))"
load_mod kmemctl
id12=$(sed -n 's/^build_id //p' $K/build | cut -c1-12)
verdicts KMEMCTL-PROBED
for p in $probed; do
	id=${p%%:*}
	sym=${p#*:}
	case "$(cat $M/$id/reason)" in
	"unsupported: build $id12 ($(uname -r)) not verified: $sym differs from every verified copy "* | \
		"unsupported: build $id12 ($(uname -r)) not verified: cannot fingerprint $sym: "*) ;;
	*) die "$id with a kprobe in $sym: $(cat $M/$id/reason)" ;;
	esac
	log "$id, a kprobe in $sym: $(cat $M/$id/reason)"
done
unload_mod kmemctl

echo 0 >$T/events/kprobes/enable
echo >$T/kprobe_events
load_mod kmemctl
for id in $copies; do
	case "$(cat $M/$id/reason)" in
	"off: verified: its code matches record "*) ;;
	*) die "$id with the kprobes gone: $(cat $M/$id/reason)" ;;
	esac
done
unload_mod kmemctl
check_dmesg_clean
