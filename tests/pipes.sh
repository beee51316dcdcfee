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
# and the libraries they source ($VAR/ prefixes dropped, other variables
# matching anything): a pipefail script runs their pipes too
mapfile -t libs < <(grep -hoE '^[[:space:]]*(\.|source)[[:space:]]+"?[^" ]+' "${scripts[@]}" |
	sed -E 's/^[[:space:]]*(\.|source)[[:space:]]+"?//; s#^\$[A-Za-z_]+/##; s#\$[A-Za-z_]+#*#g' |
	grep '^[^/].*/' || true)
mapfile -t files < <(git ls-files -- '*.sh')
for lib in "${libs[@]}"; do
	for f in "${files[@]}"; do
		# shellcheck disable=SC2053 # $lib is a glob
		[[ $f == $lib || $f == */$lib ]] && scripts+=("$f")
	done
done
mapfile -t scripts < <(printf '%s\n' "${scripts[@]}" | sort -u)
bad=$(grep -nE '(^|[^|])\|[[:space:]]*(grep[[:space:]]+(-[a-zA-Z]*[qm]|--quiet|--max-count)|head)\b' \
	"${scripts[@]}" || true)
[ -z "$bad" ] || {
	echo "FAIL: early-stopping readers in pipes under pipefail:" >&2
	echo "$bad" >&2
	exit 1
}
echo "ok: ${#scripts[@]} pipefail scripts and their libraries, no pipe into grep -q, grep -m or head"
