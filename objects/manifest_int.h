/* SPDX-License-Identifier: Apache-2.0 */
/* objects/manifest_int.h - the inside of the manifest expansion, read top-down: manifest.c reads
 * documents and finishes (the groups, the facts, the workloads); manifest_kinds.c is the table of
 * kinds by API group and kind, which dispatches to the expansions (manifest_core.c: Pod,
 * Deployment, StatefulSet, ReplicaSet, Job, JobSet, LeaderWorkerSet; manifest_serving.c:
 * DisaggregatedSet, DynamoGraphDeployment, RoleBasedGroup, LLMInferenceService, PodCliqueSet;
 * manifest_training.c: PyTorchJob, MPIJob, TrainJob and the Workload API's PodGroups;
 * manifest_aibrix.c: StormService; manifest_ray.c: KubeRay and RayClusterFleet; manifest_nim.c:
 * NIMService; manifest_rendered.c: VLLMRuntime, Kaito's Workspace; manifest_generic.c: every
 * other kind); each expansion writes its pods with the builder of manifest_build.c. Private to
 * objects/manifest*.c. Not thread-safe, like the manifest. */
#ifndef TPX_OBJECTS_MANIFEST_INT_H
#define TPX_OBJECTS_MANIFEST_INT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/err.h"
#include "objects/manifest.h"

#define EXTRA_MAX 20
#define EXTRA_LEN 72
#define ENV_MAX 12
#define ENV_LEN 192
#define LIST_DEPTH_MAX 4

/* Where a controller puts the env it injects. */
enum inj_mode {
    INJ_FRONT_ALL = 0,  /* in front of every container's env, replacing same names (LWS, RBG) */
    INJ_APPEND_ALL,     /* after every container's env (Kubeflow training-operator) */
    INJ_APPEND_FIRST,   /* after the first container's env only (mpi-operator) */
    INJ_APPEND_REPLACE, /* after every container's env, replacing same names (Grove) */
};

struct obj_manifest_pod {
    size_t tmpl;
    size_t job;
    char name[POL_KEY_MAX];
    size_t nel; /* extra labels: extra[0, nel) */
    size_t nea; /* extra annotations: extra[nel, nel + nea) */
    const char *ekey[EXTRA_MAX];
    char eval[EXTRA_MAX][EXTRA_LEN];
    size_t ninj; /* env the operator injects into every container, in front of the own env */
    const char *ikey[ENV_MAX];
    char ival[ENV_MAX][ENV_LEN];
    bool ival_unknown[ENV_MAX]; /* valueFrom (status.podIP): NULL value */
    enum inj_mode inj_mode;
    struct topo_kv *kv;
    struct tpx_env_var *env; /* the whole env, built by _finish() */
    size_t nenv;
    struct pol_pod_facts facts;
};

/* What one controller expansion writes into each of its pods. */
struct expander {
    struct obj_manifest *m;
    const char *src;
    size_t job;
    size_t tmpl;
};

/* Labels an owning object adds to every pod of an LWS it creates (a DisaggregatedSet's role,
 * slice, name, revision). */
struct owner_labels {
    size_t n;
    const char *key[6];
    char val[6][EXTRA_LEN];
};

/* The builder (objects/manifest_build.c). On error m->err_at is the value the error is about. */
void obj_mf_add_note(struct obj_manifest *m, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void obj_mf_copy_str(char *dst, size_t n, const char *s); /* bounded, always terminated */
/* A stable short hash as 16 hex digits: stands in for the controllers' sha1 keys. */
void obj_mf_hash_key(char out[EXTRA_LEN], const char *a, const char *b, size_t idx);
const char *obj_mf_obj_name(const json_t *o); /* metadata.name, "" when none */
const char *obj_mf_obj_ns(const json_t *o);   /* metadata.namespace, "default" when none */
enum tpx_code obj_mf_get_count(struct obj_manifest *m, const json_t *obj, const char *key,
                               unsigned long def, unsigned long *out, struct tpx_err *err);
enum tpx_code obj_mf_add_job(struct obj_manifest *m, const json_t *obj, const char *kind,
                             const char *src, size_t *job, struct tpx_err *err);
/* tmpl ({metadata, spec}) must outlive m: a document of m's files or an object obj_mf_keep()s. */
enum tpx_code obj_mf_add_tmpl(struct obj_manifest *m, const json_t *tmpl, size_t *out,
                              struct tpx_err *err);
/* The engine config files ConfigMaps of the current file give tmpl's containers, into s (its
 * facts.configs): objects/engine_config.c. TPX_ENOMEM only. */
enum tpx_code obj_mf_engine_configs(struct obj_manifest *m, const json_t *tmpl,
                                    struct obj_pod_facts *s, struct tpx_err *err);
enum tpx_code obj_mf_reserve_pods(struct obj_manifest *m, unsigned long n, struct tpx_err *err);
enum tpx_code obj_mf_new_replica(struct obj_manifest *m, struct tpx_err *err);
struct obj_manifest_pod *obj_mf_new_pod(struct expander *x, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Extra labels must be added before extra annotations. */
void obj_mf_extra(struct obj_manifest_pod *p, bool annotation, const char *key, const char *fmt,
                  ...) __attribute__((format(printf, 4, 5)));
/* An env var the controller injects (where: p->inj_mode); fmt NULL: a valueFrom. */
void obj_mf_inject(struct obj_manifest_pod *p, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Keep o (owned) alive until release; NULL with *err when o is NULL or out of memory. */
json_t *obj_mf_keep(struct obj_manifest *m, json_t *o, struct tpx_err *err);
/* By API group and kind ("" the core group), named name, in the file being read; or NULL. */
const json_t *obj_mf_same_file_object(const struct obj_manifest *m, const char *group,
                                      const char *kind, const char *name);
json_t *obj_mf_container_named(const json_t *ps, const char *name);
/* The pods of one LeaderWorkerSet spec named name, for the job the caller added. */
enum tpx_code obj_mf_lws_pods(struct obj_manifest *m, struct expander *x, const json_t *obj,
                              const char *name, const json_t *spec, const struct owner_labels *ol,
                              struct tpx_err *err);
enum tpx_code obj_mf_expand_jobset(struct obj_manifest *m, const json_t *obj, const char *src,
                                   struct tpx_err *err);

/* Expand obj by its API group and kind (objects/manifest_kinds.c), generically when the table has
 * no row for it. *prefix: whether an error should be prefixed with "FILE:LINE: KIND 'name'". */
enum tpx_code obj_mf_dispatch(struct obj_manifest *m, const json_t *obj, const char *src,
                              bool *prefix, struct tpx_err *err);
/* The kinds that make pods, "Pod, Deployment, ...", for the "no pods to place" message. */
void obj_mf_kind_names(char *out, size_t len);

/* The kinds: each adds its job and pods, or a note; errors as obj_manifest_add_docs(). */
enum tpx_code obj_mf_expand_pod(struct obj_manifest *m, const json_t *obj, const char *src,
                                struct tpx_err *err);
/* objects/manifest_core.c. Deployment, StatefulSet, ReplicaSet (the kind is read from obj). */
enum tpx_code obj_mf_expand_replicated(struct obj_manifest *m, const json_t *obj, const char *src,
                                       struct tpx_err *err);
enum tpx_code obj_mf_expand_job(struct obj_manifest *m, const json_t *obj, const char *src,
                                struct tpx_err *err);
enum tpx_code obj_mf_expand_lws(struct obj_manifest *m, const json_t *obj, const char *src,
                                struct tpx_err *err);
/* objects/manifest_generic.c: any other kind, from the pod templates it embeds. */
enum tpx_code obj_mf_expand_generic(struct obj_manifest *m, const json_t *obj, const char *src,
                                    struct tpx_err *err);
/* objects/manifest_aibrix.c */
enum tpx_code obj_mf_expand_stormservice(struct obj_manifest *m, const json_t *obj, const char *src,
                                         struct tpx_err *err);
/* objects/manifest_ray.c */
enum tpx_code obj_mf_expand_raycluster(struct obj_manifest *m, const json_t *obj, const char *src,
                                       struct tpx_err *err);
enum tpx_code obj_mf_expand_rayservice(struct obj_manifest *m, const json_t *obj, const char *src,
                                       struct tpx_err *err);
enum tpx_code obj_mf_expand_rayjob(struct obj_manifest *m, const json_t *obj, const char *src,
                                   struct tpx_err *err);
enum tpx_code obj_mf_expand_rayfleet(struct obj_manifest *m, const json_t *obj, const char *src,
                                     struct tpx_err *err);
/* objects/manifest_rendered.c: kinds whose operators render the pod from their own fields */
enum tpx_code obj_mf_expand_vllmruntime(struct obj_manifest *m, const json_t *obj, const char *src,
                                        struct tpx_err *err);
enum tpx_code obj_mf_expand_kaito_workspace(struct obj_manifest *m, const json_t *obj,
                                            const char *src, struct tpx_err *err);
/* objects/manifest_nim.c */
enum tpx_code obj_mf_expand_nimservice(struct obj_manifest *m, const json_t *obj, const char *src,
                                       struct tpx_err *err);
enum tpx_code obj_mf_expand_disaggregatedset(struct obj_manifest *m, const json_t *obj,
                                             const char *src, struct tpx_err *err);
enum tpx_code obj_mf_expand_dgd(struct obj_manifest *m, const json_t *obj, const char *src,
                                struct tpx_err *err);
enum tpx_code obj_mf_expand_rbg(struct obj_manifest *m, const json_t *obj, const char *src,
                                struct tpx_err *err);
enum tpx_code obj_mf_expand_llmisvc(struct obj_manifest *m, const json_t *obj, const char *src,
                                    struct tpx_err *err);
enum tpx_code obj_mf_expand_pcs(struct obj_manifest *m, const json_t *obj, const char *src,
                                struct tpx_err *err);
enum tpx_code obj_mf_expand_pytorchjob(struct obj_manifest *m, const json_t *obj, const char *src,
                                       struct tpx_err *err);
enum tpx_code obj_mf_expand_mpijob(struct obj_manifest *m, const json_t *obj, const char *src,
                                   struct tpx_err *err);
enum tpx_code obj_mf_expand_trainjob(struct obj_manifest *m, const json_t *obj, const char *src,
                                     struct tpx_err *err);
enum tpx_code obj_mf_read_podgroup(struct obj_manifest *m, const json_t *obj, struct tpx_err *err);
/* The PodGroups' groups and scopes, as annotations; run by _finish() before the facts. */
enum tpx_code obj_mf_workload_groups(struct obj_manifest *m, struct tpx_err *err);

#endif
