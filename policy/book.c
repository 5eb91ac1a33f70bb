/* SPDX-License-Identifier: Apache-2.0 */
/* policy/book.c - pol_commit (a new placement, judged again) and pol_record (a pod already
 * bound, taken as it is, with warnings): one prelude, one body that takes the group slot, places,
 * books and holds the rest of a new group, and the placement it answers. */
#include "policy/policy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/ledger_int.h"

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
        if (!led_slot(g, (unsigned)idx)->filled)
            slot = idx;
    } else {
        for (unsigned k = 0; k < g->nslots && slot == NO_SLOT; k++) {
            if (!g->slots[k].filled && g->slots[k].reserved && g->slots[k].at.node == node)
                slot = (int)k;
        }
        /* past nslots every slot is free: the first of them when all made are filled */
        for (unsigned k = 0; k < g->n && slot == NO_SLOT; k++) {
            if (!led_slot(g, k)->filled)
                slot = (int)k;
        }
    }
    if (slot == NO_SLOT || (unsigned)slot >= g->nslots)
        return slot; /* a slot not made yet holds nothing */
    if (g->slots[slot].reserved && g->slots[slot].at.node == node) {
        *use_reserved = true;
        *w = g->slots[slot].at;
    } else {
        led_release_slot(l, g, &g->slots[slot]);
    }
    return slot;
}

/* A new group record takes the shape of the member that makes it. */
static void group_shape(struct group *g, const struct ctx *x)
{
    const struct pol_workload *wl = x->wl;

    g->tp = x->e.tp;
    g->pp = x->e.pp;
    g->dp = x->e.dp;
    g->accel_per_pod = x->e.accel_per_pod;
    g->tp_explicit = wl->tp_explicit;
    g->scope = wl->scope;
    g->kv_role = wl->kv_role;
    memcpy(g->kv_group, wl->kv_group, sizeof(g->kv_group));
}

/* What pol_commit or pol_record was asked to book. bound: pol_record (the pod is on the node). */
struct booking {
    const char *uid, *name;
    size_t node;
    time_t now;
    unsigned ttl_s;
    bool bound;
};

/* A group larger than every scope of its kind can never be placed whole (a preferred one passes
 * the filter anyway): its pods go on their own, so it holds nothing and no slot array is sized by
 * a declared count it cannot use. */
static bool group_fits_somewhere(const struct pol_ledger *l, const struct ctx *x)
{
    return (uint64_t)x->e.n * x->e.accel_per_pod <= l->max_scope_cap[x->e.scope];
}

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
    size_t pi = led_new_pod(l, b->uid, b->name);
    struct pod *p;

    if (pi == TOPO_NONE)
        return TPX_ENOMEM;
    p = &l->pods[pi];
    p->accel = x->e.accel_per_pod;
    p->at = w;
    if (g && *slot != NO_SLOT && !led_slot_grow(g, (unsigned)*slot)) {
        led_kill_pod(l, pi);
        return TPX_ENOMEM;
    }
    if (use_reserved)
        led_account(l, &w, x->e.accel_per_pod, -1, true);
    led_account(l, &w, x->e.accel_per_pod, +1, false);
    if (wl->has_intent && !g && wl->group[0] && group_fits_somewhere(l, x)) {
        unsigned first = x->e.idx >= 0 ? (unsigned)x->e.idx : 0;
        *gi = led_new_group(l, wl->group, wl->display, x->e.n, first + 1);
        if (*gi == TOPO_NONE) {
            led_account(l, &w, x->e.accel_per_pod, -1, false);
            if (use_reserved)
                led_account(l, &w, x->e.accel_per_pod, +1, true);
            led_kill_pod(l, pi);
            return TPX_ENOMEM;
        }
        p = &l->pods[pi];
        g = &l->groups[*gi];
        group_shape(g, x);
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
    pi = led_pod_find(l, uid);
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

/* Where on node the pod goes now: in its TP mates' domain when they are on this node, with room
 * for a whole TP unit when it starts one, else anywhere on the node it fits. */
static bool place_now(const struct ctx *x, size_t node, struct where *w)
{
    unsigned need = x->e.accel_per_pod;
    size_t only = TOPO_NONE;

    /* ppu is 0 without intent or with an invalid one */
    if (x->ppu > 1 && x->mate_domain == TOPO_NONE && !x->e.preferred)
        need = x->e.tp;
    if (x->mate_node == node)
        only = x->mate_domain;
    return led_place_on(x, node, need, only, w) ||
           led_place_on(x, node, x->e.accel_per_pod, TOPO_NONE, w);
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
    bool use_reserved = false, held_early = false;
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
                               pol_accel_word(x->wl->resource), x->e.accel_per_pod);
        where_anyway(l, b->node, x->e.accel_per_pod, &w);
    }
    if (!g)
        gi = TOPO_NONE; /* a group found for a pod without intent is not joined */
    if (book(l, x, b, w, use_reserved, &pi, &gi, &slot) != TPX_OK)
        return tpx_err_set(err, TPX_ENOMEM, "%s: out of memory", b->bound ? "record" : "commit");
    p = &l->pods[pi];
    g = gi != TOPO_NONE ? &l->groups[gi] : NULL;
    if (g) {
        held_early = g->held_early; /* the rest is held already (pol_gang_hold) */
        g->held_early = false;
    }
    if (b->bound)
        led_displace(l, b->node); /* the pod is there: holds it overbooks move elsewhere in scope */
    if (g && g->placed == 1 && slot != NO_SLOT && !x->invalid && !held_early)
        led_reserve_rest(l, x, g, (unsigned)slot);
    fill_out(l, p, g, out);
    p->out = *out;
    return TPX_OK;
}

/* A group held at a filter (pol_gang_hold) whose first bound member goes outside the held scope:
 * the scheduler chose another scope (in-tree TAS tried several and took its best). The hold is let
 * go, and the member books as the group's first: its scope must hold the whole group. */
static void follow_first_bound(struct pol_ledger *l, const struct pol_workload *wl, size_t node)
{
    size_t gi = led_group_find(l, wl->group);
    const struct group *g;

    if (gi == TOPO_NONE)
        return;
    g = &l->groups[gi];
    if (g->held_early && g->placed == 0 && g->scope_id != TOPO_NONE &&
        l->scope_of[g->scope][node] != g->scope_id)
        led_drop_group(l, gi);
}

unsigned pol_ledger_make_room(struct pol_ledger *l, size_t node, unsigned want)
{
    if (node < l->nnodes && node_free(l, node) < want)
        pol_yield_waiting(l, NULL, node);
    return node < l->nnodes ? node_free(l, node) : 0;
}

size_t pol_yield_waiting(struct pol_ledger *l, const char *own, size_t node)
{
    size_t n = 0;

    for (size_t gi = 0; gi < l->ngroups; gi++) {
        const struct group *g = &l->groups[gi];

        if (g->live && g->waiting && g->placed == 0 && g->scope_id != TOPO_NONE &&
            l->scope_of[g->scope][node] == g->scope_id && strcmp(g->key, own ? own : "") != 0) {
            led_drop_group(l, gi);
            n++;
        }
    }
    return n;
}

enum tpx_code pol_commit(struct pol_ledger *l, const struct pol_workload *wl, const char *uid,
                         const char *name, size_t node, time_t now, unsigned ttl_s,
                         struct pol_placement *out, struct tpx_err *err)
{
    return pol_commit_memo(l, NULL, wl, uid, name, node, now, ttl_s, out, err);
}

enum tpx_code pol_commit_memo(struct pol_ledger *l, struct pol_scope_memo *memo,
                              const struct pol_workload *wl, const char *uid, const char *name,
                              size_t node, time_t now, unsigned ttl_s, struct pol_placement *out,
                              struct tpx_err *err)
{
    const struct booking b = {uid, name, node, now, ttl_s, false};
    struct ctx x;
    struct reason_code code;
    enum tpx_code rc;
    bool fits;

    if (answered_before_booking(l, "commit", uid, node, out, &rc, err))
        return rc;
    follow_first_bound(l, wl, node);
    if (led_ctx_init(&x, l, wl, memo, err) != TPX_OK)
        return err->code;
    fits = led_judge(&x, node, &code) == POL_FIT;
    if (!fits && pol_yield_waiting(l, wl->group, node) > 0) {
        led_ctx_release(&x); /* judged again without them */
        if (led_ctx_init(&x, l, wl, memo, err) != TPX_OK)
            return err->code;
        fits = led_judge(&x, node, &code) == POL_FIT;
    }
    if (!fits) {
        char text[400];
        led_reason_text(&x, &code, text, sizeof(text));
        rc = tpx_err_set(err, TPX_EINVAL, "node '%s' no longer fits: %s",
                         topo_cluster_node(l->c, node)->name, text);
    } else {
        rc = place_and_book(l, &x, &b, out, err);
    }
    led_ctx_release(&x);
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
    if (x->e.idx >= 0 && led_slot(g, (unsigned)x->e.idx)->filled) {
        snprintf(text, sizeof(text), "pod '%s': index %d of group %s is already taken", who,
                 x->e.idx, g->display);
        add_warn(warn, warn_len, text);
    }
    if (g->scope_id != TOPO_NONE && l->scope_of[g->scope][b->node] != g->scope_id) {
        snprintf(text, sizeof(text), "pod '%s' of group %s is on node '%s' outside %s %s", who,
                 g->display, topo_cluster_node(l->c, b->node)->name, led_scope_word[g->scope],
                 led_scope_name(l, g->scope, g->scope_id));
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
    follow_first_bound(l, wl, node);
    if (led_ctx_init(&x, l, wl, NULL, err) != TPX_OK)
        return err->code;
    warn_bound(&x, &b, warn, warn_len);
    rc = place_and_book(l, &x, &b, out, err);
    if (rc == TPX_OK && l->node_used[node] > l->n_alloc[node]) {
        snprintf(text, sizeof(text), "node '%s' has %u %s in use by its pods, %u allocatable",
                 topo_cluster_node(l->c, node)->name, l->node_used[node],
                 pol_accel_word(wl->resource), l->n_alloc[node]);
        add_warn(warn, warn_len, text);
    }
    led_ctx_release(&x);
    return rc;
}

/* The candidates already meet the hold of wl's group, or a bound member leads it. */
static bool hold_stands(const struct pol_ledger *l, size_t gi, const size_t *cand, size_t n)
{
    const struct group *g = &l->groups[gi];

    if (g->placed > 0 || !g->held_early)
        return true;
    for (size_t i = 0; i < n; i++) {
        if (cand[i] < l->nnodes && l->scope_of[g->scope][cand[i]] == g->scope_id)
            return true;
    }
    return false;
}

/* The candidate a first member of wl's shape would take: fitting, best scored, first on a tie.
 * TOPO_NONE when none fits. */
static enum tpx_code best_first(const struct pol_ledger *l, struct pol_scope_memo *memo,
                                const struct pol_workload *wl, const size_t *cand, size_t n,
                                time_t now, size_t *best, struct tpx_err *err)
{
    struct pol_filter_result fr = {0};
    int *scores = malloc((n ? n : 1) * sizeof(*scores));
    enum tpx_code rc;
    int top = -1;

    *best = TOPO_NONE;
    if (!scores)
        return tpx_err_set(err, TPX_ENOMEM, "policy: out of memory");
    rc = pol_filter_memo(l, memo, wl, cand, n, now, &fr, err);
    if (rc == TPX_OK && fr.nfit > 0)
        rc = pol_score_memo(l, memo, wl, cand, n, now, scores, err);
    for (size_t i = 0; rc == TPX_OK && fr.nfit > 0 && i < n; i++) {
        if (fr.verdict[i] == POL_FIT && scores[i] > top) {
            top = scores[i];
            *best = cand[i];
        }
    }
    pol_filter_result_release(&fr);
    free(scores);
    return rc;
}

enum tpx_code pol_gang_hold(struct pol_ledger *l, struct pol_scope_memo *memo,
                            const struct pol_workload *wl, const size_t *cand, size_t n, time_t now,
                            unsigned ttl_s, bool *held, struct tpx_err *err)
{
    struct pol_workload first = *wl;
    size_t gi, node;
    struct ctx x;
    struct group *g;
    bool ok;

    if (held)
        *held = false;
    if (!wl->has_intent || wl->preferred || !wl->group[0] || wl->group_size < 2)
        return TPX_OK;
    gi = led_group_find(l, wl->group);
    if (gi != TOPO_NONE && hold_stands(l, gi, cand, n))
        return TPX_OK;
    /* judged as the group's first member: without a group record, the group's size kept; the
     * old hold (elsewhere) counts as another group's while the candidates are judged */
    first.group[0] = '\0';
    if (best_first(l, memo, &first, cand, n, now, &node, err) != TPX_OK)
        return err->code;
    if (node == TOPO_NONE)
        return TPX_OK; /* nowhere here: the filter says why; an old hold stays */
    if (gi != TOPO_NONE)
        led_drop_group(l, gi);
    if (led_ctx_init(&x, l, &first, memo, err) != TPX_OK)
        return err->code;
    gi = led_new_group(l, wl->group, wl->display, x.e.n, 1);
    if (gi == TOPO_NONE) {
        led_ctx_release(&x);
        return tpx_err_set(err, TPX_ENOMEM, "policy: out of memory");
    }
    g = &l->groups[gi];
    group_shape(g, &x);
    g->expires = now + (time_t)ttl_s;
    g->held_early = true;
    ok = !x.invalid && led_hold_group(l, &x, g, node);
    led_ctx_release(&x);
    if (!ok) {
        led_drop_group(l, gi);
        return TPX_OK;
    }
    if (held)
        *held = true;
    return TPX_OK;
}
