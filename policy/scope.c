/* SPDX-License-Identifier: Apache-2.0 */
/* policy/scope.c - per-scope capacity: how many pods of one shape the racks, blocks and zones
 * take now and when empty, computed in one pass over nodes and domains, and the caller-owned memo
 * (struct pol_scope_memo) that keeps it while the ledger is unchanged; the scope names, and
 * pol_gang_shortfall for the planner. */
#include "policy/policy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/ledger_int.h"

const char *const led_scope_word[NSCOPE] = {"rack", "block", "zone"};

const char *led_scope_name(const struct pol_ledger *l, enum pol_scope k, size_t sid)
{
    size_t nb = topo_cluster_block_count(l->c), nz = topo_cluster_zone_count(l->c);

    if (k == POL_SCOPE_BLOCK)
        return sid < nb ? topo_cluster_block_name(l->c, sid)
                        : topo_cluster_rack_name(l->c, sid - nb);
    if (k == POL_SCOPE_ZONE)
        return sid < nz ? topo_cluster_zone_name(l->c, sid)
                        : topo_cluster_rack_name(l->c, sid - nz);
    return topo_cluster_rack_name(l->c, sid);
}

/* See policy.h. The arrays grow to the largest ledger the memo meets. */
struct pol_scope_memo {
    const struct pol_ledger *l;
    unsigned long gen;
    bool valid;
    enum pol_scope scope;
    unsigned accel_per_pod, tp, ppu;
    unsigned long rdma_cut;   /* ctx.rdma_need when it is hard, else 0: which nodes were left out */
    size_t nscopes, ndomains; /* entries the arrays hold */
    unsigned long *sc_dyn, *sc_static, *sc_free;
    unsigned *dom_pods;
};

struct pol_scope_memo *pol_scope_memo_new(void)
{
    return calloc(1, sizeof(struct pol_scope_memo));
}

void pol_scope_memo_forget(struct pol_scope_memo *m)
{
    if (m) {
        m->valid = false;
        m->l = NULL;
    }
}

void pol_scope_memo_free(struct pol_scope_memo *m)
{
    if (!m)
        return;
    free(m->sc_dyn);
    free(m->sc_static);
    free(m->sc_free);
    free(m->dom_pods);
    free(m);
}

/* Pods placeable on the in-node domains of node n (free: now, else empty), best case. */
static unsigned long node_pods_innode(const struct ctx *x, size_t n, bool now)
{
    const struct pol_ledger *l = x->l;
    size_t nd, first = led_node_domains(l, n, &nd);
    unsigned long pods = 0, cap;
    unsigned whole = 0;

    for (size_t k = 0; k < nd; k++) {
        unsigned size = led_domain_size(l, first + k);
        unsigned f = now ? dom_free(l, first + k) : size;
        if (x->e.accel_per_pod > size) {
            whole += (f == size && size > 0);
            continue;
        }
        if (x->ppu > 1)
            pods += (unsigned long)(f / x->e.tp) * x->ppu;
        else
            pods += f / x->e.accel_per_pod;
    }
    if (whole && nd > 0) {
        unsigned size = led_domain_size(l, first);
        unsigned need = size ? (x->e.accel_per_pod + size - 1) / size : 0;
        if (need)
            pods += whole / need;
    }
    cap = (now ? node_free(l, n) : l->n_alloc[n]) / x->e.accel_per_pod;
    return pods < cap ? pods : cap;
}

static unsigned long rdma_cut_of(const struct ctx *x)
{
    return x->rdma_hard ? x->rdma_need : 0;
}

/* The memo's scopes into x, when it holds x's shape for this ledger at its current generation. */
static bool memo_take(const struct ctx *x)
{
    const struct pol_scope_memo *m = x->memo;
    const struct pol_ledger *l = x->l;
    size_t ns = l->nscopes[x->e.scope];

    if (!m || !m->valid || m->l != l || m->gen != l->gen || m->scope != x->e.scope ||
        m->accel_per_pod != x->e.accel_per_pod || m->tp != x->e.tp || m->ppu != x->ppu ||
        m->rdma_cut != rdma_cut_of(x))
        return false;
    memcpy(x->sc_dyn, m->sc_dyn, ns * sizeof(*x->sc_dyn));
    memcpy(x->sc_static, m->sc_static, ns * sizeof(*x->sc_static));
    memcpy(x->sc_free, m->sc_free, ns * sizeof(*x->sc_free));
    if (l->any_multi)
        memcpy(x->dom_pods, m->dom_pods, l->ndomains * sizeof(*x->dom_pods));
    return true;
}

static bool grow_ul(unsigned long **a, size_t n)
{
    unsigned long *p = realloc(*a, n * sizeof(**a));

    if (!p)
        return false;
    *a = p;
    return true;
}

/* x's scopes into the memo (it is left invalid when its arrays cannot grow). */
static void memo_keep(const struct ctx *x)
{
    struct pol_scope_memo *m = x->memo;
    const struct pol_ledger *l = x->l;
    size_t ns = l->nscopes[x->e.scope];

    if (!m)
        return;
    m->valid = false;
    if (ns > m->nscopes) {
        if (!grow_ul(&m->sc_dyn, ns) || !grow_ul(&m->sc_static, ns) || !grow_ul(&m->sc_free, ns))
            return;
        m->nscopes = ns;
    }
    if (l->any_multi && l->ndomains > m->ndomains) {
        unsigned *p = realloc(m->dom_pods, l->ndomains * sizeof(*p));

        if (!p)
            return;
        m->dom_pods = p;
        m->ndomains = l->ndomains;
    }
    memcpy(m->sc_dyn, x->sc_dyn, ns * sizeof(*x->sc_dyn));
    memcpy(m->sc_static, x->sc_static, ns * sizeof(*x->sc_static));
    memcpy(m->sc_free, x->sc_free, ns * sizeof(*x->sc_free));
    if (l->any_multi)
        memcpy(m->dom_pods, x->dom_pods, l->ndomains * sizeof(*x->dom_pods));
    m->l = l;
    m->gen = l->gen;
    m->scope = x->e.scope;
    m->accel_per_pod = x->e.accel_per_pod;
    m->tp = x->e.tp;
    m->ppu = x->ppu;
    m->rdma_cut = rdma_cut_of(x);
    m->valid = true;
}

/* Pods placeable per scope now and on an empty cluster, in one pass over nodes and domains (or
 * from the memo, when the ledger has not changed since the same shape was computed). Nodes the
 * RDMA rule keeps out (led_rdma_cut) hold none of the group. */
void led_compute_scopes(struct ctx *x)
{
    const struct pol_ledger *l = x->l;
    const size_t *sof = l->scope_of[x->e.scope];

    if (x->scopes_done)
        return;
    x->scopes_done = true;
    if (memo_take(x))
        return;
    for (size_t n = 0; n < l->nnodes; n++) {
        size_t s = sof[n];
        if (l->n_unsched[n] || led_rdma_cut(x, n))
            continue;
        x->sc_free[s] += node_free(l, n);
        if (!node_multinode(l, n)) {
            x->sc_dyn[s] += node_pods_innode(x, n, true);
            x->sc_static[s] += node_pods_innode(x, n, false);
        } else {
            size_t d = led_node_domain(l, n);
            x->dom_pods[d] += node_free(l, n) / x->e.accel_per_pod;
        }
    }
    for (size_t d = 0; l->any_multi && d < l->ndomains; d++) {
        size_t nn;
        const size_t *nodes;
        unsigned long stat = 0;
        if (!topo_cluster_domain_is_multinode(l->c, d))
            continue;
        nodes = topo_cluster_domain_nodes(l->c, d, &nn);
        for (size_t k = 0; k < nn; k++) {
            if (!l->n_unsched[nodes[k]] && !led_rdma_cut(x, nodes[k]))
                stat += l->n_alloc[nodes[k]] / x->e.accel_per_pod;
        }
        if (nn == 0)
            continue;
        x->sc_dyn[sof[nodes[0]]] += x->dom_pods[d] / x->ppu * x->ppu;
        x->sc_static[sof[nodes[0]]] += stat / x->ppu * x->ppu;
    }
    memo_keep(x);
}

enum tpx_code pol_gang_shortfall(const struct pol_ledger *l, const struct pol_workload *wl,
                                 char *buf, size_t len, struct tpx_err *err)
{
    struct ctx x;
    size_t best = TOPO_NONE, ns;
    const char *word;
    unsigned long need;

    buf[0] = '\0';
    if (led_ctx_init(&x, l, wl, err) != TPX_OK)
        return err->code;
    if (!wl->has_intent) {
        led_ctx_release(&x);
        return TPX_OK;
    }
    if (x.invalid) {
        snprintf(buf, len, "%s", x.invalid_msg);
        led_ctx_release(&x);
        return TPX_OK;
    }
    led_compute_scopes(&x);
    ns = l->nscopes[x.e.scope];
    for (size_t s = 0; s < ns; s++) {
        if (x.sc_dyn[s] >= x.e.n) {
            led_ctx_release(&x);
            return TPX_OK;
        }
        if (best == TOPO_NONE || x.sc_dyn[s] > x.sc_dyn[best])
            best = s;
    }
    word = pol_accel_word(wl->resource);
    need = (unsigned long)x.e.n * x.e.accel_per_pod / x.unit;
    if (best == TOPO_NONE)
        snprintf(buf, len, "no %s has %lu free %u-%.3s domain%s (the cluster has none)",
                 led_scope_word[x.e.scope], need, x.unit, word, need == 1 ? "" : "s");
    else
        snprintf(buf, len, "no %s has %lu free %u-%.3s domain%s (best: %s %s, %lu)",
                 led_scope_word[x.e.scope], need, x.unit, word, need == 1 ? "" : "s",
                 led_scope_word[x.e.scope], led_scope_name(l, x.e.scope, best),
                 x.sc_dyn[best] * x.e.accel_per_pod / x.unit);
    for (size_t n = 0; n < l->nnodes; n++) {
        if (led_rdma_cut(&x, n)) {
            size_t used = strlen(buf);
            snprintf(buf + used, len - used,
                     "; nodes with topox.io/rdma-nics 0 are left out: the group's traffic "
                     "crosses nodes");
            break;
        }
    }
    led_ctx_release(&x);
    return TPX_OK;
}
