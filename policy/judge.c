/* SPDX-License-Identifier: Apache-2.0 */
/* policy/judge.c - the placement rules (DESIGN.md, Placement rules): the state of one call
 * (struct ctx) from a workload and the ledger, the verdict for one node with its reason code, and
 * the reason text. */
#include "policy/policy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/ledger_int.h"

void led_ctx_release(struct ctx *x)
{
    if (!x->sc_borrowed) {
        free(x->sc_dyn);
        free(x->sc_static);
        free(x->sc_free);
        free(x->dom_pods);
    }
    free(x->slot_map);
}

/* The nodes where a reserved slot of group g waits for x's pod: a list while short, else a map. */
static enum tpx_code note_slots(struct ctx *x, const struct group *g, struct tpx_err *err)
{
    for (unsigned k = 0; k < g->nslots; k++) {
        const struct slot *s = &g->slots[k];
        if (!s->reserved || s->at.node == TOPO_NONE || (x->e.idx >= 0 && (unsigned)x->e.idx != k))
            continue;
        if (!x->slot_map && x->nslot < LED_SLOT_LIST) {
            x->slot_list[x->nslot++] = s->at.node;
            continue;
        }
        if (!x->slot_map) {
            x->slot_map = calloc(x->l->nnodes + 1, 1);
            if (!x->slot_map)
                return tpx_err_set(err, TPX_ENOMEM, "policy: out of memory");
            for (unsigned i = 0; i < x->nslot; i++)
                x->slot_map[x->slot_list[i]] = 1;
        }
        x->slot_map[s->at.node] = 1;
    }
    return TPX_OK;
}

enum tpx_code led_ctx_init(struct ctx *x, const struct pol_ledger *l, const struct pol_workload *wl,
                           struct pol_scope_memo *memo, struct tpx_err *err)
{
    struct tpx_err verr = TPX_ERR_INIT;
    struct pol_workload eff_wl = *wl;
    size_t gi = led_group_find(l, wl->group);

    memset(x, 0, sizeof(*x));
    x->l = l;
    x->wl = wl;
    x->mate_domain = TOPO_NONE;
    x->mate_node = TOPO_NONE;
    x->e.group = gi;
    x->res_id = -1;
    if (wl->resource[0]) {
        x->res_id = -2;
        for (size_t r = 0; r < l->nres; r++) {
            if (strcmp(l->res[r], wl->resource) == 0)
                x->res_id = (int)r;
        }
    }
    if (gi != TOPO_NONE && !wl->tp_explicit) {
        const struct group *g = &l->groups[gi];
        eff_wl.tp = g->tp;
        eff_wl.pp = g->pp;
        eff_wl.dp = g->dp;
        eff_wl.group_size = g->n;
        eff_wl.tp_explicit = g->tp_explicit;
    }
    /* a MoE TP group no domain holds: TP groups of the largest domain, the whole in its scope */
    if (wl->has_intent)
        pol_workload_fit_tp(&eff_wl, l->largest_domain);
    x->e.tp = eff_wl.tp;
    x->e.pp = eff_wl.pp;
    x->e.dp = eff_wl.dp;
    x->e.accel_per_pod = eff_wl.accel_per_pod;
    x->e.n = eff_wl.group_size ? eff_wl.group_size : 1;
    x->e.idx = wl->pod_index;
    x->e.scope = wl->scope;
    x->e.preferred = wl->preferred;
    /* an index outside the group, or outside the slots its recorded group has, is unknown */
    if (x->e.idx >= 0 && ((unsigned)x->e.idx >= x->e.n ||
                          (gi != TOPO_NONE && (unsigned)x->e.idx >= l->groups[gi].n)))
        x->e.idx = -1;
    if (!wl->has_intent)
        return TPX_OK;
    if (pol_workload_validate_sized(&eff_wl, l->c, l->biggest_alloc, l->total_alloc, &verr) !=
        TPX_OK) {
        x->invalid = true;
        snprintf(x->invalid_msg, sizeof(x->invalid_msg), "%s", verr.msg);
        return TPX_OK;
    }
    x->ppu = x->e.accel_per_pod < x->e.tp ? x->e.tp / x->e.accel_per_pod : 1;
    x->unit = x->e.accel_per_pod < x->e.tp ? x->e.tp : x->e.accel_per_pod;
    /* the group's TP, EP or PP traffic goes between its pods (docs/workloads.md, RDMA NICs). Only
     * TP and EP make it hard: pipeline sends are small and NCCL carries them over TCP sockets when
     * a node has no RDMA NIC (slower, never broken), so PP alone only scores. */
    if (x->e.n > 1) {
        bool a2a = x->e.tp > x->e.accel_per_pod || wl->layout.ep > x->e.accel_per_pod;
        if (a2a || x->e.pp > 1) {
            x->rdma_need = (unsigned long)x->e.n * x->e.accel_per_pod;
            x->rdma_hard = a2a && wl->layout.certain && !x->e.preferred;
        }
    }
    x->memo = memo;
    if (memo) {
        if (led_memo_attach(x, memo, err) != TPX_OK) {
            led_ctx_release(x);
            return err->code;
        }
    } else {
        x->sc_dyn = calloc(l->nscopes[x->e.scope] + 1, sizeof(unsigned long));
        x->sc_static = calloc(l->nscopes[x->e.scope] + 1, sizeof(unsigned long));
        x->sc_free = calloc(l->nscopes[x->e.scope] + 1, sizeof(unsigned long));
        x->dom_pods = calloc(l->ndomains + 1, sizeof(unsigned));
        if (!x->sc_dyn || !x->sc_static || !x->sc_free || !x->dom_pods) {
            led_ctx_release(x);
            return tpx_err_set(err, TPX_ENOMEM, "policy: out of memory");
        }
    }
    if (gi != TOPO_NONE) {
        const struct group *g = &l->groups[gi];
        if (note_slots(x, g, err) != TPX_OK) {
            led_ctx_release(x);
            return err->code;
        }
        /* TP mates: pods of the same TP unit already bound */
        if (x->ppu > 1 && x->e.idx >= 0 && g->accel_per_pod == x->e.accel_per_pod) {
            unsigned u0 = (unsigned)x->e.idx / x->ppu * x->ppu;
            for (unsigned k = u0; k < u0 + x->ppu && k < g->nslots; k++) {
                const struct slot *s = &g->slots[k];
                if (k != (unsigned)x->e.idx && s->filled && s->at.node != TOPO_NONE) {
                    x->mate_domain = where_domain(l, &s->at);
                    if (s->at.dmask != 0)
                        x->mate_node = s->at.node;
                    break;
                }
            }
        }
    }
    led_prefer_init(x, &x->pf);
    return TPX_OK;
}

/* Best in-node domain(s) of node n that can take the pod now (without touching reservations):
 * need accelerators in one domain (tp when it starts a TP unit spanning pods, else g), or whole
 * domains when g exceeds the domain size. only: restrict to that domain. false when none. */
bool led_pick_innode(const struct pol_ledger *l, size_t n, unsigned g, unsigned need, size_t only,
                     uint64_t *mask)
{
    size_t nd, first = led_node_domains(l, n, &nd);
    size_t best = TOPO_NONE;
    unsigned best_free = 0;

    /* the domains may promise more than the node has (domain labels count GPUs that went
     * unhealthy and left allocatable) */
    if (nd == 0 || node_free(l, n) < g)
        return false;
    if (g > led_domain_size(l, first)) {
        unsigned size = led_domain_size(l, first);
        unsigned want = size ? (g + size - 1) / size : 0;
        uint64_t m = 0;
        for (size_t k = 0; k < nd && k < 64 && want > 0; k++) {
            if (dom_free(l, first + k) == size && size > 0) {
                m |= (uint64_t)1 << k;
                want--;
            }
        }
        if (want > 0 || m == 0)
            return false;
        *mask = m;
        return true;
    }
    for (size_t k = 0; k < nd && k < 64; k++) {
        unsigned f = dom_free(l, first + k);
        if (only != TOPO_NONE && first + k != only)
            continue;
        if (f >= need && (best == TOPO_NONE || f < best_free)) {
            best = k;
            best_free = f;
        }
    }
    if (best == TOPO_NONE)
        return false;
    *mask = (uint64_t)1 << best;
    return true;
}

/* A later member on node n without a reserved place: plain capacity, other reservations held;
 * with TP mates on this node, in their domain. */
static bool member_fits(const struct ctx *x, size_t n, bool multi)
{
    uint64_t m;
    unsigned need = x->ppu > 1 && x->mate_domain == TOPO_NONE ? x->e.tp : x->e.accel_per_pod;

    if (multi)
        return node_free(x->l, n) >= x->e.accel_per_pod;
    return led_pick_innode(x->l, n, x->e.accel_per_pod, need,
                           x->mate_node != TOPO_NONE ? x->mate_domain : TOPO_NONE, &m);
}

/* Verdict for node n under x; fills *rc with the reason code when not POL_FIT. */
enum pol_verdict led_judge(struct ctx *x, size_t n, struct reason_code *why)
{
    const struct pol_ledger *l = x->l;
    bool multi;
    size_t dom;
    unsigned size;

    why->kind = R_NONE;
    if (l->n_unsched[n]) {
        why->kind = R_UNSCHED;
        return POL_UNRESOLVABLE;
    }
    if (!x->wl->has_intent || x->e.preferred)
        return POL_FIT;
    if (x->invalid) {
        why->kind = R_INVALID;
        return POL_UNRESOLVABLE;
    }
    if (x->res_id != -1 && l->n_res[n] >= 0 && l->n_res[n] != x->res_id) {
        why->kind = R_RESOURCE;
        return POL_UNRESOLVABLE;
    }
    /* rule 2: the node's domain cannot hold this pod's TP group, or the node the pod */
    dom = led_node_domain(l, n);
    multi = l->n_multi[n];
    size = led_domain_size(l, dom);
    if (l->n_alloc[n] < x->e.accel_per_pod) {
        *why = (struct reason_code){R_NODE_SMALL, l->n_alloc[n], x->e.accel_per_pod};
        return POL_UNRESOLVABLE;
    }
    if (x->e.tp > size) {
        *why = (struct reason_code){R_DOMAIN_SMALL, size, x->e.tp};
        return POL_UNRESOLVABLE;
    }
    /* a certain group whose traffic crosses nodes needs a NIC for it (never an unknown count) */
    if (led_rdma_cut(x, n)) {
        *why = (struct reason_code){R_NO_RDMA, multi ? size : l->n_alloc[n], 0};
        return POL_UNRESOLVABLE;
    }
    /* rule 3: later members follow the group */
    if (x->e.group != TOPO_NONE) {
        const struct group *g = &l->groups[x->e.group];
        if (g->scope_id != TOPO_NONE && l->scope_of[g->scope][n] != g->scope_id) {
            why->kind = R_ELSEWHERE;
            return POL_UNRESOLVABLE;
        }
        if (x->mate_domain != TOPO_NONE) {
            bool in_dom = x->mate_node != TOPO_NONE ? n == x->mate_node
                                                    : led_node_domain(l, n) == x->mate_domain;
            if (!in_dom) {
                why->kind = R_MATE;
                return POL_UNRESOLVABLE;
            }
        }
        if (led_slot_here(x, n))
            return POL_FIT;
        /* no reserved place here: plain capacity, other reservations held */
        if (member_fits(x, n, multi))
            return POL_FIT;
        *why = (struct reason_code){R_NODE_FREE, node_free(l, n), x->e.accel_per_pod};
        return POL_FAIL;
    }
    /* rule 4: the first member only goes where the whole group fits */
    led_compute_scopes(x);
    {
        size_t s = l->scope_of[x->e.scope][n];
        if (x->sc_static[s] < x->e.n) {
            *why = (struct reason_code){R_SCOPE_STATIC, (unsigned)s, 0};
            return POL_UNRESOLVABLE;
        }
        if (x->sc_dyn[s] < x->e.n) {
            *why = (struct reason_code){R_SCOPE_DYN, (unsigned)s, 0};
            return POL_FAIL;
        }
    }
    /* rule 5: this node must be able to start a TP unit now; eviction could make room */
    if (multi) {
        if (node_free(l, n) >= x->e.accel_per_pod && x->dom_pods[dom] >= x->ppu)
            return POL_FIT;
        if (node_free(l, n) >= x->e.accel_per_pod) {
            *why = (struct reason_code){R_DOM_FREE, (unsigned)dom,
                                        x->dom_pods[dom] * x->e.accel_per_pod};
            return POL_FAIL;
        }
    } else {
        uint64_t m;
        if (led_pick_innode(l, n, x->e.accel_per_pod, x->ppu > 1 ? x->e.tp : x->e.accel_per_pod,
                            TOPO_NONE, &m))
            return POL_FIT;
    }
    if (x->ppu > 1 && !multi)
        *why = (struct reason_code){R_NODE_FREE_TP, node_free(l, n), x->e.tp};
    else
        *why = (struct reason_code){R_NODE_FREE, node_free(l, n), x->e.accel_per_pod};
    return POL_FAIL;
}

void led_reason_text(const struct ctx *x, const struct reason_code *why, char *buf, size_t len)
{
    const struct pol_ledger *l = x->l;
    const char *word = pol_accel_word(x->wl->resource);
    unsigned long units_now, units_static, need;

    switch (why->kind) {
    case R_INVALID:
        snprintf(buf, len, "%s", x->invalid_msg);
        break;
    case R_UNSCHED:
        snprintf(buf, len, "node is cordoned or not ready");
        break;
    case R_RESOURCE:
        snprintf(buf, len, "node has no %s", x->wl->resource);
        break;
    case R_DOMAIN_SMALL:
        snprintf(buf, len, "interconnect domain of %u %s is smaller than tensor-parallel-size %u",
                 why->a, word, why->b);
        break;
    case R_NODE_SMALL:
        snprintf(buf, len, "node has %u %s, pod needs %u", why->a, word, why->b);
        break;
    case R_SCOPE_STATIC:
    case R_SCOPE_DYN:
        units_now = x->sc_dyn[why->a] * x->e.accel_per_pod / x->unit;
        units_static = x->sc_static[why->a] * x->e.accel_per_pod / x->unit;
        need = (unsigned long)x->e.n * x->e.accel_per_pod / x->unit;
        if (why->kind == R_SCOPE_DYN)
            snprintf(buf, len, "%s %s: %lu free %u-%.3s domains, group needs %lu",
                     led_scope_word[x->e.scope], led_scope_name(l, x->e.scope, why->a), units_now,
                     x->unit, word, need);
        else
            snprintf(buf, len, "%s %s: %lu %u-%.3s domains in all, group needs %lu",
                     led_scope_word[x->e.scope], led_scope_name(l, x->e.scope, why->a),
                     units_static, x->unit, word, need);
        break;
    case R_ELSEWHERE: {
        const struct group *g = &l->groups[x->e.group];
        snprintf(buf, len, "group %s is placed in %s %s", g->display, led_scope_word[g->scope],
                 led_scope_name(l, g->scope, g->scope_id));
        break;
    }
    case R_MATE:
        snprintf(buf, len, "the TP group of %s is in domain %s", l->groups[x->e.group].display,
                 topo_cluster_domain_name(l->c, x->mate_domain));
        break;
    case R_NODE_FREE:
        snprintf(buf, len, "node has %u free %s, pod needs %u", why->a, word, why->b);
        break;
    case R_NODE_FREE_TP:
        snprintf(buf, len, "node has %u free %s, TP group needs %u", why->a, word, why->b);
        break;
    case R_DOM_FREE:
        snprintf(buf, len, "domain %s has %u free %s, TP group needs %u",
                 topo_cluster_domain_name(l->c, why->a), why->b, word, x->e.tp);
        break;
    case R_NO_RDMA:
        snprintf(buf, len,
                 "node has no RDMA NIC (topox.io/rdma-nics 0): group %s of %lu %s crosses nodes, "
                 "but only %u fit without leaving this node's interconnect domain",
                 x->wl->display, x->rdma_need, word, why->a);
        break;
    case R_NONE:
        buf[0] = '\0';
        break;
    }
}
