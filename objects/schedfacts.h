/* SPDX-License-Identifier: Apache-2.0 */
/* objects/schedfacts.h - what kube-scheduler's node filters read, from Kubernetes JSON into the
 * plain structs of policy/admit.h: a pod's spec.nodeName, nodeSelector, required node affinity
 * and tolerations; a node's name, labels and taints. Owned copies: they outlive the JSON. Used by
 * `topox plan` (in serve kube-scheduler has already filtered). Not thread-safe per object. */
#ifndef TPX_OBJECTS_SCHEDFACTS_H
#define TPX_OBJECTS_SCHEDFACTS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/err.h"
#include "policy/admit.h"
#include "topology/labels.h"

/* A pod's filters, owning their strings. Zero it, fill with obj_pod_sched_from_json(). */
#define ERT_MAX 8
struct obj_pod_sched {
    struct pol_pod_sched s;
    /* the tolerations the ExtendedResourceToleration admission plugin adds (one per extended
     * resource requested, effect NoSchedule), inside s.tols: their keys */
    const char *ert[ERT_MAX];
    size_t nert;
    void *mem; /* private: every allocation, freed by obj_pod_sched_release() */
};

/* Read pod (a Pod or pod template: {metadata, spec}) into *out. Unknown operators and malformed
 * entries are read as kube-scheduler's API validation would have refused them: TPX_EINVAL naming
 * the field. TPX_ENOMEM. */
enum tpx_code obj_pod_sched_from_json(const json_t *pod, struct obj_pod_sched *out,
                                      struct tpx_err *err);
void obj_pod_sched_release(struct obj_pod_sched *p); /* safe twice */

/* A node's name, labels and taints (spec.taints), owned. */
struct obj_node_meta {
    struct pol_node_meta m;
    void *mem; /* private */
};

/* Read Node object node into *out; labels from metadata.labels, plus kubernetes.io/hostname
 * (the kubelet's) when missing. TPX_ENOMEM. */
enum tpx_code obj_node_meta_from_json(const json_t *node, struct obj_node_meta *out,
                                      struct tpx_err *err);
/* The same from a name and labels (a synthetic node). */
enum tpx_code obj_node_meta_from_labels(const char *name, const struct topo_kv *labels,
                                        size_t nlabels, struct obj_node_meta *out,
                                        struct tpx_err *err);
void obj_node_meta_release(struct obj_node_meta *n); /* safe twice */

struct obj_manifest;

/* Which nodes admit each pod of m (after obj_manifest_finish()), as kube-scheduler's filters
 * would: per pod template, pol_admit_nodes() over the n nodes (in the cluster's node order), set
 * on m's replicas (pol_job_replica.admit, admit_why) for pol_plan(). A template every node admits
 * gets none. Owned by the caller; release after the plan. */
struct obj_admission {
    unsigned char **masks; /* per template that some node refuses */
    char **whys;
    size_t nmasks;
    const unsigned char **pod_mask; /* per pod of m: NULL, or one of masks */
    const char **pod_why;
    char note[320];     /* "" or what a synthetic cluster could not check */
    char ert_note[320]; /* "" or which taint ExtendedResourceToleration let pods past */
};

/* synthetic: the nodes are topox's own (`plan --cluster`), whose labels are only topox's: a
 * nodeSelector or affinity requirement on a label key no node carries is not checked (the user's
 * own labels cannot exist there), and a.note says which. TPX_EINVAL naming the template for a
 * malformed affinity; TPX_ENOMEM. */
enum tpx_code obj_manifest_admit(struct obj_manifest *m, const struct obj_node_meta *nodes,
                                 size_t n, bool synthetic, struct obj_admission *a,
                                 struct tpx_err *err);
void obj_admission_release(struct obj_admission *a); /* safe twice */

#endif
