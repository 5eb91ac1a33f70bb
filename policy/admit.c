/* SPDX-License-Identifier: Apache-2.0 */
/* policy/admit.c - kube-scheduler's node filters for `topox plan` (policy/admit.h). */
#include "policy/admit.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *label_of(const struct pol_node_meta *n, const char *key)
{
    for (size_t i = 0; i < n->nlabels; i++) {
        if (strcmp(n->labels[i].key, key) == 0)
            return n->labels[i].value;
    }
    return NULL;
}

static bool in_values(const struct pol_sel_req *r, const char *v)
{
    for (size_t i = 0; i < r->nvalues; i++) {
        if (strcmp(r->values[i], v) == 0)
            return true;
    }
    return false;
}

/* A decimal integer (Gt and Lt parse both sides as int64; a value that is not one fails). */
static bool int_of(const char *s, long long *out)
{
    char *end;

    if (!s || !*s)
        return false;
    *out = strtoll(s, &end, 10);
    return *end == '\0';
}

/* nodeaffinity's requirement: a field requirement reads the node's name (metadata.name, In and
 * NotIn only), a label requirement its labels. */
static bool req_holds(const struct pol_sel_req *r, const struct pol_node_meta *n)
{
    const char *v;
    long long a, b;

    if (r->field) {
        if (strcmp(r->key, "metadata.name") != 0)
            return false;
        if (r->op == POL_SEL_IN)
            return in_values(r, n->name);
        if (r->op == POL_SEL_NOT_IN)
            return !in_values(r, n->name);
        return false;
    }
    v = label_of(n, r->key);
    switch (r->op) {
    case POL_SEL_IN:
        return v && in_values(r, v);
    case POL_SEL_NOT_IN:
        return !v || !in_values(r, v);
    case POL_SEL_EXISTS:
        return v != NULL;
    case POL_SEL_NOT_EXISTS:
        return v == NULL;
    case POL_SEL_GT:
    case POL_SEL_LT:
        if (r->nvalues != 1 || !int_of(v, &a) || !int_of(r->values[0], &b))
            return false;
        return r->op == POL_SEL_GT ? a > b : a < b;
    }
    return false;
}

static bool term_holds(const struct pol_sel_term *t, const struct pol_node_meta *n)
{
    if (t->nreqs == 0)
        return false; /* an empty term matches no objects */
    for (size_t i = 0; i < t->nreqs; i++) {
        if (!req_holds(&t->reqs[i], n))
            return false;
    }
    return true;
}

/* v1.Toleration.ToleratesTaint */
static bool tolerates(const struct pol_toleration *t, const struct pol_taint *x)
{
    const char *tv = t->value ? t->value : "";
    const char *xv = x->value ? x->value : "";

    if (t->effect && t->effect[0] && strcmp(t->effect, x->effect) != 0)
        return false;
    if (t->key && t->key[0] && strcmp(t->key, x->key) != 0)
        return false;
    if (t->exists)
        return true;
    if (!t->key || !t->key[0])
        return false; /* Equal needs a key */
    return strcmp(tv, xv) == 0;
}

bool pol_admit(const struct pol_pod_sched *p, const struct pol_node_meta *n, char *why, size_t len)
{
    if (len)
        why[0] = '\0';
    if (p->node_name && p->node_name[0] && strcmp(p->node_name, n->name) != 0) {
        if (len)
            snprintf(why, len, "node(s) didn't match the requested nodeName %.100s", p->node_name);
        return false;
    }
    for (size_t i = 0; i < p->nselector; i++) {
        const char *v = label_of(n, p->selector[i].key);
        if (!v || strcmp(v, p->selector[i].value) != 0) {
            if (len)
                snprintf(why, len, "node(s) didn't match nodeSelector %.100s=%.100s",
                         p->selector[i].key, p->selector[i].value);
            return false;
        }
    }
    if (p->affinity) {
        bool any = false;
        for (size_t t = 0; t < p->nterms && !any; t++)
            any = term_holds(&p->terms[t], n);
        if (!any) {
            if (len)
                snprintf(why, len, "node(s) didn't match the pod's required node affinity%s%.100s",
                         p->nterms && p->terms[0].nreqs ? " (" : "",
                         p->nterms && p->terms[0].nreqs ? p->terms[0].reqs[0].key : "");
            if (len && p->nterms && p->terms[0].nreqs)
                snprintf(why + strlen(why), len - strlen(why), ")");
            return false;
        }
    }
    for (size_t i = 0; i < n->ntaints; i++) {
        const struct pol_taint *x = &n->taints[i];
        bool ok = false;
        if (strcmp(x->effect, "NoSchedule") != 0 && strcmp(x->effect, "NoExecute") != 0)
            continue; /* PreferNoSchedule only scores */
        for (size_t t = 0; t < p->ntols && !ok; t++)
            ok = tolerates(&p->tols[t], x);
        if (!ok) {
            if (len)
                snprintf(why, len, "node(s) had untolerated taint {%.100s%s%.60s: %s}", x->key,
                         x->value && x->value[0] ? "=" : "", x->value ? x->value : "", x->effect);
            return false;
        }
    }
    return true;
}

bool pol_pod_sched_constrains(const struct pol_pod_sched *p)
{
    return (p->node_name && p->node_name[0]) || p->nselector > 0 || p->affinity;
}

size_t pol_admit_nodes(const struct pol_pod_sched *p, const struct pol_node_meta *nodes, size_t n,
                       unsigned char *ok, char *why, size_t len)
{
    /* the commonest reasons, kept as kube-scheduler's FitError counts them */
    char reason[2][160] = {"", ""};
    size_t count[2] = {0, 0};
    size_t admitted = 0;

    if (len)
        why[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        char r[160];
        ok[i] = pol_admit(p, &nodes[i], r, sizeof(r));
        if (ok[i]) {
            admitted++;
            continue;
        }
        for (size_t k = 0; k < 2; k++) {
            if (!reason[k][0] || strcmp(reason[k], r) == 0) {
                if (!reason[k][0])
                    snprintf(reason[k], sizeof(reason[k]), "%s", r);
                count[k]++;
                break;
            }
        }
    }
    if (admitted < n && len) {
        int w = snprintf(why, len, "%zu/%zu nodes admit it (kube-scheduler's filters): %zu %s",
                         admitted, n, count[0], reason[0]);
        if (w > 0 && (size_t)w < len && reason[1][0])
            snprintf(why + w, len - (size_t)w, ", %zu %s", count[1], reason[1]);
    }
    return admitted;
}
