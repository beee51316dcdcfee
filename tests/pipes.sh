#!/bin/bash
# Under `set -o pipefail`, a pipe into a reader that stops early (grep -q,
# grep -m, head) fails whenever the writer writes after the reader is gone:
# the writer dies of SIGPIPE and the pipe's status is 141, a flaky false
# failure on a busy machine. Such scripts hand the reader the whole text
# instead (grep -q P <<<"$(cmd)", cmd | sed -n 1p).
#   tests/pipes.sh SOURCE_DIR
set -euo pipefail

SRC=${1:?usage: pipes.sh SOURCE_DIR}
cd "$SRC"
# this script's own pattern is not a pipe
mapfile -t scripts < <(git ls-files -- '*.sh' tests/vm/run 'scripts/*' .ci/run ':!tests/pipes.sh' |
	xargs grep -l 'set -[a-z]*o pipefail')
bad=$(grep -nE '(^|[^|])\|[[:space:]]*(grep[[:space:]]+(-[a-zA-Z]*[qm]|--quiet|--max-count)|head)\b' \
	"${scripts[@]}" || true)
[ -z "$bad" ] || {
	echo "FAIL: early-stopping readers in pipes under pipefail:" >&2
	echo "$bad" >&2
	exit 1
}
echo "ok: ${#scripts[@]} pipefail scripts, no pipe into grep -q, grep -m or head"
