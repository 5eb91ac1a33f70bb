/* SPDX-License-Identifier: Apache-2.0 */
/* policy/plan.c - the whole-job planner behind `topox plan`: every pod of every replica through
 * the same pol_filter, pol_score and pol_commit as `topox serve`, leader first, so the plan says
 * what serve will do. Pure C: no I/O, no JSON, no logging. */
#include "policy/policy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/estimate.h"
#include "policy/ledger_int.h"

struct grow {
    void *p;
    size_t n, cap, size;
};

static void *grow_push(struct grow *g)
{
    if (g->n == g->cap) {
        size_t ncap = g->cap ? g->cap * 2 : 16;
        void *np = realloc(g->p, ncap * g->size);
        if (!np)
            return NULL;
        g->p = np;
        g->cap = ncap;
    }
    return (char *)g->p + g->size * g->n++;
}

/* The most frequent reason of a filter result (the scheduler would show it first). */
static const char *top_reason(const struct pol_filter_result *res)
{
    size_t best = 0, best_n = 0;

    for (size_t r = 0; r < res->nreasons; r++) {
        size_t cnt = 0;
        for (size_t i = 0; i < res->n; i++)
            cnt += res->verdict[i] != POL_FIT && res->reason[i] == r;
        if (cnt > best_n) {
            best = r;
            best_n = cnt;
        }
    }
    return res->nreasons ? res->reasons[best] : "no node";
}

/* The best-scored fitting candidate, or (size_t)-1. Nodes scored below 0 were tried already. */
static size_t pick_best(const struct pol_ledger *l, const struct pol_workload *wl,
                        const struct pol_filter_result *res, const size_t *cand, size_t nn,
                        const int *scores)
{
    size_t best = (size_t)-1;

    for (size_t i = 0; i < nn; i++) {
        /* A pod without topology intent passes the filter everywhere (serve leaves its capacity to
         * kube-scheduler's NodeResourcesFit); the planner must check it. */
        if ((!wl->has_intent || wl->preferred) && wl->accel_per_pod &&
            !pol_ledger_node_serves(l, cand[i], wl->resource))
            continue;
        /* (a preferred pod may take room its own group holds: pol_commit judges its count) */
        if (!wl->has_intent && pol_ledger_node_free(l, cand[i]) < wl->accel_per_pod)
            continue;
        if (res->verdict[i] == POL_FIT && scores[i] >= 0 &&
            (best == (size_t)-1 || scores[i] > scores[best]))
            best = i;
    }
    return best;
}

/* "no node has N free RES (most: M)": of a pod that passes the filter everywhere (no intent, or
 * preferred) and that no candidate has room for, into buf. */
static unsigned no_room(const struct pol_ledger *l, const struct pol_workload *wl,
                        const size_t *cand, size_t nc, char *buf, size_t len)
{
    const struct topo_cluster *c = pol_ledger_cluster(l);
    unsigned most = 0;

    for (size_t i = 0; i < nc; i++) {
        unsigned f = pol_ledger_node_free(l, cand[i]);
        if (pol_ledger_node_serves(l, cand[i], wl->resource) &&
            !topo_cluster_node(c, cand[i])->unschedulable)
            most = f > most ? f : most;
    }
    snprintf(buf, len, "no node has %u free %s (most: %u)", wl->accel_per_pod,
             wl->resource[0] ? wl->resource : pol_accel_word(wl->resource), most);
    return most;
}

void pol_traffic_text(const struct pol_traffic *t, char *buf, size_t len)
{
    const char *unit = t->kind == POL_TRAFFIC_PP ? "stages" : "ranks";

    switch (t->level) {
    case POL_LEVEL_NODE:
        snprintf(buf, len, "%s, %u %s, inside node %s", wl_traffic_kind_name(t->kind), t->ranks,
                 unit, t->where ? t->where : "?");
        break;
    case POL_LEVEL_DOMAIN:
        snprintf(buf, len, "%s, %u %s, inside NVLink domain %s", wl_traffic_kind_name(t->kind),
                 t->ranks, unit, t->where ? t->where : "?");
        break;
    case POL_LEVEL_RACK:
        snprintf(buf, len, "%s, %u %s, over RDMA inside rack %s", wl_traffic_kind_name(t->kind),
                 t->ranks, unit, t->where ? t->where : "?");
        break;
    default:
        snprintf(buf, len, "%s, %u %s, over RDMA across racks", wl_traffic_kind_name(t->kind),
                 t->ranks, unit);
        break;
    }
}

/* The tightest level holding every pod of placed[0, n). */
static void land(const struct topo_cluster *c, const struct pol_plan_pod *placed, size_t n,
                 struct pol_traffic *t)
{
    bool node = true, dom = true, rack = true;
    size_t d0 = topo_cluster_node_domain(c, placed[0].where.node);

    for (size_t k = 1; k < n; k++) {
        node = node && placed[k].where.node == placed[0].where.node;
        dom = dom && topo_cluster_node_domain(c, placed[k].where.node) == d0;
        rack = rack && topo_cluster_node_rack(c, placed[k].where.node) ==
                           topo_cluster_node_rack(c, placed[0].where.node);
    }
    if (node) {
        t->level = POL_LEVEL_NODE;
        t->where = placed[0].where.node_name;
    } else if (dom && topo_cluster_domain_is_multinode(c, d0)) {
        t->level = POL_LEVEL_DOMAIN;
        t->where = placed[0].where.domain;
    } else if (rack) {
        t->level = POL_LEVEL_RACK;
        t->where = placed[0].where.rack;
    } else {
        t->level = POL_LEVEL_WIDER;
        t->where = NULL;
    }
}

/* TP groups, the EP group of stage 0 and the pipeline of a placed replica. */
static void traffic(const struct topo_cluster *c, const struct pol_workload *w0,
                    const struct pol_plan_pod *placed, size_t nplaced, struct pol_plan_estimate *e)
{
    size_t n0 = 0;

    if (nplaced == 0)
        return;
    while (n0 < nplaced && placed[n0].where.stage == placed[0].where.stage)
        n0++;
    if (w0->tp > 1) {
        /* the first TP group: the pods holding ranks [0, tp) */
        size_t nt = 0;
        while (nt < nplaced && placed[nt].where.rank_first < w0->tp)
            nt++;
        e->traffic[e->ntraffic] = (struct pol_traffic){POL_TRAFFIC_TP, w0->tp, 0, NULL};
        land(c, placed, nt ? nt : 1, &e->traffic[e->ntraffic++]);
    }
    if (w0->layout.ep > 1) {
        e->traffic[e->ntraffic] = (struct pol_traffic){POL_TRAFFIC_EP, w0->layout.ep, 0, NULL};
        land(c, placed, n0, &e->traffic[e->ntraffic++]);
    }
    if (w0->pp > 1) {
        e->traffic[e->ntraffic] = (struct pol_traffic){POL_TRAFFIC_PP, w0->pp, 0, NULL};
        land(c, placed, nplaced, &e->traffic[e->ntraffic++]);
    }
}

static void estimate(const struct pol_ledger *l, const struct pol_job_replica *rep, size_t job,
                     size_t r, const struct pol_plan_pod *placed, size_t nplaced,
                     struct pol_plan_estimate *e)
{
    const struct topo_cluster *c = pol_ledger_cluster(l);
    const struct pol_workload *w0 = &rep->pods[0];
    unsigned long ranks;

    memset(e, 0, sizeof(*e));
    /* the layout is the accelerator members': a CPU-only leader or launcher has none of its own */
    for (size_t k = 0; k < rep->npods; k++) {
        if (rep->pods[k].accel_per_pod > 0) {
            w0 = &rep->pods[k];
            e->lead = k;
            break;
        }
    }
    e->job = job;
    e->replica = r;
    e->tp = w0->tp;
    e->pp = w0->pp;
    e->dp = w0->dp;
    e->ep = w0->layout.ep ? w0->layout.ep : 1;
    e->certain = w0->layout.certain || (!w0->has_intent && w0->accel_per_pod == 0);
    e->why = w0->layout.why;
    for (size_t k = 0; k < rep->npods; k++)
        e->accel += rep->pods[k].accel_per_pod;
    /* every estimate keeps tp x pp x dp = its accelerators, or says it is uncertain and why (the
     * certainty rule): pods that stand alone, or a group the replica does not fill, are ranks of
     * one data-parallel world as far as anything written says */
    ranks = (unsigned long)e->tp * e->pp * e->dp;
    /* a certain group whose pods are listed as objects of their own (one replica each) */
    if (w0->has_intent && w0->layout.certain &&
        ranks == (unsigned long)w0->group_size * w0->accel_per_pod)
        ranks = e->accel;
    if (e->accel > 0 && ranks != e->accel) {
        if ((unsigned long)e->tp * e->pp > 0 && e->accel % ((unsigned long)e->tp * e->pp) == 0) {
            e->dp = (unsigned)(e->accel / ((unsigned long)e->tp * e->pp));
        } else {
            e->tp = 1;
            e->pp = 1;
            e->dp = e->accel;
        }
        if (!w0->has_intent || !w0->layout.certain) {
            e->certain = false;
            if (!e->why[0])
                e->why = "no topology intent: each pod is placed on its own, its accelerators "
                         "read as data-parallel ranks";
        } else {
            e->certain = false;
            e->why = "tp x pp x dp does not make the replica's accelerators: its ranks are counted "
                     "as data-parallel";
        }
    }
    e->num_ubatches = w0->num_ubatches;
    e->model_layers = w0->model_layers;
    e->bubble = w0->num_ubatches ? pol_bubble(w0->pp, w0->num_ubatches) : -1.0;
    e->stage_imbalance = w0->model_layers ? pol_stage_imbalance(w0->model_layers, w0->pp) : -1.0;
    for (size_t k = 0; k < nplaced; k++) {
        bool seen = false;
        size_t dom = topo_cluster_node_domain(c, placed[k].where.node);
        for (size_t q = 0; q < k && !seen; q++)
            seen = placed[q].where.node == placed[k].where.node;
        e->nodes += !seen;
        if (k == 0 || topo_cluster_domain_fabric(c, dom) < e->tp_fabric)
            e->tp_fabric = topo_cluster_domain_fabric(c, dom);
        if (topo_cluster_domain_is_multinode(c, dom) && w0->accel_per_pod < w0->tp)
            e->tp_multinode = true;
        if (k > 0 && w0->accel_per_pod < w0->tp &&
            dom != topo_cluster_node_domain(c, placed[0].where.node))
            e->tp_cross_node = true;
    }
    traffic(c, w0, placed, nplaced, e);
}

enum tpx_code pol_plan(struct pol_ledger *l, const struct pol_job *jobs, size_t njobs, time_t now,
                       struct pol_plan_result *out, struct tpx_err *err)
{
    const struct topo_cluster *c = pol_ledger_cluster(l);
    size_t nn = topo_cluster_node_count(c);
    size_t *all = malloc((nn + 1) * sizeof(*all));
    size_t *acand = malloc((nn + 1) * sizeof(*acand));
    int *scores = malloc((nn + 1) * sizeof(*scores));
    /* the index: each pod's node from the scopes the last commit changed, not every node */
    struct pol_scope_memo *memo = pol_scope_memo_new();
    struct grow pods = {NULL, 0, 0, sizeof(struct pol_plan_pod)};
    struct grow rej = {NULL, 0, 0, sizeof(struct pol_plan_reject)};
    struct grow est = {NULL, 0, 0, sizeof(struct pol_plan_estimate)};
    enum tpx_code rc = TPX_OK;

    memset(out, 0, sizeof(*out));
    if (!all || !acand || !scores)
        goto oom;
    for (size_t i = 0; i < nn; i++)
        all[i] = i;
    for (size_t j = 0; j < njobs; j++) {
        const struct pol_job *job = &jobs[j];
        for (size_t r = 0; r < job->nreplicas; r++) {
            const struct pol_job_replica *rep = &job->replicas[r];
            size_t first = pods.n;
            char why[768] = "";
            struct pol_plan_estimate *e;

            for (size_t k = 0; k < rep->npods && !why[0]; k++) {
                const struct pol_workload *wl = &rep->pods[k];
                const unsigned char *adm = rep->admit ? rep->admit[k] : NULL;
                const size_t *cand = all;
                size_t nc = nn;
                struct pol_filter_result res = {0};
                struct pol_plan_pod *pp;
                struct tpx_err cerr = TPX_ERR_INIT;
                size_t best = (size_t)-1, node = TOPO_NONE;
                bool found, scanned = false;
                char uid[POL_KEY_MAX + 128];

                /* kube-scheduler's filters first (plan only): only the nodes that admit the pod
                 * are candidates, and the pass below chooses among them */
                found = false;
                if (adm) {
                    nc = 0;
                    for (size_t i = 0; i < nn; i++) {
                        if (adm[i])
                            acand[nc++] = i;
                    }
                    cand = acand;
                    if (nc == 0) {
                        snprintf(why, sizeof(why), "replica %zu of %s: pod %zu: %s", r, job->name,
                                 k, rep->admit_why && rep->admit_why[k] ? rep->admit_why[k] : "");
                        break;
                    }
                }
                /* the index knows the node the pass below would pick (policy/index.c); the pass
                 * answers what it does not: no intent, preferred, nothing fits and why */
                if (!adm && led_index_choose(l, memo, wl, &node, &found, err) != TPX_OK) {
                    rc = err->code;
                    goto fail;
                }
                if (!found) {
                    scanned = true;
                    if (pol_filter_memo(l, memo, wl, cand, nc, now, &res, err) != TPX_OK) {
                        rc = err->code;
                        goto fail;
                    }
                    if (pol_score_memo(l, memo, wl, cand, nc, now, scores, err) != TPX_OK) {
                        pol_filter_result_release(&res);
                        rc = err->code;
                        goto fail;
                    }
                    best = pick_best(l, wl, &res, cand, nc, scores);
                    if (best == (size_t)-1 && (!wl->has_intent || wl->preferred)) {
                        char room[160];
                        no_room(l, wl, cand, nc, room, sizeof(room));
                        snprintf(why, sizeof(why), "replica %zu of %s: pod %zu: %s", r, job->name,
                                 k, room);
                        pol_filter_result_release(&res);
                        break;
                    }
                    if (best == (size_t)-1) {
                        char gang[400] = "";
                        if (k == 0 &&
                            pol_gang_shortfall(l, wl, gang, sizeof(gang), err) != TPX_OK) {
                            pol_filter_result_release(&res);
                            rc = err->code;
                            goto fail;
                        }
                        if (gang[0])
                            snprintf(why, sizeof(why), "replica %zu of %s: %s", r, job->name, gang);
                        else
                            snprintf(why, sizeof(why), "replica %zu of %s: pod %zu: %s", r,
                                     job->name, k, top_reason(&res));
                        pol_filter_result_release(&res);
                        break;
                    }
                    node = cand[best];
                }
                pp = grow_push(&pods);
                if (!pp) {
                    pol_filter_result_release(&res);
                    goto oom;
                }
                memset(pp, 0, sizeof(*pp));
                pp->job = j;
                pp->replica = r;
                pp->pod = k;
                if (rep->pod_names && rep->pod_names[k])
                    snprintf(pp->pod_name, sizeof(pp->pod_name), "%s", rep->pod_names[k]);
                else
                    snprintf(pp->pod_name, sizeof(pp->pod_name), "%s-%zu-%zu", job->name, r, k);
                snprintf(uid, sizeof(uid), "plan:%zu/%zu/%zu/%s", j, r, k, pp->pod_name);
                while (pol_commit_memo(l, memo, wl, uid, pp->pod_name, node, now, 600, &pp->where,
                                       &cerr) != TPX_OK &&
                       cerr.code == TPX_EINVAL && wl->preferred && scanned) {
                    /* preferred passes the filter everywhere: try the next best node */
                    size_t next;
                    scores[best] = -1;
                    next = pick_best(l, wl, &res, cand, nc, scores);
                    if (next == (size_t)-1) {
                        char room[160];
                        /* say so of them all, where room is what none had; else the last
                         * node's own reason stands */
                        if (no_room(l, wl, cand, nc, room, sizeof(room)) < wl->accel_per_pod)
                            snprintf(cerr.msg, sizeof(cerr.msg), "%s", room);
                        break;
                    }
                    best = next;
                    node = cand[best];
                    tpx_err_clear(&cerr);
                }
                pol_filter_result_release(&res);
                if (cerr.code != TPX_OK) {
                    pods.n--;
                    if (cerr.code == TPX_ENOMEM) {
                        rc = tpx_err_set(err, TPX_ENOMEM, "%s", cerr.msg);
                        goto fail;
                    }
                    snprintf(why, sizeof(why), "replica %zu of %s: pod %zu: %s", r, job->name, k,
                             cerr.msg);
                }
            }
            if (why[0]) {
                struct pol_plan_reject *rj;
                /* roll the replica back: it is placed whole or not at all */
                for (size_t q = first; q < pods.n; q++) {
                    const struct pol_plan_pod *pp = (struct pol_plan_pod *)pods.p + q;
                    char uid[POL_KEY_MAX + 128];
                    snprintf(uid, sizeof(uid), "plan:%zu/%zu/%zu/%s", pp->job, pp->replica, pp->pod,
                             pp->pod_name);
                    pol_ledger_forget_pod(l, uid);
                }
                pods.n = first;
                rj = grow_push(&rej);
                if (!rj)
                    goto oom;
                rj->job = j;
                rj->replica = r;
                snprintf(rj->reason, sizeof(rj->reason), "%s", why);
            }
            e = grow_push(&est);
            if (!e)
                goto oom;
            if (rep->npods == 0) {
                memset(e, 0, sizeof(*e));
                e->job = j;
                e->replica = r;
                e->bubble = e->stage_imbalance = -1.0;
                continue;
            }
            /* pods.p is still NULL when every replica so far was rejected (no pointer
             * arithmetic on NULL, even + 0) */
            estimate(l, rep, j, r, pods.p ? (struct pol_plan_pod *)pods.p + first : NULL,
                     pods.n - first, e);
        }
    }
    out->pods = pods.p;
    out->npods = pods.n;
    out->rejected = rej.p;
    out->nrejected = rej.n;
    out->estimates = est.p;
    out->nestimates = est.n;
    free(all);
    free(acand);
    free(scores);
    pol_scope_memo_free(memo);
    return TPX_OK;
oom:
    rc = tpx_err_set(err, TPX_ENOMEM, "plan: out of memory");
fail:
    free(all);
    free(acand);
    free(scores);
    pol_scope_memo_free(memo);
    free(pods.p);
    free(rej.p);
    free(est.p);
    return rc;
}

void pol_plan_result_release(struct pol_plan_result *r)
{
    if (!r)
        return;
    free(r->pods);
    free(r->rejected);
    free(r->estimates);
    memset(r, 0, sizeof(*r));
}
