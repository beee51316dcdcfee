# Helpers for the integration tests. Source it once $work is made, then
# call in_work. FAIL_LOG names a log to show when a check fails.

pids=()
kmemd_pid=
agent_pid=

# in_work: run in $work; at exit stop every process in pids, kmemd_pid and
# agent_pid, then remove $work (unless KEEP is set)
in_work() {
	cd "$work"
	FAIL_LOG=kmemd.log
	trap leave_work EXIT
}

leave_work() {
	local p
	for p in "${pids[@]}" $agent_pid $kmemd_pid; do
		kill "$p" 2>/dev/null && wait "$p" 2>/dev/null
	done
	[ -n "${KEEP:-}" ] || rm -rf "$work"
}

# fail MSG...: say what failed, show the tail of $FAIL_LOG, exit 1
fail() {
	echo "FAIL: $*" >&2
	if [ -n "${FAIL_LOG:-}" ]; then
		echo "--- $FAIL_LOG" >&2
		tail -40 "$FAIL_LOG" >&2 || true
	fi
	exit 1
}

# wait_for SECONDS CMD...: run CMD every 0.1 s until it succeeds; 1 when
# SECONDS pass first. Never a bare sleep.
wait_for() {
	local i n=$(($1 * 10))
	shift
	for i in $(seq $n); do
		"$@" && return 0
		sleep 0.1
	done
	return 1
}

# pki_fleet: a fleet CA in pki/, kmemd's server certificate for 127.0.0.1
# and operator "ops"'s admin certificate
pki_fleet() {
	$KMEMCTL pki init pki >/dev/null
	$KMEMCTL pki issue pki server kmemd ip 127.0.0.1 >/dev/null
	$KMEMCTL pki issue pki admin ops >/dev/null
}

# kmemd_conf: kmemd on any free port with pki/ and a store in the work dir;
# the [store] section comes last, for more of its keys to follow
kmemd_conf() {
	cat <<CONF
[server]
listen = 127.0.0.1:0
cert = $PWD/pki/kmemd.crt
key = $PWD/pki/kmemd.key
ca = $PWD/pki/ca.crt
[store]
path = $PWD/kmemd.sqlite
CONF
}
