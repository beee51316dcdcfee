#!/bin/bash
# kmemctl's bash completion, as the build makes it from
# cli/completion/kmemctl.in, with bash-completion's own helpers: objects,
# verbs, options and names complete as a user types them, and its
# mitigation and probe names are the module's (the lists in
# kmod/uapi/kmemctl.h). Also: the generator refuses a template without
# its tokens, and the man pages (kmemctl.8, kmemd.8, kmem-agent.8) format
# without groff warnings.
#   tests/cli/completion.sh SOURCE_DIR BUILD_DIR
set -euo pipefail

SRC=${1:?usage: completion.sh SOURCE_DIR BUILD_DIR}
BUILD=${2:?usage: completion.sh SOURCE_DIR BUILD_DIR}
# shellcheck source=/dev/null
. /usr/share/bash-completion/bash_completion
# shellcheck source=/dev/null
. "$BUILD/cli/completion/kmemctl"

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
expect "kmemctl build " "check copies file help list publish record sign sites verify"
expect "kmemctl build record --build" "--build --build-id"
expect "kmemctl build copies --" "--c --kmod"
expect "kmemctl build check --s" "--source"
expect "kmemctl build record --source-v" "--source-version"
expect "kmemctl --j" "--json"
expect "kmemctl -j rollout " "abort archive help list pause plan promote resume series start status"
expect "kmemctl --color " "always auto never"
expect "kmemctl --color never probe dis" "disable"
expect "kmemctl mitigation set rstat" "rstat-yield"
expect "kmemctl mitigation set rstat-yield o" "off on"
expect "kmemctl rollout status x --w" "--watch"
expect "kmemctl frob " ""
expect "kmemctl sec" "secret"
expect "kmemctl secret " "create help list revoke"
expect "kmemctl secret create --e" "--expires"
expect "kmemctl host " "events forget help list reenroll revoke show"
expect "kmemctl as" "assignment"
expect "kmemctl assignment " "create delete help list show"
expect "kmemctl fleet " "help resume status stop"
expect "kmemctl op" "operator"
expect "kmemctl operator " "help list revoke"
expect "kmemctl operator revoke --" "--cert --fingerprint"
expect "kmemctl audit list --s" "--since"
expect "kmemctl pki issue pki o" "observer operator"
expect "kmemctl wh" "whoami"

# the objects it offers are kmemctl's own (cli/kmemctl.c), in order
objs=$(sed -n 's/^\t{ "\([a-z]*\)", do_.*/\1/p' "$SRC/cli/kmemctl.c" | xargs)
comp=$(sed -n 's/.*local objects="\([^"]*\)".*/\1/p' "$SRC/cli/completion/kmemctl.in")
[ -n "$objs" ] && [ "$objs" = "$comp" ] ||
	{ echo "FAIL: completion objects '$comp', kmemctl's '$objs'" >&2; failed=1; }
echo "ok: the objects are kmemctl's"

# the names it offers are the module's: the X(ENUM, "id", ...) entries of
# its lists in the uapi header
described() {
	sed -n "/^#define $1(X)/,/^\$/s/.*X([A-Z_]*, \"\([a-z-]*\)\".*/\1/p" \
		"$SRC/kmod/uapi/kmemctl.h" | sort | xargs
}
offered() {
	COMP_WORDS=(kmemctl "$1" show "")
	COMP_CWORD=3
	COMP_LINE="kmemctl $1 show "
	COMP_POINT=${#COMP_LINE}
	COMPREPLY=()
	_kmemctl || true
	printf '%s\n' "${COMPREPLY[@]}" | sort | xargs
}
for kind in mitigation:KMEMCTL_MITIGATIONS probe:KMEMCTL_PROBES; do
	want=$(described "${kind#*:}")
	got=$(offered "${kind%%:*}")
	[ "$(echo "$want" | wc -w)" -ge 5 ] && [ "$got" = "$want" ] ||
		{ echo "FAIL: completion's ${kind%%:*} ids '$got', the module's '$want'" >&2; failed=1; }
done
echo "ok: the module's mitigations and probes"

# the generator: a template without a token, or none at all, is refused
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
grep -v '@PROBES@' "$SRC/cli/completion/kmemctl.in" >"$tmp/no-probes.in"
if "$BUILD/cli/completion-gen" "$tmp/no-probes.in" "$tmp/out" 2>"$tmp/err" ||
	! grep -q "the template lacks @PROBES@" "$tmp/err" || [ -e "$tmp/out" ]; then
	echo "FAIL: a template without @PROBES@: $(cat "$tmp/err")" >&2
	failed=1
fi
if "$BUILD/cli/completion-gen" "$tmp/missing.in" "$tmp/out" 2>"$tmp/err" ||
	! grep -q "missing.in: No such file" "$tmp/err"; then
	echo "FAIL: a missing template: $(cat "$tmp/err")" >&2
	failed=1
fi
echo "ok: completion-gen refuses a bad template"

for page in kmemctl.8 kmemd.8 kmem-agent.8; do
	warnings=$(groff -man -ww -z "$SRC/docs/man/$page" 2>&1)
	[ -z "$warnings" ] || { echo "FAIL: $page: $warnings" >&2; failed=1; }
	echo "ok: $page formats cleanly"
done
[ $failed = 0 ] && echo PASS
