# SPDX-License-Identifier: Apache-2.0
# e2e/lib.sh - sourced by up.sh, down.sh and scenarios.sh: where things are, and how to start,
# stop and wait for each component. Everything lives under build/e2e/ (E2E_DIR).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
E=${E2E_DIR:-$ROOT/build/e2e}
BIN=$E/bin PKI=$E/pki LOGS=$E/logs RUN=$E/run
TOPOX=${TOPOX:-$ROOT/build/dev/cli/topox}
export KUBECONFIG=$E/kubeconfig
ETCD_PORT=${E2E_ETCD_PORT:-23790} API_PORT=${E2E_API_PORT:-26443}
API=https://127.0.0.1:$API_PORT
LWS_WEBHOOK_PORT=${E2E_LWS_PORT:-29443}
# Feature gates for the control plane: the Workload API (scenarios 7 and 21) and in-tree
# topology-aware workload scheduling (alpha in 1.37), so that scenario 21's PodGroups, whose
# topology key is the rack label, are placed by kube-scheduler's TAS and topox together.
GATES=${E2E_FEATURE_GATES:-GenericWorkload=true,TopologyAwareWorkloadScheduling=true}
mkdir -p "$BIN" "$PKI" "$LOGS" "$RUN"

say() { printf 'e2e: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }
kc() { "$BIN/kubectl" --request-timeout=20s "$@"; }

# wait_for SECONDS WHAT CMD...: retry CMD every half second until it succeeds.
wait_for() {
    local deadline=$(($(date +%s) + $1)) what=$2
    shift 2
    until "$@" >/dev/null 2>&1; do
        [ "$(date +%s)" -lt "$deadline" ] || { say "timed out waiting for $what"; return 1; }
        sleep 0.5
    done
}

# start NAME CMD...: run CMD in the background, output to logs/NAME.log, pid in run/NAME.pid.
start() {
    local name=$1
    shift
    alive "$name" && die "$name is already running (pid $(cat "$RUN/$name.pid")); make e2e-down first"
    echo "== $(date -u +%FT%TZ) $*" >>"$LOGS/$name.log"
    setsid "$@" >>"$LOGS/$name.log" 2>&1 </dev/null &
    echo $! >"$RUN/$name.pid"
}
alive() { [ -f "$RUN/$1.pid" ] && kill -0 "$(cat "$RUN/$1.pid")" 2>/dev/null; }
# stop NAME [SIGNAL]: signal the process (TERM by default), wait up to 10s, then KILL.
stop() {
    local name=$1 sig=${2:-TERM} pid i
    [ -f "$RUN/$name.pid" ] || return 0
    pid=$(cat "$RUN/$name.pid")
    kill -"$sig" "$pid" 2>/dev/null || true
    for i in $(seq 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
    rm -f "$RUN/$name.pid"
}
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# kubeconfig FILE USER-LINES: a kubeconfig for $API with the CA and the given user.
kubeconfig() {
    cat >"$1" <<KC
apiVersion: v1
kind: Config
clusters: [{name: e2e, cluster: {server: "$API", certificate-authority: "$PKI/ca.crt"}}]
contexts: [{name: e2e, context: {cluster: e2e, user: u}}]
current-context: e2e
users: [{name: u, user: {$2}}]
KC
}

# wire_scheduler: what the Deployment's pod would get, from what was applied (manifests/ or the
# chart). topox-scheduler runs here as two processes instead of the pod (there is no kubelet), with
# a token of its service account, so the API server enforces the applied RBAC on both; and the
# KubeSchedulerConfiguration exactly as applied, plus where to find the API server (in the pod it
# is the service account). Nothing else is changed.
wire_scheduler() {
    kc -n topox-system create token topox-scheduler --duration=48h >"$E/topox-scheduler.token"
    kubeconfig "$E/topox-scheduler.kubeconfig" "tokenFile: \"$E/topox-scheduler.token\""
    {
        kc -n topox-system get configmap topox-scheduler-config -o jsonpath='{.data.config\.yaml}'
        printf '\nclientConnection:\n  kubeconfig: %s\n' "$E/topox-scheduler.kubeconfig"
    } >"$E/scheduler-config.yaml"
}

start_etcd() {
    start etcd "$BIN/etcd" --name e2e --data-dir "$E/etcd" --unsafe-no-fsync \
        --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
        --listen-peer-urls http://127.0.0.1:$((ETCD_PORT + 1)) \
        --initial-advertise-peer-urls http://127.0.0.1:$((ETCD_PORT + 1)) \
        --initial-cluster e2e=http://127.0.0.1:$((ETCD_PORT + 1))
    wait_for 30 etcd curl -sf "http://127.0.0.1:$ETCD_PORT/health"
}

start_apiserver() {
    start kube-apiserver "$BIN/kube-apiserver" --bind-address=127.0.0.1 --advertise-address=127.0.0.1 \
        --secure-port="$API_PORT" --etcd-servers="http://127.0.0.1:$ETCD_PORT" \
        --tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key" \
        --client-ca-file="$PKI/ca.crt" --authorization-mode=Node,RBAC \
        --enable-admission-plugins=NodeRestriction \
        --service-account-issuer=https://kubernetes.default.svc \
        --service-account-key-file="$PKI/sa.pub" --service-account-signing-key-file="$PKI/sa.key" \
        --service-cluster-ip-range=10.96.0.0/24 --endpoint-reconciler-type=none --allow-privileged=true \
        --feature-gates="$GATES" --runtime-config=scheduling.k8s.io/v1beta1=true --v=1
    wait_for 90 kube-apiserver kc get --raw /readyz
}

start_controller_manager() {
    # No node-lifecycle controller: with no kubelet, nodes would otherwise turn NotReady.
    start kube-controller-manager "$BIN/kube-controller-manager" --kubeconfig="$E/kcm.kubeconfig" \
        --authentication-kubeconfig="$E/kcm.kubeconfig" --authorization-kubeconfig="$E/kcm.kubeconfig" \
        --bind-address=127.0.0.1 --secure-port=0 --leader-elect=false \
        --controllers='*,-node-lifecycle-controller' --use-service-account-credentials \
        --service-account-private-key-file="$PKI/sa.key" --root-ca-file="$PKI/ca.crt" \
        --feature-gates="$GATES" --v=1
}

start_lws() {
    start lws-controller "$BIN/lws-controller" --kubeconfig="$KUBECONFIG" --config="$E/lws-config.yaml"
    wait_for 60 lws-controller curl -sf http://127.0.0.1:$((LWS_WEBHOOK_PORT + 1))/readyz
}

start_topox() {
    start topox "$TOPOX" --log-level=info serve --listen=127.0.0.1:8888 --bind-mode=api \
        --reservation-ttl=10m --kubeconfig="$E/topox-scheduler.kubeconfig"
    wait_for 60 "topox /readyz" curl -sf http://127.0.0.1:8888/readyz
}

start_scheduler() {
    start kube-scheduler "$BIN/kube-scheduler" --config="$E/scheduler-config.yaml" \
        --authentication-kubeconfig="$E/topox-scheduler.kubeconfig" \
        --authorization-kubeconfig="$E/topox-scheduler.kubeconfig" \
        --bind-address=127.0.0.1 --secure-port=${E2E_SCHED_PORT:-20259} --feature-gates="$GATES" --v=2
    wait_for 60 kube-scheduler curl -skf https://127.0.0.1:${E2E_SCHED_PORT:-20259}/healthz
}
