/* SPDX-License-Identifier: Apache-2.0 */
/* simulate/sim.c - the replay behind `topox simulate`: each arrival of a trace placed pod by pod
 * through pol_filter, pol_score and pol_commit on one ledger (as serve sees a group come, leader
 * first), or through the two reference policies, each leave released with pol_ledger_forget_pod;
 * the counters and a sample of the cluster after every event. Pure: no I/O, no JSON. */
#include "simulate/sim.h"
#include "simulate/sim_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "common/map.h"
#include "policy/policy.h"

const char *sim_policy_name(enum sim_policy p)
{
    return p == SIM_BEST_FIT           ? "best-fit"
           : p == SIM_BLIND            ? "blind"
           : p == SIM_PACK             ? "pack"
           : p == SIM_PACK_TERM        ? "pack-term"
           : p == SIM_FLUID            ? "fluid"
           : p == SIM_FLUID_RACK       ? "fluid-rack"
           : p == SIM_KUEUE_BEST_FIT   ? "kueue-best-fit"
           : p == SIM_KUEUE_LEAST_FREE ? "kueue-least-free"
           : p == SIM_VOLCANO_BINPACK  ? "volcano-binpack"
           : p == SIM_SLURM_BLOCK      ? "slurm-block"
                                       : "topox";
}

bool sim_policy_parse(const char *s, enum sim_policy *out)
{
    static const enum sim_policy all[] = {SIM_TOPOX,
                                          SIM_BEST_FIT,
                                          SIM_BLIND,
                                          SIM_PACK,
                                          SIM_PACK_TERM,
                                          SIM_FLUID,
                                          SIM_FLUID_RACK,
                                          SIM_KUEUE_BEST_FIT,
                                          SIM_KUEUE_LEAST_FREE,
                                          SIM_VOLCANO_BINPACK,
                                          SIM_SLURM_BLOCK};

    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
        if (strcmp(s, sim_policy_name(all[i])) == 0) {
            *out = all[i];
            return true;
        }
    }
    return false;
}

/* The workload of pod k of the group that arrives with e: a certain layout, as the annotations
 * topox.io/tensor-parallel-size, pipeline-parallel-size, group, group-size and pod-index say. */
static void sim_workload(const struct sim_event *e, unsigned k, bool intent,
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
    wl->scope = e->block ? POL_SCOPE_BLOCK : POL_SCOPE_RACK;
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

static void sim_uid(const struct sim_event *e, unsigned k, char *buf, size_t len)
{
    snprintf(buf, len, "sim:%s/%u", e->group, k);
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
    const struct sim_event *e = g->ev;
    struct pol_workload wl;
    struct pol_filter_result res;
    char uid[SIM_NAME_MAX + 32];
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
    best = k == 0 && sim_picks_first(s->policy) ? sim_pick_first(s, e, &res) : pick_scored(s, &res);
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
    const struct sim_event *e = g->ev;
    struct pol_workload wl;
    char uid[SIM_NAME_MAX + 32];

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

bool sim_fluid(const struct sim *s)
{
    return s->policy == SIM_FLUID || s->policy == SIM_FLUID_RACK;
}

/* The fluid references: the whole group or nothing, by counts of free accelerators alone. */
static void place_fluid(struct sim *s, struct sim_group *g)
{
    unsigned long need = (unsigned long)g->ev->pods * g->ev->gpus;
    size_t best = TOPO_NONE;

    if (s->fluid_free < need)
        return;
    if (s->policy == SIM_FLUID_RACK && !g->ev->block) {
        for (size_t r = 0; r < s->nracks; r++) {
            if (s->rack_free[r] >= need &&
                (best == TOPO_NONE || s->rack_free[r] < s->rack_free[best]))
                best = r;
        }
        if (best == TOPO_NONE)
            return;
        s->rack_free[best] -= need;
    }
    s->fluid_free -= need;
    g->rack = best;
    g->placed = g->ev->pods;
}

/* Free accelerators now, of the cluster and per rack (into s->rack_free unless fluid). */
unsigned long sim_free_counts(struct sim *s)
{
    unsigned long all = 0;

    if (sim_fluid(s))
        return s->fluid_free;
    memset(s->rack_free, 0, s->nracks * sizeof(*s->rack_free));
    for (size_t i = 0; i < s->nn; i++) {
        unsigned f = pol_ledger_node_free(s->l, i);
        all += f;
        s->rack_free[topo_cluster_node_rack(s->c, i)] += f;
    }
    return all;
}

/* The breakdown entry of e's shape, made on its first arrival; NULL when out of memory. */
void sim_shape_name(const struct sim_event *e, char *buf, size_t len)
{
    unsigned total = e->pods * e->gpus, tpp = e->tp * e->pp;
    unsigned dp = tpp && total % tpp == 0 ? total / tpp : 1;
    int n = snprintf(buf, len, "tp%uxpp%u", e->tp, e->pp);

    if (dp > 1 && n > 0 && (size_t)n < len)
        n += snprintf(buf + n, len - (size_t)n, "xdp%u", dp);
    if (n > 0 && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n, "-%ux%u%s", e->pods, e->gpus, e->block ? "-block" : "");
}

struct sim_shape *sim_shape_of(struct sim *s, const struct sim_event *e)
{
    struct sim_result *r = s->out;
    struct sim_shape *sh;

    for (size_t i = 0; i < r->nshapes; i++) {
        sh = &r->shapes[i];
        if (sh->pods == e->pods && sh->gpus == e->gpus && sh->tp == e->tp && sh->pp == e->pp &&
            sh->block == e->block)
            return sh;
    }
    if (!TPX_GROW(r->shapes, s->shapes_cap, r->nshapes + 1))
        return NULL;
    sh = &r->shapes[r->nshapes++];
    memset(sh, 0, sizeof(*sh));
    sh->pods = e->pods;
    sh->gpus = e->gpus;
    sh->tp = e->tp;
    sh->pp = e->pp;
    sh->block = e->block;
    sim_shape_name(e, sh->name, sizeof(sh->name));
    return sh;
}

/* Count a group once its arrival is done. */
enum tpx_code sim_classify(struct sim *s, struct sim_group *g, struct tpx_err *err)
{
    const struct sim_event *e = g->ev;
    struct sim_counts *cn = &s->out->counts;
    struct sim_shape *sh = sim_shape_of(s, e);
    bool one_rack = true, tp_ok = true;
    unsigned ppu = e->gpus < e->tp ? e->tp / e->gpus : 1;
    unsigned long need = (unsigned long)e->pods * e->gpus;

    if (!sh)
        return tpx_err_set(err, TPX_ENOMEM, "simulate: out of memory");
    cn->arrived++;
    sh->arrived++;
    if (g->placed == 0) {
        bool room, rack_room = false;
        cn->rejected++;
        sh->rejected++;
        /* the cluster had the accelerators, not in a place the rules allow */
        room = sim_free_counts(s) >= need;
        for (size_t r = 0; room && r < s->nracks && !rack_room; r++)
            rack_room = s->rack_free[r] >= need;
        cn->rejected_with_room += room;
        sh->with_room += room;
        sh->with_rack_room += rack_room;
        return TPX_OK;
    }
    if (g->placed < e->pods) {
        cn->half++;
        g->half = true;
        s->half_held += g->placed * e->gpus;
        return TPX_OK;
    }
    if (sim_fluid(s)) {
        cn->whole++;
        sh->whole++;
        cn->whole_gpus += need;
        return TPX_OK;
    }
    for (unsigned k = 1; k < e->pods; k++) {
        /* the pipeline in one rack (a block-scoped gang: in one block) */
        one_rack = one_rack && (e->block ? topo_cluster_node_block(s->c, g->nodes[k]) ==
                                               topo_cluster_node_block(s->c, g->nodes[0])
                                         : topo_cluster_node_rack(s->c, g->nodes[k]) ==
                                               topo_cluster_node_rack(s->c, g->nodes[0]));
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
        sh->whole++;
        cn->whole_gpus += need;
    }
    return TPX_OK;
}

enum tpx_code sim_place_group(struct sim *s, struct sim_group *g, time_t now, struct tpx_err *err)
{
    enum tpx_code rc = TPX_OK;

    if (sim_fluid(s))
        place_fluid(s, g);
    for (unsigned k = g->placed; !sim_fluid(s) && k < g->ev->pods && rc == TPX_OK; k++) {
        bool placed;
        rc = s->policy == SIM_BLIND ? place_blind(s, g, k, now, &placed, err)
                                    : place_ruled(s, g, k, now, &placed, err);
        if (rc == TPX_OK && !placed)
            break;
    }
    return rc;
}

void sim_release_group(struct sim *s, struct sim_group *g)
{
    char uid[SIM_NAME_MAX + 32];

    if (sim_fluid(s) && g->placed) {
        unsigned long need = (unsigned long)g->ev->pods * g->ev->gpus;
        s->fluid_free += need;
        if (g->rack != TOPO_NONE)
            s->rack_free[g->rack] += need;
    }
    for (unsigned k = 0; !sim_fluid(s) && k < g->placed; k++) {
        sim_uid(g->ev, k, uid, sizeof(uid));
        pol_ledger_forget_pod(s->l, uid);
    }
    if (g->half)
        s->half_held -= g->placed * g->ev->gpus;
    g->placed = 0;
    g->half = false;
    g->rack = TOPO_NONE;
}

static enum tpx_code arrive(struct sim *s, const struct sim_event *e, struct tpx_err *err)
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
    g->rack = TOPO_NONE;
    g->nodes = calloc(e->pods + 1, sizeof(*g->nodes));
    if (!g->nodes || tpx_map_put_num(&s->live, e->group, gi, err) != TPX_OK) {
        free(g->nodes);
        g->nodes = NULL;
        s->free_groups[s->nfree++] = gi;
        return tpx_err_set(err, TPX_ENOMEM, "simulate: out of memory");
    }
    rc = sim_place_group(s, g, now, err);
    return rc == TPX_OK ? sim_classify(s, g, err) : rc;
}

static void leave(struct sim *s, const struct sim_event *e)
{
    size_t gi;
    struct sim_group *g;

    if (!tpx_map_get_num(&s->live, e->group, &gi))
        return;
    g = &s->groups[gi];
    sim_release_group(s, g);
    tpx_map_del(&s->live, e->group, NULL);
    free(g->nodes);
    g->nodes = NULL;
    s->free_groups[s->nfree++] = gi;
}

/* The cluster now, from the ledger's domains. */
static void sample(const struct sim *s, double t, struct sim_sample *out)
{
    unsigned free_all, whole;

    if (sim_fluid(s)) {
        /* counts only: nothing is stranded, nothing fragmented */
        *out = (struct sim_sample){t,
                                   (unsigned)(s->out->accel_total - s->fluid_free),
                                   (unsigned)s->fluid_free,
                                   (unsigned)s->fluid_free,
                                   0,
                                   0.0};
        return;
    }
    pol_ledger_free_whole(s->l, &free_all, &whole);
    out->t = t;
    out->free = free_all;
    out->used = s->out->accel_total > free_all ? s->out->accel_total - free_all : 0;
    out->free_whole = whole;
    out->stranded = free_all - whole + s->half_held;
    out->frag = free_all ? 1.0 - (double)whole / free_all : 0.0;
}

enum tpx_code sim_push_sample(struct sim *s, double t, struct tpx_err *err)
{
    struct sim_result *r = s->out;
    struct sim_sample now;

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
    free(s->rack_free);
    tpx_map_release(&s->live);
    sim_queue_release(s);
    pol_scope_memo_free(s->memo);
    pol_ledger_free(s->l);
}

enum tpx_code sim_run(const struct topo_cluster *c, const struct sim_event *ev, size_t n,
                      enum sim_policy p, struct sim_result *out, struct tpx_err *err)
{
    return sim_run_opts(c, ev, n, p, NULL, out, err);
}

enum tpx_code sim_run_opts(const struct topo_cluster *c, const struct sim_event *ev, size_t n,
                           enum sim_policy p, const struct sim_opts *o, struct sim_result *out,
                           struct tpx_err *err)
{
    static const struct sim_opts none = SIM_OPTS_INIT;
    struct sim s = {.c = c, .policy = p, .out = out, .o = o ? o : &none};
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
    pol_ledger_set_pack(s.l, p == SIM_PACK);
    if (p == SIM_PACK_TERM)
        pol_ledger_set_pack_term(s.l, true);
    s.memo = pol_scope_memo_new();
    s.cand = malloc((s.nn + 1) * sizeof(*s.cand));
    s.scores = malloc((s.nn + 1) * sizeof(*s.scores));
    s.nracks = topo_cluster_rack_count(c);
    s.racks = malloc((s.nracks + 1) * sizeof(*s.racks));
    s.rack_free = calloc(s.nracks + 1, sizeof(*s.rack_free));
    s.free_groups = malloc((n + 1) * sizeof(*s.free_groups));
    if (!s.memo || !s.cand || !s.scores || !s.racks || !s.rack_free || !s.free_groups) {
        rc = tpx_err_set(err, TPX_ENOMEM, "simulate: out of memory");
        goto out;
    }
    for (size_t i = 0; i < s.nn; i++)
        s.cand[i] = i;
    for (size_t i = 0; i < s.nn; i++) {
        const struct topo_node_info *tn = topo_cluster_node(c, i);
        unsigned long f = tn->unschedulable ? 0 : tn->accel_alloc;
        s.fluid_free += f;
        s.rack_free[topo_cluster_node_rack(c, i)] += f;
    }
    rc = sim_push_sample(&s, 0, err);
    if (rc == TPX_OK && s.o->queue) {
        rc = sim_queue_run(&s, ev, n, err);
        goto out;
    }
    for (size_t i = 0; i < n && rc == TPX_OK; i++) {
        const struct sim_event *e = &ev[i];
        const struct sim_sample *last = &out->samples[out->nsamples - 1];
        double dt_h;
        if (e->t < prev_t) {
            rc = tpx_err_set(err, TPX_EINVAL, "line %zu: time %g is before the previous %g",
                             e->line, e->t, prev_t);
            break;
        }
        dt_h = (e->t - prev_t) / 3600.0;
        out->counts.gpu_hours_used += last->used * dt_h;
        out->counts.gpu_hours_delivered += last->used * dt_h;
        out->counts.gpu_hours_stranded += last->stranded * dt_h;
        prev_t = e->t;
        pol_ledger_expire(s.l, (time_t)e->t);
        if (e->arrive)
            rc = arrive(&s, e, err);
        else
            leave(&s, e);
        if (rc == TPX_OK)
            rc = sim_push_sample(&s, e->t, err);
    }
out:
    sim_release(&s);
    if (rc != TPX_OK)
        sim_result_release(out);
    return rc;
}

void sim_result_release(struct sim_result *r)
{
    if (!r)
        return;
    free(r->samples);
    for (size_t k = 0; k < r->nshapes; k++)
        free(r->shapes[k].waits);
    free(r->shapes);
    memset(r, 0, sizeof(*r));
}
