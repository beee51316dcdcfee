#!/bin/bash
# `kmemctl build` against Debian's real kernel source: every declared copy
# in kmod/ of 6.1's code, or of no series, matches linux-source-6.1 (the
# tarball, and the few files it names unpacked), and those of 6.12's code,
# or of none, match linux-source-6.12, each series' files skipped against
# the other's source; a one-line change inside a copied function fails naming
# it; records are made for a Debian build and a self-built one (fixture
# build files, with this kmod/'s copy lines as its module shows them) and
# refused when the build is not of that source; a record names the copies
# it was checked with by digests that layout and the version leave alone,
# and leaves out a mitigation whose copies are not the module's; records
# are signed and verified, and never pass as policies or the reverse.
#
#   tests/integration/build-record.sh BUILD_DIR SOURCE_DIR
set -euo pipefail

BUILD=${1:?usage: build-record.sh BUILD_DIR SOURCE_DIR}
SRC=${2:?usage: build-record.sh BUILD_DIR SOURCE_DIR}
KMEMCTL=$BUILD/cli/kmemctl
TARBALL=/usr/src/linux-source-6.1.tar.xz
TARBALL_612=/usr/src/linux-source-6.12.tar.xz
BUILDS=$SRC/tests/fixtures/builds

# scripts/install-deps kernel (make check) installs both
for t in "$TARBALL" "$TARBALL_612"; do
	[ -r "$t" ] || { echo "FAIL: $t missing: run scripts/install-deps kernel" >&2; exit 1; }
done

work=$(mktemp -d "$BUILD/build-record.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"

fail() {
	echo "FAIL: $*" >&2
	cat out >&2 || true
	exit 1
}

# expect_rc RC TEXT WHAT CMD...: exit code RC and TEXT in its output
expect_rc() {
	local want=$1 text=$2 what=$3 rc=0
	shift 3
	"$@" >out 2>&1 || rc=$?
	[ "$rc" = "$want" ] || fail "$what: exit $rc, expected $want"
	[ -z "$text" ] || grep -qF -- "$text" out || fail "$what: '$text' not in the output"
	echo "ok: $what"
}

# series_files SERIES: the kmod files with copies of SERIES's code or of none
series_files() {
	grep -l 'kmemctl-copy:' "$SRC"/kmod/*.[ch] | while read -r f; do
		s=$(sed -n 's|.*kmemctl-series: \([0-9.]*\) .*|\1|p' "$f")
		[ -z "$s" ] || [ "$s" = "$1" ] || continue
		echo "$f"
	done
}

# count_copies SERIES: their declarations; count_mitigations SERIES: of how many
count_copies() {
	# shellcheck disable=SC2046
	cat $(series_files "$1") | grep -c 'kmemctl-copy:'
}

count_mitigations() {
	# shellcheck disable=SC2046
	sed -n 's/.*kmemctl-copy: \([a-z-]*\) .*/\1/p' $(series_files "$1") | sort -u | wc -l
}

# with_copies FIXTURE SERIES: the fixture build file as a module built from
# kmod/ shows it, its copy lines of SERIES (or none) after the header
with_copies() {
	sed -n 1,3p "$1"
	"$KMEMCTL" build copies --kmod "${3:-$SRC/kmod}" |
		awk -v s="$2" '$2 == "-" || $2 == s { print "copy", $1, $3, $4 }'
	sed -n '4,$p' "$1"
}

copies=$(count_copies 6.1)
expect_rc 0 "$copies copies of $(count_mitigations 6.1) mitigations: all match the source" \
	"check the tarball" "$KMEMCTL" build check --source "$TARBALL" --kmod "$SRC/kmod"
[ "$(grep -c '^ok ' out)" = "$copies" ] || fail "not $copies ok lines"
copies612=$(count_copies 6.12)
expect_rc 0 "$copies612 copies of $(count_mitigations 6.12) mitigations: all match the source" \
	"check the 6.12 tarball" "$KMEMCTL" build check --source "$TARBALL_612" --kmod "$SRC/kmod"
[ "$(grep -c '^ok ' out)" = "$copies612" ] || fail "not $copies612 ok lines against 6.12"
for f in $(grep -l 'kmemctl-series: 6.1 ' "$SRC"/kmod/*.[ch]); do
	grep -qx "skip .*/${f##*/}: copies of 6.1, the source is 6.12" out ||
		fail "${f##*/} not skipped against 6.12"
done

# just the files the declarations name, and the top Makefile
# shellcheck disable=SC2046
files=$(sed -n 's/.*kmemctl-copy: [a-z-]* \([^ ]*\).*/linux-source-6.1\/\1/p' \
	$(series_files 6.1) | sort -u)
# shellcheck disable=SC2086
tar -xJf "$TARBALL" linux-source-6.1/Makefile $files
expect_rc 0 "all match the source" "check the unpacked files" \
	"$KMEMCTL" build check --source linux-source-6.1 --kmod "$SRC/kmod"

# copies: their digests are of tokens: layout, comments outside the
# declarations and the version change none; a token in a copy changes its own
cp -r "$SRC/kmod" kmod2
"$KMEMCTL" build copies --kmod "$SRC/kmod" >copies.txt
[ "$(wc -l <copies.txt)" = "$(grep -h 'kmemctl-copy:' "$SRC"/kmod/*.[ch] | wc -l)" ] ||
	fail "build copies: not one line per declaration"
# a mitigation's reason (255 characters) names a copy that differs after
# 164 of its own, with a release of 40: every name must fit
longest=$(awk '{ print length($3) }' copies.txt | sort -n | tail -n 1)
[ "$longest" -le 91 ] || fail "a copy name of $longest characters would be cut from a reason"
sed -i '1a /* a comment */' kmod2/lp_rstat.c
sed -i 's/^KMEMCTL_VERSION ?= .*/KMEMCTL_VERSION ?= 9.9.9/' kmod2/Makefile
"$KMEMCTL" build copies --kmod kmod2 | cmp -s - copies.txt ||
	fail "a comment or the version changed the copies' digests"
sed -i "s/bpf_flush(pos, cgroup_parent(pos), cpu);/bpf_flush(pos, NULL, cpu);/" \
	kmod2/lp_rstat.c
"$KMEMCTL" build copies --kmod kmod2 >copies2.txt
grep -vxFf copies.txt copies2.txt >changed.txt || true
[ "$(wc -l <changed.txt)" = 1 ] && grep -q '^rstat-yield 6.1 lp_rstat.c:flush_cpu ' changed.txt ||
	fail "a token in lp_rstat.c's flush_cpu changed other digests: $(cat changed.txt)"
expect_rc 0 "kmem_copies[] = {" "the module's table" "$KMEMCTL" build copies --kmod "$SRC/kmod" --c
cmp -s out "$SRC/kmod/copies.c" || fail "kmod/copies.c is stale: run kmemctl build copies --c -o kmod/copies.c"

# record: Debian's build names its package version
with_copies "$BUILDS/debian-6.1" 6.1 >debian-6.1
expect_rc 0 "left out func tlb-gen flush_tlb_kernel_range: kmod/ declares no copy" \
	"record a Debian build" \
	"$KMEMCTL" build record --source linux-source-6.1 --kmod "$SRC/kmod" \
	--build debian-6.1 -o debian.rec
grep -qx 'source linux-source-6.1 6.1.192-3' debian.rec || fail "debian.rec: source line"
grep -q '^kmemctl ' debian.rec && fail "debian.rec names a kmemctl version"
[ "$(grep -c '^func ' debian.rec)" = 4 ] || fail "debian.rec: not 4 func lines"
# the copies of the three mitigations it vouches for, as build copies lists them
awk '$2 == "-" || $2 == "6.1" { print $1, $3, $4 }' copies.txt |
	grep -E '^(kasan-flush-batch|rstat-yield|usercopy-fastpath) ' | sort >want-copies
sed -n 's/^copy //p' debian.rec | sort | diff want-copies - ||
	fail "debian.rec's copy lines are not the 6.1 copies of its mitigations"
grep -q '^func tlb-gen' debian.rec && fail "debian.rec vouches for tlb-gen"
[ "$(tail -n1 debian.rec)" = end ] || fail "debian.rec does not end with 'end'"
expect_rc 1 "names package version '6.1.192-3', not --source-version '6.1.192-4'" \
	"a Debian build is not of another package version" \
	"$KMEMCTL" build record --source linux-source-6.1 --kmod "$SRC/kmod" \
	--build debian-6.1 --source-version 6.1.192-4 -o x.rec
sed 's/Debian 6.1.192-3/Debian 6.1.190-1/' debian-6.1 >debian-6.1.190
expect_rc 1 "source version '6.1.190-1' is upstream 6.1.190, but 'linux-source-6.1' is 6.1.192" \
	"a build of another upstream version" \
	"$KMEMCTL" build record --source linux-source-6.1 --kmod "$SRC/kmod" \
	--build debian-6.1.190 -o x.rec
[ ! -e x.rec ] || fail "a refused record was written"
# a host whose module has other copies of rstat-yield: no record of it from these
sed 's/^\(copy rstat-yield lp_rstat.c:flush_cpu \).*/\10000000000000000/' debian-6.1 >other-copies
expect_rc 0 "left out func rstat-yield __mem_cgroup_flush_stats: the copies are not the module's, whose hosts the record is for: lp_rstat.c:flush_cpu differs" \
	"a build file of a module with other copies" \
	"$KMEMCTL" build record --source linux-source-6.1 --kmod "$SRC/kmod" \
	--build other-copies -o other.rec
grep -q '^func rstat-yield' other.rec && fail "other.rec vouches for rstat-yield"
grep -q '^copy rstat-yield' other.rec && fail "other.rec has rstat-yield's copies"
[ "$(grep -c '^func ' other.rec)" = 2 ] || fail "other.rec: not 2 func lines"

# record: a self-built kernel names no package: the operator's word, with a warning
with_copies "$BUILDS/kasan-6.1" 6.1 >kasan-6.1
expect_rc 1 "names no Debian package version: a self-built kernel; give --source-version" \
	"a self-built kernel without --source-version" \
	"$KMEMCTL" build record --source linux-source-6.1 --kmod "$SRC/kmod" \
	--build kasan-6.1 -o kasan.rec
expect_rc 0 "on the word of whoever runs this" "record a self-built kernel" \
	"$KMEMCTL" build record --source linux-source-6.1 --kmod "$SRC/kmod" \
	--build kasan-6.1 --source-version 6.1.192-3 -o kasan.rec
grep -qx 'source linux-source-6.1 6.1.192-3' kasan.rec || fail "kasan.rec: source line"

# a one-line change inside a copied function
cp -r linux-source-6.1 changed
sed -i 's/bpf_rstat_flush(pos, cgroup_parent(pos), cpu);/bpf_rstat_flush(pos, NULL, cpu);/' \
	changed/kernel/cgroup/rstat.c
cmp -s linux-source-6.1/kernel/cgroup/rstat.c changed/kernel/cgroup/rstat.c &&
	fail "sed changed nothing in rstat.c"
expect_rc 1 "FAIL rstat-yield kernel/cgroup/rstat.c cgroup_rstat_flush_locked" \
	"check a changed copied function" \
	"$KMEMCTL" build check --source changed --kmod "$SRC/kmod"
grep -q "undeclared difference from kernel/cgroup/rstat.c:213 (cgroup_rstat_flush_locked)" out ||
	fail "the difference is not named at rstat.c:213"
[ "$(grep -c '^FAIL ' out)" = 1 ] || fail "not exactly one copy fails"
grep -q 'some differ from the source' out || fail "no summary of the failure"
expect_rc 0 "left out func rstat-yield cgroup_rstat_flush_locked.constprop.0" \
	"record leaves out the mitigation whose copy differs" \
	"$KMEMCTL" build record --source changed --kmod "$SRC/kmod" \
	--build kasan-6.1 --source-package linux-source-6.1 \
	--source-version 6.1.192-3 -o changed.rec
grep -q '^func rstat-yield' changed.rec && fail "changed.rec vouches for rstat-yield"
[ "$(grep -c '^func ' changed.rec)" = 2 ] || fail "changed.rec: not 2 func lines"

# sign and verify, and neither kind of bundle passes as the other
expect_rc 0 "" "policy keygen" "$KMEMCTL" policy keygen op
expect_rc 0 "" "policy keygen (another key)" "$KMEMCTL" policy keygen stranger
mkdir keys
cp op.pem keys/
expect_rc 0 "" "sign the record" "$KMEMCTL" build sign -k op.key -s ops -o debian.bundle debian.rec
expect_rc 0 "signer ops" "verify the record bundle" "$KMEMCTL" build verify -K keys debian.bundle
tail -n +3 out | cmp -s - debian.rec || fail "verify does not print the record as signed"
expect_rc 0 "" "sign with a key the hosts do not pin" \
	"$KMEMCTL" build sign -k stranger.key -o stranger.bundle debian.rec
expect_rc 1 "does not verify as a build record" "a record signed by an unpinned key" \
	"$KMEMCTL" build verify -K keys stranger.bundle
cp debian.bundle tampered.bundle
printf 'X' | dd of=tampered.bundle bs=1 seek=40 conv=notrunc status=none
expect_rc 1 "does not verify as a build record" "a tampered bundle" \
	"$KMEMCTL" build verify -K keys tampered.bundle
echo '{"mitigations":{"rstat-yield":{"mode":"on"}}}' >p.json
expect_rc 0 "" "sign a policy" "$KMEMCTL" policy sign -k op.key -n base -v 1 -o p.bundle p.json
expect_rc 0 "" "the policy verifies as a policy" "$KMEMCTL" policy verify -K keys p.bundle
expect_rc 1 "does not verify as a build record" "a policy bundle is no record" \
	"$KMEMCTL" build verify -K keys p.bundle
expect_rc 1 "" "a record bundle is no policy" "$KMEMCTL" policy verify -K keys debian.bundle
expect_rc 1 "is not a build record: line 1" "sign refuses what is not a record" \
	"$KMEMCTL" build sign -k op.key -o x.bundle p.json
echo "ok: all"
