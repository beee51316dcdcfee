#!/bin/bash
# The fresh Debian 12 root tests/deploy/debian.sh installs the packages
# into: debootstrap (minbase, with systemd, Debian's 6.1 kernel and its
# headers and DKMS) from the machine's apt mirror, then, from
# bookworm-security, the 6.12 kernel Debian 12 fleets take, with its
# headers. It is made once and cached as a tarball in
# $XDG_CACHE_HOME/kmemctl/debroot, keyed by what it holds and where it
# comes from; the path of the tarball is printed. Made under a lock, so
# make check's fetch lane and deploy-debian can ask for it at once.
#   tests/deploy/debroot.sh WORK_DIR	(logs and the unpacked root go there)
set -euo pipefail

work=${1:?usage: debroot.sh WORK_DIR}
SUITE=bookworm
INCLUDE=systemd,systemd-sysv,dbus,udev,kmod,procps,initramfs-tools,linux-image-amd64,linux-headers-amd64,dkms,ca-certificates
# the 6.12 LTS kernel Debian 12 fleets take, from the security suite
SECURITY_KERNEL="linux-image-6.12-amd64 linux-headers-6.12-amd64"

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

[ "$(id -u)" = 0 ] || fail "needs root (debootstrap, chroot)"
command -v debootstrap >/dev/null || fail "no debootstrap: scripts/install-deps package"

mirror=$(sed -n 's/^URIs: *\(http[^ ]*debian\)$/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -n 1)
[ -n "$mirror" ] || mirror=$(awk '$1 == "deb" && $3 !~ /security/ { print $2; exit }' /etc/apt/sources.list)
[ -n "$mirror" ] || fail "no Debian mirror in the machine's apt sources"
security=$(sed -n 's/^URIs: *\(http[^ ]*debian-security\)$/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null |
	head -n 1)
[ -n "$security" ] || security=$(awk '$1 == "deb" && $3 ~ /security/ { print $2; exit }' /etc/apt/sources.list)
[ -n "$security" ] || fail "no Debian security mirror in the machine's apt sources"
cache=${XDG_CACHE_HOME:-$HOME/.cache}/kmemctl/debroot
key=$(echo "$SUITE $INCLUDE $mirror $SECURITY_KERNEL $security" | sha256sum | cut -c1-12)
base=$cache/$SUITE-$key.tar
if [ -f "$base" ]; then
	echo "$base"
	exit 0
fi

mkdir -p "$cache" "$work"
work=$(cd "$work" && pwd)
boot=$work/bootstrap
exec 9>"$cache/.lock"
flock 9
if [ -f "$base" ]; then
	echo "$base"
	exit 0
fi

# what apt and DKMS need in the chroot
unmount_boot() {
	local m
	for m in dev/pts dev proc sys; do
		! mountpoint -q "$boot/$m" 2>/dev/null || umount -l "$boot/$m"
	done
}
trap unmount_boot EXIT
unmount_boot
rm -rf --one-file-system "$boot"
echo "== debootstrap $SUITE from $mirror, and $SECURITY_KERNEL (once; cached in $base)" >&2
mkdir -p "$boot"
debootstrap --variant=minbase --include="$INCLUDE" "$SUITE" "$boot" "$mirror" \
	>"$work/debootstrap.log" 2>&1 || { tail -20 "$work/debootstrap.log" >&2; fail "debootstrap failed"; }
echo "deb $security $SUITE-security main" >"$boot/etc/apt/sources.list.d/security.list"
mount -t proc proc "$boot/proc"
mount -t sysfs sysfs "$boot/sys"
mount --bind /dev "$boot/dev"
mount --bind /dev/pts "$boot/dev/pts"
cp /etc/resolv.conf "$boot/etc/resolv.conf"
# shellcheck disable=SC2086 # a list of packages
{ chroot "$boot" apt-get update &&
	chroot "$boot" env DEBIAN_FRONTEND=noninteractive \
		apt-get install -y --no-install-recommends $SECURITY_KERNEL; } \
	>"$work/kernel-6.12.log" 2>&1 || { tail -20 "$work/kernel-6.12.log" >&2; fail "installing $SECURITY_KERNEL failed"; }
chroot "$boot" apt-get clean
unmount_boot
rm -f "$boot/etc/resolv.conf"
tar --numeric-owner -C "$boot" -cf "$base.tmp" .
mv "$base.tmp" "$base"
rm -rf --one-file-system "$boot"
echo "$base"
