/* SPDX-License-Identifier: Apache-2.0 */
/* policy/reserve.c - where a pod goes on a node (its in-node domains), the holds for the rest
 * of a group once its first member is placed (its TP mates, then whole TP units best fit), and
 * moving the holds a bound pod overbooks elsewhere in their scope. */
#include "policy/policy.h"

#include "policy/ledger_int.h"

/* Where on node n the pod goes now: mask of in-node domains, or 0 on a multi-node domain. */
bool led_place_on(const struct ctx *x, size_t n, unsigned need, size_t only, struct where *w)
{
    const struct pol_ledger *l = x->l;

    w->node = n;
    w->dmask = 0;
    if (node_multinode(l, n))
        return node_free(l, n) >= x->e.accel_per_pod;
    return led_pick_innode(l, n, x->e.accel_per_pod, need, only, &w->dmask);
}

/* The nodes to search for group g's scope: its rack's list, or the index's list of the block or
 * zone (in index order, as a pass over every node meets them). */
static const size_t *scope_nodes(const struct pol_ledger *l, const struct group *g, size_t *n)
{
    const size_t *start = l->scope_start[g->scope];

    if (g->scope == POL_SCOPE_RACK)
        return topo_cluster_rack_nodes(l->c, g->scope_id, n);
    *n = start[g->scope_id + 1] - start[g->scope_id];
    return l->scope_nodes[g->scope] + start[g->scope_id];
}

/* Hold slot s of group g at w; false when a budget refuses it (pol_ledger_set_budgets). */
static bool hold_slot(struct pol_ledger *l, const struct group *g, struct slot *s,
                      const struct where *w)
{
    if (!led_budget_allows(l, g))
        return false;
    s->at = *w;
    s->reserved = true;
    led_account(l, w, g->accel_per_pod, +1, true);
    return true;
}

/* The same for slot k, grown to first (so g->slots may move); false also out of memory. */
static bool hold_slot_at(struct pol_ledger *l, struct group *g, unsigned k, const struct where *w)
{
    struct slot *s = led_slot_grow(g, k);

    return s && hold_slot(l, g, s, w);
}

/* Where a TP mate of the member at at0 (in domain dom0) goes: the same in-node domain of its node,
 * or the first node of its multi-node domain in the group's scope that takes it. */
static bool place_mate(const struct ctx *x, const struct group *g, const struct where *at0,
                       size_t dom0, struct where *w)
{
    const struct pol_ledger *l = x->l;
    const size_t *sof = l->scope_of[g->scope];
    const size_t *nodes;
    size_t nn;

    if (!topo_cluster_domain_is_multinode(l->c, dom0))
        return led_place_on(x, at0->node, x->e.accel_per_pod, dom0, w);
    nodes = topo_cluster_domain_nodes(l->c, dom0, &nn);
    for (size_t q = 0; q < nn; q++) {
        if (sof[nodes[q]] == g->scope_id && !led_rdma_cut(x, nodes[q]) &&
            led_place_on(x, nodes[q], x->e.accel_per_pod, TOPO_NONE, w))
            return true;
    }
    return false;
}

/* Hold the TP mates of the member just placed at slot k0 in its domain, each where it fits. */
static void reserve_mates(struct pol_ledger *l, const struct ctx *x, struct group *g, unsigned k0)
{
    unsigned u0 = k0 / x->ppu * x->ppu;
    const struct where at0 = g->slots[k0].at; /* a copy: holding grows the slots */
    size_t dom0 = where_domain(l, &at0);

    for (unsigned k = u0; k < u0 + x->ppu && k < g->n; k++) {
        struct where w;
        if (k != k0 && place_mate(x, g, &at0, dom0, &w))
            hold_slot_at(l, g, k, &w);
    }
}

/* Multi-node domain of node n, judged once from its first node: true when its nodes in g's scope
 * take cnt pods now; *free_accel is their free accelerators. */
static bool multi_domain_room(const struct ctx *x, const struct group *g, size_t n, unsigned cnt,
                              unsigned long *free_accel)
{
    const struct pol_ledger *l = x->l;
    const size_t *sof = l->scope_of[g->scope];
    size_t nn;
    const size_t *nodes = topo_cluster_domain_nodes(l->c, led_node_domain(l, n), &nn);
    unsigned long pods = 0;

    if (nodes[0] != n)
        return false;
    *free_accel = 0;
    for (size_t q = 0; q < nn; q++) {
        if (sof[nodes[q]] == g->scope_id && !l->n_unsched[nodes[q]] && !led_rdma_cut(x, nodes[q])) {
            pods += node_free(l, nodes[q]) / x->e.accel_per_pod;
            *free_accel += node_free(l, nodes[q]);
        }
    }
    return pods >= cnt;
}

/* The domain a TP unit of cnt pods of g fits best (the fullest that still holds it), over the
 * nodes of g's scope; *node is the node it was found from. TOPO_NONE when none holds it. */
static size_t best_unit_domain(const struct ctx *x, const struct group *g, unsigned cnt,
                               size_t *node)
{
    const struct pol_ledger *l = x->l;
    const size_t *sof = l->scope_of[g->scope];
    size_t nlist, best = TOPO_NONE;
    const size_t *list = scope_nodes(l, g, &nlist);
    unsigned long best_free = 0;

    for (size_t q = 0; q < nlist; q++) {
        size_t n = list[q], dom;
        unsigned long f;
        struct where w;
        if (sof[n] != g->scope_id || l->n_unsched[n])
            continue;
        if (node_multinode(l, n)) {
            if (!multi_domain_room(x, g, n, cnt, &f))
                continue;
            dom = led_node_domain(l, n);
        } else {
            if (led_rdma_cut(x, n) ||
                !led_place_on(x, n, x->ppu > 1 ? x->e.tp : x->e.accel_per_pod, TOPO_NONE, &w))
                continue;
            dom = where_domain(l, &w);
            f = dom_free(l, dom);
        }
        if (best == TOPO_NONE || f < best_free) {
            best = dom;
            *node = n;
            best_free = f;
        }
    }
    return best;
}

/* The fullest node of multi-node domain dom in g's scope that still takes a pod, or TOPO_NONE. */
static size_t fullest_node(const struct ctx *x, const struct group *g, size_t dom)
{
    const struct pol_ledger *l = x->l;
    const size_t *sof = l->scope_of[g->scope];
    size_t nn, best = TOPO_NONE;
    const size_t *nodes = topo_cluster_domain_nodes(l->c, dom, &nn);

    for (size_t q = 0; q < nn; q++) {
        unsigned f = node_free(l, nodes[q]);
        if (sof[nodes[q]] != g->scope_id || f < x->e.accel_per_pod || l->n_unsched[nodes[q]] ||
            led_rdma_cut(x, nodes[q]))
            continue;
        if (best == TOPO_NONE || f < node_free(l, best))
            best = nodes[q];
    }
    return best;
}

/* Hold the slots of TP unit u of g in domain dom (found from node), one pod at a time, until one
 * does not fit. */
static void reserve_unit(struct pol_ledger *l, const struct ctx *x, struct group *g, unsigned u,
                         size_t dom, size_t node)
{
    for (unsigned k = u; k < u + x->ppu && k < g->n; k++) {
        struct where w;
        bool ok;
        if (!topo_cluster_domain_is_multinode(l->c, dom)) {
            ok = led_place_on(x, node, x->e.accel_per_pod, dom, &w);
        } else {
            size_t n = fullest_node(x, g, dom);
            ok = n != TOPO_NONE && led_place_on(x, n, x->e.accel_per_pod, TOPO_NONE, &w);
        }
        if (!ok || !hold_slot_at(l, g, k, &w))
            break;
    }
}

/* Reserve the rest of group g (first member just placed at slot k0) in its scope: first the pod's
 * TP mates in its domain, then the other TP units one at a time, best fit over the scope's
 * domains. It holds what fits and stops at the first unit that fits nowhere (a preferred
 * placement comes here without room for the whole group). */
void led_reserve_rest(struct pol_ledger *l, const struct ctx *x, struct group *g, unsigned k0)
{
    unsigned u0 = k0 / x->ppu * x->ppu;

    /* an EP group spanning TP units (pods, or TP groups that span pods) prefers the first
     * member's multi-node NVLink domain (docs/workloads.md): its units go there while it has
     * room, then best fit as for TP */
    const struct where at0 = g->slots[k0].at; /* a copy: holding grows the slots */
    size_t dom0 = where_domain(l, &at0);
    bool ep_pref = x->wl->layout.ep > x->unit && topo_cluster_domain_is_multinode(l->c, dom0);
    size_t nn0;
    const size_t *dnodes0 = topo_cluster_domain_nodes(l->c, dom0, &nn0);

    reserve_mates(l, x, g, k0);
    for (unsigned u = 0; u < g->n; u += x->ppu) {
        unsigned cnt = g->n - u < x->ppu ? g->n - u : x->ppu; /* pods in this unit */
        size_t node = TOPO_NONE, dom;
        unsigned long f0;
        struct where w;
        if (u == u0)
            continue;
        if (ep_pref && x->ppu == 1 && place_mate(x, g, &at0, dom0, &w)) {
            hold_slot_at(l, g, u, &w);
            continue;
        }
        if (ep_pref && x->ppu > 1 && nn0 > 0 && multi_domain_room(x, g, dnodes0[0], cnt, &f0)) {
            reserve_unit(l, x, g, u, dom0, dnodes0[0]);
            continue;
        }
        dom = best_unit_domain(x, g, cnt, &node);
        if (dom == TOPO_NONE)
            return;
        reserve_unit(l, x, g, u, dom, node);
    }
}

/* Node n (or one of its in-node domains) holds more than it has, counting reservations. */
static bool overbooked(const struct pol_ledger *l, size_t n)
{
    size_t nd, first = led_node_domains(l, n, &nd);

    if (l->node_used[n] + l->node_resv[n] > l->n_alloc[n])
        return true;
    if (node_multinode(l, n))
        return false;
    for (size_t k = 0; k < nd; k++) {
        if (l->dom_used[first + k] + l->dom_resv[first + k] > led_domain_size(l, first + k))
            return true;
    }
    return false;
}

/* Hold slot s of group g again somewhere in its scope (the fullest node that still takes it);
 * false when no node has room, and the slot stays unheld. */
static bool rehome_slot(struct pol_ledger *l, struct group *g, struct slot *s)
{
    const size_t *sof = l->scope_of[g->scope];
    const size_t *list;
    size_t nlist, best = TOPO_NONE;
    uint64_t best_mask = 0;

    if (g->scope_id == TOPO_NONE)
        return false;
    list = scope_nodes(l, g, &nlist);
    for (size_t q = 0; q < nlist; q++) {
        size_t n = list[q];
        uint64_t m = 0;
        if (sof[n] != g->scope_id || l->n_unsched[n] || node_free(l, n) < g->accel_per_pod)
            continue;
        if (!node_multinode(l, n) &&
            !led_pick_innode(l, n, g->accel_per_pod, g->accel_per_pod, TOPO_NONE, &m))
            continue;
        if (best == TOPO_NONE || node_free(l, n) < node_free(l, best)) {
            best = n;
            best_mask = m;
        }
    }
    if (best == TOPO_NONE)
        return false;
    return hold_slot(l, g, s, &(struct where){best, best_mask});
}

/* A bound pod took capacity on node n that groups were holding: release those holds until the
 * node is no longer overbooked, and hold each again elsewhere in its group's scope. Only runs when
 * the node is overbooked, so the scan over groups is rare. */
void led_displace(struct pol_ledger *l, size_t n)
{
    for (size_t gi = 0; gi < l->ngroups && overbooked(l, n); gi++) {
        struct group *g = &l->groups[gi];
        if (!g->live)
            continue;
        for (unsigned k = 0; k < g->nslots && overbooked(l, n); k++) {
            struct slot *s = &g->slots[k];
            if (s->filled || !s->reserved || s->at.node != n)
                continue;
            led_release_slot(l, g, s);
            if (!rehome_slot(l, g, s))
                s->at.node = TOPO_NONE;
        }
    }
}

bool led_hold_group(struct pol_ledger *l, const struct ctx *x, struct group *g, size_t node)
{
    struct where w;
    unsigned need = x->ppu > 1 ? x->e.tp : x->e.accel_per_pod;

    if (!led_place_on(x, node, need, TOPO_NONE, &w) &&
        !led_place_on(x, node, x->e.accel_per_pod, TOPO_NONE, &w))
        return false;
    g->scope_id = l->scope_of[g->scope][node];
    g->rack = topo_cluster_node_rack(l->c, node);
    if (!hold_slot_at(l, g, 0, &w))
        return false;
    led_reserve_rest(l, x, g, 0);
    return true;
}
