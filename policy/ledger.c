/* SPDX-License-Identifier: Apache-2.0 */
/* policy/ledger.c - capacity in use, group placements and reservations over one sealed cluster:
 * the bookkeeping, the group and pod life cycle, expiry, summaries and rebase. The pieces that read
 * and change it (scope.c, judge.c, filter.c, score.c, reserve.c, book.c) share its records through
 * policy/ledger_int.h (DESIGN.md, Placement rules). Pure C: never includes HTTP, JSON, YAML, curl,
 * hwloc or log headers. Not locked: the caller serialises access to one ledger. Free counts per
 * domain, node and rack are kept up to date on every change, and every change is told to the
 * placement index (led_touch, policy/index.c), so a filter with a scope memo costs the racks
 * changed since its last call plus O(1) per candidate. */
#include "policy/policy.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "policy/ledger_int.h"

/* --- the two indexes: group key -> group, pod UID -> pod ---------------------------------------
 * common/map's seeded map (keys borrowed from the records), so UIDs and group keys a tenant picks
 * cannot be made to collide. */

size_t led_group_find(const struct pol_ledger *l, const char *key)
{
    return key && key[0] ? tpx_map_index(&l->gmap, key, TOPO_NONE) : TOPO_NONE;
}

size_t led_pod_find(const struct pol_ledger *l, const char *uid)
{
    return tpx_map_index(&l->pmap, uid, TOPO_NONE);
}

/* --- capacity -----------------------------------------------------------------------------------
 */

unsigned pol_ledger_node_free(const struct pol_ledger *l, size_t node)
{
    return node < l->nnodes ? node_free(l, node) : 0;
}

bool pol_ledger_node_serves(const struct pol_ledger *l, size_t node, const char *resource)
{
    const struct topo_node_info *in;

    if (!resource || !resource[0])
        return true;
    if (node >= l->nnodes)
        return false;
    in = topo_cluster_node(l->c, node);
    return in->resource && strcmp(in->resource, resource) == 0;
}

void pol_ledger_free_whole(const struct pol_ledger *l, unsigned *free_all, unsigned *free_whole)
{
    unsigned all = 0, whole = 0;

    for (size_t n = 0; n < l->nnodes; n++)
        all += l->n_unsched[n] ? 0 : node_free(l, n);
    for (size_t d = 0; d < l->ndomains; d++) {
        unsigned size = led_domain_size(l, d);
        if (size > 0 && dom_free(l, d) == size)
            whole += size;
    }
    *free_all = all;
    *free_whole = whole < all ? whole : all;
}

void pol_ledger_set_budgets(struct pol_ledger *l, unsigned long per_namespace, unsigned long total)
{
    l->budget_ns = per_namespace;
    l->budget_all = total;
}

void pol_ledger_set_pack(struct pol_ledger *l, bool on)
{
    l->pack = on ? LED_PACK_RANK : 0;
}

void pol_ledger_set_pack_term(struct pol_ledger *l, bool on)
{
    l->pack = on ? LED_PACK_TERM : 0;
}

unsigned long pol_ledger_budget_refusals(const struct pol_ledger *l)
{
    return l->budget_refused;
}

/* Accelerators held for the groups whose key has the namespace of key (up to its first '/'). */
static unsigned long ns_held(const struct pol_ledger *l, const char *key)
{
    size_t len = strcspn(key, "/");
    unsigned long sum = 0;

    for (size_t i = 0; i < l->ngroups; i++) {
        const struct group *g = &l->groups[i];
        if (!g->live || strncmp(g->key, key, len) != 0 || g->key[len] != key[len])
            continue;
        for (unsigned k = 0; k < g->nslots; k++)
            sum += g->slots[k].reserved ? g->accel_per_pod : 0;
    }
    return sum;
}

bool led_budget_allows(struct pol_ledger *l, const struct group *g)
{
    bool ok = (!l->budget_all || l->held + g->accel_per_pod <= l->budget_all) &&
              (!l->budget_ns || ns_held(l, g->key) + g->accel_per_pod <= l->budget_ns);

    if (!ok)
        l->budget_refused++;
    return ok;
}

const struct topo_cluster *pol_ledger_cluster(const struct pol_ledger *l)
{
    return l->c;
}

/* Every change of use or holds goes through here: the ledger's change count, the node in the ring
 * of changes, and the change count of each scope the change can move (policy/index.c): the node's
 * own, and, for a node of a multi-node domain, those of every node of the domain (their pods
 * placeable, their fit and their EP bonus read the whole domain). */
void led_touch(struct pol_ledger *l, size_t n)
{
    l->gen++;
    l->changed[l->gen % LED_CHANGE_RING] = n;
    for (int k = 0; k < NSCOPE; k++)
        l->scope_gen[k][l->scope_of[k][n]]++;
    if (l->n_multi[n]) {
        size_t nn;
        const size_t *nodes = topo_cluster_domain_nodes(l->c, l->n_dfirst[n], &nn);
        for (size_t q = 0; q < nn; q++) {
            for (int k = 0; k < NSCOPE; k++)
                l->scope_gen[k][l->scope_of[k][nodes[q]]]++;
        }
    }
}

/* Add (sign +1) or remove (-1) accel on node at w, as use or as reservation. In-node domains in
 * the mask each take up to their size, in mask order. */
void led_account(struct pol_ledger *l, const struct where *w, unsigned accel, int sign, bool resv)
{
    unsigned *dom = resv ? l->dom_resv : l->dom_used;
    unsigned *nod = resv ? l->node_resv : l->node_used;
    unsigned *rck = resv ? l->rack_resv : l->rack_used;
    size_t rack = topo_cluster_node_rack(l->c, w->node), first, nd;

    led_touch(l, w->node);
    if (resv)
        l->held = sign > 0 ? l->held + accel : (l->held > accel ? l->held - accel : 0);
    first = led_node_domains(l, w->node, &nd);
    if (sign > 0) {
        nod[w->node] += accel;
        rck[rack] += accel;
    } else {
        nod[w->node] = sat_sub(nod[w->node], accel);
        rck[rack] = sat_sub(rck[rack], accel);
    }
    if (w->dmask == 0) {
        dom[first] = sign > 0 ? dom[first] + accel : sat_sub(dom[first], accel);
        return;
    }
    for (size_t k = 0; k < nd && k < 64 && accel > 0; k++) {
        unsigned size, part;
        if (!(w->dmask & ((uint64_t)1 << k)))
            continue;
        size = led_domain_size(l, first + k);
        part = accel < size ? accel : size;
        dom[first + k] = sign > 0 ? dom[first + k] + part : sat_sub(dom[first + k], part);
        accel -= part;
    }
}

/* Use not placed by us: fill in-node domains in order (removal from the last used one). The
 * magnitude is taken in unsigned 64-bit arithmetic (no negation of a signed value) and clamped to
 * what the counters can hold, so no delta wraps them or frees what another pod uses. */
static void account_external(struct pol_ledger *l, size_t node, int64_t accel)
{
    size_t nd, first = led_node_domains(l, node, &nd);
    size_t rack = topo_cluster_node_rack(l->c, node);
    uint64_t mag = accel < 0 ? UINT64_C(0) - (uint64_t)accel : (uint64_t)accel;
    unsigned left = mag > UINT_MAX ? UINT_MAX : (unsigned)mag;

    led_touch(l, node);
    if (accel >= 0) {
        l->node_used[node] = tpx_sat_add(l->node_used[node], left);
        l->rack_used[rack] = tpx_sat_add(l->rack_used[rack], left);
        if (node_multinode(l, node)) {
            l->dom_used[first] = tpx_sat_add(l->dom_used[first], left);
            return;
        }
        for (size_t k = 0; k < nd && left > 0; k++) {
            unsigned f = dom_free(l, first + k);
            unsigned part = left < f ? left : f;
            if (k == nd - 1)
                part = left;
            l->dom_used[first + k] = tpx_sat_add(l->dom_used[first + k], part);
            left -= part;
        }
        return;
    }
    if (left > l->node_used[node])
        left = l->node_used[node];
    l->node_used[node] -= left;
    l->rack_used[rack] = sat_sub(l->rack_used[rack], left);
    if (node_multinode(l, node)) {
        l->dom_used[first] = sat_sub(l->dom_used[first], left);
        return;
    }
    for (size_t k = nd; k-- > 0 && left > 0;) {
        unsigned part = left < l->dom_used[first + k] ? left : l->dom_used[first + k];
        l->dom_used[first + k] -= part;
        left -= part;
    }
}

/* --- life cycle ---------------------------------------------------------------------------------
 */

/* Each scope's nodes, in index order (a counting sort by scope): the index's lists. */
static void index_scope_lists(struct pol_ledger *l)
{
    for (int k = 0; k < NSCOPE; k++) {
        size_t *start = l->scope_start[k], ns = l->nscopes[k];
        for (size_t i = 0; i < l->nnodes; i++)
            start[l->scope_of[k][i] + 2]++;
        for (size_t s = 0; s < ns; s++)
            start[s + 2] += start[s + 1];
        for (size_t i = 0; i < l->nnodes; i++)
            l->scope_nodes[k][start[l->scope_of[k][i] + 1]++] = i;
    }
}

struct pol_ledger *pol_ledger_new(const struct topo_cluster *c, struct tpx_err *err)
{
    struct pol_ledger *l = calloc(1, sizeof(*l));
    size_t nn = topo_cluster_node_count(c), nd = topo_cluster_domain_count(c);
    size_t nr = topo_cluster_rack_count(c), nb = topo_cluster_block_count(c);
    size_t nz = topo_cluster_zone_count(c);

    if (!l)
        goto oom;
    l->c = c;
    l->nnodes = nn;
    l->ndomains = nd;
    l->nracks = nr;
    l->dom_used = calloc(nd + 1, sizeof(unsigned));
    l->dom_resv = calloc(nd + 1, sizeof(unsigned));
    l->node_used = calloc(nn + 1, sizeof(unsigned));
    l->node_resv = calloc(nn + 1, sizeof(unsigned));
    l->rack_used = calloc(nr + 1, sizeof(unsigned));
    l->rack_resv = calloc(nr + 1, sizeof(unsigned));
    l->nscopes[POL_SCOPE_RACK] = nr;
    l->nscopes[POL_SCOPE_BLOCK] = nb + nr;
    l->nscopes[POL_SCOPE_ZONE] = nz + nr;
    for (int k = 0; k < NSCOPE; k++) {
        l->scope_of[k] = calloc(nn + 1, sizeof(size_t));
        l->scope_cap[k] = calloc(l->nscopes[k] + 1, sizeof(unsigned long));
        l->scope_start[k] = calloc(l->nscopes[k] + 2, sizeof(size_t));
        l->scope_nodes[k] = calloc(nn + 1, sizeof(size_t));
        l->scope_gen[k] = calloc(l->nscopes[k] + 1, sizeof(unsigned long));
        if (!l->scope_of[k] || !l->scope_cap[k] || !l->scope_start[k] || !l->scope_nodes[k] ||
            !l->scope_gen[k])
            goto oom;
    }
    l->n_alloc = calloc(nn + 1, sizeof(unsigned));
    l->n_dfirst = calloc(nn + 1, sizeof(size_t));
    l->n_dcount = calloc(nn + 1, sizeof(unsigned));
    l->n_multi = calloc(nn + 1, sizeof(bool));
    l->n_unsched = calloc(nn + 1, sizeof(bool));
    l->n_nordma = calloc(nn + 1, sizeof(bool));
    l->n_res = calloc(nn + 1, sizeof(int));
    l->d_size = calloc(nd + 1, sizeof(unsigned));
    if (!l->dom_used || !l->dom_resv || !l->node_used || !l->node_resv || !l->rack_used ||
        !l->rack_resv || !l->n_alloc || !l->n_dfirst || !l->n_dcount || !l->n_multi ||
        !l->n_unsched || !l->n_nordma || !l->n_res || !l->d_size)
        goto oom;
    for (size_t d = 0; d < nd; d++)
        l->d_size[d] = topo_cluster_domain_size(c, d);
    for (size_t i = 0; i < nn; i++) {
        const struct topo_node_info *in = topo_cluster_node(c, i);
        size_t cnt;
        l->n_alloc[i] = in->accel_alloc;
        l->n_dfirst[i] = topo_cluster_node_domains(c, i, &cnt);
        l->n_dcount[i] = (unsigned)cnt;
        l->n_multi[i] = topo_cluster_domain_is_multinode(c, l->n_dfirst[i]);
        l->any_multi = l->any_multi || l->n_multi[i];
        l->n_unsched[i] = in->unschedulable;
        l->n_nordma[i] = in->rdma_known && in->rdma_nics == 0;
        l->n_res[i] = -1;
        for (size_t r = 0; in->resource && r < l->nres && l->n_res[i] < 0; r++) {
            if (strcmp(l->res[r], in->resource) == 0)
                l->n_res[i] = (int)r;
        }
        if (in->resource && l->n_res[i] < 0 && l->nres < 16) {
            l->res[l->nres] = in->resource;
            l->n_res[i] = (int)l->nres++;
        }
    }
    for (size_t i = 0; i < nn; i++) {
        const struct topo_node_info *in = topo_cluster_node(c, i);
        size_t r = topo_cluster_node_rack(c, i), b = topo_cluster_node_block(c, i);
        size_t z = topo_cluster_node_zone(c, i);
        l->scope_of[POL_SCOPE_RACK][i] = r;
        l->scope_of[POL_SCOPE_BLOCK][i] = b != TOPO_NONE ? b : nb + r;
        l->scope_of[POL_SCOPE_ZONE][i] = z != TOPO_NONE ? z : nz + r;
        for (int k = 0; k < NSCOPE; k++)
            l->scope_cap[k][l->scope_of[k][i]] += in->accel_alloc;
        if (in->accel_alloc > l->biggest_alloc)
            l->biggest_alloc = in->accel_alloc;
        l->total_alloc += in->accel_alloc;
    }
    index_scope_lists(l);
    {
        enum topo_fabric fab;
        bool multi;
        l->largest_domain = topo_cluster_largest_domain(c, &fab, &multi);
    }
    for (size_t i = 0; i < nn; i++) {
        const struct topo_node_info *in = topo_cluster_node(c, i);
        if (in->accel_used)
            account_external(l, i, (int64_t)in->accel_used);
    }
    for (int k = 0; k < NSCOPE; k++) {
        for (size_t s = 0; s < l->nscopes[k]; s++) {
            if (l->scope_cap[k][s] > l->max_scope_cap[k])
                l->max_scope_cap[k] =
                    l->scope_cap[k][s] > UINT_MAX ? UINT_MAX : (unsigned)l->scope_cap[k][s];
        }
    }
    return l;
oom:
    pol_ledger_free(l);
    tpx_err_set(err, TPX_ENOMEM, "ledger: out of memory");
    return NULL;
}

static void group_release(struct group *g)
{
    free(g->slots);
    g->slots = NULL;
    g->nslots = 0;
    g->aslots = 0;
    g->live = false;
}

void pol_ledger_free(struct pol_ledger *l)
{
    if (!l)
        return;
    free(l->dom_used);
    free(l->dom_resv);
    free(l->node_used);
    free(l->node_resv);
    free(l->rack_used);
    free(l->rack_resv);
    free(l->n_alloc);
    free(l->n_dfirst);
    free(l->n_dcount);
    free(l->n_multi);
    free(l->n_unsched);
    free(l->n_nordma);
    free(l->n_res);
    free(l->d_size);
    for (int k = 0; k < NSCOPE; k++) {
        free(l->scope_of[k]);
        free(l->scope_cap[k]);
        free(l->scope_start[k]);
        free(l->scope_nodes[k]);
        free(l->scope_gen[k]);
    }
    for (size_t i = 0; i < l->ngroups; i++)
        group_release(&l->groups[i]);
    free(l->groups);
    for (size_t i = 0; i < l->npods; i++) {
        free(l->pods[i].uid);
        free(l->pods[i].name);
    }
    free(l->pods);
    free(l->free_pods);
    tpx_map_release(&l->gmap);
    tpx_map_release(&l->pmap);
    free(l);
}

enum tpx_code pol_ledger_use(struct pol_ledger *l, size_t node, int64_t accel, struct tpx_err *err)
{
    if (node >= l->nnodes)
        return tpx_err_set(err, TPX_EINVAL, "ledger: bad node index %zu", node);
    account_external(l, node, accel);
    if (accel > 0)
        led_displace(l, node); /* the pod is there: holds it overbooks move elsewhere */
    return TPX_OK;
}

/* --- groups and pods ----------------------------------------------------------------------------
 */

const struct slot led_empty_slot = {{TOPO_NONE, 0}, false, false};

struct slot *led_slot_grow(struct group *g, unsigned k)
{
    if (k >= g->n)
        return NULL;
    if (k >= g->nslots) {
        if (!TPX_GROW(g->slots, g->aslots, (size_t)k + 1))
            return NULL;
        while (g->nslots <= k)
            g->slots[g->nslots++] = led_empty_slot;
    }
    return &g->slots[k];
}

void led_release_slot(struct pol_ledger *l, struct group *g, struct slot *s)
{
    if (s->reserved && s->at.node != TOPO_NONE)
        led_account(l, &s->at, g->accel_per_pod, -1, true);
    s->reserved = false;
}

void led_drop_group(struct pol_ledger *l, size_t gi)
{
    struct group *g = &l->groups[gi];

    for (unsigned k = 0; k < g->nslots; k++)
        led_release_slot(l, g, &g->slots[k]);
    tpx_map_del(&l->gmap, g->key, NULL);
    group_release(g);
    if (gi < l->group_hint)
        l->group_hint = gi;
}

size_t led_new_group(struct pol_ledger *l, const char *key, const char *display, unsigned n,
                     unsigned need)
{
    size_t gi = TOPO_NONE;
    struct group *g;

    /* the lowest free record, as a scan from 0 finds it: every record below the hint is live */
    for (size_t i = l->group_hint; i < l->ngroups; i++) {
        if (!l->groups[i].live) {
            gi = i;
            break;
        }
    }
    if (gi == TOPO_NONE) {
        if (l->ngroups == l->groups_cap) {
            size_t ncap = l->groups_cap ? l->groups_cap * 2 : 16;
            struct group *ng = realloc(l->groups, ncap * sizeof(*ng));
            if (!ng)
                return TOPO_NONE;
            l->groups = ng;
            l->groups_cap = ncap;
            /* the map borrows keys from the records, which just moved */
            tpx_map_clear(&l->gmap);
            for (size_t i = 0; i < l->ngroups; i++) {
                if (l->groups[i].live && !tpx_map_put_index(&l->gmap, l->groups[i].key, i))
                    return TOPO_NONE;
            }
        }
        gi = l->ngroups++;
    }
    g = &l->groups[gi];
    memset(g, 0, sizeof(*g));
    g->n = n;
    if (need && !led_slot_grow(g, need - 1)) {
        group_release(g);
        return TOPO_NONE;
    }
    snprintf(g->key, sizeof(g->key), "%s", key);
    snprintf(g->display, sizeof(g->display), "%s", display);
    g->live = true;
    g->rack = TOPO_NONE;
    g->scope_id = TOPO_NONE;
    if (!tpx_map_put_index(&l->gmap, g->key, gi)) {
        group_release(g);
        return TOPO_NONE;
    }
    l->group_hint = gi + 1; /* the scan passed only live records below gi */
    return gi;
}

size_t led_new_pod(struct pol_ledger *l, const char *uid, const char *name)
{
    size_t pi;
    struct pod *p;

    if (l->nfree_pods) {
        pi = l->free_pods[--l->nfree_pods];
    } else {
        if (l->npods == l->pods_cap) {
            size_t ncap = l->pods_cap ? l->pods_cap * 2 : 64;
            struct pod *np = realloc(l->pods, ncap * sizeof(*np));
            size_t *nf = realloc(l->free_pods, ncap * sizeof(*nf));
            if (np)
                l->pods = np;
            if (nf)
                l->free_pods = nf;
            if (!np || !nf)
                return TOPO_NONE;
            l->pods_cap = ncap;
        }
        pi = l->npods++;
        l->pods[pi].uid = NULL;
        l->pods[pi].name = NULL;
    }
    p = &l->pods[pi];
    free(p->uid);
    free(p->name);
    memset(p, 0, sizeof(*p));
    p->uid = strdup(uid);
    p->name = strdup(name ? name : uid);
    p->group = TOPO_NONE;
    p->slot = NO_SLOT;
    if (!p->uid || !p->name || !tpx_map_put_index(&l->pmap, p->uid, pi)) {
        free(p->uid);
        free(p->name);
        p->uid = p->name = NULL;
        l->free_pods[l->nfree_pods++] = pi;
        return TOPO_NONE;
    }
    p->live = true;
    return pi;
}

void led_kill_pod(struct pol_ledger *l, size_t pi)
{
    struct pod *p = &l->pods[pi];

    tpx_map_del(&l->pmap, p->uid, NULL);
    p->live = false;
    l->free_pods[l->nfree_pods++] = pi;
}

bool pol_ledger_forget_pod(struct pol_ledger *l, const char *uid)
{
    size_t pi = tpx_map_index(&l->pmap, uid, TOPO_NONE);
    struct pod *p;

    if (pi == TOPO_NONE)
        return false;
    p = &l->pods[pi];
    led_account(l, &p->at, p->accel, -1, false);
    if (p->group != TOPO_NONE) {
        struct group *g = &l->groups[p->group];
        if (p->slot != NO_SLOT) {
            struct slot *s = &g->slots[p->slot];
            s->filled = false;
            /* hold the place for the replacement (LWS recreates pods) until the TTL */
            s->reserved = true;
            led_account(l, &s->at, g->accel_per_pod, +1, true);
        }
        if (g->placed)
            g->placed--;
        if (g->placed == 0)
            led_drop_group(l, p->group);
    }
    led_kill_pod(l, pi);
    return true;
}

size_t pol_ledger_expire(struct pol_ledger *l, time_t now)
{
    size_t released = 0;

    for (size_t gi = 0; gi < l->ngroups; gi++) {
        struct group *g = &l->groups[gi];
        bool any = false;

        if (!g->live)
            continue;
        if (g->expires <= now) {
            for (unsigned k = 0; k < g->nslots; k++) {
                any = any || g->slots[k].reserved;
                led_release_slot(l, g, &g->slots[k]);
            }
        }
        released += any;
        /* a group held at a filter (pol_gang_hold) has no member bound until its TTL */
        if (g->placed == 0 && (!g->held_early || g->expires <= now))
            led_drop_group(l, gi);
    }
    return released;
}

/* --- summaries ----------------------------------------------------------------------------------
 */

void pol_ledger_racks(const struct pol_ledger *l, struct pol_rack_summary *out)
{
    for (size_t r = 0; r < l->nracks; r++) {
        unsigned cap = topo_cluster_rack_capacity(l->c, r);
        out[r] = (struct pol_rack_summary){
            r, cap, sat_sub(cap, l->rack_used[r] + l->rack_resv[r]), l->rack_resv[r], 0, 0};
    }
    for (size_t d = 0; d < l->ndomains; d++) {
        size_t nn;
        const size_t *nodes = topo_cluster_domain_nodes(l->c, d, &nn);
        size_t r;
        unsigned f;
        if (nn == 0)
            continue;
        r = topo_cluster_node_rack(l->c, nodes[0]);
        if (topo_cluster_domain_is_multinode(l->c, d)) {
            f = 0;
            for (size_t k = 0; k < nn; k++)
                f += node_free(l, nodes[k]);
        } else {
            f = dom_free(l, d);
        }
        if (f > out[r].largest_tp_now)
            out[r].largest_tp_now = f;
        if (l->dom_used[d] + l->dom_resv[d] == 0 && led_domain_size(l, d) > 0)
            out[r].free_domains++;
    }
}

size_t pol_ledger_group_count(const struct pol_ledger *l)
{
    size_t n = 0;

    for (size_t i = 0; i < l->ngroups; i++)
        n += l->groups[i].live;
    return n;
}

void pol_ledger_groups(const struct pol_ledger *l, struct pol_group_summary *out)
{
    size_t n = 0;

    for (size_t i = 0; i < l->ngroups; i++) {
        const struct group *g = &l->groups[i];
        unsigned resv = 0;
        if (!g->live)
            continue;
        for (unsigned k = 0; k < g->nslots; k++)
            resv += g->slots[k].reserved ? g->accel_per_pod : 0;
        out[n++] = (struct pol_group_summary){
            g->key, g->display, g->rack, g->placed, g->n, resv, resv ? g->expires : 0, g->nslots};
    }
}

size_t pol_group_holds(const struct pol_ledger *l, const char *group, struct pol_hold *out,
                       size_t max)
{
    size_t gi = led_group_find(l, group);
    const struct group *g;
    size_t n = 0;

    if (gi == TOPO_NONE)
        return 0;
    g = &l->groups[gi];
    for (unsigned k = 0; k < g->nslots; k++) {
        const struct slot *s = &g->slots[k];

        if (!s->reserved || s->filled || s->at.node == TOPO_NONE)
            continue;
        if (n < max)
            out[n] = (struct pol_hold){k, s->at.node};
        n++;
    }
    return n;
}

bool pol_group_held_early(const struct pol_ledger *l, const char *group)
{
    size_t gi = led_group_find(l, group);

    return gi != TOPO_NONE && l->groups[gi].held_early && l->groups[gi].placed == 0;
}

void pol_group_set_waiting(struct pol_ledger *l, const char *group, bool waiting)
{
    size_t gi = led_group_find(l, group);

    if (gi != TOPO_NONE)
        l->groups[gi].waiting = waiting && l->groups[gi].held_early && l->groups[gi].placed == 0;
}

/* --- rebase -------------------------------------------------------------------------------------
 */

static bool map_where(const struct pol_ledger *from, const struct pol_ledger *to,
                      const struct where *a, struct where *b)
{
    size_t nd;

    if (a->node == TOPO_NONE)
        return false;
    b->node = topo_cluster_find(to->c, topo_cluster_node(from->c, a->node)->name);
    if (b->node == TOPO_NONE)
        return false;
    topo_cluster_node_domains(to->c, b->node, &nd);
    b->dmask = node_multinode(to, b->node) ? 0 : a->dmask ? a->dmask : 1;
    if (b->dmask && nd < 64 && (b->dmask >> nd) != 0)
        b->dmask = 1; /* fewer domains now: keep the pod on the first */
    return true;
}

struct pol_ledger *pol_ledger_rebase(const struct pol_ledger *l, const struct topo_cluster *c,
                                     struct tpx_err *err)
{
    struct pol_ledger *n = pol_ledger_new(c, err);

    if (!n)
        return NULL;
    pol_ledger_set_budgets(n, l->budget_ns, l->budget_all);
    n->pack = l->pack;
    n->budget_refused = l->budget_refused;
    for (size_t gi = 0; gi < l->ngroups; gi++) {
        const struct group *og = &l->groups[gi];
        size_t ngi;
        struct group *ng;
        if (!og->live)
            continue;
        ngi = led_new_group(n, og->key, og->display, og->n, og->nslots);
        if (ngi == TOPO_NONE)
            goto oom;
        ng = &n->groups[ngi];
        ng->tp = og->tp;
        ng->pp = og->pp;
        ng->dp = og->dp;
        ng->accel_per_pod = og->accel_per_pod;
        ng->tp_explicit = og->tp_explicit;
        ng->scope = og->scope;
        ng->expires = og->expires;
        ng->held_early = og->held_early;
        ng->waiting = og->waiting;
        ng->kv_role = og->kv_role;
        memcpy(ng->kv_group, og->kv_group, sizeof(ng->kv_group));
        for (unsigned k = 0; k < og->nslots; k++) {
            const struct slot *os = &og->slots[k];
            struct slot *s = &ng->slots[k];
            if (!os->reserved || !map_where(l, n, &os->at, &s->at))
                continue;
            s->reserved = true;
            led_account(n, &s->at, ng->accel_per_pod, +1, true);
            if (ng->held_early && ng->scope_id == TOPO_NONE) { /* no member bound: its holds say */
                ng->scope_id = n->scope_of[ng->scope][s->at.node];
                ng->rack = topo_cluster_node_rack(c, s->at.node);
            }
        }
    }
    for (size_t pi = 0; pi < l->npods; pi++) {
        const struct pod *op = &l->pods[pi];
        struct where w;
        size_t npi;
        struct pod *p;
        if (!op->live || !map_where(l, n, &op->at, &w))
            continue;
        npi = led_new_pod(n, op->uid, op->name);
        if (npi == TOPO_NONE)
            goto oom;
        p = &n->pods[npi];
        p->at = w;
        p->accel = op->accel;
        p->slot = op->slot;
        led_account(n, &w, p->accel, +1, false);
        if (op->group != TOPO_NONE) {
            size_t ngi = tpx_map_index(&n->gmap, l->groups[op->group].key, TOPO_NONE);
            struct group *ng = &n->groups[ngi];
            p->group = ngi;
            ng->placed++;
            if (ng->scope_id == TOPO_NONE) {
                ng->scope_id = n->scope_of[ng->scope][w.node];
                ng->rack = topo_cluster_node_rack(c, w.node);
            }
            if (p->slot != NO_SLOT) {
                ng->slots[p->slot].at = w;
                ng->slots[p->slot].filled = true;
            }
        }
    }
    /* groups whose every member went away with their nodes */
    for (size_t gi = 0; gi < n->ngroups; gi++) {
        if (n->groups[gi].live && n->groups[gi].placed == 0 &&
            (!n->groups[gi].held_early || n->groups[gi].scope_id == TOPO_NONE))
            led_drop_group(n, gi);
    }
    return n;
oom:
    pol_ledger_free(n);
    tpx_err_set(err, TPX_ENOMEM, "ledger: out of memory");
    return NULL;
}
