#!/bin/bash
# The fresh Debian 12 root tests/deploy/debian.sh installs the packages
# into, as a Debian 12 host with security updates has it: mmdebstrap
# (minbase, with systemd, Debian's 6.1 kernel and its headers, DKMS, and
# the 6.12 kernel Debian 12 fleets take, with its headers) from the
# machine's apt mirror and its security mirror, apt's lists kept for the
# packages' dependencies. One apt run, dpkg without fsyncs, and small
# initramfs images: debootstrap's package by package, a second apt for the
# 6.12 kernel and MODULES=most took 19 minutes of a busy machine and 500
# CPU-seconds, this about 140. It is made once and cached as a
# tarball in $XDG_CACHE_HOME/kmemctl/debroot, keyed by what it holds and
# where it comes from; the path of the tarball is printed. Made under a
# lock, so make check's fetch lane and deploy-debian can ask for it at once.
#   tests/deploy/debroot.sh WORK_DIR	(the log goes there)
set -euo pipefail

work=${1:?usage: debroot.sh WORK_DIR}
SUITE=bookworm
INCLUDE=systemd,systemd-sysv,dbus,udev,kmod,procps,initramfs-tools,linux-image-amd64,linux-headers-amd64,dkms,ca-certificates
# the 6.12 LTS kernel Debian 12 fleets take, from the security suite
SECURITY_KERNEL=linux-image-6.12-amd64,linux-headers-6.12-amd64

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

[ "$(id -u)" = 0 ] || fail "needs root (mmdebstrap, chroot)"
command -v mmdebstrap >/dev/null || fail "no mmdebstrap: scripts/install-deps package"

mirror=$(sed -n 's/^URIs: *\(http[^ ]*debian\)$/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | sed -n 1p)
[ -n "$mirror" ] || mirror=$(awk '$1 == "deb" && $3 !~ /security/ { print $2; exit }' /etc/apt/sources.list)
[ -n "$mirror" ] || fail "no Debian mirror in the machine's apt sources"
security=$(sed -n 's/^URIs: *\(http[^ ]*debian-security\)$/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null |
	head -n 1)
[ -n "$security" ] || security=$(awk '$1 == "deb" && $3 ~ /security/ { print $2; exit }' /etc/apt/sources.list)
[ -n "$security" ] || fail "no Debian security mirror in the machine's apt sources"
cache=${XDG_CACHE_HOME:-$HOME/.cache}/kmemctl/debroot
key=$(echo "mmdebstrap modules=list $SUITE $INCLUDE $mirror $SECURITY_KERNEL $security" | sha256sum | cut -c1-12)
base=$cache/$SUITE-$key.tar
if [ -f "$base" ]; then
	echo "$base"
	exit 0
fi

mkdir -p "$cache" "$work"
exec 9>"$cache/.lock"
flock 9
if [ -f "$base" ]; then
	echo "$base"
	exit 0
fi

echo "== mmdebstrap $SUITE from $mirror and $security (once; cached in $base)" >&2
rm -f "$base.tmp"
# Before the kernels come in: their initramfs holds what the test's boot
# needs from it (a virtio disk with ext4), not MODULES=most, which took three
# minutes of CPU a kernel to make here and the guest longer to unpack.
# shellcheck disable=SC2016 # expanded by mmdebstrap's hook shell
mmdebstrap --variant=minbase --include="$INCLUDE,$SECURITY_KERNEL" --format=tar \
	--essential-hook='mkdir -p "$1/etc/initramfs-tools/conf.d" "$1/usr/share/initramfs-tools/modules.d" &&
		echo MODULES=list >"$1/etc/initramfs-tools/conf.d/kmemctl-deploy" &&
		printf "virtio_pci\nvirtio_blk\next4\n" >"$1/usr/share/initramfs-tools/modules.d/kmemctl-deploy"' \
	--dpkgopt=force-unsafe-io --skip=cleanup/apt/lists "$SUITE" "$base.tmp" \
	"deb $mirror $SUITE main" "deb $security $SUITE-security main" >"$work/mmdebstrap.log" 2>&1 ||
	{ tail -20 "$work/mmdebstrap.log" >&2; fail "mmdebstrap failed (log: $work/mmdebstrap.log)"; }
mv "$base.tmp" "$base"
echo "$base"
