/* SPDX-License-Identifier: Apache-2.0 */
/* policy/sim.c - the replay behind `topox simulate`: each arrival of a trace placed pod by pod
 * through pol_filter, pol_score and pol_commit on one ledger (as serve sees a group come, leader
 * first), or through the two reference policies, each leave released with pol_ledger_forget_pod;
 * the counters and a sample of the cluster after every event. Pure: no I/O, no JSON. */
#include "policy/sim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "common/map.h"
#include "policy/ledger_int.h"
#include "policy/policy.h"

#define SIM_TTL_S 600

const char *pol_sim_policy_name(enum pol_sim_policy p)
{
    return p == POL_SIM_BEST_FIT ? "best-fit"
           : p == POL_SIM_BLIND  ? "blind"
           : p == POL_SIM_PACK   ? "pack"
                                 : "topox";
}

bool pol_sim_policy_parse(const char *s, enum pol_sim_policy *out)
{
    static const enum pol_sim_policy all[] = {POL_SIM_TOPOX, POL_SIM_BEST_FIT, POL_SIM_BLIND,
                                              POL_SIM_PACK};

    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
        if (strcmp(s, pol_sim_policy_name(all[i])) == 0) {
            *out = all[i];
            return true;
        }
    }
    return false;
}

/* A live group of the replay. */
struct sim_group {
    const struct pol_sim_event *ev; /* its arrival (borrowed from the trace) */
    size_t *nodes;                  /* placed pods' nodes, ev->pods entries */
    unsigned placed;
    bool half;
};

/* The state of one replay. */
struct sim {
    const struct topo_cluster *c;
    struct pol_ledger *l;
    struct pol_scope_memo *memo;
    enum pol_sim_policy policy;
    size_t nn;
    size_t *cand;
    int *scores;
    struct pol_rack_summary *racks;
    struct sim_group *groups;
    size_t ngroups, groups_cap;
    size_t *free_groups;
    size_t nfree;
    struct tpx_map live; /* group name -> index in groups[] */
    unsigned half_held;  /* accelerators held by half-placed groups */
    struct pol_sim_result *out;
    size_t samples_cap;
};

/* The workload of pod k of the group that arrives with e: a certain layout, as the annotations
 * topox.io/tensor-parallel-size, pipeline-parallel-size, group, group-size and pod-index say. */
static void sim_workload(const struct pol_sim_event *e, unsigned k, bool intent,
                         struct pol_workload *wl)
{
    unsigned total = e->pods * e->gpus, tpp = e->tp * e->pp;

    memset(wl, 0, sizeof(*wl));
    wl->has_intent = intent;
    wl->tp = e->tp;
    wl->pp = e->pp;
    wl->dp = tpp && total % tpp == 0 ? total / tpp : 1;
    wl->accel_per_pod = e->gpus;
    wl->group_size = e->pods;
    wl->pod_index = (int)k;
    snprintf(wl->group, sizeof(wl->group), "sim/%s", e->group);
    snprintf(wl->display, sizeof(wl->display), "sim/%s", e->group);
    wl->scope = POL_SCOPE_RACK;
    wl->tp_explicit = wl->pp_explicit = wl->size_explicit = true;
    wl->tp_source = "annotation";
    snprintf(wl->resource, sizeof(wl->resource), "nvidia.com/gpu");
    wl->layout.tp = e->tp;
    wl->layout.pp = e->pp;
    wl->layout.dp = wl->dp;
    wl->layout.accel = total;
    wl->layout.ep = 1;
    wl->layout.engine = "";
    wl->layout.certain = true;
}

static void sim_uid(const struct pol_sim_event *e, unsigned k, char *buf, size_t len)
{
    snprintf(buf, len, "sim:%s/%u", e->group, k);
}

/* Best fit for a group's first member (POL_SIM_BEST_FIT): the fitting node whose rack is left with
 * the least free accelerators after the whole group, then the node with the least free, then the
 * lowest index. (size_t)-1 when none fits. */
static size_t pick_best_fit(struct sim *s, const struct pol_sim_event *e,
                            const struct pol_filter_result *res)
{
    unsigned long total = (unsigned long)e->pods * e->gpus;
    size_t best = (size_t)-1;
    unsigned long best_rack = 0;
    unsigned best_node = 0;

    pol_ledger_racks(s->l, s->racks);
    for (size_t i = 0; i < s->nn; i++) {
        unsigned long rf;
        unsigned nf;
        if (res->verdict[i] != POL_FIT)
            continue;
        rf = s->racks[topo_cluster_node_rack(s->c, i)].accel_free;
        rf = rf > total ? rf - total : 0;
        nf = pol_ledger_node_free(s->l, i);
        if (best == (size_t)-1 || rf < best_rack || (rf == best_rack && nf < best_node)) {
            best = i;
            best_rack = rf;
            best_node = nf;
        }
    }
    return best;
}

/* The best-scored fitting node, ties to the lowest index; nodes scored below 0 were tried. */
static size_t pick_scored(const struct sim *s, const struct pol_filter_result *res)
{
    size_t best = (size_t)-1;

    for (size_t i = 0; i < s->nn; i++) {
        if (res->verdict[i] == POL_FIT && s->scores[i] >= 0 &&
            (best == (size_t)-1 || s->scores[i] > s->scores[best]))
            best = i;
    }
    return best;
}

/* Place pod k of g with the rules (topox, best-fit): true when it was committed. */
static enum tpx_code place_ruled(struct sim *s, struct sim_group *g, unsigned k, time_t now,
                                 bool *placed, struct tpx_err *err)
{
    const struct pol_sim_event *e = g->ev;
    struct pol_workload wl;
    struct pol_filter_result res;
    char uid[POL_SIM_NAME_MAX + 32];
    size_t best;
    enum tpx_code rc;

    *placed = false;
    sim_workload(e, k, true, &wl);
    sim_uid(e, k, uid, sizeof(uid));
    rc = pol_filter_memo(s->l, s->memo, &wl, s->cand, s->nn, now, &res, err);
    if (rc != TPX_OK)
        return rc;
    rc = pol_score_memo(s->l, s->memo, &wl, s->cand, s->nn, now, s->scores, err);
    if (rc != TPX_OK)
        goto out;
    best =
        s->policy == POL_SIM_BEST_FIT && k == 0 ? pick_best_fit(s, e, &res) : pick_scored(s, &res);
    while (best != (size_t)-1) {
        struct pol_placement where;
        struct tpx_err cerr = TPX_ERR_INIT;
        if (pol_commit(s->l, &wl, uid, e->group, best, now, SIM_TTL_S, &where, &cerr) == TPX_OK) {
            g->nodes[g->placed++] = best;
            *placed = true;
            break;
        }
        if (cerr.code != TPX_EINVAL) {
            rc = tpx_err_set(err, cerr.code, "%s", cerr.msg);
            break;
        }
        /* the filter passed a node commit refuses (should not happen): try the next */
        s->scores[best] = -1;
        res.verdict[best] = POL_FAIL;
        best = pick_scored(s, &res);
    }
out:
    pol_filter_result_release(&res);
    return rc;
}

/* Place pod k of g blind: the first node with room, no rules, no group. */
static enum tpx_code place_blind(struct sim *s, struct sim_group *g, unsigned k, time_t now,
                                 bool *placed, struct tpx_err *err)
{
    const struct pol_sim_event *e = g->ev;
    struct pol_workload wl;
    char uid[POL_SIM_NAME_MAX + 32];

    *placed = false;
    sim_workload(e, k, false, &wl);
    sim_uid(e, k, uid, sizeof(uid));
    for (size_t i = 0; i < s->nn; i++) {
        struct pol_placement where;
        struct tpx_err cerr = TPX_ERR_INIT;
        if (pol_ledger_node_free(s->l, i) < e->gpus)
            continue;
        if (pol_commit(s->l, &wl, uid, e->group, i, now, SIM_TTL_S, &where, &cerr) == TPX_OK) {
            g->nodes[g->placed++] = i;
            *placed = true;
            return TPX_OK;
        }
        if (cerr.code != TPX_EINVAL)
            return tpx_err_set(err, cerr.code, "%s", cerr.msg);
    }
    return TPX_OK;
}

/* Count a group once its arrival is done. */
static void classify(struct sim *s, struct sim_group *g)
{
    const struct pol_sim_event *e = g->ev;
    struct pol_sim_counts *cn = &s->out->counts;
    bool one_rack = true, tp_ok = true;
    unsigned ppu = e->gpus < e->tp ? e->tp / e->gpus : 1;
    unsigned long free_now = 0;

    cn->arrived++;
    if (g->placed == 0) {
        cn->rejected++;
        for (size_t i = 0; i < s->nn; i++)
            free_now += pol_ledger_node_free(s->l, i);
        /* the cluster had the accelerators, not in a place the rules allow */
        cn->rejected_with_room += free_now >= e->pods * e->gpus;
        return;
    }
    if (g->placed < e->pods) {
        cn->half++;
        g->half = true;
        s->half_held += g->placed * e->gpus;
        return;
    }
    for (unsigned k = 1; k < e->pods; k++) {
        one_rack = one_rack && topo_cluster_node_rack(s->c, g->nodes[k]) ==
                                   topo_cluster_node_rack(s->c, g->nodes[0]);
        /* the pods of one TP unit share a domain */
        if (ppu > 1 && k % ppu != 0)
            tp_ok = tp_ok && topo_cluster_node_domain(s->c, g->nodes[k]) ==
                                 topo_cluster_node_domain(s->c, g->nodes[k - 1]);
    }
    if (!one_rack) {
        cn->cross_rack++;
    } else if (!tp_ok) {
        cn->tp_split++;
    } else {
        cn->whole++;
        cn->whole_gpus += (size_t)e->pods * e->gpus;
    }
}

static enum tpx_code arrive(struct sim *s, const struct pol_sim_event *e, struct tpx_err *err)
{
    time_t now = (time_t)e->t;
    size_t gi;
    struct sim_group *g;
    enum tpx_code rc = TPX_OK;

    if (tpx_map_find(&s->live, e->group))
        return tpx_err_set(err, TPX_EINVAL, "line %zu: group '%s' arrives again before it leaves",
                           e->line, e->group);
    if (s->nfree) {
        gi = s->free_groups[--s->nfree];
    } else {
        if (!TPX_GROW(s->groups, s->groups_cap, s->ngroups + 1))
            return tpx_err_set(err, TPX_ENOMEM, "simulate: out of memory");
        gi = s->ngroups++;
    }
    g = &s->groups[gi];
    memset(g, 0, sizeof(*g));
    g->ev = e;
    g->nodes = calloc(e->pods + 1, sizeof(*g->nodes));
    if (!g->nodes || tpx_map_put_num(&s->live, e->group, gi, err) != TPX_OK) {
        free(g->nodes);
        g->nodes = NULL;
        s->free_groups[s->nfree++] = gi;
        return tpx_err_set(err, TPX_ENOMEM, "simulate: out of memory");
    }
    for (unsigned k = 0; k < e->pods && rc == TPX_OK; k++) {
        bool placed;
        rc = s->policy == POL_SIM_BLIND ? place_blind(s, g, k, now, &placed, err)
                                        : place_ruled(s, g, k, now, &placed, err);
        if (rc == TPX_OK && !placed)
            break;
    }
    classify(s, g);
    return rc;
}

static void leave(struct sim *s, const struct pol_sim_event *e)
{
    size_t gi;
    struct sim_group *g;
    char uid[POL_SIM_NAME_MAX + 32];

    if (!tpx_map_get_num(&s->live, e->group, &gi))
        return;
    g = &s->groups[gi];
    for (unsigned k = 0; k < g->placed; k++) {
        sim_uid(g->ev, k, uid, sizeof(uid));
        pol_ledger_forget_pod(s->l, uid);
    }
    if (g->half)
        s->half_held -= g->placed * g->ev->gpus;
    tpx_map_del(&s->live, e->group, NULL);
    free(g->nodes);
    g->nodes = NULL;
    s->free_groups[s->nfree++] = gi;
}

/* The cluster now, from the ledger's domains. */
static void sample(const struct sim *s, double t, struct pol_sim_sample *out)
{
    const struct pol_ledger *l = s->l;
    unsigned free_all = 0, whole = 0;

    for (size_t n = 0; n < l->nnodes; n++)
        free_all += l->n_unsched[n] ? 0 : node_free(l, n);
    for (size_t d = 0; d < l->ndomains; d++) {
        unsigned size = led_domain_size(l, d);
        if (size > 0 && dom_free(l, d) == size)
            whole += size;
    }
    whole = whole < free_all ? whole : free_all;
    out->t = t;
    out->free = free_all;
    out->used = s->out->accel_total > free_all ? s->out->accel_total - free_all : 0;
    out->free_whole = whole;
    out->stranded = free_all - whole + s->half_held;
    out->frag = free_all ? 1.0 - (double)whole / free_all : 0.0;
}

static enum tpx_code push_sample(struct sim *s, double t, struct tpx_err *err)
{
    struct pol_sim_result *r = s->out;
    struct pol_sim_sample now;

    sample(s, t, &now);
    if (r->nsamples > 0 && r->samples[r->nsamples - 1].t == t) {
        r->samples[r->nsamples - 1] = now; /* one sample per time: the state after its events */
        return TPX_OK;
    }
    if (!TPX_GROW(r->samples, s->samples_cap, r->nsamples + 1))
        return tpx_err_set(err, TPX_ENOMEM, "simulate: out of memory");
    r->samples[r->nsamples++] = now;
    return TPX_OK;
}

static void sim_release(struct sim *s)
{
    for (size_t i = 0; i < s->ngroups; i++)
        free(s->groups[i].nodes);
    free(s->groups);
    free(s->free_groups);
    free(s->cand);
    free(s->scores);
    free(s->racks);
    tpx_map_release(&s->live);
    pol_scope_memo_free(s->memo);
    pol_ledger_free(s->l);
}

enum tpx_code pol_sim_run(const struct topo_cluster *c, const struct pol_sim_event *ev, size_t n,
                          enum pol_sim_policy p, struct pol_sim_result *out, struct tpx_err *err)
{
    struct sim s = {.c = c, .policy = p, .out = out};
    enum tpx_code rc = TPX_OK;
    double prev_t = 0;

    memset(out, 0, sizeof(*out));
    out->policy = p;
    s.nn = topo_cluster_node_count(c);
    for (size_t i = 0; i < s.nn; i++)
        out->accel_total +=
            topo_cluster_node(c, i)->unschedulable ? 0 : topo_cluster_node(c, i)->accel_alloc;
    s.l = pol_ledger_new(c, err);
    if (!s.l)
        return err->code;
    pol_ledger_set_pack(s.l, p == POL_SIM_PACK);
    s.memo = pol_scope_memo_new();
    s.cand = malloc((s.nn + 1) * sizeof(*s.cand));
    s.scores = malloc((s.nn + 1) * sizeof(*s.scores));
    s.racks = malloc((topo_cluster_rack_count(c) + 1) * sizeof(*s.racks));
    s.free_groups = malloc((n + 1) * sizeof(*s.free_groups));
    if (!s.memo || !s.cand || !s.scores || !s.racks || !s.free_groups) {
        rc = tpx_err_set(err, TPX_ENOMEM, "simulate: out of memory");
        goto out;
    }
    for (size_t i = 0; i < s.nn; i++)
        s.cand[i] = i;
    rc = push_sample(&s, 0, err);
    for (size_t i = 0; i < n && rc == TPX_OK; i++) {
        const struct pol_sim_event *e = &ev[i];
        const struct pol_sim_sample *last = &out->samples[out->nsamples - 1];
        double dt_h;
        if (e->t < prev_t) {
            rc = tpx_err_set(err, TPX_EINVAL, "line %zu: time %g is before the previous %g",
                             e->line, e->t, prev_t);
            break;
        }
        dt_h = (e->t - prev_t) / 3600.0;
        out->counts.gpu_hours_used += last->used * dt_h;
        out->counts.gpu_hours_stranded += last->stranded * dt_h;
        prev_t = e->t;
        pol_ledger_expire(s.l, (time_t)e->t);
        if (e->arrive)
            rc = arrive(&s, e, err);
        else
            leave(&s, e);
        if (rc == TPX_OK)
            rc = push_sample(&s, e->t, err);
    }
out:
    sim_release(&s);
    if (rc != TPX_OK)
        pol_sim_result_release(out);
    return rc;
}

void pol_sim_result_release(struct pol_sim_result *r)
{
    if (!r)
        return;
    free(r->samples);
    memset(r, 0, sizeof(*r));
}
