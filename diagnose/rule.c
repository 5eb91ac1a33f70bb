/* SPDX-License-Identifier: Apache-2.0 */
/* diagnose/rule.c - the decision rule of `topox diagnose` (docs/diagnose.md, "The rule"). */
#include "diagnose/rule.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/banned.h"

/* Where each value comes from (docs/diagnose.md, "Thresholds"):
 *   bubble_tol_abs 0.05: run-to-run spread of one seeded benchmark's utilization and the DCGM
 *     sampling of a profiling metric over a window; a gap closer than this to the estimate
 *     cannot be told from it.
 *   bubble_tol_rel 0.25: continuous batching fills the last micro-batch only partly, so the
 *     realized bubble lies between (pp-1)/(m+pp-1) and (pp-1)/(m-1+pp-1); for pp 4, m 4 that is
 *     0.43..0.50, 17 % apart, and 50 % apart at pp 2, m 2: a quarter is the middle of that band.
 *   spread_min 0.10: one layer out of ten per stage (pol_stage_imbalance of 10 layers over pp),
 *     twice the GPU-to-GPU spread of equal work on one node (clocks and temperature).
 *   constancy 0.8: "constantly low" in the guide; a stage that is the odd one in four of five
 *     samples is not noise (pure noise makes each of pp stages the extreme 1/pp of the time).
 *   z 3: a margin must clear three standard errors of the means it compares.
 *   min_steps 5: below five samples the noise of a mean cannot be estimated.
 * The generator's grid (tests/unit/diagnose/test_rule.c) names the right status with these
 * values across pp 2, 4, 8 and never a wrong one under noise and missing series. */
const struct dg_thresholds dg_default_thresholds = {
    .bubble_tol_abs = 0.05,
    .bubble_tol_rel = 0.25,
    .spread_min = 0.10,
    .constancy = 0.8,
    .z = 3.0,
    .min_steps = 5,
};

const char *dg_status_name(enum dg_status s)
{
    switch (s) {
    case DG_BUBBLE:
        return "bubble-dominated";
    case DG_IMBALANCE:
        return "imbalance-dominated";
    case DG_TRANSFER:
        return "inter-stage-transfer-dominated";
    case DG_UNEXPLAINED:
        return "unexplained";
    case DG_UNDECIDED:
        break;
    }
    return "undecided";
}

static const char *const advice_bubble[] = {
    "raise the micro-batch count: more requests in flight (vLLM --max-num-seqs, SGLang "
    "--max-running-requests) and topox.io/num-ubatches to match; cost: more activation and "
    "KV-cache memory per GPU and a higher TTFT under load",
    "or fewer stages: lower pp and raise tp inside the NVLink domain; cost: each GPU holds more "
    "of the model, less room for the KV cache",
};
static const char *const advice_imbalance[] = {
    "rebalance layers across stages (vLLM VLLM_PP_LAYER_PARTITION, or a pp that divides "
    "topox.io/model-layers); cost: the stages' memory changes, the fullest stage bounds the KV "
    "cache",
    "check the odd stage's GPUs and node (clocks, throttling, other work on it); cost: a look",
};
static const char *const advice_transfer[] = {
    "put the stages on faster links: one rack or one NVLink domain per replica, RDMA "
    "(GPUDirect) between stage nodes; cost: fewer places the replica fits, it may wait for "
    "capacity",
    "or fewer stages (lower pp); cost: more memory per GPU",
};
static const char *const advice_unexplained[] = {
    "check the inputs: the same seeded workload for run and baseline, a window that covers only "
    "the benchmark, the engine's real micro-batch count and layout; cost: a rerun",
};
static const char *const advice_undecided[] = {
    "give the missing input named above (a series, the baseline, topox.io/num-ubatches) or a "
    "longer window; cost: an export or a rerun",
};

static void set_advice(struct dg_replica_out *o, const char *const *a, size_t n)
{
    for (size_t i = 0; i < n && i < DG_MAX_ADVICE; i++)
        o->advice[i] = a[i];
    o->nadvice = n < DG_MAX_ADVICE ? n : DG_MAX_ADVICE;
}

#define ADVICE(o, a) set_advice(o, a, sizeof(a) / sizeof(a[0]))

struct stat1 {
    double mean, se;
    size_t n;
};

static struct stat1 stats(const double *x, size_t nt)
{
    struct stat1 s = {NAN, NAN, 0};
    double sum = 0, sq = 0;

    for (size_t k = 0; x && k < nt; k++) {
        if (isnan(x[k]))
            continue;
        sum += x[k];
        s.n++;
    }
    if (!s.n)
        return s;
    s.mean = sum / (double)s.n;
    for (size_t k = 0; k < nt; k++) {
        if (!isnan(x[k]))
            sq += (x[k] - s.mean) * (x[k] - s.mean);
    }
    s.se = s.n > 1 ? sqrt(sq / (double)(s.n - 1)) / sqrt((double)s.n) : NAN;
    return s;
}

static bool stage_present(const struct dg_replica_in *in, const struct stat1 *st, unsigned s,
                          const struct dg_thresholds *t)
{
    return in->stages[s].ngpus > 0 && st[s].n >= t->min_steps;
}

/* The stage farthest from the median of the stage means, and how often it is the extreme one
 * (lowest when below the median, highest when above) among the stages measured at a step. */
static void odd_one(const struct dg_replica_in *in, const struct stat1 *st, const bool *present,
                    unsigned pp, struct dg_replica_out *o)
{
    double sorted[DG_MAX_STAGES], med, far = -1;
    size_t n = 0, steps = 0, hits = 0;
    bool low;

    for (unsigned s = 0; s < pp; s++) {
        if (present[s])
            sorted[n++] = st[s].mean;
    }
    for (size_t i = 1; i < n; i++) { /* insertion sort: pp <= 64 */
        double v = sorted[i];
        size_t j = i;
        for (; j > 0 && sorted[j - 1] > v; j--)
            sorted[j] = sorted[j - 1];
        sorted[j] = v;
    }
    med = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    for (unsigned s = 0; s < pp; s++) {
        if (present[s] && fabs(st[s].mean - med) > far) {
            far = fabs(st[s].mean - med);
            o->odd_stage = s;
        }
    }
    low = st[o->odd_stage].mean < med;
    for (size_t k = 0; k < in->nt; k++) {
        double mine = in->stages[o->odd_stage].eff_t[k];
        size_t others = 0;
        bool extreme = true;
        if (isnan(mine))
            continue;
        for (unsigned s = 0; s < pp; s++) {
            double v = present[s] && s != o->odd_stage ? in->stages[s].eff_t[k] : NAN;
            if (isnan(v))
                continue;
            others++;
            if (low ? v < mine : v > mine)
                extreme = false;
        }
        if (!others)
            continue;
        steps++;
        hits += extreme;
    }
    o->constancy = steps ? (double)hits / (double)steps : 0;
}

void dg_decide(const struct dg_replica_in *in, const struct dg_thresholds *t,
               struct dg_replica_out *o)
{
    struct stat1 st[DG_MAX_STAGES];
    bool present[DG_MAX_STAGES];
    double series[4096] = {0}, mx = -1, mn = 2, se2 = 0, se_pool, occ = 0, tol, b = in->bubble_est;
    size_t npresent = 0, nocc = 0, nt = in->nt < 4096 ? in->nt : 4096;
    unsigned pp = in->pp < DG_MAX_STAGES ? in->pp : DG_MAX_STAGES, missing = 0, first_missing = 0;
    bool significant, spread_big;
    struct stat1 rep;

    memset(o, 0, sizeof(*o));
    o->effective = o->effective_se = o->occupancy = o->gap = o->gap_se = NAN;
    for (unsigned s = 0; s < DG_MAX_STAGES; s++)
        o->per_stage[s] = NAN;
    o->status = DG_UNDECIDED;
    for (unsigned s = 0; s < pp; s++) {
        st[s] = stats(in->stages[s].eff_t, in->nt);
        present[s] = stage_present(in, st, s, t);
        o->per_stage[s] = in->stages[s].ngpus ? st[s].mean : NAN;
        if (!isnan(in->stages[s].occupancy)) {
            occ += in->stages[s].occupancy;
            nocc++;
        }
        if (!present[s]) {
            if (missing++ == 0)
                first_missing = s;
            continue;
        }
        npresent++;
        se2 += isnan(st[s].se) ? 0 : st[s].se * st[s].se;
        mx = st[s].mean > mx ? st[s].mean : mx;
        mn = st[s].mean < mn ? st[s].mean : mn;
    }
    /* The noise of a stage mean, pooled over the stages: a stage stuck at 0 or 1 (a clamped
     * ratio) shows no variance of its own, and says nothing about the noise. */
    se_pool = npresent ? sqrt(se2 / (double)npresent) : NAN;
    if (nocc)
        o->occupancy = occ / (double)nocc;
    /* the replica's time series: the mean of the measured stages at each step */
    for (size_t k = 0; k < nt; k++) {
        double sum = 0;
        size_t n = 0;
        for (unsigned s = 0; s < pp; s++) {
            double v = present[s] ? in->stages[s].eff_t[k] : NAN;
            if (!isnan(v)) {
                sum += v;
                n++;
            }
        }
        series[k] = n ? sum / (double)n : NAN;
    }
    rep = stats(series, nt);
    o->effective = npresent ? rep.mean : NAN;
    o->effective_se = rep.se;
    ADVICE(o, advice_undecided);

    if (in->layout_mismatch) {
        snprintf(o->why, sizeof(o->why),
                 "the engine ran another layout than the plan: stages cannot be matched");
        snprintf(o->undecidable, sizeof(o->undecidable),
                 "every status: the startup log's pp differs from the plan's");
        return;
    }
    if (pp < 2) {
        snprintf(o->why, sizeof(o->why), "pp %u: no pipeline, no bubble to diagnose", in->pp);
        snprintf(o->undecidable, sizeof(o->undecidable), "every status: pp is 1");
        return;
    }
    if (npresent == 0) {
        snprintf(o->why, sizeof(o->why),
                 "no effective-utilization series (DCGM_FI_PROF_SM_ACTIVE or "
                 "DCGM_FI_PROF_GR_ENGINE_ACTIVE) with %zu samples; occupancy "
                 "(DCGM_FI_DEV_GPU_UTIL) is not effective utilization",
                 t->min_steps);
        snprintf(o->undecidable, sizeof(o->undecidable),
                 "every status: effective utilization not measured");
        return;
    }
    o->spread = mx > 0 ? (mx - mn) / mx : 0;
    if (npresent >= 2)
        odd_one(in, st, present, pp, o);
    /* The largest minus the smallest of npresent means: the range of npresent noisy means grows
     * with their count (about sqrt(2 ln n) standard errors), so that is added to z. */
    significant = npresent >= 2 &&
                  (mx - mn) > (t->z + sqrt(2.0 * log((double)npresent))) * sqrt(2.0) * se_pool;
    spread_big = o->spread >= t->spread_min;
    if (spread_big && significant && o->constancy >= t->constancy) {
        o->status = DG_IMBALANCE;
        snprintf(o->why, sizeof(o->why),
                 "stage %u apart from the others: stage spread %.2f, the odd one in %.0f%% of "
                 "samples",
                 o->odd_stage, o->spread, o->constancy * 100);
        ADVICE(o, advice_imbalance);
        goto gap; /* the gap is still worth printing */
    }
    if (spread_big && significant) {
        o->status = DG_UNEXPLAINED;
        snprintf(o->why, sizeof(o->why),
                 "stage means differ by %.2f but no stage is constantly the odd one (%.0f%% of "
                 "samples)",
                 o->spread, o->constancy * 100);
        ADVICE(o, advice_unexplained);
        goto gap;
    }
    if (missing) {
        snprintf(o->why, sizeof(o->why),
                 "stage %u has no effective series with %zu samples: imbalance cannot be ruled "
                 "out",
                 first_missing, t->min_steps);
        snprintf(o->undecidable, sizeof(o->undecidable),
                 "imbalance-dominated, bubble-dominated and inter-stage-transfer-dominated: "
                 "%u of %u stages not measured",
                 missing, pp);
        goto gap;
    }
    if (spread_big) {
        snprintf(o->why, sizeof(o->why),
                 "stage spread %.2f is within the noise (%.0f standard errors needed)", o->spread,
                 t->z);
        snprintf(o->undecidable, sizeof(o->undecidable),
                 "every status: the noise is larger than the stage spread");
        goto gap;
    }
    if (isnan(in->baseline_eff) || in->baseline_eff <= 0) {
        snprintf(o->why, sizeof(o->why), "no pp=1 baseline: the measured gap cannot be computed");
        snprintf(o->undecidable, sizeof(o->undecidable),
                 "bubble-dominated and inter-stage-transfer-dominated: need "
                 "--baseline-metrics (the same workload at pp=1)");
        return;
    }
    if (isnan(b)) {
        snprintf(o->why, sizeof(o->why), "no bubble estimate: the micro-batch count is unknown");
        snprintf(o->undecidable, sizeof(o->undecidable),
                 "bubble-dominated and inter-stage-transfer-dominated: set "
                 "topox.io/num-ubatches on the job");
        goto gap;
    }
gap:
    if (!isnan(in->baseline_eff) && in->baseline_eff > 0) {
        double r = o->effective / in->baseline_eff;
        double a = o->effective_se / in->baseline_eff;
        double c = r * in->baseline_eff_se / in->baseline_eff;
        o->gap = 1.0 - r;
        o->gap_se = sqrt(a * a + c * c);
    }
    if (o->status != DG_UNDECIDED || o->why[0] != '\0' || isnan(o->gap))
        return;
    if (rep.n < t->min_steps || isnan(o->gap_se)) {
        snprintf(o->why, sizeof(o->why), "%zu samples in the window: too few to judge the noise",
                 rep.n);
        snprintf(o->undecidable, sizeof(o->undecidable), "every status: too few samples");
        return;
    }
    tol = t->bubble_tol_abs > t->bubble_tol_rel * b ? t->bubble_tol_abs : t->bubble_tol_rel * b;
    {
        double lo = o->gap - t->z * o->gap_se, hi = o->gap + t->z * o->gap_se;
        if (lo >= b - tol && hi <= b + tol) {
            o->status = DG_BUBBLE;
            snprintf(o->why, sizeof(o->why),
                     "measured gap %.3f matches the bubble estimate %.3f (within %.3f)", o->gap, b,
                     tol);
            ADVICE(o, advice_bubble);
            return;
        }
        if (lo > b + tol) {
            for (unsigned s = 0; s < pp; s++) {
                double gs = 1.0 - st[s].mean / in->baseline_eff;
                double se = st[s].se > se_pool ? st[s].se : se_pool;
                if (gs - t->z * se / in->baseline_eff <= b + tol) {
                    snprintf(
                        o->why, sizeof(o->why),
                        "gap %.3f above the bubble %.3f, but stage %u is within the noise of it",
                        o->gap, b, s);
                    snprintf(o->undecidable, sizeof(o->undecidable),
                             "inter-stage-transfer-dominated: not every stage shows the gap");
                    return;
                }
            }
            o->status = DG_TRANSFER;
            snprintf(o->why, sizeof(o->why),
                     "measured gap %.3f is above the bubble estimate %.3f (+%.3f) on every stage",
                     o->gap, b, tol);
            ADVICE(o, advice_transfer);
            return;
        }
        if (hi < b - tol) {
            o->status = DG_UNEXPLAINED;
            snprintf(
                o->why, sizeof(o->why),
                "measured gap %.3f is below the bubble estimate %.3f (-%.3f): less is lost than "
                "the pipe should lose",
                o->gap, b, tol);
            ADVICE(o, advice_unexplained);
            return;
        }
        snprintf(o->why, sizeof(o->why),
                 "measured gap %.3f +- %.3f straddles the margin around the bubble estimate %.3f",
                 o->gap, t->z * o->gap_se, b);
        snprintf(o->undecidable, sizeof(o->undecidable),
                 "bubble-dominated, inter-stage-transfer-dominated: the noise is larger than "
                 "the margin");
    }
}

/* --- the sweep ------------------------------------------------------------------------------ */

void dg_sweep_check(const struct dg_sweep_point *pts, size_t n, struct dg_sweep_out *out)
{
    struct dg_sweep_point by[DG_MAX_STAGES + 1];
    size_t cnt[DG_MAX_STAGES + 1], nb = 0;
    bool ttft_up = true, tpot_up = true;

    memset(out, 0, sizeof(*out));
    memset(cnt, 0, sizeof(cnt));
    for (unsigned pp = 1; pp <= DG_MAX_STAGES; pp++) {
        struct dg_sweep_point p = {pp, 0, 0};
        size_t c = 0;
        for (size_t i = 0; i < n; i++) {
            if (pts[i].pp == pp && !isnan(pts[i].ttft_ms) && !isnan(pts[i].tpot_ms)) {
                p.ttft_ms += pts[i].ttft_ms;
                p.tpot_ms += pts[i].tpot_ms;
                c++;
            }
        }
        if (!c)
            continue;
        p.ttft_ms /= (double)c;
        p.tpot_ms /= (double)c;
        by[nb] = p;
        cnt[nb++] = c;
    }
    if (nb < 2) {
        snprintf(out->text, sizeof(out->text),
                 "no sweep: bench files at two or more pipeline sizes are needed");
        return;
    }
    for (size_t i = 1; i < nb; i++) {
        if (by[i].ttft_ms < by[i - 1].ttft_ms * (1 - DG_SWEEP_FLAT / 2))
            ttft_up = false;
        if (by[i].tpot_ms < by[i - 1].tpot_ms * (1 - DG_SWEEP_FLAT / 2))
            tpot_up = false;
    }
    out->ttft_ratio = by[0].ttft_ms > 0 ? by[nb - 1].ttft_ms / by[0].ttft_ms : NAN;
    out->tpot_ratio = by[0].tpot_ms > 0 ? by[nb - 1].tpot_ms / by[0].tpot_ms : NAN;
    if (fabs(out->tpot_ratio - 1) <= DG_SWEEP_FLAT && ttft_up &&
        out->ttft_ratio > 1 + DG_SWEEP_FLAT)
        out->verdict = DG_SWEEP_DEPTH;
    else if (tpot_up && out->tpot_ratio > 1 + DG_SWEEP_FLAT)
        out->verdict = DG_SWEEP_TPOT_RISES;
    else if (fabs(out->ttft_ratio - 1) <= DG_SWEEP_FLAT &&
             fabs(out->tpot_ratio - 1) <= DG_SWEEP_FLAT)
        out->verdict = DG_SWEEP_TTFT_FLAT;
    else
        out->verdict = DG_SWEEP_INCONSISTENT;
    switch (out->verdict) {
    case DG_SWEEP_DEPTH:
        snprintf(out->text, sizeof(out->text),
                 "TTFT x%.2f from pp %u to pp %u while TPOT stays flat (x%.2f): the cost is "
                 "pipeline depth",
                 out->ttft_ratio, by[0].pp, by[nb - 1].pp, out->tpot_ratio);
        break;
    case DG_SWEEP_TPOT_RISES:
        snprintf(out->text, sizeof(out->text),
                 "TPOT x%.2f from pp %u to pp %u: every token pays for the stages, look at the "
                 "links between them",
                 out->tpot_ratio, by[0].pp, by[nb - 1].pp);
        break;
    case DG_SWEEP_TTFT_FLAT:
        snprintf(out->text, sizeof(out->text),
                 "TTFT and TPOT flat from pp %u to pp %u: depth costs nothing measurable here",
                 by[0].pp, by[nb - 1].pp);
        break;
    default:
        snprintf(out->text, sizeof(out->text),
                 "TTFT x%.2f and TPOT x%.2f from pp %u to pp %u: neither rising with depth nor "
                 "flat (is it the same seeded workload?)",
                 out->ttft_ratio, out->tpot_ratio, by[0].pp, by[nb - 1].pp);
        break;
    }
}
