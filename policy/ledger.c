/* SPDX-License-Identifier: Apache-2.0 */
/* policy/ledger.c - capacity in use, group placements and reservations over one sealed cluster,
 * and the per-pod filter, score and commit that read and change it (DESIGN.md, Placement rules).
 * Pure C: never includes HTTP, JSON, YAML, curl, hwloc or log headers. Not locked: the caller
 * serialises access to one ledger. Free counts per domain, node and rack are kept up to date on
 * every change, so a filter call costs O(nodes + domains) with a handful of allocations. */
#include "policy/policy.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NSCOPE 3
#define NO_SLOT (-1)

/* --- string -> index map with tombstones (keys borrowed from the records) ----------------------
 */

static const char tomb_key[] = "";

struct smap {
    const char **keys;
    size_t *vals;
    size_t cap;  /* power of two or 0 */
    size_t used; /* live + tombstones */
};

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ULL;

    while (*s) {
        h ^= (unsigned char)*s++;
        h *= 1099511628211ULL;
    }
    return h;
}

static size_t smap_get(const struct smap *m, const char *key)
{
    if (!m->cap || !key)
        return TOPO_NONE;
    for (size_t j = hash_str(key) & (m->cap - 1);; j = (j + 1) & (m->cap - 1)) {
        if (!m->keys[j])
            return TOPO_NONE;
        if (m->keys[j] != tomb_key && strcmp(m->keys[j], key) == 0)
            return m->vals[j];
    }
}

static bool smap_rehash(struct smap *m, size_t ncap)
{
    const char **keys = calloc(ncap, sizeof(*keys));
    size_t *vals = calloc(ncap, sizeof(*vals));
    size_t used = 0;

    if (!keys || !vals) {
        free(keys);
        free(vals);
        return false;
    }
    for (size_t i = 0; i < m->cap; i++) {
        size_t j;
        if (!m->keys[i] || m->keys[i] == tomb_key)
            continue;
        for (j = hash_str(m->keys[i]) & (ncap - 1); keys[j]; j = (j + 1) & (ncap - 1))
            ;
        keys[j] = m->keys[i];
        vals[j] = m->vals[i];
        used++;
    }
    free(m->keys);
    free(m->vals);
    m->keys = keys;
    m->vals = vals;
    m->cap = ncap;
    m->used = used;
    return true;
}

static bool smap_put(struct smap *m, const char *key, size_t val)
{
    size_t j;

    if ((m->used + 1) * 2 > m->cap && !smap_rehash(m, m->cap ? m->cap * 2 : 64))
        return false;
    for (j = hash_str(key) & (m->cap - 1); m->keys[j]; j = (j + 1) & (m->cap - 1)) {
        if (m->keys[j] != tomb_key && strcmp(m->keys[j], key) == 0) {
            m->vals[j] = val;
            return true;
        }
    }
    m->keys[j] = key;
    m->vals[j] = val;
    m->used++;
    return true;
}

static void smap_del(struct smap *m, const char *key)
{
    if (!m->cap)
        return;
    for (size_t j = hash_str(key) & (m->cap - 1); m->keys[j]; j = (j + 1) & (m->cap - 1)) {
        if (m->keys[j] != tomb_key && strcmp(m->keys[j], key) == 0) {
            m->keys[j] = tomb_key;
            return;
        }
    }
}

static void smap_release(struct smap *m)
{
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof(*m));
}

/* --- records ------------------------------------------------------------------------------------
 */

/* Where one pod of a group sits or is held: node, and the domains it takes. For in-node domains
 * dmask is a bitmask relative to the node's first domain; for a multi-node domain it is 0. */
struct where {
    size_t node; /* TOPO_NONE: not planned */
    uint64_t dmask;
};

struct slot {
    struct where at;
    bool filled;   /* a pod is bound there */
    bool reserved; /* capacity held for the pod that will come */
};

struct group {
    bool live;
    char key[POL_KEY_MAX];
    char display[POL_KEY_MAX];
    unsigned tp, pp, dp, g, n;
    bool tp_explicit;
    enum pol_scope scope;
    size_t scope_id;
    size_t rack; /* rack of the first placed member */
    struct slot *slots;
    unsigned placed;
    time_t expires;
};

struct pod {
    bool live;
    char *uid;
    char *name;
    struct where at;
    unsigned accel;
    size_t group; /* TOPO_NONE: on its own */
    int slot;     /* NO_SLOT: an extra member or no group */
    struct pol_placement out;
};

struct pol_ledger {
    const struct topo_cluster *c;
    size_t nnodes, ndomains, nracks;
    unsigned *dom_used, *dom_resv;
    unsigned *node_used, *node_resv;
    unsigned *rack_used, *rack_resv;
    size_t *scope_of[NSCOPE]; /* per node */
    size_t nscopes[NSCOPE];
    unsigned long *scope_cap[NSCOPE];
    unsigned max_scope_cap[NSCOPE];
    struct group *groups;
    size_t ngroups, groups_cap;
    struct pod *pods;
    size_t npods, pods_cap;
    size_t *free_pods; /* dead pod records to reuse */
    size_t nfree_pods;
    struct smap gmap, pmap;
    /* copies of the cluster's hot fields, so the per-node loops make no calls */
    unsigned *n_alloc;
    size_t *n_dfirst;
    unsigned *n_dcount;
    bool *n_multi;
    bool any_multi; /* some domain spans nodes */
    bool *n_unsched;
    int *n_res; /* index into res[], -1 when the node names no resource */
    unsigned *d_size;
    const char *res[16];
    size_t nres;
    /* Bumped by every change of use or reservations (account(), account_external()), so a
     * result derived from them (struct pol_scope_memo) can tell whether it still holds. */
    unsigned long gen;
};

/* See policy.h. The arrays grow to the largest ledger the memo meets. */
struct pol_scope_memo {
    const struct pol_ledger *l;
    unsigned long gen;
    bool valid;
    enum pol_scope scope;
    unsigned g, tp, ppu;
    size_t nscopes, ndomains; /* entries the arrays hold */
    unsigned long *sc_dyn, *sc_static, *sc_free;
    unsigned *dom_pods;
};

static inline size_t led_node_domains(const struct pol_ledger *l, size_t n, size_t *nd)
{
    *nd = l->n_dcount[n];
    return l->n_dfirst[n];
}

static inline size_t led_node_domain(const struct pol_ledger *l, size_t n)
{
    return l->n_dfirst[n];
}

static inline unsigned led_domain_size(const struct pol_ledger *l, size_t d)
{
    return l->d_size[d];
}

/* The domain a pod at w takes first: the lowest in-node domain in its mask, or the node's domain
 * when the mask is 0 (a multi-node domain). Every node has at least one domain. */
static inline size_t where_domain(const struct pol_ledger *l, const struct where *w)
{
    size_t nd, first = led_node_domains(l, w->node, &nd);

    for (size_t b = 0; b < nd && b < 64 && w->dmask; b++) {
        if (w->dmask & ((uint64_t)1 << b))
            return first + b;
    }
    return first;
}

static const char *const scope_word[NSCOPE] = {"rack", "block", "zone"};

static void displace(struct pol_ledger *l, size_t n);

static inline unsigned sat_sub(unsigned a, unsigned b)
{
    return a > b ? a - b : 0;
}

static unsigned dom_free(const struct pol_ledger *l, size_t d)
{
    return sat_sub(led_domain_size(l, d), l->dom_used[d] + l->dom_resv[d]);
}

static unsigned node_free(const struct pol_ledger *l, size_t n)
{
    return sat_sub(l->n_alloc[n], l->node_used[n] + l->node_resv[n]);
}

unsigned pol_ledger_node_free(const struct pol_ledger *l, size_t node)
{
    return node < l->nnodes ? node_free(l, node) : 0;
}

const struct topo_cluster *pol_ledger_cluster(const struct pol_ledger *l)
{
    return l->c;
}

static bool node_multinode(const struct pol_ledger *l, size_t n)
{
    return topo_cluster_domain_is_multinode(l->c, led_node_domain(l, n));
}

static const char *scope_name(const struct pol_ledger *l, enum pol_scope k, size_t sid)
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

/* Add (sign +1) or remove (-1) accel on node at w, as use or as reservation. In-node domains in
 * the mask each take up to their size, in mask order. */
static void account(struct pol_ledger *l, const struct where *w, unsigned accel, int sign,
                    bool resv)
{
    unsigned *dom = resv ? l->dom_resv : l->dom_used;
    unsigned *nod = resv ? l->node_resv : l->node_used;
    unsigned *rck = resv ? l->rack_resv : l->rack_used;
    size_t rack = topo_cluster_node_rack(l->c, w->node), first, nd;

    l->gen++;
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

/* Use not placed by us: fill in-node domains in order (removal from the last used one). */
static void account_external(struct pol_ledger *l, size_t node, int accel)
{
    size_t nd, first = led_node_domains(l, node, &nd);
    size_t rack = topo_cluster_node_rack(l->c, node);

    l->gen++;
    if (accel >= 0) {
        unsigned left = (unsigned)accel;
        l->node_used[node] += left;
        l->rack_used[rack] += left;
        if (node_multinode(l, node)) {
            l->dom_used[first] += left;
            return;
        }
        for (size_t k = 0; k < nd && left > 0; k++) {
            unsigned f = dom_free(l, first + k);
            unsigned part = left < f ? left : f;
            if (k == nd - 1)
                part = left;
            l->dom_used[first + k] += part;
            left -= part;
        }
        return;
    }
    unsigned left = (unsigned)(-(long)accel);
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
        if (!l->scope_of[k] || !l->scope_cap[k])
            goto oom;
    }
    l->n_alloc = calloc(nn + 1, sizeof(unsigned));
    l->n_dfirst = calloc(nn + 1, sizeof(size_t));
    l->n_dcount = calloc(nn + 1, sizeof(unsigned));
    l->n_multi = calloc(nn + 1, sizeof(bool));
    l->n_unsched = calloc(nn + 1, sizeof(bool));
    l->n_res = calloc(nn + 1, sizeof(int));
    l->d_size = calloc(nd + 1, sizeof(unsigned));
    if (!l->dom_used || !l->dom_resv || !l->node_used || !l->node_resv || !l->rack_used ||
        !l->rack_resv || !l->n_alloc || !l->n_dfirst || !l->n_dcount || !l->n_multi ||
        !l->n_unsched || !l->n_res || !l->d_size)
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
        if (in->accel_used)
            account_external(l, i, (int)in->accel_used);
    }
    for (int k = 0; k < NSCOPE; k++) {
        for (size_t s = 0; s < l->nscopes[k]; s++) {
            if (l->scope_cap[k][s] > l->max_scope_cap[k])
                l->max_scope_cap[k] = (unsigned)l->scope_cap[k][s];
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
    free(l->n_res);
    free(l->d_size);
    for (int k = 0; k < NSCOPE; k++) {
        free(l->scope_of[k]);
        free(l->scope_cap[k]);
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
    smap_release(&l->gmap);
    smap_release(&l->pmap);
    free(l);
}

enum tpx_code pol_ledger_use(struct pol_ledger *l, size_t node, int accel, struct tpx_err *err)
{
    if (node >= l->nnodes)
        return tpx_err_set(err, TPX_EINVAL, "ledger: bad node index %zu", node);
    account_external(l, node, accel);
    if (accel > 0)
        displace(l, node); /* the pod is there: holds it overbooks move elsewhere */
    return TPX_OK;
}

/* --- groups and pods ----------------------------------------------------------------------------
 */

static void release_slot(struct pol_ledger *l, struct group *g, struct slot *s)
{
    if (s->reserved && s->at.node != TOPO_NONE)
        account(l, &s->at, g->g, -1, true);
    s->reserved = false;
}

static void drop_group(struct pol_ledger *l, size_t gi)
{
    struct group *g = &l->groups[gi];

    for (unsigned k = 0; k < g->n; k++)
        release_slot(l, g, &g->slots[k]);
    smap_del(&l->gmap, g->key);
    group_release(g);
}

static size_t new_group(struct pol_ledger *l, const char *key, const char *display, unsigned n)
{
    size_t gi = TOPO_NONE;
    struct group *g;

    for (size_t i = 0; i < l->ngroups; i++) {
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
            smap_release(&l->gmap);
            for (size_t i = 0; i < l->ngroups; i++) {
                if (l->groups[i].live && !smap_put(&l->gmap, l->groups[i].key, i))
                    return TOPO_NONE;
            }
        }
        gi = l->ngroups++;
    }
    g = &l->groups[gi];
    memset(g, 0, sizeof(*g));
    g->slots = calloc(n ? n : 1, sizeof(*g->slots));
    if (!g->slots)
        return TOPO_NONE;
    for (unsigned k = 0; k < n; k++)
        g->slots[k].at.node = TOPO_NONE;
    snprintf(g->key, sizeof(g->key), "%s", key);
    snprintf(g->display, sizeof(g->display), "%s", display);
    g->n = n;
    g->live = true;
    g->rack = TOPO_NONE;
    g->scope_id = TOPO_NONE;
    if (!smap_put(&l->gmap, g->key, gi)) {
        group_release(g);
        return TOPO_NONE;
    }
    return gi;
}

static size_t new_pod(struct pol_ledger *l, const char *uid, const char *name)
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
    if (!p->uid || !p->name || !smap_put(&l->pmap, p->uid, pi)) {
        free(p->uid);
        free(p->name);
        p->uid = p->name = NULL;
        l->free_pods[l->nfree_pods++] = pi;
        return TOPO_NONE;
    }
    p->live = true;
    return pi;
}

static void kill_pod(struct pol_ledger *l, size_t pi)
{
    struct pod *p = &l->pods[pi];

    smap_del(&l->pmap, p->uid);
    p->live = false;
    l->free_pods[l->nfree_pods++] = pi;
}

bool pol_ledger_forget_pod(struct pol_ledger *l, const char *uid)
{
    size_t pi = smap_get(&l->pmap, uid);
    struct pod *p;

    if (pi == TOPO_NONE)
        return false;
    p = &l->pods[pi];
    account(l, &p->at, p->accel, -1, false);
    if (p->group != TOPO_NONE) {
        struct group *g = &l->groups[p->group];
        if (p->slot != NO_SLOT) {
            struct slot *s = &g->slots[p->slot];
            s->filled = false;
            /* hold the place for the replacement (LWS recreates pods) until the TTL */
            s->reserved = true;
            account(l, &s->at, g->g, +1, true);
        }
        if (g->placed)
            g->placed--;
        if (g->placed == 0)
            drop_group(l, p->group);
    }
    kill_pod(l, pi);
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
            for (unsigned k = 0; k < g->n; k++) {
                any = any || g->slots[k].reserved;
                release_slot(l, g, &g->slots[k]);
            }
        }
        released += any;
        if (g->placed == 0)
            drop_group(l, gi);
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
        for (unsigned k = 0; k < g->n; k++)
            resv += g->slots[k].reserved ? g->g : 0;
        out[n++] = (struct pol_group_summary){
            g->key, g->display, g->rack, g->placed, g->n, resv, resv ? g->expires : 0};
    }
}

/* --- the rules ----------------------------------------------------------------------------------
 */

/* The workload as the ledger sees it: a member whose parallelism is a default inherits its
 * group's. */
struct eff {
    unsigned tp, pp, dp, g, n;
    int idx;
    enum pol_scope scope;
    size_t group; /* TOPO_NONE: first member or on its own */
    bool preferred;
};

enum rkind {
    R_NONE,
    R_INVALID,
    R_UNSCHED,
    R_RESOURCE,
    R_DOMAIN_SMALL,
    R_NODE_SMALL,
    R_SCOPE_STATIC,
    R_SCOPE_DYN,
    R_ELSEWHERE,
    R_MATE,
    R_NODE_FREE,
    R_NODE_FREE_TP,
    R_DOM_FREE,
};

struct rcode {
    enum rkind kind;
    unsigned a, b;
};

/* State of one filter/score/commit call. */
struct ctx {
    const struct pol_ledger *l;
    const struct pol_workload *wl;
    struct eff e;
    bool invalid;
    char invalid_msg[256];
    unsigned ppu;  /* pods per TP unit: tp/g when a TP group spans pods, else 1 */
    unsigned unit; /* accelerators per unit */
    unsigned ndom; /* in-node domains one pod takes when g > domain size */
    bool scopes_done;
    struct pol_scope_memo *memo; /* the caller's, or NULL */
    unsigned long *sc_dyn;       /* pods placeable now per scope (others' reservations held) */
    unsigned long *sc_static;    /* pods placeable on an empty scope */
    unsigned long *sc_free;      /* free accelerators per scope */
    unsigned *dom_pods;          /* per multi-node domain: pods placeable now */
    unsigned char *slot_here;    /* per node: a reserved slot of the group waits for this pod */
    size_t mate_domain;          /* domain of the pod's placed TP mates, or TOPO_NONE */
    size_t mate_node;            /* node of those mates when the domain is in-node */
    int res_id;                  /* the pod's resource in l->res[]; -1 any; -2 none has it */
};

static void ctx_release(struct ctx *x)
{
    free(x->sc_dyn);
    free(x->sc_static);
    free(x->sc_free);
    free(x->dom_pods);
    free(x->slot_here);
}

static enum tpx_code ctx_init(struct ctx *x, const struct pol_ledger *l,
                              const struct pol_workload *wl, struct tpx_err *err)
{
    struct tpx_err verr = TPX_ERR_INIT;
    struct pol_workload eff_wl = *wl;
    size_t gi = wl->group[0] ? smap_get(&l->gmap, wl->group) : TOPO_NONE;

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
    x->e.tp = eff_wl.tp;
    x->e.pp = eff_wl.pp;
    x->e.dp = eff_wl.dp;
    x->e.g = eff_wl.accel_per_pod;
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
    if (pol_workload_validate(&eff_wl, l->c, &verr) != TPX_OK) {
        x->invalid = true;
        snprintf(x->invalid_msg, sizeof(x->invalid_msg), "%s", verr.msg);
        return TPX_OK;
    }
    x->ppu = x->e.g < x->e.tp ? x->e.tp / x->e.g : 1;
    x->unit = x->e.g < x->e.tp ? x->e.tp : x->e.g;
    x->sc_dyn = calloc(l->nscopes[x->e.scope] + 1, sizeof(unsigned long));
    x->sc_static = calloc(l->nscopes[x->e.scope] + 1, sizeof(unsigned long));
    x->sc_free = calloc(l->nscopes[x->e.scope] + 1, sizeof(unsigned long));
    x->dom_pods = calloc(l->ndomains + 1, sizeof(unsigned));
    if (!x->sc_dyn || !x->sc_static || !x->sc_free || !x->dom_pods) {
        ctx_release(x);
        return tpx_err_set(err, TPX_ENOMEM, "policy: out of memory");
    }
    if (gi != TOPO_NONE) {
        const struct group *g = &l->groups[gi];
        x->slot_here = calloc(l->nnodes + 1, 1);
        if (!x->slot_here) {
            ctx_release(x);
            return tpx_err_set(err, TPX_ENOMEM, "policy: out of memory");
        }
        for (unsigned k = 0; k < g->n; k++) {
            const struct slot *s = &g->slots[k];
            if (s->reserved && s->at.node != TOPO_NONE && (x->e.idx < 0 || (unsigned)x->e.idx == k))
                x->slot_here[s->at.node] = 1;
        }
        /* TP mates: pods of the same TP unit already bound */
        if (x->ppu > 1 && x->e.idx >= 0 && g->g == x->e.g) {
            unsigned u0 = (unsigned)x->e.idx / x->ppu * x->ppu;
            for (unsigned k = u0; k < u0 + x->ppu && k < g->n; k++) {
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
    return TPX_OK;
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
        if (x->e.g > size) {
            whole += (f == size && size > 0);
            continue;
        }
        if (x->ppu > 1)
            pods += (unsigned long)(f / x->e.tp) * x->ppu;
        else
            pods += f / x->e.g;
    }
    if (whole && nd > 0) {
        unsigned size = led_domain_size(l, first);
        unsigned need = size ? (x->e.g + size - 1) / size : 0;
        if (need)
            pods += whole / need;
    }
    cap = (now ? node_free(l, n) : l->n_alloc[n]) / x->e.g;
    return pods < cap ? pods : cap;
}

/* The memo's scopes into x, when it holds x's shape for this ledger at its current generation. */
static bool memo_take(const struct ctx *x)
{
    const struct pol_scope_memo *m = x->memo;
    const struct pol_ledger *l = x->l;
    size_t ns = l->nscopes[x->e.scope];

    if (!m || !m->valid || m->l != l || m->gen != l->gen || m->scope != x->e.scope ||
        m->g != x->e.g || m->tp != x->e.tp || m->ppu != x->ppu)
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
    m->g = x->e.g;
    m->tp = x->e.tp;
    m->ppu = x->ppu;
    m->valid = true;
}

/* Pods placeable per scope now and on an empty cluster, in one pass over nodes and domains (or
 * from the memo, when the ledger has not changed since the same shape was computed). */
static void compute_scopes(struct ctx *x)
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
        if (l->n_unsched[n])
            continue;
        x->sc_free[s] += node_free(l, n);
        if (!node_multinode(l, n)) {
            x->sc_dyn[s] += node_pods_innode(x, n, true);
            x->sc_static[s] += node_pods_innode(x, n, false);
        } else {
            size_t d = led_node_domain(l, n);
            x->dom_pods[d] += node_free(l, n) / x->e.g;
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
            if (!l->n_unsched[nodes[k]])
                stat += l->n_alloc[nodes[k]] / x->e.g;
        }
        if (nn == 0)
            continue;
        x->sc_dyn[sof[nodes[0]]] += x->dom_pods[d] / x->ppu * x->ppu;
        x->sc_static[sof[nodes[0]]] += stat / x->ppu * x->ppu;
    }
    memo_keep(x);
}

/* Best in-node domain(s) of node n that can take the pod now (without touching reservations):
 * need accelerators in one domain (tp when it starts a TP unit spanning pods, else g), or whole
 * domains when g exceeds the domain size. only: restrict to that domain. false when none. */
static bool pick_innode(const struct pol_ledger *l, size_t n, unsigned g, unsigned need,
                        size_t only, uint64_t *mask)
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
    unsigned need = x->ppu > 1 && x->mate_domain == TOPO_NONE ? x->e.tp : x->e.g;

    if (multi)
        return node_free(x->l, n) >= x->e.g;
    return pick_innode(x->l, n, x->e.g, need,
                       x->mate_node != TOPO_NONE ? x->mate_domain : TOPO_NONE, &m);
}

/* Verdict for node n under x; fills *rc with the reason code when not POL_FIT. */
static enum pol_verdict judge(struct ctx *x, size_t n, struct rcode *rc)
{
    const struct pol_ledger *l = x->l;
    bool multi;
    size_t dom;
    unsigned size;

    rc->kind = R_NONE;
    if (l->n_unsched[n]) {
        rc->kind = R_UNSCHED;
        return POL_UNRESOLVABLE;
    }
    if (!x->wl->has_intent || x->e.preferred)
        return POL_FIT;
    if (x->invalid) {
        rc->kind = R_INVALID;
        return POL_UNRESOLVABLE;
    }
    if (x->res_id != -1 && l->n_res[n] >= 0 && l->n_res[n] != x->res_id) {
        rc->kind = R_RESOURCE;
        return POL_UNRESOLVABLE;
    }
    /* rule 2: the node's domain cannot hold this pod's TP group, or the node the pod */
    dom = led_node_domain(l, n);
    multi = l->n_multi[n];
    size = led_domain_size(l, dom);
    if (l->n_alloc[n] < x->e.g) {
        *rc = (struct rcode){R_NODE_SMALL, l->n_alloc[n], x->e.g};
        return POL_UNRESOLVABLE;
    }
    if (x->e.tp > size) {
        *rc = (struct rcode){R_DOMAIN_SMALL, size, x->e.tp};
        return POL_UNRESOLVABLE;
    }
    /* rule 3: later members follow the group */
    if (x->e.group != TOPO_NONE) {
        const struct group *g = &l->groups[x->e.group];
        if (g->scope_id != TOPO_NONE && l->scope_of[g->scope][n] != g->scope_id) {
            rc->kind = R_ELSEWHERE;
            return POL_UNRESOLVABLE;
        }
        if (x->mate_domain != TOPO_NONE) {
            bool in_dom = x->mate_node != TOPO_NONE ? n == x->mate_node
                                                    : led_node_domain(l, n) == x->mate_domain;
            if (!in_dom) {
                rc->kind = R_MATE;
                return POL_UNRESOLVABLE;
            }
        }
        if (x->slot_here[n])
            return POL_FIT;
        /* no reserved place here: plain capacity, other reservations held */
        if (member_fits(x, n, multi))
            return POL_FIT;
        *rc = (struct rcode){R_NODE_FREE, node_free(l, n), x->e.g};
        return POL_FAIL;
    }
    /* rule 4: the first member only goes where the whole group fits */
    compute_scopes(x);
    {
        size_t s = l->scope_of[x->e.scope][n];
        if (x->sc_static[s] < x->e.n) {
            *rc = (struct rcode){R_SCOPE_STATIC, (unsigned)s, 0};
            return POL_UNRESOLVABLE;
        }
        if (x->sc_dyn[s] < x->e.n) {
            *rc = (struct rcode){R_SCOPE_DYN, (unsigned)s, 0};
            return POL_FAIL;
        }
    }
    /* rule 5: this node must be able to start a TP unit now; eviction could make room */
    if (multi) {
        if (node_free(l, n) >= x->e.g && x->dom_pods[dom] >= x->ppu)
            return POL_FIT;
        if (node_free(l, n) >= x->e.g) {
            *rc = (struct rcode){R_DOM_FREE, (unsigned)dom, x->dom_pods[dom] * x->e.g};
            return POL_FAIL;
        }
    } else {
        uint64_t m;
        if (pick_innode(l, n, x->e.g, x->ppu > 1 ? x->e.tp : x->e.g, TOPO_NONE, &m))
            return POL_FIT;
    }
    if (x->ppu > 1 && !multi)
        *rc = (struct rcode){R_NODE_FREE_TP, node_free(l, n), x->e.tp};
    else
        *rc = (struct rcode){R_NODE_FREE, node_free(l, n), x->e.g};
    return POL_FAIL;
}

static void reason_text(const struct ctx *x, const struct rcode *rc, char *buf, size_t len)
{
    const struct pol_ledger *l = x->l;
    const char *word = pol_accel_word(x->wl->resource);
    unsigned long units_now, units_static, need;

    switch (rc->kind) {
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
                 rc->a, word, rc->b);
        break;
    case R_NODE_SMALL:
        snprintf(buf, len, "node has %u %s, pod needs %u", rc->a, word, rc->b);
        break;
    case R_SCOPE_STATIC:
    case R_SCOPE_DYN:
        units_now = x->sc_dyn[rc->a] * x->e.g / x->unit;
        units_static = x->sc_static[rc->a] * x->e.g / x->unit;
        need = (unsigned long)x->e.n * x->e.g / x->unit;
        if (rc->kind == R_SCOPE_DYN)
            snprintf(buf, len, "%s %s: %lu free %u-%.3s domains, group needs %lu",
                     scope_word[x->e.scope], scope_name(l, x->e.scope, rc->a), units_now, x->unit,
                     word, need);
        else
            snprintf(buf, len, "%s %s: %lu %u-%.3s domains in all, group needs %lu",
                     scope_word[x->e.scope], scope_name(l, x->e.scope, rc->a), units_static,
                     x->unit, word, need);
        break;
    case R_ELSEWHERE: {
        const struct group *g = &l->groups[x->e.group];
        snprintf(buf, len, "group %s is placed in %s %s", g->display, scope_word[g->scope],
                 scope_name(l, g->scope, g->scope_id));
        break;
    }
    case R_MATE:
        snprintf(buf, len, "the TP group of %s is in domain %s", l->groups[x->e.group].display,
                 topo_cluster_domain_name(l->c, x->mate_domain));
        break;
    case R_NODE_FREE:
        snprintf(buf, len, "node has %u free %s, pod needs %u", rc->a, word, rc->b);
        break;
    case R_NODE_FREE_TP:
        snprintf(buf, len, "node has %u free %s, TP group needs %u", rc->a, word, rc->b);
        break;
    case R_DOM_FREE:
        snprintf(buf, len, "domain %s has %u free %s, TP group needs %u",
                 topo_cluster_domain_name(l->c, rc->a), rc->b, word, x->e.tp);
        break;
    case R_NONE:
        buf[0] = '\0';
        break;
    }
}

/* --- filter -------------------------------------------------------------------------------------
 */

#define RCACHE 32

struct rtable {
    struct rcode code[RCACHE];
    unsigned idx[RCACHE];
    size_t ncode;
    unsigned *scope_idx; /* per scope: reason index + 1 for R_SCOPE_* (0: none yet) */
    size_t cap;
};

static bool add_reason(struct pol_filter_result *res, struct rtable *t, const char *text,
                       unsigned *out)
{
    for (size_t i = 0; i < res->nreasons; i++) {
        if (res->nreasons <= 64 && strcmp(res->reasons[i], text) == 0) {
            *out = (unsigned)i;
            return true;
        }
    }
    if (res->nreasons == t->cap) {
        size_t ncap = t->cap ? t->cap * 2 : 8;
        char **nr = realloc(res->reasons, ncap * sizeof(*nr));
        if (!nr)
            return false;
        res->reasons = nr;
        t->cap = ncap;
    }
    res->reasons[res->nreasons] = strdup(text);
    if (!res->reasons[res->nreasons])
        return false;
    *out = (unsigned)res->nreasons++;
    return true;
}

static bool intern_reason(const struct ctx *x, struct pol_filter_result *res, struct rtable *t,
                          const struct rcode *rc, unsigned *out)
{
    char text[512];
    bool scoped = rc->kind == R_SCOPE_DYN || rc->kind == R_SCOPE_STATIC;

    if (scoped && t->scope_idx[rc->a]) {
        *out = t->scope_idx[rc->a] - 1;
        return true;
    }
    if (!scoped) {
        for (size_t i = 0; i < t->ncode; i++) {
            if (t->code[i].kind == rc->kind && t->code[i].a == rc->a && t->code[i].b == rc->b) {
                *out = t->idx[i];
                return true;
            }
        }
    }
    reason_text(x, rc, text, sizeof(text));
    if (!add_reason(res, t, text, out))
        return false;
    if (scoped) {
        t->scope_idx[rc->a] = *out + 1;
    } else if (t->ncode < RCACHE) {
        t->code[t->ncode] = *rc;
        t->idx[t->ncode++] = *out;
    }
    return true;
}

enum tpx_code pol_filter(const struct pol_ledger *l, const struct pol_workload *wl,
                         const size_t *cand, size_t n, time_t now, struct pol_filter_result *res,
                         struct tpx_err *err)
{
    return pol_filter_memo(l, NULL, wl, cand, n, now, res, err);
}

enum tpx_code pol_filter_memo(const struct pol_ledger *l, struct pol_scope_memo *memo,
                              const struct pol_workload *wl, const size_t *cand, size_t n,
                              time_t now, struct pol_filter_result *res, struct tpx_err *err)
{
    struct ctx x;
    struct rtable t = {.ncode = 0};
    enum tpx_code rc = TPX_OK;

    (void)now;
    memset(res, 0, sizeof(*res));
    for (size_t i = 0; i < n; i++) {
        if (cand[i] >= l->nnodes)
            return tpx_err_set(err, TPX_EINVAL, "filter: bad node index %zu", cand[i]);
    }
    if (ctx_init(&x, l, wl, err) != TPX_OK)
        return err->code;
    x.memo = memo;
    res->verdict = calloc(n + 1, sizeof(*res->verdict));
    res->reason = calloc(n + 1, sizeof(*res->reason));
    t.scope_idx = calloc(l->nscopes[wl->scope] + 1, sizeof(unsigned));
    if (!res->verdict || !res->reason || !t.scope_idx) {
        rc = tpx_err_set(err, TPX_ENOMEM, "filter: out of memory");
        goto out;
    }
    res->n = n;
    for (size_t i = 0; i < n; i++) {
        struct rcode code;
        enum pol_verdict v = judge(&x, cand[i], &code);
        res->verdict[i] = v;
        if (v == POL_FIT) {
            res->nfit++;
            continue;
        }
        if (!intern_reason(&x, res, &t, &code, &res->reason[i])) {
            rc = tpx_err_set(err, TPX_ENOMEM, "filter: out of memory");
            goto out;
        }
    }
out:
    free(t.scope_idx);
    ctx_release(&x);
    if (rc != TPX_OK)
        pol_filter_result_release(res);
    return rc;
}

void pol_filter_result_release(struct pol_filter_result *res)
{
    if (!res)
        return;
    for (size_t i = 0; i < res->nreasons; i++)
        free(res->reasons[i]);
    free(res->reasons);
    free(res->verdict);
    free(res->reason);
    memset(res, 0, sizeof(*res));
}

/* --- score --------------------------------------------------------------------------------------
 */

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
        if (!pick_innode(l, n, x->e.g, x->e.g, TOPO_NONE, &m))
            return 0;
        dom = where_domain(l, &(struct where){n, m});
        size = led_domain_size(l, dom);
        f = dom_free(l, dom);
    }
    if (size == 0 || f < x->e.g)
        return 0;
    return (int)((3UL * (size - (f - x->e.g)) + size / 2) / size);
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

    (void)now;
    for (size_t i = 0; i < n; i++) {
        if (cand[i] >= l->nnodes)
            return tpx_err_set(err, TPX_EINVAL, "score: bad node index %zu", cand[i]);
        scores[i] = 0;
    }
    if (!wl->has_intent)
        return TPX_OK;
    if (ctx_init(&x, l, wl, err) != TPX_OK)
        return err->code;
    x.memo = memo;
    if (x.invalid) {
        ctx_release(&x);
        return TPX_OK;
    }
    compute_scopes(&x);
    for (size_t i = 0; i < n; i++) {
        struct rcode code;
        size_t node = cand[i];
        unsigned long total = (unsigned long)x.e.n * x.e.g, fr, maxcap;
        size_t s = l->scope_of[x.e.scope][node];
        int sc;

        if (judge(&x, node, &code) != POL_FIT)
            continue;
        if (x.e.group != TOPO_NONE) {
            /* a reserved place for this pod is the best; else fuller domains first */
            scores[i] = x.slot_here[node] ? 10 : 4 + node_fit_bonus(&x, node);
            continue;
        }
        /* first member: the scope left with the least free capacity after the whole group */
        fr = x.sc_free[s] > total ? x.sc_free[s] - total : 0;
        maxcap = l->max_scope_cap[x.e.scope] ? l->max_scope_cap[x.e.scope] : 1;
        sc = 7 - (int)((7UL * fr + maxcap / 2) / maxcap);
        if (sc < 0)
            sc = 0;
        scores[i] = sc + node_fit_bonus(&x, node);
        if (scores[i] > 10)
            scores[i] = 10;
    }
    ctx_release(&x);
    return TPX_OK;
}

/* --- commit -------------------------------------------------------------------------------------
 */

static void fill_out(const struct pol_ledger *l, const struct pod *p, const struct group *g,
                     struct pol_placement *out)
{
    size_t dom = where_domain(l, &p->at);
    unsigned idx = p->slot >= 0 ? (unsigned)p->slot : 0;
    unsigned tp = g ? g->tp : p->accel, pp = g ? g->pp : 1;

    memset(out, 0, sizeof(*out));
    out->node = p->at.node;
    out->node_name = topo_cluster_node(l->c, p->at.node)->name;
    out->rack = topo_cluster_rack_name(l->c, topo_cluster_node_rack(l->c, p->at.node));
    out->domain = topo_cluster_domain_name(l->c, dom);
    out->rank_first = idx * p->accel;
    out->rank_last = out->rank_first + (p->accel ? p->accel - 1 : 0);
    out->stage = tp && pp ? (out->rank_first / tp) % pp : 0;
}

/* Where on node n the pod goes now: mask of in-node domains, or 0 on a multi-node domain. */
static bool place_on(const struct ctx *x, size_t n, unsigned need, size_t only, struct where *w)
{
    const struct pol_ledger *l = x->l;

    w->node = n;
    w->dmask = 0;
    if (node_multinode(l, n))
        return node_free(l, n) >= x->e.g;
    return pick_innode(l, n, x->e.g, need, only, &w->dmask);
}

/* The nodes to search for group g's scope: its rack's list, or NULL for every node (*n of them),
 * which the caller filters by scope. */
static const size_t *scope_nodes(const struct pol_ledger *l, const struct group *g, size_t *n)
{
    *n = l->nnodes;
    if (g->scope == POL_SCOPE_RACK)
        return topo_cluster_rack_nodes(l->c, g->scope_id, n);
    return NULL;
}

/* Hold slot s of group g at w. */
static void hold_slot(struct pol_ledger *l, const struct group *g, struct slot *s,
                      const struct where *w)
{
    s->at = *w;
    s->reserved = true;
    account(l, w, g->g, +1, true);
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
        return place_on(x, at0->node, x->e.g, dom0, w);
    nodes = topo_cluster_domain_nodes(l->c, dom0, &nn);
    for (size_t q = 0; q < nn; q++) {
        if (sof[nodes[q]] == g->scope_id && place_on(x, nodes[q], x->e.g, TOPO_NONE, w))
            return true;
    }
    return false;
}

/* Hold the TP mates of the member just placed at slot k0 in its domain, each where it fits. */
static void reserve_mates(struct pol_ledger *l, const struct ctx *x, struct group *g, unsigned k0)
{
    unsigned u0 = k0 / x->ppu * x->ppu;
    const struct where *at0 = &g->slots[k0].at;
    size_t dom0 = where_domain(l, at0);

    for (unsigned k = u0; k < u0 + x->ppu && k < g->n; k++) {
        struct where w;
        if (k != k0 && place_mate(x, g, at0, dom0, &w))
            hold_slot(l, g, &g->slots[k], &w);
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
        if (sof[nodes[q]] == g->scope_id && !l->n_unsched[nodes[q]]) {
            pods += node_free(l, nodes[q]) / x->e.g;
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
        size_t n = list ? list[q] : q, dom;
        unsigned long f;
        struct where w;
        if (sof[n] != g->scope_id || l->n_unsched[n])
            continue;
        if (node_multinode(l, n)) {
            if (!multi_domain_room(x, g, n, cnt, &f))
                continue;
            dom = led_node_domain(l, n);
        } else {
            if (!place_on(x, n, x->ppu > 1 ? x->e.tp : x->e.g, TOPO_NONE, &w))
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
        if (sof[nodes[q]] != g->scope_id || f < x->e.g || l->n_unsched[nodes[q]])
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
            ok = place_on(x, node, x->e.g, dom, &w);
        } else {
            size_t n = fullest_node(x, g, dom);
            ok = n != TOPO_NONE && place_on(x, n, x->e.g, TOPO_NONE, &w);
        }
        if (!ok)
            break;
        hold_slot(l, g, &g->slots[k], &w);
    }
}

/* Reserve the rest of group g (first member just placed at slot k0) in its scope: first the pod's
 * TP mates in its domain, then the other TP units one at a time, best fit over the scope's
 * domains. A preferred placement holds what fits: it stops at the first unit that fits nowhere. */
static void reserve_rest(struct pol_ledger *l, const struct ctx *x, struct group *g, unsigned k0)
{
    unsigned u0 = k0 / x->ppu * x->ppu;

    reserve_mates(l, x, g, k0);
    for (unsigned u = 0; u < g->n; u += x->ppu) {
        unsigned cnt = g->n - u < x->ppu ? g->n - u : x->ppu; /* pods in this unit */
        size_t node = TOPO_NONE, dom;
        if (u == u0)
            continue;
        dom = best_unit_domain(x, g, cnt, &node);
        if (dom == TOPO_NONE)
            return;
        reserve_unit(l, x, g, u, dom, node);
    }
}

/*
 * The group slot a member placed on node takes, shared by pol_commit and pol_record: its own index
 * when that is free (NO_SLOT when it is taken), else for a member without an index a slot held on
 * this node, else any free one. When the slot's hold is on this node the member uses it
 * (*use_reserved, *w set to the hold); a hold elsewhere is released.
 */
static int take_slot(struct pol_ledger *l, struct group *g, int idx, size_t node, struct where *w,
                     bool *use_reserved)
{
    int slot = NO_SLOT;

    if (idx >= 0) {
        if (!g->slots[idx].filled)
            slot = idx;
    } else {
        for (unsigned k = 0; k < g->n && slot == NO_SLOT; k++) {
            if (!g->slots[k].filled && g->slots[k].reserved && g->slots[k].at.node == node)
                slot = (int)k;
        }
        for (unsigned k = 0; k < g->n && slot == NO_SLOT; k++) {
            if (!g->slots[k].filled)
                slot = (int)k;
        }
    }
    if (slot != NO_SLOT && g->slots[slot].reserved && g->slots[slot].at.node == node) {
        *use_reserved = true;
        *w = g->slots[slot].at;
    } else if (slot != NO_SLOT) {
        release_slot(l, g, &g->slots[slot]);
    }
    return slot;
}

/* What pol_commit or pol_record was asked to book. bound: pol_record (the pod is on the node). */
struct booking {
    const char *uid, *name;
    size_t node;
    time_t now;
    unsigned ttl_s;
    bool bound;
};

/*
 * The booking shared by pol_commit (a new placement, already judged) and pol_record (a bound pod,
 * recorded as it is): a pod record at w, its capacity (taken from its group's hold when
 * use_reserved), and its group and slot, creating the group for its first member. *gi is the
 * group's index (TOPO_NONE when the pod has none) and *slot the member's slot; on entry they say
 * which group and slot were already found. TPX_ENOMEM leaves the ledger as it was.
 */
static enum tpx_code book(struct pol_ledger *l, const struct ctx *x, const struct booking *b,
                          struct where w, bool use_reserved, size_t *pi_out, size_t *gi, int *slot)
{
    const struct pol_workload *wl = x->wl;
    struct group *g = *gi != TOPO_NONE ? &l->groups[*gi] : NULL;
    size_t pi = new_pod(l, b->uid, b->name);
    struct pod *p;

    if (pi == TOPO_NONE)
        return TPX_ENOMEM;
    p = &l->pods[pi];
    p->accel = x->e.g;
    p->at = w;
    if (use_reserved)
        account(l, &w, x->e.g, -1, true);
    account(l, &w, x->e.g, +1, false);
    if (wl->has_intent && !g && wl->group[0]) {
        *gi = new_group(l, wl->group, wl->display, x->e.n);
        if (*gi == TOPO_NONE) {
            account(l, &w, x->e.g, -1, false);
            if (use_reserved)
                account(l, &w, x->e.g, +1, true);
            kill_pod(l, pi);
            return TPX_ENOMEM;
        }
        p = &l->pods[pi];
        g = &l->groups[*gi];
        g->tp = x->e.tp;
        g->pp = x->e.pp;
        g->dp = x->e.dp;
        g->g = x->e.g;
        g->tp_explicit = wl->tp_explicit;
        g->scope = wl->scope;
        *slot = x->e.idx >= 0 ? x->e.idx : 0;
    }
    if (g) {
        if (g->scope_id == TOPO_NONE) {
            g->scope_id = l->scope_of[g->scope][w.node];
            g->rack = topo_cluster_node_rack(l->c, w.node);
        }
        p->group = *gi;
        p->slot = *slot;
        g->placed++;
        g->expires = b->now + (time_t)b->ttl_s;
        if (*slot != NO_SLOT) {
            g->slots[*slot].at = w;
            g->slots[*slot].filled = true;
            g->slots[*slot].reserved = false;
        }
    }
    *pi_out = pi;
    return TPX_OK;
}

/* What pol_commit and pol_record check before anything is booked: a uid, a node index, and a pod
 * already known (the same answer again on its own node, refused on another). true when that
 * answers the call, with *rc (and *err) set; false to go on and book. */
static bool answered_before_booking(const struct pol_ledger *l, const char *verb, const char *uid,
                                    size_t node, struct pol_placement *out, enum tpx_code *rc,
                                    struct tpx_err *err)
{
    size_t pi;
    const struct pod *p;

    if (!uid || !uid[0]) {
        *rc = tpx_err_set(err, TPX_EINVAL, "%s: pod without a uid", verb);
        return true;
    }
    if (node >= l->nnodes) {
        *rc = tpx_err_set(err, TPX_EINVAL, "%s: bad node index %zu", verb, node);
        return true;
    }
    pi = smap_get(&l->pmap, uid);
    if (pi == TOPO_NONE)
        return false;
    p = &l->pods[pi];
    if (p->at.node != node) {
        *rc = tpx_err_set(err, TPX_EINVAL, "pod '%s' is already placed on node '%s'", p->name,
                          topo_cluster_node(l->c, p->at.node)->name);
        return true;
    }
    fill_out(l, p, p->group != TOPO_NONE ? &l->groups[p->group] : NULL, out);
    *rc = TPX_OK;
    return true;
}

/* --- record: a pod that is already bound ---------------------------------------------------------
 */

static void add_warn(char *warn, size_t len, const char *text)
{
    size_t used;

    if (!warn || len == 0 || !text[0])
        return;
    used = strlen(warn);
    if (used + 3 >= len)
        return;
    snprintf(warn + used, len - used, "%s%s", used ? "; " : "", text);
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

/* Where a bound pod of g accelerators sits on node n when no free place is left: the least used
 * in-node domain(s), ignoring reservations (the pod is there whatever they held). */
static void where_anyway(const struct pol_ledger *l, size_t n, unsigned g, struct where *w)
{
    size_t nd, first = led_node_domains(l, n, &nd);
    unsigned size = nd ? led_domain_size(l, first) : 0;
    unsigned want = size && g > size ? (g + size - 1) / size : 1;
    uint64_t m = 0;

    w->node = n;
    w->dmask = 0;
    if (node_multinode(l, n) || nd == 0)
        return;
    while (want-- > 0) {
        size_t best = TOPO_NONE;
        for (size_t k = 0; k < nd && k < 64; k++) {
            if (m & ((uint64_t)1 << k))
                continue;
            if (best == TOPO_NONE || l->dom_used[first + k] < l->dom_used[first + best])
                best = k;
        }
        if (best == TOPO_NONE)
            break;
        m |= (uint64_t)1 << best;
    }
    w->dmask = m ? m : 1;
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
        size_t n = list ? list[q] : q;
        uint64_t m = 0;
        if (sof[n] != g->scope_id || l->n_unsched[n] || node_free(l, n) < g->g)
            continue;
        if (!node_multinode(l, n) && !pick_innode(l, n, g->g, g->g, TOPO_NONE, &m))
            continue;
        if (best == TOPO_NONE || node_free(l, n) < node_free(l, best)) {
            best = n;
            best_mask = m;
        }
    }
    if (best == TOPO_NONE)
        return false;
    hold_slot(l, g, s, &(struct where){best, best_mask});
    return true;
}

/* A bound pod took capacity on node n that groups were holding: release those holds until the
 * node is no longer overbooked, and hold each again elsewhere in its group's scope. Only runs when
 * the node is overbooked, so the scan over groups is rare. */
static void displace(struct pol_ledger *l, size_t n)
{
    for (size_t gi = 0; gi < l->ngroups && overbooked(l, n); gi++) {
        struct group *g = &l->groups[gi];
        if (!g->live)
            continue;
        for (unsigned k = 0; k < g->n && overbooked(l, n); k++) {
            struct slot *s = &g->slots[k];
            if (s->filled || !s->reserved || s->at.node != n)
                continue;
            release_slot(l, g, s);
            if (!rehome_slot(l, g, s))
                s->at.node = TOPO_NONE;
        }
    }
}

/* Where on node the pod goes now: in its TP mates' domain when they are on this node, with room
 * for a whole TP unit when it starts one, else anywhere on the node it fits. */
static bool place_now(const struct ctx *x, size_t node, struct where *w)
{
    unsigned need = x->e.g;
    size_t only = TOPO_NONE;

    /* ppu is 0 without intent or with an invalid one */
    if (x->ppu > 1 && x->mate_domain == TOPO_NONE && !x->e.preferred)
        need = x->e.tp;
    if (x->mate_node == node)
        only = x->mate_domain;
    return place_on(x, node, need, only, w) || place_on(x, node, x->e.g, TOPO_NONE, w);
}

/*
 * The body shared by pol_commit and pol_record once the pod is known to go on b->node: take its
 * group slot (and the hold there), find where on the node it goes, book it, hold the rest of a
 * new group, and fill *out. A new placement (!b->bound) that no longer fits on the node fails
 * with TPX_EINVAL; a bound pod is where it is, so it is put on its node anyway and the holds it
 * overbooks move. TPX_ENOMEM leaves the ledger as it was, less any hold take_slot released.
 */
static enum tpx_code place_and_book(struct pol_ledger *l, struct ctx *x, const struct booking *b,
                                    struct pol_placement *out, struct tpx_err *err)
{
    size_t gi = x->e.group, pi = TOPO_NONE;
    struct group *g = NULL;
    struct where w = {b->node, 0};
    int slot = NO_SLOT;
    bool use_reserved = false;
    struct pod *p;

    if (x->wl->has_intent && gi != TOPO_NONE) {
        g = &l->groups[gi];
        slot = take_slot(l, g, x->e.idx, b->node, &w, &use_reserved);
    }
    if (!use_reserved && !place_now(x, b->node, &w)) {
        if (!b->bound)
            return tpx_err_set(err, TPX_EINVAL,
                               "node '%s' no longer fits: node has %u free %s, pod needs %u",
                               topo_cluster_node(l->c, b->node)->name, node_free(l, b->node),
                               pol_accel_word(x->wl->resource), x->e.g);
        where_anyway(l, b->node, x->e.g, &w);
    }
    if (!g)
        gi = TOPO_NONE; /* a group found for a pod without intent is not joined */
    if (book(l, x, b, w, use_reserved, &pi, &gi, &slot) != TPX_OK)
        return tpx_err_set(err, TPX_ENOMEM, "%s: out of memory", b->bound ? "record" : "commit");
    p = &l->pods[pi];
    g = gi != TOPO_NONE ? &l->groups[gi] : NULL;
    if (b->bound)
        displace(l, b->node); /* the pod is there: holds it overbooks move elsewhere in scope */
    if (g && g->placed == 1 && slot != NO_SLOT && !x->invalid)
        reserve_rest(l, x, g, (unsigned)slot);
    fill_out(l, p, g, out);
    p->out = *out;
    return TPX_OK;
}

enum tpx_code pol_commit(struct pol_ledger *l, const struct pol_workload *wl, const char *uid,
                         const char *name, size_t node, time_t now, unsigned ttl_s,
                         struct pol_placement *out, struct tpx_err *err)
{
    const struct booking b = {uid, name, node, now, ttl_s, false};
    struct ctx x;
    struct rcode code;
    enum tpx_code rc;

    if (answered_before_booking(l, "commit", uid, node, out, &rc, err))
        return rc;
    if (ctx_init(&x, l, wl, err) != TPX_OK)
        return err->code;
    if (judge(&x, node, &code) != POL_FIT) {
        char text[400];
        reason_text(&x, &code, text, sizeof(text));
        rc = tpx_err_set(err, TPX_EINVAL, "node '%s' no longer fits: %s",
                         topo_cluster_node(l->c, node)->name, text);
    } else {
        rc = place_and_book(l, &x, &b, out, err);
    }
    ctx_release(&x);
    return rc;
}

/* What pol_record says about a bound pod before booking it: an invalid intent, an index its group
 * has already filled, a node outside the group's scope. */
static void warn_bound(const struct ctx *x, const struct booking *b, char *warn, size_t warn_len)
{
    const struct pol_ledger *l = x->l;
    const char *who = b->name ? b->name : b->uid;
    const struct group *g;
    char text[POL_KEY_MAX * 2 + 160];

    if (!x->wl->has_intent)
        return;
    if (x->invalid) {
        snprintf(text, sizeof(text), "pod '%s': %s", who, x->invalid_msg);
        add_warn(warn, warn_len, text);
    }
    if (x->e.group == TOPO_NONE)
        return;
    g = &l->groups[x->e.group];
    if (x->e.idx >= 0 && g->slots[x->e.idx].filled) {
        snprintf(text, sizeof(text), "pod '%s': index %d of group %s is already taken", who,
                 x->e.idx, g->display);
        add_warn(warn, warn_len, text);
    }
    if (g->scope_id != TOPO_NONE && l->scope_of[g->scope][b->node] != g->scope_id) {
        snprintf(text, sizeof(text), "pod '%s' of group %s is on node '%s' outside %s %s", who,
                 g->display, topo_cluster_node(l->c, b->node)->name, scope_word[g->scope],
                 scope_name(l, g->scope, g->scope_id));
        add_warn(warn, warn_len, text);
    }
}

enum tpx_code pol_record(struct pol_ledger *l, const struct pol_workload *wl, const char *uid,
                         const char *name, size_t node, time_t now, unsigned ttl_s,
                         struct pol_placement *out, char *warn, size_t warn_len,
                         struct tpx_err *err)
{
    const struct booking b = {uid, name, node, now, ttl_s, true};
    struct ctx x;
    enum tpx_code rc;
    char text[POL_KEY_MAX * 2 + 160];

    if (warn && warn_len)
        warn[0] = '\0';
    if (answered_before_booking(l, "record", uid, node, out, &rc, err))
        return rc;
    if (ctx_init(&x, l, wl, err) != TPX_OK)
        return err->code;
    warn_bound(&x, &b, warn, warn_len);
    rc = place_and_book(l, &x, &b, out, err);
    if (rc == TPX_OK && l->node_used[node] > l->n_alloc[node]) {
        snprintf(text, sizeof(text), "node '%s' has %u %s in use by its pods, %u allocatable",
                 topo_cluster_node(l->c, node)->name, l->node_used[node],
                 pol_accel_word(wl->resource), l->n_alloc[node]);
        add_warn(warn, warn_len, text);
    }
    ctx_release(&x);
    return rc;
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
    for (size_t gi = 0; gi < l->ngroups; gi++) {
        const struct group *og = &l->groups[gi];
        size_t ngi;
        struct group *ng;
        if (!og->live)
            continue;
        ngi = new_group(n, og->key, og->display, og->n);
        if (ngi == TOPO_NONE)
            goto oom;
        ng = &n->groups[ngi];
        ng->tp = og->tp;
        ng->pp = og->pp;
        ng->dp = og->dp;
        ng->g = og->g;
        ng->tp_explicit = og->tp_explicit;
        ng->scope = og->scope;
        ng->expires = og->expires;
        for (unsigned k = 0; k < og->n; k++) {
            const struct slot *os = &og->slots[k];
            struct slot *s = &ng->slots[k];
            if (!os->reserved || !map_where(l, n, &os->at, &s->at))
                continue;
            s->reserved = true;
            account(n, &s->at, ng->g, +1, true);
        }
    }
    for (size_t pi = 0; pi < l->npods; pi++) {
        const struct pod *op = &l->pods[pi];
        struct where w;
        size_t npi;
        struct pod *p;
        if (!op->live || !map_where(l, n, &op->at, &w))
            continue;
        npi = new_pod(n, op->uid, op->name);
        if (npi == TOPO_NONE)
            goto oom;
        p = &n->pods[npi];
        p->at = w;
        p->accel = op->accel;
        p->slot = op->slot;
        account(n, &w, p->accel, +1, false);
        if (op->group != TOPO_NONE) {
            size_t ngi = smap_get(&n->gmap, l->groups[op->group].key);
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
        if (n->groups[gi].live && n->groups[gi].placed == 0)
            drop_group(n, gi);
    }
    return n;
oom:
    pol_ledger_free(n);
    tpx_err_set(err, TPX_ENOMEM, "ledger: out of memory");
    return NULL;
}

/* --- plan support -------------------------------------------------------------------------------
 */

enum tpx_code pol_gang_shortfall(const struct pol_ledger *l, const struct pol_workload *wl,
                                 char *buf, size_t len, struct tpx_err *err)
{
    struct ctx x;
    size_t best = TOPO_NONE, ns;
    const char *word;
    unsigned long need;

    buf[0] = '\0';
    if (ctx_init(&x, l, wl, err) != TPX_OK)
        return err->code;
    if (!wl->has_intent) {
        ctx_release(&x);
        return TPX_OK;
    }
    if (x.invalid) {
        snprintf(buf, len, "%s", x.invalid_msg);
        ctx_release(&x);
        return TPX_OK;
    }
    compute_scopes(&x);
    ns = l->nscopes[x.e.scope];
    for (size_t s = 0; s < ns; s++) {
        if (x.sc_dyn[s] >= x.e.n) {
            ctx_release(&x);
            return TPX_OK;
        }
        if (best == TOPO_NONE || x.sc_dyn[s] > x.sc_dyn[best])
            best = s;
    }
    word = pol_accel_word(wl->resource);
    need = (unsigned long)x.e.n * x.e.g / x.unit;
    if (best == TOPO_NONE)
        snprintf(buf, len, "no %s has %lu free %u-%.3s domain%s (the cluster has none)",
                 scope_word[x.e.scope], need, x.unit, word, need == 1 ? "" : "s");
    else
        snprintf(buf, len, "no %s has %lu free %u-%.3s domain%s (best: %s %s, %lu)",
                 scope_word[x.e.scope], need, x.unit, word, need == 1 ? "" : "s",
                 scope_word[x.e.scope], scope_name(l, x.e.scope, best),
                 x.sc_dyn[best] * x.e.g / x.unit);
    ctx_release(&x);
    return TPX_OK;
}
