/* SPDX-License-Identifier: Apache-2.0 */
/* objects/manifest_kinds.c - the one table of the kinds `topox plan` reads: each row names the
 * API group and kind it matches (never the kind alone: several operators name their kinds Job,
 * Service or InferenceService), the API version its expansion was written from, and how its
 * pods are made. `topox plan --help`, the "no pods to place" message and docs/workloads.md
 * "Kinds read" all come from (or follow) this table. Objects of any other group and kind are
 * expanded generically when they embed pod templates (objects/manifest_generic.c). */
#include "objects/manifest_int.h"

#include <stdio.h>
#include <string.h>

#include "objects/dra.h"
#include "objects/podfacts.h"

/* What reading one kind does. */
enum kind_action {
    KA_EXPAND = 0, /* expand into pods; errors are prefixed with FILE:LINE: KIND 'name' */
    KA_PODGROUP,   /* a PodGroup: read for the groups of the pods that name it */
    KA_DRA,        /* no pods; objects/dra.c reads it (claim demand, ComputeDomains) */
    KA_SKIP,       /* holds a pod template but is no workload topox places: a note */
};

struct kind_row {
    struct obj_kind_row pub;
    const char *also; /* a second version written from (pub.version the first); another version
                         is read the same way, with a note */
    enum kind_action action;
    enum tpx_code (*expand)(struct obj_manifest *m, const json_t *obj, const char *src,
                            struct tpx_err *err);
};

static const struct kind_row kinds[] = {
    {{"", "Pod", "v1", true}, NULL, KA_EXPAND, obj_mf_expand_pod},
    {{"apps", "Deployment", "apps/v1", true}, NULL, KA_EXPAND, obj_mf_expand_replicated},
    {{"apps", "StatefulSet", "apps/v1", true}, NULL, KA_EXPAND, obj_mf_expand_replicated},
    {{"apps", "ReplicaSet", "apps/v1", true}, NULL, KA_EXPAND, obj_mf_expand_replicated},
    {{"batch", "Job", "batch/v1", true}, NULL, KA_EXPAND, obj_mf_expand_job},
    {{"jobset.x-k8s.io", "JobSet", "jobset.x-k8s.io/v1alpha2", true},
     NULL,
     KA_EXPAND,
     obj_mf_expand_jobset},
    {{"leaderworkerset.x-k8s.io", "LeaderWorkerSet", "leaderworkerset.x-k8s.io/v1", true},
     NULL,
     KA_EXPAND,
     obj_mf_expand_lws},
    {{"disaggregatedset.x-k8s.io", "DisaggregatedSet", "disaggregatedset.x-k8s.io/v1", true},
     NULL,
     KA_EXPAND,
     obj_mf_expand_disaggregatedset},
    {{"nvidia.com", "DynamoGraphDeployment", "nvidia.com/v1alpha1", true},
     NULL,
     KA_EXPAND,
     obj_mf_expand_dgd},
    {{"grove.io", "PodCliqueSet", "grove.io/v1alpha1", true}, NULL, KA_EXPAND, obj_mf_expand_pcs},
    {{"serving.kserve.io", "LLMInferenceService", "serving.kserve.io/v1alpha2", true},
     NULL,
     KA_EXPAND,
     obj_mf_expand_llmisvc},
    {{"workloads.x-k8s.io", "RoleBasedGroup", "workloads.x-k8s.io/v1alpha2", true},
     NULL,
     KA_EXPAND,
     obj_mf_expand_rbg},
    {{"orchestration.aibrix.ai", "StormService", "orchestration.aibrix.ai/v1alpha1", true},
     NULL,
     KA_EXPAND,
     obj_mf_expand_stormservice},
    {{"orchestration.aibrix.ai", "RayClusterFleet", "orchestration.aibrix.ai/v1alpha1", true},
     NULL,
     KA_EXPAND,
     obj_mf_expand_rayfleet},
    {{"ray.io", "RayCluster", "ray.io/v1", true}, NULL, KA_EXPAND, obj_mf_expand_raycluster},
    {{"ray.io", "RayService", "ray.io/v1", true}, NULL, KA_EXPAND, obj_mf_expand_rayservice},
    {{"ray.io", "RayJob", "ray.io/v1", true}, NULL, KA_EXPAND, obj_mf_expand_rayjob},
    {{"apps.nvidia.com", "NIMService", "apps.nvidia.com/v1alpha1", true},
     NULL,
     KA_EXPAND,
     obj_mf_expand_nimservice},
    {{"production-stack.vllm.ai", "VLLMRuntime", "production-stack.vllm.ai/v1alpha1", true},
     NULL,
     KA_EXPAND,
     obj_mf_expand_vllmruntime},
    {{"kaito.sh", "Workspace", "kaito.sh/v1beta1", true},
     "kaito.sh/v1alpha1",
     KA_EXPAND,
     obj_mf_expand_kaito_workspace},
    {{"kubeflow.org", "PyTorchJob", "kubeflow.org/v1", true},
     NULL,
     KA_EXPAND,
     obj_mf_expand_pytorchjob},
    {{"kubeflow.org", "MPIJob", "kubeflow.org/v2beta1", true},
     NULL,
     KA_EXPAND,
     obj_mf_expand_mpijob},
    {{"trainer.kubeflow.org", "TrainJob", "trainer.kubeflow.org/v1alpha1", true},
     NULL,
     KA_EXPAND,
     obj_mf_expand_trainjob},
    {{"scheduling.k8s.io", "PodGroup", "scheduling.k8s.io/v1alpha2", false},
     "scheduling.k8s.io/v1beta1",
     KA_PODGROUP,
     NULL},
    {{"apps", "DaemonSet", "apps/v1", false}, NULL, KA_SKIP, NULL},
    {{"", "PodTemplate", "v1", false}, NULL, KA_SKIP, NULL},
    {{"resource.k8s.io", "ResourceClaim", "resource.k8s.io/v1", false}, NULL, KA_DRA, NULL},
    {{"resource.k8s.io", "ResourceClaimTemplate", "resource.k8s.io/v1", false}, NULL, KA_DRA, NULL},
    {{"resource.nvidia.com", "ComputeDomain", "resource.nvidia.com/v1beta1", false},
     NULL,
     KA_DRA,
     NULL},
};

#define NKINDS (sizeof(kinds) / sizeof(kinds[0]))

const struct obj_kind_row *obj_manifest_kind(size_t i)
{
    return i < NKINDS ? &kinds[i].pub : NULL;
}

size_t obj_manifest_nkinds(void)
{
    return NKINDS;
}

void obj_mf_kind_names(char *out, size_t len)
{
    size_t used = 0;

    if (!len)
        return;
    out[0] = '\0';
    for (size_t i = 0; i < NKINDS && used < len; i++) {
        int w;
        if (!kinds[i].pub.pods)
            continue;
        w = snprintf(out + used, len - used, "%s%s", used ? ", " : "", kinds[i].pub.kind);
        if (w < 0)
            return;
        used += (size_t)w;
    }
}

static void check_version(struct obj_manifest *m, const json_t *obj, const struct kind_row *k,
                          const char *src)
{
    const char *api = json_string_value(json_object_get(obj, "apiVersion"));

    if (api && (strcmp(api, k->pub.version) == 0 || (k->also && strcmp(api, k->also) == 0)))
        return;
    obj_mf_add_note(m, "%s: %s '%s' is %s; read as %s", src, k->pub.kind, obj_mf_obj_name(obj),
                    api ? api : "(no apiVersion)", k->pub.version);
}

enum tpx_code obj_mf_dispatch(struct obj_manifest *m, const json_t *obj, const char *src,
                              bool *prefix, struct tpx_err *err)
{
    *prefix = false;
    if (obj_dra_is_object(obj))
        return TPX_OK; /* no pods, but objects/dra.c reads it (claim demand, ComputeDomains) */
    for (size_t i = 0; i < NKINDS; i++) {
        const struct kind_row *k = &kinds[i];
        if (!obj_is_kind(obj, k->pub.group, k->pub.kind))
            continue;
        switch (k->action) {
        case KA_DRA:
            return TPX_OK;
        case KA_SKIP:
            obj_mf_add_note(m, "%s: skipped %s '%s' (its pods are not placed by topox plan)", src,
                            k->pub.kind, obj_mf_obj_name(obj));
            return TPX_OK;
        case KA_PODGROUP:
            check_version(m, obj, k, src);
            return obj_mf_read_podgroup(m, obj, err);
        default:
            check_version(m, obj, k, src);
            *prefix = true;
            return k->expand(m, obj, src, err);
        }
    }
    *prefix = true;
    return obj_mf_expand_generic(m, obj, src, err);
}
