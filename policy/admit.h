/* SPDX-License-Identifier: Apache-2.0 */
/* policy/admit.h - which nodes admit a pod as kube-scheduler's filters would, before topox's own
 * rules: spec.nodeName (NodeName), nodeSelector and required node affinity (NodeAffinity:
 * matchExpressions In, NotIn, Exists, DoesNotExist, Gt, Lt; matchFields metadata.name), and
 * taints with effect NoSchedule or NoExecute against the pod's tolerations (TaintToleration).
 * Written from kubernetes/kubernetes pkg/scheduler/framework/plugins/{nodename,nodeaffinity,
 * tainttoleration}, k8s.io/component-helpers/scheduling/corev1/nodeaffinity and
 * k8s.io/api/core/v1 Toleration.ToleratesTaint. `topox plan` uses it; under `serve`
 * kube-scheduler has already run these filters. Pure: plain structs, no I/O, thread-safe. */
#ifndef TPX_POLICY_ADMIT_H
#define TPX_POLICY_ADMIT_H

#include <stdbool.h>
#include <stddef.h>

#include "topology/labels.h"

struct pol_taint {
    const char *key;
    const char *value;  /* NULL: "" */
    const char *effect; /* "NoSchedule", "PreferNoSchedule", "NoExecute" */
};

/* What kube-scheduler's filters read of a node. */
struct pol_node_meta {
    const char *name;
    const struct topo_kv *labels;
    size_t nlabels;
    const struct pol_taint *taints;
    size_t ntaints;
};

enum pol_sel_op {
    POL_SEL_IN,
    POL_SEL_NOT_IN,
    POL_SEL_EXISTS,
    POL_SEL_NOT_EXISTS,
    POL_SEL_GT,
    POL_SEL_LT
};

/* One matchExpressions (field false) or matchFields (field true: key "metadata.name") entry. */
struct pol_sel_req {
    const char *key;
    enum pol_sel_op op;
    const char *const *values;
    size_t nvalues;
    bool field;
};

/* One nodeSelectorTerm: its requirements all hold (an empty term matches no node). */
struct pol_sel_term {
    const struct pol_sel_req *reqs;
    size_t nreqs;
};

struct pol_toleration {
    const char *key;    /* NULL or "": with exists, every key */
    bool exists;        /* operator Exists (else Equal, the default) */
    const char *value;  /* Equal's value; NULL: "" */
    const char *effect; /* NULL or "": every effect */
};

/* What kube-scheduler's filters read of a pod. */
struct pol_pod_sched {
    const char *node_name; /* spec.nodeName, NULL when unset */
    const struct topo_kv *selector;
    size_t nselector;
    bool affinity; /* requiredDuringSchedulingIgnoredDuringExecution given: the terms are ORed */
    const struct pol_sel_term *terms;
    size_t nterms;
    const struct pol_toleration *tols;
    size_t ntols;
};

/* Does node n admit pod p? When not, why (len bytes, may be 0) names the first filter that
 * fails: "node(s) didn't match nodeSelector kubernetes.io/hostname=gpu-7", "node(s) had
 * untolerated taint {nvidia.com/gpu: NoSchedule}", ... */
bool pol_admit(const struct pol_pod_sched *p, const struct pol_node_meta *n, char *why, size_t len);

/* ok[i] = whether nodes[i] admits p, for each of the n nodes; returns how many do. When some
 * node does not, why gets kube-scheduler's kind of summary: "0/16 nodes admit it: 12 node(s)
 * didn't match nodeSelector ..., 4 node(s) had untolerated taint {...}" (the two commonest
 * reasons); else "". */
size_t pol_admit_nodes(const struct pol_pod_sched *p, const struct pol_node_meta *nodes, size_t n,
                       unsigned char *ok, char *why, size_t len);

/* Does p constrain nodes at all (nodeName, nodeSelector or required affinity)? Tolerations alone
 * do not. */
bool pol_pod_sched_constrains(const struct pol_pod_sched *p);

#endif
