/* SPDX-License-Identifier: Apache-2.0 */
/* objects/manifest_rendered.c - kinds whose operators render the pod themselves from fields of
 * their own, with no pod template in the object: the pods are written here as the operator's
 * source writes them, so that nothing that asks for accelerators is skipped as "no pods".
 *   VLLMRuntime (production-stack.vllm.ai/v1alpha1, vllm-project/production-stack
 *     operator/internal/controller/vllmruntime_controller.go deploymentForVLLMRuntime): a
 *     Deployment `<name>` of deploymentConfig.replicas pods; its container runs
 *     `/opt/venv/bin/vllm serve MODEL --host 0.0.0.0 --port PORT`, `--tensor-parallel-size N`
 *     when vllmConfig.tensorParallelSize > 0, then vllmConfig.extraArgs; it requests
 *     deploymentConfig.resources.gpu of resources.gpuType (default nvidia.com/gpu), cpu, memory,
 *     with the deployment's tolerations and node selector terms.
 *   Workspace (kaito.sh, kaito-project/kaito): resource.count nodes of resource.instanceType, each
 *     pod asking for the instance's GPUs (pkg/sku/azure_sku_handler.go, the NVIDIA SKUs); several
 *     nodes serve one model (a group of count pods). The preset's engine flags are the operator's
 *     and not written in the object: the layout is a data-parallel guess, uncertain. */
#include "objects/manifest_int.h"

#include <stdio.h>
#include <string.h>

/* A pod template {metadata, spec} with one container, kept alive by m; NULL with *err. */
static const json_t *one_container(struct obj_manifest *m, json_t *labels, json_t *annotations,
                                   json_t *container, json_t *extra_spec, struct tpx_err *err)
{
    json_t *spec = json_pack("{s:[o]}", "containers", container);
    json_t *t;

    if (spec && extra_spec)
        json_object_update(spec, extra_spec);
    json_decref(extra_spec);
    t = spec ? json_pack("{s:{s:o,s:o},s:o}", "metadata", "labels", labels ? labels : json_object(),
                         "annotations", annotations ? annotations : json_object(), "spec", spec)
             : NULL;
    if (!spec) {
        json_decref(labels);
        json_decref(annotations);
    }
    return obj_mf_keep(m, t, err);
}

/* replicas pods `<name>-<i>` of template t for the job just added, each a group of its own, or
 * all one group of `group` pods when group > 1. */
static enum tpx_code pods_of(struct obj_manifest *m, const json_t *obj, const char *src,
                             const char *kind, const json_t *t, unsigned long replicas,
                             bool one_group, struct tpx_err *err)
{
    struct expander x = {m, src, 0, 0};

    if (obj_mf_add_job(m, obj, kind, src, &x.job, err) != TPX_OK ||
        obj_mf_add_tmpl(m, t, &x.tmpl, err) != TPX_OK ||
        obj_mf_reserve_pods(m, replicas, err) != TPX_OK)
        return err->code;
    for (unsigned long i = 0; i < replicas; i++) {
        struct obj_manifest_pod *p;
        if ((!one_group || i == 0) && obj_mf_new_replica(m, err) != TPX_OK)
            return err->code;
        p = obj_mf_new_pod(&x, "%s-%lu", obj_mf_obj_name(obj), i);
        if (one_group && replicas > 1) {
            obj_mf_extra(p, true, "topox.io/group", "%.60s/%.60s", obj_mf_obj_ns(obj),
                         obj_mf_obj_name(obj));
            obj_mf_extra(p, true, "topox.io/group-size", "%lu", replicas);
            obj_mf_extra(p, true, "topox.io/pod-index", "%lu", i);
        }
    }
    return TPX_OK;
}

enum tpx_code obj_mf_expand_vllmruntime(struct obj_manifest *m, const json_t *obj, const char *src,
                                        struct tpx_err *err)
{
    const json_t *spec = json_object_get(obj, "spec");
    const json_t *dc = json_object_get(spec, "deploymentConfig");
    const json_t *res = json_object_get(dc, "resources");
    const json_t *vc = json_object_get(spec, "vllmConfig");
    const char *model =
        json_string_value(json_object_get(json_object_get(spec, "model"), "modelURL"));
    const char *gpu_type = json_string_value(json_object_get(res, "gpuType"));
    json_t *args = json_array(), *req = json_object(), *extra = json_object(), *labels;
    json_t *container;
    const json_t *t, *ea;
    unsigned long replicas, port, tp;
    char buf[32];
    size_t i;

    if (!args || !req || !extra) {
        json_decref(args);
        json_decref(req);
        json_decref(extra);
        return tpx_err_set(err, TPX_ENOMEM, "manifest: out of memory");
    }
    if (obj_mf_get_count(m, dc, "replicas", 1, &replicas, err) != TPX_OK ||
        obj_mf_get_count(m, vc, "port", 8000, &port, err) != TPX_OK ||
        obj_mf_get_count(m, vc, "tensorParallelSize", 0, &tp, err) != TPX_OK) {
        json_decref(args);
        json_decref(req);
        json_decref(extra);
        return err->code;
    }
    snprintf(buf, sizeof(buf), "%lu", port);
    json_array_append_new(args, json_string(model ? model : ""));
    json_array_append_new(args, json_string("--host"));
    json_array_append_new(args, json_string("0.0.0.0"));
    json_array_append_new(args, json_string("--port"));
    json_array_append_new(args, json_string(buf));
    if (tp > 0) {
        snprintf(buf, sizeof(buf), "%lu", tp);
        json_array_append_new(args, json_string("--tensor-parallel-size"));
        json_array_append_new(args, json_string(buf));
    }
    json_array_foreach(json_object_get(vc, "extraArgs"), i, ea)
    {
        if (json_is_string(ea))
            json_array_append(args, (json_t *)ea);
    }
    if (json_is_string(json_object_get(res, "cpu")))
        json_object_set(req, "cpu", json_object_get(res, "cpu"));
    if (json_is_string(json_object_get(res, "memory")))
        json_object_set(req, "memory", json_object_get(res, "memory"));
    if (json_object_get(res, "gpu"))
        json_object_set(req, gpu_type && gpu_type[0] ? gpu_type : "nvidia.com/gpu",
                        json_object_get(res, "gpu"));
    container =
        json_pack("{s:s,s:[s,s],s:o,s:{s:O,s:O}}", "name", "vllm", "command", "/opt/venv/bin/vllm",
                  "serve", "args", args, "resources", "requests", req, "limits", req);
    json_decref(req);
    if (json_is_array(json_object_get(dc, "toleration")))
        json_object_set(extra, "tolerations", json_object_get(dc, "toleration"));
    if (json_is_array(json_object_get(dc, "nodeSelectorTerms")))
        json_object_set_new(extra, "affinity",
                            json_pack("{s:{s:{s:O}}}", "nodeAffinity",
                                      "requiredDuringSchedulingIgnoredDuringExecution",
                                      "nodeSelectorTerms",
                                      json_object_get(dc, "nodeSelectorTerms")));
    labels = json_pack("{s:s}", "app", obj_mf_obj_name(obj));
    t = one_container(m, labels, json_deep_copy(json_object_get(dc, "podAnnotations")), container,
                      extra, err);
    if (!t)
        return err->code;
    return pods_of(m, obj, src, "VLLMRuntime", t, replicas, false, err);
}

/* GPUs of a Kaito instance type (kaito-project/kaito pkg/sku/azure_sku_handler.go, its NVIDIA
 * SKUs); 0 when the table does not hold it. */
static unsigned kaito_gpus(const char *sku)
{
    static const struct {
        const char *sku;
        unsigned gpus;
    } table[] = {
        {"Standard_NC4as_T4_v3", 1},      {"Standard_NC8as_T4_v3", 1},
        {"Standard_NC16as_T4_v3", 1},     {"Standard_NC64as_T4_v3", 4},
        {"Standard_NV36ads_A10_v5", 1},   {"Standard_NV72ads_A10_v5", 2},
        {"Standard_NC24ads_A100_v4", 1},  {"Standard_NC48ads_A100_v4", 2},
        {"Standard_NC96ads_A100_v4", 4},  {"Standard_ND96asr_A100_v4", 8},
        {"Standard_ND96amsr_A100_v4", 8}, {"Standard_NC40ads_H100_v5", 1},
        {"Standard_NC80adis_H100_v5", 2}, {"Standard_ND96isr_H100_v5", 8},
        {"Standard_NCC40ads_H100_v5", 1}, {"Standard_ND96isr_H200_v5", 8},
        {"Standard_NV12s_v3", 1},         {"Standard_NV24s_v3", 2},
        {"Standard_NV48s_v3", 4},
    };

    for (size_t i = 0; sku && i < sizeof(table) / sizeof(table[0]); i++) {
        if (strcmp(table[i].sku, sku) == 0)
            return table[i].gpus;
    }
    return 0;
}

enum tpx_code obj_mf_expand_kaito_workspace(struct obj_manifest *m, const json_t *obj,
                                            const char *src, struct tpx_err *err)
{
    const json_t *res = json_object_get(obj, "resource");
    const char *sku = json_string_value(json_object_get(res, "instanceType"));
    const char *preset = json_string_value(
        json_object_get(json_object_get(json_object_get(obj, "inference"), "preset"), "name"));
    const json_t *sel = json_object_get(json_object_get(res, "labelSelector"), "matchLabels");
    unsigned gpus = kaito_gpus(sku);
    unsigned long count;
    json_t *container, *extra;
    const json_t *t;
    char q[16];

    if (obj_mf_get_count(m, res, "count", 1, &count, err) != TPX_OK)
        return err->code;
    if (!gpus) {
        m->nskipped_accel++;
        obj_mf_add_note(m,
                        "%s: Workspace '%s': its controller makes %lu pod(s) of instance type "
                        "'%s', whose GPUs topox does not know (Kaito's SKU table, "
                        "pkg/sku): not placed; plan its pods once they exist",
                        src, obj_mf_obj_name(obj), count, sku ? sku : "(none)");
        return TPX_OK;
    }
    snprintf(q, sizeof(q), "%u", gpus);
    container = json_pack("{s:s,s:s,s:{s:{s:s},s:{s:s}}}", "name", "inference", "image",
                          preset ? preset : "kaito-preset", "resources", "requests",
                          "nvidia.com/gpu", q, "limits", "nvidia.com/gpu", q);
    extra = json_is_object(sel) ? json_pack("{s:O}", "nodeSelector", sel) : NULL;
    t = one_container(m, json_pack("{s:s}", "kaito.sh/workspace", obj_mf_obj_name(obj)), NULL,
                      container, extra, err);
    if (!t)
        return err->code;
    obj_mf_add_note(m,
                    "%s: Workspace '%s': %lu node(s) of %s, %u GPU(s) each (Kaito's SKU table); "
                    "its preset's engine flags are the operator's: layout uncertain",
                    src, obj_mf_obj_name(obj), count, sku, gpus);
    return pods_of(m, obj, src, "Workspace", t, count, true, err);
}
