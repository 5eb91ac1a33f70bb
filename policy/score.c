/* SPDX-License-Identifier: Apache-2.0 */
/* policy/score.c - pol_score: 0..10 per candidate node that passes the rules; a reserved
 * place first; for a first member the scope left fullest after the whole group (or, only where
 * pol_ledger_set_pack or pol_ledger_set_pack_term turned it on, the packing rank or term of its
 * rack: pack.c); then the fullest domain; prefer.c's terms on top. */
#include "policy/policy.h"

#include "policy/ledger_int.h"
#include "policy/pack.h"

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

int led_score_node(const struct ctx *x, size_t node)
{
    const struct pol_ledger *l = x->l;
    unsigned long total = (unsigned long)x->e.n * x->e.accel_per_pod, fr, maxcap;
    size_t s = l->scope_of[x->e.scope][node];
    int sc;

    if (x->e.group != TOPO_NONE) {
        /* a reserved place for this pod is the best; else fuller domains first */
        return led_prefer(x, node, led_slot_here(x, node) ? 10 : 4 + node_fit_bonus(x, node));
    }
    /* first member: the scope left with the least free capacity after the whole group */
    fr = x->sc_free[s] > total ? x->sc_free[s] - total : 0;
    maxcap = l->max_scope_cap[x->e.scope] ? l->max_scope_cap[x->e.scope] : 1;
    sc = 7 - (int)((7UL * fr + maxcap / 2) / maxcap);
    if (sc < 0)
        sc = 0;
    sc += node_fit_bonus(x, node) + ep_domain_bonus(x, node);
    return led_prefer(x, node, sc > 10 ? 10 : sc);
}

enum tpx_code pol_score_memo(const struct pol_ledger *l, struct pol_scope_memo *memo,
                             const struct pol_workload *wl, const size_t *cand, size_t n,
                             time_t now, int *scores, struct tpx_err *err)
{
    struct ctx x;
    struct led_pack pack = {0};
    struct led_cells cells;

    (void)now;
    for (size_t i = 0; i < n; i++) {
        if (cand[i] >= l->nnodes)
            return tpx_err_set(err, TPX_EINVAL, "score: bad node index %zu", cand[i]);
        scores[i] = 0;
    }
    if (!wl->has_intent)
        return TPX_OK;
    if (led_ctx_init(&x, l, wl, memo, err) != TPX_OK)
        return err->code;
    if (x.invalid) {
        led_ctx_release(&x);
        return TPX_OK;
    }
    led_compute_scopes(&x);
    /* a first member's scores come from the memo's cells (policy/index.c): a read per node */
    if (led_cells_apply(&x) && led_memo_cells(&x, &cells)) {
        for (size_t i = 0; i < n; i++)
            scores[i] = led_cell_at(&x, &cells, cand[i])->score;
        led_ctx_release(&x);
        return TPX_OK;
    }
    if (x.e.group == TOPO_NONE && l->pack)
        led_pack_init(&pack, &x); /* the fragmentation-aware rank of the scopes (pack.c) */
    for (size_t i = 0; i < n; i++) {
        struct reason_code code;
        int sc;

        if (led_judge(&x, cand[i], &code) != POL_FIT)
            continue;
        /* a first member's rack rank, where pack.c ranks it (off unless pol_ledger_set_pack) */
        sc = pack.base ? led_pack_score(&pack, &x, cand[i], node_fit_bonus(&x, cand[i])) : -1;
        scores[i] = sc >= 0 ? led_prefer(&x, cand[i], sc) : led_score_node(&x, cand[i]);
    }
    led_pack_release(&pack);
    led_ctx_release(&x);
    return TPX_OK;
}
