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
#   DEBIAN_RECORDED	optional; 1: boot a build kmod/records/ has a record
#			for. When the meta package's candidate has none (a
#			point release newer than the records), the newest
#			build of its family (series and flavour) that has one
#			and that apt can still download boots instead, said
#			with msg; none is an error. So a new point release
#			never turns make check red, and the conf's EXPECT_*
#			are always about a recorded build.
#
# Nothing is installed on the host: an image's hooks would build its
# initramfs (minutes of CPU), and Debian 6.12's headers depend on their
# image. `apt-get download` fetches the image, its headers and theirs (the
# -common tree and linux-kbuild) and `dpkg -x` unpacks them into
# $KERNEL_CACHE/<release>/, where modules build against
# usr/src/linux-headers-<release>, whose Makefile is made to include its
# -common tree from beside it rather than from /usr/src. `apt-get update`
# runs only when a package is not found.
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
	apt-cache show --no-all-versions "$1" 2>/dev/null | sed -n "s/^$2: //p" | sed -n 1p
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
		dep=$(echo "$show" | sed -n 's/^Depends: //p' | sed -n 1p | tr ',' '\n' |
			sed 's/^ *//; s/[ |].*//' | grep '^linux-image-' | sed -n 1p || true)
		[ -n "$dep" ] || break
		pkg=$dep
	done
	debian_pkg=$pkg
	debian_version=$(echo "$show" | sed -n 's/^Version: //p' | sed -n 1p)
	mkdir -p "$KERNEL_CACHE/.resolved"
	echo "$key $debian_pkg $debian_version" >"$saved.tmp" && mv "$saved.tmp" "$saved"
}

# debian_family RELEASE: its series and flavour, "6.1-cloud-amd64" of
# 6.1.0-57-cloud-amd64, "6.12-amd64" of 6.12.118+deb12-amd64.
debian_family() {
	[[ "$1" =~ ^([0-9]+\.[0-9]+)\.[0-9]+(-[0-9]+|\+deb[0-9]+)-([a-z0-9-]+)$ ]] || return 1
	echo "${BASH_REMATCH[1]}-${BASH_REMATCH[3]}"
}

# debian_archive_builds: every Debian 12 amd64 kernel build apt knows, one
# "family version package release" line each, by family and then version,
# oldest first. A build is one release: the signed image where apt has it,
# else the -unsigned one, which holds the same kernel.
debian_archive_builds() {
	local names pkg version release family

	names=$(apt-cache pkgnames linux-image-6. |
		grep -E '^linux-image-(6\.1\.0-[0-9]+|6\.12\.[0-9]+\+deb12)-(cloud-|rt-)?amd64(-unsigned)?$' |
		LC_ALL=C sort || true)
	[ -n "$names" ] || return 0
	# shellcheck disable=SC2086 # a list
	apt-cache show --no-all-versions $names 2>/dev/null |
		awk '/^Package: / { p = $2 } /^Version: / { print p, $2 }' |
		while read -r pkg version; do
			release=${pkg#linux-image-}
			release=${release%-unsigned}
			family=$(debian_family "$release") || continue
			echo "$family $version $pkg $release"
		done | sort -k4,4 -k3,3 | awk '$4 != last { print } { last = $4 }' | sort -k1,1 -k2,2V
}

# debian_has_record RELEASE: kmod/records/ has a record of a build of
# RELEASE (one build a release in Debian's archive).
debian_has_record() {
	grep -qx "release $1" "$SRC"/kmod/records/*.rec 2>/dev/null
}

# debian_recorded: DEBIAN_RECORDED=1 for the build debian_resolve found:
# when it has no record, debian_pkg and debian_version become the newest
# build of its family that has one.
debian_recorded() {
	local release=${debian_pkg#linux-image-} family fam version pkg rel best=

	release=${release%-unsigned}
	debian_has_record "$release" && return 0
	family=$(debian_family "$release") ||
		die "DEBIAN_RECORDED: '$release' is no Debian 12 amd64 build"
	while read -r fam version pkg rel; do
		if [ "$fam" = "$family" ] && debian_has_record "$rel"; then
			best="$pkg $version"
		fi
	done < <(debian_archive_builds)
	[ -n "$best" ] ||
		die "DEBIAN_RECORDED: $debian_pkg $debian_version has no record in kmod/records/, and apt can download no build of $family that has one: make one (scripts/kmod-records)"
	msg "DEBIAN_RECORDED: $debian_pkg $debian_version has no record in kmod/records/; booting $best, the newest build of $family with one"
	read -r debian_pkg debian_version <<<"$best"
}

debian_download() {
	local pkg=$1 version=$2 dir=$3
	local opts=()

	[ "$(id -u)" != 0 ] || opts=(-o APT::Sandbox::User=root)
	(cd "$dir" && "$SRC/scripts/apt-get" -qq "${opts[@]}" download "$pkg=$version") && return 0
	debian_apt_update || return 1
	(cd "$dir" && "$SRC/scripts/apt-get" -qq "${opts[@]}" download "$pkg=$version")
}

# debian_header_deps HEADERS VERSION: "package version" for HEADERS and
# each linux-headers-* and linux-kbuild-* package it depends on, at the
# version it names, or the candidate's.
debian_header_deps() {
	local dep version

	echo "$1 $2"
	apt-cache show "$1=$2" 2>/dev/null | sed -n 's/^Depends: //p' | sed -n 1p | tr ',' '\n' |
		sed -n 's/^ *\(linux-\(headers\|kbuild\)-[^ |]*\)\( (= \([^)]*\))\)\{0,1\}.*/\1 \4/p' |
		while read -r dep version; do
			echo "$dep ${version:-$(debian_field "$dep" Version)}"
		done
}

# debian_fetch PKG VERSION HEADERS HVERSION DIR: unpack the image PKG and
# the headers HEADERS with what they need into DIR, once per version.
debian_fetch() {
	local pkg=$1 version=$2 headers=$3 hversion=$4 dir=$5 want tmp p v kdir common

	want="$pkg $version $headers $hversion"
	[ "$(cat "$dir/.package" 2>/dev/null)" = "$want" ] && return 0
	mkdir -p "$KERNEL_CACHE"
	exec 9>"$KERNEL_CACHE/.fetch.lock"
	flock 9
	if [ "$(cat "$dir/.package" 2>/dev/null)" != "$want" ]; then
		tmp=$(mktemp -d "$KERNEL_CACHE/.fetch.XXXXXX")
		while read -r p v; do
			msg "downloading $p $v into $dir"
			debian_download "$p" "$v" "$tmp" || die "apt-get download '$p=$v' failed"
		done < <(echo "$pkg $version"; debian_header_deps "$headers" "$hversion")
		for p in "$tmp"/*.deb; do
			dpkg -x "$p" "$tmp/root" || die "dpkg -x of $p failed"
		done
		# What the package's postinst would do, for modprobe in the guest.
		/sbin/depmod -b "$tmp/root" "${dir##*/}" || die "depmod for '$pkg' failed"
		kdir=$tmp/root/usr/src/$headers
		common=$(sed -n 's|^include /usr/src/\([^/]*\)/Makefile$|\1|p' "$kdir/Makefile" 2>/dev/null)
		if [ -z "$common" ] || [ ! -f "$tmp/root/usr/src/$common/Makefile" ]; then
			die "$headers: no Makefile including a -common tree that was unpacked"
		fi
		# shellcheck disable=SC2016 # make's variables
		printf 'include $(dir $(lastword $(MAKEFILE_LIST)))../%s/Makefile\n' "$common" >"$kdir/Makefile"
		echo "$want" >"$tmp/root/.package"
		rm -rf "$dir"
		mv "$tmp/root" "$dir"
		rm -rf "$tmp"
	fi
	exec 9>&-
}

kernel_source_debian() {
	local debian_pkg debian_version pkg version headers hversion p='' v='' h=''

	[ -n "${DEBIAN_IMAGE:-}" ] || die "$KERNEL_CONF: DEBIAN_IMAGE is not set"
	debian_resolve "$DEBIAN_IMAGE"
	[ "${DEBIAN_RECORDED:-0}" != 1 ] || debian_recorded
	pkg=$debian_pkg
	version=$debian_version
	KERNEL_RELEASE=${pkg#linux-image-}
	KERNEL_RELEASE=${KERNEL_RELEASE%-unsigned}
	KERNEL_MODROOT=$KERNEL_CACHE/$KERNEL_RELEASE
	KERNEL_IMAGE=$KERNEL_MODROOT/boot/vmlinuz-$KERNEL_RELEASE
	headers=${DEBIAN_HEADERS:-linux-headers-$KERNEL_RELEASE}
	# apt-cache costs a second or more of CPU: a kernel unpacked before
	# names its headers' version, and only a new one asks apt.
	read -r p v h hversion _ 2>/dev/null <"$KERNEL_MODROOT/.package" || true
	if [ "$p $v $h" != "$pkg $version $headers" ] || [ -z "$hversion" ]; then
		debian_require_known "$headers"
		hversion=$(debian_field "$headers" Version)
		[ "$hversion" = "$version" ] ||
			msg "warning: $headers is $hversion, the image is $version"
	fi
	debian_fetch "$pkg" "$version" "$headers" "$hversion" "$KERNEL_MODROOT"
	[ -f "$KERNEL_IMAGE" ] || die "$pkg has no boot/vmlinuz-$KERNEL_RELEASE"
	KERNEL_KDIR=$KERNEL_MODROOT/usr/src/$headers
	[ -f "$KERNEL_KDIR/Makefile" ] || die "$headers did not provide $KERNEL_KDIR"
	# shellcheck disable=SC2034 # read by tests/vm/run
	KERNEL_DESC="$pkg $version"
}
