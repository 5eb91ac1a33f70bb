#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# scripts/check-format.sh - fails when a tracked C file differs from what clang-format (with the
# repository's .clang-format) would write. Fix with `make format`.
# Usage: check-format.sh [SOURCE_DIR]
set -u
root=${1:-$(dirname "$0")/..}
cd "$root" || exit 2
if ! command -v clang-format >/dev/null 2>&1; then
    echo "format: clang-format is not installed (apt-get install clang-format)"
    exit 1
fi
files=$(git ls-files '*.c' '*.h' 2>/dev/null)
[ -n "$files" ] || files=$(find . -path ./build -prune -o \( -name '*.c' -o -name '*.h' \) -print)
bad=""
for f in $files; do
    if ! clang-format --dry-run -Werror "$f" >/dev/null 2>&1; then
        bad="$bad $f"
    fi
done
if [ -n "$bad" ]; then
    echo "format: these files are not clang-formatted (run 'make format'):"
    for f in $bad; do echo "  $f"; done
    exit 1
fi
echo "format: ok"
