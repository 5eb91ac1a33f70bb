/* SPDX-License-Identifier: Apache-2.0 */
/* policy/workload.c - what a pod asks for: topox.io annotations, then vLLM/SGLang flags found in
 * its argv (also inside `sh -c` scripts, read by common/cmdline.h), then defaults; and the
 * validation of DESIGN.md. Pure string code: never includes JSON, YAML, HTTP or log headers. */
#include "policy/policy.h"
#include "policy/world.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/kv.h"
#include "workload/engines.h"

#define ANN "topox.io/"
#define LWS "leaderworkerset.sigs.k8s.io/"
#define JOB_INDEX "batch.kubernetes.io/job-completion-index"
#define RBG1 "rolebasedgroup.workloads.x-k8s.io/" /* RoleBasedGroup v1alpha1 */
#define RBG2 "rbg.workloads.x-k8s.io/"            /* RoleBasedGroup v1alpha2 */

static enum tpx_code ann_count(const struct pol_pod_facts *f, const char *key, bool zero_ok,
                               unsigned *out, bool *found, struct tpx_err *err)
{
    const char *v = tpx_kv_get(f->annotations, f->nannotations, key);

    if (!v)
        return TPX_OK;
    if (!wl_parse_count(v, zero_ok, out))
        return tpx_err_set(err, TPX_EINVAL, "annotation '%s': '%s' is not a %s whole number", key,
                           v, zero_ok ? "non-negative" : "positive");
    if (found)
        *found = true;
    return TPX_OK;
}

/* --- inference ---------------------------------------------------------------------------------
 */

static bool has_prefix_key(const struct topo_kv *kv, size_t n, const char *prefix)
{
    size_t pl = strlen(prefix);

    for (size_t i = 0; i < n; i++) {
        if (kv[i].key && strncmp(kv[i].key, prefix, pl) == 0)
            return true;
    }
    return false;
}

/* 'p' when a role name says prefill, 'd' when it says decode (case aside), else 0. */
static char role_word(const char *v)
{
    char low[64];
    size_t i;

    if (!v)
        return 0;
    for (i = 0; v[i] && i + 1 < sizeof(low); i++)
        low[i] = (char)(v[i] >= 'A' && v[i] <= 'Z' ? v[i] - 'A' + 'a' : v[i]);
    low[i] = '\0';
    if (strstr(low, "prefill"))
        return 'p';
    return strstr(low, "decode") ? 'd' : 0;
}

/*
 * The deployment a pod's prefill or decode group belongs to, from what each operator labels its
 * pods with (the first that applies), and the role from its role label, else from the engine's
 * --disaggregation-mode (flag_role):
 *   DisaggregatedSet  disaggregatedset.x-k8s.io/{name,slice} + /role
 *   Dynamo            nvidia.com/dynamo-graph-deployment-name + dynamo-sub-component-type (else
 *                     dynamo-component-type, else the component name)
 *   RoleBasedGroup    rbg.workloads.x-k8s.io/group-name + /role-name (v1alpha2), or
 *                     rolebasedgroup.workloads.x-k8s.io/name + /role (v1alpha1): one deployment
 *   Grove             app.kubernetes.io/part-of (managed-by grove-operator) and its replica,
 *                     grove.io/podcliqueset-replica-index, + grove.io/podclique after its
 *                     `<pcs>-` (the set's name says nothing of the role), else llm-d.ai/role:
 *                     each replica of a PodCliqueSet is a deployment of its own (its pods find
 *                     each other through the replica's headless service `<pcs>-<r>`)
 *   KServe llm-d      app.kubernetes.io/name (part-of llminferenceservice) + llm-d.ai/role
 */
static void infer_kv(const struct pol_pod_facts *f, char flag_role, struct pol_workload *wl)
{
    /* deploy: the deployment's label; sub: a part of it that is a deployment of its own (a
     * DisaggregatedSet slice, a PodCliqueSet replica), where the pod has it; roles: the labels that
     * may name the role, in order; the first of them must be there for the deployment label to
     * count (a common app.kubernetes.io key alone says nothing of KV), except for the operators'
     * own deployment keys (need_role false); named: a role label's value that starts with the
     * deployment's name and a '-' is read after it, as the name says nothing of the role (a
     * PodClique `<pcs>-<r>-...` of a set named prefill-decode) */
    static const struct {
        const char *kind, *deploy, *sub;
        const char *roles[3];
        bool need_role, named;
    } ops[] = {
        {"ds",
         "disaggregatedset.x-k8s.io/name",
         "disaggregatedset.x-k8s.io/slice",
         {"disaggregatedset.x-k8s.io/role", NULL, NULL},
         false,
         false},
        {"dynamo",
         "nvidia.com/dynamo-graph-deployment-name",
         NULL,
         {"nvidia.com/dynamo-sub-component-type", "nvidia.com/dynamo-component-type",
          "nvidia.com/dynamo-component"},
         false,
         false},
        {"rbg", RBG2 "group-name", NULL, {RBG2 "role-name", NULL, NULL}, false, false},
        {"rbg", RBG1 "name", NULL, {RBG1 "role", NULL, NULL}, false, false},
        /* before KServe's: the Grove operator labels every pod app.kubernetes.io/name (its
         * PodClique), and a clique may carry llm-d.ai/role for llm-d's gateway */
        {"grove",
         "app.kubernetes.io/part-of",
         "grove.io/podcliqueset-replica-index",
         {"grove.io/podclique", "llm-d.ai/role", NULL},
         true,
         true},
        {"llmisvc", "app.kubernetes.io/name", NULL, {"llm-d.ai/role", NULL, NULL}, true, false},
    };
    const char *ns = f->ns ? f->ns : "default";

    for (size_t k = 0; k < sizeof(ops) / sizeof(ops[0]); k++) {
        const char *d = tpx_kv_get(f->labels, f->nlabels, ops[k].deploy);
        const char *sub = ops[k].sub ? tpx_kv_get(f->labels, f->nlabels, ops[k].sub) : NULL;
        char role = 0;

        if (sub && !sub[0])
            sub = NULL; /* an empty part names none: the deployment's key alone */
        if (!d || !d[0] ||
            (ops[k].need_role && !tpx_kv_get(f->labels, f->nlabels, ops[k].roles[0])))
            continue;
        for (size_t r = 0; r < 3 && ops[k].roles[r] && !role; r++) {
            const char *v = tpx_kv_get(f->labels, f->nlabels, ops[k].roles[r]);
            size_t dl = strlen(d);

            if (v && ops[k].named && strncmp(v, d, dl) == 0 && v[dl] == '-')
                v += dl + 1;
            role = role_word(v);
        }
        if (!role)
            role = flag_role;
        snprintf(wl->kv_group, sizeof(wl->kv_group), "%s/%s:%.100s%s%.20s", ns, ops[k].kind, d,
                 sub ? "/" : "", sub ? sub : "");
        wl->kv_role = role;
        return;
    }
    wl->kv_role = flag_role; /* no deployment known: the role alone pairs with nothing */
}

/* The group size the pod's controller set: the LeaderWorkerSet's size annotation, else, where a
 * RoleBasedGroup leaderWorkerPattern instance is the group (by_rbg), its component-size label;
 * what names it for a message. */
static bool controller_size(const struct pol_pod_facts *f, const struct pol_workload *wl,
                            bool by_rbg, unsigned *out, const char **what)
{
    const char *s = tpx_kv_get(f->annotations, f->nannotations, LWS "size");

    if (wl->gang && strncmp(wl->group + strcspn(wl->group, "/"), "/podgroup:", 10) == 0) {
        *out = f->pod_group_min;
        *what = "PodGroup's minCount";
        return true;
    }
    if (s && wl_parse_count(s, false, out)) {
        *what = "LeaderWorkerSet's size";
        return true;
    }
    s = by_rbg ? tpx_kv_get(f->labels, f->nlabels, RBG2 "component-size") : NULL;
    if (s && wl_parse_count(s, false, out)) {
        *what = "RoleBasedGroup's component-size";
        return true;
    }
    return false;
}

static void origin_ann(struct pol_workload *wl, enum pol_size s, const char *key)
{
    wl->layout.origin[s] = (struct pol_size_origin){POL_SRC_ANNOTATION, key, -1, false, NULL};
}

/* The certainty rule's test: is the layout wl holds consistent with the pod's accelerators? */
static bool adds_up(const struct pol_workload *wl, char *why, size_t len)
{
    unsigned long total = (unsigned long)wl->tp * wl->pp * wl->dp;
    unsigned g = wl->accel_per_pod;
    size_t used = strlen(why);

    if (g == 0)
        return true; /* no accelerators: no intent, nothing to judge */
    if (g % wl->tp != 0 && wl->tp % g != 0) {
        snprintf(why + used, len - used, "pods of %u do not align with tp %u; ", g, wl->tp);
        return false;
    }
    if (wl->group_size > 0 && total != (unsigned long)wl->group_size * g) {
        snprintf(why + used, len - used,
                 "tp %u x pp %u x dp %u = %lu, but the group has %u pods x %u = %lu; ", wl->tp,
                 wl->pp, wl->dp, total, wl->group_size, g, (unsigned long)wl->group_size * g);
        return false;
    }
    return true;
}

/* A size that multiplies the group's accelerators (tp, pp or dp) was given by a flag whose value
 * is not known: tp x pp x dp is not known either. Names the first in why (may be NULL). */
static bool size_unknown(const struct pol_workload *wl, char *why, size_t len)
{
    static const char *const names[] = {"tp", "pp", "dp"};

    for (int k = POL_SIZE_TP; k <= POL_SIZE_DP; k++) {
        const struct pol_size_origin *o = &wl->layout.origin[k];

        if (!o->unknown)
            continue;
        if (why) {
            size_t used = strlen(why);
            snprintf(why + used, len - used, "%s (%s) is not known; ", names[k],
                     o->what ? o->what : "a flag");
        }
        return true;
    }
    return false;
}

/* An uncertain layout is still scored: give it the most it can be sure of, consistent with
 * the pod's accelerators (tp that aligns with the pod, else the pod's own), one stage. */
static void fallback_layout(struct pol_workload *wl)
{
    unsigned g = wl->accel_per_pod ? wl->accel_per_pod : 1;
    unsigned n = wl->group_size ? wl->group_size : 1;

    if (wl->tp == 0 || g % wl->tp != 0 || (unsigned long)n * g % wl->tp != 0)
        wl->tp = g;
    /* a pipeline size the user wrote stays, where it divides the group's ranks */
    if (!wl->pp_explicit || wl->pp == 0 || (unsigned long)n * g % ((unsigned long)wl->tp * wl->pp))
        wl->pp = 1;
    wl->dp = (unsigned)((unsigned long)n * g / ((unsigned long)wl->tp * wl->pp));
    if (wl->dp == 0)
        wl->dp = 1;
}

void pol_workload_uncertain(struct pol_workload *wl, enum pol_uncertain mode)
{
    if (!wl->has_intent || wl->layout.certain)
        return;
    switch (mode) {
    case POL_UNCERTAIN_REJECT:
        /* judged as written: the sizes as read where they are known (another scheduler that
         * places the group keeps it preferred: topox never refuses what it decides) */
        if (!wl->layout.placement_ann && !wl->sched_prefers)
            wl->preferred = false;
        if (wl->layout.tp && wl->layout.pp && wl->layout.dp) {
            wl->tp = wl->layout.tp;
            wl->pp = wl->layout.pp;
            wl->dp = wl->layout.dp;
        }
        break;
    case POL_UNCERTAIN_IGNORE:
        wl->has_intent = false;
        break;
    default:
        if (!wl->layout.placement_ann && !wl->dp_world)
            wl->preferred = true;
        break;
    }
}

void pol_workload_skip_members(struct pol_workload *wl, unsigned total, unsigned below)
{
    if (!wl->group[0] || wl->accel_per_pod == 0 || total == 0 || wl->group_size <= total)
        return;
    wl->group_size -= total;
    if (wl->pod_index >= 0)
        wl->pod_index = (unsigned)wl->pod_index >= below ? wl->pod_index - (int)below : -1;
    if (wl->pod_index >= (int)wl->group_size)
        wl->pod_index = -1;
    if (wl->by_group_total && wl->layout.tp && wl->layout.pp && wl->layout.dp &&
        (unsigned long)wl->layout.tp * wl->layout.pp * wl->layout.dp ==
            (unsigned long)wl->group_size * wl->accel_per_pod) {
        /* uncertain only because the CPU members were counted: what the flags say adds up now */
        wl->tp = wl->layout.tp;
        wl->pp = wl->layout.pp;
        wl->dp = wl->layout.dp;
        wl->layout.accel = wl->tp * wl->pp * wl->dp;
        wl->layout.certain = true;
        wl->layout.why[0] = '\0';
        wl->by_group_total = false;
        if (!wl->layout.placement_ann && !wl->sched_prefers)
            wl->preferred = false;
        return;
    }
    if (!wl->layout.certain || wl->dp_world) {
        /* the data-parallel world is the accelerator members' */
        unsigned long ranks = (unsigned long)wl->group_size * wl->accel_per_pod;
        if (wl->tp && wl->pp && ranks % ((unsigned long)wl->tp * wl->pp) == 0)
            wl->dp = (unsigned)(ranks / ((unsigned long)wl->tp * wl->pp));
    } else if ((unsigned long)wl->tp * wl->pp * wl->dp !=
               (unsigned long)wl->group_size * wl->accel_per_pod) {
        /* sizes computed from the controller's group size (an LWS_GROUP_SIZE in a $((...)))
         * counted the members without accelerators: they no longer add up, so the layout is
         * not certain (the certainty rule), never refused for it */
        snprintf(wl->layout.why, sizeof(wl->layout.why),
                 "tp %u x pp %u x dp %u counts %u member(s) that ask for no accelerator: the group "
                 "has %u pods x %u",
                 wl->tp, wl->pp, wl->dp, total, wl->group_size, wl->accel_per_pod);
        wl->layout.certain = false;
        fallback_layout(wl);
        wl->layout.accel = wl->tp * wl->pp * wl->dp;
        pol_workload_uncertain(wl, POL_UNCERTAIN_PREFER);
    }
}

void pol_workload_set_scope(struct pol_workload *wl, enum pol_scope scope)
{
    wl->scope = wl->sched_scoped ? wl->sched_scope : scope;
    if (wl->gang && wl->gang_level >= 0 && wl->gang_level < (int)wl->scope)
        wl->scope = (enum pol_scope)wl->gang_level;
}

enum tpx_code pol_workload_infer(const struct pol_pod_facts *f, struct pol_workload *wl,
                                 struct tpx_err *err)
{
    struct wl_engine_layout el;
    unsigned tp = 0, pp = 0, dp = 0, ep = 0, gsize = 0, idx = 0, v = 0;
    bool tp_ann = false, pp_ann = false, dp_ann = false, ep_ann = false, gs_ann = false;
    bool idx_ann = false;
    bool grouped, by_rbg, any_ann, flags_used;
    const char *s, *ctl_what = NULL;
    unsigned ctl = 0;
    bool have_ctl, guessed, have_world = false, sched_prefer;
    const char *sched_what;
    unsigned world_size = 0;
    int world_index = -1;

    memset(wl, 0, sizeof(*wl));
    wl->pod_index = -1;
    wl->accel_per_pod = f->accel;
    wl->layout.ep = 1;
    wl->layout.engine = "";
    for (size_t k = 0; k < POL_NSIZES; k++)
        wl->layout.origin[k].argi = -1;
    if (f->resource)
        snprintf(wl->resource, sizeof(wl->resource), "%s", f->resource);
    if (ann_count(f, ANN "tensor-parallel-size", false, &tp, &tp_ann, err) ||
        ann_count(f, ANN "pipeline-parallel-size", false, &pp, &pp_ann, err) ||
        ann_count(f, ANN "data-parallel-size", false, &dp, &dp_ann, err) ||
        ann_count(f, ANN "expert-parallel-size", false, &ep, &ep_ann, err) ||
        ann_count(f, ANN "group-size", false, &gsize, &gs_ann, err) ||
        ann_count(f, ANN "pod-index", true, &idx, &idx_ann, err) ||
        ann_count(f, ANN "num-ubatches", false, &wl->num_ubatches, NULL, err) ||
        ann_count(f, ANN "model-layers", false, &wl->model_layers, NULL, err))
        return err->code;
    s = tpx_kv_get(f->annotations, f->nannotations, ANN "pipeline-scope");
    if (s) {
        if (strcmp(s, "rack") == 0)
            wl->scope = POL_SCOPE_RACK;
        else if (strcmp(s, "block") == 0)
            wl->scope = POL_SCOPE_BLOCK;
        else if (strcmp(s, "zone") == 0)
            wl->scope = POL_SCOPE_ZONE;
        else
            return tpx_err_set(err, TPX_EINVAL,
                               "annotation 'topox.io/pipeline-scope': '%s' is not rack, block or "
                               "zone",
                               s);
    }
    s = tpx_kv_get(f->annotations, f->nannotations, ANN "cross-node-tp");
    if (s) {
        if (strcmp(s, "allow") != 0)
            return tpx_err_set(err, TPX_EINVAL,
                               "annotation 'topox.io/cross-node-tp': '%s' is not allow", s);
        wl->cross_node_tp = true;
    }
    s = tpx_kv_get(f->annotations, f->nannotations, ANN "placement");
    if (s) {
        wl->layout.placement_ann = true;
        if (strcmp(s, "preferred") == 0)
            wl->preferred = true;
        else if (strcmp(s, "required") != 0)
            return tpx_err_set(err, TPX_EINVAL,
                               "annotation 'topox.io/placement': '%s' is not required or "
                               "preferred",
                               s);
    }
    if (wl_engine_read(f, &el, err) != TPX_OK)
        return err->code;
    flags_used = el.any && !tp_ann;
    wl->layout.engine = el.engine;
    snprintf(wl->layout.read, sizeof(wl->layout.read), "%s", el.any ? el.read : "");

    /* parallelism: annotation, then the engine's flags, then defaults */
    wl->tp_source = "default";
    wl->tp = f->accel ? f->accel : 1;
    wl->pp = 1;
    wl->dp = 1;
    if (el.any) {
        wl->tp = el.tp ? el.tp : wl->tp;
        wl->pp = el.pp ? el.pp : 1;
        wl->dp = el.dp ? el.dp : 1;
        wl->layout.ep = el.ep ? el.ep : 1;
        memcpy(wl->layout.origin, el.origin, sizeof(el.origin));
        wl->layout.accel = el.accel;
        wl->layout.dp_attention = el.dp_attention;
        wl->tp_explicit = true;
        wl->pp_explicit = el.origin[POL_SIZE_PP].src != POL_SRC_DEFAULT;
        wl->tp_source = el.engine[0] == 's' ? "sglang flag" : "vllm flag";
        if (el.engine[0] && strcmp(el.engine, "sglang") != 0 && strcmp(el.engine, "vllm") != 0)
            wl->tp_source = "engine flag";
    }
    if (tp_ann) {
        wl->tp = tp;
        wl->tp_explicit = true;
        wl->tp_source = "annotation";
        origin_ann(wl, POL_SIZE_TP, ANN "tensor-parallel-size");
    }
    if (pp_ann) {
        wl->pp = pp;
        wl->pp_explicit = true;
        origin_ann(wl, POL_SIZE_PP, ANN "pipeline-parallel-size");
    }
    if (dp_ann) {
        wl->dp = dp;
        origin_ann(wl, POL_SIZE_DP, ANN "data-parallel-size");
    }
    if (ep_ann) {
        wl->layout.ep = ep;
        origin_ann(wl, POL_SIZE_EP, ANN "expert-parallel-size");
    }
    /* the certainty rule: when nothing written says how the pod's accelerators are split (no
     * topox.io/tensor-parallel-size, no engine flag topox reads), the pod is a data-parallel
     * world, each accelerator a rank: tp 1, never a dense TP group of the pod's size */
    guessed = !tp_ann && !el.any && f->accel > 0;
    if (guessed) {
        wl->tp = 1;
        if (!dp_ann)
            wl->dp = f->accel % wl->pp == 0 ? f->accel / wl->pp : f->accel;
        if (f->accel % wl->pp != 0)
            wl->pp = 1;
    }
    wl->layout.accel = wl->tp * wl->pp * wl->dp;
    wl->layout.tp = wl->layout.origin[POL_SIZE_TP].unknown ? 0 : wl->tp;
    wl->layout.pp = wl->layout.origin[POL_SIZE_PP].unknown ? 0 : wl->pp;
    wl->layout.dp = wl->layout.origin[POL_SIZE_DP].unknown ? 0 : wl->dp;
    if (wl->layout.origin[POL_SIZE_EP].unknown)
        wl->layout.ep = 0;

    pol_world_group(f, wl, &grouped, &by_rbg);
    if (!grouped && !gs_ann &&
        pol_world_signals(f, el.any && !el.pods_unknown ? el.pods : 0, wl, &world_size,
                          &world_index)) {
        grouped = true;
        have_world = true;
    }
    infer_kv(f, el.role, wl);
    pol_world_schedulers(f, wl, &sched_prefer, &sched_what);

    /* group size: annotation, the controller's (LWS size, RBG v1alpha2 component-size), --nnodes
     * and the like, else derived; the controller's size wins no argument: an annotation that
     * says otherwise is refused */
    have_ctl = controller_size(f, wl, by_rbg, &ctl, &ctl_what);
    wl->gang_level = wl->gang ? f->pod_group_level : -1;
    pol_workload_set_scope(wl, wl->scope);
    if (gs_ann && have_ctl && ctl != gsize)
        return tpx_err_set(err, TPX_EINVAL,
                           "annotation 'topox.io/group-size' %u disagrees with the %s %u", gsize,
                           ctl_what, ctl);
    if (gs_ann) {
        wl->group_size = gsize;
        wl->size_explicit = true;
    } else if (have_ctl) {
        wl->group_size = ctl;
        wl->size_explicit = true;
    } else if (have_world) {
        wl->group_size = world_size;
        wl->size_explicit = true;
    } else if (el.any && el.pods) {
        wl->group_size = el.pods;
        wl->size_explicit = true;
    } else if (grouped && pol_world_env_count(f, "PET_NNODES", &v) && v > 0) {
        /* torchrun's --nnodes as its PET_ env, as Kubeflow Trainer's torch plugin writes it into
         * every node's pod (pkg/runtime/framework/plugins/torch/torch.go): the world's nodes */
        wl->group_size = v;
        wl->size_explicit = true;
    } else if (f->accel > 0) {
        unsigned long total = (unsigned long)wl->tp * wl->pp * wl->dp;
        wl->group_size =
            total % f->accel == 0 && total >= f->accel ? (unsigned)(total / f->accel) : 1;
    } else {
        wl->group_size = 1;
    }
    if (!grouped) {
        /* the pod is its own group: nothing else will ever join it */
        wl->group_size = 1;
    }

    /* pod index: annotation, LWS worker-index (leader 0), RBG v1alpha2 component-index (leader
     * 0, worker component-id + 1), Indexed Job completion index */
    if (idx_ann) {
        wl->pod_index = (int)idx;
    } else if (have_world) {
        wl->pod_index = world_index;
    } else if ((s = tpx_kv_get(f->labels, f->nlabels, LWS "worker-index")) &&
               wl_parse_count(s, true, &v)) {
        wl->pod_index = (int)v;
    } else if (by_rbg && (s = tpx_kv_get(f->labels, f->nlabels, RBG2 "component-index")) &&
               wl_parse_count(s, true, &v)) {
        wl->pod_index = (int)v;
    } else if (((s = tpx_kv_get(f->labels, f->nlabels, JOB_INDEX)) ||
                (s = tpx_kv_get(f->annotations, f->nannotations, JOB_INDEX))) &&
               wl_parse_count(s, true, &v)) {
        wl->pod_index = (int)v;
    }
    if (!grouped)
        wl->pod_index = 0;

    any_ann = has_prefix_key(f->annotations, f->nannotations, ANN);
    wl->has_intent = f->accel > 0 && (any_ann || grouped || el.any);

    /* the certainty rule: annotations are the user's word; flags must be all known and agree
     * with the pod's accelerators; defaults are consistent by construction */
    wl->layout.certain = true;
    if (flags_used) {
        snprintf(wl->layout.why, sizeof(wl->layout.why), "%s", el.why);
        if (el.unknown || el.inconsistent)
            wl->layout.certain = false;
        if (el.per_pod && el.per_pod != f->accel) {
            size_t used = strlen(wl->layout.why);
            snprintf(wl->layout.why + used, sizeof(wl->layout.why) - used,
                     "the flags say %u accelerators per pod, the pod requests %u; ", el.per_pod,
                     f->accel);
            wl->layout.certain = false;
        }
        if (el.pods_unknown && !wl->size_explicit)
            wl->layout.certain = false;
        if (wl->layout.certain && wl->has_intent &&
            !adds_up(wl, wl->layout.why, sizeof(wl->layout.why))) {
            wl->layout.certain = false;
            /* only the group's total disagreed (pods that align): members without accelerators
             * may be why (pol_workload_skip_members looks again) */
            wl->by_group_total =
                wl->tp && (wl->accel_per_pod % wl->tp == 0 || wl->tp % wl->accel_per_pod == 0);
        }
    } else if (wl->has_intent && size_unknown(wl, NULL, 0)) {
        /* the annotated sizes are the user's word, but one size comes from a flag topox cannot
         * read: a group that the known sizes do not explain is not certain either */
        char why[sizeof(wl->layout.why)] = "";

        size_unknown(wl, why, sizeof(why));
        if (!adds_up(wl, why, sizeof(why))) {
            snprintf(wl->layout.why, sizeof(wl->layout.why), "%s", why);
            wl->layout.certain = false;
        }
    }
    if (guessed) {
        size_t n = strlen(wl->layout.why);

        wl->dp_world = grouped && wl->size_explicit && wl->layout.certain;
        snprintf(wl->layout.why + n, sizeof(wl->layout.why) - n,
                 "nothing written says how its %u %s are split: read as data-parallel ranks; ",
                 f->accel, pol_accel_word(f->resource));
        wl->layout.certain = false;
    }
    if (!wl->layout.certain && wl->has_intent) {
        size_t n = strlen(wl->layout.why);
        while (n >= 2 && wl->layout.why[n - 2] == ';')
            wl->layout.why[(n -= 2)] = '\0';
        fallback_layout(wl);
        wl->layout.accel = wl->tp * wl->pp * wl->dp;
        pol_workload_uncertain(wl, POL_UNCERTAIN_PREFER);
    } else {
        wl->layout.why[0] = '\0';
    }
    if (sched_prefer && wl->has_intent && !wl->layout.placement_ann) {
        /* another scheduler places the group: topox scores it, never refuses it */
        wl->preferred = true;
        wl->sched_prefers = sched_what;
    }
    return TPX_OK;
}

/* --- validation --------------------------------------------------------------------------------
 */

/* A certain MoE layout (EP or DP-attention), or the owner's leave: its TP group may cross nodes.
 * An uncertain layout is placed as preferred (its fallback tp fits a pod) and is no case here. */
static bool cross_node_ok(const struct pol_workload *wl)
{
    return wl->cross_node_tp || (wl->layout.certain && !wl_layout_dense(&wl->layout));
}

bool pol_workload_spans_nodes(const struct pol_workload *wl)
{
    unsigned g = wl->accel_per_pod;

    return wl->has_intent && g > 0 && cross_node_ok(wl) && (wl->tp > g || wl->layout.ep > g);
}

void pol_workload_fit_tp(struct pol_workload *wl, unsigned largest)
{
    unsigned d = 1;

    if (!wl->has_intent || largest == 0 || wl->tp <= largest || !cross_node_ok(wl))
        return;
    for (unsigned k = largest; k >= 1; k--) {
        if (wl->tp % k == 0) {
            d = k;
            break;
        }
    }
    if (wl->accel_per_pod % d != 0 && d % wl->accel_per_pod != 0)
        return; /* no such group lines up with the pods: judged as it is */
    wl->tp_spans = wl->tp;
    wl->dp *= wl->tp / d;
    wl->tp = d;
}

const char *pol_accel_word(const char *resource)
{
    if (resource &&
        (strstr(resource, "Ascend") || strstr(resource, "npu") || strstr(resource, "NPU")))
        return "NPUs";
    return "GPUs";
}

enum tpx_code pol_workload_validate(const struct pol_workload *wl, const struct topo_cluster *c,
                                    struct tpx_err *err)
{
    unsigned biggest = 0;
    unsigned long long all = 0;

    for (size_t i = 0, n = c ? topo_cluster_node_count(c) : 0; i < n; i++) {
        const struct topo_node_info *ni = topo_cluster_node(c, i);
        if (ni->accel_alloc > biggest)
            biggest = ni->accel_alloc;
        all += ni->accel_alloc;
    }
    return pol_workload_validate_sized(wl, c, biggest, all, err);
}

enum tpx_code pol_workload_validate_sized(const struct pol_workload *wl,
                                          const struct topo_cluster *c, unsigned biggest,
                                          unsigned long long all, struct tpx_err *err)
{
    const char *word = pol_accel_word(wl->resource);
    unsigned g = wl->accel_per_pod;
    enum topo_fabric fab;
    bool multi;
    unsigned largest;

    if (!wl->has_intent)
        return TPX_OK;
    if (wl->tp == 0)
        return tpx_err_set(err, TPX_EINVAL, "tensor-parallel-size must be a positive number");
    if (wl->pp == 0)
        return tpx_err_set(err, TPX_EINVAL, "pipeline-parallel-size must be a positive number");
    if (wl->dp == 0)
        return tpx_err_set(err, TPX_EINVAL, "data-parallel-size must be a positive number");
    if (g == 0)
        return tpx_err_set(err, TPX_EINVAL, "the pod requests no accelerators");
    /* only when tp x pp x dp is known: a size left to an unresolved flag is no contradiction */
    if (wl->tp_explicit && wl->group_size > 0 && !size_unknown(wl, NULL, 0) &&
        (unsigned long)wl->tp * wl->pp * wl->dp != (unsigned long)wl->group_size * g)
        return tpx_err_set(err, TPX_EINVAL,
                           "tensor-parallel-size %u x pipeline-parallel-size %u x "
                           "data-parallel-size %u = %lu %s, but the group has %u pods x %u %s = "
                           "%lu",
                           wl->tp, wl->pp, wl->dp, (unsigned long)wl->tp * wl->pp * wl->dp, word,
                           wl->group_size, g, word, (unsigned long)wl->group_size * g);
    if (g % wl->tp != 0 && wl->tp % g != 0)
        return tpx_err_set(err, TPX_EINVAL,
                           "pods of %u %s do not align with tensor-parallel-size %u: a pod must "
                           "hold whole TP groups or an equal share of one",
                           g, word, wl->tp);
    if (!c)
        return TPX_OK;
    {
        /* A pod lives on one node: if no node is big enough, every other message would mislead. */
        /* a required group larger than the whole cluster fits nowhere (a preferred one goes on
         * its own and holds nothing, policy/book.c) */
        if (!wl->preferred && (unsigned long long)wl->group_size * g > all && g <= biggest)
            return tpx_err_set(err, TPX_EINVAL,
                               "a group of %u pods x %u %s = %llu %s cannot be placed: the "
                               "cluster has %llu",
                               wl->group_size, g, word, (unsigned long long)wl->group_size * g,
                               word, all);
        if (g > biggest) {
            unsigned long total = (unsigned long)wl->tp * wl->pp * wl->dp;
            if (biggest > 0 && total % biggest == 0 &&
                (biggest % wl->tp == 0 || wl->tp % biggest == 0))
                return tpx_err_set(err, TPX_EINVAL,
                                   "pods of %u %s cannot be placed: the largest node here has %u. "
                                   "Use %lu pods of %u %s per group.",
                                   g, word, biggest, total / biggest, biggest, word);
            return tpx_err_set(err, TPX_EINVAL,
                               "pods of %u %s cannot be placed: the largest node here has %u", g,
                               word, biggest);
        }
    }
    largest = topo_cluster_largest_domain(c, &fab, &multi);
    /* a MoE layout (EP, DP-attention) or the owner's topox.io/cross-node-tp: allow may cross
     * nodes: pol_workload_fit_tp() places it; only a dense all-reduce of every layer is refused */
    if (wl->tp > largest && (cross_node_ok(wl) || wl->tp_spans))
        return TPX_OK;
    if (wl->tp > largest) {
        unsigned d = 1, pp2;
        char where[64];
        if (largest == 0)
            return tpx_err_set(err, TPX_EINVAL,
                               "tensor-parallel-size %u needs one interconnect domain of %u %s; "
                               "the cluster has no accelerators",
                               wl->tp, wl->tp, word);
        for (unsigned k = largest; k >= 1; k--) {
            if (wl->tp % k == 0) {
                d = k;
                break;
            }
        }
        pp2 = wl->pp * (wl->tp / d);
        if (multi) {
            size_t n = 0;
            topo_cluster_domain_nodes(c, topo_cluster_largest_domain_index(c), &n);
            snprintf(where, sizeof(where), "%s, %zu nodes", topo_fabric_name(fab), n);
        } else {
            snprintf(where, sizeof(where), "%s, one node", topo_fabric_name(fab));
        }
        return tpx_err_set(err, TPX_EINVAL,
                           "tensor-parallel-size %u needs one interconnect domain of %u %s; the "
                           "largest here has %u (%s). All-reduce would cross nodes. Try "
                           "tensor-parallel-size %u with pipeline-parallel-size %u. A MoE model "
                           "may cross nodes with EP or DP-attention; a dense one with the "
                           "annotation topox.io/cross-node-tp: allow on its pods.",
                           wl->tp, wl->tp, word, largest, where, d, pp2);
    }
    return TPX_OK;
}
