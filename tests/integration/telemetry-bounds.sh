#!/bin/bash
# Telemetry one host cannot inflate (issue 46): 1,100 maximal reports of
# one host (the most values report_check() lets its CPUs record) that
# replay an interval, come from the future or the distant past, or walk
# forward. kmemd stores them all (each is acknowledged, nothing to resend)
# but keeps only samples whose intervals follow the host's last one and
# lie in its recent past, so the host's count adds up to its CPUs times
# the time it covered, no more; and in the fleet's histogram it weighs
# no more than ten median hosts. Each report also claims 128 soft lockups
# (the most a report holds): kmemd keeps those its 4 online CPUs could
# report since its last report, 2 a CPU-second, so what the gates count
# of it is bounded by the time it covered too.
set -euo pipefail

BUILD=${1:?usage: telemetry-bounds.sh BUILD_DIR SOURCE_DIR}
SRC=${2:?usage: telemetry-bounds.sh BUILD_DIR SOURCE_DIR}
KMEMCTL=$BUILD/cli/kmemctl
KMEMD=$BUILD/daemon/kmemd
AGENT=$BUILD/agent/kmem-agent
EDIT=$BUILD/tests/integration/report-edit

work=$(mktemp -d "$BUILD/bounds.XXXXXX")
chmod 755 "$work"
# shellcheck source=tests/integration/lib.sh
. "$SRC/tests/integration/lib.sh"
in_work

honest=$(seq -f 'h%g' 21)
pki_fleet
# shellcheck disable=SC2086
pki_hosts evil $honest
kmemd_conf >kmemd.conf
kmemd_start

report=$(spooled_report evil)

now=$(date +%s%3N)
t0=$((now - 120000))
mkdir bodies
# each honest host: one second of 100 values of about 1 us
for h in $honest; do
	echo "bodies/$h host=$h seq=1 probe=vmap-purge values=100 time=$((t0 + 1000))"
done >edits
# evil (64 possible CPUs, 4 online): 400 reports of one minute's interval
# (the first is new), 100 of 100 ms walking on, 50 of 1 s walking on, 300
# from an hour ahead, 300 from three days back; 128 lockups each
i=0
body() { # edits...
	i=$((i + 1))
	echo "bodies/evil-$(printf %04d $i) host=evil seq=$((1000 + i)) probe=vmap-purge $* lockups=128"
}
for k in $(seq 400); do body span=60000 max=1 time=$((t0 + 60000)); done >>edits
for k in $(seq 100); do body span=100 max=1 time=$((t0 + 60000 + k * 100)); done >>edits
for k in $(seq 50); do body span=1000 max=1 time=$((t0 + 70000 + k * 1000)); done >>edits
for k in $(seq 300); do body span=1000 max=1 time=$((now + 3600000 + k * 1000)); done >>edits
for k in $(seq 300); do body span=1000 max=1 time=$((now - 3 * 86400000 + k * 1000)); done >>edits
# all written by one report-edit, a line each
$EDIT "$report" - <edits

# every body over keep-alive connections with its host's certificate, the
# honest hosts' first (/metrics weighs a host against the others seen):
# status and reason
cat >send.py <<'PY'
import http.client, os, ssl, sys
port, codes, left = int(sys.argv[1]), {}, 0
conns = {}
for name in sorted(os.listdir("bodies"), key=lambda n: (n.startswith("evil"), n)):
    host = name.split("-")[0]
    if host not in conns:
        ctx = ssl.create_default_context(cafile="pki/ca.crt")
        ctx.load_cert_chain("pki/%s.crt" % host, "pki/%s.key" % host)
        conns[host] = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=30)
    c = conns[host]
    c.request("POST", "/v1/agent/report", open("bodies/" + name, "rb").read(),
              {"Content-Type": "application/x-protobuf"})
    r = c.getresponse()
    body = r.read()
    codes[r.status] = codes.get(r.status, 0) + 1
    left += b"left out" in body
print(" ".join("%s=%d" % kv for kv in sorted(codes.items())), "left_out=%d" % left)
PY
python3 send.py "$port" >send.out
[ "$(cat send.out)" = "200=1171 left_out=1149" ] ||
	fail "want all 1,171 stored, all of evil's but its first with samples or lockups left out: $(cat send.out)"
[ "$(metric kmemd_probe_samples_left_out_total)" = 999 ] ||
	fail "left-out samples counted $(metric kmemd_probe_samples_left_out_total), want 999"
[ "$(db "SELECT count(*) FROM counters WHERE host_id = 'evil'")" = 1150 ] ||
	fail "evil's reports are not all stored"
[ "$(db "SELECT count(*) FROM report_samples WHERE host_id = 'evil'")" = 151 ] ||
	fail "evil's samples stored: $(db "SELECT count(*) FROM report_samples WHERE host_id = 'evil'"), want 151"
echo "ok: 1,150 maximal reports stored and acknowledged; the 999 samples that replay, come from the future or the distant past left out and counted"

# lockups: the first report's 128 (nothing before it to bound them), none
# for a replayed time, 100 ms at 4 CPUs is 0.8 (none), 1 s is 8; none
# from the future, none in reports older than the host's last
lockups=$((128 + 50 * 8))
[ "$(db "SELECT count(*) FROM events WHERE host_id = 'evil'")" = $lockups ] ||
	fail "evil's lockups stored: $(db "SELECT count(*) FROM events WHERE host_id = 'evil'"), want $lockups"
[ "$(metric kmemd_events_left_out_total)" = $((1150 * 128 - lockups)) ] ||
	fail "left-out events counted $(metric kmemd_events_left_out_total), want $((1150 * 128 - lockups))"
[ "$(metric 'kmemd_kernel_events_total{kind="soft-lockup"}')" = $lockups ] ||
	fail "/metrics counts $(metric 'kmemd_kernel_events_total{kind="soft-lockup"}') soft lockups, want $lockups"
[ "$(db "SELECT count(*) FROM events WHERE unix_ms > $(date +%s%3N) + 300000")" = 0 ] ||
	fail "an event from the future is stored"
echo "ok: of evil's 147,200 lockups, $lockups kept: 128 and its 4 CPUs' 2 a second over the 50 s it walked on"

telemetry() { # query: the JSON of /v1/telemetry
	as_curl ops "$URL/v1/telemetry?probe=vmap-purge&from=$((t0 - 1))&to=$((now + 1))$1"
}
field() { # name json
	python3 -c 'import json, sys; print(json.loads(sys.argv[2])[sys.argv[1]])' "$@"
}
# one minute, 100 x 100 ms and 50 x 1 s at 64 CPUs, one value a nanosecond
evil=$(telemetry "&host=evil")
[ "$(field count "$evil")" = $((64 * 1000000 * (60000 + 100 * 100 + 50 * 1000))) ] ||
	fail "evil's count is not its CPUs times the 120 s it covered: $evil"
fleet=$(telemetry "")
[ "$(field hosts "$fleet")" = 22 ] && [ "$(field hosts_scaled "$fleet")" = 1 ] ||
	fail "the fleet's histogram did not scale evil alone: $fleet"
[ "$(field count "$fleet")" = $((21 * 100 + 10 * 100)) ] ||
	fail "evil weighs more than ten median hosts: $fleet"
[ "$(field p50_ns "$fleet")" -le 1024 ] || fail "evil moved the fleet's median: $fleet"
as_curl ops "$URL/metrics" | awk '$1 !~ /^#/ && $2 < 0 { print; bad = 1 } END { exit bad }' ||
	fail "a negative number in /metrics"
# /metrics: evil's total at most ten times the median host's 100 values,
# beside the honest 2,100; each of its samples scaled down
probe_count=$(as_curl ops "$URL/metrics" |
	awk '$1 ~ /^kmemd_probe_seconds_count\{probe="vmap-purge"/ { n += $2 } END { print n + 0 }')
[ "$probe_count" = $((1000 + 2100)) ] ||
	fail "/metrics counts $probe_count vmap-purge values, want $((1000 + 2100))"
[ "$(metric kmemd_probe_samples_weighed_total)" = 151 ] ||
	fail "/metrics weighed $(metric kmemd_probe_samples_weighed_total) samples down, want evil's 151"
echo "ok: evil's count is its 64 CPUs times the 120 s it covered; in the fleet's histogram and /metrics it weighs ten median hosts; the fleet's median is the honest hosts'"
timeout 60 "$KMEMCTL" --server 127.0.0.1:$port --ca pki/ca.crt --cert pki/ops.crt --key pki/ops.key \
	telemetry query vmap-purge from=$((t0 - 1)) to=$((now + 1)) >query.out
grep -q "^weighed   1 host claiming more than 10 median hosts' values" query.out ||
	fail "kmemctl telemetry query does not say a host was weighed down: $(cat query.out)"
echo "ok: kmemctl telemetry query says so"
