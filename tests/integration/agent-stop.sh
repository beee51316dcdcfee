#!/bin/bash
# kmem-agent stopped many times at random moments, on a fixture tree: during
# its start, in the middle of a report (its memory.stat is a FIFO fed now and
# then, so a collector round is under way), while its network child dies,
# while control clients are connected (and its control process is killed),
# and while a collector is stuck in the kernel (a FIFO nobody feeds). Each
# run must end with the exit code the case calls for, leave no child behind,
# and, in a build with KMEMCTL_SANITIZE, print no sanitizer report.
#   agent-stop.sh BUILD_DIR SOURCE_DIR [RUNS]
set -euo pipefail

BUILD=${1:?usage: agent-stop.sh BUILD_DIR SOURCE_DIR [RUNS]}
SRC=${2:?usage: agent-stop.sh BUILD_DIR SOURCE_DIR [RUNS]}
RUNS=${3:-60}
KMEMCTL=$BUILD/cli/kmemctl
AGENT=$BUILD/agent/kmem-agent

work=$(mktemp -d "$BUILD/agent-stop.XXXXXX")
chmod 755 "$work"
. "$SRC/tests/integration/lib.sh"
in_work
FAIL_LOG=agent.log
feeder=
clients=()

# leaves nothing running when the test ends early
stop_helpers() {
	local p
	for p in $feeder "${clients[@]}"; do
		kill "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	feeder=
	clients=()
}
trap 'stop_helpers; leave_work' EXIT

sanitized=no
grep -q '^KMEMCTL_SANITIZE:BOOL=ON' "$BUILD/CMakeCache.txt" && sanitized=yes
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0
export UBSAN_OPTIONS=print_stacktrace=1

$KMEMCTL pki init pki >/dev/null
$KMEMCTL pki issue pki host host-1 >/dev/null
cp -r "$SRC/tests/fixtures/host-6.1" root
mkdir -p root/sys/fs/cgroup
# nothing listens on port 1: reports spool
agent_conf host-1 1 stop "collector_timeout = 300ms
memstat = /sys/fs/cgroup/memory.stat" >agent.conf
export KMEMCTL_AGENT_SOCKET=$work/ctl-host-1.sock

# pause: a random moment, 0 to $1 ms
pause() {
	sleep "$(awk -v r=$RANDOM -v max="$1" 'BEGIN { printf "%.3f", r / 32768 * max / 1000 }')"
}

# memory.stat as a FIFO; fed: a writer answers each read after a random pause
memstat() {
	rm -f root/sys/fs/cgroup/memory.stat
	mkfifo root/sys/fs/cgroup/memory.stat
	[ "$1" = fed ] || return 0
	(while :; do
		pause 200
		echo "cache 0" >root/sys/fs/cgroup/memory.stat
	done) &
	feeder=$!
}

# children PID: the agent's children, by name
children() { ps -o pid=,comm= --ppid "$1" 2>/dev/null || true; }

# child_of PID NAME: the pid of the agent's child NAME, once it runs
child_of() {
	local i c
	for i in $(seq 100); do
		c=$(children "$1" | awk -v n="$2" '$2 == n { print $1 }')
		[ -n "$c" ] && echo "$c" && return 0
		sleep 0.1
	done
	return 1
}

# one RUN CASE: start the agent, do what CASE does, check how it ended
one() {
	local run=$1 kase=$2 want=0 rc=0 kids p
	memstat "$([ "$kase" = stuck ] && echo stuck || echo fed)"
	$AGENT -d -r "$work/root" -c agent.conf >agent.log 2>&1 &
	agent_pid=$!
	case $kase in
	start)
		pause 300
		;;
	report)
		wait_for 20 grep -q "spooling\|unreachable\|report [0-9]" agent.log || true
		pause 1500
		;;
	network)
		p=$(child_of "$agent_pid" kmem-agent-net) || fail "run $run: no network child"
		pause 1000
		kill -KILL "$p"
		want=1
		;;
	control)
		child_of "$agent_pid" kmem-agent-ctl >/dev/null || fail "run $run: no control process"
		wait_for 20 test -S ctl-host-1.sock || fail "run $run: no control socket"
		timeout 10 $KMEMCTL watch >/dev/null 2>&1 &
		clients+=($!)
		timeout 10 $KMEMCTL status >/dev/null 2>&1 &
		clients+=($!)
		pause 800
		# now and then the control process dies under its clients
		if [ $((RANDOM % 2)) = 0 ]; then
			p=$(child_of "$agent_pid" kmem-agent-ctl) && kill -KILL "$p" || true
			pause 500
		fi
		;;
	stuck)
		wait_for 20 grep -q "memory.stat: no answer within the deadline" agent.log ||
			fail "run $run: the collector never got stuck"
		pause 500
		;;
	esac
	kids=$(children "$agent_pid" | awk '{ print $1 }')
	[ "$want" = 1 ] || kill -TERM "$agent_pid"
	wait "$agent_pid" || rc=$?
	agent_pid=
	stop_helpers
	# a stop before the agent's main() held its signals (exec, the loader,
	# a sanitizer's start) ends it by SIGTERM's default, having begun nothing
	if [ "$kase" = start ] && [ "$rc" = 143 ] && [ ! -s agent.log ] && [ -z "$kids" ]; then
		rc=0
		early=$((early + 1))
	fi
	[ "$rc" = "$want" ] || fail "run $run ($kase): exit $rc, want $want"
	for p in $kids; do
		! kill -0 "$p" 2>/dev/null || fail "run $run ($kase): child $p outlived the agent"
	done
	! grep -E "Sanitizer|runtime error:|SUMMARY:" agent.log ||
		fail "run $run ($kase): a sanitizer report"
	if [ "$kase" = stuck ]; then
		grep -q "is stuck in the kernel: exiting without freeing" agent.log ||
			fail "run $run: the stuck collector was not named at exit"
	fi
	cp agent.log "run-$run.log"
}

cases=(start report network control stuck)
declare -A count
early=0
for run in $(seq "$RUNS"); do
	kase=${cases[$(((run - 1) % ${#cases[@]}))]}
	one "$run" "$kase"
	count[$kase]=$((${count[$kase]:-0} + 1))
done
for kase in "${cases[@]}"; do
	echo "ok: stopped ${count[$kase]:-0} times: $kase"
done
echo "ok: $early of the starts stopped before the agent's main() began"
echo "ok: $RUNS stops, each with its exit code, no child left, sanitizers: $sanitized, no report"
echo PASS
