#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# e2e/scenarios.sh [N...] - the scenarios of make e2e against the cluster that up.sh started
# (racks=4,nodes-per-rack=3,gpus-per-node=8). Each asserts what the API server holds: pods'
# spec.nodeName, their annotations, Events; never what topox says about itself. Prints one row per
# scenario and `N passed, M failed`; exits 0 only when all pass. With arguments, runs only those.
source "$(dirname "$0")/lib.sh"
# 11 first: plan reads only the API server, so it must run before earlier scenarios leave holds in
# topox's memory; 12 last: it replaces the manifests/ install with the Helm chart.
ORDER=(11 1 3 6 2 4 5 10 7 9 8 21 12)
[ $# -gt 0 ] && ORDER=("$@")
WAIT=${E2E_WAIT:-90}
LWS_LABEL=leaderworkerset.sigs.k8s.io

# --- what the API server holds ------------------------------------------------------------------

# pods NS: one line per pod: name group pod-index node rack(of the node) ann-rack ann-domain ann-stage
pods() {
    local nodes
    nodes=$(kc get nodes -o json | jq -c '[.items[] | {key: .metadata.name, value: (.metadata.labels["topox.io/rack"] // "-")}] | from_entries')
    kc -n "$1" get pods -o json | jq -r --argjson racks "$nodes" '.items[]
        | .metadata as $m | (.metadata.annotations // {}) as $a
        | [$m.name,
           ($m.labels["'$LWS_LABEL'/group-index"] // $a["topox.io/group"] // "-"),
           ($m.labels["'$LWS_LABEL'/worker-index"] // $a["topox.io/pod-index"] // "-"),
           (.spec.nodeName // "-"), $racks[.spec.nodeName // ""] // "-",
           $a["topox.io/rack"] // "-", $a["topox.io/domain"] // "-", $a["topox.io/stage"] // "-"]
        | @tsv'
}
count_bound() { pods "$1" | awk -F'\t' '$4 != "-"' | wc -l; }
count_pods() { pods "$1" | wc -l; }
# for wait_for, which must evaluate them on every try
bound_is() { [ "$(count_bound "$1")" -eq "$2" ]; }
pods_are() { [ "$(count_pods "$1")" -eq "$2" ]; }
# groups NS: one line per group: group pods bound distinct-racks-of-bound-pods
groups() {
    pods "$1" | awk -F'\t' '{ n[$2]++; if ($4 != "-") { b[$2]++; if (!(($2, $5) in r)) { r[$2, $5] = 1; nr[$2]++ } } }
        END { for (g in n) printf "%s %d %d %d\n", g, n[g], b[g] + 0, nr[g] + 0 }' | sort -n
}
# events NS REASON: the messages of the Events with that reason (core and events.k8s.io alike)
events() { kc -n "$1" get events -o json | jq -r --arg r "$2" '.items[] | select(.reason == $r) | .message'; }
# overbooked: nodes whose bound, unfinished pods ask for more GPUs than the node has
overbooked() {
    local alloc
    alloc=$(kc get nodes -o json | jq -c '[.items[] | {key: .metadata.name, value: ((.status.allocatable["nvidia.com/gpu"] // "0") | tonumber)}] | from_entries')
    kc get pods -A -o json | jq -r --argjson alloc "$alloc" '
        [.items[] | select(.spec.nodeName and (.status.phase != "Succeeded" and .status.phase != "Failed"))
         | {node: .spec.nodeName, gpus: ([.spec.containers[].resources | ((.limits // {})["nvidia.com/gpu"] // (.requests // {})["nvidia.com/gpu"] // "0") | tonumber] | add)}]
        | group_by(.node)[] | {node: .[0].node, used: (map(.gpus) | add)}
        | select(.used > ($alloc[.node] // 0)) | "\(.node): \(.used) GPUs booked"'
}

# --- workloads ----------------------------------------------------------------------------------

# lws NAME REPLICAS TP PP [GATE]: a vLLM LeaderWorkerSet of 2-pod groups, 8 GPUs a pod, parallelism
# in the leader's vLLM flags and in topox.io annotations on both; GATE holds the workers back with
# a scheduling gate until the scenario lifts it. LWS_RESTART sets the group's restartPolicy.
lws() {
    local gate="" restart=""
    [ -z "${5:-}" ] || gate="schedulingGates: [{name: e2e.topox.io/$5}]"
    [ -z "${LWS_RESTART:-}" ] || restart="restartPolicy: $LWS_RESTART"
    cat <<EOF
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata: {name: $1}
spec:
  replicas: $2
  leaderWorkerTemplate:
    size: 2
    $restart
    leaderTemplate:
      metadata:
        annotations: {topox.io/tensor-parallel-size: "$3", topox.io/pipeline-parallel-size: "$4"}
      spec:
        schedulerName: topox-scheduler
        containers:
          - name: vllm
            image: vllm/vllm-openai:v0.8.5
            command: [sh, -c, "python3 -m vllm.entrypoints.openai.api_server --tensor-parallel-size $3 --pipeline_parallel_size $4"]
            resources: {limits: {nvidia.com/gpu: "8"}}
    workerTemplate:
      metadata:
        annotations: {topox.io/tensor-parallel-size: "$3", topox.io/pipeline-parallel-size: "$4"}
      spec:
        schedulerName: topox-scheduler
        $gate
        containers:
          - name: vllm
            image: vllm/vllm-openai:v0.8.5
            command: [sh, -c, "bash multi-node-serving.sh worker"]
            resources: {limits: {nvidia.com/gpu: "8"}}
EOF
}
ns() { # ns NAME: a fresh namespace
    kc create namespace "$1" >/dev/null
    wait_for 30 "serviceaccount $1/default" kc -n "$1" get serviceaccount default
}
# clean NS: remove the namespace's workloads. Pods are force-deleted: with no kubelet, a graceful
# delete of a bound pod never finishes.
clean() {
    kc -n "$1" delete leaderworkersets --all --wait=false >/dev/null 2>&1 || true
    local i
    for i in $(seq 40); do
        kc -n "$1" delete statefulsets --all --wait=false >/dev/null 2>&1 || true
        kc -n "$1" delete pods --all --force --grace-period=0 >/dev/null 2>&1 || true
        [ "$(kc -n "$1" get pods,statefulsets,leaderworkersets --no-headers 2>/dev/null | wc -l)" -eq 0 ] && break
        sleep 0.5
    done
    kc delete namespace "$1" --wait=false >/dev/null 2>&1 || true
}
lift_gates() { # lift_gates NS: remove the scheduling gates of every pod in NS
    local p
    for p in $(kc -n "$1" get pods -o json | jq -r '.items[] | select(.spec.schedulingGates) | .metadata.name'); do
        kc -n "$1" patch pod "$p" --type=json -p '[{"op":"remove","path":"/spec/schedulingGates"}]' >/dev/null
    done
}
# all_groups_whole NS GROUPS: every pod bound, GROUPS groups of 2, each group in one rack
all_groups_whole() {
    local g
    g=$(groups "$1")
    [ "$(wc -l <<<"$g")" -eq "$2" ] && ! awk '$2 != 2 || $3 != 2 || $4 != 1 { bad = 1 } END { exit !bad }' <<<"$g"
}

has_event() { events "$1" "$2" | grep -- "$3" >/dev/null; }
has_node() { [ -n "$(kc -n "$1" get pod "$2" -o jsonpath='{.spec.nodeName}')" ]; }
recreated_and_bound() { # NS POD OLD-UID
    local u
    u=$(kc -n "$1" get pod "$2" -o jsonpath='{.metadata.uid} {.spec.nodeName}') || return 1
    [ "${u%% *}" != "$3" ] && [ -n "${u#* }" ]
}

# leaders_only NS NAME: a 4-group LWS whose workers are held back; wait until the 4 leaders are bound
leaders_only() {
    ns "$1"
    lws "$2" 4 8 2 hold | kc -n "$1" apply -f - >/dev/null
    wait_for 30 "8 pods" pods_are "$1" 8 || fail "LWS made $(count_pods "$1") pods" || return 1
    wait_for "$WAIT" "4 leaders bound" bound_is "$1" 4 || fail "$(count_bound "$1")/4 leaders bound" || return 1
}

DETAIL=""
fail() { DETAIL=$*; return 1; }

# --- scenarios ----------------------------------------------------------------------------------

s1_title="example vLLM LWS TP8xPP2, 4 replicas: bound through topox, groups in one rack"
s1() {
    ns llm
    kc -n llm create secret generic hf-token --from-literal=token=none >/dev/null
    kc apply -f "$ROOT/manifests/examples/vllm-lws-tp8-pp2.yaml" >/dev/null
    wait_for "$WAIT" "8 pods bound" bound_is llm 8 || fail "$(count_bound llm)/8 pods bound" || return 1
    all_groups_whole llm 4 || fail "groups: $(groups llm | tr '\n' ';')" || return 1
    local bad
    # every pod carries the annotations, naming the rack of its node; a stage per pod of a group
    bad=$(pods llm | awk -F'\t' '$6 == "-" || $7 == "-" || $8 == "-" || $6 != $5 || $8 != $3')
    [ -z "$bad" ] || fail "annotations missing or wrong: $(head -1 <<<"$bad")" || return 1
    # TP mates share a domain: each pod's 8 GPUs are one domain, and no domain is used twice
    bad=$(pods llm | cut -f7 | sort | uniq -d)
    [ -z "$bad" ] || fail "domain used by two pods: $bad" || return 1
    [ "$(events llm Placed | wc -l)" -ge 8 ] || fail "$(events llm Placed | wc -l) Placed events, want 8" || return 1
    DETAIL="8/8 bound, 4 groups each in one rack, annotations = node rack, stage = worker index"
}

s3_title="dense TP16 over 8-GPU nodes stays Pending, Event says all-reduce would cross nodes"
s3() {
    ns s3
    lws dense 1 16 1 | kc -n s3 apply -f - >/dev/null
    wait_for 30 "2 pods" pods_are s3 2 || fail "LWS made $(count_pods s3) pods" || return 1
    wait_for "$WAIT" "FailedScheduling naming all-reduce" has_event s3 FailedScheduling 'All-reduce would cross nodes' ||
        fail "no FailedScheduling naming all-reduce: $(events s3 FailedScheduling | head -1)" || return 1
    [ "$(count_bound s3)" -eq 0 ] || fail "$(count_bound s3) pods bound" || return 1
    events s3 FailedScheduling | grep 'Try tensor-parallel-size 8 with pipeline-parallel-size 2' >/dev/null ||
        fail "the Event does not say what would work: $(events s3 FailedScheduling | head -1)" || return 1
    DETAIL="0/2 bound; FailedScheduling: $(events s3 FailedScheduling | grep -o 'All-reduce.*' | head -1 | cut -c1-80)"
}

s6_title="a pod without GPUs, schedulerName topox-scheduler, is bound by the default binder"
s6() {
    ns s6
    kc -n s6 apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: cpu-only}
spec:
  schedulerName: topox-scheduler
  containers: [{name: c, image: busybox, resources: {requests: {cpu: 100m}}}]
EOF
    wait_for "$WAIT" "cpu-only bound" has_node s6 cpu-only ||
        fail "not bound: $(events s6 FailedScheduling | head -1)" || return 1
    local p
    p=$(pods s6)
    [ "$(cut -f6 <<<"$p")" = "-" ] || fail "topox annotated it: $p" || return 1
    events s6 Scheduled | grep 'Successfully assigned s6/cpu-only' >/dev/null || fail "no Scheduled event" || return 1
    DETAIL="bound to $(cut -f4 <<<"$p"), no topox.io annotations, Scheduled event from the scheduler"
}

s2_title="5 TP8xPP2 groups on 4 racks x 3 nodes: 4 whole, the 5th Pending with topox's reason"
s2() {
    ns s2
    lws five 5 8 2 | kc -n s2 apply -f - >/dev/null
    wait_for 30 "10 pods" pods_are s2 10 || fail "LWS made $(count_pods s2) pods" || return 1
    wait_for "$WAIT" "8 pods bound" bound_is s2 8 || fail "$(count_bound s2)/8 pods bound" || return 1
    wait_for "$WAIT" "FailedScheduling" has_event s2 FailedScheduling . ||
        fail "no FailedScheduling event" || return 1
    sleep 3
    local g
    g=$(groups s2)
    [ "$(awk '$3 == 2 && $4 == 1' <<<"$g" | wc -l)" -eq 4 ] || fail "whole groups: $(tr '\n' ';' <<<"$g")" || return 1
    [ "$(awk '$3 == 0' <<<"$g" | wc -l)" -eq 1 ] || fail "half placed: $(tr '\n' ';' <<<"$g")" || return 1
    local msg
    msg=$(events s2 FailedScheduling | grep -E 'rack|domain' | head -1)
    [ -n "$msg" ] || fail "FailedScheduling does not name topox's reason: $(events s2 FailedScheduling | head -1)" || return 1
    DETAIL="4 groups whole, 1 with 0/2 bound; $(cut -c1-90 <<<"$msg")"
}

s4_title="SIGKILL topox between two pods of a group, restart: no group leaves its rack"
s4() {
    leaders_only s4 kill || return 1
    local before
    before=$(pods s4 | awk -F'\t' '$3 == 0 { print $2, $5 }' | sort)
    stop topox KILL
    start_topox || fail "topox did not come back: $(tail -2 "$LOGS/topox.log")" || return 1
    lift_gates s4
    wait_for "$WAIT" "8 pods bound" bound_is s4 8 || fail "$(count_bound s4)/8 bound after the restart" || return 1
    all_groups_whole s4 4 || fail "a group left its rack: $(groups s4 | tr '\n' ';')" || return 1
    [ "$(pods s4 | awk -F'\t' '$3 == 0 { print $2, $5 }' | sort)" = "$before" ] || fail "a leader moved" || return 1
    local ob
    ob=$(overbooked)
    [ -z "$ob" ] || fail "GPU booked twice: $ob" || return 1
    DETAIL="4 leaders bound, topox SIGKILLed and restarted, 4 workers then bound in their leaders' racks, no node over 8 GPUs"
}

s5_title="an LWS worker pod deleted: the recreated group lands in its rack"
s5() {
    ns s5
    # restartPolicy None: only the deleted worker is recreated. The default,
    # RecreateGroupOnPodRestart, makes LWS delete the group's leader too, and without a kubelet
    # that graceful delete never finishes, so the group would never come back (seen in a full run).
    LWS_RESTART=None lws again 4 8 2 | kc -n s5 apply -f - >/dev/null
    wait_for "$WAIT" "8 pods bound" bound_is s5 8 || fail "$(count_bound s5)/8 bound" || return 1
    local rack uid
    rack=$(pods s5 | awk -F'\t' '$1 == "again-1-1" { print $5 }')
    uid=$(kc -n s5 get pod again-1-1 -o jsonpath='{.metadata.uid}')
    kc -n s5 delete pod again-1-1 --force --grace-period=0 >/dev/null 2>&1
    wait_for "$WAIT" "again-1-1 recreated and bound" recreated_and_bound s5 again-1-1 "$uid" ||
        fail "again-1-1 not recreated and bound" || return 1
    wait_for "$WAIT" "8 pods bound" bound_is s5 8 || fail "$(count_bound s5)/8 bound after the recreate" || return 1
    all_groups_whole s5 4 || fail "groups: $(groups s5 | tr '\n' ';')" || return 1
    local now
    now=$(pods s5 | awk -F'\t' '$1 == "again-1-1" { print $5 }')
    [ "$now" = "$rack" ] || fail "again-1-1 was in rack $rack, now in $now" || return 1
    [ -z "$(overbooked)" ] || fail "GPU booked twice: $(overbooked)" || return 1
    DETAIL="again-1-1 deleted and recreated (new uid), bound again in rack $rack; 4 groups whole"
}

s10_title="kube-apiserver restarted mid-run (etcd compacted): topox relists and stays correct"
s10() {
    leaders_only s10 mid || return 1
    local rev relists
    relists=$(grep -c 'watch expired, relisting' "$LOGS/topox.log" || true)
    stop kube-apiserver
    # Compact etcd to its current revision, so every resourceVersion topox holds is gone.
    rev=$(curl -sf -X POST "http://127.0.0.1:$ETCD_PORT/v3/kv/range" -d '{"key":"AA=="}' | jq -r .header.revision)
    curl -sf -X POST "http://127.0.0.1:$ETCD_PORT/v3/kv/compaction" -d "{\"revision\":\"$rev\",\"physical\":true}" >/dev/null ||
        fail "etcd compaction failed" || return 1
    start_apiserver || fail "kube-apiserver did not come back" || return 1
    # kube-scheduler exits with "Leaderelection lost" when the API server is gone longer than its
    # renew deadline, and it may do so seconds after the API server is back (seen in a full run:
    # alive at the check, gone 4 s later); in the pod the kubelet restarts it. Here it is
    # restarted in any case, so the scenario does not depend on when it loses the lease.
    say "restarting kube-scheduler after the API server restart"
    stop kube-scheduler
    start_scheduler
    wait_for 60 "topox ready" curl -sf http://127.0.0.1:8888/readyz || fail "topox not ready after the restart" || return 1
    lift_gates s10
    wait_for "$WAIT" "8 pods bound" bound_is s10 8 || fail "$(count_bound s10)/8 bound after the restart" || return 1
    all_groups_whole s10 4 || fail "groups: $(groups s10 | tr '\n' ';')" || return 1
    [ -z "$(overbooked)" ] || fail "GPU booked twice: $(overbooked)" || return 1
    DETAIL="etcd compacted at $rev, API server restarted; workers bound in their leaders' racks; topox log lines on 410/relist: $(($(grep -c 'watch expired, relisting' "$LOGS/topox.log" || true) - relists))"
}

s7_title="Workload API (GenericWorkload): gang PodGroup of 4 GPU pods lands in one rack"
s7() {
    ns s7
    kc -n s7 apply -f - >/dev/null <<EOF || fail "the API server refused the Workload/PodGroup: see $LOGS/scenarios.log" || return 1
apiVersion: scheduling.k8s.io/v1beta1
kind: Workload
metadata: {name: gang}
spec:
  podGroupTemplates:
    - name: workers
      schedulingPolicy: {gang: {minCount: 4}}
---
apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata: {name: gang-workers}
spec:
  workloadRef: {workloadName: gang, templateName: workers}
  schedulingPolicy: {gang: {minCount: 4}}
EOF
    local i
    for i in 0 1 2 3; do
        kc -n s7 apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: gang-$i
  annotations: {topox.io/group: gang, topox.io/group-size: "4", topox.io/pod-index: "$i", topox.io/tensor-parallel-size: "4", topox.io/pipeline-parallel-size: "4"}
spec:
  schedulerName: topox-scheduler
  schedulingGroup: {podGroupName: gang-workers}
  containers: [{name: c, image: busybox, resources: {limits: {nvidia.com/gpu: "4"}}}]
EOF
    done
    wait_for "$WAIT" "4 pods bound" bound_is s7 4 || fail "$(count_bound s7)/4 bound: $(events s7 FailedScheduling | head -1)" || return 1
    local racks
    racks=$(pods s7 | cut -f5 | sort -u | wc -l)
    [ "$racks" -eq 1 ] || fail "the gang is spread over $racks racks" || return 1
    DETAIL="4/4 bound in rack $(pods s7 | cut -f5 | head -1); extender calls in $LOGS/topox.log"
}

s9_title="the labeler patches its own Node; patching another Node is refused"
s9() {
    local node=r04-n03 other=r04-n02
    # As the DaemonSet pod's projected token would, the token names the node it runs on.
    kc -n topox-system create token topox-labeler --duration=1h --bound-object-kind=Node \
        --bound-object-name="$node" >"$E/topox-labeler.token"
    sed "s#topox-scheduler.token#topox-labeler.token#" "$E/topox-scheduler.kubeconfig" >"$E/topox-labeler.kubeconfig"
    NODE_NAME=$node "$TOPOX" label --kubeconfig "$E/topox-labeler.kubeconfig" --interconnect nvswitch \
        --topology-xml "$ROOT/tests/fixtures/hwloc/nvidia-dgx2h-16xV100-12nvswitch.xml" >>"$LOGS/scenarios.log" 2>&1 ||
        fail "topox label could not patch its own Node $node: see $LOGS/scenarios.log" || return 1
    kc get node "$node" -o json | jq -e '.metadata.annotations["topox.io/topology"]' >/dev/null ||
        fail "node $node has no topox.io/topology annotation after topox label" || return 1
    if KUBECONFIG=$E/topox-labeler.kubeconfig kc label node "$other" --overwrite topox.io/rack=stolen >>"$LOGS/scenarios.log" 2>&1; then
        kc label node "$other" --overwrite topox.io/rack=r04 >/dev/null
        grep -q ValidatingAdmissionPolicy "$ROOT"/manifests/*.yaml ||
            fail "labeled its own Node; patching another was allowed: manifests/ has no ValidatingAdmissionPolicy yet (branch harden-deploy)" || return 1
        fail "labeled its own Node; the ValidatingAdmissionPolicy let it patch $other" || return 1
    fi
    DETAIL="patched $node; patching $other refused"
}

s8_title="DRA: a hand-published ResourceSlice's devices count as used after the pod binds"
# probe NAME NODE: a pod asking for 8 nvidia.com/gpu with a tensor-parallel size of 8, held to NODE
probe() {
    cat <<EOF
apiVersion: v1
kind: Pod
metadata: {name: $1, annotations: {topox.io/tensor-parallel-size: "8"}}
spec:
  schedulerName: topox-scheduler
  affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchFields: [{key: metadata.name, operator: In, values: [$2]}]}]}}}
  containers: [{name: c, image: busybox, resources: {limits: {nvidia.com/gpu: "8"}}}]
EOF
}
claim_gone() { ! kc -n s8 get resourceclaim gpus >/dev/null 2>&1; }
s8_clean() {
    kc delete resourceslice e2e-r02-n02-gpu.nvidia.com --wait=false >/dev/null 2>&1 || true
    kc delete deviceclass gpu.nvidia.com --wait=false >/dev/null 2>&1 || true
}
s8() {
    local node=r02-n02 devs="" i
    # as the NVIDIA DRA driver's kubelet plugin would publish them: 8 whole GPUs on one node, and
    # the driver's DeviceClass
    for i in 0 1 2 3 4 5 6 7; do
        devs+="    - {name: gpu-$i, attributes: {type: {string: gpu}, uuid: {string: GPU-e2e-$i}, resource.kubernetes.io/pcieRoot: {string: pci0000:$((i / 4))0}}}
"
    done
    kc apply -f - >/dev/null <<EOF || fail "the API server refused the DeviceClass or ResourceSlice: see $LOGS/scenarios.log" || return 1
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.nvidia.com}
spec:
  selectors: [{cel: {expression: "device.driver == 'gpu.nvidia.com'"}}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: e2e-$node-gpu.nvidia.com}
spec:
  driver: gpu.nvidia.com
  nodeName: $node
  pool: {name: $node, generation: 1, resourceSliceCount: 1}
  devices:
$devs
EOF
    ns s8
    # a pod whose 8 GPUs come from a ResourceClaim only: kube-scheduler's DRA plugin allocates
    # them (it is the only node with such devices); its Node allocatable is untouched
    kc -n s8 apply -f - >/dev/null <<EOF
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: gpus}
spec:
  devices:
    requests: [{name: gpus, exactly: {deviceClassName: gpu.nvidia.com, allocationMode: ExactCount, count: 8}}]
---
apiVersion: v1
kind: Pod
metadata: {name: holder, annotations: {topox.io/tensor-parallel-size: "8"}}
spec:
  schedulerName: topox-scheduler
  resourceClaims: [{name: gpus, resourceClaimName: gpus}]
  containers: [{name: c, image: busybox, resources: {claims: [{name: gpus}]}}]
EOF
    wait_for "$WAIT" "holder bound" has_node s8 holder ||
        { s8_clean; fail "holder not bound: $(events s8 FailedScheduling | head -1)"; return 1; }
    local on alloc
    on=$(kc -n s8 get pod holder -o jsonpath='{.spec.nodeName}')
    [ "$on" = "$node" ] || { s8_clean; fail "holder bound to $on, not $node"; return 1; }
    alloc=$(kc -n s8 get resourceclaim gpus -o json | jq -r '[.status.allocation.devices.results[] | select(.pool == "'$node'")] | length')
    [ "$alloc" = 8 ] || { s8_clean; fail "the claim holds $alloc devices of $node, want 8"; return 1; }
    # Node allocatable still says 8 free nvidia.com/gpu, so kube-scheduler's own fit passes a pod
    # asking for 8 there; only topox, counting the slice's devices as used, can keep it off.
    probe full "$node" | kc -n s8 apply -f - >/dev/null
    wait_for "$WAIT" "FailedScheduling for full" has_event s8 FailedScheduling 'free GPUs' ||
        { s8_clean; fail "no FailedScheduling naming free GPUs: $(events s8 FailedScheduling | head -1)"; return 1; }
    has_node s8 full && { s8_clean; fail "full was bound to $node beside the DRA pod's 8 GPUs"; return 1; }
    local why
    why=$(events s8 FailedScheduling | grep -o '[^:,]*free GPUs[^,]*' | head -1 | sed 's/^ *//')
    # the control: with the holder and its claim gone, the same pod fits there
    kc -n s8 delete pod holder --force --grace-period=0 >/dev/null 2>&1
    kc -n s8 delete resourceclaim gpus --wait=false >/dev/null 2>&1
    wait_for 60 "the claim deleted" claim_gone || { s8_clean; fail "the claim was not deleted"; return 1; }
    sleep 2
    kc -n s8 delete pod full --force --grace-period=0 >/dev/null 2>&1
    probe again "$node" | kc -n s8 apply -f - >/dev/null
    wait_for "$WAIT" "again bound" has_node s8 again ||
        { s8_clean; fail "with the claim gone, the pod still does not fit: $(events s8 FailedScheduling | tail -1)"; return 1; }
    s8_clean
    DETAIL="holder bound to $node with 8 DRA devices; a pod of 8 nvidia.com/gpu held to $node stays Pending ($why); fits once the claim is gone"
}

s11_title="kubectl topox plan on the live cluster as a read-only planner, then apply: the groups land where plan said"
# blocker NODE: a pod holding the node's 8 GPUs, bound by its spec.nodeName (no scheduler)
blocker() {
    cat <<EOF
apiVersion: v1
kind: Pod
metadata: {name: hold-$1}
spec:
  nodeName: $1
  containers: [{name: c, image: busybox, resources: {limits: {nvidia.com/gpu: "8"}}}]
EOF
}
# node_sets NS: one line per LWS group, its pods' nodes sorted and joined, lines sorted
node_sets() { pods "$1" | awk -F'\t' '$1 !~ /^hold-/ { print $2, $4 }' | sort -k1,1 -k2,2 |
    awk '{ n[$1] = n[$1] ? n[$1] "," $2 : $2 } END { for (g in n) print n[g] }' | sort; }
s11() {
    local want got same n
    ns s11
    # Only r01 {n01,n03} and r03 {n01,n02} keep two free nodes: a plan that did not read the bound
    # pods would pick other nodes.
    for n in r01-n02 r02-n01 r02-n02 r03-n03 r04-n01 r04-n02; do blocker "$n"; echo ---; done |
        kc -n s11 apply -f - >/dev/null
    kc apply -f "$ROOT/manifests/planner-rbac.yaml" >/dev/null
    kc -n s11 create serviceaccount planner >/dev/null
    kc create clusterrolebinding e2e-planner --clusterrole=topox-planner --serviceaccount=s11:planner >/dev/null
    kc -n s11 create token planner --duration=1h >"$E/planner.token"
    kubeconfig "$E/planner.kubeconfig" "tokenFile: \"$E/planner.token\""
    lws planned 2 8 2 >"$E/s11-lws.yaml"
    # kubectl finds kubectl-topox on PATH and runs it with the words after "topox"; the planner's
    # token may only list (manifests/planner-rbac.yaml), so a call beyond that fails here.
    PATH="$(dirname "$TOPOX"):$PATH" "$BIN/kubectl" topox --kubeconfig "$E/planner.kubeconfig" -n s11 \
        plan -f "$E/s11-lws.yaml" -o json >"$E/s11-plan.json" 2>>"$LOGS/scenarios.log" ||
        fail "kubectl topox plan exited $?: $(tail -1 "$LOGS/scenarios.log")" || return 1
    jq -e '[.placements[].job] | unique == ["s11/planned"]' "$E/s11-plan.json" >/dev/null ||
        fail "plan did not take -n s11: $(jq -c '[.placements[].job] | unique' "$E/s11-plan.json")" || return 1
    want=$(jq -r '.placements | group_by(.replica)[] | [.[].node] | sort | join(",")' "$E/s11-plan.json" | sort)
    [ "$(wc -l <<<"$want")" -eq 2 ] || fail "plan placed: $(tr '\n' ';' <<<"$want")" || return 1
    kc -n s11 apply -f "$E/s11-lws.yaml" >/dev/null
    wait_for 30 "10 pods" pods_are s11 10 || fail "LWS made $(($(count_pods s11) - 6)) pods" || return 1
    wait_for "$WAIT" "10 pods bound" bound_is s11 10 || fail "$(($(count_bound s11) - 6))/4 pods bound" || return 1
    got=$(node_sets s11)
    [ "$want" = "$got" ] || fail "plan said $(tr '\n' ';' <<<"$want"), the scheduler put $(tr '\n' ';' <<<"$got")" || return 1
    # which pod of a group is on which of its nodes depends on the order the pods arrive in
    same=$(comm -12 <(jq -r '.placements[] | "\(.pod) \(.node)"' "$E/s11-plan.json" | sort) \
        <(pods s11 | awk -F'\t' '$1 !~ /^hold-/ { print $1, $4 }' | sort) | wc -l)
    if KUBECONFIG=$E/planner.kubeconfig kc -n s11 create configmap nope >/dev/null 2>&1; then
        fail "the planner's token could create a ConfigMap"
        return 1
    fi
    kc delete clusterrolebinding e2e-planner >/dev/null
    DETAIL="plan via kubectl as topox-planner: $(tr '\n' ' ' <<<"$want")= the scheduler's groups ($same/4 pods on plan's very node)"
}

ns_gone() { ! kc get namespace "$1" >/dev/null 2>&1; }

s12_title="the Helm chart instead of manifests/: the chart's topox-scheduler places an LWS whole"
s12() {
    local h=("$BIN/helm" --kubeconfig "$KUBECONFIG")
    [ -x "$BIN/helm" ] || fail "helm is not built ($BIN/helm): make e2e-build" || return 1
    stop kube-scheduler
    stop topox
    kc delete -k "$ROOT/manifests/" --wait=false >>"$LOGS/scenarios.log" 2>&1
    wait_for 120 "namespace topox-system gone" ns_gone topox-system || fail "topox-system was not deleted" || return 1
    "${h[@]}" install topox "$ROOT/deploy/helm/topox" >>"$LOGS/scenarios.log" 2>&1 ||
        fail "helm install failed: $(tail -2 "$LOGS/scenarios.log" | tr '\n' ' ')" || return 1
    "${h[@]}" status topox | grep 'STATUS: deployed' >/dev/null || fail "the release is not deployed" || return 1
    [ "$(kc get clusterrole topox-extender -o jsonpath='{.metadata.labels.app\.kubernetes\.io/managed-by}')" = Helm ] ||
        fail "topox-extender is not the chart's" || return 1
    wire_scheduler
    start_topox || fail "topox did not start with the chart's RBAC: $(tail -2 "$LOGS/topox.log")" || return 1
    start_scheduler || fail "kube-scheduler did not start with the chart's config" || return 1
    ns s12
    lws charted 2 8 2 | kc -n s12 apply -f - >/dev/null
    wait_for 30 "4 pods" pods_are s12 4 || fail "LWS made $(count_pods s12) pods" || return 1
    wait_for "$WAIT" "4 pods bound" bound_is s12 4 || fail "$(count_bound s12)/4 pods bound" || return 1
    all_groups_whole s12 2 || fail "groups: $(groups s12 | tr '\n' ';')" || return 1
    [ "$(events s12 Placed | wc -l)" -ge 4 ] || fail "$(events s12 Placed | wc -l) Placed events, want 4" || return 1
    DETAIL="helm install $(${h[@]} list -o json | jq -r '.[0].chart'); 4/4 bound by the chart's scheduler, 2 groups each in one rack"
}

s21_title="in-tree TAS on: 4 PodGroup gangs of 3 x 8 GPUs fill 4 racks x 3 nodes: each whole in one rack, no bind refused"
# With TopologyAwareWorkloadScheduling (lib.sh GATES) kube-scheduler filters each gang once per
# candidate rack; topox holds the gang where TAS tries it and never refuses the rack TAS chose.
# podgroup NAME: a scheduling.k8s.io/v1beta1 PodGroup (GenericWorkload, on in up.sh), gang
# minCount 3, its topology key the rack label the e2e nodes carry; and its 3 pods, as upstream's
# scheduler_perf podgroup templates write them, with 8 GPUs each
podgroup() {
    cat <<EOF
apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata: {name: $1}
spec:
  schedulingPolicy: {gang: {minCount: 3}}
  schedulingConstraints: {topology: [{key: topox.io/rack}]}
EOF
    for i in 0 1 2; do
        cat <<EOF
---
apiVersion: v1
kind: Pod
metadata: {name: $1-$i}
spec:
  schedulerName: topox-scheduler
  schedulingGroup: {podGroupName: $1}
  containers: [{name: c, image: busybox, resources: {limits: {nvidia.com/gpu: 8}}}]
EOF
    done
}
# gang_racks NS: one line per PodGroup: name pods bound distinct-racks-of-bound-pods
gang_racks() {
    local nodes
    nodes=$(kc get nodes -o json | jq -c '[.items[] | {key: .metadata.name, value: (.metadata.labels["topox.io/rack"] // "-")}] | from_entries')
    kc -n "$1" get pods -o json | jq -r --argjson racks "$nodes" '
        [.items[] | {g: .spec.schedulingGroup.podGroupName, r: ($racks[.spec.nodeName // ""] // null)}]
        | group_by(.g)[] | "\(.[0].g) \(length) \([.[] | select(.r)] | length) \([.[] | select(.r) | .r] | unique | length)"'
}
s21() {
    ns s21
    for g in gang-0 gang-1 gang-2 gang-3; do podgroup "$g"; echo ---; done | kc -n s21 apply -f - >/dev/null ||
        fail "the API server refused the PodGroups (scheduling.k8s.io/v1beta1 off?)" || return 1
    wait_for "$WAIT" "12 pods bound" bound_is s21 12 ||
        fail "$(count_bound s21)/12 bound; $(events s21 FailedScheduling | sort | uniq -c | head -2 | tr '\n' ';')" || return 1
    local bad
    bad=$(gang_racks s21 | awk '$3 != 3 || $4 != 1')
    [ -z "$bad" ] || fail "a gang not whole in one rack: $bad" || return 1
    # a bind topox refused reaches the pod as a FailedScheduling Event with its Error
    bad=$(events s21 FailedScheduling | grep -c 'no longer fits' || true)
    [ "$bad" -eq 0 ] || fail "$bad binds refused: $(events s21 FailedScheduling | grep -m1 'no longer fits')" || return 1
    DETAIL="12/12 bound, 4 gangs each whole in one rack, 0 binds refused"
}

# --- run ----------------------------------------------------------------------------------------

passed=0 failed=0 rows=()
for n in "${ORDER[@]}"; do
    t="s${n}_title"
    say "scenario $n: ${!t}"
    t0=$(date +%s)
    DETAIL=""
    if "s$n" >>"$LOGS/scenarios.log" 2>&1; then r=PASS passed=$((passed + 1)); else r=FAIL failed=$((failed + 1)); fi
    [ "$n" = 1 ] && clean llm || clean "s$n"
    rows+=("$(printf '| %-2s | %-4s | %3ss | %s | %s |' "$n" "$r" $(($(date +%s) - t0)) "${!t}" "$DETAIL")")
done
echo
echo "| #  | result | time | scenario | what the API server held |"
echo "|----|------|------|----------|--------------------------|"
printf '%s\n' "${rows[@]}"
echo
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
