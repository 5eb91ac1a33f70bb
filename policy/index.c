/* SPDX-License-Identifier: Apache-2.0 */
/* policy/index.c - the placement index behind a scope memo (struct pol_scope_memo, policy.h): the
 * per-scope capacity of one shape (pods placeable now, on an empty scope, free accelerators),
 * brought up to date scope by scope from the ledger's change counts, so a filter after a bind
 * costs the scopes the bind touched, not every node; and, for the planner, each scope's best node
 * for a group's first member in a tournament tree over the scopes, so the best node of the whole
 * cluster is the root (O(log scopes) per changed scope), and a later member's best node is a pass
 * over its group's scope. Every number here is what a pass over every node (policy/scope.c,
 * led_judge, led_score_node) gives: tests/unit/policy/test_index.c holds the two side by side.
 * And, for pol_filter_memo and pol_score_memo, each node's verdict, reason code and score for a
 * first member (struct led_cell), found when a call first asks for that node and kept until its
 * scope changes, so a names-mode filter or prioritize of 20 000 candidates costs a read per
 * candidate (issue 14), and a memo that meets a new shape costs no more than its candidates. */
#include "policy/policy.h"

#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "policy/ledger_int.h"

/* The part of a first member's shape that its best nodes and its cells read beside the scope
 * arrays' key (scope, accelerators per pod, TP, pods per TP unit, the RDMA cut). */
struct part {
    unsigned n, ep;
    int res_id;
    unsigned long rdma_need; /* the RDMA term of the score (prefer.c) reads it */
    bool rdma_hard;
};

static struct part part_of(const struct ctx *x)
{
    return (struct part){x->e.n, x->wl->layout.ep, x->res_id, x->rdma_need, x->rdma_hard};
}

static bool same_part(const struct part *a, const struct part *b)
{
    return a->n == b->n && a->ep == b->ep && a->res_id == b->res_id &&
           a->rdma_need == b->rdma_need && a->rdma_hard == b->rdma_hard;
}

/* Scopes whose derived numbers wait to be found again: a mark per scope and their list. */
struct stale_set {
    unsigned char *on;
    size_t *list, n;
};

static void stale_add(struct stale_set *q, size_t s)
{
    if (!q->on[s]) {
        q->on[s] = 1;
        q->list[q->n++] = s;
    }
}

static void stale_clear(struct stale_set *q)
{
    for (size_t i = 0; i < q->n; i++)
        q->on[q->list[i]] = 0;
    q->n = 0;
}

/* One scope's best node for a first member: the highest score, then the lowest node index. */
struct best {
    int score; /* -1: no node of the scope fits */
    size_t node;
};

struct pol_scope_memo {
    const struct pol_ledger *l;
    bool valid;
    enum pol_scope scope;
    unsigned accel_per_pod, tp, ppu;
    unsigned long rdma_cut;             /* ctx.rdma_need when hard, else 0: the nodes left out */
    unsigned long gen;                  /* l->gen when brought up to date */
    size_t cap_s, cap_d, cap_t, leaves; /* entries the arrays hold; leaves of the tree */
    unsigned long *sc_dyn, *sc_static, *sc_free;
    unsigned long *sgen; /* per scope: its change count then */
    unsigned *dom_pods;
    size_t *dirty;       /* scratch: the scopes a refresh found changed */
    unsigned char *mark; /* scratch: per scope, in dirty[] */
    /* the first members' best nodes, for one more part of the shape */
    bool best_valid;
    struct part best_part;
    struct stale_set stale; /* the scopes whose best waits to be found again */
    struct best *tree;      /* tree[leaves + s]: scope s; tree[i]: the better of its two children */
    /* the first members' cells, per node, for one more part of the shape (its own: a filter and
     * the plan's index may meet the memo with different shapes) */
    bool cell_valid;
    struct part cell_part;
    struct stale_set cstale; /* the scopes whose nodes' cells wait to be found again */
    struct led_cell *cell;   /* per node; one is found when a call first asks for it */
    unsigned cell_stamp;     /* what the cells found since the shape last changed carry */
    size_t cap_c;
    struct led_pack_cache *pack; /* pack.c's per-rack cache of its term (led_memo_pack_cache) */
};

struct pol_scope_memo *pol_scope_memo_new(void)
{
    return calloc(1, sizeof(struct pol_scope_memo));
}

void pol_scope_memo_forget(struct pol_scope_memo *m)
{
    if (m) {
        m->valid = false;
        m->best_valid = false;
        m->cell_valid = false;
        m->l = NULL;
        led_pack_cache_free(m->pack);
        m->pack = NULL;
    }
}

void pol_scope_memo_free(struct pol_scope_memo *m)
{
    if (!m)
        return;
    free(m->sc_dyn);
    free(m->sc_static);
    free(m->sc_free);
    free(m->sgen);
    free(m->dom_pods);
    free(m->dirty);
    free(m->mark);
    free(m->stale.on);
    free(m->stale.list);
    free(m->cstale.on);
    free(m->cstale.list);
    free(m->tree);
    free(m->cell);
    led_pack_cache_free(m->pack);
    free(m);
}

struct led_pack_cache **led_memo_pack_cache(struct pol_scope_memo *m)
{
    return &m->pack;
}

/* Arrays for ns scopes and nd domains (common/grow.h: each array of one kind doubles alike from
 * the same capacity, so one count says what they all hold). */
static bool memo_size(struct pol_scope_memo *m, size_t ns, size_t nd)
{
    size_t leaves = 1;

    while (leaves < ns)
        leaves *= 2;
    if (ns > m->cap_s || 2 * leaves > m->cap_t) {
        size_t c[10] = {m->cap_s, m->cap_s, m->cap_s, m->cap_s, m->cap_s,
                        m->cap_s, m->cap_s, m->cap_s, m->cap_s, m->cap_s};
        m->valid = m->best_valid = m->cell_valid = false;
        if (!tpx_grow(&m->sc_dyn, &c[0], ns, sizeof(*m->sc_dyn)) ||
            !tpx_grow(&m->sc_static, &c[1], ns, sizeof(*m->sc_static)) ||
            !tpx_grow(&m->sc_free, &c[2], ns, sizeof(*m->sc_free)) ||
            !tpx_grow(&m->sgen, &c[3], ns, sizeof(*m->sgen)) ||
            !tpx_grow(&m->dirty, &c[4], ns, sizeof(*m->dirty)) ||
            !tpx_grow(&m->mark, &c[5], ns, 1) || !tpx_grow(&m->stale.on, &c[6], ns, 1) ||
            !tpx_grow(&m->stale.list, &c[7], ns, sizeof(*m->stale.list)) ||
            !tpx_grow(&m->cstale.on, &c[8], ns, 1) ||
            !tpx_grow(&m->cstale.list, &c[9], ns, sizeof(*m->cstale.list)) ||
            !TPX_GROW(m->tree, m->cap_t, 2 * leaves))
            return false;
        m->cap_s = c[0];
        memset(m->mark, 0, m->cap_s);
        memset(m->stale.on, 0, m->cap_s);
        memset(m->cstale.on, 0, m->cap_s);
        m->stale.n = m->cstale.n = 0;
    }
    if (nd > m->cap_d) {
        m->valid = m->best_valid = m->cell_valid = false;
        if (!TPX_GROW(m->dom_pods, m->cap_d, nd))
            return false;
    }
    return true;
}

enum tpx_code led_memo_attach(struct ctx *x, struct pol_scope_memo *m, struct tpx_err *err)
{
    const struct pol_ledger *l = x->l;

    if (!memo_size(m, l->nscopes[x->e.scope] + 1, l->any_multi ? l->ndomains + 1 : 0))
        return tpx_err_set(err, TPX_ENOMEM, "policy: out of memory");
    x->sc_dyn = m->sc_dyn;
    x->sc_static = m->sc_static;
    x->sc_free = m->sc_free;
    x->dom_pods = m->dom_pods;
    x->sc_borrowed = true;
    return TPX_OK;
}

static void mark(struct pol_scope_memo *m, size_t s, size_t *ndirty)
{
    if (!m->mark[s]) {
        m->mark[s] = 1;
        m->dirty[(*ndirty)++] = s;
    }
}

/* The scopes of the memo's kind that changed since it was brought up to date: from the ring of
 * changes while it holds them all, else by comparing every scope's change count. */
static size_t changed_scopes(const struct ctx *x, struct pol_scope_memo *m)
{
    const struct pol_ledger *l = x->l;
    const size_t *sof = l->scope_of[m->scope];
    const unsigned long *lgen = l->scope_gen[m->scope];
    size_t ns = l->nscopes[m->scope], ndirty = 0;

    if (l->gen - m->gen <= LED_CHANGE_RING) {
        for (unsigned long g = m->gen + 1; g != l->gen + 1; g++) {
            size_t n = l->changed[g % LED_CHANGE_RING];
            mark(m, sof[n], &ndirty);
            if (l->n_multi[n]) {
                size_t nn;
                const size_t *nodes = topo_cluster_domain_nodes(l->c, l->n_dfirst[n], &nn);
                for (size_t q = 0; q < nn; q++)
                    mark(m, sof[nodes[q]], &ndirty);
            }
        }
    } else {
        for (size_t s = 0; s < ns; s++) {
            if (m->sgen[s] != lgen[s])
                mark(m, s, &ndirty);
        }
    }
    for (size_t i = 0; i < ndirty; i++) {
        m->mark[m->dirty[i]] = 0;
        m->sgen[m->dirty[i]] = lgen[m->dirty[i]];
    }
    return ndirty;
}

/* The RDMA cut's part of the scope arrays' key: which nodes led_rdma_cut leaves out. */
static unsigned long rdma_cut_of(const struct ctx *x)
{
    return x->rdma_hard ? x->rdma_need : 0;
}

void led_memo_refresh(struct ctx *x)
{
    struct pol_scope_memo *m = x->memo;
    const struct pol_ledger *l = x->l;
    size_t ns = l->nscopes[x->e.scope], ndirty;

    if (!m->valid || m->l != l || m->scope != x->e.scope ||
        m->accel_per_pod != x->e.accel_per_pod || m->tp != x->e.tp || m->ppu != x->ppu ||
        m->rdma_cut != rdma_cut_of(x)) {
        memset(m->sc_dyn, 0, ns * sizeof(*m->sc_dyn));
        memset(m->sc_static, 0, ns * sizeof(*m->sc_static));
        memset(m->sc_free, 0, ns * sizeof(*m->sc_free));
        if (l->any_multi)
            memset(m->dom_pods, 0, l->ndomains * sizeof(*m->dom_pods));
        led_scopes_all(x);
        memcpy(m->sgen, l->scope_gen[x->e.scope], ns * sizeof(*m->sgen));
        m->l = l;
        m->scope = x->e.scope;
        m->accel_per_pod = x->e.accel_per_pod;
        m->tp = x->e.tp;
        m->ppu = x->ppu;
        m->rdma_cut = rdma_cut_of(x);
        m->gen = l->gen;
        m->valid = true;
        m->best_valid = false;
        m->cell_valid = false;
        stale_clear(&m->stale);
        stale_clear(&m->cstale);
        return;
    }
    if (m->gen == l->gen)
        return;
    ndirty = changed_scopes(x, m);
    led_scopes_some(x, m->dirty, ndirty);
    for (size_t i = 0; m->best_valid && i < ndirty; i++)
        stale_add(&m->stale, m->dirty[i]);
    for (size_t i = 0; m->cell_valid && i < ndirty; i++)
        stale_add(&m->cstale, m->dirty[i]);
    m->gen = l->gen;
}

/* The better of two scopes' best nodes. */
static struct best better(struct best a, struct best b)
{
    if (a.score != b.score)
        return a.score > b.score ? a : b;
    return a.node <= b.node ? a : b;
}

/* The best node of nodes[0, nn) for x (led_judge's POL_FIT, then led_score_node). */
static struct best best_of(struct ctx *x, const size_t *nodes, size_t nn)
{
    struct best b = {-1, TOPO_NONE};

    for (size_t q = 0; q < nn; q++) {
        struct reason_code why;
        struct best c = {-1, nodes[q]};
        if (led_judge(x, nodes[q], &why) != POL_FIT)
            continue;
        c.score = led_score_node(x, nodes[q]);
        b = better(b, c);
    }
    return b;
}

static struct best scope_best(struct ctx *x, size_t s)
{
    const size_t *start = x->l->scope_start[x->e.scope];

    return best_of(x, x->l->scope_nodes[x->e.scope] + start[s], start[s + 1] - start[s]);
}

bool led_index_best_first(struct ctx *x, size_t *node)
{
    struct pol_scope_memo *m = x->memo;
    size_t ns = x->l->nscopes[x->e.scope];
    struct part p = part_of(x);

    led_compute_scopes(x);
    if (!m->best_valid || !same_part(&m->best_part, &p)) {
        size_t leaves = 1;
        while (leaves < ns)
            leaves *= 2;
        m->leaves = leaves;
        for (size_t s = 0; s < leaves; s++)
            m->tree[leaves + s] = s < ns ? scope_best(x, s) : (struct best){-1, TOPO_NONE};
        for (size_t i = leaves; i-- > 1;)
            m->tree[i] = better(m->tree[2 * i], m->tree[2 * i + 1]);
        stale_clear(&m->stale);
        m->best_part = p;
        m->best_valid = true;
    }
    for (size_t i = 0; i < m->stale.n; i++) {
        size_t s = m->stale.list[i], t = m->leaves + s;
        m->tree[t] = scope_best(x, s);
        for (t /= 2; t >= 1; t /= 2)
            m->tree[t] = better(m->tree[2 * t], m->tree[2 * t + 1]);
    }
    stale_clear(&m->stale);
    if (m->tree[1].score < 0)
        return false;
    *node = m->tree[1].node;
    return true;
}

const struct led_cell *led_cell_fill(struct ctx *x, size_t n)
{
    struct led_cell *c = &x->memo->cell[n];
    struct reason_code why;
    enum pol_verdict v = led_judge(x, n, &why);
    int sc = v == POL_FIT ? led_score_node(x, n) : 0;

    *c = (struct led_cell){x->memo->cell_stamp,
                           (unsigned char)v,
                           (unsigned char)why.kind,
                           (signed char)sc,
                           why.a,
                           why.b};
    return c;
}

/* Whether a first member's answers per node read only its scope's own state and the shape, so
 * the tree's best nodes and the cells may keep them per scope: the KV term reads where the
 * deployment's other groups are, which no scope's change count follows, and pack.c's rank and
 * term compare scopes or read the live shapes of every one. */
static bool first_member_per_scope(const struct ctx *x)
{
    return x->e.group == TOPO_NONE && x->pf.npeer_rack == 0 && x->pf.npeer_block == 0 &&
           !x->l->pack;
}

bool led_cells_apply(const struct ctx *x)
{
    /* what a cell depends on is the node's own state, its multi-node domain's, its scope's
     * numbers (all three move its scope's change count: led_touch) and the shape (the memo's key
     * and struct part); later members (their group's slots and mates) do not read cells; a
     * preferred or invalid pod, or one without intent, costs nothing per node */
    return x->memo && x->wl->has_intent && !x->invalid && !x->e.preferred &&
           first_member_per_scope(x);
}

bool led_memo_cells(struct ctx *x, struct led_cells *out)
{
    struct pol_scope_memo *m = x->memo;
    const struct pol_ledger *l = x->l;
    const size_t *start = l->scope_start[x->e.scope], *nodes = l->scope_nodes[x->e.scope];
    struct part p = part_of(x);
    size_t cap = m->cap_c;

    led_compute_scopes(x);
    if (!TPX_GROW(m->cell, m->cap_c, l->nnodes + 1))
        return false;
    if (m->cap_c != cap) { /* no stamp in the new room, and a fresh one for all */
        memset(m->cell, 0, m->cap_c * sizeof(*m->cell));
        m->cell_valid = false;
    }
    if (!m->cell_valid || !same_part(&m->cell_part, &p)) {
        /* every cell out of date at once: a new stamp (0 is none; at the wrap, clear them) */
        if (++m->cell_stamp == 0) {
            memset(m->cell, 0, m->cap_c * sizeof(*m->cell));
            m->cell_stamp = 1;
        }
        stale_clear(&m->cstale);
        m->cell_part = p;
        m->cell_valid = true;
    }
    for (size_t i = 0; i < m->cstale.n; i++) {
        size_t s = m->cstale.list[i];
        for (size_t q = start[s]; q < start[s + 1]; q++)
            m->cell[nodes[q]].stamp = 0;
    }
    stale_clear(&m->cstale);
    out->cell = m->cell;
    out->stamp = m->cell_stamp;
    return true;
}

/* A later member's best node: only nodes of its group's scope can fit. false when none does, or
 * the group has no scope yet (the caller asks every node). */
static bool best_member(struct ctx *x, size_t *node)
{
    const struct pol_ledger *l = x->l;
    const struct group *g = &l->groups[x->e.group];
    const size_t *start;
    struct best b;

    if (g->scope_id == TOPO_NONE)
        return false;
    start = l->scope_start[g->scope];
    b = best_of(x, l->scope_nodes[g->scope] + start[g->scope_id],
                start[g->scope_id + 1] - start[g->scope_id]);
    if (b.score < 0)
        return false;
    *node = b.node;
    return true;
}

enum tpx_code led_index_choose(const struct pol_ledger *l, struct pol_scope_memo *m,
                               const struct pol_workload *wl, size_t *node, bool *found,
                               struct tpx_err *err)
{
    struct ctx x;

    *found = false;
    if (!m || !wl->has_intent || wl->preferred)
        return TPX_OK;
    if (led_ctx_init(&x, l, wl, m, err) != TPX_OK)
        return err->code;
    /* the tree keeps per scope what depends on that scope's own state and the shape; any other
     * first member takes the pass over every node */
    if (!x.invalid && x.e.group != TOPO_NONE)
        *found = best_member(&x, node);
    else if (!x.invalid && first_member_per_scope(&x))
        *found = led_index_best_first(&x, node);
    led_ctx_release(&x);
    return TPX_OK;
}
