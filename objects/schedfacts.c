/* SPDX-License-Identifier: Apache-2.0 */
/* objects/schedfacts.c - Pod and Node JSON -> policy/admit.h structs (k8s.io/api/core/v1:
 * PodSpec.nodeName, nodeSelector, affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuring
 * Execution.nodeSelectorTerms[].{matchExpressions,matchFields}, tolerations; NodeSpec.taints). */
#include "objects/schedfacts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "objects/manifest.h"

/* Every allocation of one object, freed together. */
struct arena {
    void **p;
    size_t n;
    size_t cap;
};

static void *arena_alloc(void **mem, size_t size, struct tpx_err *err)
{
    struct arena *a = *mem;
    void *x;

    if (!a) {
        a = calloc(1, sizeof(*a));
        if (!a)
            goto oom;
        *mem = a;
    }
    if (!TPX_GROW(a->p, a->cap, a->n + 1))
        goto oom;
    x = calloc(1, size ? size : 1);
    if (!x)
        goto oom;
    a->p[a->n++] = x;
    return x;
oom:
    tpx_err_set(err, TPX_ENOMEM, "schedfacts: out of memory");
    return NULL;
}

static void arena_free(void **mem)
{
    struct arena *a = *mem;

    if (!a)
        return;
    for (size_t i = 0; i < a->n; i++)
        free(a->p[i]);
    free(a->p);
    free(a);
    *mem = NULL;
}

static const char *arena_str(void **mem, const char *s, struct tpx_err *err)
{
    char *d;

    if (!s)
        return NULL;
    d = arena_alloc(mem, strlen(s) + 1, err);
    if (d)
        memcpy(d, s, strlen(s) + 1);
    return d;
}

static const char *jstr(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

/* An object of string values (labels, nodeSelector) as kv pairs; non-strings are skipped. */
static enum tpx_code kv_of(void **mem, const json_t *o, const struct topo_kv **out, size_t *n,
                           struct tpx_err *err)
{
    struct topo_kv *kv;
    const char *k;
    json_t *v;

    *out = NULL;
    *n = 0;
    if (!json_is_object(o) || json_object_size(o) == 0)
        return TPX_OK;
    kv = arena_alloc(mem, (json_object_size(o) + 1) * sizeof(*kv), err);
    if (!kv)
        return err->code;
    json_object_foreach((json_t *)o, k, v)
    {
        if (!json_is_string(v))
            continue;
        kv[*n].key = arena_str(mem, k, err);
        kv[*n].value = arena_str(mem, json_string_value(v), err);
        if (!kv[*n].key || !kv[*n].value)
            return err->code;
        (*n)++;
    }
    *out = kv;
    return TPX_OK;
}

static bool op_of(const char *s, enum pol_sel_op *op)
{
    static const struct {
        const char *name;
        enum pol_sel_op op;
    } ops[] = {{"In", POL_SEL_IN},         {"NotIn", POL_SEL_NOT_IN},
               {"Exists", POL_SEL_EXISTS}, {"DoesNotExist", POL_SEL_NOT_EXISTS},
               {"Gt", POL_SEL_GT},         {"Lt", POL_SEL_LT}};

    for (size_t i = 0; s && i < sizeof(ops) / sizeof(ops[0]); i++) {
        if (strcmp(s, ops[i].name) == 0) {
            *op = ops[i].op;
            return true;
        }
    }
    return false;
}

/* The requirements of one list (matchExpressions or matchFields) appended to reqs. */
static enum tpx_code reqs_of(void **mem, const json_t *list, bool field, struct pol_sel_req *reqs,
                             size_t *n, struct tpx_err *err)
{
    size_t i;
    const json_t *e;

    json_array_foreach(list, i, e)
    {
        struct pol_sel_req *r = &reqs[*n];
        const json_t *vals = json_object_get(e, "values");
        const char **vs;
        size_t j;
        const json_t *v;

        r->key = arena_str(mem, jstr(e, "key"), err);
        if (!r->key || !op_of(jstr(e, "operator"), &r->op))
            return err->code ? err->code
                             : tpx_err_set(err, TPX_EINVAL,
                                           "nodeAffinity: %s[%zu]: key or operator '%s' is not "
                                           "valid",
                                           field ? "matchFields" : "matchExpressions", i,
                                           jstr(e, "operator") ? jstr(e, "operator") : "");
        r->field = field;
        vs = arena_alloc(mem, (json_array_size(vals) + 1) * sizeof(*vs), err);
        if (!vs)
            return err->code;
        json_array_foreach(vals, j, v)
        {
            if (json_is_string(v) &&
                !(vs[r->nvalues++] = arena_str(mem, json_string_value(v), err)))
                return err->code;
        }
        r->values = vs;
        (*n)++;
    }
    return TPX_OK;
}

/* An extended resource name, as the API's IsExtendedResourceName: a domain-qualified name outside
 * the kubernetes.io namespace that is no "requests." quota name (nvidia.com/gpu, amd.com/gpu,
 * habana.ai/gaudi, huawei.com/Ascend910B, nvidia.com/mig-1g.10gb). */
static bool extended_name(const char *k)
{
    const char *slash = strchr(k, '/');

    if (!slash || strncmp(k, "requests.", 9) == 0)
        return false;
    return !(strncmp(k, "kubernetes.io/", 14) == 0 ||
             (slash - k > 14 && strncmp(slash - 14, ".kubernetes.io", 14) == 0));
}

/* The extended resources spec's containers and init containers request (limits too: for an
 * extended resource the API server defaults the request to the limit), each once, into ext
 * (borrowed from spec). */
static size_t extended_resources(const json_t *spec, const char *ext[ERT_MAX])
{
    static const char *const lists[] = {"containers", "initContainers"};
    static const char *const parts[] = {"requests", "limits"};
    size_t n = 0;

    for (size_t l = 0; l < 2; l++) {
        size_t i;
        const json_t *c;
        json_array_foreach(json_object_get(spec, lists[l]), i, c)
        {
            for (size_t p = 0; p < 2; p++) {
                const char *k;
                const json_t *v;
                json_object_foreach(json_object_get(json_object_get(c, "resources"), parts[p]), k,
                                    v)
                {
                    size_t q = 0;
                    if (!extended_name(k))
                        continue;
                    while (q < n && strcmp(ext[q], k) != 0)
                        q++;
                    if (q == n && n < ERT_MAX)
                        ext[n++] = k;
                }
            }
        }
    }
    return n;
}

enum tpx_code obj_pod_sched_from_json(const json_t *pod, struct obj_pod_sched *out,
                                      struct tpx_err *err)
{
    const json_t *spec = json_object_get(pod, "spec");
    const json_t *req = json_object_get(
        json_object_get(json_object_get(json_object_get(spec, "affinity"), "nodeAffinity"),
                        "requiredDuringSchedulingIgnoredDuringExecution"),
        "nodeSelectorTerms");
    const json_t *tols = json_object_get(spec, "tolerations");
    size_t i;
    const json_t *t;

    memset(out, 0, sizeof(*out));
    out->s.node_name = arena_str(&out->mem, jstr(spec, "nodeName"), err);
    if (kv_of(&out->mem, json_object_get(spec, "nodeSelector"), &out->s.selector, &out->s.nselector,
              err) != TPX_OK)
        goto fail;
    if (json_is_array(req)) {
        struct pol_sel_term *terms =
            arena_alloc(&out->mem, (json_array_size(req) + 1) * sizeof(*terms), err);
        if (!terms)
            goto fail;
        out->s.affinity = true;
        json_array_foreach(req, i, t)
        {
            const json_t *me = json_object_get(t, "matchExpressions");
            const json_t *mf = json_object_get(t, "matchFields");
            struct pol_sel_req *reqs = arena_alloc(
                &out->mem, (json_array_size(me) + json_array_size(mf) + 1) * sizeof(*reqs), err);
            if (!reqs || reqs_of(&out->mem, me, false, reqs, &terms[i].nreqs, err) != TPX_OK ||
                reqs_of(&out->mem, mf, true, reqs, &terms[i].nreqs, err) != TPX_OK)
                goto fail;
            terms[i].reqs = reqs;
        }
        out->s.terms = terms;
        out->s.nterms = json_array_size(req);
    }
    {
        size_t ntol = json_is_array(tols) ? json_array_size(tols) : 0;
        const char *ext[ERT_MAX];
        /* a pod that exists (it has a creationTimestamp: `plan --pending`) has been through
         * admission already: what it tolerates is what it says */
        bool exists =
            json_is_string(json_object_get(json_object_get(pod, "metadata"), "creationTimestamp"));
        size_t next = exists ? 0 : extended_resources(spec, ext);
        struct pol_toleration *ts =
            ntol + next ? arena_alloc(&out->mem, (ntol + next) * sizeof(*ts), err) : NULL;

        if (ntol + next && !ts)
            goto fail;
        for (i = 0; i < ntol; i++) {
            const char *op;
            t = json_array_get(tols, i);
            op = jstr(t, "operator");
            ts[i].key = arena_str(&out->mem, jstr(t, "key"), err);
            ts[i].value = arena_str(&out->mem, jstr(t, "value"), err);
            ts[i].effect = arena_str(&out->mem, jstr(t, "effect"), err);
            ts[i].exists = op && strcmp(op, "Exists") == 0;
            if (err->code != TPX_OK)
                goto fail;
        }
        /* the ExtendedResourceToleration admission plugin (on in GKE, which taints its GPU nodes
         * nvidia.com/gpu=present:NoSchedule): every extended resource a container or init
         * container requests is tolerated as {key: NAME, operator: Exists, effect: NoSchedule}
         * (kubernetes plugin/pkg/admission/extendedresourcetoleration/admission.go) */
        for (size_t e = 0; e < next; e++) {
            ts[ntol + e] = (struct pol_toleration){arena_str(&out->mem, ext[e], err), true, NULL,
                                                   "NoSchedule"};
            out->ert[out->nert++] = ts[ntol + e].key;
            if (err->code != TPX_OK)
                goto fail;
        }
        out->s.tols = ts;
        out->s.ntols = ntol + next;
    }
    if (err->code == TPX_OK)
        return TPX_OK;
fail:
    obj_pod_sched_release(out);
    return err->code;
}

void obj_pod_sched_release(struct obj_pod_sched *p)
{
    if (!p)
        return;
    arena_free(&p->mem);
    memset(p, 0, sizeof(*p));
}

/* Add kubernetes.io/hostname=name when the labels lack it (the kubelet always sets it). */
static enum tpx_code with_hostname(struct obj_node_meta *out, const char *name, struct tpx_err *err)
{
    struct topo_kv *kv;

    for (size_t i = 0; i < out->m.nlabels; i++) {
        if (strcmp(out->m.labels[i].key, "kubernetes.io/hostname") == 0)
            return TPX_OK;
    }
    kv = arena_alloc(&out->mem, (out->m.nlabels + 1) * sizeof(*kv), err);
    if (!kv)
        return err->code;
    if (out->m.nlabels)
        memcpy(kv, out->m.labels, out->m.nlabels * sizeof(*kv));
    kv[out->m.nlabels].key = "kubernetes.io/hostname";
    kv[out->m.nlabels].value = out->m.name ? out->m.name : name;
    out->m.labels = kv;
    out->m.nlabels++;
    return TPX_OK;
}

enum tpx_code obj_node_meta_from_json(const json_t *node, struct obj_node_meta *out,
                                      struct tpx_err *err)
{
    const json_t *meta = json_object_get(node, "metadata");
    const json_t *taints = json_object_get(json_object_get(node, "spec"), "taints");
    size_t i;
    const json_t *t;

    memset(out, 0, sizeof(*out));
    out->m.name = arena_str(&out->mem, jstr(meta, "name") ? jstr(meta, "name") : "", err);
    if (!out->m.name ||
        kv_of(&out->mem, json_object_get(meta, "labels"), &out->m.labels, &out->m.nlabels, err) !=
            TPX_OK ||
        with_hostname(out, out->m.name, err) != TPX_OK)
        goto fail;
    if (json_is_array(taints) && json_array_size(taints) > 0) {
        struct pol_taint *ts = arena_alloc(&out->mem, json_array_size(taints) * sizeof(*ts), err);
        if (!ts)
            goto fail;
        json_array_foreach(taints, i, t)
        {
            ts[out->m.ntaints].key =
                arena_str(&out->mem, jstr(t, "key") ? jstr(t, "key") : "", err);
            ts[out->m.ntaints].value = arena_str(&out->mem, jstr(t, "value"), err);
            ts[out->m.ntaints].effect =
                arena_str(&out->mem, jstr(t, "effect") ? jstr(t, "effect") : "", err);
            if (err->code != TPX_OK)
                goto fail;
            out->m.ntaints++;
        }
        out->m.taints = ts;
    }
    return TPX_OK;
fail:
    obj_node_meta_release(out);
    return err->code;
}

enum tpx_code obj_node_meta_from_labels(const char *name, const struct topo_kv *labels,
                                        size_t nlabels, struct obj_node_meta *out,
                                        struct tpx_err *err)
{
    struct topo_kv *kv;

    memset(out, 0, sizeof(*out));
    out->m.name = arena_str(&out->mem, name ? name : "", err);
    kv = arena_alloc(&out->mem, (nlabels + 1) * sizeof(*kv), err);
    if (!out->m.name || !kv)
        goto fail;
    for (size_t i = 0; i < nlabels; i++) {
        kv[i].key = arena_str(&out->mem, labels[i].key, err);
        kv[i].value = arena_str(&out->mem, labels[i].value, err);
        if (!kv[i].key || !kv[i].value)
            goto fail;
    }
    out->m.labels = kv;
    out->m.nlabels = nlabels;
    if (with_hostname(out, out->m.name, err) != TPX_OK)
        goto fail;
    return TPX_OK;
fail:
    obj_node_meta_release(out);
    return err->code;
}

void obj_node_meta_release(struct obj_node_meta *n)
{
    if (!n)
        return;
    arena_free(&n->mem);
    memset(n, 0, sizeof(*n));
}

/* Does any node carry a taint that filters (NoSchedule, NoExecute)? */
static bool any_hard_taint(const struct pol_node_meta *nodes, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        for (size_t t = 0; t < nodes[i].ntaints; t++) {
            if (strcmp(nodes[i].taints[t].effect, "NoSchedule") == 0 ||
                strcmp(nodes[i].taints[t].effect, "NoExecute") == 0)
                return true;
        }
    }
    return false;
}

/* Room for one more mask and reason. */
static bool grow_masks(struct obj_admission *a)
{
    unsigned char **m = realloc(a->masks, (a->nmasks + 1) * sizeof(*m));
    char **w;

    if (!m)
        return false;
    a->masks = m;
    w = realloc(a->whys, (a->nmasks + 1) * sizeof(*w));
    if (!w)
        return false;
    a->whys = w;
    return true;
}

/* The admission of one template: its mask and reason, or none when every node admits it. */
/* Does any of the n nodes carry label key? */
static bool some_node_has(const struct pol_node_meta *nodes, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; k < nodes[i].nlabels; k++) {
            if (strcmp(nodes[i].labels[k].key, key) == 0)
                return true;
        }
    }
    return false;
}

/* On a synthetic cluster: leave out the selector entries and the affinity whose label keys no
 * node carries (they cannot be checked there), saying so in a->note. */
static void synthetic_only(struct pol_pod_sched *p, const struct pol_node_meta *nodes, size_t n,
                           struct obj_admission *a)
{
    const char *skipped = NULL;
    size_t keep = 0;
    struct topo_kv *sel = (struct topo_kv *)p->selector;

    for (size_t i = 0; i < p->nselector; i++) {
        if (some_node_has(nodes, n, sel[i].key))
            sel[keep++] = sel[i];
        else if (!skipped)
            skipped = sel[i].key;
    }
    p->nselector = keep;
    for (size_t t = 0; p->affinity && t < p->nterms; t++) {
        for (size_t r = 0; r < p->terms[t].nreqs; r++) {
            const struct pol_sel_req *q = &p->terms[t].reqs[r];
            if (!q->field && !some_node_has(nodes, n, q->key)) {
                p->affinity = false; /* the terms are ORed: none can be judged */
                if (!skipped)
                    skipped = q->key;
                break;
            }
        }
    }
    if (skipped && !a->note[0])
        snprintf(a->note, sizeof(a->note),
                 "the synthetic cluster's nodes carry no label '%.100s': node selectors and "
                 "affinity on such labels are not checked",
                 skipped);
}

/* The admission of one template: its mask and reason, or none when every node admits it. */
static enum tpx_code admit_template(const json_t *tmpl, const struct pol_node_meta *metas, size_t n,
                                    bool tainted, bool synthetic, struct obj_admission *a,
                                    const unsigned char **mask, const char **why,
                                    struct tpx_err *err)
{
    struct obj_pod_sched ps;
    unsigned char *ok;
    char *w;

    *mask = NULL;
    *why = NULL;
    if (obj_pod_sched_from_json(tmpl, &ps, err) != TPX_OK)
        return err->code;
    if (synthetic)
        synthetic_only(&ps.s, metas, n, a);
    for (size_t e = 0; e < ps.nert && !a->ert_note[0]; e++) {
        size_t tainted_by = 0;
        for (size_t i = 0; i < n; i++) {
            for (size_t k = 0; k < metas[i].ntaints; k++)
                tainted_by += strcmp(metas[i].taints[k].key, ps.ert[e]) == 0 &&
                              strcmp(metas[i].taints[k].effect, "NoSchedule") == 0;
        }
        if (tainted_by)
            snprintf(a->ert_note, sizeof(a->ert_note),
                     "taint %.64s:NoSchedule (%zu node(s)) is tolerated by the pods that request "
                     "%.64s: the ExtendedResourceToleration admission plugin adds the toleration "
                     "(GKE runs it)",
                     ps.ert[e], tainted_by, ps.ert[e]);
    }
    if (!tainted && !pol_pod_sched_constrains(&ps.s)) {
        obj_pod_sched_release(&ps);
        return TPX_OK;
    }
    ok = malloc(n ? n : 1);
    w = malloc(512);
    if (!ok || !w || !grow_masks(a)) {
        free(ok);
        free(w);
        obj_pod_sched_release(&ps);
        return tpx_err_set(err, TPX_ENOMEM, "schedfacts: out of memory");
    }
    if (pol_admit_nodes(&ps.s, metas, n, ok, w, 512) == n) {
        free(ok);
        free(w);
    } else {
        a->masks[a->nmasks] = ok;
        a->whys[a->nmasks++] = w;
        *mask = ok;
        *why = w;
    }
    obj_pod_sched_release(&ps);
    return TPX_OK;
}

enum tpx_code obj_manifest_admit(struct obj_manifest *m, const struct obj_node_meta *nodes,
                                 size_t n, bool synthetic, struct obj_admission *a,
                                 struct tpx_err *err)
{
    struct pol_node_meta *metas = malloc((n ? n : 1) * sizeof(*metas));
    const json_t **seen = calloc(m->npods + 1, sizeof(*seen));
    const unsigned char **seen_mask = calloc(m->npods + 1, sizeof(*seen_mask));
    const char **seen_why = calloc(m->npods + 1, sizeof(*seen_why));
    size_t nseen = 0;
    bool tainted;
    enum tpx_code rc = TPX_OK;

    memset(a, 0, sizeof(*a));
    a->pod_mask = calloc(m->npods + 1, sizeof(*a->pod_mask));
    a->pod_why = calloc(m->npods + 1, sizeof(*a->pod_why));
    if (!metas || !seen || !seen_mask || !seen_why || !a->pod_mask || !a->pod_why) {
        rc = tpx_err_set(err, TPX_ENOMEM, "schedfacts: out of memory");
        goto out;
    }
    for (size_t i = 0; i < n; i++)
        metas[i] = nodes[i].m;
    tainted = any_hard_taint(metas, n);
    for (size_t i = 0; i < m->npods; i++) {
        const json_t *t = obj_manifest_pod_template(m, i);
        size_t k = 0;
        /* pods of one template share its admission, and come one after another */
        if (i > 0 && obj_manifest_pod_template(m, i - 1) == t) {
            a->pod_mask[i] = a->pod_mask[i - 1];
            a->pod_why[i] = a->pod_why[i - 1];
            continue;
        }
        while (k < nseen && seen[k] != t)
            k++;
        if (k == nseen) {
            rc = admit_template(t, metas, n, tainted, synthetic, a, &seen_mask[k], &seen_why[k],
                                err);
            if (rc != TPX_OK) {
                tpx_err_prefix(err, "pod '%s'", m->names[i]);
                goto out;
            }
            seen[nseen++] = t;
        }
        a->pod_mask[i] = seen_mask[k];
        a->pod_why[i] = seen_why[k];
    }
    for (size_t r = 0; r < m->nreplicas; r++) {
        m->pol_replicas[r].admit = a->pod_mask + m->replica_first_pod[r];
        m->pol_replicas[r].admit_why = a->pod_why + m->replica_first_pod[r];
    }
out:
    free(metas);
    free((void *)seen);
    free((void *)seen_mask);
    free((void *)seen_why);
    return rc;
}

void obj_admission_release(struct obj_admission *a)
{
    if (!a)
        return;
    for (size_t i = 0; i < a->nmasks; i++) {
        free(a->masks[i]);
        free(a->whys[i]);
    }
    free(a->masks);
    free(a->whys);
    free((void *)a->pod_mask);
    free((void *)a->pod_why);
    memset(a, 0, sizeof(*a));
}
