#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# One build's fingerprints on every CPU (docs/kmod.md, Patch sites): with
# the build's patch sites written, the module fingerprints each target as
# the image has it, whatever the CPU patched in at boot.
#
#   tests/vm/cpus.sh OUT KERNEL MODEL...
#
# Boots KERNEL under each QEMU -cpu MODEL with builds/cpu.sh: the shipped
# records admit every mitigation with copies, a kprobe's int3 in one of
# its targets refuses it naming the function, and the build file is the
# same under every model. Prints a verdict table; OUT keeps each boot.
set -euo pipefail

VM=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 3 ] || { echo "usage: cpus.sh OUT KERNEL MODEL..." >&2; exit 2; }
out=$1 kernel=$2
shift 2
rm -rf "$out"
mkdir -p "$out"

fail() {
	echo "cpus: FAIL: $*" >&2
	exit 1
}

# section MODEL BEGIN END: the console lines between two markers
section() {
	awk -v b="$2" -v e="$3" '$0 == e { p = 0 } p { print } $0 == b { p = 1 }' "$out/$1/console.txt"
}

first=
for model in "$@"; do
	echo "cpus: $kernel under -cpu $model"
	# no_timer_check: TCG with the other core busy can miss the boot's
	# timer check on some models, which is not what is tested here
	"$VM/run" --kernel "$kernel" --cpu "$model" --append no_timer_check --timeout 600 \
		--out "$out/$model" "$VM/builds/cpu.sh" >"$out/$model.log" 2>&1 || {
		tail -40 "$out/$model.log" >&2
		fail "$kernel under -cpu $model: the guest's test failed"
	}
	section "$model" KMEMCTL-BUILD-BEGIN KMEMCTL-BUILD-END >"$out/$model.build"
	grep -q '^func ' "$out/$model.build" || fail "$model: no func line in the build file"
	if [ -z "$first" ]; then
		first=$model
	else
		diff "$out/$first.build" "$out/$model.build" >&2 ||
			fail "the build file under -cpu $model differs from the one under $first"
	fi
done

echo "cpus: $kernel: $(grep -c '^func ' "$out/$first.build") fingerprints, the same under $*"
printf '%-20s' "cpu"
for id in $(grep '^KMEMCTL-VERDICT ' "$out/$first/console.txt" | cut -d' ' -f2); do
	printf ' %-20s' "$id"
done
echo
for model in "$@"; do
	printf '%-20s' "$model"
	grep '^KMEMCTL-VERDICT ' "$out/$model/console.txt" | while read -r _ _ state _; do
		printf ' %-20s' "$state"
	done
	echo
done
echo "cpus: a kprobe in one target refused each mitigation with copies under every model:"
grep '^cpu: .*, a kprobe in ' "$out/$first/console.txt" | sed 's/^cpu: \[[^]]*\] /  /' || true
