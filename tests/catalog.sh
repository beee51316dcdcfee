#!/bin/bash
# Every MESSAGE_ID in lib/message-ids.h has one journald catalog entry in
# deploy/catalog/kmemctl.catalog, and the catalog names no other: an event
# without an entry explains nothing under journalctl -x.
set -euo pipefail

SRC=${1:?usage: catalog.sh SOURCE_DIR}
ids=$(sed -n 's/^#define MID_[A-Z_]* "\([0-9a-f]\{32\}\)"$/\1/p' "$SRC/lib/message-ids.h" | sort)
entries=$(sed -n 's/^-- \([0-9a-f]\{32\}\)$/\1/p' "$SRC/deploy/catalog/kmemctl.catalog" | sort)
[ -n "$ids" ] || { echo "no MESSAGE_IDs found in lib/message-ids.h" >&2; exit 1; }
dup=$(printf '%s\n' "$ids" | uniq -d)
[ -z "$dup" ] || { echo "MESSAGE_ID defined twice: $dup" >&2; exit 1; }
missing=$(comm -23 <(printf '%s\n' "$ids") <(printf '%s\n' "$entries"))
extra=$(comm -13 <(printf '%s\n' "$ids") <(printf '%s\n' "$entries"))
[ -z "$missing" ] || { echo "no catalog entry for: $missing" >&2; exit 1; }
[ -z "$extra" ] || { echo "catalog entries for no MESSAGE_ID: $extra" >&2; exit 1; }
echo "ok: $(printf '%s\n' "$ids" | wc -l) MESSAGE_IDs, each with a catalog entry"
