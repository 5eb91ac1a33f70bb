#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# scripts/check-layering.sh - fails when a folder includes a header its layer must not see
# (STYLE.md 2.2): policy/ no HTTP, JSON, YAML, curl, hwloc, log or extender headers; topology/ no
# policy/ or extender/; only topology/discover_hwloc.c includes hwloc; common/ nothing of ours above it.
# Usage: check-layering.sh [SOURCE_DIR]
set -u
root=${1:-$(dirname "$0")/..}
cd "$root" || exit 2
fail=0

# check FOLDER REGEX WHY [EXCEPT_FILE]
check() {
    folder=$1 regex=$2 why=$3 except=${4:-}
    [ -d "$folder" ] || return 0
    hits=$(find "$folder" -name '*.[ch]' ! -path "$except" -print0 2>/dev/null |
        xargs -0 -r grep -nE "^[[:space:]]*#[[:space:]]*include[[:space:]]*[<\"]($regex)" || true)
    if [ -n "$hits" ]; then
        echo "layering: $folder must not include $why:"
        echo "$hits" | sed 's/^/  /'
        fail=1
    fi
}

net='microhttpd\.h|jansson\.h|jansson_config\.h|curl/|yaml\.h|hwloc|libxml'
check policy "$net|common/log\.h|extender/" "HTTP, JSON, YAML, curl, hwloc, log or extender headers"
check topology "policy/|extender/|microhttpd\.h|jansson|curl/|common/log\.h" "policy/, extender/, HTTP, JSON, curl or log headers"
check topology "hwloc" "hwloc outside discover_hwloc.c" "topology/discover_hwloc.c"
check common "topology/|policy/|extender/|$net" "anything above common/"

if [ "$fail" -eq 0 ]; then
    echo "layering: ok (policy/, topology/ and common/ include only what their layer allows)"
fi
exit $fail
