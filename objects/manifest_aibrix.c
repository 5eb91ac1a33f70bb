/* SPDX-License-Identifier: Apache-2.0 */
/* objects/manifest_aibrix.c - AIBrix's StormService (orchestration.aibrix.ai/v1alpha1) as the pods
 * its controllers create. Written from vllm-project/aibrix: pkg/controller/constants/
 * stormservice.go (labels, annotations, env names), pkg/controller/roleset/utils.go
 * (renderStormServicePod, injectContainerEnvVars), pkg/controller/roleset/podset_rollsyncer.go
 * (createPodSetForRole: a role of podGroupSize > 1 is one PodSet per role replica) and
 * pkg/controller/podset/podset_controller.go (createPodFromTemplate: the PodSet's pods
 * `<podset>-<k>`, with PODSET_NAME, POD_GROUP_INDEX and POD_GROUP_SIZE in front of every
 * container's env). AIBrix's RayClusterFleet is in manifest_ray.c. */
#include "objects/manifest_int.h"

#include <stdio.h>
#include <string.h>

#define SS "stormservice.orchestration.aibrix.ai/"

/* The labels, annotations and env the RoleSet controller gives every pod of role `role`
 * (renderStormServicePod, injectContainerEnvVars); index < 0: a stateless role's pod (no
 * role-replica index). Labels must come before annotations (obj_mf_extra). */
static void roleset_labels(struct obj_manifest_pod *p, const char *ss, const char *roleset,
                           const char *role, const char *hash, long index)
{
    obj_mf_extra(p, false, "roleset-name", "%.70s", roleset);
    obj_mf_extra(p, false, "role-name", "%.70s", role);
    obj_mf_extra(p, false, "role-template-hash", "%s", hash);
    obj_mf_extra(p, false, "storm-service-name", "%.70s", ss);
    if (index >= 0)
        obj_mf_extra(p, false, SS "role-replica-index", "%ld", index);
}

static void roleset_env(struct obj_manifest_pod *p, const char *ss, const char *roleset,
                        unsigned long rsi, const char *role, const char *hash, long index)
{
    obj_mf_inject(p, "STORM_SERVICE_NAME", "%s", ss);
    obj_mf_inject(p, "ROLESET_NAME", "%s", roleset);
    obj_mf_inject(p, "ROLESET_INDEX", "%lu", rsi);
    obj_mf_inject(p, "ROLE_NAME", "%s", role);
    obj_mf_inject(p, "ROLE_TEMPLATE_HASH", "%s", hash);
    if (index >= 0)
        obj_mf_inject(p, "ROLE_REPLICA_INDEX", "%ld", index);
}

/* One role of RoleSet `roleset` (index rsi): `replicas` PodSets of podGroupSize pods (one group
 * each), or, with podGroupSize 1, `replicas` pods of their own. */
static enum tpx_code role_pods(struct obj_manifest *m, struct expander *x, const json_t *obj,
                               const char *roleset, unsigned long rsi, const json_t *role,
                               struct tpx_err *err)
{
    const char *ss = obj_mf_obj_name(obj);
    const char *rn = json_string_value(json_object_get(role, "name"));
    bool stateful = json_is_true(json_object_get(role, "stateful"));
    unsigned long reps;
    unsigned long pgs;
    char hash[EXTRA_LEN];

    m->err_at = role;
    if (!rn)
        return tpx_err_set(err, TPX_EINVAL, "role: name is missing");
    if (obj_mf_get_count(m, role, "replicas", 1, &reps, err) != TPX_OK ||
        obj_mf_get_count(m, role, "podGroupSize", 1, &pgs, err) != TPX_OK ||
        obj_mf_add_tmpl(m, json_object_get(role, "template"), &x->tmpl, err) != TPX_OK) {
        tpx_err_prefix(err, "role '%s'", rn);
        return err->code;
    }
    if (pgs == 0)
        pgs = 1;
    if (reps && pgs > OBJ_MANIFEST_MAX_PODS / reps)
        return tpx_err_set(err, TPX_ETOOBIG, "more than %u pods in all", OBJ_MANIFEST_MAX_PODS);
    if (obj_mf_reserve_pods(m, reps * pgs, err) != TPX_OK)
        return err->code;
    /* ctrlutil.ComputeHash of the role template: a stand-in */
    obj_mf_hash_key(hash, ss, rn, 0);
    hash[10] = '\0';
    for (unsigned long i = 0; i < reps; i++) {
        char podset[160];
        long index = (pgs > 1 || stateful) ? (long)i : -1;

        snprintf(podset, sizeof(podset), "%.50s-%.40s-%.10s-%lu", roleset, rn, hash, i);
        if (obj_mf_new_replica(m, err) != TPX_OK)
            return err->code;
        for (unsigned long k = 0; k < pgs; k++) {
            struct obj_manifest_pod *p;

            if (pgs > 1)
                p = obj_mf_new_pod(x, "%s-%lu", podset, k);
            else if (stateful)
                p = obj_mf_new_pod(x, "%s", podset);
            else
                p = obj_mf_new_pod(x, "%.50s-%.40s-%lu", roleset, rn, i);
            if (pgs > 1) {
                obj_mf_extra(p, false, SS "podset-name", "%.70s", podset);
                obj_mf_extra(p, false, SS "pod-group-index", "%lu", k);
            }
            roleset_labels(p, ss, roleset, rn, hash, index);
            obj_mf_extra(p, true, SS "roleset-index", "%lu", rsi);
            if (index >= 0)
                obj_mf_extra(p, true, SS "role-replica-index", "%ld", index);
            if (pgs > 1) {
                /* the PodSet is the group: what policy reads as one */
                obj_mf_extra(p, true, "topox.io/group", "%.60s/%.120s", obj_mf_obj_ns(obj), podset);
                obj_mf_extra(p, true, "topox.io/group-size", "%lu", pgs);
                obj_mf_extra(p, true, "topox.io/pod-index", "%lu", k);
                /* createPodFromTemplate puts these in front of the RoleSet's */
                obj_mf_inject(p, "PODSET_NAME", "%s", podset);
                obj_mf_inject(p, "POD_GROUP_INDEX", "%lu", k);
                obj_mf_inject(p, "POD_GROUP_SIZE", "%lu", pgs);
            }
            roleset_env(p, ss, roleset, rsi, rn, hash, index);
        }
    }
    return TPX_OK;
}

/*
 * StormService: spec.replicas (default 1) RoleSets, each with the roles of
 * spec.template.spec.roles. RoleSet names are stand-ins `<ss>-roleset-<r>` (the controller adds a
 * random suffix). Each role gives `replicas` (default 1) replicas; with podGroupSize N > 1 a
 * replica is a PodSet `<roleset>-<role>-<hash>-<i>` of N pods `<podset>-<k>`, one group (the
 * engine's --nnodes N, --node-rank $POD_GROUP_INDEX). Otherwise each replica is one pod,
 * `<roleset>-<role>-<hash>-<i>` when stateful.
 */
enum tpx_code obj_mf_expand_stormservice(struct obj_manifest *m, const json_t *obj, const char *src,
                                         struct tpx_err *err)
{
    const json_t *spec = json_object_get(obj, "spec");
    const json_t *roles =
        json_object_get(json_object_get(json_object_get(spec, "template"), "spec"), "roles");
    struct expander x = {m, src, 0, 0};
    unsigned long sets;
    size_t r;
    const json_t *role;

    if (!json_is_array(roles) || json_array_size(roles) == 0) {
        m->err_at = roles ? roles : spec ? spec : obj;
        return tpx_err_set(err, TPX_EINVAL, "spec.template.spec.roles is missing or empty");
    }
    if (obj_mf_get_count(m, spec, "replicas", 1, &sets, err) != TPX_OK ||
        obj_mf_add_job(m, obj, "StormService", src, &x.job, err) != TPX_OK)
        return err->code;
    for (unsigned long s = 0; s < sets; s++) {
        char roleset[128];

        snprintf(roleset, sizeof(roleset), "%.70s-roleset-%lu", obj_mf_obj_name(obj), s);
        json_array_foreach(roles, r, role)
        {
            if (role_pods(m, &x, obj, roleset, s, role, err) != TPX_OK)
                return err->code;
        }
    }
    return TPX_OK;
}
