#!/bin/bash
# `kmemctl policy`: a key pair, a signed bundle that verifies against the
# pinned public key, and every way a bundle or its inputs can be wrong:
# each refused with a clear error and a non-zero exit.
set -euo pipefail

BUILD=${1:?usage: cli-policy.sh BUILD_DIR}
KMEMCTL=$BUILD/cli/kmemctl
work=$(mktemp -d "$BUILD/cli-policy.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"

fail() {
	echo "FAIL: $*" >&2
	cat out >&2 || true
	exit 1
}

# expect_rc RC TEXT WHAT CMD...: exit code RC and TEXT in its output
expect_rc() {
	local want=$1 text=$2 what=$3 rc=0
	shift 3
	"$@" >out 2>&1 || rc=$?
	[ "$rc" = "$want" ] || fail "$what: exit $rc, expected $want"
	[ -z "$text" ] || grep -q -- "$text" out || fail "$what: '$text' not in the output"
	echo "ok: $what"
}

expect_rc 0 "private op.key, public op.pem" "keygen" $KMEMCTL policy keygen op
[ "$(stat -c %a op.key)" = 600 ] || fail "op.key is mode $(stat -c %a op.key)"
expect_rc 1 "not overwriting" "keygen refuses to overwrite a key" $KMEMCTL policy keygen op
$KMEMCTL policy keygen other >/dev/null
mkdir keys
cp op.pem keys/

printf '{"mitigations":{"rstat-yield":{"mode":"on","params":{"every_cpus":2}}}}' >doc.json
expect_rc 0 "" "sign" $KMEMCTL policy sign -k op.key -n base -v 7 -s ops -e 30 -o b.bin doc.json
expect_rc 0 "^version 7$" "verify shows the version" $KMEMCTL policy verify -K keys b.bin
grep -q '^name base$' out || fail "verify: name missing"
grep -q '^signer ops$' out || fail "verify: signer missing"
grep -q '"every_cpus":2' out || fail "verify: document missing"

$KMEMCTL policy sign -k op.key -n base -v 7 doc.json >stdout.bin
expect_rc 0 "^version 7$" "sign to stdout" $KMEMCTL policy verify -K keys stdout.bin

# one flipped byte inside the document: "on" becomes "of"
off=$(grep -obUa '"on"' b.bin | sed -n 1p | cut -d: -f1)
cp b.bin tampered.bin
printf f | dd of=tampered.bin bs=1 seek=$((off + 2)) conv=notrunc status=none
cmp -s b.bin tampered.bin && fail "tampering changed nothing"
expect_rc 1 "does not verify: Bad message" "tampered bundle" \
	$KMEMCTL policy verify -K keys tampered.bin
head -c 40 b.bin >truncated.bin
expect_rc 1 "does not verify" "truncated bundle" $KMEMCTL policy verify -K keys truncated.bin
: >empty.bin
expect_rc 1 "does not verify" "empty bundle" $KMEMCTL policy verify -K keys empty.bin
$KMEMCTL policy sign -k other.key -n base -v 7 -o foreign.bin doc.json
expect_rc 1 "Required key not available" "bundle by an unpinned key" \
	$KMEMCTL policy verify -K keys foreign.bin
mkdir nokeys
expect_rc 1 "loading the keys" "no pinned keys" $KMEMCTL policy verify -K nokeys b.bin

printf '{"mitigations":{"rstat-yield":{"mod":"on"}}}' >typo.json
expect_rc 1 'unknown key "mod"' "document with a typo" \
	$KMEMCTL policy sign -k op.key -n base -v 1 -o x.bin typo.json
[ ! -e x.bin ] || fail "a bundle was written for a bad document"
printf '{"mitigations":' >cut.json
expect_rc 1 "cut.json" "truncated document" $KMEMCTL policy sign -k op.key -n b -v 1 cut.json
head -c 70000 /dev/zero | tr '\0' ' ' >big.json
expect_rc 1 "File too large" "oversized document" $KMEMCTL policy sign -k op.key -n b -v 1 big.json
expect_rc 1 "not an Ed25519 signing key" "public key as signing key" \
	$KMEMCTL policy sign -k op.pem -n b -v 1 doc.json
expect_rc 2 "version '0'" "version 0" $KMEMCTL policy sign -k op.key -n b -v 0 doc.json
expect_rc 2 "version 'x'" "version not a number" $KMEMCTL policy sign -k op.key -n b -v x doc.json
expect_rc 2 "days '0'" "days 0" $KMEMCTL policy sign -k op.key -n b -v 1 -e 0 doc.json
expect_rc 2 "usage" "no key" $KMEMCTL policy sign -n b -v 1 doc.json
# kmemd's rule for policy names, or hosts running it would have their reports refused
long=$(printf '%064d' 0)
expect_rc 2 "policy name must be 1 to 63 of" "a 64-character name" \
	$KMEMCTL policy sign -k op.key -n "$long" -v 1 doc.json
expect_rc 2 "policy name must be 1 to 63 of" "a name with a space" \
	$KMEMCTL policy sign -k op.key -n "web base" -v 1 doc.json
expect_rc 2 "policy name must be 1 to 63 of" "a name with a slash" \
	$KMEMCTL policy sign -k op.key -n web/base -v 1 doc.json
expect_rc 2 "policy name must be 1 to 63 of" "an empty name" \
	$KMEMCTL policy sign -k op.key -n "" -v 1 doc.json
expect_rc 0 "" "a 63-character name of every kind" \
	$KMEMCTL policy sign -k op.key -n "Web-1.base_${long:0:52}" -v 1 -o n63.bin doc.json
expect_rc 0 "^name Web-1.base_0" "it verifies" $KMEMCTL policy verify -K keys n63.bin
expect_rc 2 "unknown verb" "unknown verb" $KMEMCTL policy frobnicate
echo "PASS"
