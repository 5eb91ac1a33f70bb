/* SPDX-License-Identifier: Apache-2.0 */
/* bench/bench_plan.c - planner and filter scale (DESIGN.md performance targets, issue 14): pol_plan
 * of 1 000, 2 000 and 4 000 replicas of TP 8 x PP 2 on 125, 250 and 500 racks of 80 nodes x 8 GPUs
 * (10 000 to 40 000 nodes) with the growth from each size to the next, then pol_filter/pol_score
 * over 5 000 candidates of the 10 000-node cluster. A plain program, not a test: it prints
 * figures. Usage: bench_plan [SPEC [REPLICAS]] (one size: that cluster and that many replicas) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "policy/policy.h"
#include "topology/synthetic.h"

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* CPU seconds of this process: steadier than the wall clock on a shared machine */
static double cpu_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void leader(struct pol_workload *w, size_t r, unsigned k)
{
    memset(w, 0, sizeof(*w));
    w->has_intent = true;
    w->tp = 8;
    w->pp = 2;
    w->dp = 1;
    w->accel_per_pod = 8;
    w->group_size = 2;
    w->pod_index = (int)k;
    w->tp_explicit = true;
    w->tp_source = "vllm flag";
    snprintf(w->resource, sizeof(w->resource), "nvidia.com/gpu");
    snprintf(w->group, sizeof(w->group), "bench/vllm/%zu", r);
    snprintf(w->display, sizeof(w->display), "bench/vllm group %zu", r);
}

/* filter + score of one pod over the first 5 000 nodes of a cluster half full of groups: as serve
 * does it (a scope memo, fresh for the filter, reused by the score that follows) and without a
 * memo, interleaved in one run */
static int bench_filter(const struct topo_cluster *c, struct pol_ledger *l)
{
    enum { N = 5000, RUNS = 200 };
    static size_t cand[N];
    static int scores[N];
    static double t_first[RUNS], t_plain[RUNS], t_member[RUNS], t_bind[RUNS];
    struct pol_workload first, member;
    struct pol_scope_memo *memo = pol_scope_memo_new();
    struct tpx_err err = TPX_ERR_INIT;

    if (topo_cluster_node_count(c) < N || !memo) {
        pol_scope_memo_free(memo);
        return 0;
    }
    for (size_t i = 0; i < N; i++)
        cand[i] = i;
    leader(&first, 999999, 0);
    leader(&member, 0, 1); /* group 0 was placed by the plan: a later member */
    for (int r = 0; r < RUNS; r++) {
        struct pol_filter_result res;
        struct pol_placement where;
        double t0;

        pol_scope_memo_forget(memo); /* a new pod: nothing to reuse for its filter */
        t0 = now_s();
        if (pol_filter_memo(l, memo, &first, cand, N, 0, &res, &err) != TPX_OK ||
            pol_score_memo(l, memo, &first, cand, N, 0, scores, &err) != TPX_OK)
            goto fail;
        t_first[r] = now_s() - t0;
        pol_filter_result_release(&res);
        t0 = now_s();
        if (pol_filter(l, &first, cand, N, 0, &res, &err) != TPX_OK ||
            pol_score(l, &first, cand, N, 0, scores, &err) != TPX_OK)
            goto fail;
        t_plain[r] = now_s() - t0;
        pol_filter_result_release(&res);
        t0 = now_s();
        if (pol_filter(l, &member, cand, N, 0, &res, &err) != TPX_OK)
            goto fail;
        t_member[r] = now_s() - t0;
        pol_filter_result_release(&res);
        /* serve after a bind: the memo kept, a first member bound (with the hold for its worker)
         * and gone again, so the memo's rack capacities are two racks' changes behind */
        if (pol_commit(l, &first, "bench-bind", "bench-bind", cand[r % N], 0, 600, &where, &err) ==
            TPX_OK)
            pol_ledger_forget_pod(l, "bench-bind");
        tpx_err_clear(&err);
        t0 = now_s();
        if (pol_filter_memo(l, memo, &first, cand, N, 0, &res, &err) != TPX_OK ||
            pol_score_memo(l, memo, &first, cand, N, 0, scores, &err) != TPX_OK)
            goto fail;
        t_bind[r] = now_s() - t0;
        pol_filter_result_release(&res);
    }
    qsort(t_first, RUNS, sizeof(double), cmp_double);
    qsort(t_plain, RUNS, sizeof(double), cmp_double);
    qsort(t_member, RUNS, sizeof(double), cmp_double);
    qsort(t_bind, RUNS, sizeof(double), cmp_double);
    printf("filter+score, first member, %d candidates: median %.1f us, p99 %.1f us "
           "(without the scope memo: median %.1f us, %.2fx)\n",
           N, t_first[RUNS / 2] * 1e6, t_first[RUNS * 99 / 100] * 1e6, t_plain[RUNS / 2] * 1e6,
           t_plain[RUNS / 2] / t_first[RUNS / 2]);
    printf("filter+score, first member after a bind, memo kept: median %.1f us, p99 %.1f us "
           "(%.1f ns per candidate)\n",
           t_bind[RUNS / 2] * 1e6, t_bind[RUNS * 99 / 100] * 1e6, t_bind[RUNS / 2] * 1e9 / N);
    printf("filter, later member, %d candidates:       median %.1f us, p99 %.1f us\n", N,
           t_member[RUNS / 2] * 1e6, t_member[RUNS * 99 / 100] * 1e6);
    pol_scope_memo_free(memo);
    return 0;
fail:
    fprintf(stderr, "bench_plan: %s\n", err.msg);
    pol_scope_memo_free(memo);
    return 1;
}

/* Plans of nrep replicas on spec, each on a new ledger: the best of `runs` in *wall and *cpu
 * (seconds); the last ledger and cluster in *lp, *cp when asked for (the caller frees them). */
static int plan_once(const char *spec, size_t nrep, int runs, double *wall, double *cpu,
                     struct topo_cluster **cp, struct pol_ledger **lp)
{
    struct tpx_err err = TPX_ERR_INIT;
    struct topo_cluster *c;
    struct pol_ledger *l = NULL;
    struct pol_workload(*wl)[2];
    struct pol_job_replica *reps;
    struct pol_job job;
    struct pol_plan_result res;
    size_t placed = 0, rejected = 0;
    int rc = 1;

    c = topo_cluster_synthetic(spec, &err);
    if (!c) {
        fprintf(stderr, "bench_plan: %s\n", err.msg);
        return 1;
    }
    wl = calloc(nrep ? nrep : 1, sizeof(*wl));
    reps = calloc(nrep ? nrep : 1, sizeof(*reps));
    if (!wl || !reps) {
        fprintf(stderr, "bench_plan: out of memory\n");
        goto out;
    }
    for (size_t r = 0; r < nrep; r++) {
        leader(&wl[r][0], r, 0);
        leader(&wl[r][1], r, 1);
        reps[r] = (struct pol_job_replica){wl[r], NULL, 2, NULL, NULL};
    }
    job = (struct pol_job){"bench/vllm", reps, nrep};
    *wall = *cpu = 1e30;
    for (int k = 0; k < runs; k++) {
        double t0, c0, t, u;
        pol_ledger_free(l);
        l = pol_ledger_new(c, &err);
        if (!l) {
            fprintf(stderr, "bench_plan: %s\n", err.msg);
            goto out;
        }
        t0 = now_s();
        c0 = cpu_s();
        if (pol_plan(l, &job, 1, 0, &res, &err) != TPX_OK) {
            fprintf(stderr, "bench_plan: %s\n", err.msg);
            goto out;
        }
        u = cpu_s() - c0;
        t = now_s() - t0;
        *wall = t < *wall ? t : *wall;
        *cpu = u < *cpu ? u : *cpu;
        placed = res.npods;
        rejected = res.nrejected;
        pol_plan_result_release(&res);
    }
    printf("cluster: %s (%zu nodes, %zu racks)\n", spec, topo_cluster_node_count(c),
           topo_cluster_rack_count(c));
    printf("pol_plan: %zu replicas of TP 8 x PP 2: %zu pods placed, %zu replicas rejected in "
           "%.3f s (%.3f s CPU; best of %d; %.0f placements/s)\n",
           nrep, placed, rejected, *wall, *cpu, runs, (double)placed / *wall);
    rc = 0;
out:
    free(wl);
    free(reps);
    if (rc == 0 && cp && lp) {
        *cp = c;
        *lp = l;
        return 0;
    }
    pol_ledger_free(l);
    topo_cluster_free(c);
    return rc;
}

int main(int argc, char **argv)
{
    static const size_t sizes[] = {1000, 2000, 4000};
    double wall[3], cpu[3];
    struct topo_cluster *c = NULL;
    struct pol_ledger *l = NULL;
    int rc;

    if (argc > 1) {
        size_t nrep = argc > 2 ? strtoul(argv[2], NULL, 10) : 1000;
        if (plan_once(argv[1], nrep, 3, &wall[0], &cpu[0], &c, &l) != 0)
            return 1;
        rc = bench_filter(c, l);
        pol_ledger_free(l);
        topo_cluster_free(c);
        return rc;
    }
    for (size_t i = 0; i < 3; i++) {
        char spec[96];
        snprintf(spec, sizeof(spec), "racks=%zu,nodes-per-rack=80,gpus-per-node=8", sizes[i] / 8);
        if (plan_once(spec, sizes[i], 5, &wall[i], &cpu[i], i == 0 ? &c : NULL,
                      i == 0 ? &l : NULL) != 0)
            return 1;
    }
    printf("growth (CPU): 2x the work %.2fx the time, 2x again %.2fx, 4x the work %.2fx the time "
           "(wall: %.2fx, %.2fx, %.2fx; linear: 4x; target: <= 5x)\n",
           cpu[1] / cpu[0], cpu[2] / cpu[1], cpu[2] / cpu[0], wall[1] / wall[0], wall[2] / wall[1],
           wall[2] / wall[0]);
    rc = bench_filter(c, l);
    pol_ledger_free(l);
    topo_cluster_free(c);
    return rc;
}
