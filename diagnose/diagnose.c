/* SPDX-License-Identifier: Apache-2.0 */
/* diagnose/diagnose.c - from the parsed inputs to one judged replica each: the join of series to
 * pods (pod/namespace first, then Hostname + gpu), the time grid, the per-stage reduction, the
 * rule, the perf and the sweep. */
#include "diagnose/diagnose.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "common/str.h"
#include "policy/estimate.h"
#include "common/banned.h"

#define MAX_STEPS 4096

static enum tpx_code note(char ***list, size_t *n, struct tpx_err *err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static enum tpx_code note(char ***list, size_t *n, struct tpx_err *err, const char *fmt, ...)
{
    char line[512];
    char **grown;
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    grown = realloc(*list, (*n + 1) * sizeof(**list));
    if (!grown)
        return tpx_err_set(err, TPX_ENOMEM, "out of memory");
    *list = grown;
    grown[*n] = strdup(line);
    if (!grown[*n])
        return tpx_err_set(err, TPX_ENOMEM, "out of memory");
    (*n)++;
    return TPX_OK;
}

static void free_notes(char **list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(list[i]);
    free(list);
}

/* "gpu1-wl8sg" matches "gpu1-wl8sg.example.com" and the other way round. */
static bool same_host(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b), n = la < lb ? la : lb;

    if (!la || !lb || memcmp(a, b, n) != 0)
        return false;
    return la == lb || (la > lb ? a[n] == '.' : b[n] == '.');
}

static double series_mean(const struct dg_series *s)
{
    double sum = 0;
    for (size_t i = 0; i < s->n; i++)
        sum += s->v[i];
    return s->n ? sum / (double)s->n : NAN;
}

/* --- one GPU's series --------------------------------------------------------------------------
 */

struct gpu {
    char key[DG_STR * 2 + 64];
    unsigned stage;
    const struct dg_series *eff;
    const struct dg_series *occ;
    double link; /* NVLink + PCIe TX means, NaN none */
};

static struct gpu *gpu_for(struct gpu **g, size_t *n, size_t *alloc, const char *key,
                           unsigned stage)
{
    for (size_t i = 0; i < *n; i++) {
        if (strcmp((*g)[i].key, key) == 0)
            return &(*g)[i];
    }
    if (!TPX_GROW(*g, *alloc, *n + 1))
        return NULL;
    memset(&(*g)[*n], 0, sizeof(**g));
    tpx_str_copy((*g)[*n].key, sizeof((*g)[*n].key), key);
    (*g)[*n].stage = stage;
    (*g)[*n].link = NAN;
    return &(*g)[(*n)++];
}

static void take(struct gpu *g, const struct dg_series *s)
{
    double m;

    switch (s->metric) {
    case DG_M_SM_ACTIVE:
        if (!g->eff || g->eff->metric != DG_M_SM_ACTIVE)
            g->eff = s;
        break;
    case DG_M_GR_ACTIVE:
        if (!g->eff)
            g->eff = s;
        break;
    case DG_M_GPU_UTIL:
        g->occ = s;
        break;
    default:
        m = series_mean(s);
        g->link = isnan(g->link) ? m : g->link + m;
        break;
    }
}

/* --- the time grid -----------------------------------------------------------------------------
 */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Sorted distinct sample times of the effective series, thinned to at most MAX_STEPS. */
static double *grid_of(const struct gpu *g, size_t ng, size_t *nt)
{
    size_t total = 0, k = 0, u = 0, every;
    double *all, *grid;

    *nt = 0;
    for (size_t i = 0; i < ng; i++)
        total += g[i].eff ? g[i].eff->n : 0;
    if (!total)
        return NULL;
    all = malloc(total * sizeof(*all));
    if (!all)
        return NULL;
    for (size_t i = 0; i < ng; i++) {
        for (size_t j = 0; g[i].eff && j < g[i].eff->n; j++)
            all[k++] = g[i].eff->t[j];
    }
    qsort(all, total, sizeof(*all), cmp_double);
    for (size_t i = 0; i < total; i++) {
        if (u == 0 || all[i] - all[u - 1] > 0.0005)
            all[u++] = all[i];
    }
    every = (u + MAX_STEPS - 1) / MAX_STEPS;
    grid = malloc(((u + every - 1) / every) * sizeof(*grid));
    if (!grid) {
        free(all);
        return NULL;
    }
    for (size_t i = 0; i < u; i += every)
        grid[(*nt)++] = all[i];
    free(all);
    return grid;
}

/* The grid step at or before t. */
static size_t step_of(const double *grid, size_t nt, double t)
{
    size_t lo = 0, hi = nt;

    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (grid[mid] <= t + 0.0005)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* The mean over GPUs at each grid step: sums[] and counts[] of nt, then divided in place. */
static void accumulate(const struct dg_series *s, const double *grid, size_t nt, double *sum,
                       size_t *cnt)
{
    for (size_t j = 0; j < s->n; j++) {
        size_t k = step_of(grid, nt, s->t[j]);
        sum[k] += s->v[j];
        cnt[k]++;
    }
}

/* --- the baseline ------------------------------------------------------------------------------
 */

/* Mean effective of every GPU of the pp = 1 run and its standard error over time. */
static void baseline_of(const struct dg_metrics *m, double *mean, double *se, size_t *ngpus)
{
    struct gpu *g = NULL;
    size_t n = 0, alloc = 0, nt = 0;
    double *grid, *sum, sq = 0, tot = 0;
    size_t *cnt, used = 0;

    *mean = *se = NAN;
    *ngpus = 0;
    for (size_t i = 0; m && i < m->n; i++) {
        char key[DG_STR * 2 + 64];
        struct gpu *x;
        snprintf(key, sizeof(key), "%s/%s/%s", m->s[i].host, m->s[i].pod, m->s[i].gpu);
        x = gpu_for(&g, &n, &alloc, key, 0);
        if (x)
            take(x, &m->s[i]);
    }
    grid = grid_of(g, n, &nt);
    sum = calloc(nt ? nt : 1, sizeof(*sum));
    cnt = calloc(nt ? nt : 1, sizeof(*cnt));
    for (size_t i = 0; grid && sum && cnt && i < n; i++) {
        if (g[i].eff) {
            accumulate(g[i].eff, grid, nt, sum, cnt);
            (*ngpus)++;
        }
    }
    for (size_t k = 0; grid && sum && cnt && k < nt; k++) {
        if (cnt[k]) {
            sum[k] /= (double)cnt[k];
            tot += sum[k];
            used++;
        }
    }
    if (used) {
        *mean = tot / (double)used;
        for (size_t k = 0; k < nt; k++)
            sq += cnt[k] ? (sum[k] - *mean) * (sum[k] - *mean) : 0;
        *se = used > 1 ? sqrt(sq / (double)(used - 1)) / sqrt((double)used) : 0;
    }
    free(grid);
    free(sum);
    free(cnt);
    free(g);
}

/* --- perf --------------------------------------------------------------------------------------
 */

static void perf_of(const struct dg_bench_set *b, unsigned pp, struct dg_perf *p)
{
    const struct dg_bench *pick = NULL;
    size_t unknown = 0;

    memset(p, 0, sizeof(*p));
    for (size_t i = 0; b && i < b->n; i++) {
        if (b->b[i].pp == pp)
            pick = &b->b[i];
        unknown += b->b[i].pp == 0;
    }
    if (!pick && b && unknown == b->n && b->n)
        pick = &b->b[b->n - 1]; /* files that do not say their pp: the run of this plan */
    if (!pick)
        return;
    p->known = true;
    p->ttft_ms = pick->ttft_ms;
    p->tpot_ms = pick->tpot_ms;
    p->throughput = pick->throughput;
    p->ttft_p99_ms = pick->ttft_p99_ms;
    p->tpot_p99_ms = pick->tpot_p99_ms;
    tpx_str_copy(p->source, sizeof(p->source), pick->source);
}

/* --- one replica -------------------------------------------------------------------------------
 */

struct join_count {
    size_t by_pod, by_host;
};

/* The pod of replica r a series belongs to: by pod/namespace, else by Hostname + gpu when the
 * plan puts exactly one pod on that node. */
static const struct dg_pod *pod_of(const struct dg_plan *plan, const struct dg_replica_plan *r,
                                   const struct dg_series *s, bool *by_host)
{
    *by_host = false;
    if (s->pod[0]) {
        for (size_t i = 0; i < r->npods; i++) {
            const struct dg_pod *p = &r->pods[i];
            if (strcmp(p->name, s->pod) == 0 && (!s->ns[0] || !p->ns[0] || !strcmp(p->ns, s->ns)))
                return p;
        }
        return NULL;
    }
    if (!s->host[0])
        return NULL;
    for (size_t i = 0; i < r->npods; i++) {
        const struct dg_pod *p = &r->pods[i];
        size_t on_node = 0;
        if (!same_host(p->node, s->host))
            continue;
        for (size_t a = 0; a < plan->n; a++) {
            for (size_t b = 0; b < plan->r[a].npods; b++)
                on_node += same_host(plan->r[a].pods[b].node, s->host);
        }
        if (on_node != 1)
            return NULL;
        *by_host = true;
        return p;
    }
    return NULL;
}

static enum tpx_code judge(const struct dg_inputs *in, struct dg_replica_result *rr, double base,
                           double base_se, bool mismatch, struct tpx_err *err)
{
    const struct dg_replica_plan *r = rr->plan;
    const struct dg_thresholds *t = in->thresholds ? in->thresholds : &dg_default_thresholds;
    struct dg_replica_in ri;
    struct gpu *g = NULL;
    size_t ng = 0, alloc = 0, nt = 0, fallback = 0;
    struct join_count jc = {0, 0};
    double *grid = NULL, *eff = NULL, *sum = NULL;
    size_t *cnt = NULL;
    unsigned pp = rr->pp < DG_MAX_STAGES ? rr->pp : DG_MAX_STAGES;
    enum tpx_code rc = TPX_OK;

    memset(&ri, 0, sizeof(ri));
    for (unsigned s = 0; s < DG_MAX_STAGES; s++)
        rr->link_tx[s] = rr->stage_occ[s] = NAN;
    for (size_t i = 0; in->metrics && i < in->metrics->n; i++) {
        const struct dg_series *s = &in->metrics->s[i];
        bool by_host;
        const struct dg_pod *p = pod_of(in->plan, r, s, &by_host);
        char key[DG_STR * 2 + 64];
        struct gpu *x;
        if (!p || p->stage >= pp)
            continue;
        snprintf(key, sizeof(key), "%s/%s", p->name, s->gpu);
        x = gpu_for(&g, &ng, &alloc, key, p->stage);
        if (!x) {
            rc = tpx_err_set(err, TPX_ENOMEM, "out of memory");
            goto out;
        }
        take(x, s);
        if (by_host)
            jc.by_host++;
        else
            jc.by_pod++;
    }
    rr->gpus_joined = ng;
    rr->gpus_expected = (size_t)pp * (r->tp ? r->tp : 1);
    grid = grid_of(g, ng, &nt);
    eff = malloc((size_t)pp * (nt ? nt : 1) * sizeof(*eff));
    sum = calloc(nt ? nt : 1, sizeof(*sum));
    cnt = calloc(nt ? nt : 1, sizeof(*cnt));
    if ((nt && !grid) || !eff || !sum || !cnt) {
        rc = tpx_err_set(err, TPX_ENOMEM, "out of memory");
        goto out;
    }
    ri.pp = pp;
    ri.tp = r->tp;
    ri.bubble_est = rr->bubble_est;
    ri.imbalance_est = r->imbalance;
    ri.nt = nt;
    ri.baseline_eff = base;
    ri.baseline_eff_se = base_se;
    ri.layout_mismatch = mismatch;
    for (unsigned s = 0; s < pp; s++) {
        double occ = 0, link = 0;
        size_t nocc = 0, nlink = 0;
        struct dg_stage_in *si = &ri.stages[s];
        memset(sum, 0, (nt ? nt : 1) * sizeof(*sum));
        memset(cnt, 0, (nt ? nt : 1) * sizeof(*cnt));
        for (size_t i = 0; i < ng; i++) {
            if (g[i].stage != s)
                continue;
            if (g[i].eff) {
                accumulate(g[i].eff, grid, nt, sum, cnt);
                si->ngpus++;
                fallback += g[i].eff->metric == DG_M_GR_ACTIVE;
            }
            if (g[i].occ) {
                occ += series_mean(g[i].occ);
                nocc++;
            }
            if (!isnan(g[i].link)) {
                link += g[i].link;
                nlink++;
            }
        }
        si->eff_t = eff + (size_t)s * (nt ? nt : 1);
        for (size_t k = 0; k < nt; k++)
            eff[(size_t)s * nt + k] = cnt[k] ? sum[k] / (double)cnt[k] : NAN;
        si->ngpus_expected = r->tp ? r->tp : 1;
        si->occupancy = nocc ? occ / (double)nocc : NAN;
        si->link_tx = nlink ? link : NAN;
        rr->stage_occ[s] = si->occupancy;
        rr->link_tx[s] = si->link_tx;
        if (si->ngpus && si->ngpus < si->ngpus_expected &&
            (rc = note(&rr->notes, &rr->nnotes, err,
                       "stage %u: %zu of %zu GPUs have an effective series", s, si->ngpus,
                       si->ngpus_expected)) != TPX_OK)
            goto out;
    }
    dg_decide(&ri, t, &rr->out);
    if (jc.by_host && (rc = note(&rr->notes, &rr->nnotes, err,
                                 "%zu series joined by Hostname + gpu (no pod label), %zu by "
                                 "pod/namespace",
                                 jc.by_host, jc.by_pod)) != TPX_OK)
        goto out;
    if (fallback && (rc = note(&rr->notes, &rr->nnotes, err,
                               "effective utilization from DCGM_FI_PROF_GR_ENGINE_ACTIVE on %zu "
                               "GPUs (DCGM_FI_PROF_SM_ACTIVE not exported)",
                               fallback)) != TPX_OK)
        goto out;
    if (!ng && in->metrics && in->metrics->n &&
        (rc = note(&rr->notes, &rr->nnotes, err,
                   "no series joined to this replica's pods (by pod/namespace or Hostname + "
                   "gpu)")) != TPX_OK)
        goto out;
out:
    free(grid);
    free(eff);
    free(sum);
    free(cnt);
    free(g);
    return rc;
}

enum tpx_code dg_run(const struct dg_inputs *in, struct dg_result *out, struct tpx_err *err)
{
    const struct dg_startup *st = in->startup;
    double base = NAN, base_se = NAN;
    size_t bgpus = 0, alloc = 0;

    memset(out, 0, sizeof(*out));
    out->baseline_eff = NAN;
    if (in->baseline_metrics) {
        baseline_of(in->baseline_metrics, &base, &base_se, &bgpus);
        out->baseline_eff = base;
        if (isnan(base) && note(&out->notes, &out->nnotes, err,
                                "the baseline metrics have no effective-utilization series: "
                                "no measured gap") != TPX_OK)
            return err->code;
    }
    out->r = calloc(in->plan->n ? in->plan->n : 1, sizeof(*out->r));
    if (!out->r)
        return tpx_err_set(err, TPX_ENOMEM, "out of memory");
    out->n = in->plan->n;
    for (size_t i = 0; i < in->plan->n; i++) {
        struct dg_replica_result *rr = &out->r[i];
        const struct dg_replica_plan *r = &in->plan->r[i];
        bool mismatch = false;

        rr->plan = r;
        rr->pp = r->pp;
        rr->tp = r->tp;
        rr->bubble_est = r->bubble;
        if (st && ((st->pp && st->pp != r->pp) || (st->tp && st->tp != r->tp))) {
            /* reported first: everything below reads the layout */
            if (note(&out->notes, &out->nnotes, err,
                     "layout mismatch: %s #%u: the engine ran tp %u pp %u (%s startup log, line "
                     "%zu), the plan says tp %u pp %u",
                     r->job, r->index, st->tp ? st->tp : r->tp, st->pp ? st->pp : r->pp, st->engine,
                     st->line, r->tp, r->pp) != TPX_OK)
                return err->code;
            mismatch = st->pp && st->pp != r->pp;
            rr->tp = st->tp ? st->tp : r->tp;
            if (mismatch) {
                rr->pp = st->pp;
                rr->bubble_est = r->num_ubatches ? pol_bubble(st->pp, r->num_ubatches) : NAN;
            }
        }
        if (!r->npods) {
            rr->out.status = DG_UNDECIDED;
            for (unsigned s = 0; s < DG_MAX_STAGES; s++)
                rr->out.per_stage[s] = rr->link_tx[s] = rr->stage_occ[s] = NAN;
            rr->out.effective = rr->out.occupancy = rr->out.gap = NAN;
            snprintf(rr->out.why, sizeof(rr->out.why), "not placed in the plan: no pods");
            snprintf(rr->out.undecidable, sizeof(rr->out.undecidable),
                     "every status: the replica has no pods");
        } else if (judge(in, rr, base, base_se, mismatch, err) != TPX_OK) {
            return err->code;
        }
        if (isnan(rr->bubble_est) &&
            note(&rr->notes, &rr->nnotes, err,
                 "no topox.io/num-ubatches on the job: no bubble estimate") != TPX_OK)
            return err->code;
        perf_of(in->bench, r->pp, &rr->perf);
    }
    /* the sweep: every bench result whose pp is known, the baseline's at pp 1 */
    for (size_t pass = 0; pass < 2; pass++) {
        const struct dg_bench_set *b = pass ? in->baseline_bench : in->bench;
        for (size_t i = 0; b && i < b->n; i++) {
            unsigned pp = pass ? (b->b[i].pp ? b->b[i].pp : 1) : b->b[i].pp;
            if (!pp && b->n == 1 && in->plan->n)
                pp = in->plan->r[0].pp; /* the one run of this plan */
            if (!pp)
                continue;
            if (!TPX_GROW(out->sweep_pts, alloc, out->nsweep + 1))
                return tpx_err_set(err, TPX_ENOMEM, "out of memory");
            out->sweep_pts[out->nsweep++] =
                (struct dg_sweep_point){pp, b->b[i].ttft_ms, b->b[i].tpot_ms};
        }
    }
    dg_sweep_check(out->sweep_pts, out->nsweep, &out->sweep);
    return TPX_OK;
}

void dg_result_release(struct dg_result *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++)
        free_notes(r->r[i].notes, r->r[i].nnotes);
    free(r->r);
    free(r->sweep_pts);
    free_notes(r->notes, r->nnotes);
    memset(r, 0, sizeof(*r));
}
