/* SPDX-License-Identifier: Apache-2.0 */
/* policy/score.c - pol_score: 0..10 per candidate node that passes the rules; a reserved
 * place first, then the scope left fullest after the whole group, then the fullest domain. */
#include "policy/policy.h"

#include "policy/ledger_int.h"

/* Best-fit part inside the node: 0..3, higher when the domain the pod would take is fuller. */
static int node_fit_bonus(const struct ctx *x, size_t n)
{
    const struct pol_ledger *l = x->l;
    size_t dom = led_node_domain(l, n);
    unsigned size, f;
    uint64_t m;

    if (topo_cluster_domain_is_multinode(l->c, dom)) {
        unsigned alloc = l->n_alloc[n];
        f = node_free(l, n);
        size = alloc;
    } else {
        if (!led_pick_innode(l, n, x->e.accel_per_pod, x->e.accel_per_pod, TOPO_NONE, &m))
            return 0;
        dom = where_domain(l, &(struct where){n, m});
        size = led_domain_size(l, dom);
        f = dom_free(l, dom);
    }
    if (size == 0 || f < x->e.accel_per_pod)
        return 0;
    return (int)((3UL * (size - (f - x->e.accel_per_pod)) + size / 2) / size);
}

/* An EP group spanning pods (docs/workloads.md) prefers, as its first member's place, a
 * multi-node NVLink domain that holds the whole EP group now: +2. */
static int ep_domain_bonus(const struct ctx *x, size_t n)
{
    const struct pol_ledger *l = x->l;
    size_t dom = led_node_domain(l, n), nn;
    const size_t *nodes;
    unsigned long f = 0;

    if (x->wl->layout.ep <= x->e.accel_per_pod || !topo_cluster_domain_is_multinode(l->c, dom))
        return 0;
    nodes = topo_cluster_domain_nodes(l->c, dom, &nn);
    for (size_t q = 0; q < nn && f < x->wl->layout.ep; q++) {
        if (!l->n_unsched[nodes[q]])
            f += node_free(l, nodes[q]) / x->e.accel_per_pod * x->e.accel_per_pod;
    }
    return f >= x->wl->layout.ep ? 2 : 0;
}

enum tpx_code pol_score(const struct pol_ledger *l, const struct pol_workload *wl,
                        const size_t *cand, size_t n, time_t now, int *scores, struct tpx_err *err)
{
    return pol_score_memo(l, NULL, wl, cand, n, now, scores, err);
}

enum tpx_code pol_score_memo(const struct pol_ledger *l, struct pol_scope_memo *memo,
                             const struct pol_workload *wl, const size_t *cand, size_t n,
                             time_t now, int *scores, struct tpx_err *err)
{
    struct ctx x;
    struct led_prefer pf;

    (void)now;
    for (size_t i = 0; i < n; i++) {
        if (cand[i] >= l->nnodes)
            return tpx_err_set(err, TPX_EINVAL, "score: bad node index %zu", cand[i]);
        scores[i] = 0;
    }
    if (!wl->has_intent)
        return TPX_OK;
    if (led_ctx_init(&x, l, wl, err) != TPX_OK)
        return err->code;
    x.memo = memo;
    if (x.invalid) {
        led_ctx_release(&x);
        return TPX_OK;
    }
    led_compute_scopes(&x);
    led_prefer_init(&x, &pf);
    for (size_t i = 0; i < n; i++) {
        struct reason_code code;
        size_t node = cand[i];
        unsigned long total = (unsigned long)x.e.n * x.e.accel_per_pod, fr, maxcap;
        size_t s = l->scope_of[x.e.scope][node];
        int sc;

        if (led_judge(&x, node, &code) != POL_FIT)
            continue;
        if (x.e.group != TOPO_NONE) {
            /* a reserved place for this pod is the best; else fuller domains first */
            scores[i] =
                led_prefer(&x, &pf, node, x.slot_here[node] ? 10 : 4 + node_fit_bonus(&x, node));
            continue;
        }
        /* first member: the scope left with the least free capacity after the whole group */
        fr = x.sc_free[s] > total ? x.sc_free[s] - total : 0;
        maxcap = l->max_scope_cap[x.e.scope] ? l->max_scope_cap[x.e.scope] : 1;
        sc = 7 - (int)((7UL * fr + maxcap / 2) / maxcap);
        if (sc < 0)
            sc = 0;
        scores[i] = sc + node_fit_bonus(&x, node) + ep_domain_bonus(&x, node);
        scores[i] = led_prefer(&x, &pf, node, scores[i] > 10 ? 10 : scores[i]);
    }
    led_ctx_release(&x);
    return TPX_OK;
}
