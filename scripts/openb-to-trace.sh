#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# scripts/openb-to-trace.sh - the openb pod list of Alibaba's GPU cluster (clusterdata
# cluster-trace-gpu-v2023, the trace of the FGD paper, USENIX ATC '23) as a `topox simulate` trace:
# each pod that asks for GPUs is a group of one pod of num_gpu GPUs (TP = num_gpu: the pod's GPUs on
# one node), arriving at creation_time and living until deletion_time (at least 1 s). A pod that
# shares a GPU (gpu_milli < 1000) counts as one whole GPU: topox places whole devices. Pods with no
# GPU are left out.
#
#   scripts/openb-to-trace.sh CSV [K/N] [COMPRESS]
#     K/N       only the K-th of N equal windows of the GPU pods, in creation order (all)
#     COMPRESS  arrivals COMPRESS times closer together, lifetimes kept (1): the load x COMPRESS
# Times start at 0 at the window's first arrival. Replay on `--cluster openb` (its 1,213 nodes).
set -eu
csv=${1:?usage: openb-to-trace.sh CSV [K/N] [COMPRESS]}
win=${2:-1/1}
compress=${3:-1}
k=${win%/*}
n=${win#*/}
awk -F, -v k="$k" -v n="$n" -v c="$compress" '
BEGIN { m = 0 }
NR == 1 {
    for (i = 1; i <= NF; i++) col[$i] = i
    if (!("num_gpu" in col) || !("creation_time" in col) || !("deletion_time" in col)) {
        print "openb-to-trace: " FILENAME ": no num_gpu, creation_time or deletion_time column" > "/dev/stderr"
        exit 2
    }
    next
}
$col["num_gpu"] + 0 >= 1 { name[m] = $col["name"]; g[m] = $col["num_gpu"] + 0
                           a[m] = $col["creation_time"] + 0; d[m] = $col["deletion_time"]; m++ }
END {
    if (m == 0) exit 0
    lo = int((k - 1) * m / n); hi = int(k * m / n)
    t0 = a[lo]
    for (i = lo; i < hi; i++) {
        at = (a[i] - t0) / c
        life = (d[i] == "" ? 1e9 : d[i] - a[i]); if (life < 1) life = 1
        printf "%.3f 1 {\"time\":%.3f,\"event\":\"arrive\",\"group\":\"%s\",\"pods\":1,\"gpus\":%d,\"tp\":%d,\"pp\":1}\n", at, at, name[i], g[i], g[i]
        if (d[i] != "") printf "%.3f 0 {\"time\":%.3f,\"event\":\"leave\",\"group\":\"%s\"}\n", at + life, at + life, name[i]
    }
}' "$csv" | sort -k1,1n -k2,2n -s | cut -d' ' -f3-
