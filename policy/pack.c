/* SPDX-License-Identifier: Apache-2.0 */
/* policy/pack.c - fragmentation-aware packing for a group's first member, two experimental forms,
 * both off in serve and plan. The rank (pol_ledger_set_pack): the racks that can hold the whole
 * group now, ranked by what the placement would cost the groups that live in the cluster (how
 * many fewer of each shape each rack could still take, weighted by their accelerators), then by
 * holding groups of the same shape, then by best fit. The term (pol_ledger_set_pack_term): an
 * absolute score per rack from its own state after the placement (free accelerators left plus the
 * loss of the set of live shapes), cached per rack in the scope memo. score.c turns either into
 * 0..10; the rules are the filter's and are never touched here. docs/simulate.md explains each. */
#include "policy/pack.h"

#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "common/hash.h"

#define MAX_SHAPES 12
#define PACK_TOP 8 /* racks ranked by loss: the best fits */

/* A group shape and how many live groups have it (+1 for the group being placed). */
struct shape {
    unsigned n, g, tp, ppu;
    unsigned long count;
};

/* One interconnect domain of the rack being looked at: an in-node domain (free), or a multi-node
 * domain (the free accelerators of its nodes, nf[first, first + nnodes)). */
struct mdom {
    unsigned size;
    bool multi;
    unsigned free;
    size_t first, nnodes;
};

/* Scratch for the model of one rack, sized for the largest rack. */
struct model {
    struct mdom *d;
    size_t nd, dcap;
    unsigned *nf;
    size_t nnf, nfcap;
    size_t *seen; /* per cluster domain: rack + 1 when already modelled for that rack (only when
                     some domain spans nodes) */
};

struct key {
    unsigned long loss; /* accelerators of the live shapes' groups the rack could no longer take */
    int other_shape;    /* no group of this shape lives there */
    unsigned long left; /* free accelerators left after the group (best fit) */
    size_t s;
};

static int key_cmp(const void *a, const void *b)
{
    const struct key *x = a, *y = b;

    if (x->loss != y->loss)
        return x->loss < y->loss ? -1 : 1;
    if (x->other_shape != y->other_shape)
        return x->other_shape - y->other_shape;
    if (x->left != y->left)
        return x->left < y->left ? -1 : 1;
    return x->s < y->s ? -1 : x->s > y->s;
}

static int left_cmp(const void *a, const void *b)
{
    const struct key *x = a, *y = b;

    if (x->left != y->left)
        return x->left < y->left ? -1 : 1;
    return x->s < y->s ? -1 : x->s > y->s;
}

static bool same_key(const struct key *x, const struct key *y)
{
    return x->loss == y->loss && x->other_shape == y->other_shape && x->left == y->left;
}

/* Pods of shape sh that domain m takes now (TP units whole, never across domains). */
static unsigned long pods_in(const struct model *md, const struct mdom *m, const struct shape *sh)
{
    unsigned long pods = 0;

    if (sh->tp > m->size || sh->g > m->size)
        return 0;
    if (!m->multi)
        return sh->ppu > 1 ? (unsigned long)(m->free / sh->tp) * sh->ppu : m->free / sh->g;
    for (size_t q = 0; q < m->nnodes; q++)
        pods += md->nf[m->first + q] / sh->g;
    return pods / sh->ppu * sh->ppu;
}

/* Whole groups of shape sh the modelled rack takes now. */
static unsigned long groups_in(const struct model *md, const struct shape *sh)
{
    unsigned long pods = 0;

    for (size_t i = 0; i < md->nd; i++)
        pods += pods_in(md, &md->d[i], sh);
    return sh->n ? pods / sh->n : 0;
}

/* Place group sh in the model as pol_commit and its holds would: each TP unit (or pod) in the
 * fullest domain that still takes it, a multi-node domain's pods on its fullest nodes. false when
 * a unit fits nowhere. */
static bool place_in(struct model *md, const struct shape *sh)
{
    for (unsigned u = 0; u < sh->n; u += sh->ppu) {
        unsigned cnt = sh->n - u < sh->ppu ? sh->n - u : sh->ppu;
        struct mdom *best = NULL;
        for (size_t i = 0; i < md->nd; i++) {
            struct mdom *m = &md->d[i];
            if (pods_in(md, m, sh) >= cnt && (!best || m->free < best->free))
                best = m;
        }
        if (!best)
            return false;
        best->free -= cnt * sh->g;
        for (unsigned k = 0; best->multi && k < cnt; k++) {
            size_t pick = (size_t)-1;
            for (size_t q = best->first; q < best->first + best->nnodes; q++) {
                if (md->nf[q] >= sh->g && (pick == (size_t)-1 || md->nf[q] < md->nf[pick]))
                    pick = q;
            }
            if (pick == (size_t)-1)
                return false;
            md->nf[pick] -= sh->g;
        }
    }
    return true;
}

static bool model_push(struct model *md, struct mdom m)
{
    if (!TPX_GROW(md->d, md->dcap, md->nd + 1))
        return false;
    md->d[md->nd++] = m;
    return true;
}

static bool model_node(struct model *md, unsigned f)
{
    if (!TPX_GROW(md->nf, md->nfcap, md->nnf + 1))
        return false;
    md->nf[md->nnf++] = f;
    return true;
}

/* The domains of rack r now. false when out of memory. */
static bool model_rack(const struct pol_ledger *l, size_t r, struct model *md)
{
    size_t nn;
    const size_t *nodes = topo_cluster_rack_nodes(l->c, r, &nn);

    md->nd = md->nnf = 0;
    for (size_t i = 0; i < nn; i++) {
        size_t n = nodes[i], nd, first = led_node_domains(l, n, &nd);
        if (l->n_unsched[n])
            continue;
        if (!l->n_multi[n]) {
            for (size_t k = 0; k < nd; k++) {
                unsigned f = dom_free(l, first + k);
                if (f > node_free(l, n))
                    f = node_free(l, n); /* the domains may promise more than the node has */
                if (!model_push(md, (struct mdom){led_domain_size(l, first + k), false, f, 0, 0}))
                    return false;
            }
        } else if (md->seen[first] != r + 1) {
            size_t dn;
            const size_t *dnodes = topo_cluster_domain_nodes(l->c, first, &dn);
            struct mdom m = {led_domain_size(l, first), true, 0, md->nnf, 0};
            md->seen[first] = r + 1;
            for (size_t q = 0; q < dn; q++) {
                size_t x = dnodes[q];
                if (l->n_unsched[x] || topo_cluster_node_rack(l->c, x) != r)
                    continue;
                if (!model_node(md, node_free(l, x)))
                    return false;
                m.free += node_free(l, x);
                m.nnodes++;
            }
            if (!model_push(md, m))
                return false;
        }
    }
    return true;
}

/* The live groups' shapes in racks, most common first, and the group being placed. */
static size_t live_shapes(const struct ctx *x, struct shape *sh)
{
    const struct pol_ledger *l = x->l;
    size_t ns = 0;

    sh[ns++] = (struct shape){x->e.n, x->e.accel_per_pod, x->e.tp, x->ppu, 1};
    for (size_t gi = 0; gi < l->ngroups; gi++) {
        const struct group *g = &l->groups[gi];
        size_t k = 0;
        if (!g->live || g->placed == 0 || g->scope != POL_SCOPE_RACK || g->accel_per_pod == 0)
            continue;
        while (k < ns && !(sh[k].n == g->n && sh[k].g == g->accel_per_pod && sh[k].tp == g->tp))
            k++;
        if (k < ns) {
            sh[k].count++;
        } else if (ns < MAX_SHAPES) {
            unsigned ppu = g->accel_per_pod < g->tp ? g->tp / g->accel_per_pod : 1;
            sh[ns++] = (struct shape){g->n, g->accel_per_pod, g->tp, ppu, 1};
        }
    }
    return ns;
}

/* What placing x's group (sh[0]) in rack r costs the shapes: sum over shapes of count x
 * accelerators x (groups of it the rack takes before - after); for the term (once), each shape
 * counts once and x's own less the group it places. ULONG_MAX when the model cannot place it. */
static unsigned long rack_loss(const struct ctx *x, size_t r, struct model *md,
                               const struct shape *sh, size_t ns, bool once, bool *ok)
{
    unsigned long before[MAX_SHAPES], loss = 0;

    *ok = model_rack(x->l, r, md);
    if (!*ok)
        return 0;
    for (size_t k = 0; k < ns; k++)
        before[k] = groups_in(md, &sh[k]);
    if (!place_in(md, &sh[0]))
        return (unsigned long)-1;
    for (size_t k = 0; k < ns; k++) {
        unsigned long after = groups_in(md, &sh[k]) + (once && k == 0);
        if (after < before[k])
            loss += (once ? 1 : sh[k].count) * sh[k].n * sh[k].g * (before[k] - after);
    }
    return loss;
}

void led_pack_init(struct led_pack *p, const struct ctx *x)
{
    static const int base[] = {7, 4, 1}, cap[] = {3, 2, 2};
    const struct pol_ledger *l = x->l;
    size_t ns = l->nscopes[x->e.scope], nk = 0, nsh;
    struct shape sh[MAX_SHAPES];
    struct model md = {0};
    struct key *k;
    unsigned long *same;
    unsigned long total = (unsigned long)x->e.n * x->e.accel_per_pod;
    int rank = 0;

    memset(p, 0, sizeof(*p));
    if (l->pack == LED_PACK_TERM) {
        led_pack_term_init(p, x);
        return;
    }
    if (x->e.scope != POL_SCOPE_RACK || x->e.preferred || x->invalid || x->e.group != TOPO_NONE ||
        x->wl->layout.ep > x->e.accel_per_pod)
        return;
    k = calloc(ns + 1, sizeof(*k));
    same = calloc(ns + 1, sizeof(*same));
    md.seen = l->any_multi ? calloc(l->ndomains + 1, sizeof(*md.seen)) : NULL;
    p->base = malloc((ns + 1) * sizeof(*p->base));
    p->cap = malloc((ns + 1) * sizeof(*p->cap));
    if (!k || !same || (l->any_multi && !md.seen) || !p->base || !p->cap)
        goto fail;
    p->ns = ns;
    nsh = live_shapes(x, sh);
    for (size_t gi = 0; gi < l->ngroups; gi++) {
        const struct group *g = &l->groups[gi];
        if (g->live && g->placed > 0 && g->scope == POL_SCOPE_RACK && g->scope_id < ns &&
            g->accel_per_pod == x->e.accel_per_pod && g->tp == x->e.tp && g->n == x->e.n)
            same[g->scope_id]++;
    }
    for (size_t s = 0; s < ns; s++) {
        p->base[s] = -1;
        p->cap[s] = 0;
        if (x->sc_dyn[s] < x->e.n || x->sc_static[s] < x->e.n)
            continue;
        k[nk].left = x->sc_free[s] > total ? x->sc_free[s] - total : 0;
        k[nk].s = s;
        nk++;
    }
    /* the loss is worked out for the PACK_TOP best fits only, so a score costs O(racks) plus the
     * nodes of those racks, not of the cluster; the others score 0 */
    if (nk > PACK_TOP) {
        qsort(k, nk, sizeof(*k), left_cmp);
        for (size_t i = PACK_TOP; i < nk; i++)
            p->base[k[i].s] = 0;
        nk = PACK_TOP;
    }
    for (size_t i = 0; i < nk; i++) {
        bool ok;
        k[i].loss = rack_loss(x, k[i].s, &md, sh, nsh, false, &ok);
        if (!ok)
            goto fail;
        k[i].other_shape = same[k[i].s] == 0;
    }
    qsort(k, nk, sizeof(*k), key_cmp);
    for (size_t i = 0; i < nk; i++) {
        if (i > 0 && !same_key(&k[i], &k[i - 1]))
            rank++;
        p->base[k[i].s] = rank < 3 ? base[rank] : 0;
        p->cap[k[i].s] = rank < 3 ? cap[rank] : 0;
    }
    goto out;
fail:
    led_pack_release(p); /* out of memory: the plain best-fit score */
out:
    free(k);
    free(same);
    free(md.d);
    free(md.nf);
    free(md.seen);
}

void led_pack_release(struct led_pack *p)
{
    free(p->base);
    free(p->cap);
    memset(p, 0, sizeof(*p));
}

int led_pack_score(const struct led_pack *p, const struct ctx *x, size_t n, int fit)
{
    size_t s = x->l->scope_of[x->e.scope][n];

    const struct pol_ledger *l = x->l;

    if (!p->base || s >= p->ns || p->base[s] < 0)
        return -1;
    if (l->n_multi[n]) {
        /* in a multi-node domain the fuller domain first (its whole free peers stay whole for
         * the TP groups that span nodes), then the fuller node */
        size_t d = led_node_domain(l, n);
        unsigned size = led_domain_size(l, d), f = dom_free(l, d), g = x->e.accel_per_pod;
        if (size > 0 && f >= g)
            fit = (int)((3UL * (size - (f - g)) + size / 2) / size);
    }
    return p->base[s] + (fit < p->cap[s] ? fit : p->cap[s]);
}

/* --- the term (LED_PACK_TERM) ------------------------------------------------------------------
 */

#define PACK_SIGS 16 /* shapes placed (with one set of live shapes) the cache keeps at once */

/* Per rack, the loss of the term for a set of live shapes and the shape being placed. */
struct pack_losses {
    uint64_t sig;       /* the set of live shapes and x's shape (0: unused) */
    unsigned long *gen; /* per rack: its scope_gen + 1 when loss[] was made (0: not made) */
    unsigned long *loss;
};

struct led_pack_cache {
    const struct pol_ledger *l;
    size_t nracks;
    struct pack_losses e[PACK_SIGS];
    unsigned next; /* the entry a new signature takes */
};

void led_pack_cache_free(struct led_pack_cache *c)
{
    if (!c)
        return;
    for (unsigned i = 0; i < PACK_SIGS; i++) {
        free(c->e[i].gen);
        free(c->e[i].loss);
    }
    free(c);
}

static int shape_cmp(const void *a, const void *b)
{
    const struct shape *x = a, *y = b;

    if (x->n != y->n)
        return x->n < y->n ? -1 : 1;
    if (x->g != y->g)
        return x->g < y->g ? -1 : 1;
    return x->tp < y->tp ? -1 : x->tp > y->tp;
}

/* The set of shapes sh[1, ns) in one order, and a signature of it with x's shape sh[0]. */
static uint64_t shape_sig(struct shape *sh, size_t ns)
{
    unsigned v[3 * MAX_SHAPES];

    qsort(sh + 1, ns - 1, sizeof(*sh), shape_cmp);
    for (size_t k = 0; k < ns; k++) {
        v[3 * k] = sh[k].n;
        v[3 * k + 1] = sh[k].g;
        v[3 * k + 2] = sh[k].tp;
    }
    return tpx_hash_keyed(&tpx_hash_fixed_key, v, 3 * ns * sizeof(*v));
}

/* The losses memo m keeps for ledger l and signature sig (sig | 1, never 0), made or taken over
 * from the oldest signature; NULL without a memo or when out of memory (the term then models every
 * rack it scores). */
static struct pack_losses *cache_for(struct pol_scope_memo *m, const struct pol_ledger *l,
                                     uint64_t sig)
{
    struct led_pack_cache **slot, *c;
    struct pack_losses *e;
    size_t nr = l->nscopes[POL_SCOPE_RACK];

    if (!m)
        return NULL;
    slot = led_memo_pack_cache(m);
    c = *slot;
    if (!c || c->l != l || c->nracks != nr) {
        led_pack_cache_free(c);
        *slot = c = calloc(1, sizeof(*c));
        if (!c)
            return NULL;
        c->l = l;
        c->nracks = nr;
    }
    sig |= 1;
    for (unsigned i = 0; i < PACK_SIGS; i++) {
        if (c->e[i].sig == sig)
            return &c->e[i];
    }
    e = &c->e[c->next];
    c->next = (c->next + 1) % PACK_SIGS;
    if (!e->gen) {
        e->gen = calloc(nr + 1, sizeof(*e->gen));
        e->loss = calloc(nr + 1, sizeof(*e->loss));
        if (!e->gen || !e->loss) {
            free(e->gen);
            free(e->loss);
            e->gen = NULL;
            e->loss = NULL;
            e->sig = 0;
            return NULL;
        }
    } else {
        memset(e->gen, 0, nr * sizeof(*e->gen));
    }
    e->sig = sig;
    return e;
}

void led_pack_term_init(struct led_pack *p, const struct ctx *x)
{
    const struct pol_ledger *l = x->l;
    size_t ns = l->nscopes[POL_SCOPE_RACK], nsh;
    struct shape sh[MAX_SHAPES];
    struct model md = {0};
    struct pack_losses *cache;
    unsigned long total = (unsigned long)x->e.n * x->e.accel_per_pod;
    unsigned long maxcap = l->max_scope_cap[POL_SCOPE_RACK] ? l->max_scope_cap[POL_SCOPE_RACK] : 1;

    memset(p, 0, sizeof(*p));
    if (x->e.scope != POL_SCOPE_RACK || x->e.preferred || x->invalid || x->e.group != TOPO_NONE ||
        x->wl->layout.ep > x->e.accel_per_pod)
        return;
    md.seen = l->any_multi ? calloc(l->ndomains + 1, sizeof(*md.seen)) : NULL;
    p->base = malloc((ns + 1) * sizeof(*p->base));
    p->cap = malloc((ns + 1) * sizeof(*p->cap));
    if ((l->any_multi && !md.seen) || !p->base || !p->cap)
        goto fail;
    p->ns = ns;
    nsh = live_shapes(x, sh);
    cache = cache_for(x->memo, l, shape_sig(sh, nsh));
    for (size_t s = 0; s < ns; s++) {
        unsigned long left, loss;
        long sc;
        p->base[s] = -1;
        p->cap[s] = 3;
        if (x->sc_dyn[s] < x->e.n || x->sc_static[s] < x->e.n)
            continue;
        if (cache && cache->gen[s] == l->scope_gen[POL_SCOPE_RACK][s] + 1) {
            loss = cache->loss[s];
        } else {
            bool ok;
            loss = rack_loss(x, s, &md, sh, nsh, true, &ok);
            if (!ok)
                goto fail;
            if (cache) {
                cache->loss[s] = loss;
                cache->gen[s] = l->scope_gen[POL_SCOPE_RACK][s] + 1;
            }
        }
        if (loss == (unsigned long)-1)
            continue; /* the model found no place: the plain best-fit score */
        left = x->sc_free[s] > total ? x->sc_free[s] - total : 0;
        sc = 7 - (long)((7UL * (left + loss) + maxcap / 2) / maxcap);
        p->base[s] = sc < 0 ? 0 : (int)sc;
    }
    goto out;
fail:
    led_pack_release(p); /* out of memory: the plain best-fit score */
out:
    free(md.d);
    free(md.nf);
    free(md.seen);
}
