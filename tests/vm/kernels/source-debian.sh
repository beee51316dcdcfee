# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0
#
# KERNEL_SOURCE=debian: a kernel from Debian's archive. Conf variables:
#
#   DEBIAN_IMAGE	the image package: a meta package (linux-image-amd64,
#			linux-image-6.12-amd64), followed through its
#			linux-image-* dependency at the candidate version, or
#			a concrete linux-image-<release>[-unsigned]
#   DEBIAN_HEADERS	optional; default linux-headers-<release>
#
# The image is never installed on the host (that would run initramfs and
# grub hooks): `apt-get download` fetches it and `dpkg -x` unpacks it into
# $KERNEL_CACHE/<release>/. The headers are installed with apt-get, since
# their Makefiles use absolute /usr/src paths. `apt-get update` runs only
# when a package is not found.
#
# Sourced by tests/vm/run, which provides msg, die, need_root and
# KERNEL_CACHE, and reads back what every kernel_source_<type> sets:
# KERNEL_RELEASE, KERNEL_IMAGE, KERNEL_KDIR, KERNEL_MODROOT (a tree with
# lib/modules/<release>/) and KERNEL_DESC.

debian_apt_updated=0

debian_apt_update() {
	[ "$debian_apt_updated" = 0 ] || return 1
	need_root "apt-get update"
	msg "apt-get update"
	"$SRC/scripts/apt-get" update -qq || die "apt-get update failed"
	debian_apt_updated=1
}

# debian_field PKG FIELD: FIELD of PKG's candidate version.
debian_field() {
	apt-cache show --no-all-versions "$1" 2>/dev/null | sed -n "s/^$2: //p" | head -n 1
}

debian_require_known() {
	[ -n "$(debian_field "$1" Package)" ] && return 0
	debian_apt_update || true
	[ -n "$(debian_field "$1" Package)" ] || die "package '$1' is not known to apt"
}

# debian_resolve PKG: follow meta packages down to the concrete image,
# into debian_pkg and its candidate version into debian_version. apt-cache
# takes a second a question here, and make check boots debian-6.1 a dozen
# times: the answer is kept in $KERNEL_CACHE/.resolved/PKG for as long as
# apt's lists and dpkg's status are unchanged.
debian_resolve() {
	local pkg=$1 dep key k1 k2 saved=$KERNEL_CACHE/.resolved/$1 show

	key="$(stat -c %Y /var/lib/apt/lists /var/lib/dpkg/status 2>/dev/null | xargs)"
	if [ -f "$saved" ] && read -r k1 k2 debian_pkg debian_version <"$saved" &&
		[ "$k1 $k2" = "$key" ] && [ -n "$debian_version" ]; then
		return 0
	fi
	for _ in 1 2 3 4 5; do
		show=$(apt-cache show --no-all-versions "$pkg" 2>/dev/null)
		if [ -z "$show" ]; then
			debian_apt_update || true
			show=$(apt-cache show --no-all-versions "$pkg" 2>/dev/null)
			[ -n "$show" ] || die "package '$pkg' is not known to apt"
		fi
		dep=$(echo "$show" | sed -n 's/^Depends: //p' | head -n 1 | tr ',' '\n' |
			sed 's/^ *//; s/[ |].*//' | grep '^linux-image-' | head -n 1 || true)
		[ -n "$dep" ] || break
		pkg=$dep
	done
	debian_pkg=$pkg
	debian_version=$(echo "$show" | sed -n 's/^Version: //p' | head -n 1)
	mkdir -p "$KERNEL_CACHE/.resolved"
	echo "$key $debian_pkg $debian_version" >"$saved.tmp" && mv "$saved.tmp" "$saved"
}

debian_download() {
	local pkg=$1 version=$2 dir=$3
	local opts=()

	[ "$(id -u)" != 0 ] || opts=(-o APT::Sandbox::User=root)
	(cd "$dir" && "$SRC/scripts/apt-get" -qq "${opts[@]}" download "$pkg=$version") && return 0
	debian_apt_update || return 1
	(cd "$dir" && "$SRC/scripts/apt-get" -qq "${opts[@]}" download "$pkg=$version")
}

# debian_fetch_image PKG VERSION DIR: unpack PKG into DIR, once per version.
debian_fetch_image() {
	local pkg=$1 version=$2 dir=$3 tmp

	[ "$(cat "$dir/.package" 2>/dev/null)" = "$pkg $version" ] && return 0
	mkdir -p "$KERNEL_CACHE"
	exec 9>"$KERNEL_CACHE/.fetch.lock"
	flock 9
	if [ "$(cat "$dir/.package" 2>/dev/null)" != "$pkg $version" ]; then
		msg "downloading $pkg $version into $dir"
		tmp=$(mktemp -d "$KERNEL_CACHE/.fetch.XXXXXX")
		debian_download "$pkg" "$version" "$tmp" || die "apt-get download '$pkg=$version' failed"
		dpkg -x "$tmp"/*.deb "$tmp/root" || die "dpkg -x of '$pkg' failed"
		# What the package's postinst would do, for modprobe in the guest.
		/sbin/depmod -b "$tmp/root" "${dir##*/}" || die "depmod for '$pkg' failed"
		echo "$pkg $version" >"$tmp/root/.package"
		rm -rf "$dir"
		mv "$tmp/root" "$dir"
		rm -rf "$tmp"
	fi
	exec 9>&-
}

debian_install_headers() {
	local pkg=$1 status

	status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
	case "$status" in
	*" installed") return 0 ;;
	esac
	need_root "apt-get install $pkg"
	debian_require_known "$pkg"
	msg "installing $pkg"
	DEBIAN_FRONTEND=noninteractive "$SRC/scripts/apt-get" install -y -qq --no-install-recommends "$pkg" >/dev/null ||
		die "apt-get install '$pkg' failed"
}

kernel_source_debian() {
	local debian_pkg debian_version pkg version headers hversion

	[ -n "${DEBIAN_IMAGE:-}" ] || die "$KERNEL_CONF: DEBIAN_IMAGE is not set"
	debian_resolve "$DEBIAN_IMAGE"
	pkg=$debian_pkg
	version=$debian_version
	KERNEL_RELEASE=${pkg#linux-image-}
	KERNEL_RELEASE=${KERNEL_RELEASE%-unsigned}
	KERNEL_MODROOT=$KERNEL_CACHE/$KERNEL_RELEASE
	KERNEL_IMAGE=$KERNEL_MODROOT/boot/vmlinuz-$KERNEL_RELEASE
	debian_fetch_image "$pkg" "$version" "$KERNEL_MODROOT"
	[ -f "$KERNEL_IMAGE" ] || die "$pkg has no boot/vmlinuz-$KERNEL_RELEASE"

	headers=${DEBIAN_HEADERS:-linux-headers-$KERNEL_RELEASE}
	debian_install_headers "$headers"
	KERNEL_KDIR=/usr/src/linux-headers-$KERNEL_RELEASE
	[ -f "$KERNEL_KDIR/Makefile" ] || die "$headers did not provide $KERNEL_KDIR"
	hversion=$(dpkg-query -W -f='${Version}' "$headers")
	[ "$hversion" = "$version" ] ||
		msg "warning: $headers is $hversion, the image is $version"
	# shellcheck disable=SC2034 # read by tests/vm/run
	KERNEL_DESC="$pkg $version"
}
