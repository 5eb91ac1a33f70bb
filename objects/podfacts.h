/* SPDX-License-Identifier: Apache-2.0 */
/* objects/podfacts.h - Kubernetes Pod and Node objects (jansson values) -> the plain structs of
 * the policy core: struct pol_pod_facts and struct topo_node_info. Shared by `topox serve` and
 * `topox plan`. Reentrant: no globals. */
#ifndef TPX_OBJECTS_PODFACTS_H
#define TPX_OBJECTS_PODFACTS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/err.h"
#include "policy/policy.h"
#include "topology/labels.h"
#include "topology/model.h"

/*
 * The facts of one pod plus the storage behind them. facts.labels, facts.annotations and facts.argv
 * point into arrays this struct owns; the strings themselves are BORROWED from the json_t the facts
 * were read from (which must outlive the store), except scalar values that were not JSON strings
 * (an unquoted `8` in YAML), which are formatted into owned copies. Caller-allocated; zero it or
 * let obj_pod_facts_from_json() fill it. Free with obj_pod_facts_release().
 */
struct obj_pod_facts {
    struct pol_pod_facts facts;
    struct topo_kv *kv; /* labels, then annotations */
    const char **argv;
    struct tpx_env_var *env; /* every container's env, in order (facts.env points here) */
    char **owned;            /* formatted scalars */
    size_t nowned;
    /* the engine config files ConfigMaps give the pod (facts.configs points here), with their
     * pairs and text: filled by objects/engine_config.c, owned */
    struct pol_config_file *configs;
    struct topo_kv *config_kv;
    char **config_text;
    size_t nconfig_text;
};

/*
 * Read a Pod, or a pod template ({metadata, spec}), into *store. Labels and annotations become kv
 * pairs; argv is every container's command then args, in order; env is every container's env
 * (name and value; valueFrom entries have a NULL value); accelerators are max(sum over
 * containers, max over init containers) of each container's request (its limit when it has no
 * request) for the first resource of cfg->resources any container asks for (cfg NULL: the
 * defaults of topo_label_config_default()). TPX_EINVAL with a message naming the container and
 * resource for a quantity that is not a whole number, or for a pod that is not an object;
 * TPX_ENOMEM. On failure *store is released.
 */
enum tpx_code obj_pod_facts_from_json(const json_t *pod, struct obj_pod_facts *store,
                                      struct tpx_err *err);
enum tpx_code obj_pod_facts_from_json_cfg(const json_t *pod, const struct topo_label_config *cfg,
                                          struct obj_pod_facts *store, struct tpx_err *err);

/* Free what the store owns. Safe on a zeroed store and twice. */
void obj_pod_facts_release(struct obj_pod_facts *store);

/*
 * Accelerators a pod (or template) requests, as obj_pod_facts_from_json() counts them, without
 * building the rest. *resource (may be NULL) receives the resource name (static storage of cfg, or
 * NULL when none). TPX_EINVAL for a bad quantity.
 */
enum tpx_code obj_pod_accel(const json_t *pod, const struct topo_label_config *cfg, unsigned *accel,
                            const char **resource, struct tpx_err *err);

/*
 * Read a Node object into *out through topo_labels_decode() (cfg NULL: the defaults):
 * metadata.name, metadata.labels and status.allocatable; unschedulable when spec.unschedulable is
 * true or a Ready condition's status is not "True". out's strings are BORROWED from node (copy
 * them, e.g. with topo_cluster_add(), before node goes away); accel_used is 0. explain may be NULL.
 * TPX_EINVAL with a message naming the node for a missing name, a label value that is not a string
 * or a malformed topox.io label; TPX_ENOMEM.
 */
enum tpx_code obj_node_from_json(const json_t *node, const struct topo_label_config *cfg,
                                 struct topo_node_info *out, struct topo_label_explain *explain,
                                 struct tpx_err *err);

/* The pipeline scope (enum pol_scope) a PodGroup topology key names: the level whose label keys
 * in cfg (NULL: the defaults) hold it, rack, block or zone; -1 for the NVLink domain level (topox
 * already keeps TP groups in their domains; the scheduler's TAS holds the key) and unknown keys. */
int obj_podgroup_key_scope(const struct topo_label_config *cfg, const char *key);

/*
 * What topox reads of a scheduling.k8s.io PodGroup (v1beta1 in Kubernetes 1.37; v1alpha2 before):
 * spec.schedulingPolicy.gang.minCount into *min_count (0 for a basic policy or none), and the
 * finest scope its spec.schedulingConstraints.topology keys name (obj_podgroup_key_scope) into
 * *level (-1: none). Cannot fail: what is not there or malformed reads as 0 / -1.
 */
void obj_podgroup_read(const json_t *pg, const struct topo_label_config *cfg, unsigned *min_count,
                       int *level);

/* A JSON scalar as text: the string itself (borrowed), or a number/boolean formatted into buf.
 * NULL for null, objects and arrays. Cannot fail. */
const char *obj_json_scalar(const json_t *v, char *buf, size_t bufsz);

/* Is obj of API group `group` ("" for the core group) and kind `kind`? The group is apiVersion's
 * part before '/' ("apps/v1" -> "apps", "v1" -> ""). Objects are told apart by group AND kind:
 * several operators name their kinds Job, Service or InferenceService. An object without an
 * apiVersion (not valid for the API server, but common in hand-written snippets) is matched by
 * its kind alone. Cannot fail. */
bool obj_is_kind(const json_t *obj, const char *group, const char *kind);

/* The API group of obj's apiVersion into out ("" for the core group or no apiVersion); false when
 * obj has no apiVersion string. */
bool obj_api_group(const json_t *obj, char *out, size_t n);

#endif
