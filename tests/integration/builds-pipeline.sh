#!/bin/bash
# A build with no record, through kmemd, to the module: a kmem-agent on a
# fixture tree whose kmemctl.ko holds usercopy-fastpath unsupported, "not
# verified", reports its build file; kmemctl build list shows the build
# and the host waiting; kmemctl build record --build-id makes the record
# from kmemd's copy of the file against Debian's linux-source-6.1, build
# sign signs it with the fleet's policy key and build publish hands it to
# kmemd, which hands it to the host: the agent keeps it in its state and
# writes it to the module's records file, then runs its policy again.
# Refused, with a reason and nothing stored: a bundle signed by a key kmemd
# does not pin, and a record checked with other copies than the host's
# module's. Once the module says the mitigation is off, no host waits.
#
#   tests/integration/builds-pipeline.sh BUILD_DIR SOURCE_DIR
set -euo pipefail

BUILD=${1:?usage: builds-pipeline.sh BUILD_DIR SOURCE_DIR}
SRC=${2:?usage: builds-pipeline.sh BUILD_DIR SOURCE_DIR}
KMEMCTL=$BUILD/cli/kmemctl
KMEMD=$BUILD/daemon/kmemd
AGENT=$BUILD/agent/kmem-agent
TARBALL=/usr/src/linux-source-6.1.tar.xz
[ -r "$TARBALL" ] || { echo "FAIL: $TARBALL missing: run scripts/install-deps kernel" >&2; exit 1; }

work=$(mktemp -d "$BUILD/builds-pipeline.XXXXXX")
chmod 755 "$work"
# shellcheck source=tests/integration/lib.sh
. "$SRC/tests/integration/lib.sh"
in_work

pki_fleet
pki_hosts h1
kmemd_conf >kmemd.conf
kmemd_start
OPS=(--server "127.0.0.1:$port" --ca pki/ca.crt --cert pki/ops.crt --key pki/ops.key)
ctl() {
	"$KMEMCTL" "${OPS[@]}" "$@"
}

# the fixture's module: usercopy-fastpath waits for a record of this build,
# whose build file has this kmod/'s copies as the module would show them,
# and the fixture kernel's build id (sys/kernel/notes)
BUILD_ID=e4f18d9dc1d0e6fc2b17e93e885a647b3c0a6fc1
M=sys/kernel/kmemctl
cp -r "$SRC/tests/fixtures/host-6.1" root-template
{
	echo "build_id $BUILD_ID"
	sed -n 2,3p "$SRC/tests/fixtures/builds/debian-6.1"
	"$KMEMCTL" build copies --kmod "$SRC/kmod" |
		awk '$1 == "usercopy-fastpath" && ($2 == "-" || $2 == "6.1") { print "copy", $1, $3, $4 }'
	grep '^func usercopy-fastpath ' "$SRC/tests/fixtures/builds/debian-6.1"
} >build-file
echo unsupported >root-template/$M/mitigations/usercopy-fastpath/state
echo "unsupported: build ${BUILD_ID:0:12} (6.1.0-57-amd64) not verified: no record has __check_object_size" \
	>root-template/$M/mitigations/usercopy-fastpath/reason
cp build-file root-template/$M/build
: >root-template/$M/records
printf '{"mitigations":{"usercopy-fastpath":{"mode":"on"}}}' >fast.json
$KMEMCTL policy sign -k signer.key -n fast -v 1 -s ops -o fast.bundle fast.json
expect 201 '"signed":true' "policy fast is uploaded" ops POST /v1/policies \
	-H 'Content-Type: application/x-protobuf' --data-binary @fast.bundle
expect 201 '"id":' "fast is assigned to role=web" ops POST /v1/assignments \
	-H 'Content-Type: application/json' \
	--data '{"policy":"fast","version":1,"selector":{"labels":{"role":"web"}}}'
FIXTURE=$PWD/root-template fixture_agent h1 web
wait_for 20 grep -q "report [0-9]* acknowledged" agent-h1.log || fail "h1's first report"

waiting() {
	ctl build list >list.txt 2>&1 && grep -q "^${BUILD_ID:0:12} .*usercopy-fastpath 1" list.txt
}
wait_for 20 waiting || fail "build list: $(cat list.txt)"
echo "ok: build list shows h1's build waiting: $(sed -n 2p list.txt)"
ctl build file "$BUILD_ID" -o kmemd.build || fail "build file"
cmp -s kmemd.build build-file || fail "kmemd's build file differs: $(diff build-file kmemd.build)"
echo "ok: kmemd keeps the build file as the host sent it"
ctl build file 00ff >out 2>&1 && fail "build file of an unknown build: $(cat out)"
ctl build file xyz >out 2>&1 && fail "build file of a malformed id: $(cat out)"
echo "ok: unknown and malformed build ids are refused"

# the record, from kmemd's copy, against the source the build names
ctl build record --build-id "$BUILD_ID" --source "$TARBALL" --kmod "$SRC/kmod" -o h1.rec >out 2>&1 ||
	fail "build record --build-id: $(cat out)"
grep -q "^func usercopy-fastpath __check_object_size " h1.rec || fail "h1.rec: $(cat h1.rec)"
$KMEMCTL build sign -k signer.key -s ops -o h1.bundle h1.rec

# refused, changing nothing: an unpinned key; other copies than the module's
$KMEMCTL policy keygen stranger >/dev/null
$KMEMCTL build sign -k stranger.key -o stranger.bundle h1.rec
ctl build publish stranger.bundle >out 2>&1 && fail "an unpinned key's bundle was published"
grep -q "pin" out || fail "no reason for the unpinned key: $(cat out)"
sed '0,/^copy usercopy-fastpath /s/^\(copy usercopy-fastpath [^ ]*\) .*/\1 0000000000000000/' \
	h1.rec >other.rec
$KMEMCTL build sign -k signer.key -o other.bundle other.rec
ctl build publish other.bundle >out 2>&1 && fail "a record of other copies was published"
grep -q "differs" out || fail "no copy named for other copies: $(cat out)"
sleep 2
[ ! -s root-h1/$M/records ] || fail "a refused bundle reached the module: $(cat root-h1/$M/records)"
echo "ok: an unpinned key's bundle and other copies' record are refused, nothing reaches the host"

ctl build publish h1.bundle >out 2>&1 || fail "build publish: $(cat out)"
echo "ok: $(cat out)"
wait_for 20 sh -c "[ -s root-h1/$M/records ]" || fail "the record did not reach h1's module"
cmp -s root-h1/$M/records h1.rec || fail "h1's module got another record: $(cat root-h1/$M/records)"
ls state-h1/builds/kmemd-*.bundle >/dev/null || fail "h1 did not keep the bundle"
grep -q "kmemd's build record for build $BUILD_ID (6.1.0-57-amd64), signed by ops, kept" agent-h1.log ||
	fail "h1 did not log the record kept"
wait_for 20 grep -q "policy fast version 1 from disk accepted" agent-h1.log ||
	fail "h1 did not run its policy again after the admission"
echo "ok: h1 kept the record, wrote it to the module and ran its policy again"
# publishing it again stores nothing new
ctl build publish h1.bundle >out 2>&1 || fail "build publish again: $(cat out)"
[ "$(ls state-h1/builds | wc -l)" = 1 ] || fail "h1 keeps more than one bundle: $(ls state-h1/builds)"

# the module admitted it: nothing waits
echo off >root-h1/$M/mitigations/usercopy-fastpath/state
echo "off: verified: its code matches record ${BUILD_ID:0:12} (6.1.0-57-amd64, linux-source-6.1 6.1.192-3)" \
	>root-h1/$M/mitigations/usercopy-fastpath/reason
none_waiting() {
	ctl build list >list.txt 2>&1 && ! grep -q "usercopy-fastpath" list.txt
}
wait_for 20 none_waiting || fail "build list still shows h1 waiting: $(cat list.txt)"
echo "ok: no host waits once the module admitted the record"
expect 200 '"action":"build.publish"' "the audit log has the publications" ops GET "/v1/audit"
agents_stop_none_lost h1
echo PASS
