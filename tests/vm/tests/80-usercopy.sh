#!/bin/sh
# usercopy-fastpath: mode round trips, and a check exactly as strict as the
# kernel's. Copies that run past their vmap area, or come from a freed one,
# are caught with the kernel's own report whether the fast path is on or
# off; copies that stay in their area succeed; the usercopy-vmalloc probe
# (find_vmap_area() calls from the check) shows which copies skip the lookup.
. /tests/lib.sh

M=/sys/kernel/kmemctl/mitigations/usercopy-fastpath
P=/sys/kernel/kmemctl/probes/usercopy-vmalloc
U=/sys/module/kmt_usercopy/parameters
PAGE=4096

load_mod kmemctl
case "$(cat $M/state)" in
off) ;;
native | unsupported) skip "usercopy-fastpath: $(cat $M/reason)" ;;
*) die "usercopy-fastpath state at load: $(cat $M/state)" ;;
esac
load_mod kmt_usercopy pages=2
write_ok $P/enabled 1

# lookups SIZE OFFSET COPIES: find_vmap_area() calls for COPIES copies.
lookups() {
	echo "$1" >$U/size
	echo "$2" >$U/offset
	echo "$3" >$U/copies
	write_ok $P/reset 1
	ioloop -n 1 -b "$1" /dev/kmt_usercopy >/dev/null
	cat $P/count
}

# bad_copy OFFSET SIZE EXPECT [FROM]: one copy of SIZE bytes from OFFSET of
# the 2-page buffer, whose vmap area is 3 pages (or of FROM: slab, text).
# EXPECT is the usercopy report the kernel must print (the reading task
# then dies), or "EFAULT".
bad_copy() {
	echo "${4:-vmalloc}" >$U/bad_from
	echo "$1" >$U/bad_offset
	echo "$2" >$U/bad_size
	dmesg_mark
	expect_splat_begin
	if ioloop -n 1 -b "$2" /dev/kmt_usercopy >/dev/null 2>/tmp/bad.err; then
		die "a $2-byte copy from offset $1 succeeded"
	fi
	expect_splat_end
	echo 0 >$U/bad_size
	if [ "$3" = EFAULT ]; then
		grep -q "Bad address" /tmp/bad.err || die "copy from $1: $(cat /tmp/bad.err)"
		dmesg_since_mark | grep -q "usercopy: Kernel memory" && die "copy from $1 was reported"
	else
		dmesg_since_mark | grep -qF "usercopy: Kernel memory exposure attempt detected from $3" ||
			die "copy of $2 from $1: no '$3' report"
	fi
	log "$2 bytes from offset $1: $3"
}

freed_copy() {
	echo 1 >$U/freed
	echo 256 >$U/size
	echo 512 >$U/offset
	dmesg_mark
	expect_splat_begin
	ioloop -n 1 -b 256 /dev/kmt_usercopy >/dev/null 2>&1 && die "a copy from freed memory succeeded"
	expect_splat_end
	echo 0 >$U/freed
	dmesg_since_mark |
		grep -qF "usercopy: Kernel memory exposure attempt detected from vmalloc 'no area' (offset 0, size 256)!" ||
		die "copy from freed memory: no 'no area' report"
	log "256 bytes from a freed area: no area"
}

# Every copy the check must refuse, and one it must let through to fault.
strictness() {
	bad_copy $((2 * PAGE - 128)) $((PAGE + 256)) "vmalloc (offset 8064, size 4352)!"
	bad_copy $((3 * PAGE - 8)) 16 "vmalloc (offset 12280, size 16)!"
	bad_copy $((3 * PAGE - 1)) 2 "vmalloc (offset 12287, size 2)!"
	bad_copy $((2 * PAGE + 64)) 64 EFAULT
	bad_copy 0 128 "SLUB object 'kmalloc-64' (offset 0, size 128)!" slab
	bad_copy 16 16 "kernel text (offset" text
	freed_copy
}

log "fast path off"
off_small=$(lookups 256 -1 1000)
assert_ge "$off_small" 1000 "lookups for 1000 in-page copies, fast path off"
strictness

write_ok $M/mode on
assert_eq "$(cat $M/state)" on "state after mode on"
assert_eq "$(cat $M/reason)" "on: enacted" "reason after mode on"
rmmod kmemctl 2>/dev/null && die "rmmod succeeded with usercopy-fastpath on"

log "fast path on"
on_small=$(lookups 256 -1 1000)
log "in-page copies: $off_small lookups off, $on_small on"
assert_ge 10 "$on_small" "lookups for 1000 in-page copies, fast path on"
assert_ge 5 "$(lookups 64 $((PAGE - 64)) 500)" "lookups for copies ending at a page end"
assert_ge 5 "$(lookups 256 $((2 * PAGE - 256)) 500)" "lookups for copies ending at the buffer end"
assert_ge "$(lookups 6000 100 200)" 200 "lookups for page-crossing copies"
assert_ge "$(lookups 2 $((PAGE - 1)) 200)" 200 "lookups for 2-byte page-crossing copies"
strictness

log "longest timed call: $(sed -n 's/^call_max_us //p' $M/stats) us of running time"
write_ok $M/mode off
assert_eq "$(cat $M/state)" off "state after mode off"
assert_ge "$(lookups 256 -1 1000)" 1000 "lookups for in-page copies after mode off"
write_ok $M/mode on
assert_ge 10 "$(lookups 256 -1 1000)" "lookups for in-page copies, on again"
write_ok $M/mode off
grep -q "enables 2" $M/stats || die "stats: $(cat $M/stats)"

unload_mod kmt_usercopy
unload_mod kmemctl
check_dmesg_clean
