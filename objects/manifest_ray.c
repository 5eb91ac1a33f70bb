/* SPDX-License-Identifier: Apache-2.0 */
/* objects/manifest_ray.c - KubeRay's RayCluster, RayService and RayJob (ray.io/v1) and AIBrix's
 * RayClusterFleet (orchestration.aibrix.ai/v1alpha1) as the pods their controllers create.
 * Written from ray-project/kuberay ray-operator/controllers/ray/common/pod.go (labelPod: the
 * ray.io/{is-ray-node,cluster,node-type,group,identifier} labels; BuildPod: RAY_CLUSTER_NAME,
 * RAY_ADDRESS, KUBERAY_GEN_RAY_START_CMD on the Ray container, the first one) and
 * ray-operator/controllers/ray/utils (GetWorkerGroupDesiredReplicas: replicas, else minReplicas,
 * within [minReplicas, maxReplicas], times numOfHosts; none when suspended), and from
 * vllm-project/aibrix api/orchestration/v1alpha1 (RayClusterFleet: replicas RayClusters of
 * spec.template). Pod names' random suffixes are stand-in indexes.
 *
 * A Ray cluster is one model instance when its head starts vLLM with the Ray executor
 * (`--distributed-executor-backend ray`): vLLM then spreads its TP x PP ranks over the whole
 * cluster's GPUs, so head and workers are one group (topox.io/group), the head first, and the
 * workers take its layout (objects/manifest.c share_parallelism). Otherwise each Ray pod is
 * planned alone. */
#include "objects/manifest_int.h"

#include <stdio.h>
#include <string.h>

#include "workload/engines.h"

/* Does the head template start an engine with the Ray executor? Which flags say so is the
 * engines' knowledge (workload/engines.c, wl_argv_ray_executor); here only the argv is gathered. */
static bool ray_executor(const json_t *head)
{
    static const char *const parts[] = {"command", "args"};
    const char *argv[64];
    size_t n = 0;
    size_t i;
    const json_t *c;

    json_array_foreach(json_object_get(json_object_get(head, "spec"), "containers"), i, c)
    {
        for (size_t p = 0; p < 2; p++) {
            size_t k;
            const json_t *a;
            json_array_foreach(json_object_get(c, parts[p]), k, a)
            {
                if (json_is_string(a) && n < sizeof(argv) / sizeof(argv[0]))
                    argv[n++] = json_string_value(a);
            }
        }
    }
    return wl_argv_ray_executor(argv, n);
}

/* Pods of one worker group (GetWorkerGroupDesiredReplicas). */
static enum tpx_code worker_count(struct obj_manifest *m, const json_t *wg, unsigned long *n,
                                  struct tpx_err *err)
{
    unsigned long lo, hi, reps, hosts;

    if (obj_mf_get_count(m, wg, "minReplicas", 0, &lo, err) != TPX_OK ||
        obj_mf_get_count(m, wg, "maxReplicas", OBJ_MANIFEST_MAX_PODS, &hi, err) != TPX_OK ||
        obj_mf_get_count(m, wg, "replicas", lo, &reps, err) != TPX_OK ||
        obj_mf_get_count(m, wg, "numOfHosts", 1, &hosts, err) != TPX_OK)
        return err->code;
    if (reps < lo)
        reps = lo;
    if (reps > hi && hi >= lo)
        reps = hi;
    if (json_is_true(json_object_get(wg, "suspend")))
        reps = 0;
    if (hosts && reps > OBJ_MANIFEST_MAX_PODS / hosts)
        return tpx_err_set(err, TPX_ETOOBIG, "more than %u pods in all", OBJ_MANIFEST_MAX_PODS);
    *n = reps * hosts;
    return TPX_OK;
}

/* The labels and env KubeRay gives one pod (labelPod, BuildPod). */
static void ray_pod(struct obj_manifest_pod *p, const char *cluster, const char *ns, bool head,
                    const char *group)
{
    obj_mf_extra(p, false, "ray.io/is-ray-node", "yes");
    obj_mf_extra(p, false, "ray.io/cluster", "%.70s", cluster);
    obj_mf_extra(p, false, "ray.io/node-type", "%s", head ? "head" : "worker");
    obj_mf_extra(p, false, "ray.io/group", "%.70s", group);
    obj_mf_extra(p, false, "ray.io/identifier", "%.60s-%s", cluster, head ? "head" : "worker");
    p->inj_mode = INJ_APPEND_FIRST; /* the Ray container, the first, gets them */
    obj_mf_inject(p, "RAY_CLUSTER_NAME", "%s", cluster); /* fieldRef ray.io/cluster */
    if (head)
        obj_mf_inject(p, "RAY_ADDRESS", "127.0.0.1:6379");
    else
        obj_mf_inject(p, "RAY_ADDRESS", "%.60s-head-svc.%.60s.svc.cluster.local:6379", cluster, ns);
    obj_mf_inject(p, "KUBERAY_GEN_RAY_START_CMD", "%s",
                  head ? "ray start --head" : "ray start --block");
}

/* The pods of one RayCluster `cluster` with spec rc, for the job the caller added. */
static enum tpx_code ray_cluster_pods(struct obj_manifest *m, struct expander *x, const json_t *obj,
                                      const char *cluster, const json_t *rc, struct tpx_err *err)
{
    const json_t *head = json_object_get(json_object_get(rc, "headGroupSpec"), "template");
    const json_t *wgs = json_object_get(rc, "workerGroupSpecs");
    const char *ns = obj_mf_obj_ns(obj);
    unsigned long total = 1;
    unsigned long pod = 0;
    size_t head_tmpl;
    bool one = ray_executor(head);
    size_t i;
    const json_t *wg;

    if (!json_is_object(head)) {
        m->err_at = rc ? rc : obj;
        return tpx_err_set(err, TPX_EINVAL, "headGroupSpec.template is missing");
    }
    json_array_foreach(wgs, i, wg)
    {
        unsigned long n;
        m->err_at = wg;
        if (worker_count(m, wg, &n, err) != TPX_OK)
            return err->code;
        total += n;
    }
    if (total > OBJ_MANIFEST_MAX_PODS)
        return tpx_err_set(err, TPX_ETOOBIG, "more than %u pods in all", OBJ_MANIFEST_MAX_PODS);
    if (obj_mf_add_tmpl(m, head, &head_tmpl, err) != TPX_OK) {
        tpx_err_prefix(err, "headGroupSpec");
        return err->code;
    }
    if (obj_mf_reserve_pods(m, total, err) != TPX_OK || obj_mf_new_replica(m, err) != TPX_OK)
        return err->code;
    if (!one && total > 1)
        obj_mf_add_note(m,
                        "%s: RayCluster '%s': the head starts no engine with the Ray executor "
                        "(--distributed-executor-backend ray); its %lu pods are planned one by one",
                        x->src, cluster, total);
    for (long w = -1; w < (long)json_array_size(wgs); w++) {
        const char *gname = "headgroup";
        unsigned long n = 1;

        wg = w >= 0 ? json_array_get(wgs, (size_t)w) : NULL;
        x->tmpl = head_tmpl;
        if (wg) {
            gname = json_string_value(json_object_get(wg, "groupName"));
            if (!gname)
                gname = "workergroup";
            m->err_at = wg;
            if (worker_count(m, wg, &n, err) != TPX_OK)
                return err->code;
            if (n && obj_mf_add_tmpl(m, json_object_get(wg, "template"), &x->tmpl, err) != TPX_OK) {
                tpx_err_prefix(err, "workerGroupSpecs '%s'", gname);
                return err->code;
            }
        }
        for (unsigned long k = 0; k < n; k++, pod++) {
            struct obj_manifest_pod *p;
            if (!one && pod > 0 && obj_mf_new_replica(m, err) != TPX_OK)
                return err->code;
            p = wg ? obj_mf_new_pod(x, "%.60s-%.40s-worker-%lu", cluster, gname, k)
                   : obj_mf_new_pod(x, "%.60s-head", cluster);
            ray_pod(p, cluster, ns, wg == NULL, gname);
            if (one && total > 1) {
                obj_mf_extra(p, true, "topox.io/group", "%.60s/%.120s", ns, cluster);
                obj_mf_extra(p, true, "topox.io/group-size", "%lu", total);
                obj_mf_extra(p, true, "topox.io/pod-index", "%lu", pod);
            }
        }
    }
    return TPX_OK;
}

/* RayCluster: its spec. */
enum tpx_code obj_mf_expand_raycluster(struct obj_manifest *m, const json_t *obj, const char *src,
                                       struct tpx_err *err)
{
    struct expander x = {m, src, 0, 0};

    if (obj_mf_add_job(m, obj, "RayCluster", src, &x.job, err) != TPX_OK)
        return err->code;
    return ray_cluster_pods(m, &x, obj, obj_mf_obj_name(obj), json_object_get(obj, "spec"), err);
}

/* A RayService's or RayJob's cluster: spec.FIELD, named `<name>-raycluster-<id>` upstream (a
 * random id: 0 here). A RayJob that selects an existing cluster (clusterSelector) makes none. */
static enum tpx_code owned_cluster(struct obj_manifest *m, const json_t *obj, const char *kind,
                                   const char *field, const char *src, struct tpx_err *err)
{
    const json_t *rc = json_object_get(json_object_get(obj, "spec"), field);
    struct expander x = {m, src, 0, 0};
    char cluster[128];

    if (!json_is_object(rc)) {
        obj_mf_add_note(m,
                        "%s: %s '%s': no spec.%s (it uses an existing cluster); no pods to place",
                        src, kind, obj_mf_obj_name(obj), field);
        return TPX_OK;
    }
    snprintf(cluster, sizeof(cluster), "%.80s-raycluster-0", obj_mf_obj_name(obj));
    if (obj_mf_add_job(m, obj, kind, src, &x.job, err) != TPX_OK)
        return err->code;
    return ray_cluster_pods(m, &x, obj, cluster, rc, err);
}

enum tpx_code obj_mf_expand_rayservice(struct obj_manifest *m, const json_t *obj, const char *src,
                                       struct tpx_err *err)
{
    return owned_cluster(m, obj, "RayService", "rayClusterConfig", src, err);
}

/* RayJob: its cluster (the submitter Job asks for no accelerators and is not placed). */
enum tpx_code obj_mf_expand_rayjob(struct obj_manifest *m, const json_t *obj, const char *src,
                                   struct tpx_err *err)
{
    return owned_cluster(m, obj, "RayJob", "rayClusterSpec", src, err);
}

/* RayClusterFleet: spec.replicas (default 1) RayClusters of spec.template.spec, each one job
 * replica set of its own, named `<fleet>-<hash>-<i>` (stand-ins for the ReplicaSet-like names). */
enum tpx_code obj_mf_expand_rayfleet(struct obj_manifest *m, const json_t *obj, const char *src,
                                     struct tpx_err *err)
{
    const json_t *spec = json_object_get(obj, "spec");
    const json_t *rc = json_object_get(json_object_get(spec, "template"), "spec");
    struct expander x = {m, src, 0, 0};
    unsigned long n;
    char hash[EXTRA_LEN];

    if (!json_is_object(rc)) {
        m->err_at = spec ? spec : obj;
        return tpx_err_set(err, TPX_EINVAL, "spec.template.spec (a RayCluster spec) is missing");
    }
    if (obj_mf_get_count(m, spec, "replicas", 1, &n, err) != TPX_OK ||
        obj_mf_add_job(m, obj, "RayClusterFleet", src, &x.job, err) != TPX_OK)
        return err->code;
    obj_mf_hash_key(hash, obj_mf_obj_ns(obj), obj_mf_obj_name(obj), 0);
    hash[10] = '\0';
    for (unsigned long i = 0; i < n; i++) {
        char cluster[128];
        snprintf(cluster, sizeof(cluster), "%.80s-%.10s-%lu", obj_mf_obj_name(obj), hash, i);
        if (ray_cluster_pods(m, &x, obj, cluster, rc, err) != TPX_OK)
            return err->code;
    }
    return TPX_OK;
}
