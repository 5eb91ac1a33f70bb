#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# scripts/krew-package.sh BUILD_DIR OUT_DIR [URI_BASE] - package `kubectl topox` for krew: the built
# topox, named kubectl-topox, in OUT_DIR/kubectl-topox_linux_ARCH.tar.gz (ARCH of this machine),
# and OUT_DIR/topox.yaml rendered from deploy/krew/topox.yaml with the version, the archive's URI
# (URI_BASE/v<version>/<archive>; default the GitHub release) and its sha256. Platforms whose
# archive was not built here are left out of the rendered manifest. Then:
#   kubectl krew install --manifest=OUT_DIR/topox.yaml --archive=OUT_DIR/kubectl-topox_linux_ARCH.tar.gz
set -eu
build=${1:?usage: krew-package.sh BUILD_DIR OUT_DIR [URI_BASE]}
out=${2:?usage: krew-package.sh BUILD_DIR OUT_DIR [URI_BASE]}
base=${3:-https://github.com/topox/topox/releases/download}
root=$(cd "$(dirname "$0")/.." && pwd)
topox=$build/cli/topox
[ -x "$topox" ] || { echo "krew-package: $topox is not built" >&2; exit 1; }
case $(uname -m) in
x86_64 | amd64) arch=amd64 ;;
aarch64 | arm64) arch=arm64 ;;
*) echo "krew-package: no krew platform for $(uname -m)" >&2; exit 1 ;;
esac
version=$("$topox" version --short)
mkdir -p "$out"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
cp "$topox" "$stage/kubectl-topox"
archive=kubectl-topox_linux_$arch.tar.gz
tar -czf "$out/$archive" -C "$stage" kubectl-topox
sum=$(sha256sum "$out/$archive" | cut -d' ' -f1)
ARCH=$(echo "$arch" | tr "a-z" "A-Z")
# Keep the platform blocks of this arch only (a block starts at "    - selector:").
awk -v arch="$arch" '
    function flush() { if (keep) printf "%s", buf; buf = ""; keep = 0; inblock = 0 }
    /^    - selector:/ { flush(); inblock = 1; buf = $0 "\n"; next }
    inblock && /^      / { buf = buf $0 "\n"; if ($0 ~ "arch: " arch "$") keep = 1; next }
    inblock { flush() }
    { print }
    END { flush() }
' "$root/deploy/krew/topox.yaml" |
    sed -e "s#@VERSION@#$version#" -e "s#@URI_$ARCH@#$base/v$version/$archive#" \
        -e "s#@SHA256_$ARCH@#$sum#" >"$out/topox.yaml"
echo "$out/topox.yaml $out/$archive"
