# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0
#
# KERNEL_SOURCE=kasan: a KASAN kernel built from Debian's linux-source-6.1.
# Conf variables:
#
#   KASAN_FRAGMENT	a Kconfig fragment in kernels/, merged onto
#			`make tinyconfig`
#
# The build lives in $KERNEL_CACHE/kasan-<source version>-<key>/, where the
# key hashes the fragment and kasan_recipe: a new source package, a changed
# fragment or a changed recipe gives a new directory, and an unchanged one
# is reused as is; unfinished builds are removed. The tree stays, so modules build against it with
# `make -C tree M=...`. Every option of the fragment must survive
# olddefconfig, or the build stops and names the ones that did not.
#
# Sourced by tests/vm/run, which provides msg, die, need_root and
# KERNEL_CACHE, and reads back KERNEL_RELEASE, KERNEL_IMAGE, KERNEL_KDIR,
# KERNEL_MODROOT and KERNEL_DESC.

kasan_tarball=/usr/src/linux-source-6.1.tar.xz
# Bump when kasan_build changes what it builds.
kasan_recipe=1

# kasan_check_fragment CONFIG FRAGMENT: every CONFIG_X=y|m of FRAGMENT is in CONFIG.
kasan_check_fragment() {
	local lost

	lost=$(grep -E '^CONFIG_[A-Z0-9_]+=[ym0-9]' "$2" | while read -r line; do
		grep -qxF "$line" "$1" || echo "${line%%=*}"
	done)
	[ -z "$lost" ] || die "the kernel config dropped: $(echo "$lost" | tr '\n' ' ')"
}

# kasan_build DIR FRAGMENT: built in place, since Kbuild records absolute
# paths; DIR/.built marks a finished build, and anything else is redone.
kasan_build() {
	local dir=$1 fragment=$2 tree=$1/tree log=$1/build.log

	msg "building a KASAN kernel in $dir (about 10 minutes on 2 cores)"
	rm -rf "$dir"
	mkdir -p "$dir"
	tar -xJf "$kasan_tarball" -C "$dir" || die "unpacking $kasan_tarball failed"
	mv "$dir/linux-source-6.1" "$tree"
	make -s -C "$tree" tinyconfig >"$log" 2>&1 || die "make tinyconfig failed; log: $log"
	"$tree/scripts/kconfig/merge_config.sh" -m -O "$tree" "$tree/.config" "$fragment" \
		>>"$log" 2>&1 || die "merging $fragment failed; log: $log"
	make -s -C "$tree" olddefconfig >>"$log" 2>&1 || die "make olddefconfig failed; log: $log"
	kasan_check_fragment "$tree/.config" "$fragment"
	make -C "$tree" -j"$(nproc)" bzImage modules >>"$log" 2>&1 ||
		die "kernel build failed; log: $log"
	make -s -C "$tree" INSTALL_MOD_PATH="$dir/modroot" modules_install >>"$log" 2>&1 ||
		die "modules_install failed; log: $log"
	touch "$dir/.built"
}

kernel_source_kasan() {
	local fragment version key dir old

	[ -n "${KASAN_FRAGMENT:-}" ] || die "$KERNEL_CONF: KASAN_FRAGMENT is not set"
	fragment=$VM/kernels/$KASAN_FRAGMENT
	[ -f "$fragment" ] || die "$KERNEL_CONF: no fragment $fragment"
	if [ ! -f "$kasan_tarball" ]; then
		need_root "apt-get install linux-source-6.1"
		DEBIAN_FRONTEND=noninteractive "$SRC/scripts/apt-get" install -y -qq --no-install-recommends \
			linux-source-6.1 >/dev/null || die "apt-get install linux-source-6.1 failed"
	fi
	version=$(dpkg-query -W -f='${Version}' linux-source-6.1)
	key=$( (cat "$fragment"; echo "recipe $kasan_recipe") | sha256sum | cut -c1-12)
	dir=$KERNEL_CACHE/kasan-$version-$key
	if [ ! -f "$dir/.built" ]; then
		mkdir -p "$KERNEL_CACHE"
		exec 9>"$KERNEL_CACHE/.lock"
		flock 9
		for old in "$KERNEL_CACHE"/kasan-*; do
			[ -d "$old" ] && [ ! -f "$old/.built" ] && rm -rf "$old"
		done
		[ -f "$dir/.built" ] || kasan_build "$dir" "$fragment"
		exec 9>&-
	fi
	KERNEL_KDIR=$dir/tree
	KERNEL_IMAGE=$KERNEL_KDIR/arch/x86/boot/bzImage
	KERNEL_RELEASE=$(make -s -C "$KERNEL_KDIR" kernelrelease)
	KERNEL_MODROOT=$dir/modroot
	# shellcheck disable=SC2034 # read by tests/vm/run
	KERNEL_DESC="KASAN, linux-source-6.1 $version, $KASAN_FRAGMENT ($key)"
}
