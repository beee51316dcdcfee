#!/bin/bash
# kmemd's webhook over https: a receiver with a certificate from the CA
# [notify] ca names gets a JSON POST for a mitigation trip a host reports;
# one whose certificate kmemd cannot verify gets nothing, and kmemd counts
# the post failed. (Verdicts over http: rollout.sh.)
set -euo pipefail

BUILD=${1:?usage: webhook.sh BUILD_DIR SOURCE_DIR}
SRC=${2:?usage: webhook.sh BUILD_DIR SOURCE_DIR}
KMEMCTL=$BUILD/cli/kmemctl
KMEMD=$BUILD/daemon/kmemd
AGENT=$BUILD/agent/kmem-agent

work=$(mktemp -d "$BUILD/webhook.XXXXXX")
chmod 755 "$work"
# shellcheck source=tests/integration/lib.sh
. "$SRC/tests/integration/lib.sh"
in_work

pki_fleet
pki_hosts h1 h2
$KMEMCTL pki issue pki server hooks ip 127.0.0.1 >/dev/null
# another CA's receiver, which kmemd must not trust
mkdir other
$KMEMCTL pki init other >/dev/null
$KMEMCTL pki issue other server hooks ip 127.0.0.1 >/dev/null
cat >receiver.py <<'PY'
import http.server, ssl, sys
cert, key, out = sys.argv[1:4]
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        with open(out, "ab") as f:
            f.write(self.path.encode() + b" " + body + b"\n")
        self.send_response(204)
        self.end_headers()
    def log_message(self, *a):
        pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
s.socket = ctx.wrap_socket(s.socket, server_side=True)
open(out + ".port", "w").write(str(s.server_port))
s.serve_forever()
PY
python3 receiver.py pki/hooks.crt pki/hooks.key good.jsonl &
pids+=($!)
python3 receiver.py other/hooks.crt other/hooks.key bad.jsonl &
pids+=($!)
wait_for 10 test -s good.jsonl.port -a -s bad.jsonl.port || fail "the receivers did not start"

# kmemd without [notify] ca refuses an https webhook at start, saying why
kmemd_conf >kmemd.conf
printf '[notify]\nwebhook = https://127.0.0.1:%s/hook\n' "$(cat good.jsonl.port)" >>kmemd.conf
$KMEMD -c kmemd.conf >no-ca.log 2>&1 && fail "kmemd started with an https webhook and no CA"
grep -q "\[notify\] ca names the CA to trust" no-ca.log || fail "no CA: $(cat no-ca.log)"
echo "ok: an https webhook without [notify] ca is refused at start"

run_with() { # RECEIVER: kmemd posting to it, on the port of its first start
	kmemd_conf >kmemd.conf
	printf '[notify]\nwebhook = https://127.0.0.1:%s/hook?team=mm\nca = %s\n' \
		"$(cat $1.jsonl.port)" "$PWD/pki/ca.crt" >>kmemd.conf
	[ -z "${port:-}" ] || sed -i "s/^listen = .*/listen = 127.0.0.1:$port/" kmemd.conf
	kmemd_start
}
tripped() { # the trip reached the receiver
	grep -q '"kind":"trip","host":"h1","mitigation":"usercopy-fastpath"' good.jsonl 2>/dev/null
}
run_with good
fixture_agent h1 web
wait_for 20 grep -q "report [0-9]* acknowledged" agent-h1.log || fail "h1 does not report"
M=root-h1/sys/kernel/kmemctl/mitigations/usercopy-fastpath
echo "tripped: slow call: 2100 ms in a replacement, over trip_call_ms" >$M/reason
echo tripped >$M/state
wait_for 20 tripped || fail "the trip did not reach the webhook: $(cat good.jsonl 2>/dev/null)"
grep -q '^/hook?team=mm {' good.jsonl || fail "the webhook's path and query: $(head -1 good.jsonl)"
echo "ok: a host's trip reaches the https webhook"

# the same kmemd's posts to a receiver it cannot verify fail, counted
kill "${agent[h1]}"
wait "${agent[h1]}" 2>/dev/null || true
kill $kmemd_pid
wait $kmemd_pid || true
run_with bad
fixture_agent h2 web
wait_for 20 grep -q "report [0-9]* acknowledged" agent-h2.log || fail "h2 does not report"
M=root-h2/sys/kernel/kmemctl/mitigations/usercopy-fastpath
echo "tripped: slow call: 2100 ms in a replacement, over trip_call_ms" >$M/reason
echo tripped >$M/state
failed() {
	grep -q '^kmemd_webhook_posts_total{outcome="failed"} [1-9]' <<<"$(api ops GET /metrics)"
}
wait_for 30 failed || fail "the unverifiable receiver's post is not counted failed: $(api ops GET /metrics | grep webhook)"
[ ! -s bad.jsonl ] || fail "kmemd posted to a receiver it cannot verify: $(cat bad.jsonl)"
echo "ok: a receiver kmemd cannot verify gets nothing, and the post is counted failed"
echo PASS
