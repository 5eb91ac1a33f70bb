#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tests/oracle/run.sh - compares topox's request decoders with encoding/json into kube-scheduler's
# own wire types (issue 21, item 5). Builds main.go offline from the module cache `make e2e-build`
# fills (E2E_CACHE, default /var/cache/topox-e2e), then decodes each tests/fixtures/oracle/VERB-*.json
# with both and fails on any difference, printing the input and both outputs. known/VERB-*.json
# are the documented differences (docs/serve.md): both are run and printed, they do not fail, but
# one that comes to agree fails, so that the list stays true. Exit 77 (ctest SKIP) without go or
# the cache, unless TOPOX_ORACLE_REQUIRED is set (CI sets it once `make e2e` has filled the cache):
# then a skip is a failure, so a cache problem cannot pass for a green run.
#   run.sh ORACLE_C FIXTURES_DIR WORK_DIR
set -u
skip() {
    echo "oracle: SKIP: $1"
    if [ -n "${TOPOX_ORACLE_REQUIRED:-}" ]; then
        echo "oracle: TOPOX_ORACLE_REQUIRED is set: a skip fails"
        exit 1
    fi
    exit 77
}
oc=$1 fixtures=$2 work=$3
here=$(cd "$(dirname "$0")" && pwd)
cache=${E2E_CACHE:-/var/cache/topox-e2e}
if ! command -v go >/dev/null 2>&1; then
    skip "go is not installed (the Go oracle needs go >= 1.26)"
fi
if [ ! -d "$cache/mod/k8s.io/kube-scheduler@v0.37.2" ]; then
    skip "$cache/mod has no k8s.io/kube-scheduler@v0.37.2 (\`make e2e-build\` fetches it)"
fi
mkdir -p "$work" && work=$(cd "$work" && pwd)
if ! (cd "$here" && GOMODCACHE="$cache/mod" GOCACHE="$cache/build" GOPROXY=off CGO_ENABLED=0 \
    GOFLAGS='-mod=readonly -p=1' GOTOOLCHAIN=local GO111MODULE=on \
    nice -n 19 go build -o "$work/oracle" .); then
    skip "go build failed offline in $here (module cache $cache/mod incomplete?)"
fi
agreed=0 known=0 failed=0
for f in "$fixtures"/*-*.json "$fixtures"/known/*-*.json; do
    [ -e "$f" ] || continue
    verb=$(basename "$f" | sed 's/-.*//')
    go_out=$("$work/oracle" "$verb" "$f") || { echo "oracle: the Go oracle failed on $f"; exit 1; }
    c_out=$("$oc" "$verb" "$f") || { echo "oracle: oracle_c failed on $f"; exit 1; }
    case $f in */known/*) is_known=1 ;; *) is_known=0 ;; esac
    if [ "$go_out" = "$c_out" ]; then
        if [ $is_known = 1 ]; then
            echo "FAIL $f: listed as a known difference but topox now agrees with Go: move it out of known/ and docs/serve.md"
            failed=$((failed + 1))
        else
            agreed=$((agreed + 1))
        fi
        continue
    fi
    if [ $is_known = 1 ]; then
        echo "known difference $f"
        known=$((known + 1))
    else
        echo "FAIL $f"
        failed=$((failed + 1))
    fi
    echo "--- input:"; cat "$f"; echo
    echo "--- encoding/json (kube-scheduler's types):"; echo "$go_out"
    echo "--- topox:"; echo "$c_out"
done
echo "oracle: $agreed inputs agreed, $known known differences, $failed failed"
[ $failed -eq 0 ] && [ $agreed -gt 0 ]
