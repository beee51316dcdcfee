#!/bin/sh
# Verified builds (docs/kmod.md). The build file describes this kernel, one
# func line per function the copies of each gated mitigation stand in for,
# after the module's copy lines of those mitigations.
# Until a build record has all of them as they are here, such a mitigation
# is unsupported and names the build. Malformed records are refused whole,
# each with its line and reason in dmesg. A record with one fingerprint
# changed leaves that mitigation unsupported naming the function, and
# admits the others; the true record admits it and mode on works; a record
# written while it is on leaves it on. A record checked with other copies
# (one digest changed, one copy missing) leaves that mitigation unsupported
# naming the copy. Written records are bounded. After
# all that and a reload the fingerprints are the same; without the decoder
# nothing can be verified. The records the module ships would admit this
# build: the module is loaded with shipped_records=0 throughout, and the
# end checks that the shipped ones admit it.
. /tests/lib.sh

K=/sys/kernel/kmemctl
M=$K/mitigations
R=$K/records
B=/tmp/build

load_mod kmemctl shipped_records=0
cat $K/build >$B

# build_id, release, version, then copy and func lines
build_id=$(sed -n '1s/^build_id //p' $B)
case "$build_id" in
*[!0-9a-f]* | "") die "build_id line: $(sed -n 1p $B)" ;;
esac
[ $((${#build_id} % 2)) = 0 ] && [ ${#build_id} -le 40 ] || die "build id '$build_id'"
id12=$(echo "$build_id" | cut -c1-12)
assert_eq "$(sed -n 2p $B)" "release $(uname -r)" "release line"
assert_eq "$(sed -n 3p $B)" "version $(uname -v)" "version line"
sed -n '4,$p' $B | awk '
	$1 == "copy" && NF == 4 && !funcs && length($4) == 16 && $4 !~ /[^0-9a-f]/ { next }
	$1 != "func" || NF != 5 || $4 !~ /^[1-9][0-9]*$/ || length($5) != 16 || $5 ~ /[^0-9a-f]/ {
		print "bad line: " $0; bad = 1
	}
	{ funcs = 1 }
	END { exit bad }' || die "build file: $(cat $B)"
[ -z "$(sed -n '4,$p' $B | cut -d' ' -f1-3 | sort | uniq -d)" ] || die "a line twice: $(cat $B)"
# copy lines of exactly the mitigations with func lines
[ "$(awk '$1 == "copy" { print $2 }' $B | sort -u)" = \
	"$(awk '$1 == "func" { print $2 }' $B | sort -u)" ] || die "copy and func lines differ: $(cat $B)"

# The mitigations with copies: off in this kernel's conf, and not tlb-gen.
copies=
for e in $EXPECT_MITIGATIONS; do
	[ "${e#*=}" = off ] && [ "${e%%=*}" != tlb-gen ] && copies="$copies ${e%%=*}"
done
for id in $(awk '$1 == "func" { print $2 }' $B | uniq); do
	case " $copies " in
	*" $id "*) ;;
	*) die "func lines for $id, which this kernel does not gate on a record" ;;
	esac
done
# func_of ID [N]: the symbol of ID's Nth func line (default the first).
func_of() {
	awk -v id="$1" -v n="${2:-1}" '$1 == "func" && $2 == id && ++i == n { print $3 }' $B
}
for id in $copies; do
	first=$(func_of "$id")
	[ -n "$first" ] || die "$id: no func line"
	assert_eq "$(cat $M/$id/state)" unsupported "$id: state without a record"
	assert_eq "$(cat $M/$id/reason)" \
		"unsupported: build $id12 ($(uname -r)) not verified: no record has $first" \
		"$id: reason without a record"
	write_fails $M/$id/mode on "Operation not supported"
done
log "build $id12: $(grep -c '^func ' $B) functions and $(grep -c '^copy ' $B) copies of:${copies:- nothing}"

# The record every bad one below spoils: this build's, with a func line
# made up on a kernel that has none (a record may name any build).
good=$(build_record <$B)
grep -q '^func ' $B ||
	good=$(echo "$good" | sed 's/^end$/copy rstat-yield a.c:b 0123456789abcdef\nfunc rstat-yield cgroup_rstat_flush_locked 100 0123456789abcdef\nend/')
f1=$(echo "$good" | grep -m1 '^func ')
set -- $f1
sym1=$3

# refused EDIT LINE WHY: the good record through sed EDIT is refused, and
# dmesg says "records: line LINE: WHY..."
refused() {
	dmesg_mark
	write_fails $R "$(echo "$good" | sed "$1")" "Invalid argument"
	dmesg_since_mark | grep -qF "kmemctl: records: line $2: $3" ||
		die "no dmesg line 'records: line $2: $3' for sed '$1': $(dmesg_since_mark | tail -3)"
}
nf=$(echo "$good" | grep -c '^func ')
nc=$(echo "$good" | grep -c '^copy ')
# the first copy line, the first func line, "end"
cl=6
fl=$((6 + nc))
end=$((fl + nf))
c1=$(echo "$good" | grep -m1 '^copy ')
refused '1s/2$/3/' 1 'record format "3" is not 2'
refused '1s/2$/1/' 1 'record format 1 is for one kmemctl version only: make it again with kmemctl build record'
refused '1d' 1 'missing "kmemctl-build-record" line'
refused "1a\\
kmemctl $KMEMCTL_VERSION" 2 'unknown line "kmemctl"'
refused '2s/.*/build_id 12345g/' 2 'build_id "12345g" is not hex bytes'
refused '2s/.*/build_id abc/' 2 'build_id "abc" is not hex bytes'
refused '3d' 3 'missing "release" line'
refused '3s/$/ extra/' 3 'release "'
refused '5s/.*/source onlyone/' 5 'source: want "source <package> <version>"'
refused '5a\
hello world' 6 'unknown line "hello"'
refused "${fl}i\\
$f1\\
$f1" $((fl + 1)) "func: $2 $3 again"
refused "${fl}s/.*/func $2 $3 12x $5/" $fl 'func: size "12x" is not a number above 0'
refused "${fl}s/.*/func $2 $3 0 $5/" $fl 'func: size "0" is not a number above 0'
refused "${fl}s/.*/func $2 $3 $4 0123456789abcde/" $fl 'func: fingerprint "0123456789abcde" is not 16 hex digits'
refused "${fl}s/.*/func $2 $3 $4 0123456789ABCDEF/" $fl 'func: fingerprint "0123456789ABCDEF" is not 16 hex digits'
refused "${fl}s/.*/func no-such $3 $4 $5/" $fl 'func: unknown mitigation "no-such"'
refused "${fl}s/.*/func $2 $3 $4/" $fl 'func: want "func <mitigation> <symbol> <size> <fingerprint>"'
refused "${fl}s/.*/func $2 $3 $4 $5 more/" $fl 'func: more than four fields'
refused "${fl}s/^/\\t/" $fl 'a character that is not printable (0x09)'
refused '/^func /d' $((end - nf)) 'no func line'
set -- $c1
refused "${cl}s/.*/copy $2 $3 0123/" $cl 'copy: digest "0123" is not 16 hex digits'
refused "${cl}s/.*/copy no-such $3 $4/" $cl 'copy: unknown mitigation "no-such"'
refused "${cl}s/.*/copy $2 $3/" $cl 'copy: want "copy <mitigation> <name> <digest>"'
refused "${cl}s/.*/copy $2 $3 $4 more/" $cl 'copy: more than three fields'
refused "${cl}a\\
$c1" $((cl + 1)) "copy: $2 $3 again"
refused "${fl}a\\
$c1" $((fl + 1)) 'copy: after a func line'
set -- $f1
refused '/^copy /d' $((end - nc)) "func $2 $3: no copy line for $2"
refused "${end}a\\
build_id 00" $((end + 1)) 'text after "end"'
refused "${end}i\\
build_id 00" "$end" '"build_id" line again'
refused '$d' "$((end - 1))" 'no "end" line'
dmesg_mark
write_fails $R "" "Invalid argument"
printf '%s\n\0end\n' "$good" >/tmp/nul.rec
dd if=/tmp/nul.rec of=$R bs=4096 2>/dev/null && die "a record with a NUL byte was admitted"
dmesg_since_mark | grep -qF "kmemctl: records: more than 16384 bytes, or a NUL byte" ||
	die "no dmesg line for a record with a NUL byte"
assert_eq "$(cat $R)" "" "records after the refused ones"
for id in $copies; do
	assert_eq "$(cat $M/$id/state)" unsupported "$id: state after refused records"
done

[ -n "$copies" ] || {
	unload_mod kmemctl
	check_dmesg_clean
	log "no mitigation with copies here: format and refusals only"
	exit 0
}

# One fingerprint changed: that mitigation names its function, the others
# are admitted by the record.
set -- $copies
bad_id=$1
bad_sym=$(func_of "$bad_id")
set -- $(grep "^func $bad_id $bad_sym " $B)
bad_size=$4
bad_fp=$5
flipped=$(echo "$bad_fp" | sed 's/.$//')$( [ "${bad_fp#???????????????}" = 0 ] && echo 1 || echo 0)
dmesg_mark
write_ok $R "$(echo "$good" | sed "s/^func $bad_id $bad_sym $bad_size $bad_fp\$/func $bad_id $bad_sym $bad_size $flipped/")"
assert_eq "$(cat $R)" "$build_id $(uname -r) unchecked $KMEMCTL_KERNEL" "records listed"
assert_eq "$(cat $M/$bad_id/state)" unsupported "$bad_id: state with its function changed"
want="unsupported: build $id12 ($(uname -r)) not verified: $bad_sym differs from every verified copy (size $bad_size, fingerprint $bad_fp)"
assert_eq "$(cat $M/$bad_id/reason)" "$want" "$bad_id: reason with its function changed"
verified="off: verified: its code matches record $id12 ($(uname -r), unchecked $KMEMCTL_KERNEL)"
for id in $copies; do
	[ "$id" = "$bad_id" ] && continue
	assert_eq "$(cat $M/$id/state)" off "$id: state with a record"
	assert_eq "$(cat $M/$id/reason)" "$verified" "$id: reason with a record"
	dmesg_since_mark | grep -qxF "kmemctl: $id: $verified" || die "$id: no dmesg line '$verified'"
done
log "$bad_id: $want"

# Checked with other copies of it: one digest changed, or one copy left
# out, leaves it unsupported naming that copy, and the others admitted.
# shellcheck disable=SC2046 # its fields
set -- $(grep -m1 "^copy $bad_id " $B)
bad_copy=$3
bad_digest=$4
other=$(echo "$bad_digest" | sed 's/^./f/')
[ "$other" != "$bad_digest" ] || other=$(echo "$bad_digest" | sed 's/^./e/')
for how in changed missing; do
	unload_mod kmemctl
	load_mod kmemctl shipped_records=0
	if [ $how = changed ]; then
		rec=$(echo "$good" | sed "s/^copy $bad_id $bad_copy $bad_digest\$/copy $bad_id $bad_copy $other/")
		why="$bad_copy differs from this module's"
	else
		rec=$(echo "$good" | sed "/^copy $bad_id $bad_copy /d")
		why="$bad_copy is not in the record"
	fi
	write_ok $R "$rec"
	want="unsupported: build $id12 ($(uname -r)) not verified: record $id12 was made with other copies: $why"
	assert_eq "$(cat $M/$bad_id/reason)" "$want" "$bad_id: reason with its copy $how"
	for id in $copies; do
		[ "$id" = "$bad_id" ] || assert_eq "$(cat $M/$id/state)" off "$id: state, $bad_id's copy $how"
	done
done
log "$bad_id: $want"

# The true record admits it, and it goes on and off as before.
write_ok $R "$good"
assert_eq "$(cat $M/$bad_id/reason)" "$verified" "$bad_id: reason with the true record"
assert_eq "$(cat $R | wc -l)" 2 "records listed"
write_ok $R "$good"
assert_eq "$(cat $R | wc -l)" 2 "records listed after writing one again"
write_ok $M/$bad_id/mode on
wait_for 120 grep -qx on $M/$bad_id/state
# a record written while it is on leaves it on
write_ok $R "$(echo "$good" | sed 's/^build_id .*/build_id 00/')"
assert_eq "$(cat $M/$bad_id/state)" on "$bad_id: state after a record written while on"
write_ok $M/$bad_id/mode off
log "$bad_id: verified, on and off again"

# At most 64 written records.
n=3
while [ $n -lt 64 ]; do
	write_ok $R "$(echo "$good" | sed "s/^build_id .*/build_id $(printf '%08x' $n)/")"
	n=$((n + 1))
done
dmesg_mark
write_fails $R "$(echo "$good" | sed 's/^build_id .*/build_id ff/')" "No space left on device"
dmesg_since_mark | grep -qF "kmemctl: records: 64 written already, no room for ff" ||
	die "no dmesg line for the 65th record"
write_ok $R "$good"

# The livepatch, if any, is gone before the module can go.
wait_for 120 sh -c '[ ! -d /sys/kernel/livepatch/kmemctl ]'
unload_mod kmemctl
load_mod kmemctl shipped_records=0
assert_eq "$(cat $K/build)" "$(cat $B)" "build file after a reload"
assert_eq "$(cat $R)" "" "records after a reload"
assert_eq "$(cat $M/$bad_id/state)" unsupported "$bad_id: state after a reload"
unload_mod kmemctl

# Without the decoder no function can be fingerprinted.
load_mod kmemctl shipped_records=0 hide_symbols=insn_decode
assert_eq "$(sed -n '4,$p' $K/build)" "" "copy and func lines without insn_decode"
assert_eq "$(cat $M/$bad_id/reason)" \
	"unsupported: build $id12 ($(uname -r)) not verified: cannot fingerprint $bad_sym: kernel symbol insn_decode not found" \
	"$bad_id: reason without insn_decode"
unload_mod kmemctl

# The records shipped with the module admit this build as it is.
load_mod kmemctl
# shellcheck disable=SC2086 # a list
shipped_verify "with the shipped records" $copies
for id in $copies; do
	log "$id: $(cat $M/$id/reason)"
done
unload_mod kmemctl
check_dmesg_clean
