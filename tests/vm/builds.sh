#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Verified builds across boots (docs/kmod.md, Verified builds): what a
# record vouches for must not change with a reboot or a KASLR offset, and
# must change with the code of a copied function.
#
#   tests/vm/builds.sh [--kaslr] OUT KERNEL [CHANGED]
#
# Boots KERNEL with nokaslr; builds/build.sh prints the module's build file
# and a record made from it on the console. With --kaslr, boots it again
# with KASLR and a module that ships that record (built from a copy of
# kmod/ with it in records/): the kernel moved, the build file
# did not, and the shipped record admits the mitigations. With CHANGED (a kernel conf
# whose build differs from KERNEL's in a copied function), boots it with
# the first build file in /host; builds/changed.sh admits a record made
# from it there. OUT keeps each boot's output directory.
set -euo pipefail

VM=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$VM/../.." && pwd)
kaslr=0
if [ "${1:-}" = --kaslr ]; then
	kaslr=1
	shift
fi
[ $# -ge 2 ] || { echo "usage: builds.sh [--kaslr] OUT KERNEL [CHANGED]" >&2; exit 2; }
out=$1 kernel=$2 changed=${3:-}
rm -rf "$out"
mkdir -p "$out/files"
out=$(cd "$out" && pwd)

fail() {
	echo "builds: FAIL: $*" >&2
	exit 1
}

# boot NAME KERNEL TEST [run options]: tests/vm/run (of $vm) into $out/NAME.
vm=$VM
boot() {
	local name=$1 k=$2 t=$3

	shift 3
	echo "builds: $name: $k, $(basename "$t")"
	"$vm/run" --kernel "$k" --timeout 900 --out "$out/$name" "$@" "$t" >"$out/$name.log" 2>&1 || {
		tail -40 "$out/$name.log" >&2
		fail "$name: the guest's test failed"
	}
}

# saved NAME [WHAT]: what builds/build.sh printed in boot NAME, the build
# file or the RECORD.
saved() {
	awk -v what="${2:-BUILD}" '$0 == "KMEMCTL-" what "-END" { p = 0 } p { print }
		$0 == "KMEMCTL-" what "-BEGIN" { p = 1 }' "$out/$1/console.txt"
}

boot first "$kernel" "$VM/builds/build.sh" --append nokaslr
saved first >"$out/files/first"
grep -q '^func ' "$out/files/first" || fail "no func line in $kernel's build file"
echo "$kernel" >"$out/files/kernel"

if [ $kaslr = 1 ]; then
	# the source tree with a kmod/ of its own, the rest linked
	mkdir -p "$out/src"
	for f in "$SRC"/*; do
		[ "$f" = "$SRC/kmod" ] || ln -s "$f" "$out/src/"
	done
	cp -r "$SRC/kmod" "$out/src/kmod"
	rm -f "$out/src/kmod/records/"*.rec
	saved first RECORD >"$out/src/kmod/records/first.rec"
	vm=$out/src/tests/vm
	boot second "$kernel" "$vm/builds/build.sh" --files "$out/files"
	vm=$VM
	saved second >"$out/second.build"
	a=$(sed -n 's/^text //p' "$out/files/first")
	b=$(sed -n 's/^text //p' "$out/second.build")
	[ -n "$a" ] && [ "$a" != "$b" ] || fail "KASLR did not move the kernel: _text $a, then $b"
	diff <(grep -v '^text ' "$out/files/first") <(grep -v '^text ' "$out/second.build") >&2 ||
		fail "the build file changed with the KASLR offset"
	echo "builds: _text $a, then $b: the same $(grep -c '^func ' "$out/second.build") fingerprints"
	grep '^build: ' "$out/second/console.txt"
fi

if [ -n "$changed" ]; then
	boot changed "$changed" "$VM/builds/changed.sh" --files "$out/files"
	sed -n '/BEGIN changed.sh/,/PASS changed.sh/p' "$out/changed/console.txt" | grep '^changed:'
fi
echo "builds: ok"
