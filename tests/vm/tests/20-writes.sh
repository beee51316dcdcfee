#!/bin/sh
# Bad writes to mode, params and probe files fail with EINVAL (or
# EOPNOTSUPP), keep the old value and say why in dmesg; good writes log
# old -> new.
. /tests/lib.sh

K=/sys/kernel/kmemctl
M=$K/mitigations

load_mod kmemctl

for id in kasan-flush-batch tlb-gen rstat-yield usercopy-fastpath kasan-quarantine; do
	for bad in bogus "" onn "on off" 1; do
		dmesg_mark
		write_fails $M/$id/mode "$bad" "Invalid argument"
		assert_eq "$(cat $M/$id/mode)" off "$id: mode after writing '$bad'"
		dmesg_since_mark | grep -qF "kmemctl: $id: mode: want" ||
			die "$id: no dmesg reason for mode '$bad'"
	done
	write_ok $M/$id/mode off
	state=$(cat $M/$id/state)
	case "$state" in
	unsupported | native)
		dmesg_mark
		write_fails $M/$id/mode on "Operation not supported"
		assert_eq "$(cat $M/$id/mode)" off "$id: mode after refused on"
		assert_eq "$(cat $M/$id/state)" "$state" "$id: state after refused on"
		dmesg_since_mark | grep -qF "kmemctl: $id: mode on refused: $state" ||
			die "$id: no dmesg reason for the refused on"
		;;
	esac
	write_fails $M/$id/params "nokey=1" "Invalid argument"
	write_fails $M/$id/params "   " "Invalid argument"
	# reset: "1" only; on a mitigation that has not tripped it does nothing
	for bad in 0 2 yes ""; do
		write_fails $M/$id/reset "$bad" "Invalid argument"
	done
	write_ok $M/$id/reset 1
	assert_eq "$(cat $M/$id/state)" "$state" "$id: state after reset"
	grep -qx "resets 0" $M/$id/stats || die "$id: a reset of an untripped mitigation counted"
done

# trip_call_ms: 1 ms to 10 minutes, on every mitigation with a replacement.
for id in kasan-flush-batch rstat-yield usercopy-fastpath kasan-quarantine; do
	p=$M/$id/params
	before=$(cat $p)
	for bad in trip_call_ms=0 trip_call_ms=600001 trip_call_ms=-1 trip_call_ms=1s trip_call_ms=; do
		dmesg_mark
		write_fails $p "$bad" "Invalid argument"
		assert_eq "$(cat $p)" "$before" "$id params after '$bad'"
		dmesg_since_mark | grep -q "kmemctl: $id: params: trip_call_ms=" ||
			die "$id: no dmesg reason for '$bad'"
	done
	write_ok $p trip_call_ms=1
	grep -qx trip_call_ms=1 $p || die "$id: $(cat $p)"
	write_ok $p trip_call_ms=600000
	grep -qx trip_call_ms=600000 $p || die "$id: $(cat $p)"
done
write_fails $M/tlb-gen/params trip_call_ms=100 "Invalid argument"

# rstat-yield has one parameter; kasan-quarantine two. All-or-nothing.
p=$M/rstat-yield/params
assert_eq "$(cat $p)" "every_cpus=1
trip_call_ms=600000" "rstat-yield params"
for bad in every_cpus=0 every_cpus=4097 every_cpus=abc every_cpus= every_cpus \
	=4 "every_cpus=4 bogus=1" "every_cpus=4 every_cpus=-1" every_cpus=99999999999999999999; do
	dmesg_mark
	write_fails $p "$bad" "Invalid argument"
	assert_eq "$(cat $p | head -n 1)" "every_cpus=1" "rstat-yield params after '$bad'"
	dmesg_since_mark | grep -q "kmemctl: rstat-yield: params: " ||
		die "no dmesg reason for params '$bad'"
done
dmesg_mark
write_ok $p "every_cpus=16"
assert_eq "$(cat $p | head -n 1)" "every_cpus=16" "rstat-yield params after a good write"
dmesg_since_mark | grep -qxF "kmemctl: rstat-yield: params: every_cpus 1 -> 16" ||
	die "no dmesg line for every_cpus 1 -> 16"
write_ok $p "every_cpus=0x20"
assert_eq "$(cat $p | head -n 1)" "every_cpus=32" "hex value"

q=$M/kasan-quarantine/params
before=$(cat $q)
write_fails $q "batch_bytes=8192 max_fraction=2" "Invalid argument"
assert_eq "$(cat $q)" "$before" "kasan-quarantine params after a half-bad write"
write_ok $q "batch_bytes=8192
max_fraction=64"
assert_eq "$(cat $q)" "batch_bytes=8192
max_fraction=64
trip_call_ms=600000" "kasan-quarantine params after a two-line write"

P=$K/probes
for id in rstat-flush usercopy-vmalloc vmap-purge kasan-reduce tlb-shootdown; do
	old=$(cat $P/$id/enabled)
	for bad in 2 maybe -1 ""; do
		write_fails $P/$id/enabled "$bad" "Invalid argument"
		assert_eq "$(cat $P/$id/enabled)" "$old" "$id: enabled after '$bad'"
	done
	for bad in abc -1 1.5 ""; do
		write_fails $P/$id/threshold_ns "$bad" "Invalid argument"
		assert_eq "$(cat $P/$id/threshold_ns)" 0 "$id: threshold_ns after '$bad'"
	done
	write_fails $P/$id/reset 0 "Invalid argument"
	write_fails $P/$id/reset x "Invalid argument"
	write_ok $P/$id/threshold_ns 1000000
	assert_eq "$(cat $P/$id/threshold_ns)" 1000000 "$id: threshold_ns"
	write_ok $P/$id/threshold_ns 0
	if [ "$(cat $P/$id/reason)" = ok ]; then
		write_ok $P/$id/enabled 0
		assert_eq "$(cat $P/$id/enabled)" 0 "$id: disabled"
		write_ok $P/$id/enabled 1
		assert_eq "$(cat $P/$id/enabled)" 1 "$id: enabled again"
	else
		write_fails $P/$id/enabled 1 "Operation not supported"
		assert_eq "$(cat $P/$id/enabled)" 0 "$id: unsupported probe enabled"
	fi
done

unload_mod kmemctl
check_dmesg_clean
