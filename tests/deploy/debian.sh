#!/bin/bash
# debian/, end to end, as an operator meets it:
#  1. dpkg-buildpackage builds kmemctl, kmem-agent, kmemd and kmemctl-dkms
#     from a copy of the source tree; lintian finds no errors or warnings.
#  2. apt installs them into a fresh Debian 12 root (mmdebstrap, with
#     systemd, Debian's 6.1 kernel and, from bookworm-security, its 6.12
#     kernel, each with its headers). Checked there: each package's files,
#     the users, group and directories, the units enabled but not started,
#     and kmemctl.ko built by DKMS against the installed headers for each
#     of the root's kernels.
#  3. The root boots in QEMU (TCG) from a disk, systemd as init, with a
#     kmemd and agent configuration and certificates, once on each kernel
#     (the disk as installed each time). A unit in the guest
#     (tests/deploy/pkg-check) checks that kmemd.service and
#     kmem-agent.service run under their hardening, that the agent loaded
#     the DKMS module and reports to kmemd, and that every mitigation this
#     kernel supports can be enacted from inside the unit's sandbox: on 6.1
#     rstat-yield (livepatched) and usercopy-fastpath, on 6.12
#     usercopy-fastpath, where rstat-yield is native.
#  4. An upgrade keeps an operator's build record: with the shipped
#     records off (modprobe.d), the 6.1 build's record signed with the
#     operator's key in [agent] builds; packages of another version with
#     the same copies installed over them by apt, DKMS rebuilding the
#     module; booted again on 6.1, both of its mitigations are enacted.
# The root before the packages is tests/deploy/debroot.sh's, cached in
# $XDG_CACHE_HOME/kmemctl/debroot; the packages come from the machine's apt
# mirror.
#   tests/deploy/debian.sh SOURCE_DIR BUILD_DIR
set -euo pipefail

SRC=$(cd "${1:?usage: debian.sh SOURCE_DIR BUILD_DIR}" && pwd)
BUILD=$(cd "${2:?usage: debian.sh SOURCE_DIR BUILD_DIR}" && pwd)
KMEMCTL=$BUILD/cli/kmemctl
out=$BUILD/test-output/debian
root=$out/root

fail() {
	echo "FAIL: $*" >&2
	exit 1
}
say() { echo "== [${SECONDS}s] $*"; }

[ "$(id -u)" = 0 ] || fail "needs root (chroot, mounts)"
for tool in dpkg-buildpackage lintian mmdebstrap mkfs.ext4 qemu-system-x86_64; do
	command -v "$tool" >/dev/null || fail "no $tool: scripts/install-deps package vm"
done

# mount_in DIR, unmount_in DIR: what apt and DKMS need in a chroot
mount_in() {
	mount -t proc proc "$1/proc"
	mount -t sysfs sysfs "$1/sys"
	mount --bind /dev "$1/dev"
	mount --bind /dev/pts "$1/dev/pts"
	cp /etc/resolv.conf "$1/etc/resolv.conf"
}
unmount_in() {
	local m
	for m in dev/pts dev proc sys; do
		! mountpoint -q "$1/$m" 2>/dev/null || umount -l "$1/$m"
	done
}
unmount_root() {
	unmount_in "$root"
}
trap unmount_root EXIT
unmount_root
rm -rf --one-file-system "$out"
mkdir -p "$out/src" "$out/debs"

# 1. the packages
say "dpkg-buildpackage: building from a copy of the source tree"
if git -C "$SRC" rev-parse --git-dir >/dev/null 2>&1; then
	git -C "$SRC" ls-files -z --cached --others --exclude-standard |
		grep -zv '^build' | (cd "$SRC" && tar --null -cf - -T -) | tar -xf - -C "$out/src"
else
	tar -C "$SRC" --exclude='./build*' --exclude='./obj-*' -cf - . | tar -xf - -C "$out/src"
fi
# npm may come from Node's own packages rather than Debian's: every other
# build dependency must be there as a package.
missing=$(cd "$out/src" && dpkg-checkbuilddeps 2>&1 | sed -n 's/.*Unmet build dependencies: //p' || true)
if command -v npm >/dev/null; then
	missing=$(echo "$missing" | tr ' ' '\n' | grep -v '^npm$' | xargs)
fi
[ -z "$missing" ] || fail "unmet build dependencies: $missing (scripts/install-deps package)"
# packages DIR [OPTION]: the four packages of the tree in DIR into
# $out/debs, their version in $version; OPTION for dpkg-buildpackage
packages() {
	(cd "$1" && DEB_BUILD_OPTIONS="nocheck parallel=$(nproc)" dpkg-buildpackage -us -uc -b -d ${2:+"$2"}) \
		>"$out/dpkg-buildpackage.log" 2>&1 ||
		{ tail -40 "$out/dpkg-buildpackage.log"; fail "dpkg-buildpackage failed"; }
	mv "$1"/../*.deb "$out/debs/"
	rm -f "$out"/debs/*-dbgsym_*.deb
	version=$(cd "$1" && dpkg-parsechangelog -S Version)
	for p in kmemctl_"$version"_amd64 kmem-agent_"$version"_amd64 kmemd_"$version"_amd64 \
		kmemctl-dkms_"$version"_all; do
		[ -f "$out/debs/$p.deb" ] || fail "dpkg-buildpackage made no $p.deb"
	done
}
packages "$out/src"
echo "ok: four packages, version $version: $(cd "$out/debs" && echo *.deb)"
lintian "$out"/debs/*.deb >"$out/lintian.log" 2>&1 || true
! grep -E "^(E|W): " "$out/lintian.log" || fail "lintian has errors or warnings (above)"
echo "ok: lintian finds no errors or warnings"

# 2. a fresh Debian root, from the cache when it has one
base=$("$SRC/tests/deploy/debroot.sh" "$out") || fail "no Debian root (tests/deploy/debroot.sh)"
mkdir -p "$root"
tar --numeric-owner -xpf "$base" -C "$root"
mount_in "$root"
kvers=$(ls "$root/lib/modules" | sort -V | xargs)
[[ "$kvers" =~ ^6\.1\.[^\ ]*\ 6\.12\.[^\ ]*$ ]] || fail "the root's kernels are '$kvers', not a 6.1 and a 6.12"
for kver in $kvers; do
	[ -d "$root/usr/src/linux-headers-$kver" ] || fail "the root has no headers for its kernel $kver"
done

say "apt-get install of the four packages into the root (kernels $kvers)"
# install: the four packages of $version into the root; the root has no
# shell to expand a glob in, so each is named
install_packages() {
	mkdir -p "$root/tmp/debs"
	cp "$out"/debs/*_"$version"_*.deb "$root/tmp/debs/"
	chroot "$root" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
		/tmp/debs/kmemctl_"$version"_amd64.deb /tmp/debs/kmem-agent_"$version"_amd64.deb \
		/tmp/debs/kmemd_"$version"_amd64.deb /tmp/debs/kmemctl-dkms_"$version"_all.deb \
		>"$out/apt-install.log" 2>&1 || { tail -40 "$out/apt-install.log"; fail "apt-get install failed"; }
	rm -rf "$root"/tmp/debs "$root"/var/cache/apt/archives/*.deb
}
install_packages
echo "ok: apt-get installed them with their dependencies"

# in ROOT: a command run in the installed root
in_root() { chroot "$root" "$@"; }
# owns PACKAGE PATH...: dpkg lists each PATH as PACKAGE's
owns() {
	local pkg=$1 list path
	shift
	list=$(in_root dpkg -L "$pkg")
	for path in "$@"; do
		grep -qx "$path" <<<"$list" || fail "$pkg does not install $path"
		[ -e "$root$path" ] || fail "$path of $pkg is not on disk"
	done
}
owns kmemctl /usr/bin/kmemctl /usr/share/bash-completion/completions/kmemctl \
	/usr/share/man/man8/kmemctl.8.gz /usr/lib/systemd/catalog/kmemctl.catalog
owns kmem-agent /usr/sbin/kmem-agent /usr/share/man/man8/kmem-agent.8.gz \
	/lib/systemd/system/kmem-agent.service /lib/systemd/system/kmem-agent.socket \
	/usr/lib/sysusers.d/kmem-agent.conf /usr/lib/tmpfiles.d/kmem-agent.conf \
	/usr/share/doc/kmem-agent/examples/agent.conf
owns kmemd /usr/sbin/kmemd /usr/share/man/man8/kmemd.8.gz /lib/systemd/system/kmemd.service \
	/usr/lib/sysusers.d/kmemd.conf /usr/lib/tmpfiles.d/kmemd.conf \
	/usr/share/kmemd/web/index.html /usr/share/kmemd/web/uplot.min.js \
	/usr/share/doc/kmemd/examples/kmemd.conf /usr/share/doc/kmemd/examples/kmemd.yml
owns kmemctl-dkms "/usr/src/kmemctl-$version/dkms.conf" "/usr/src/kmemctl-$version/Kbuild" \
	"/usr/src/kmemctl-$version/main.c" "/usr/src/kmemctl-$version/uapi/kmemctl.h"
grep -q "$version" <<<"$(in_root kmemctl version)" || fail "kmemctl version: $(in_root kmemctl version)"
for m in kmemctl kmemd kmem-agent; do
	in_root man -w 8 "$m" >/dev/null 2>&1 || [ -f "$root/usr/share/man/man8/$m.8.gz" ] ||
		fail "no man page for $m"
done
echo "ok: each package's binaries, man pages, units, sysusers.d, tmpfiles.d, examples and sources"

getent_root() { awk -F: -v n="$2" '$1 == n' "$root/etc/$1"; }
for u in kmemd kmem-agent; do
	[ -n "$(getent_root passwd "$u")" ] || fail "installing made no user $u"
done
[ -n "$(getent_root group kmemctl)" ] || fail "installing made no group kmemctl"
[ "$(in_root stat -c '%a %U' /var/lib/kmemd)" = "700 kmemd" ] ||
	fail "/var/lib/kmemd is $(in_root stat -c '%a %U' /var/lib/kmemd)"
[ -d "$root/etc/kmemctl/keys" ] || fail "no /etc/kmemctl/keys"
for unit in kmemd.service kmem-agent.service kmem-agent.socket; do
	[ "$(in_root systemctl is-enabled "$unit" 2>&1)" = enabled ] ||
		fail "$unit is $(in_root systemctl is-enabled "$unit" 2>&1), not enabled"
done
verify=$(in_root systemd-analyze verify --man=no kmemd.service kmem-agent.service kmem-agent.socket 2>&1 |
	grep -v "^$" || true)
[ -z "$verify" ] || fail "systemd-analyze verify in the root: $verify"
echo "ok: users kmemd and kmem-agent, group kmemctl, /var/lib/kmemd 0700; units enabled and verified"

dkms_status=$(in_root dkms status kmemctl)
for kver in $kvers; do
	grep -q "^kmemctl/$version, $kver, x86_64: installed" <<<"$dkms_status" ||
		{ tail -30 "$out/apt-install.log"; fail "DKMS did not install kmemctl for $kver: $dkms_status"; }
	ko=$(in_root modinfo -k "$kver" -F filename kmemctl)
	# compressed as the kernel's own modules are (6.12: xz)
	case "${ko#"/lib/modules/$kver/updates/dkms/"}" in
	kmemctl.ko | kmemctl.ko.xz | kmemctl.ko.zst | kmemctl.ko.gz) ;;
	*) fail "$kver: modprobe would load $ko" ;;
	esac
	[ "$(in_root modinfo -k "$kver" -F version kmemctl)" = "$version" ] || fail "$kver: kmemctl.ko's version"
	grep -q "^$kver " <<<"$(in_root modinfo -k "$kver" -F vermagic kmemctl)" ||
		fail "$kver: kmemctl.ko's vermagic"
	echo "ok: DKMS built kmemctl.ko $version for $kver against /usr/src/linux-headers-$kver"
done

# 3. configure the host as an operator would, then boot it
say "configuring kmemd and the agent, and booting the root with systemd in QEMU"
pki=$out/pki
mkdir -p "$pki"
(cd "$out" && $KMEMCTL pki init pki >/dev/null && $KMEMCTL pki issue pki server kmemd ip 127.0.0.1 \
	>/dev/null && $KMEMCTL pki issue pki admin ops >/dev/null &&
	$KMEMCTL pki issue pki host pkg-host >/dev/null)
kmemd_gid=$(awk -F: '$1 == "kmemd" { print $3 }' "$root/etc/group")
install -m 0644 "$pki/ca.crt" "$pki/kmemd.crt" "$pki/pkg-host.crt" "$root/etc/kmemctl/"
install -m 0640 -g "$kmemd_gid" "$pki/kmemd.key" "$root/etc/kmemctl/"
install -m 0600 "$pki/pkg-host.key" "$root/etc/kmemctl/"
mv "$root/etc/kmemctl/pkg-host.crt" "$root/etc/kmemctl/host.crt"
mv "$root/etc/kmemctl/pkg-host.key" "$root/etc/kmemctl/host.key"
sed -e 's/^listen = .*/listen = 127.0.0.1:8443/' -e 's|^#web_root = |web_root = |' \
	"$root/usr/share/doc/kmemd/examples/kmemd.conf" >"$root/etc/kmemctl/kmemd.conf"
sed -e 's/^server = .*/server = 127.0.0.1:8443/' -e 's/^#host_id = .*/host_id = pkg-host/' \
	-e 's/^interval = .*/interval = 2s/' \
	"$root/usr/share/doc/kmem-agent/examples/agent.conf" >"$root/etc/kmemctl/agent.conf"
mkdir -p "$root/root/.config/kmemctl"
install -m 0600 "$pki/ops.crt" "$pki/ops.key" "$root/root/"
printf '[kmemd]\nserver = 127.0.0.1:8443\nca = /etc/kmemctl/ca.crt\ncert = /root/ops.crt\nkey = /root/ops.key\n' \
	>"$root/root/.config/kmemctl/config"
in_root kmemd -n || fail "kmemd -n refuses the configuration"
in_root kmem-agent -n || fail "kmem-agent -n refuses the configuration"
install -m 0755 "$SRC/tests/deploy/pkg-check" "$root/usr/local/sbin/pkg-check"
cat >"$root/etc/systemd/system/pkg-check.service" <<'UNIT'
[Unit]
Description=kmemctl package test (tests/deploy/debian.sh)
After=kmemd.service kmem-agent.service

[Service]
Type=oneshot
Environment=HOME=/root
ExecStart=/usr/local/sbin/pkg-check
StandardOutput=tty
StandardError=tty
TTYPath=/dev/ttyS0
ExecStopPost=/bin/systemctl poweroff --no-block

[Install]
WantedBy=multi-user.target
UNIT
in_root systemctl enable pkg-check.service >/dev/null 2>&1
# the serial console carries the result, without a login prompt in it
in_root systemctl mask serial-getty@ttyS0.service >/dev/null 2>&1
echo pkg-host >"$root/etc/hostname"
: >"$root/etc/machine-id"
unmount_root

# disk: the root as a disk image, $out/disk.img
disk() {
	local size
	size=$(($(du -sm "$root" | cut -f1) + 1024))
	mkfs.ext4 -q -F -L kmemroot -d "$root" "$out/disk.img" "${size}M" >"$out/mkfs.log" 2>&1 ||
		fail "mkfs.ext4 failed: $(cat "$out/mkfs.log")"
}

# boot KVER: the disk as installed (-snapshot) booted on KVER; passes when
# the host's checks passed and it enacted what KVER's series can
boot() {
	local kver=$1 vmlinuz initrd console want got
	vmlinuz=$root/boot/vmlinuz-$kver
	initrd=$root/boot/initrd.img-$kver
	console=$out/console-$kver.log
	[ -f "$vmlinuz" ] && [ -f "$initrd" ] || fail "the root has no kernel or initrd for $kver"
	say "booting $kver"
	# single-threaded TCG, as tests/vm/README.md says: livepatching under
	# multi-threaded TCG runs stale code
	timeout 900 qemu-system-x86_64 -accel tcg,thread=single -machine q35 -cpu max -smp 2 -m 2048 \
		-kernel "$vmlinuz" -initrd "$initrd" -snapshot \
		-drive "file=$out/disk.img,format=raw,if=virtio" -nic none \
		-append "root=/dev/vda rw console=ttyS0 panic=-1 quiet systemd.show_status=0" \
		-display none -serial "file:$console" -no-reboot >"$out/qemu-$kver.log" 2>&1 ||
		fail "QEMU failed or timed out on $kver: $(tail -5 "$out/qemu-$kver.log") (console: $console)"
	grep "^PKGCHECK" "$console" | sed 's/^PKGCHECK /   /' || true
	grep -q "^PKGCHECK PASS" "$console" ||
		fail "the booted host's checks did not pass on $kver (console: $console)"
	# what each series enacts: on 6.12 rstat-yield is upstream's (native)
	case "$kver" in
	6.1.*) want="rstat-yield usercopy-fastpath" ;;
	*) want="usercopy-fastpath" ;;
	esac
	got=$(sed -n 's/^PKGCHECK ok: enacted \([a-z -]*\) from inside.*/\1/p' "$console")
	[ "$got" = "$want" ] || fail "$kver: enacted '$got', expected '$want'"
	echo "ok: $kver booted, enacted $got"
}

disk
for kver in $kvers; do
	boot "$kver"
done

# 4. an upgrade keeps an operator's build record. The module loads without
# the records it ships (modprobe.d), so only a record signed by the
# operator's policy key in [agent] builds admits the 6.1 build: this tree's
# record of it. The packages are then upgraded to another version with the
# same copies of kernel code, DKMS rebuilds the module, and the same
# record still admits the build: both 6.1 mitigations are enacted again.
k61=${kvers%% *}
rec=$(grep -lx "release $k61" "$SRC"/kmod/records/*.rec | sed -n 1p || true)
[ -n "$rec" ] || fail "kmod/records has no record of $k61 to sign as the operator's"
say "upgrade: the record of $k61 signed as the operator's, then packages $version+upgrade1"
(cd "$out" && $KMEMCTL policy keygen op >/dev/null)
mount_in "$root"
install -D -m 0644 "$out/op.pem" "$root/etc/kmemctl/keys/op.pem"
mkdir -p "$root/etc/kmemctl/builds"
$KMEMCTL build sign -k "$out/op.key" -s ops -o "$root/etc/kmemctl/builds/$k61.bundle" "$rec"
echo "options kmemctl shipped_records=0" >"$root/etc/modprobe.d/kmemctl-test.conf"
old=$version
{
	printf 'kmemctl (%s+upgrade1) unstable; urgency=medium\n\n' "$old"
	printf '  * The same copies of kernel code (tests/deploy/debian.sh).\n\n'
	printf ' -- kmemctl tests <tests@kmemctl.invalid>  %s\n\n' "$(date -R)"
	cat "$out/src/debian/changelog"
} >"$out/changelog"
mv "$out/changelog" "$out/src/debian/changelog"
# the first build's tree, not cleaned: only the packages' version differs
packages "$out/src" -nc
[ "$version" = "$old+upgrade1" ] || fail "the upgrade's version is $version"
install_packages
for kver in $kvers; do
	[ "$(in_root modinfo -k "$kver" -F version kmemctl)" = "$version" ] ||
		fail "$kver: kmemctl.ko after the upgrade is $(in_root modinfo -k "$kver" -F version kmemctl)"
done
echo "ok: upgraded from $old to $version; DKMS rebuilt kmemctl.ko $version for $kvers"
unmount_root
disk
boot "$k61"
echo "ok: after the upgrade, the operator's record of $k61 still admits it"
echo "PASS in ${SECONDS}s"
