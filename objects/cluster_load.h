/* SPDX-License-Identifier: Apache-2.0 */
/* objects/cluster_load.h - a sealed topo_cluster from Node objects in files (what `kubectl get
 * nodes -o json|yaml` prints) or in already parsed documents, and the capacity that bound pods use
 * (`kubectl get pods -A -o json`) applied to a ledger. Used by `topox plan` and `topox serve`. */
#ifndef TPX_OBJECTS_CLUSTER_LOAD_H
#define TPX_OBJECTS_CLUSTER_LOAD_H

#include <jansson.h>
#include <stddef.h>

#include "common/err.h"
#include "policy/policy.h"
#include "topology/labels.h"
#include "topology/model.h"

struct obj_node_meta;

/* Largest nodes or pods file read (a 10 000-node list is ~70 MB). */
#define OBJ_CLUSTER_MAX_FILE ((size_t)256 << 20)

/*
 * What a load produced. Owned by the caller: free with obj_cluster_load_release(). To keep the
 * cluster beyond the release, take the pointer and set out->cluster to NULL first.
 */
struct obj_cluster_load_result {
    struct topo_cluster *cluster;       /* sealed */
    struct topo_label_explain *explain; /* one per node, in node index order (keys are borrowed
                                           from the label config: static for the defaults) */
    struct obj_node_meta *meta; /* one per node, in node index order: name, labels, taints (what
                                   kube-scheduler's filters read, for plan); NULL when unknown */
    size_t nmeta;
    char **warnings; /* notes (skipped objects) then topo_labels_hygiene() */
    size_t nwarnings;
};

/*
 * Read every Node object in paths (each a List/NodeList, a single Node, or a multi-document YAML
 * stream; "-" is stdin), decode each with obj_node_from_json() (cfg NULL: the defaults), and seal.
 * Objects of other kinds are skipped with a warning. Errors name the file: "FILE:LINE:COL: ..." for
 * YAML/JSON syntax (TPX_EPARSE), "FILE:LINE: node 'x': ..." for a bad node (TPX_EINVAL; LINE is
 * where the Node object starts), TPX_EEXIST for a node named twice (at its second Node), TPX_EINVAL
 * when no Node object was found at all, TPX_ENOENT/TPX_EIO when a file cannot be read. On failure
 * *out is left empty.
 */
enum tpx_code obj_cluster_load(const char *const *paths, size_t npaths,
                               const struct topo_label_config *cfg,
                               struct obj_cluster_load_result *out, struct tpx_err *err);

/* The same from parsed documents (borrowed for the call); name is used in messages, without a
 * line. */
enum tpx_code obj_cluster_load_docs(json_t *const *docs, size_t ndocs, const char *name,
                                    const struct topo_label_config *cfg,
                                    struct obj_cluster_load_result *out, struct tpx_err *err);

struct obj_dra;

/*
 * A snapshot (`kubectl get nodes,pods,resourceslices,resourceclaims,deviceclasses -A -o json`):
 * the Nodes as obj_cluster_load_docs() reads them, where a node with accelerator devices in dra
 * (finished) has those as its allocatable accelerators, under the node's own resource name or
 * obj_dra_resource(). The snapshot's other kinds (Pod, PodGroup, the DRA kinds) are skipped
 * without a note.
 */
enum tpx_code obj_cluster_load_snapshot(json_t *const *docs, size_t ndocs, const char *name,
                                        const struct topo_label_config *cfg,
                                        const struct obj_dra *dra,
                                        struct obj_cluster_load_result *out, struct tpx_err *err);

void obj_cluster_load_release(struct obj_cluster_load_result *r); /* safe twice */

/*
 * Read Pod objects from path (List/PodList, single Pod or a YAML stream) and account, through
 * pol_ledger_use(), the accelerators of every pod that has spec.nodeName on a node of the ledger's
 * cluster and whose status.phase is not Succeeded or Failed. Pods on unknown nodes are ignored.
 * *applied (may be NULL) receives how many pods were counted. Errors as for obj_cluster_load()
 * ("FILE:LINE: pod 'x': ..."; obj_cluster_apply_pods_docs() names no line).
 */
enum tpx_code obj_cluster_apply_pods(struct pol_ledger *l, const char *path,
                                     const struct topo_label_config *cfg, size_t *applied,
                                     struct tpx_err *err);

/* The same from parsed documents. */
enum tpx_code obj_cluster_apply_pods_docs(struct pol_ledger *l, json_t *const *docs, size_t ndocs,
                                          const char *name, const struct topo_label_config *cfg,
                                          size_t *applied, struct tpx_err *err);

/* Account a snapshot's usage: on each node the accelerator devices that allocated claims hold,
 * then the bound pods as obj_cluster_apply_pods_docs() does, except a pod whose extended resource
 * an allocated claim of the snapshot serves (status.extendedResourceClaimStatus): that claim
 * counted it. */
enum tpx_code obj_cluster_apply_snapshot(struct pol_ledger *l, json_t *const *docs, size_t ndocs,
                                         const char *name, const struct topo_label_config *cfg,
                                         const struct obj_dra *dra, size_t *applied,
                                         struct tpx_err *err);

/*
 * A sealed cluster as the NodeList `kubectl get nodes -o json` would print for it (apiVersion v1,
 * kind List, items of kind Node with metadata.name and labels, status.allocatable and capacity,
 * a Ready condition: "False" for an unschedulable node), so it can be saved, edited and read back
 * by obj_cluster_load(). labels_of(c, i, out, storage, max) gives node i's labels (e.g.
 * topo_synthetic_node_labels). New reference in *out (json_decref it); TPX_ENOMEM.
 */
typedef size_t (*obj_node_labels_fn)(const struct topo_cluster *c, size_t i, struct topo_kv *out,
                                     char storage[][64], size_t max);
enum tpx_code obj_cluster_to_nodelist(const struct topo_cluster *c, obj_node_labels_fn labels_of,
                                      json_t **out, struct tpx_err *err);

#endif
