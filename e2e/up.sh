#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# e2e/up.sh SPEC - bring up a real control plane on 127.0.0.1 with GPU nodes from SPEC (the grammar
# of `topox cluster --spec`), apply manifests/ and run topox-scheduler as docs/deploy.md describes
# it, as processes: kube-scheduler with manifests/' KubeSchedulerConfiguration and
# `topox serve --bind-mode=api` beside it. Writes build/e2e/kubeconfig; logs in build/e2e/logs/.
source "$(dirname "$0")/lib.sh"
SPEC=${1:?usage: up.sh SPEC   e.g. racks=4,nodes-per-rack=3,gpus-per-node=8}
for b in etcd kube-apiserver kube-controller-manager kube-scheduler kubectl lws-controller; do
    [ -x "$BIN/$b" ] || die "$BIN/$b is missing: run make e2e-build"
done
[ -x "$TOPOX" ] || die "$TOPOX is missing: run make build"
for p in 8888 "$API_PORT" "$ETCD_PORT" "$LWS_WEBHOOK_PORT"; do
    port_free "$p" || die "127.0.0.1:$p is in use (another e2e cluster? make e2e-down)"
done
command -v openssl >/dev/null || die "openssl is missing (apt-get install openssl)"
"$TOPOX" cluster --spec "$SPEC" >"$E/nodes.json" || die "bad cluster spec '$SPEC'"
rm -rf "$E/etcd"

say "certificates in $PKI"
ossl() { openssl "$@" 2>>"$LOGS/openssl.log"; }
ossl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=topox-e2e-ca -keyout "$PKI/ca.key" -out "$PKI/ca.crt"
# cert NAME SUBJECT EXTENSION: a key and a certificate signed by the CA.
cert() {
    ossl req -newkey rsa:2048 -nodes -subj "$2" -keyout "$PKI/$1.key" -out "$PKI/$1.csr"
    printf '%s\n' "$3" >"$PKI/$1.ext"
    ossl x509 -req -in "$PKI/$1.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial -days 2 \
        -extfile "$PKI/$1.ext" -out "$PKI/$1.crt"
}
server="extendedKeyUsage=serverAuth
subjectAltName=IP:127.0.0.1,DNS:localhost"
cert apiserver /CN=kube-apiserver "$server,DNS:kubernetes.default.svc"
cert lws-webhook /CN=127.0.0.1 "$server"
cert admin "/O=system:masters/CN=e2e-admin" extendedKeyUsage=clientAuth
cert kcm /CN=system:kube-controller-manager extendedKeyUsage=clientAuth
ossl genrsa -out "$PKI/sa.key" 2048
ossl rsa -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub"

kubeconfig "$KUBECONFIG" "client-certificate: \"$PKI/admin.crt\", client-key: \"$PKI/admin.key\""
kubeconfig "$E/kcm.kubeconfig" "client-certificate: \"$PKI/kcm.crt\", client-key: \"$PKI/kcm.key\""

say "etcd, kube-apiserver, kube-controller-manager"
start_etcd
start_apiserver
start_controller_manager

say "LeaderWorkerSet controller $(cat "$E/lws.version" 2>/dev/null), webhooks on 127.0.0.1:$LWS_WEBHOOK_PORT"
kc apply --server-side -f "$E/lws-crd.yaml" >/dev/null
established() { kc get crd leaderworkersets.leaderworkerset.x-k8s.io -o jsonpath='{.status.conditions[?(@.type=="Established")].status}' | grep True >/dev/null; }
wait_for 60 "the LWS CRD" established
ca=$(base64 -w0 "$PKI/ca.crt")
sed -e "s#@URL@#https://127.0.0.1:$LWS_WEBHOOK_PORT#" -e "s#@CA@#$ca#" "$ROOT/e2e/lws-webhooks.yaml" | kc apply -f - >/dev/null
mkdir -p "$E/lws-certs"
cp "$PKI/lws-webhook.crt" "$E/lws-certs/tls.crt"
cp "$PKI/lws-webhook.key" "$E/lws-certs/tls.key"
cat >"$E/lws-config.yaml" <<CFG
apiVersion: config.lws.x-k8s.io/v1alpha1
kind: Configuration
leaderElection: {leaderElect: false}
internalCertManagement: {enable: false}
webhook: {host: 127.0.0.1, port: $LWS_WEBHOOK_PORT, certDir: "$E/lws-certs"}
metrics: {bindAddress: "0"}
health: {healthProbeBindAddress: "127.0.0.1:$((LWS_WEBHOOK_PORT + 1))"}
CFG
start_lws

say "GPU nodes from '$SPEC'"
# topox cluster prints Nodes with GPU capacity, labels and Ready; a kubelet would also report
# cpu, memory and pods, without which NodeResourcesFit fits nothing. The status goes in
# through the status subresource, as a kubelet writes it.
kc create -f "$E/nodes.json" >/dev/null
jq -c '.items[] | {name: .metadata.name, status: (.status
        | .capacity += {cpu: "128", memory: "1Ti", pods: "110"}
        | .allocatable += {cpu: "128", memory: "1Ti", pods: "110"}
        | .conditions = [.conditions[] + {lastHeartbeatTime: (now | todate), lastTransitionTime: (now | todate)}])}' \
    "$E/nodes.json" | while read -r n; do
    kc patch node "$(jq -r .name <<<"$n")" --subresource=status --type=merge -p "$(jq -c '{status}' <<<"$n")" >/dev/null
done
# The TaintNodesByCondition admission plugin gave every new node the not-ready taint; the
# node-lifecycle controller would lift it once the node reports Ready. It is off, so lift it here.
kc taint nodes --all node.kubernetes.io/not-ready:NoSchedule- >/dev/null

say "kubectl apply -k manifests/"
kc apply -k "$ROOT/manifests/" >"$LOGS/apply-manifests.log"
wire_scheduler

say "topox serve --bind-mode=api and kube-scheduler"
start_topox
start_scheduler
say "up: KUBECONFIG=$KUBECONFIG ($(kc get nodes --no-headers | wc -l) nodes); make e2e-down stops it"
