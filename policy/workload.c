/* SPDX-License-Identifier: Apache-2.0 */
/* policy/workload.c - what a pod asks for: topox.io annotations, then vLLM/SGLang flags found in
 * its argv (also inside `sh -c` scripts, read by common/cmdline.h), then defaults; and the
 * validation of DESIGN.md. Pure string code: never includes JSON, YAML, HTTP or log headers. */
#include "policy/policy.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cmdline.h"

#define ANN "topox.io/"
#define LWS "leaderworkerset.sigs.k8s.io/"
#define JOBSET "jobset.sigs.k8s.io/"
#define JOB_INDEX "batch.kubernetes.io/job-completion-index"

static const char *kv_get(const struct topo_kv *kv, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++) {
        if (kv[i].key && kv[i].value && strcmp(kv[i].key, key) == 0)
            return kv[i].value;
    }
    return NULL;
}

/* Positive whole number (or >= 0 when zero_ok), at most 1 000 000. */
static bool parse_count(const char *s, bool zero_ok, unsigned *out)
{
    unsigned long v = 0;
    const char *p = s;

    while (*p == ' ')
        p++;
    if (*p < '0' || *p > '9')
        return false;
    while (*p >= '0' && *p <= '9') {
        v = v * 10 + (unsigned long)(*p - '0');
        if (v > 1000000UL)
            return false;
        p++;
    }
    while (*p == ' ')
        p++;
    if (*p || (!zero_ok && v == 0))
        return false;
    *out = (unsigned)v;
    return true;
}

static enum tpx_code ann_count(const struct pol_pod_facts *f, const char *key, bool zero_ok,
                               unsigned *out, bool *found, struct tpx_err *err)
{
    const char *v = kv_get(f->annotations, f->nannotations, key);

    if (!v)
        return TPX_OK;
    if (!parse_count(v, zero_ok, out))
        return tpx_err_set(err, TPX_EINVAL, "annotation '%s': '%s' is not a %s whole number", key,
                           v, zero_ok ? "non-negative" : "positive");
    if (found)
        *found = true;
    return TPX_OK;
}

/* --- engine flags ------------------------------------------------------------------------------
 */

enum flag_field { F_TP, F_PP, F_DP, F_NNODES };
enum engine { ENG_ANY, ENG_VLLM, ENG_SGLANG };

static const struct {
    const char *name; /* long options with dashes: tpx_cmdline_flag() folds underscores */
    enum flag_field field;
    enum engine engine;
} flags[] = {
    {"--tensor-parallel-size", F_TP, ENG_ANY},
    {"-tp", F_TP, ENG_VLLM},
    {"--tp-size", F_TP, ENG_SGLANG},
    {"--tp", F_TP, ENG_SGLANG},
    {"--pipeline-parallel-size", F_PP, ENG_ANY},
    {"-pp", F_PP, ENG_VLLM},
    {"--pp-size", F_PP, ENG_SGLANG},
    {"--data-parallel-size", F_DP, ENG_ANY},
    {"-dp", F_DP, ENG_VLLM},
    {"--dp-size", F_DP, ENG_SGLANG},
    {"--dp", F_DP, ENG_SGLANG},
    {"--nnodes", F_NNODES, ENG_ANY},
};

struct flag_found {
    unsigned val[4];
    bool set[4];
    bool unknown[4]; /* present, but with an unexpanded $(VAR) value */
    bool sglang;
    bool vllm;
};

static enum tpx_code set_flag(struct flag_found *ff, size_t k, const struct tpx_cmdline_value *v,
                              struct tpx_err *err)
{
    unsigned x;
    enum flag_field fld = flags[k].field;

    if (v->text[0] == '$' || (v->tok->flags & TPX_CMDLINE_EXPANDS)) {
        /* $(VAR), ${VAR:-d}, `cmd`: the value is not known here */
        ff->unknown[fld] = true;
        ff->set[fld] = false;
        return TPX_OK;
    }
    if (!parse_count(v->text, false, &x))
        return tpx_err_set(err, TPX_EINVAL, "flag '%s': '%s' is not a positive whole number",
                           flags[k].name, v->text);
    ff->val[fld] = x;
    ff->set[fld] = true;
    ff->unknown[fld] = false;
    if (flags[k].engine == ENG_SGLANG)
        ff->sglang = true;
    return TPX_OK;
}

/* Every occurrence counts, in order: the last one wins, and a bad one is an error even when a
 * later one is good, as with argparse. A flag without a value is ignored. */
static enum tpx_code scan_argv(const struct pol_pod_facts *f, struct flag_found *ff,
                               struct tpx_err *err)
{
    struct tpx_cmdline cl;
    enum tpx_code rc = TPX_OK;

    memset(ff, 0, sizeof(*ff));
    for (size_t a = 0; a < f->nargv; a++) {
        if (f->argv[a] && strstr(f->argv[a], "sglang"))
            ff->sglang = true;
        if (f->argv[a] && strstr(f->argv[a], "vllm"))
            ff->vllm = true;
    }
    tpx_cmdline_init(&cl);
    rc = tpx_cmdline_split(&cl, f->argv, f->nargv, err);
    for (size_t i = 0; i < cl.ntok && rc == TPX_OK; i++) {
        struct tpx_cmdline_value v;

        if (cl.tok[i].text[0] != '-')
            continue;
        for (size_t k = 0; k < sizeof(flags) / sizeof(flags[0]); k++) {
            if (!tpx_cmdline_flag(&cl, i, flags[k].name, &v))
                continue;
            if (v.text)
                rc = set_flag(ff, k, &v, err);
            break;
        }
    }
    tpx_cmdline_release(&cl);
    return rc;
}

/* --- inference ---------------------------------------------------------------------------------
 */

__attribute__((format(printf, 2, 3))) static void set_str(char *dst, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(dst, POL_KEY_MAX, fmt, ap);
    va_end(ap);
}

static bool has_prefix_key(const struct topo_kv *kv, size_t n, const char *prefix)
{
    size_t pl = strlen(prefix);

    for (size_t i = 0; i < n; i++) {
        if (kv[i].key && strncmp(kv[i].key, prefix, pl) == 0)
            return true;
    }
    return false;
}

static void infer_group(const struct pol_pod_facts *f, struct pol_workload *wl, bool *grouped)
{
    const char *ns = f->ns ? f->ns : "default";
    const char *pod = f->name ? f->name : "pod";
    const char *v;
    const char *lws_name = kv_get(f->labels, f->nlabels, LWS "name");
    const char *lws_gi = kv_get(f->labels, f->nlabels, LWS "group-index");

    *grouped = true;
    v = kv_get(f->annotations, f->nannotations, ANN "group");
    if (v && v[0]) {
        set_str(wl->group, "%s/%s", ns, v);
        set_str(wl->display, "%s/%s", ns, v);
        return;
    }
    v = kv_get(f->labels, f->nlabels, LWS "group-key");
    if ((v && v[0]) || (lws_name && lws_gi)) {
        if (v && v[0])
            set_str(wl->group, "%s/lws:%s", ns, v);
        else
            set_str(wl->group, "%s/lws:%s/%s", ns, lws_name, lws_gi);
        if (lws_name && lws_gi)
            set_str(wl->display, "%s/%s group %s", ns, lws_name, lws_gi);
        else
            set_str(wl->display, "%s/%s group %.8s", ns, lws_name ? lws_name : "lws", v);
        return;
    }
    v = kv_get(f->labels, f->nlabels, JOBSET "job-key");
    if (v && v[0]) {
        const char *js = kv_get(f->labels, f->nlabels, JOBSET "jobset-name");
        const char *ji = kv_get(f->labels, f->nlabels, JOBSET "job-index");
        set_str(wl->group, "%s/jobset:%s", ns, v);
        if (js && ji)
            set_str(wl->display, "%s/%s job %s", ns, js, ji);
        else
            set_str(wl->display, "%s/jobset job %.8s", ns, v);
        return;
    }
    *grouped = false;
    wl->group[0] = '\0';
    set_str(wl->display, "%s/%s", ns, pod);
}

enum tpx_code pol_workload_infer(const struct pol_pod_facts *f, struct pol_workload *wl,
                                 struct tpx_err *err)
{
    struct flag_found ff;
    unsigned tp = 0, pp = 0, dp = 0, gsize = 0, idx = 0, v = 0;
    bool tp_ann = false, pp_ann = false, dp_ann = false, gs_ann = false, idx_ann = false;
    bool grouped, any_ann, any_flag;
    const char *s;

    memset(wl, 0, sizeof(*wl));
    wl->pod_index = -1;
    wl->accel_per_pod = f->accel;
    if (f->resource)
        snprintf(wl->resource, sizeof(wl->resource), "%s", f->resource);
    if (ann_count(f, ANN "tensor-parallel-size", false, &tp, &tp_ann, err) ||
        ann_count(f, ANN "pipeline-parallel-size", false, &pp, &pp_ann, err) ||
        ann_count(f, ANN "data-parallel-size", false, &dp, &dp_ann, err) ||
        ann_count(f, ANN "group-size", false, &gsize, &gs_ann, err) ||
        ann_count(f, ANN "pod-index", true, &idx, &idx_ann, err) ||
        ann_count(f, ANN "num-ubatches", false, &wl->num_ubatches, NULL, err) ||
        ann_count(f, ANN "model-layers", false, &wl->model_layers, NULL, err))
        return err->code;
    s = kv_get(f->annotations, f->nannotations, ANN "pipeline-scope");
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
    s = kv_get(f->annotations, f->nannotations, ANN "placement");
    if (s) {
        if (strcmp(s, "preferred") == 0)
            wl->preferred = true;
        else if (strcmp(s, "required") != 0)
            return tpx_err_set(err, TPX_EINVAL,
                               "annotation 'topox.io/placement': '%s' is not required or "
                               "preferred",
                               s);
    }
    if (scan_argv(f, &ff, err) != TPX_OK)
        return err->code;

    /* parallelism: annotation, then flag, then default */
    wl->tp_source = "default";
    if (tp_ann) {
        wl->tp = tp;
        wl->tp_explicit = true;
        wl->tp_source = "annotation";
    } else if (ff.set[F_TP]) {
        wl->tp = ff.val[F_TP];
        wl->tp_explicit = true;
        wl->tp_source = ff.sglang ? "sglang flag" : "vllm flag";
    } else {
        wl->tp = f->accel ? f->accel : 1;
    }
    wl->pp = pp_ann ? pp : ff.set[F_PP] ? ff.val[F_PP] : 1;
    wl->pp_explicit = pp_ann || ff.set[F_PP];
    wl->dp = dp_ann ? dp : ff.set[F_DP] ? ff.val[F_DP] : 1;

    infer_group(f, wl, &grouped);

    /* group size: annotation, LWS size, SGLang --nnodes, else derived */
    if (gs_ann) {
        wl->group_size = gsize;
        wl->size_explicit = true;
    } else if ((s = kv_get(f->annotations, f->nannotations, LWS "size")) &&
               parse_count(s, false, &v)) {
        wl->group_size = v;
        wl->size_explicit = true;
    } else if (ff.set[F_NNODES]) {
        wl->group_size = ff.val[F_NNODES];
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

    /* pod index: annotation, LWS worker-index (leader 0), Indexed Job completion index */
    if (idx_ann) {
        wl->pod_index = (int)idx;
    } else if ((s = kv_get(f->labels, f->nlabels, LWS "worker-index")) &&
               parse_count(s, true, &v)) {
        wl->pod_index = (int)v;
    } else if (((s = kv_get(f->labels, f->nlabels, JOB_INDEX)) ||
                (s = kv_get(f->annotations, f->nannotations, JOB_INDEX))) &&
               parse_count(s, true, &v)) {
        wl->pod_index = (int)v;
    }
    if (!grouped)
        wl->pod_index = 0;

    any_ann = has_prefix_key(f->annotations, f->nannotations, ANN);
    any_flag = ff.set[F_TP] || ff.set[F_PP] || ff.set[F_DP] || ff.unknown[F_TP] ||
               ff.unknown[F_PP] || ff.set[F_NNODES] || ff.unknown[F_NNODES];
    wl->has_intent = f->accel > 0 && (any_ann || grouped || any_flag);
    return TPX_OK;
}

/* --- validation --------------------------------------------------------------------------------
 */

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
    if (wl->tp_explicit && wl->group_size > 0 &&
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
        unsigned biggest = 0;
        for (size_t i = 0, n = topo_cluster_node_count(c); i < n; i++) {
            const struct topo_node_info *ni = topo_cluster_node(c, i);
            if (ni->accel_alloc > biggest)
                biggest = ni->accel_alloc;
        }
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
                           "tensor-parallel-size %u with pipeline-parallel-size %u.",
                           wl->tp, wl->tp, word, largest, where, d, pp2);
    }
    return TPX_OK;
}
