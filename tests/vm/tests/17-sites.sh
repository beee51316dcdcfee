#!/bin/sh
# Patch sites (docs/kmod.md). Until the build's patch-site tables are
# written to /sys/kernel/kmemctl/sites, no target has a fingerprint ("-" in
# the build file) and every mitigation with copies says so. The tables are
# outside input: each kind of bad blob, made from this kernel's good one
# (/lib/kmemctl/sites, from `kmemctl build sites` on its image), is refused
# with EINVAL and a dmesg line saying why, and changes nothing; a write cut
# short waits, and the next whole write replaces it. The good one gives
# every target a fingerprint, the shipped records admit the build, and a
# bad blob written then leaves those fingerprints as they were.
. /tests/lib.sh

K=/sys/kernel/kmemctl
M=$K/mitigations
GOOD=$KMEMCTL_MODDIR/sites
W=/tmp/sites

# fps: the fingerprint field of every func line of the build file
fps() {
	awk '$1 == "func" { print $5 }' $K/build
}

# le32 VALUE: VALUE as 4 little-endian bytes
le32() {
	local v=$1 i=0 out=

	while [ $i -lt 4 ]; do
		out="$out\\$(printf %03o $((v & 255)))"
		v=$((v >> 8))
		i=$((i + 1))
	done
	# shellcheck disable=SC2059 # the format is the bytes
	printf "$out"
}

# poke OFFSET: stdin over $W's bytes at OFFSET
poke() {
	dd of=$W bs=1 seek="$1" conv=notrunc 2>/dev/null
}

u32_at() {
	od -An -tu4 -j "$1" -N4 $GOOD | tr -d ' '
}

# The layout of kmod/uapi/kmemctl.h: a 48-byte header (magic, nsections,
# build_id_len, build_id[20], alt_size, text_addr), then sections of 40
# bytes (name[24], addr, offset, size).
nsections=$(u32_at 8)
# section_at NAME: the offset of NAME's section entry
section_at() {
	local i=0 at

	while [ $i -lt "$nsections" ]; do
		at=$((48 + 40 * i))
		if [ "$(dd if=$GOOD bs=1 skip=$at count=24 2>/dev/null | tr -d '\000')" = "$1" ]; then
			echo $at
			return
		fi
		i=$((i + 1))
	done
	die "no section $1 in $GOOD"
}

# refused WHY [ERRNO_TEXT]: writing $W fails, dmesg says "sites: WHY", and
# the fingerprints are still $before
refused() {
	local err

	dmesg_mark
	if err=$(cat $W 2>&1 >$K/sites); then
		die "patch sites admitted; expected '$1'"
	fi
	case "$err" in
	*"${2:-Invalid argument}"*) ;;
	*) die "writing patch sites: '$err', expected '${2:-Invalid argument}' ($1)" ;;
	esac
	dmesg_since_mark | grep -qF "kmemctl: sites: $1" ||
		die "no dmesg line 'sites: $1': $(dmesg_since_mark | tail -3)"
	assert_eq "$(fps)" "$before" "fingerprints after a blob refused for '$1'"
}

# bad_blobs: each kind of bad blob refused, nothing changed
bad_blobs() {
	local alt orig id running size

	cp $GOOD $W
	printf X | poke 0
	refused 'not patch sites (magic)'

	cp $GOOD $W
	le32 0 | poke 8
	refused "0 sections, want 1 to 8"
	cp $GOOD $W
	le32 9 | poke 8
	refused "9 sections, want 1 to 8"

	cp $GOOD $W
	le32 21 | poke 12
	refused "a build id of 21 bytes"

	running=$(sed -n 's/^build_id //p' $K/build | cut -c1-12)
	cp $GOOD $W
	# the build id's first byte, flipped
	id=$(od -An -tu1 -j16 -N1 $GOOD | tr -d ' ')
	printf "\\$(printf %03o $((id ^ 255)))" | poke 16
	refused "made for build $(printf %02x $((id ^ 255)))$(echo "$running" | cut -c3-12), this is $running"

	size=$(u32_at 36)
	cp $GOOD $W
	le32 $((size + 2)) | poke 36
	refused "made for alternatives of $((size + 2)) bytes, this kernel's have $size"

	alt=$(section_at .altinstructions)
	cp $GOOD $W
	printf 'no.such.section\000' | poke "$alt"
	refused "section $(((alt - 48) / 40)): unknown name \"no.such.section\""
	cp $GOOD $W
	le32 0 | poke $((alt + 32))
	refused "section .altinstructions: $(u32_at $((alt + 36))) bytes at 0 are outside the $(wc -c <$GOOD) written"
	cp $GOOD $W
	le32 $((5 << 20)) | poke $((alt + 32))
	refused "the tables take $(((5 << 20) + $(u32_at $((alt + 36))))) bytes, more than 4194304"
	cp $GOOD $W
	le32 $(($(u32_at $((alt + 36))) - 1)) | poke $((alt + 36))
	refused ".altinstructions: $(($(u32_at $((alt + 36))) - 1)) bytes, not entries of $size"

	orig=$(section_at kmemctl.orig)
	cp $GOOD $W
	printf '.altinstructions\000' | poke "$orig"
	refused "section .altinstructions again"

	cp $GOOD $W
	printf 'one byte too many' >>$W
	refused "$(($(wc -c <$GOOD) + 17)) bytes written, the tables take $(wc -c <$GOOD)"

	# not from the start: the blob from its second 4 KiB on
	dmesg_mark
	dd if=$GOOD of=$K/sites bs=4096 skip=1 seek=1 2>/dev/null &&
		die "patch sites written at 4096 admitted"
	dmesg_since_mark | grep -qF "kmemctl: sites: a write at 4096 of 4096 bytes: write the whole file, from its start" ||
		die "no dmesg line for a write at 4096: $(dmesg_since_mark | tail -3)"
	assert_eq "$(fps)" "$before" "fingerprints after a write at 4096"
}

KMEMCTL_NO_SITES=1 load_mod kmemctl
copies=$(awk '$1 == "func" { print $2 }' $K/build | uniq)
[ -n "$copies" ] || die "no func line in the build file"
before=$(fps)
assert_eq "$(echo "$before" | sort -u)" "-" "fingerprints before the patch sites"
id12=$(sed -n 's/^build_id //p' $K/build | cut -c1-12)
for id in $copies; do
	assert_eq "$(cat $M/$id/reason)" \
		"unsupported: build $id12 ($(uname -r)) not verified: no patch sites of this build yet (kmemctl build sites)" \
		"$id: reason without patch sites"
done
bad_blobs

# half a blob: the write is taken, nothing measured, until a whole one
head -c $(($(wc -c <$GOOD) / 2)) $GOOD >$K/sites || die "half the patch sites refused"
assert_eq "$(fps)" "$before" "fingerprints after half the patch sites"
dmesg_mark
cat $GOOD >$K/sites || die "the patch sites refused: $(dmesg_since_mark | tail -3)"
dmesg_since_mark | grep -qF "kmemctl: sites: a write of $(($(wc -c <$GOOD) / 2)) bytes was not finished; taking a new one" ||
	die "no dmesg line for the unfinished write"
dmesg_since_mark | grep -qF "kmemctl: sites: patch sites of build $id12" ||
	die "no dmesg line for the patch sites"
before=$(fps)
echo "$before" | awk 'length($0) != 16 || /[^0-9a-f]/ { bad = 1 } END { exit bad }' ||
	die "fingerprints with the patch sites: $before"
# shellcheck disable=SC2086 # a list
shipped_verify "with the patch sites" $copies
log "patch sites of $id12 ($(wc -c <$GOOD) bytes): $(echo "$before" | wc -l) fingerprints, $(echo $copies) verified"

# with the tables in place, bad ones change nothing; the good one again, the same
bad_blobs
cat $GOOD >$K/sites || die "the patch sites refused the second time"
assert_eq "$(fps)" "$before" "fingerprints after the patch sites again"
unload_mod kmemctl
check_dmesg_clean
