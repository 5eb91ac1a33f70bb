/* SPDX-License-Identifier: Apache-2.0 */
/* objects/manifest_core.c - the core API's kinds and the sigs.k8s.io controllers as the pods
 * their controllers make: Pod, Deployment, StatefulSet, ReplicaSet, Job, JobSet, LeaderWorkerSet
 * (the LWS pods are shared by the kinds that make LeaderWorkerSets). Written with the builder of
 * objects/manifest_build.c. */
#include "objects/manifest.h"
#include "objects/manifest_int.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum tpx_code obj_mf_expand_pod(struct obj_manifest *m, const json_t *obj, const char *src,
                                struct tpx_err *err)
{
    struct expander x = {m, src, 0, 0};

    if (obj_mf_add_job(m, obj, "Pod", src, &x.job, err) != TPX_OK ||
        obj_mf_add_tmpl(m, obj, &x.tmpl, err) != TPX_OK ||
        obj_mf_reserve_pods(m, 1, err) != TPX_OK || obj_mf_new_replica(m, err) != TPX_OK)
        return err->code;
    obj_mf_new_pod(&x, "%s", obj_mf_obj_name(obj)[0] ? obj_mf_obj_name(obj) : "pod");
    return TPX_OK;
}

/* Deployment, StatefulSet, ReplicaSet: each replica is a group of one pod, unless the template's
 * topox.io/group-size annotation asks for groups of several consecutive replicas. */
enum tpx_code obj_mf_expand_replicated(struct obj_manifest *m, const json_t *obj, const char *src,
                                       struct tpx_err *err)
{
    const char *kind = json_string_value(json_object_get(obj, "kind"));
    const json_t *spec = json_object_get(obj, "spec");
    const json_t *tmpl = json_object_get(spec, "template");
    const char *gs = json_string_value(json_object_get(
        json_object_get(json_object_get(tmpl, "metadata"), "annotations"), "topox.io/group-size"));
    struct expander x = {m, src, 0, 0};
    unsigned long replicas;
    unsigned long group = 1;

    if (obj_mf_get_count(m, spec, "replicas", 1, &replicas, err) != TPX_OK)
        return err->code;
    if (gs) {
        char *end;
        group = strtoul(gs, &end, 10);
        if (*end || group == 0)
            group = 1; /* pol_workload_infer() reports the malformed value */
    }
    if (obj_mf_add_job(m, obj, kind, src, &x.job, err) != TPX_OK ||
        obj_mf_add_tmpl(m, tmpl, &x.tmpl, err) != TPX_OK ||
        obj_mf_reserve_pods(m, replicas, err) != TPX_OK)
        return err->code;
    for (unsigned long i = 0; i < replicas; i++) {
        struct obj_manifest_pod *p;
        if (i % group == 0 && obj_mf_new_replica(m, err) != TPX_OK)
            return err->code;
        p = obj_mf_new_pod(&x, "%s-%lu", obj_mf_obj_name(obj), i);
        if (strcmp(kind, "StatefulSet") == 0) {
            /* what the StatefulSet controller labels each pod with (pkg/controller/statefulset
             * stateful_set_utils.go): the world a --nnodes engine makes of them is read there */
            obj_mf_extra(p, false, "statefulset.kubernetes.io/pod-name", "%.60s-%lu",
                         obj_mf_obj_name(obj), i);
            obj_mf_extra(p, false, "apps.kubernetes.io/pod-index", "%lu", i);
        }
        if (group > 1) {
            obj_mf_extra(p, true, "topox.io/group", "%.30s/%.24s-%lu", obj_mf_obj_ns(obj),
                         obj_mf_obj_name(obj), i / group);
            obj_mf_extra(p, true, "topox.io/pod-index", "%lu", i % group);
        }
    }
    return TPX_OK;
}

/* Pods one Job runs at once: parallelism (default 1), at most completions when set. */
static enum tpx_code job_width(struct obj_manifest *m, const json_t *jspec, unsigned long *n,
                               bool *indexed, struct tpx_err *err)
{
    unsigned long par;
    unsigned long comp;
    const char *mode = json_string_value(json_object_get(jspec, "completionMode"));

    if (obj_mf_get_count(m, jspec, "parallelism", 1, &par, err) != TPX_OK ||
        obj_mf_get_count(m, jspec, "completions", par, &comp, err) != TPX_OK)
        return err->code;
    *n = par < comp ? par : comp;
    *indexed = mode && strcmp(mode, "Indexed") == 0;
    return TPX_OK;
}

enum tpx_code obj_mf_expand_job(struct obj_manifest *m, const json_t *obj, const char *src,
                                struct tpx_err *err)
{
    const json_t *spec = json_object_get(obj, "spec");
    struct expander x = {m, src, 0, 0};
    char uid[EXTRA_LEN];
    unsigned long n;
    bool indexed;

    if (job_width(m, spec, &n, &indexed, err) != TPX_OK ||
        obj_mf_add_job(m, obj, "Job", src, &x.job, err) != TPX_OK ||
        obj_mf_add_tmpl(m, json_object_get(spec, "template"), &x.tmpl, err) != TPX_OK ||
        obj_mf_reserve_pods(m, n, err) != TPX_OK)
        return err->code;
    obj_mf_hash_key(uid, obj_mf_obj_ns(obj), obj_mf_obj_name(obj), 0);
    /* an Indexed Job is one group (its indexes are ranks); otherwise each pod stands alone */
    for (unsigned long i = 0; i < n; i++) {
        struct obj_manifest_pod *p;
        if ((!indexed || i == 0) && obj_mf_new_replica(m, err) != TPX_OK)
            return err->code;
        p = obj_mf_new_pod(&x, "%s-%lu", obj_mf_obj_name(obj), i);
        obj_mf_extra(p, false, "batch.kubernetes.io/job-name", "%.70s", obj_mf_obj_name(obj));
        obj_mf_extra(p, false, "batch.kubernetes.io/controller-uid", "%s", uid);
        if (indexed) {
            obj_mf_extra(p, false, "batch.kubernetes.io/job-completion-index", "%lu", i);
            obj_mf_extra(p, true, "batch.kubernetes.io/job-completion-index", "%lu", i);
        }
    }
    return TPX_OK;
}

enum tpx_code obj_mf_expand_jobset(struct obj_manifest *m, const json_t *obj, const char *src,
                                   struct tpx_err *err)
{
    const json_t *rjs = json_object_get(json_object_get(obj, "spec"), "replicatedJobs");
    const char *js = obj_mf_obj_name(obj);
    struct expander x = {m, src, 0, 0};
    size_t r;
    const json_t *rj;

    if (!json_is_array(rjs) || json_array_size(rjs) == 0) {
        if (rjs)
            m->err_at = rjs;
        return tpx_err_set(err, TPX_EINVAL, "spec.replicatedJobs is missing or empty");
    }
    if (obj_mf_add_job(m, obj, "JobSet", src, &x.job, err) != TPX_OK)
        return err->code;
    json_array_foreach(rjs, r, rj)
    {
        const json_t *jspec = json_object_get(json_object_get(rj, "template"), "spec");
        const char *rjname = json_string_value(json_object_get(rj, "name"));
        unsigned long reps;
        unsigned long n;
        bool indexed;

        m->err_at = rj;
        if (!rjname)
            return tpx_err_set(err, TPX_EINVAL, "replicatedJobs[%zu]: name is missing", r);
        if (obj_mf_get_count(m, rj, "replicas", 1, &reps, err) != TPX_OK ||
            job_width(m, jspec, &n, &indexed, err) != TPX_OK ||
            obj_mf_add_tmpl(m, json_object_get(jspec, "template"), &x.tmpl, err) != TPX_OK) {
            tpx_err_prefix(err, "replicatedJobs '%s'", rjname);
            return err->code;
        }
        if (reps && n > OBJ_MANIFEST_MAX_PODS / reps)
            return tpx_err_set(err, TPX_ETOOBIG, "more than %u pods in all", OBJ_MANIFEST_MAX_PODS);
        if (obj_mf_reserve_pods(m, reps * n, err) != TPX_OK)
            return err->code;
        for (unsigned long j = 0; j < reps; j++) {
            char jobname[POL_KEY_MAX];
            char key[EXTRA_LEN];

            snprintf(jobname, sizeof(jobname), "%.80s-%.80s-%lu", js, rjname, j);
            obj_mf_hash_key(key, obj_mf_obj_ns(obj), jobname, 0);
            if (obj_mf_new_replica(m, err) != TPX_OK)
                return err->code;
            for (unsigned long i = 0; i < n; i++) {
                struct obj_manifest_pod *p = obj_mf_new_pod(&x, "%s-%lu", jobname, i);
                obj_mf_extra(p, false, "jobset.sigs.k8s.io/jobset-name", "%.70s", js);
                obj_mf_extra(p, false, "jobset.sigs.k8s.io/replicatedjob-name", "%.70s", rjname);
                obj_mf_extra(p, false, "jobset.sigs.k8s.io/job-index", "%lu", j);
                obj_mf_extra(p, false, "jobset.sigs.k8s.io/job-key", "%s", key);
                obj_mf_extra(p, false, "batch.kubernetes.io/job-name", "%.70s", jobname);
                if (indexed)
                    obj_mf_extra(p, false, "batch.kubernetes.io/job-completion-index", "%lu", i);
                obj_mf_extra(p, true, "jobset.sigs.k8s.io/job-key", "%s", key);
                obj_mf_extra(p, true, "jobset.sigs.k8s.io/replicatedjob-replicas", "%lu", reps);
                if (indexed)
                    obj_mf_extra(p, true, "batch.kubernetes.io/job-completion-index", "%lu", i);
            }
        }
    }
    return TPX_OK;
}

/*
 * The pods of one LeaderWorkerSet spec (leaderworkerset.x-k8s.io/v1, kubernetes-sigs/lws
 * api/leaderworkerset/v1/leaderworkerset_types.go, pkg/webhooks/pod_webhook.go,
 * pkg/utils/pod/pod_utils.go): groups `<lws>-<g>` (leader) and `<lws>-<g>-<w>`, the
 * leaderworkerset.sigs.k8s.io/{name,group-index,worker-index,group-key} labels, the size (and
 * leader-name on workers) annotations, subGroupPolicy's subgroup-index/subgroup-key labels and
 * subgroup-size (and, on the leader, subgroup-policy-type) annotations, and the env AddLWSVariables
 * puts in front of every container's env: LWS_LEADER_ADDRESS `<lws>-<g>.<subdomain>.<ns>`,
 * LWS_GROUP_SIZE, LWS_WORKER_INDEX. The hash keys are stand-ins (obj_mf_hash_key(), not sha1). The
 * caller has added the job; m->err_at names the bad value on error.
 */
enum tpx_code obj_mf_lws_pods(struct obj_manifest *m, struct expander *x, const json_t *obj,
                              const char *name, const json_t *spec, const struct owner_labels *ol,
                              struct tpx_err *err)
{
    const json_t *lwt = json_object_get(spec, "leaderWorkerTemplate");
    const json_t *lt = json_object_get(lwt, "leaderTemplate");
    const json_t *wt = json_object_get(lwt, "workerTemplate");
    const json_t *sgp = json_object_get(lwt, "subGroupPolicy");
    const char *sgtype = json_string_value(json_object_get(sgp, "subGroupPolicyType"));
    const char *sdpol = json_string_value(
        json_object_get(json_object_get(spec, "networkConfig"), "subdomainPolicy"));
    bool leader_excluded = sgtype && strcmp(sgtype, "LeaderExcluded") == 0;
    bool per_replica = sdpol && strcmp(sdpol, "UniquePerReplica") == 0;
    size_t leader_tmpl;
    size_t worker_tmpl;
    unsigned long groups;
    unsigned long size;
    unsigned long sgs = 0;

    if (!json_is_object(lwt) || !json_is_object(wt)) {
        if (lwt)
            m->err_at = lwt;
        else if (spec)
            m->err_at = spec;
        return tpx_err_set(err, TPX_EINVAL, "spec.leaderWorkerTemplate.workerTemplate is missing");
    }
    if (obj_mf_get_count(m, spec, "replicas", 1, &groups, err) != TPX_OK ||
        obj_mf_get_count(m, lwt, "size", 1, &size, err) != TPX_OK ||
        (sgp && obj_mf_get_count(m, sgp, "subGroupSize", 0, &sgs, err) != TPX_OK))
        return err->code;
    if (size == 0) {
        m->err_at = json_object_get(lwt, "size");
        return tpx_err_set(err, TPX_EINVAL, "leaderWorkerTemplate.size must be at least 1");
    }
    if (sgs > size) {
        m->err_at = json_object_get(sgp, "subGroupSize");
        return tpx_err_set(err, TPX_EINVAL,
                           "subGroupPolicy.subGroupSize %lu is more than the size %lu", sgs, size);
    }
    if (groups && size > OBJ_MANIFEST_MAX_PODS / groups)
        return tpx_err_set(err, TPX_ETOOBIG, "more than %u pods in all", OBJ_MANIFEST_MAX_PODS);
    if (obj_mf_add_tmpl(m, wt, &worker_tmpl, err) != TPX_OK)
        return err->code;
    leader_tmpl = worker_tmpl;
    if (lt && obj_mf_add_tmpl(m, lt, &leader_tmpl, err) != TPX_OK) {
        tpx_err_prefix(err, "leaderTemplate");
        return err->code;
    }
    if (obj_mf_reserve_pods(m, groups * size, err) != TPX_OK)
        return err->code;
    for (unsigned long g = 0; g < groups; g++) {
        char key[EXTRA_LEN];
        char leader[96];

        obj_mf_hash_key(key, obj_mf_obj_ns(obj), name, g);
        snprintf(leader, sizeof(leader), "%.60s-%lu", name, g);
        if (obj_mf_new_replica(m, err) != TPX_OK)
            return err->code;
        for (unsigned long w = 0; w < size; w++) {
            struct obj_manifest_pod *p;
            bool in_sub = sgs > 0 && !(w == 0 && leader_excluded);
            unsigned long sub = 0;

            /* pod_webhook.go getSubGroupIndex: the leader is the extra pod of subgroup 0 when
             * size-1 (not size) divides by subGroupSize */
            if (in_sub && w > 0)
                sub = ((size - 1) % sgs == 0 && size % sgs != 0) ? (w - 1) / sgs : w / sgs;
            x->tmpl = w == 0 ? leader_tmpl : worker_tmpl;
            p = w == 0 ? obj_mf_new_pod(x, "%s", leader) : obj_mf_new_pod(x, "%s-%lu", leader, w);
            obj_mf_extra(p, false, "leaderworkerset.sigs.k8s.io/name", "%.70s", name);
            obj_mf_extra(p, false, "leaderworkerset.sigs.k8s.io/group-index", "%lu", g);
            obj_mf_extra(p, false, "leaderworkerset.sigs.k8s.io/worker-index", "%lu", w);
            obj_mf_extra(p, false, "leaderworkerset.sigs.k8s.io/group-key", "%s", key);
            if (in_sub) {
                char skey[EXTRA_LEN];
                obj_mf_hash_key(skey, leader, "subgroup", sub);
                obj_mf_extra(p, false, "leaderworkerset.sigs.k8s.io/subgroup-index", "%lu", sub);
                obj_mf_extra(p, false, "leaderworkerset.sigs.k8s.io/subgroup-key", "%s", skey);
            }
            for (size_t l = 0; ol && l < ol->n; l++)
                obj_mf_extra(p, false, ol->key[l], "%s", ol->val[l]);
            obj_mf_extra(p, true, "leaderworkerset.sigs.k8s.io/size", "%lu", size);
            if (w > 0)
                obj_mf_extra(p, true, "leaderworkerset.sigs.k8s.io/leader-name", "%s", leader);
            if (sgs > 0)
                obj_mf_extra(p, true, "leaderworkerset.sigs.k8s.io/subgroup-size", "%lu", sgs);
            if (sgs > 0 && w == 0)
                obj_mf_extra(p, true, "leaderworkerset.sigs.k8s.io/subgroup-policy-type", "%s",
                             leader_excluded ? "LeaderExcluded" : "LeaderWorker");
            obj_mf_inject(p, "LWS_LEADER_ADDRESS", "%s.%.60s.%.60s", leader,
                          per_replica ? leader : name, obj_mf_obj_ns(obj));
            obj_mf_inject(p, "LWS_GROUP_SIZE", "%lu", size);
            obj_mf_inject(p, "LWS_WORKER_INDEX", "%lu", w);
        }
    }
    return TPX_OK;
}

enum tpx_code obj_mf_expand_lws(struct obj_manifest *m, const json_t *obj, const char *src,
                                struct tpx_err *err)
{
    struct expander x = {m, src, 0, 0};

    if (obj_mf_add_job(m, obj, "LeaderWorkerSet", src, &x.job, err) != TPX_OK)
        return err->code;
    return obj_mf_lws_pods(m, &x, obj, obj_mf_obj_name(obj), json_object_get(obj, "spec"), NULL,
                           err);
}

/* Keep an object built here alive until release (its strings are borrowed by the facts). */
