#!/bin/sh
# Build kmemctl.ko out of the source tree against the newest installed
# Debian amd64 headers, and check it carries what modinfo should show.
set -eu
BUILD=${1:?usage: build.sh BUILD_DIR SOURCE_DIR}
SRC=${2:?usage: build.sh BUILD_DIR SOURCE_DIR}
kdir=$(ls -d /usr/src/linux-headers-*-amd64 2>/dev/null | sort -V | tail -n 1)
[ -n "$kdir" ] || { echo "no linux-headers-*-amd64 installed" >&2; exit 1; }
out=$BUILD/kmod-$(basename "$kdir")
rm -rf "$out"
mkdir -p "$out"
cp -r "$SRC"/kmod/. "$out"/
make -C "$out" KDIR="$kdir" module >"$out/build.log" 2>&1 || { cat "$out/build.log"; exit 1; }
grep -q "warning:" "$out/build.log" && { cat "$out/build.log"; echo "compiler warnings" >&2; exit 1; }
/sbin/modinfo "$out/kmemctl.ko" >"$out/modinfo"
grep -q "^license: *GPL$" "$out/modinfo"
grep -q "^version: *0.1.0$" "$out/modinfo"
grep -q "^vermagic: *${kdir#/usr/src/linux-headers-} " "$out/modinfo"
echo "kmemctl.ko built against $(basename "$kdir")"
