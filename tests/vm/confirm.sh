#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Boot confirmation on a real kernel (docs/agent.md): three boots of
# Debian's 6.1 kernel in QEMU share one disk, where the standalone agent
# keeps its state, each running one script of tests/vm/confirm/:
#
#   1. policy "confirm" version 1 turns usercopy-fastpath on with a long
#      guard window; inside it, with the record pending, the guest panics
#      (sysrq; tests/vm/run --crash);
#   2. under version 1 again it stays off and quarantined, the module never
#      had it on; version 2 (the same document) turns it on, and after a
#      short guard window it is confirmed; the boot ends cleanly;
#   3. the last known good policy, version 2, turns it on again.
#
# Passes when each boot does: states and counts, never durations.
#
#   tests/vm/confirm.sh BUILD_DIR [OUT_DIR]
set -euo pipefail

BUILD=$(realpath "${1:?usage: confirm.sh BUILD_DIR [OUT_DIR]}")
SRC=$(cd "$(dirname "$0")/../.." && pwd)
KMEMCTL=$BUILD/cli/kmemctl

work=${2:-$BUILD/vm/confirm}
rm -rf "$work"
mkdir -p "$work"
cd "$work"

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

# host/ becomes the guests' /host: the pinned key and both versions
mkdir -p host/keys
$KMEMCTL policy keygen op >/dev/null
cp op.pem host/keys/
printf '{"mitigations":{"usercopy-fastpath":{"mode":"on"}}}' >doc.json
for v in 1 2; do
	$KMEMCTL policy sign -k op.key -n confirm -v $v -o host/v$v.bundle doc.json
done
# ext4 with its journal, which survives the panic: busybox's mke2fs, which
# disk_up would use, makes ext2, and after a panic ext2 needs an fsck the
# guest does not have (boot 3 found its bitmaps inconsistent)
truncate -s 64M disk.img
mkfs.ext4 -q -F disk.img

# boot N SCRIPT [RUN_OPTION...]: one boot on the disk; its output in bootN.log
boot() {
	local n=$1 script=$2

	shift 2
	if ! "$SRC/tests/vm/run" --kernel debian-6.1 --userland "$BUILD" --files host \
		--disk disk.img --timeout 600 --out "$work/boot$n" "$@" \
		"$SRC/tests/vm/confirm/$script" >"boot$n.log" 2>&1; then
		tail -n 80 "boot$n.log" >&2
		fail "boot $n ($script); its log: $work/boot$n.log"
	fi
	# what the guest script logged, and the runner's verdict
	grep "^${script%.sh}: " "boot$n/console.txt" || true
	grep "^vm: \(PASS\|CRASH\|ok\)" "boot$n.log"
}

boot 1 1-crash.sh --crash
echo "ok: boot 1 panicked with usercopy-fastpath new"
boot 2 2-quarantined.sh
echo "ok: boot 2 kept it off and quarantined under version 1, confirmed it under version 2"
boot 3 3-reenabled.sh
echo "ok: boot 3 turned it on from the last known good policy"
echo PASS
