# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0
#
# KERNEL_SOURCE=kasan: a KASAN kernel built from Debian's linux-source-6.1
# or linux-source-6.12. Conf variables:
#
#   KASAN_SOURCE	the series, 6.1 (default) or 6.12: Debian's
#			linux-source-<series>, installed when missing
#   KASAN_FRAGMENT	a Kconfig fragment in kernels/, merged onto
#			`make tinyconfig`
#   KASAN_REVERT	optional: a patch (-p1) in kernels/ applied to the
#			source before the build, such as upstream fixes
#			reverted; it is part of the build's key
#   KASAN_PATCH		optional: a patch (-p1) in kernels/ applied to a copy
#			of the built tree of the same source, fragment and
#			revert, which is then rebuilt incrementally: a
#			variant of a series costs a few minutes, not a build
#   KASAN_PATCH_REVERSE	optional: 1 to apply KASAN_PATCH reversed (-R), as
#			kasan-6.12 undoes kasan-6.12-reverted's revert
#
# The build lives in $KERNEL_CACHE/kasan-<source version>-<key>/, where the
# key hashes the fragment, the revert and kasan_recipe: a new source package, a changed
# fragment or a changed recipe gives a new directory, and an unchanged one
# is reused as is; unfinished builds are removed. A patched build lives in
# $KERNEL_CACHE/kasan-<source version>-<key>-<patch key>/, the patch key
# hashing the patch and kasan_patch_recipe. The tree stays, so modules build against it with
# `make -C tree M=...`. Every option of the fragment must survive
# olddefconfig, or the build stops and names the ones that did not.
#
# Sourced by tests/vm/run, which provides msg, die, need_root and
# KERNEL_CACHE, and reads back KERNEL_RELEASE, KERNEL_IMAGE, KERNEL_KDIR,
# KERNEL_MODROOT and KERNEL_DESC.

# Bump when kasan_build changes what it builds.
kasan_recipe=3
# Bump when kasan_build_patched does.
kasan_patch_recipe=2

# kasan_check_fragment CONFIG FRAGMENT: every CONFIG_X=y|m of FRAGMENT is in
# CONFIG, and every "# CONFIG_X is not set" is not set there.
kasan_check_fragment() {
	local lost

	lost=$( (grep -E '^CONFIG_[A-Z0-9_]+=[ym0-9]' "$2" | while read -r line; do
		grep -qxF "$line" "$1" || echo "${line%%=*}"
	done
	sed -n 's/^# \(CONFIG_[A-Z0-9_]*\) is not set$/\1/p' "$2" | while read -r opt; do
		! grep -q "^$opt=" "$1" || echo "$opt (set)"
	done) | tr '\n' ' ')
	[ -z "$lost" ] || die "the kernel config dropped: $lost"
}

# kasan_reproducible TARBALL: the same kernel, build id included, from the
# same source, fragment and compiler on any machine, so that the build
# records kmod/records/ ships for it hold there too: the time of the build
# (uname -v, and the built-in initramfs's mtimes) is the source tarball's,
# which dpkg keeps from the package, and the user and host are fixed. The
# tree's path is the same wherever $KERNEL_CACHE is.
kasan_reproducible() {
	KBUILD_BUILD_TIMESTAMP=$(date -u -r "$1" '+%Y-%m-%d %H:%M:%S UTC')
	export KBUILD_BUILD_TIMESTAMP KBUILD_BUILD_USER=kmemctl KBUILD_BUILD_HOST=kmemctl
}

# kasan_build DIR SERIES FRAGMENT [REVERT]: built in place, since Kbuild
# records absolute paths; DIR/.built marks a finished build, and anything
# else is redone.
kasan_build() {
	local dir=$1 series=$2 fragment=$3 revert=${4:-} tree=$1/tree log=$1/build.log
	local tarball=/usr/src/linux-source-$2.tar.xz

	msg "building a KASAN kernel in $dir (10 to 20 minutes on 2 cores)"
	rm -rf "$dir"
	mkdir -p "$dir"
	tar -xJf "$tarball" -C "$dir" || die "unpacking $tarball failed"
	mv "$dir/linux-source-$series" "$tree"
	if [ -n "$revert" ]; then
		patch -d "$tree" -p1 <"$revert" >"$log" 2>&1 ||
			die "applying $revert failed; log: $log"
	fi
	make -s -C "$tree" tinyconfig >>"$log" 2>&1 || die "make tinyconfig failed; log: $log"
	"$tree/scripts/kconfig/merge_config.sh" -m -O "$tree" "$tree/.config" "$fragment" \
		>>"$log" 2>&1 || die "merging $fragment failed; log: $log"
	make -s -C "$tree" olddefconfig >>"$log" 2>&1 || die "make olddefconfig failed; log: $log"
	kasan_check_fragment "$tree/.config" "$fragment"
	nice -n 19 make -C "$tree" -j"$(nproc)" bzImage modules >>"$log" 2>&1 ||
		die "kernel build failed; log: $log"
	make -s -C "$tree" INSTALL_MOD_PATH="$dir/modroot" modules_install >>"$log" 2>&1 ||
		die "modules_install failed; log: $log"
	touch "$dir/.built"
}

# kasan_build_patched BASE DIR PATCH [-R]: BASE's tree copied into DIR,
# patched and rebuilt. The copy keeps BASE's timestamps, and is built where
# BASE's tree is, bind-mounted over it in a mount namespace of its own: the
# build recorded absolute paths (tools/objtool's, and every object depends
# on objtool), so anywhere else it would rebuild everything. There it
# rebuilds what the patch touches and relinks.
kasan_build_patched() {
	local base=$1 dir=$2 patch=$3 reverse=${4:-} tree=$2/tree log=$2/build.log

	need_root "building a patched KASAN kernel (a mount namespace)"
	msg "building a KASAN kernel with $(basename "$patch")${reverse:+ reversed} in $dir (a few minutes)"
	rm -rf "$dir"
	mkdir -p "$dir"
	cp -a "$base/tree" "$tree" || die "copying $base/tree failed"
	patch -d "$tree" -p1 $reverse <"$patch" >"$log" 2>&1 || die "applying $patch failed; log: $log"
	# shellcheck disable=SC2016 # expanded by the inner sh
	unshare -m sh -c 'mount --bind "$1" "$2" && nice -n 19 make -C "$2" -j"$3" bzImage modules &&
		make -s -C "$2" INSTALL_MOD_PATH="$4" modules_install' \
		sh "$tree" "$base/tree" "$(nproc)" "$dir/modroot" >>"$log" 2>&1 ||
		die "kernel build failed; log: $log"
	touch "$dir/.built"
}

# kasan_cached DIR CMD...: DIR holds a finished build, made by CMD if not.
# One kernel builds at a time on this machine, under the cache's build lock:
# two builds at -j$(nproc) on the same cores only slow each other. Waiting
# for the lock, DIR finished by its holder (make check's kernel lane, or
# another test) ends the wait. Unfinished builds of any kind are removed
# before a build.
kasan_cached() {
	local dir=$1 old waited=0

	shift
	[ -f "$dir/.built" ] && return 0
	mkdir -p "$KERNEL_CACHE"
	exec 9>"$KERNEL_CACHE/.build.lock"
	until flock -n 9; do
		if [ -f "$dir/.built" ]; then
			exec 9>&-
			msg "$(basename "$dir"): built by another build, after ${waited}s"
			return 0
		fi
		[ "$waited" != 0 ] || msg "waiting for the kernel build running in $KERNEL_CACHE"
		sleep 2
		waited=$((waited + 2))
	done
	for old in "$KERNEL_CACHE"/kasan-*; do
		[ -d "$old" ] && [ ! -f "$old/.built" ] && rm -rf "$old"
	done
	[ -f "$dir/.built" ] || "$@"
	exec 9>&-
}

kernel_source_kasan() {
	local series=${KASAN_SOURCE:-6.1} fragment revert='' version key dir patch pkey reverse

	[ -n "${KASAN_FRAGMENT:-}" ] || die "$KERNEL_CONF: KASAN_FRAGMENT is not set"
	fragment=$VM/kernels/$KASAN_FRAGMENT
	[ -f "$fragment" ] || die "$KERNEL_CONF: no fragment $fragment"
	if [ -n "${KASAN_REVERT:-}" ]; then
		revert=$VM/kernels/$KASAN_REVERT
		[ -f "$revert" ] || die "$KERNEL_CONF: no patch $revert"
	fi
	if [ ! -f "/usr/src/linux-source-$series.tar.xz" ]; then
		need_root "apt-get install linux-source-$series"
		DEBIAN_FRONTEND=noninteractive "$SRC/scripts/apt-get" install -y -qq --no-install-recommends \
			"linux-source-$series" >/dev/null || die "apt-get install linux-source-$series failed"
	fi
	version=$(dpkg-query -W -f='${Version}' "linux-source-$series")
	kasan_reproducible "/usr/src/linux-source-$series.tar.xz"
	key=$( (cat "$fragment"; [ -z "$revert" ] || cat "$revert"; echo "recipe $kasan_recipe") |
		sha256sum | cut -c1-12)
	dir=$KERNEL_CACHE/kasan-$version-$key
	kasan_cached "$dir" kasan_build "$dir" "$series" "$fragment" "$revert"
	# shellcheck disable=SC2034 # read by tests/vm/run
	KERNEL_DESC="KASAN, linux-source-$series $version, $KASAN_FRAGMENT ($key)"
	[ -z "$revert" ] || KERNEL_DESC="$KERNEL_DESC, $KASAN_REVERT"
	KERNEL_MODROOT=$dir/modroot
	if [ -n "${KASAN_PATCH:-}" ]; then
		patch=$VM/kernels/$KASAN_PATCH
		[ -f "$patch" ] || die "$KERNEL_CONF: no patch $patch"
		reverse=
		[ "${KASAN_PATCH_REVERSE:-0}" = 0 ] || reverse=-R
		pkey=$( (cat "$patch"; echo "recipe $kasan_patch_recipe $reverse") | sha256sum | cut -c1-12)
		kasan_cached "$dir-$pkey" kasan_build_patched "$dir" "$dir-$pkey" "$patch" $reverse
		dir=$dir-$pkey
		KERNEL_DESC="$KERNEL_DESC with $KASAN_PATCH${reverse:+ reversed} ($pkey)"
		KERNEL_MODROOT=$dir/modroot
	fi
	KERNEL_KDIR=$dir/tree
	KERNEL_IMAGE=$KERNEL_KDIR/arch/x86/boot/bzImage
	KERNEL_RELEASE=$(make -s -C "$KERNEL_KDIR" kernelrelease)
}
