/* SPDX-License-Identifier: Apache-2.0 */
/* policy/prefer.c - the soft terms pol_score adds to best fit (docs/workloads.md, "Traffic and
 * where it lands"): a node without RDMA NICs for a group that may have to cross nodes, the KV
 * transfer between one deployment's prefill and decode groups, and a later member of an EP group
 * in the NVLink domain of its placed members. Score only: none of them ever rejects a node. */
#include "policy/policy.h"

#include <string.h>

#include "policy/ledger_int.h"

/* small on purpose: best fit (0..10) stays the main word */
#define RDMA_PENALTY 3 /* the node says 0 RDMA NICs and the group may cross nodes */
#define KV_SAME_RACK 2 /* a placed group of the other role of the deployment is in this rack */
#define KV_SAME_BLOCK 1
#define EP_MATE_DOMAIN 2 /* a later EP member in the NVLink domain of its placed members */

static void add_once(size_t *arr, size_t *n, size_t cap, size_t v)
{
    if (v == TOPO_NONE || *n >= cap)
        return;
    for (size_t i = 0; i < *n; i++) {
        if (arr[i] == v)
            return;
    }
    arr[(*n)++] = v;
}

void led_prefer_init(const struct ctx *x, struct led_prefer *pf)
{
    const struct pol_ledger *l = x->l;
    const struct pol_workload *wl = x->wl;

    memset(pf, 0, sizeof(*pf));
    /* the first member of a prefill (or decode) group looks for its deployment's other role */
    if (x->e.group != TOPO_NONE || !wl->kv_role || !wl->kv_group[0])
        return;
    for (size_t gi = 0; gi < l->ngroups; gi++) {
        const struct group *g = &l->groups[gi];
        if (!g->live || g->rack == TOPO_NONE || !g->kv_role || g->kv_role == wl->kv_role ||
            strcmp(g->kv_group, wl->kv_group) != 0)
            continue;
        add_once(pf->peer_rack, &pf->npeer_rack, 8, g->rack);
        for (unsigned k = 0; k < g->nslots; k++) {
            if (g->slots[k].filled && g->slots[k].at.node != TOPO_NONE) {
                add_once(pf->peer_block, &pf->npeer_block, 8,
                         topo_cluster_node_block(l->c, g->slots[k].at.node));
                break;
            }
        }
    }
}

static bool has(const size_t *arr, size_t n, size_t v)
{
    for (size_t i = 0; v != TOPO_NONE && i < n; i++) {
        if (arr[i] == v)
            return true;
    }
    return false;
}

/* KV transfer prefill -> decode: the same rack, else the same block as the other role. */
static int kv_bonus(const struct ctx *x, const struct led_prefer *pf, size_t n)
{
    const struct topo_cluster *c = x->l->c;

    if (has(pf->peer_rack, pf->npeer_rack, topo_cluster_node_rack(c, n)))
        return KV_SAME_RACK;
    if (has(pf->peer_block, pf->npeer_block, topo_cluster_node_block(c, n)))
        return KV_SAME_BLOCK;
    return 0;
}

/* A later member of an EP group wider than its TP unit, on a node of a multi-node NVLink domain
 * that already holds (or holds a place for) another member: the EP group stays in one domain. */
static int ep_mate_bonus(const struct ctx *x, size_t n)
{
    const struct pol_ledger *l = x->l;
    const struct group *g;
    size_t dom = led_node_domain(l, n);

    if (x->e.group == TOPO_NONE || led_slot_here(x, n) || x->wl->layout.ep <= x->unit ||
        !l->n_multi[n])
        return 0;
    g = &l->groups[x->e.group];
    for (unsigned k = 0; k < g->nslots; k++) {
        const struct slot *s = &g->slots[k];
        if ((s->filled || s->reserved) && s->at.node != TOPO_NONE &&
            led_node_domain(l, s->at.node) == dom)
            return EP_MATE_DOMAIN;
    }
    return 0;
}

int led_prefer(const struct ctx *x, size_t n, int score)
{
    /* the hard form (led_rdma_cut) never lets such a node through; this is the rest: an
     * uncertain or preferred layout. A place already held for the pod stays its best. */
    if (led_no_rdma(x, n) && !led_slot_here(x, n))
        score -= RDMA_PENALTY;
    score += kv_bonus(x, &x->pf, n) + ep_mate_bonus(x, n);
    if (score < 0)
        return 0;
    return score > 10 ? 10 : score;
}
