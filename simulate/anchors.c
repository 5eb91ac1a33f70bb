/* SPDX-License-Identifier: Apache-2.0 */
/* simulate/anchors.c - how other schedulers choose where a group goes, written as the node for a
 * group's first member (the rest follow pol_score to the place its holds keep, as for topox): the
 * rack best fit of issue 14, Kueue's topology-aware BestFit and LeastFreeCapacity, Volcano's
 * HyperNode binpack and the "keep whole domains free" rule of Slurm's topology/block plugin. Each
 * picks among the nodes pol_filter passed, so every rule and hold of topox stays (docs/simulate.md,
 * "The policies", cites what each is written from). */
#include "simulate/sim_int.h"

#include <stdlib.h>
#include <string.h>

/* Per scope (the group's rack, or its block) and per interconnect domain, from the ledger now. */
struct scope_stats {
    unsigned long free, cap; /* accelerators */
    unsigned long pods;      /* pods of the group's size that fit (Kueue's "state") */
};

static size_t scope_index(const struct sim *s, size_t node, bool block)
{
    size_t b;

    if (!block)
        return topo_cluster_node_rack(s->c, node);
    b = topo_cluster_node_block(s->c, node);
    return b == TOPO_NONE ? 0 : b;
}

/* A key to minimise, lexicographically (then the lowest node index). */
struct key {
    double a, b, c;
};

static bool key_less(const struct key *x, const struct key *y)
{
    if (x->a != y->a)
        return x->a < y->a;
    if (x->b != y->b)
        return x->b < y->b;
    return x->c < y->c;
}

static struct key node_key(const struct sim *s, const struct sim_event *e, size_t i,
                           const struct scope_stats *sc, const struct scope_stats *blk,
                           const unsigned long *dom_free, const unsigned long *dom_cap)
{
    unsigned long need = (unsigned long)e->pods * e->gpus;
    unsigned nf = pol_ledger_node_free(s->l, i);
    unsigned alloc = topo_cluster_node(s->c, i)->accel_alloc;
    const struct scope_stats *r = &sc[scope_index(s, i, e->block)];
    size_t d = topo_cluster_node_domain(s->c, i);
    double pods_left = (double)r->pods - e->pods, node_pods = (double)(nf / e->gpus);

    switch (s->policy) {
    case SIM_KUEUE_BEST_FIT:
        /* Kueue TAS BestFit (KEP-2724 "Computing the assignment"): of the domains at the required
         * level that fit, the tightest fit (the fewest pods of capacity left); inside it, domains
         * from the most free capacity down (the last one optimised): the first pod goes to the
         * node with the most room for the group's pods. */
        return (struct key){pods_left, -node_pods, 0};
    case SIM_KUEUE_LEAST_FREE:
        /* Kueue TAS LeastFreeCapacity: domains from the least free capacity up, at every level */
        return (struct key){(double)r->pods, node_pods, 0};
    case SIM_VOLCANO_BINPACK:
        /* Volcano network-topology-aware binpack: the HyperNode (here the rack) whose utilisation
         * would be highest, then the node's binpack score (used / allocatable after the pod) */
        return (struct key){-(double)(r->cap - r->free + need) / (double)(r->cap ? r->cap : 1),
                            -(double)(alloc - nf + e->gpus) / (double)(alloc ? alloc : 1), 0};
    case SIM_SLURM_BLOCK: {
        /* Slurm topology/block: best fit over blocks, and a whole free block, rack or NVLink
         * domain is opened only when no partly used one takes the group */
        const struct scope_stats *b = &blk[scope_index(s, i, true)];
        return (struct key){
            (b->free == b->cap ? 2.0 : 0.0) + (!e->block && r->free == r->cap ? 1.0 : 0.0),
            (double)(r->free - need) + (dom_free[d] == dom_cap[d] ? 1e9 : 0.0), (double)nf};
    }
    default: /* SIM_BEST_FIT: the scope left with the fewest free, then the fullest node */
        return (struct key){(double)(r->free > need ? r->free - need : 0), (double)nf, 0};
    }
}

size_t sim_pick_first(struct sim *s, const struct sim_event *e, const struct pol_filter_result *res)
{
    size_t nb = topo_cluster_block_count(s->c), nd = topo_cluster_domain_count(s->c);
    size_t nscopes = (s->nracks > nb ? s->nracks : nb) + 1;
    struct scope_stats *sc = calloc(2 * nscopes, sizeof(*sc)), *blk = sc + nscopes;
    unsigned long *dom = calloc(2 * (nd + 1), sizeof(*dom));
    size_t best = (size_t)-1;
    struct key bk = {0, 0, 0};

    if (!sc || !dom) {
        free(sc);
        free(dom);
        return (size_t)-1; /* out of memory: the group waits, as if nothing fitted */
    }
    for (size_t i = 0; i < s->nn; i++) {
        const struct topo_node_info *tn = topo_cluster_node(s->c, i);
        unsigned nf = pol_ledger_node_free(s->l, i);
        struct scope_stats *r = &sc[scope_index(s, i, e->block)];
        size_t d = topo_cluster_node_domain(s->c, i);
        if (tn->unschedulable)
            continue;
        r->free += nf;
        r->cap += tn->accel_alloc;
        r->pods += nf / e->gpus;
        blk[scope_index(s, i, true)].free += nf;
        blk[scope_index(s, i, true)].cap += tn->accel_alloc;
        dom[d] += nf;
        dom[nd + 1 + d] += tn->accel_alloc;
    }
    for (size_t i = 0; i < s->nn; i++) {
        struct key k;
        if (res->verdict[i] != POL_FIT)
            continue;
        k = node_key(s, e, i, sc, blk, dom, dom + nd + 1);
        if (best == (size_t)-1 || key_less(&k, &bk)) {
            best = i;
            bk = k;
        }
    }
    free(sc);
    free(dom);
    return best;
}
