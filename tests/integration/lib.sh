# shellcheck shell=bash
# Helpers for the integration tests. Source it once $work is made, then
# call in_work. FAIL_LOG names a log to show when a check fails.

pids=()
kmemd_pid=
agent_pid=

# in_work: run in $work; at exit stop every process in pids, kmemd_pid and
# agent_pid, fail if a sanitizer reported in any file of $work, then
# remove $work (unless KEEP is set). A test with a time
# limit (TEST_TIMEOUT, which CMakeLists.txt sets to ctest's TIMEOUT) is
# stopped 10 s before it by a watchdog that says what the test was
# running: a timeout is then a diagnosis, not a silent kill.
in_work() {
	cd "$work"
	FAIL_LOG=kmemd.log
	trap leave_work EXIT
	trap 'exit 124' TERM
	[ -z "${TEST_TIMEOUT:-}" ] || watchdog $((TEST_TIMEOUT - 10)) &
	watchdog_pid=$!
}

# watchdog SECONDS: after SECONDS, print what the test runs, how long
# each has run, and the tail of $FAIL_LOG; then end what it runs, so
# that the test exits through leave_work.
watchdog() {
	local test=$$ me=$BASHPID p
	sleep "$1"
	{
		echo "TIMEOUT: $1 s of the test's ${TEST_TIMEOUT} s are over; it is running:"
		ps -o pid=,etimes=,args= --ppid "$test" | awk -v me="$me" '$1 != me { print "  " $0 }'
		if [ -n "${FAIL_LOG:-}" ]; then
			echo "--- $FAIL_LOG"
			tail -20 "$FAIL_LOG"
		fi
	} >&2
	# the test first: it acts on it once what it waits for is ended
	kill -TERM "$test"
	for p in $(pgrep -P "$test"); do
		[ "$p" = "$me" ] || kill -TERM "$p" 2>/dev/null
	done
}

leave_work() {
	local p reports
	# its sleep too, which would hold ctest's output pipe open
	pkill -P "$watchdog_pid" 2>/dev/null || true
	kill "$watchdog_pid" 2>/dev/null || true
	for p in "${pids[@]}" $agent_pid $kmemd_pid; do
		# a stopped process would not act on SIGTERM before SIGCONT; a process
		# killed makes wait fail, which set -e must not act on here
		if kill "$p" 2>/dev/null; then
			kill -CONT "$p" 2>/dev/null || true
			wait "$p" 2>/dev/null || true
		fi
	done
	# a process the test expected to fail (a refused configuration) must
	# still fail cleanly: a sanitizer's report in any of its logs fails the test
	reports=$(grep -rIlE '^==[0-9]+==ERROR: [A-Za-z]+Sanitizer|: runtime error: ' "$work" || true)
	if [ -n "$reports" ]; then
		for p in $reports; do
			echo "FAIL: a sanitizer's report in ${p#"$work"/}:" >&2
			grep -m 1 -A 12 -E '^==[0-9]+==ERROR|: runtime error: ' "$p" >&2
		done
		[ -n "${KEEP:-}" ] || rm -rf "$work"
		exit 1
	fi
	[ -n "${KEEP:-}" ] || rm -rf "$work"
}

# sqlite3: the store is kmemd's while the tests read and edit it; wait for
# its write lock (a batch, a checkpoint) rather than fail on it
sqlite3() {
	command sqlite3 -cmd ".timeout 20000" "$@"
}

# db SQL: the rows of SQL in kmemd's store, columns split by |: the
# PostgreSQL database of KMEM_STORE_URL (tests/pg/with-cluster), else the
# SQLite file kmemd_conf names. SQL both understand, for tests of both.
db() {
	if [ -n "${KMEM_STORE_URL:-}" ]; then
		psql -X -q -A -t -F'|' -v ON_ERROR_STOP=1 -d "$KMEM_STORE_URL" -c "$1"
	else
		sqlite3 kmemd.sqlite "$1"
	fi
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
# four times SECONDS pass first, however long CMD itself takes. SECONDS is
# what the step takes at most on an idle machine; the sanitizer tier beside
# another test and a busy core have made steps take three times that, and
# waiting longer costs nothing when the step succeeds. Never a bare sleep.
wait_for() {
	local deadline=$((SECONDS + 4 * $1))
	shift
	until "$@"; do
		[ "$SECONDS" -lt "$deadline" ] || return 1
		sleep 0.1
	done
}

# pki_fleet [ADDR...]: a fleet CA in pki/, kmemd's server certificate for
# 127.0.0.1 (and each ADDR), operator "ops"'s admin certificate, and a
# policy signer (signer.key; its public key in keys/, which kmemd_conf
# pins)
pki_fleet() {
	local a ips=(ip 127.0.0.1)
	for a in "$@"; do
		ips+=(ip "$a")
	done
	$KMEMCTL pki init pki >/dev/null
	$KMEMCTL pki issue pki server kmemd "${ips[@]}" >/dev/null
	$KMEMCTL pki issue pki admin ops >/dev/null
	$KMEMCTL policy keygen signer >/dev/null
	mkdir -p keys
	cp signer.pem keys/
}

# pki_hosts HOST...: a host certificate for each, pki/HOST.crt and .key
pki_hosts() {
	local h
	for h in "$@"; do
		$KMEMCTL pki issue pki host "$h" >/dev/null
	done
}

# kmemd_conf: kmemd on any free port with pki/, the policy keys in keys/,
# the dashboard's files from the build tree and a store in the work dir
# (or KMEM_STORE_URL's database); the [store] section comes last, for more of
# its keys to follow
kmemd_conf() {
	cat <<CONF
[server]
listen = 127.0.0.1:0
cert = $PWD/pki/kmemd.crt
key = $PWD/pki/kmemd.key
ca = $PWD/pki/ca.crt
${BUILD:+web_root = $BUILD/web/root}
[policy]
keys_dir = $PWD/keys
[store]
$(if [ -n "${KMEM_STORE_URL:-}" ]; then echo "url = $KMEM_STORE_URL"; else echo "path = $PWD/kmemd.sqlite"; fi)
CONF
}

# agent_conf HOST PORT ROLE [EXTRA [TLS]]: an agent reporting every second
# to kmemd on PORT with pki/HOST.crt, state and control socket in the work
# dir, policy keys in keys/; EXTRA goes into its [agent] section, TLS into
# its [tls]
agent_conf() {
	cat <<CONF
[agent]
host_id = $1
server = 127.0.0.1:$2
interval = 1s
state_dir = $PWD/state-$1
user = nobody
control = $PWD/ctl-$1.sock
${4:-}
[tls]
cert = $PWD/pki/$1.crt
key = $PWD/pki/$1.key
ca = $PWD/pki/ca.crt
${5:-}
[policy]
keys_dir = $PWD/keys
[labels]
role = $3
CONF
}

# kmemd_start: $KMEMD -d -c kmemd.conf, logging to kmemd.log (appended);
# sets kmemd_pid, and port and URL as its first start bound them
kmemd_start() {
	local n
	n=$(grep -c "listening on port" kmemd.log 2>/dev/null || true)
	$KMEMD -d -c kmemd.conf >>kmemd.log 2>&1 &
	kmemd_pid=$!
	wait_for 10 sh -c "[ \$(grep -c 'listening on port' kmemd.log) -gt ${n:-0} ]" ||
		fail "kmemd did not start"
	port=$(sed -n 's/.*listening on port \([0-9]*\).*/\1/p' kmemd.log | sed -n 1p)
	URL=https://127.0.0.1:$port
}

# as_curl AS [curl args...]: curl to kmemd with AS's certificate
as_curl() {
	local who=$1
	shift
	curl -sS --cacert pki/ca.crt --cert "pki/$who.crt" --key "pki/$who.key" "$@"
}

# api AS METHOD PATH [curl args...]: prints the body, then the status code
api() {
	local who=$1 method=$2 path=$3
	shift 3
	as_curl "$who" -X "$method" -w '\n%{http_code}\n' "$@" "$URL$path"
}

# expect CODE TEXT WHAT api-args...: the call answers CODE with TEXT in it
expect() {
	local code=$1 text=$2 what=$3 out
	shift 3
	out=$(api "$@") || fail "$what: curl failed"
	[ "$(echo "$out" | tail -1)" = "$code" ] || fail "$what: got $(echo "$out" | tail -1), want $code: $out"
	grep -q -- "$text" <<<"$out" || fail "$what: '$text' not in $out"
	echo "ok: $what"
}

# fixture_agent HOST ROLE [EXTRA [TLS]]: a kmem-agent for HOST (role label
# ROLE, EXTRA in its [agent] section, TLS in its [tls]) on its own copy of
# the 6.1 fixture tree, root-HOST, whose /dev/kmsg is a FIFO the test
# writes the kernel's lines into through fd ${kmsg[HOST]}; held open
# read-write, the agent never sees its end. The agent's pid is ${agent[HOST]}.
# FIXTURE in the environment names another tree to copy.
declare -A kmsg agent
fixture_agent() {
	local fd
	cp -r "${FIXTURE:-$SRC/tests/fixtures/host-6.1}" root-$1
	sed -i 's/ kmemctl.disable=1//' root-$1/proc/cmdline
	mkdir -p root-$1/dev
	mkfifo -m 0666 root-$1/dev/kmsg
	exec {fd}<>root-$1/dev/kmsg
	kmsg[$1]=$fd
	agent_conf $1 $port $2 "${3:-}" "${4:-}" >agent-$1.conf
	$AGENT -d -r "$PWD/root-$1" -c agent-$1.conf >agent-$1.log 2>&1 &
	pids+=($!)
	agent[$1]=$!
}

# sign_policy NAME DOCUMENT: version 1 signed with signer.key, uploaded by ops
sign_policy() {
	printf '%s' "$2" >$1.json
	$KMEMCTL policy sign -k signer.key -n $1 -v 1 -s ops -o $1.bundle $1.json
	expect 201 '"signed":true' "policy $1 is uploaded" ops POST /v1/policies \
		-H 'Content-Type: application/x-protobuf' --data-binary @$1.bundle
}

# agents_reporting ROLE HOST...: a fixture agent for each HOST (role label
# ROLE), each with its first report acknowledged
agents_reporting() {
	local h role=$1
	shift
	for h in "$@"; do
		fixture_agent $h $role
	done
	for h in "$@"; do
		wait_for 20 grep -q "report [0-9]* acknowledged" agent-$h.log ||
			fail "$h's first report"
	done
}

# agents_stop_none_lost HOST...: the fixture agents of HOST... stopped, and
# none of their acknowledged reports missing from the store
agents_stop_none_lost() {
	local h
	for h in "$@"; do
		kill "${agent[$h]}"
		wait "${agent[$h]}" 2>/dev/null || true
	done
	no_report_lost "$@"
	echo "ok: every report the agents saw acknowledged is stored"
}

# spooled_report HOST: the path of a real report of HOST's, from an agent
# on the fixture whose kmemd is away, for a test to take apart
spooled_report() {
	local spooler
	agent_conf "$1" 1 web >spool.conf
	$AGENT -r "$SRC/tests/fixtures/host-6.1" -c spool.conf >spool.log 2>&1 &
	spooler=$!
	wait_for 10 sh -c "ls state-$1/spool/*.report >/dev/null 2>&1" || fail "nothing spooled"
	kill $spooler
	wait $spooler || true
	ls state-"$1"/spool/*.report | sed -n 1p
}

# no_report_lost HOST...: every report each agent (agent-HOST.log, run with
# -d) logged as acknowledged is in kmemd's store
no_report_lost() {
	local h missing
	for h in "$@"; do
		sed -n 's/.*report \([0-9]*\) acknowledged.*/\1/p' agent-$h.log | sort -u >acked-$h
		db "SELECT seq FROM counters WHERE host_id = '$h'" | sort -u >stored-$h
		[ -s acked-$h ] || fail "$h had no report acknowledged"
		missing=$(comm -23 acked-$h stored-$h | sed -n 1,3p | tr '\n' ' ')
		[ -z "$missing" ] || fail "$h: acknowledged reports missing from the store: $missing"
	done
}

# json_ok FILE: FILE holds one well-formed JSON document (UTF-8)
json_ok() {
	python3 -c 'import json, sys; json.load(open(sys.argv[1], encoding="utf-8"))' "$1" 2>/dev/null
}

# ops_get PATH [curl args...]: GET as the operator. A connection kmemd
# closes before it answers is tried twice more, as any client would: under
# a handshake flood (attacks.sh) kmemd evicts a handshake whose ClientHello
# has not come 100 ms after accept, and curl builds its TLS context only
# once connected, which a loaded machine can stretch past that. An answer,
# whatever its status, is not tried again; nor is anything but a GET (api),
# which kmemd may have carried out before the connection ended.
ops_get() {
	local path=$1
	shift
	as_curl ops --retry 2 --retry-all-errors --retry-delay 1 "$@" "$URL$path"
}

# routes_answer HOST: what operators read answers 200, in JSON where it is
# JSON: hosts, fleet, HOST's detail page, policies, rollouts, /metrics, the
# dashboard
routes_answer() {
	local path code
	for path in /v1/hosts "/v1/hosts?limit=10" /v1/fleet "/v1/hosts/detail?id=$1" \
		/v1/policies /v1/rollouts; do
		code=$(ops_get "$path" -o route.out -w '%{http_code}') || fail "GET $path: curl failed"
		[ "$code" = 200 ] || fail "GET $path answered $code: $(head -c 300 route.out)"
		json_ok route.out || fail "GET $path is not JSON: $(head -c 300 route.out)"
	done
	for path in /metrics /; do
		code=$(ops_get "$path" -o route.out -w '%{http_code}') || fail "GET $path: curl failed"
		[ "$code" = 200 ] || fail "GET $path answered $code"
	done
}

# metric NAME: its value on /metrics (NAME with its labels, as printed)
metric() {
	ops_get /metrics | awk -v m="$1" '$1 == m { print $2 }'
}

# enroll_request HOST_ID CSR_FILE [SECRET]: an EnrollRequest (secret 1,
# host_id 2, csr_pem 3) on stdout, as kmemctl enroll and the agent's
# renewal send it; \0 in HOST_ID is a NUL byte
enroll_request() {
	python3 - "$@" <<'PY'
import sys
def field(n, b):
    out, l = bytes([n << 3 | 2]), len(b)
    while l > 127:
        out, l = out + bytes([l & 127 | 128]), l >> 7
    return out + bytes([l]) + b
secret = field(1, sys.argv[3].encode()) if len(sys.argv) > 3 else b""
host = sys.argv[1].encode().replace(b"\\0", b"\0")
sys.stdout.buffer.write(secret + field(2, host) + field(3, open(sys.argv[2], "rb").read()))
PY
}
