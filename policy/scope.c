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

/* Pods placeable per scope now and on an empty cluster, in one pass over nodes and domains (or
 * through the memo, which brings up to date only the scopes that changed since it last saw the
 * same shape: policy/index.c). Nodes the RDMA rule keeps out (led_rdma_cut) hold none of the
 * group: the cut reads only the node's own labels and domain, so it stays per scope. */
void led_compute_scopes(struct ctx *x)
{
    if (x->scopes_done)
        return;
    x->scopes_done = true;
    if (x->memo)
        led_memo_refresh(x);
    else
        led_scopes_all(x);
}

/* led_compute_scopes' pass over every node and domain, into x's zeroed arrays. */
void led_scopes_all(struct ctx *x)
{
    const struct pol_ledger *l = x->l;
    const size_t *sof = l->scope_of[x->e.scope];

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
}

/* Pods placeable on multi-node domain d now (x->dom_pods[d]) and on an empty cluster. */
static unsigned long domain_pods(struct ctx *x, size_t d)
{
    const struct pol_ledger *l = x->l;
    size_t nn;
    const size_t *nodes = topo_cluster_domain_nodes(l->c, d, &nn);
    unsigned long stat = 0;
    unsigned now = 0;

    for (size_t k = 0; k < nn; k++) {
        size_t q = nodes[k];
        if (l->n_unsched[q] || led_rdma_cut(x, q))
            continue;
        stat += l->n_alloc[q] / x->e.accel_per_pod;
        if (l->n_multi[q] && l->n_dfirst[q] == d)
            now += node_free(l, q) / x->e.accel_per_pod;
    }
    x->dom_pods[d] = now;
    return stat;
}

/* What led_compute_scopes sums, for the scopes in dirty[] only (their entries zeroed here): the
 * nodes of each, then the multi-node domains whose first node is there, each counted in full
 * (a domain with a node in a dirty scope has its first node's scope dirty too: led_touch). */
void led_scopes_some(struct ctx *x, const size_t *dirty, size_t ndirty)
{
    const struct pol_ledger *l = x->l;
    const size_t *start = l->scope_start[x->e.scope], *list = l->scope_nodes[x->e.scope];

    for (size_t i = 0; i < ndirty; i++) {
        size_t s = dirty[i];
        x->sc_free[s] = x->sc_dyn[s] = x->sc_static[s] = 0;
        for (size_t q = start[s]; q < start[s + 1]; q++) {
            size_t n = list[q];
            if (l->n_multi[n]) {
                size_t nn, d = l->n_dfirst[n];
                const size_t *dn = topo_cluster_domain_nodes(l->c, d, &nn);
                if (nn > 0 && dn[0] == n) {
                    unsigned long stat = domain_pods(x, d);
                    x->sc_dyn[s] += x->dom_pods[d] / x->ppu * x->ppu;
                    x->sc_static[s] += stat / x->ppu * x->ppu;
                }
            }
            if (l->n_unsched[n] || led_rdma_cut(x, n))
                continue;
            x->sc_free[s] += node_free(l, n);
            if (!l->n_multi[n]) {
                x->sc_dyn[s] += node_pods_innode(x, n, true);
                x->sc_static[s] += node_pods_innode(x, n, false);
            }
        }
    }
}

enum tpx_code pol_gang_shortfall(const struct pol_ledger *l, const struct pol_workload *wl,
                                 char *buf, size_t len, struct tpx_err *err)
{
    struct ctx x;
    size_t best = TOPO_NONE, ns;
    const char *word;
    unsigned long need;

    buf[0] = '\0';
    if (led_ctx_init(&x, l, wl, NULL, err) != TPX_OK)
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
