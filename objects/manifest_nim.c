/* SPDX-License-Identifier: Apache-2.0 */
/* objects/manifest_nim.c - NVIDIA's NIMService (apps.nvidia.com/v1alpha1, NVIDIA/k8s-nim-operator)
 * as the pods it makes. The operator renders the NIM container itself from spec.image, spec.env,
 * spec.resources, spec.command/args, with the pod's nodeSelector, tolerations and affinity
 * (api/apps/v1alpha1/nimservice_types.go, manifests/deployment.yaml and manifests/lws.yaml):
 * without multiNode a Deployment of spec.replicas pods; with multiNode a LeaderWorkerSet of
 * spec.replicas groups (manifests/lws.yaml), the leader with NIM_LEADER_ROLE=1 and the MPI
 * settings of GetLWSLeaderEnv, the workers NIM_LEADER_ROLE=0. The group's size is
 * multiNode.size in the first API; with multiNode.parallelism {tp, pp} it is tp x pp over the
 * GPUs of one pod, tp defaulting to the pod's GPUs (NVIDIA NIM for LLMs, "Multi-Node
 * Deployment": TP = GPUs per node, PP = nodes, is the usual layout). The sizes the spec states
 * become topox's own annotations topox.io/tensor-parallel-size and pipeline-parallel-size on the
 * pods (unless the spec's annotations set them), as for Dynamo's engine-args files: the NIM
 * reads its layout from its profile, which topox cannot see. */
#include "objects/manifest_int.h"

#include <stdio.h>
#include <string.h>

/* GPUs of one NIM pod: resources.limits (else requests) nvidia.com/gpu; 0 when not given. */
static unsigned long pod_gpus(struct obj_manifest *m, const json_t *res, struct tpx_err *err)
{
    unsigned long g = 0;
    const json_t *lim = json_object_get(res, "limits");
    const json_t *req = json_object_get(res, "requests");

    if (json_object_get(lim, "nvidia.com/gpu"))
        (void)obj_mf_get_count(m, lim, "nvidia.com/gpu", 0, &g, err);
    else if (json_object_get(req, "nvidia.com/gpu"))
        (void)obj_mf_get_count(m, req, "nvidia.com/gpu", 0, &g, err);
    return g;
}

/* The pod template the operator renders; role "" (single node), "1" leader, "0" worker. */
static json_t *nim_template(const json_t *obj, const char *role, unsigned long tp, unsigned long pp)
{
    const json_t *spec = json_object_get(obj, "spec");
    const json_t *img = json_object_get(spec, "image");
    const char *repo = json_string_value(json_object_get(img, "repository"));
    const char *tag = json_string_value(json_object_get(img, "tag"));
    char image[256];
    json_t *env = json_is_array(json_object_get(spec, "env"))
                      ? json_deep_copy(json_object_get(spec, "env"))
                      : json_array();
    json_t *annots = json_is_object(json_object_get(spec, "annotations"))
                         ? json_deep_copy(json_object_get(spec, "annotations"))
                         : json_object();
    json_t *labels = json_is_object(json_object_get(spec, "labels"))
                         ? json_deep_copy(json_object_get(spec, "labels"))
                         : json_object();
    json_t *c;
    json_t *ps;
    json_t *t;
    char buf[32];

    snprintf(image, sizeof(image), "%.180s:%.60s", repo ? repo : "nim", tag ? tag : "latest");
    if (!env || !annots || !labels) {
        json_decref(env);
        json_decref(annots);
        json_decref(labels);
        return NULL;
    }
    json_object_set_new(labels, "app", json_string(obj_mf_obj_name(obj)));
    if (role[0])
        json_array_append_new(env,
                              json_pack("{s:s,s:s}", "name", "NIM_LEADER_ROLE", "value", role));
    if (tp && !json_object_get(annots, "topox.io/tensor-parallel-size")) {
        snprintf(buf, sizeof(buf), "%lu", tp);
        json_object_set_new(annots, "topox.io/tensor-parallel-size", json_string(buf));
    }
    if (pp && !json_object_get(annots, "topox.io/pipeline-parallel-size")) {
        snprintf(buf, sizeof(buf), "%lu", pp);
        json_object_set_new(annots, "topox.io/pipeline-parallel-size", json_string(buf));
    }
    c = json_pack("{s:s,s:s,s:o}", "name", obj_mf_obj_name(obj), "image", image, "env", env);
    if (c && json_object_get(spec, "resources"))
        json_object_set(c, "resources", json_object_get(spec, "resources"));
    if (c && json_object_get(spec, "command"))
        json_object_set(c, "command", json_object_get(spec, "command"));
    if (c && json_object_get(spec, "args"))
        json_object_set(c, "args", json_object_get(spec, "args"));
    ps = c ? json_pack("{s:[o]}", "containers", c) : NULL;
    if (ps) {
        static const char *const keep[] = {"nodeSelector", "tolerations", "affinity",
                                           "schedulerName", "runtimeClassName"};
        for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++) {
            if (json_object_get(spec, keep[i]))
                json_object_set(ps, keep[i], json_object_get(spec, keep[i]));
        }
    }
    t = ps ? json_pack("{s:{s:o,s:o},s:o}", "metadata", "labels", labels, "annotations", annots,
                       "spec", ps)
           : NULL;
    if (!ps) {
        json_decref(labels);
        json_decref(annots);
    }
    return t;
}

enum tpx_code obj_mf_expand_nimservice(struct obj_manifest *m, const json_t *obj, const char *src,
                                       struct tpx_err *err)
{
    const json_t *spec = json_object_get(obj, "spec");
    const json_t *mn = json_object_get(spec, "multiNode");
    const json_t *par = json_object_get(mn, "parallelism");
    struct expander x = {m, src, 0, 0};
    unsigned long reps;
    unsigned long g;
    unsigned long tp = 0, pp = 0, size = 1;
    json_t *t;

    if (obj_mf_get_count(m, spec, "replicas", 1, &reps, err) != TPX_OK)
        return err->code;
    g = pod_gpus(m, json_object_get(spec, "resources"), err);
    if (err->code != TPX_OK)
        return err->code;
    if (json_is_object(par)) {
        if (obj_mf_get_count(m, par, "tp", g, &tp, err) != TPX_OK ||
            obj_mf_get_count(m, par, "pp", 1, &pp, err) != TPX_OK)
            return err->code;
        size = g && tp && pp && (tp * pp) % g == 0 ? tp * pp / g : (pp ? pp : 1);
    } else if (json_is_object(mn)) {
        if (obj_mf_get_count(m, mn, "size", 1, &size, err) != TPX_OK)
            return err->code;
    }
    if (size == 0)
        size = 1;
    if (obj_mf_add_job(m, obj, "NIMService", src, &x.job, err) != TPX_OK)
        return err->code;
    if (!json_is_object(mn)) {
        size_t tmpl;
        t = obj_mf_keep(m, nim_template(obj, "", 0, 0), err);
        if (!t || obj_mf_add_tmpl(m, t, &tmpl, err) != TPX_OK ||
            obj_mf_reserve_pods(m, reps, err) != TPX_OK)
            return err->code;
        x.tmpl = tmpl;
        for (unsigned long i = 0; i < reps; i++) {
            if (obj_mf_new_replica(m, err) != TPX_OK)
                return err->code;
            obj_mf_new_pod(&x, "%s-%lu", obj_mf_obj_name(obj), i);
        }
        return TPX_OK;
    }
    {
        json_t *lt = nim_template(obj, "1", tp, pp);
        json_t *wt = nim_template(obj, "0", tp, pp);
        json_t *lws = NULL;
        if (lt && wt) /* json_pack takes lt and wt, even when it fails */
            lws = json_pack("{s:I,s:{s:I,s:o,s:o}}", "replicas", (json_int_t)reps,
                            "leaderWorkerTemplate", "size", (json_int_t)size, "leaderTemplate", lt,
                            "workerTemplate", wt);
        else {
            json_decref(lt);
            json_decref(wt);
        }
        if (!obj_mf_keep(m, lws, err))
            return err->code;
        return obj_mf_lws_pods(m, &x, obj, obj_mf_obj_name(obj), lws, NULL, err);
    }
}
