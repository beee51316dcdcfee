#!/bin/bash
# kmemd's build pipeline (issue 45, part 4), as hosts and an operator
# drive it: hosts whose module waits for a build record report with their
# build file (one malformed: stored, counted, without it); GET /v1/builds
# counts them per mitigation, GET /v1/builds/file gives the file back, and
# /metrics has the waiting hosts. A bundle signed by a key kmemd does not
# pin, and a record of other copies than the build's (409, naming the
# copy), change nothing; a record made from the file and signed with
# kmemctl build sign is published (201, then 200 for the same bundle),
# audited as build.publish, and the next reply to a waiting host carries
# it, after a restart too. Hosts that no longer wait leave the counts.
#
#   tests/integration/builds-kmemd.sh BUILD_DIR SOURCE_DIR
set -euo pipefail

BUILD=${1:?usage: builds-kmemd.sh BUILD_DIR SOURCE_DIR}
SRC=${2:?usage: builds-kmemd.sh BUILD_DIR SOURCE_DIR}
KMEMCTL=$BUILD/cli/kmemctl
KMEMD=$BUILD/daemon/kmemd
BR=$BUILD/tests/integration/build-report

work=$(mktemp -d "$BUILD/builds-kmemd.XXXXXX")
# shellcheck source=tests/integration/lib.sh
. "$SRC/tests/integration/lib.sh"
in_work

pki_fleet
pki_hosts h1 h2 h3
kmemd_conf >kmemd.conf
kmemd_start
# the same port after a restart
sed -i "s/^listen = .*/listen = 127.0.0.1:$port/" kmemd.conf

BID=6b2e0c4a1f9d8e7c6b5a49382716f5e4d3c2b1a0
RELEASE=6.1.0-58-amd64
cat >build <<EOF
build_id $BID
release $RELEASE
version #1 SMP PREEMPT_DYNAMIC Debian 6.1.193-1 (2027-01-10)
copy usercopy-fastpath usercopy_fastpath.c:overlaps 32a81a5e20dc8926
copy usercopy-fastpath usercopy_fastpath.c:kmem_check_object 6e6ac23cf83443c7
func usercopy-fastpath __check_object_size 544 -
func usercopy-fastpath is_vmalloc_addr 80 -
EOF
printf 'not a build file\n' >malformed

# record COPY_DIGEST: the record of this build an operator makes, its
# first copy line's digest COPY_DIGEST
record() {
	printf 'kmemctl-build-record 2\n'
	sed -n 1,3p build
	printf 'source linux-source-6.1 6.1.193-1\n'
	printf 'copy usercopy-fastpath usercopy_fastpath.c:overlaps %s\n' "$1"
	sed -n 5p build
	printf 'func usercopy-fastpath __check_object_size 544 14121efd66dc2284\n'
	printf 'func usercopy-fastpath is_vmalloc_addr 80 8973d27156fab43c\n'
	printf 'end\n'
}

# report HOST FILE|- [MITIGATION...]: a report of HOST on the build, waiting
# for MITIGATION... with FILE as its build file; prints the reply's status
# and records (written to rec-HOST.N)
report() {
	local h=$1 file=$2 code seq
	shift 2
	# called in $(...): the count is kept in a file
	seq=$(($(cat seq-$h 2>/dev/null || echo 0) + 1))
	echo $seq >seq-$h
	$BR report "$h" $seq $BID $RELEASE "$file" "$@" >report-$h.bin
	code=$(as_curl "$h" -H 'Content-Type: application/x-protobuf' \
		--data-binary @report-$h.bin -o reply-$h.bin -w '%{http_code}' \
		"$URL/v1/agent/report") || fail "$h's report: curl failed"
	[ "$code" = 200 ] || fail "$h's report answered $code"
	rm -f rec-$h.*
	$BR reply reply-$h.bin rec-$h
}

# builds PYTHON: GET /v1/builds as b (the document), PYTHON true of it
builds() {
	ops_get /v1/builds >builds.json
	python3 -c "import json, sys; b = json.load(open('builds.json')); sys.exit(0 if ($1) else 1)" ||
		fail "GET /v1/builds: not ($1): $(cat builds.json)"
}

for h in h1 h2; do
	[ "$(report $h build usercopy-fastpath)" = "status 1 records 0" ] ||
		fail "$h waiting: its reply is not OK without records"
done
[ "$(report h3 malformed usercopy-fastpath)" = "status 1 records 0" ] ||
	fail "a malformed build file: the report is not stored"
echo "ok: three waiting hosts' reports stored, one with a malformed build file"
[ "$(metric kmemd_build_files_malformed_total)" = 1 ] || fail "the malformed file is not counted"
grep -q "its build file is malformed" kmemd.log || fail "the malformed file is not logged"
[ "$(db "SELECT count(*) FROM counters WHERE host_id = 'h3'")" = 1 ] || fail "h3's report is lost"

builds "len(b['builds']) == 1 and b['builds'][0]['build_id'] == '$BID'"
builds "b['builds'][0]['release'] == '$RELEASE' and b['builds'][0]['hosts'] == 3"
builds "b['builds'][0]['waiting'] == {'usercopy-fastpath': 3} and b['builds'][0]['records'] == 0"
builds "b['waiting'] == {'usercopy-fastpath': 3} and b['builds'][0]['first_seen_ms'] > 0"
echo "ok: GET /v1/builds: the build, its 3 hosts waiting for usercopy-fastpath"
[ "$(metric 'kmemd_build_record_waiting_hosts{mitigation="usercopy-fastpath"}')" = 3 ] ||
	fail "/metrics: not 3 hosts waiting"
[ "$(metric 'kmemd_build_record_waiting_hosts{mitigation="rstat-yield"}')" = 0 ] ||
	fail "/metrics: a mitigation none waits for is not 0"
ops_get /metrics >metrics.txt
promtool check metrics <metrics.txt || fail "promtool: $(cat metrics.txt)"
echo "ok: /metrics: 3 hosts waiting for usercopy-fastpath"

ops_get "/v1/builds/file?build_id=$BID" >build.got
cmp -s build build.got || fail "the build file kmemd gives back differs: $(cat build.got)"
expect 400 'build_id' "a build id that is not one" ops GET "/v1/builds/file?build_id=XYZ"
expect 404 'no host sent' "an unknown build" ops GET "/v1/builds/file?build_id=ffff"
echo "ok: GET /v1/builds/file gives the build file back"

OCTET=(-H 'Content-Type: application/octet-stream')
record 32a81a5e20dc8926 >good.rec
$KMEMCTL build sign -k signer.key -s ops -o good.bundle good.rec
# a key kmemd does not pin
$KMEMCTL policy keygen stranger >/dev/null
$KMEMCTL build sign -k stranger.key -s eve -o stranger.bundle good.rec
expect 400 'does not pin' "a record signed by an unknown key is refused" ops POST \
	/v1/builds/records "${OCTET[@]}" --data-binary @stranger.bundle
# copies other than the build's
record 0000000000000000 >other.rec
$KMEMCTL build sign -k signer.key -s ops -o other.bundle other.rec
expect 409 'usercopy_fastpath.c:overlaps' "a record of other copies is refused" ops POST \
	/v1/builds/records "${OCTET[@]}" --data-binary @other.bundle
expect 415 'octet-stream' "a bundle as JSON" ops POST /v1/builds/records \
	-H 'Content-Type: application/json' --data-binary @good.bundle
[ "$(db 'SELECT count(*) FROM build_records')" = 0 ] || fail "a refused record is stored"
[ "$(report h1 build usercopy-fastpath)" = "status 1 records 0" ] ||
	fail "a refused record reaches a host"
[ "$(db "SELECT count(*) FROM audit WHERE action = 'build.publish'")" = 0 ] ||
	fail "a refusal is audited"
echo "ok: refused records change nothing"

expect 201 '"new":true' "the record is published" ops POST /v1/builds/records \
	"${OCTET[@]}" --data-binary @good.bundle
expect 200 '"new":false' "the same bundle again" ops POST /v1/builds/records \
	"${OCTET[@]}" --data-binary @good.bundle
[ "$(db "SELECT count(*) FROM audit WHERE action = 'build.publish' AND actor = 'ops'")" = 2 ] ||
	fail "build.publish is not in the audit log"
[ "$(db "SELECT count(*) FROM audit WHERE detail LIKE 'build $BID ($RELEASE) record %'")" = 2 ] ||
	fail "the audit rows do not name the build"
builds "b['builds'][0]['records'] == 1"
[ "$(report h1 build usercopy-fastpath)" = "status 1 records 1" ] ||
	fail "the next reply to a waiting host has no record"
cmp -s rec-h1.0 good.bundle || fail "the reply's record is not the bundle published"
echo "ok: published, audited, and the next reply carries it"

# a restart: the records are loaded from the store
kill "$kmemd_pid"
wait "$kmemd_pid" || true
kmemd_start
[ "$(report h2 build usercopy-fastpath)" = "status 1 records 1" ] ||
	fail "after a restart, a waiting host's reply has no record"
cmp -s rec-h2.0 good.bundle || fail "after a restart, the record is not the bundle"
echo "ok: after a restart too"

# the hosts enact: nothing waits any more
for h in h1 h2 h3; do
	[ "$(report $h -)" = "status 1 records 0" ] || fail "$h: a host not waiting gets records"
done
[ "$(metric 'kmemd_build_record_waiting_hosts{mitigation="usercopy-fastpath"}')" = 0 ] ||
	fail "/metrics: hosts no longer waiting are still counted"
builds "b['waiting'] == {} and b['builds'][0]['waiting'] == {} and b['builds'][0]['hosts'] == 3"
echo "ok: hosts that no longer wait are not counted"
