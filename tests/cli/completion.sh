#!/bin/bash
# kmemctl's bash completion (cli/completion/kmemctl) with bash-completion's
# own helpers: objects, verbs, options and names complete as a user types
# them, and its mitigation and probe names are the module's
# (kmod/uapi/kmemctl.h). Also: the man pages (kmemctl.8, kmemd.8,
# kmem-agent.8) format without groff warnings.
#   tests/cli/completion.sh SOURCE_DIR
set -euo pipefail

SRC=${1:?usage: completion.sh SOURCE_DIR}
# shellcheck source=/dev/null
. /usr/share/bash-completion/bash_completion
# shellcheck source=cli/completion/kmemctl
. "$SRC/cli/completion/kmemctl"

failed=0
# expect "LINE" "WORDS": completing at the end of LINE offers exactly WORDS
expect() {
	local got
	read -ra COMP_WORDS <<<"$1"
	[[ $1 == *" " ]] && COMP_WORDS+=("")
	COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
	COMP_LINE=$1
	COMP_POINT=${#1}
	COMPREPLY=()
	_kmemctl || true
	got=$(printf '%s\n' "${COMPREPLY[@]}" | sort | xargs)
	if [ "$got" != "$2" ]; then
		echo "FAIL: '$1' completes to '$got', want '$2'" >&2
		failed=1
	else
		echo "ok: '$1' -> $2"
	fi
}

expect "kmemctl ro" "rollout"
expect "kmemctl bu" "build"
expect "kmemctl build " "check help record sign verify"
expect "kmemctl build check --s" "--source"
expect "kmemctl build record --source-v" "--source-version"
expect "kmemctl --j" "--json"
expect "kmemctl -j rollout " "abort help list pause plan promote resume start status"
expect "kmemctl --color " "always auto never"
expect "kmemctl --color never probe dis" "disable"
expect "kmemctl mitigation set rstat" "rstat-yield"
expect "kmemctl mitigation set rstat-yield o" "off on"
expect "kmemctl rollout status x --w" "--watch"
expect "kmemctl frob " ""
expect "kmemctl sec" "secret"
expect "kmemctl secret " "create help revoke"
expect "kmemctl secret create --e" "--expires"
expect "kmemctl host " "help list reenroll revoke show"

# the objects it offers are kmemctl's own (cli/kmemctl.c), in order
objs=$(sed -n 's/^\t{ "\([a-z]*\)", do_.*/\1/p' "$SRC/cli/kmemctl.c" | xargs)
comp=$(sed -n 's/.*local objects="\([^"]*\)".*/\1/p' "$SRC/cli/completion/kmemctl")
[ -n "$objs" ] && [ "$objs" = "$comp" ] ||
	{ echo "FAIL: completion objects '$comp', kmemctl's '$objs'" >&2; failed=1; }
echo "ok: the objects are kmemctl's"

# the names it offers are the module's
names() {
	sed -n "s|.*/\* \"\([a-z-]*\)\" \*/.*|\1|p" "$SRC/kmod/uapi/kmemctl.h" | grep "$1" | sort | xargs
}
mits=$(sed -n 's/.*kasan-flush-batch tlb-gen[^"]*"/&/p' "$SRC/cli/completion/kmemctl" |
	grep -o '"[a-z -]*"' | tr -d '"' | tr ' ' '\n' | sort | xargs)
uapi_mits=$(sed -n '/^enum kmemctl_mitigation {/,/^};/s|.*/\* "\([a-z-]*\)" \*/.*|\1|p' \
	"$SRC/kmod/uapi/kmemctl.h" | sort | xargs)
[ "$mits" = "$uapi_mits" ] || { echo "FAIL: completion mitigations '$mits', module '$uapi_mits'" >&2; failed=1; }
probes=$(grep -o 'compgen -W "rstat-flush [^"]*"' "$SRC/cli/completion/kmemctl" |
	sed 's/compgen -W //' | tr -d '"' | tr ' ' '\n' | sort | xargs)
uapi_probes=$(sed -n '/^enum kmemctl_probe {/,/^};/s|.*/\* "\([a-z-]*\)" \*/.*|\1|p' \
	"$SRC/kmod/uapi/kmemctl.h" | sort | xargs)
[ "$probes" = "$uapi_probes" ] || { echo "FAIL: completion probes '$probes', module '$uapi_probes'" >&2; failed=1; }
echo "ok: the module's mitigations and probes"

for page in kmemctl.8 kmemd.8 kmem-agent.8; do
	warnings=$(groff -man -ww -z "$SRC/docs/man/$page" 2>&1)
	[ -z "$warnings" ] || { echo "FAIL: $page: $warnings" >&2; failed=1; }
	echo "ok: $page formats cleanly"
done
[ $failed = 0 ] && echo PASS
