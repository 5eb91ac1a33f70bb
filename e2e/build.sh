#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# e2e/build.sh [helm] - build the real control plane for make e2e from the Go modules that go.mod,
# lws/go.mod and helm/go.mod pin: etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
# kubectl, the LeaderWorkerSet controller and helm (for the chart, deploy/helm/topox), into
# build/e2e/bin. With the argument `helm`, only helm (what `make test` needs of it). Module and build caches live outside the clone
# (E2E_CACHE, default /var/cache/topox-e2e), so a second build only relinks what changed.
# A module that cannot be fetched is named and the build fails; nothing is skipped.
set -euo pipefail
cd "$(dirname "$0")"
BIN=${E2E_BIN:-$PWD/../build/e2e/bin}
CACHE=${E2E_CACHE:-/var/cache/topox-e2e}
export GOMODCACHE=$CACHE/mod GOCACHE=$CACHE/build GOFLAGS="-p=${E2E_GO_JOBS:-2} -buildvcs=false -mod=readonly"
export CGO_ENABLED=0
mkdir -p "$BIN" "$GOMODCACHE" "$GOCACHE"
command -v go >/dev/null || { echo "e2e-build: go is not installed (Go 1.26 builds the control plane)" >&2; exit 1; }

# Versions for --version, as the upstream release builds stamp them.
kver=$(go list -m -f '{{.Version}}' k8s.io/kubernetes)
lver=$(cd lws && go list -m -f '{{.Version}}' sigs.k8s.io/lws)
cb=k8s.io/component-base/version cg=k8s.io/client-go/pkg/version
minor=${kver#v1.}; minor=${minor%%.*}
kflags="-s -w"
for p in $cb $cg; do
    kflags+=" -X $p.gitVersion=$kver -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
done

fetch() { # fetch DIR: download every module of DIR's go.mod, naming the first that fails
    local log
    if ! log=$( cd "$1" && go mod download 2>&1 ); then
        echo "e2e-build: cannot fetch a Go module for $1/go.mod:" >&2
        echo "$log" | grep -E 'go: |reading|not found|403|404|timeout' | head -5 >&2
        exit 1
    fi
}
# helm, from helm/go.mod's tool directive, stamped with its version as helm's release build does.
build_helm() {
    local hver
    fetch helm
    hver=$(cd helm && go list -m -f '{{.Version}}' helm.sh/helm/v3)
    ( cd helm && nice -n 19 go build -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=$hver" \
        -o "$BIN/helm" helm.sh/helm/v3/cmd/helm )
}
if [ "${1:-}" = helm ]; then
    build_helm
    echo "e2e-build: helm -> $BIN/helm"
    exit 0
fi

t0=$(date +%s)
fetch . && fetch lws
t1=$(date +%s)
nice -n 19 go build -ldflags "$kflags" -o "$BIN/" ./cmd/...
( cd lws && nice -n 19 go build -ldflags "-s -w -X sigs.k8s.io/lws/pkg/version.GitVersion=$lver" \
    -o "$BIN/lws-controller" sigs.k8s.io/lws/cmd )
build_helm
t2=$(date +%s)
# The LWS CRD ships in its module; up.sh applies it.
cp "$(cd lws && go list -m -f '{{.Dir}}' sigs.k8s.io/lws)/config/crd/bases/leaderworkerset.x-k8s.io_leaderworkersets.yaml" \
    "$BIN/../lws-crd.yaml"
echo "$lver" >"$BIN/../lws.version"
echo "e2e-build: modules $((t1 - t0))s, build $((t2 - t1))s -> $BIN"
