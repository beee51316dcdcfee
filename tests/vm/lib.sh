# SPDX-License-Identifier: GPL-2.0
#
# Helpers for the tests that tests/vm/run boots in a QEMU guest, in the
# style of tools/testing/selftests/livepatch/functions.sh. busybox sh.
# A test starts with
#
#	. /tests/lib.sh
#
# which turns on `set -eu` and loads /etc/kmemctl-test.env (KMEMCTL_ABI,
# KMEMCTL_VERSION, KMEMCTL_KERNEL, KMEMCTL_KERNEL_RELEASE and the kernel
# conf's EXPECT_* variables). Exit status: 0 pass, 4 skip, anything else
# fail. Tests poll with wait_for, never with bare sleeps.
#
# dmesg transcripts: /init writes "kmemctl-vm: begin <test>" to /dev/kmsg
# before each test, which is the default mark; dmesg_mark sets a new one.
# A test that provokes a splat on purpose brackets it with
# expect_splat_begin / expect_splat_end; check_dmesg_clean and the runner
# then ignore the splat lines in between.

set -eu

# shellcheck source=/dev/null
[ -r /etc/kmemctl-test.env ] && . /etc/kmemctl-test.env

# Kernel log lines that fail a test; tests/vm/run reads this same line. A
# WARN() or lockdep splat starts its line with "WARNING:"; boot notices
# such as "RETBleed: WARNING: ..." on some CPU models do not.
KMEMCTL_SPLAT_RE='BUG:|Oops|^WARNING:|Call Trace|general protection|kernel BUG|UBSAN:|KASAN:|unreferenced object|blocked for more than|rcu.*stall'

KMEMCTL_MODDIR=/lib/kmemctl

_kmemctl_mark="kmemctl-vm: begin ${KMEMCTL_TEST_FILE:-}"
_kmemctl_marks=0

# The guest's uptime on each line: where a slow or stuck test spent its time.
log() {
	local up _

	read -r up _ </proc/uptime
	echo "${KMEMCTL_TEST:-test}: [$up] $*"
}

die() {
	echo "${KMEMCTL_TEST:-test}: FAIL: $*" >&2
	exit 1
}

skip() {
	echo "${KMEMCTL_TEST:-test}: SKIP: $*"
	exit 4
}

_kmsg() {
	echo "$*" >/dev/kmsg
}

# dmesg without timestamps.
_dmesg() {
	dmesg | sed 's/^\[ *[0-9.]*\] //'
}

dmesg_tail() {
	_dmesg | tail -n "${1:-20}"
}

# load_mod NAME [PARAM=VALUE...]: insmod /lib/kmemctl/NAME.ko, or
# modprobe NAME for a kernel module the conf's KERNEL_MODULES names. After
# kmemctl.ko, the kernel's patch sites are written to it, as the agent
# does on a host, unless KMEMCTL_NO_SITES=1.
load_mod() {
	local name=$1 cmd
	shift
	if [ -e "$KMEMCTL_MODDIR/$name.ko" ]; then
		cmd="insmod $KMEMCTL_MODDIR/$name.ko"
	elif [ -e "/lib/modules/$(uname -r)/modules.dep" ]; then
		cmd="modprobe $name"
	else
		die "module '$name' is not in $KMEMCTL_MODDIR"
	fi
	log "load $name${*:+ $*}"
	# shellcheck disable=SC2086 # $cmd is two words
	if ! $cmd "$@"; then
		dmesg_tail 20 >&2
		die "loading '$name' failed"
	fi
	if [ "$name" = kmemctl ] && [ "${KMEMCTL_NO_SITES:-0}" != 1 ] &&
		! cat "$KMEMCTL_MODDIR/sites" >/sys/kernel/kmemctl/sites; then
		dmesg_tail 5 >&2
		die "writing the kernel's patch sites to kmemctl.ko failed"
	fi
}

# shipped_verify WHAT ID...: each mitigation ID is admitted by a record the
# module ships (kmod/records/, made by kmemctl build record with every copy
# checked against the Debian linux-source of this kernel's series); WHAT
# says when, in the failure.
shipped_verify() {
	local what=$1 id reason series

	shift
	series=$(uname -r | cut -d. -f1-2)
	for id in "$@"; do
		reason=$(cat "/sys/kernel/kmemctl/mitigations/$id/reason")
		case "$reason" in
		"off: verified: its code matches record "*" linux-source-$series "*) ;;
		*) die "$id $what: $reason" ;;
		esac
	done
}

# verdicts TAG: each mitigation's state and reason, one "TAG <id> <state>
# <reason>" line each, for the host to read off the console.
verdicts() {
	local m

	for m in /sys/kernel/kmemctl/mitigations/*; do
		echo "$1 ${m##*/} $(cat "$m/state") $(cat "$m/reason")"
	done
}

# build_record [SOURCE]: a build record (docs/kmod.md) of the build file on
# stdin, its source line "source SOURCE" (default: unchecked <kernel conf>),
# with the module's copy lines as they are
build_record() {
	awk -v source="${1:-unchecked $KMEMCTL_KERNEL}" '
		BEGIN { print "kmemctl-build-record 2" }
		/^(copy|func) / && !body { print "source " source; body = 1 }
		{ print }
		END { if (!body) print "source " source; print "end" }'
}

# net_up: eth0 on QEMU's user network (tests/vm/run --net), where
# 10.0.2.2 is the host's loopback.
net_up() {
	[ "${KMEMCTL_NET:-0}" = 1 ] || die "no network: boot with tests/vm/run --net"
	mod_loaded e1000 || load_mod e1000
	wait_for 10 [ -e /sys/class/net/eth0 ]
	ip link set eth0 up
	ip addr add 10.0.2.15/24 dev eth0
	ip route add default via 10.0.2.2
}

# disk_up DIR: the disk of tests/vm/run --disk (/dev/vda) mounted on DIR,
# with an ext2 file system made on it first when it has none (a new disk
# image). The state on it outlives the boot; disk_down unmounts it.
disk_up() {
	local m magic

	[ "${KMEMCTL_DISK:-0}" = 1 ] || die "no disk: boot with tests/vm/run --disk FILE"
	# ext4 asks for crc32c by name at mount, which nothing here would load
	for m in virtio_pci virtio_blk crc32c_generic ext4; do
		mod_loaded $m || load_mod $m
	done
	wait_for 10 [ -b /dev/vda ]
	# an ext2/3/4 superblock's magic, 0xef53, at byte 1080
	magic=$(od -An -tx1 -j1080 -N2 /dev/vda | tr -d ' \n')
	if [ "$magic" != 53ef ]; then
		log "no file system on /dev/vda: mke2fs"
		mke2fs /dev/vda >/dev/null || die "mke2fs /dev/vda failed"
	fi
	mkdir -p "$1"
	mount -t ext4 /dev/vda "$1" || die "mounting /dev/vda on $1 failed"
}

disk_down() {
	umount "$1" || die "unmounting $1 failed"
}

# crash_now: a kernel panic, on purpose (tests/vm/run --crash). The kernel
# log so far and the runner's marker go out first, and are sent before the
# panic: it stops the interrupts that would send what the serial port still
# has queued.
crash_now() {
	echo "KMEMCTL-VM: DMESG-BEGIN"
	dmesg
	echo "KMEMCTL-VM: DMESG-END"
	echo "KMEMCTL-VM: CRASH ${KMEMCTL_TEST_FILE:-}"
	# stty applies settings with TCSADRAIN: the same ones, once all is sent
	stty -F /dev/console "$(stty -F /dev/console -g)"
	echo c >/proc/sysrq-trigger
	die "still running after a sysrq crash"
}

# start_agent HOST SERVER PKI_DIR KEYS_DIR [AGENT_LINES [TAIL]]: kmem-agent
# with its state, control socket, agent.conf and agent.log in the current
# directory, PKI_DIR/HOST.crt and .key and PKI_DIR/ca.crt, the policy keys
# in KEYS_DIR, loading kmemctl.ko itself. AGENT_LINES go into [agent],
# TAIL after keys_dir in [policy] (and may start more sections). Sets
# $agent; stop_agent ends it, also at exit.
start_agent() {
	cat >agent.conf <<CONF
[agent]
host_id = $1
server = $2
interval = 1s
state_dir = $PWD/state
user = nobody
control = $PWD/ctl.sock
module = $KMEMCTL_MODDIR/kmemctl.ko
${5:-}
[tls]
cert = $3/$1.crt
key = $3/$1.key
ca = $3/ca.crt
[policy]
keys_dir = $4
${6:-}
CONF
	_run_agent
}

# start_agent_alone STATE_DIR KEYS_DIR [AGENT_LINES [POLICY_LINES]]:
# kmem-agent standalone, with no kmemd (docs/agent.md, Policy from a
# file): its state in STATE_DIR, the policy keys in KEYS_DIR, its control
# socket, agent.conf and agent.log in the current directory, loading
# kmemctl.ko itself, host id vm-1 (the guest has no /etc/machine-id).
# AGENT_LINES go into [agent], POLICY_LINES (such as "file = PATH") into
# [policy]. Sets $agent; stop_agent ends it, also at exit.
start_agent_alone() {
	cat >agent.conf <<CONF
[agent]
host_id = vm-1
interval = 1s
state_dir = $1
user = nobody
control = $PWD/ctl.sock
module = $KMEMCTL_MODDIR/kmemctl.ko
${3:-}
[policy]
keys_dir = $2
${4:-}
CONF
	_run_agent
}

_run_agent() {
	export KMEMCTL_AGENT_SOCKET=$PWD/ctl.sock
	kmem-agent -d -c agent.conf >agent.log 2>&1 &
	agent=$!
	trap stop_agent EXIT
}

stop_agent() {
	kill "$agent" 2>/dev/null || true
	wait "$agent" 2>/dev/null || true
	trap - EXIT
}

# await_agent_module: the agent loaded kmemctl.ko and wrote the build's
# patch sites into it. In between, for the moment reading the image takes,
# mitigations with copies say "no patch sites of this build yet": not what
# a test means to read.
await_agent_module() {
	await 60 test -e /sys/kernel/kmemctl/build || agent_fail "the agent did not load kmemctl.ko"
	await 60 sites_written ||
		agent_fail "the agent wrote no patch sites: $(grep '^func ' /sys/kernel/kmemctl/build)"
}

sites_written() {
	! grep -q '^func .* -$' /sys/kernel/kmemctl/build
}

# status_has RE: `kmemctl status` (into status.txt) has a line matching RE.
status_has() {
	kmemctl status >status.txt 2>&1 && grep -q "$1" status.txt
}

# agent_fail MSG: the agent's log, then fail with MSG.
agent_fail() {
	log "--- agent log"
	cat agent.log
	die "$*"
}

unload_mod() {
	log "rmmod $1"
	if ! rmmod "$1"; then
		dmesg_tail 20 >&2
		die "rmmod '$1' failed"
	fi
}

mod_loaded() {
	grep -q "^$(echo "$1" | tr - _) " /proc/modules
}

# Uptime in hundredths of a second.
_now_cs() {
	local up
	read -r up _ </proc/uptime
	echo "${up%.*}${up#*.}" | sed 's/^0*//;s/^$/0/'
}

# wait_for TIMEOUT_S CMD...: run CMD every 0.1 s until it succeeds.
wait_for() {
	local timeout=$1 deadline
	shift
	deadline=$(($(_now_cs) + timeout * 100))
	until "$@"; do
		[ "$(_now_cs)" -lt "$deadline" ] || die "timed out after ${timeout}s waiting for: $*"
		sleep 0.1
	done
}

# await TIMEOUT_S CMD...: like wait_for, but returns 1 on timeout, for a
# test that has more to show before it fails.
await() {
	local deadline=$(($(date +%s) + $1))
	shift
	until "$@"; do
		[ "$(date +%s)" -lt $deadline ] || return 1
		sleep 0.2
	done
}

assert_eq() {
	[ "$1" = "$2" ] || die "$3: got '$1', expected '$2'"
}

assert_ge() {
	[ "$1" -ge "$2" ] 2>/dev/null || die "$3: got '$1', expected >= '$2'"
}

read_file() {
	[ -r "$1" ] || die "'$1' is not readable"
	cat "$1" || die "reading '$1' failed"
}

# write_ok PATH VALUE: the write must succeed.
write_ok() {
	local err
	err=$({ echo "$2" >"$1"; } 2>&1) || die "writing '$2' to '$1' failed: $err"
}

# write_fails PATH VALUE ERRNO_TEXT: the write must fail, with an error
# message containing ERRNO_TEXT (e.g. "Invalid argument").
write_fails() {
	local err
	if err=$({ echo "$2" >"$1"; } 2>&1); then
		die "writing '$2' to '$1' succeeded, expected '$3'"
	fi
	case "$err" in
	*"$3"*) ;;
	*) die "writing '$2' to '$1': got '$err', expected '$3'" ;;
	esac
}

dmesg_mark() {
	_kmemctl_marks=$((_kmemctl_marks + 1))
	_kmemctl_mark="kmemctl-vm: mark ${KMEMCTL_TEST:-test} $_kmemctl_marks"
	_kmsg "$_kmemctl_mark"
}

# The kernel log since the last mark, without timestamps and marks.
dmesg_since_mark() {
	local log
	log=$(_dmesg)
	echo "$log" | grep -qxF "$_kmemctl_mark" || die "mark '$_kmemctl_mark' is not in the kernel log"
	echo "$log" | awk -v mark="$_kmemctl_mark" '
		$0 == mark { p = 1; n = 0; delete lines; next }
		p && !/^kmemctl-vm: / { lines[n++] = $0 }
		END { for (i = 0; i < n; i++) print lines[i] }'
}

expect_splat_begin() {
	_kmsg "kmemctl-vm: splat-expected-begin"
}

expect_splat_end() {
	_kmsg "kmemctl-vm: splat-expected-end"
}

# Splat lines since the mark, outside expect_splat_begin/end brackets.
_splats_since_mark() {
	dmesg_since_mark >/dev/null
	_dmesg | awk -v mark="$_kmemctl_mark" -v re="$KMEMCTL_SPLAT_RE" '
		$0 == mark { p = 1; n = 0; delete lines; next }
		/^kmemctl-vm: splat-expected-begin/ { quiet = 1 }
		/^kmemctl-vm: splat-expected-end/ { quiet = 0 }
		p && !quiet && $0 ~ re { lines[n++] = $0 }
		END { for (i = 0; i < n; i++) print lines[i] }'
}

# No BUG, Oops, WARNING, leak report... since the mark.
check_dmesg_clean() {
	local bad
	bad=$(_splats_since_mark)
	[ -z "$bad" ] && return 0
	echo "---- kernel log since '$_kmemctl_mark'" >&2
	dmesg_since_mark >&2
	echo "----" >&2
	die "kernel log is not clean: $(echo "$bad" | head -n 1)"
}
