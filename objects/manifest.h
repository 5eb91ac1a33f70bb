/* SPDX-License-Identifier: Apache-2.0 */
/* objects/manifest.h - job manifests (the kinds of objects/manifest_kinds.c's table, recognised by
 * API group and kind, and any other object that embeds pod templates, expanded generically)
 * -> the pods their controllers would create, with the labels, annotations, container env,
 * command and resources those controllers put on real pods, their workloads
 * (pol_workload_infer) and a struct pol_job per object for pol_plan(). The API version each
 * expansion was written from is in docs/workloads.md ("Kinds read"). Used by `topox plan` and
 * its fuzz target. */
#ifndef TPX_OBJECTS_MANIFEST_H
#define TPX_OBJECTS_MANIFEST_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/envexpand.h"
#include "common/err.h"
#include "objects/podfacts.h"
#include "objects/yamljson.h"
#include "policy/policy.h"
#include "workload/engines.h"

/* Most pods one manifest set may expand to (replicas x size); more is TPX_ETOOBIG. Each pod costs
 * plan about 16 KB and 0.1 ms (issue 21, item 9: 99,996 pods were 1.65 GB and 11.7 s), so the cap
 * is what the largest cluster Kubernetes supports could run: 5,000 nodes x 8 accelerators, a pod
 * asking at least one (40,000 pods, about 650 MB). */
#define OBJ_MANIFEST_MAX_PODS 40000u

/* One expanded object: a workload controller or a bare pod. */
struct obj_manifest_job {
    char name[POL_KEY_MAX];   /* "llm/vllm" */
    char kind[64];            /* "LeaderWorkerSet" */
    char source[POL_KEY_MAX]; /* "FILE#DOC": where it was read */
    size_t first_replica;     /* into obj_manifest.replica_first_pod / pol replicas */
    size_t nreplicas;
    bool generic; /* a kind topox does not know, expanded from its pod templates: every layout
                     of its pods is uncertain (placed as preferred) */
};

/* One kind `plan` reads (the table of objects/manifest_kinds.c), for `topox plan --help`. */
struct obj_kind_row {
    const char *group;   /* API group, "" for the core group */
    const char *kind;    /* "LeaderWorkerSet" */
    const char *version; /* the API version its expansion was written from */
    bool pods;           /* plan makes pods of it (else it is read for something else, or noted) */
};

/* Row i of the kinds table (NULL past the end), and how many rows it has. Static storage. Objects
 * of any other group and kind that embed pod templates are expanded generically. */
const struct obj_kind_row *obj_manifest_kind(size_t i);
size_t obj_manifest_nkinds(void);

struct obj_manifest_pod;

/*
 * The expansion. Caller-allocated: obj_manifest_init(), then _add_file/_add_docs any number of
 * times, then _finish() once, then read jobs/wl/names/pol_jobs; free with obj_manifest_release().
 * Keeps the parsed documents alive (the facts borrow their strings). Not thread-safe.
 */
struct obj_manifest {
    /* filled by _finish(): */
    struct obj_manifest_job *jobs;
    size_t njobs;
    struct pol_job *pol_jobs; /* njobs, for pol_plan() */
    struct pol_workload *wl;  /* npods, in job/replica/pod order */
    const char **names;       /* npods pod names */
    size_t npods;
    size_t *replica_first_pod; /* nreplicas + 1 */
    size_t nreplicas;
    char **notes; /* skipped objects, one line each */
    size_t nnotes;
    size_t nskipped_accel; /* skipped objects that ask for accelerators (templates for others,
                              or no pod template topox can read): never "no pods to place" */
    /* private */
    struct obj_yaml_docs *files;
    char **fnames; /* nfiles names, for "FILE:LINE:" */
    size_t nfiles;
    struct obj_pod_facts *tmpl;
    const json_t **tmpl_json; /* ntmpl: each template's object, for error positions */
    size_t *tmpl_file;        /* ntmpl: index into files */
    size_t ntmpl;
    const json_t *err_at; /* while expanding: the value an error is about */
    json_t **made;        /* objects built from a custom kind (Dynamo services), owned */
    size_t nmade;
    const json_t **podgroups; /* scheduling.k8s.io PodGroups read, borrowed from files */
    size_t npodgroups;
    struct obj_manifest_pod *pods;
    size_t apods;
    struct pol_job_replica *pol_replicas;
    size_t ajobs;
    size_t areplicas;
};

void obj_manifest_init(struct obj_manifest *m);

/* Read a YAML/JSON stream ("-" is stdin) and expand every object in it. Errors name the file:
 * "FILE:LINE:COL: ..." for syntax (TPX_EPARSE), "FILE:LINE: KIND 'name': ..." for a bad object
 * (TPX_EINVAL), LINE being where the offending value starts (a replicas field, the pod template,
 * the object itself when the value is missing), TPX_ETOOBIG past OBJ_MANIFEST_MAX_PODS. */
enum tpx_code obj_manifest_add_file(struct obj_manifest *m, const char *path, struct tpx_err *err);

/* Expand parsed documents; m takes ownership of *docs (and empties it) even on failure. Errors
 * name a line when docs were parsed with positions (the default), else "NAME#N: KIND 'name'". */
enum tpx_code obj_manifest_add_docs(struct obj_manifest *m, struct obj_yaml_docs *docs,
                                    const char *name, struct tpx_err *err);

/* Infer each pod's workload, copy a leader's explicit parallelism to group mates whose own is only
 * a default, and build jobs/pol_jobs. TPX_EINVAL naming the pod for a malformed annotation or flag
 * ("FILE:LINE: KIND 'name': pod 'p': ...", LINE being the annotation's value, the command/args
 * element holding the flag, or the pod template for other inconsistencies); TPX_EINVAL when
 * nothing with pods was found. */
enum tpx_code obj_manifest_finish(struct obj_manifest *m, struct tpx_err *err);

/* Facts of pod i (after _finish). Borrowed until release. */
const struct pol_pod_facts *obj_manifest_pod_facts(const struct obj_manifest *m, size_t i);

/* The env of pod i (after _finish): every container's, containers in order, each with what its
 * operator injects in front (LWS_LEADER_ADDRESS, LWS_GROUP_SIZE, LWS_WORKER_INDEX; RBG_*)
 * replacing the container's own of the same name, then the container's own. *n entries;
 * borrowed until release. A value is NULL when the plan cannot know it (valueFrom). The same list
 * is the pod's pol_pod_facts.env, which the engine reader resolves flag values from. */
const struct tpx_env_var *obj_manifest_pod_env(const struct obj_manifest *m, size_t i, size_t *n);
/* The pod template (or Pod) pod i was made from, with its spec.resourceClaims. Borrowed until
 * release. Valid once the pod exists (before or after _finish). */
const json_t *obj_manifest_pod_template(const struct obj_manifest *m, size_t i);

/* Engine information of pod i, read from its argv and annotations by wl_engine_info(). Cannot
 * fail. */
void obj_manifest_engine_info(const struct obj_manifest *m, size_t i, struct wl_engine_info *out);

/* Where replica r's parallelism is written, as "FILE:LINE" into out (len bytes): the
 * tensor-parallel annotation's value or the command/args element holding the flag, in the
 * template of the replica's first pod; the template itself when it uses defaults; "FILE#DOC" when
 * no position is known. For messages about a rejected replica. */
void obj_manifest_replica_source(const struct obj_manifest *m, size_t r, char *out, size_t len);

/* Where one value of pod i is written, as "FILE:LINE" into out: the annotation's value when
 * annotation is not NULL and the template has it, else argv element argi (struct
 * pol_size_origin.argi) of the pod's facts, else the template; "FILE#DOC" when no position is
 * known. For `plan`'s warnings about uncertain layouts. */
void obj_manifest_value_source(const struct obj_manifest *m, size_t i, int argi,
                               const char *annotation, char *out, size_t len);

void obj_manifest_release(struct obj_manifest *m); /* safe twice */

#endif
