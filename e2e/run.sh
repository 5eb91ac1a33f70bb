#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# e2e/run.sh - make e2e: bring the cluster up, print every component's version, run the scenarios,
# take the cluster down (also on failure). Exits with the scenarios' status.
source "$(dirname "$0")/lib.sh"
SPEC=${CLUSTER:-racks=4,nodes-per-rack=3,gpus-per-node=8}
trap '"$ROOT/e2e/down.sh"' EXIT
: >"$LOGS/scenarios.log"
"$ROOT/e2e/up.sh" "$SPEC"
echo "== versions"
for b in kube-apiserver kube-controller-manager kube-scheduler; do echo "$b: $("$BIN/$b" --version)"; done
echo "kubectl: $("$BIN/kubectl" version --client -o json | jq -r .clientVersion.gitVersion)"
echo "etcd: $("$BIN/etcd" --version | head -1)"
echo "lws-controller: sigs.k8s.io/lws $(cat "$E/lws.version")"
echo "topox: $("$TOPOX" version | head -1)"
echo "== scenarios on $SPEC (logs: $LOGS)"
"$ROOT/e2e/scenarios.sh"
