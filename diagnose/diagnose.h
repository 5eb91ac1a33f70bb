/* SPDX-License-Identifier: Apache-2.0 */
/* diagnose/diagnose.h - `topox diagnose` as a library: join the DCGM series to the plan's pods,
 * reduce them per replica, per stage and per GPU, run the rule (diagnose/rule.h) on each
 * replica, attach the benchmark's perf and the PP sweep, and render the result as JSON (the
 * seed record), a table or an SVG. Reads only the inputs; the result owns its memory. */
#ifndef TPX_DIAGNOSE_DIAGNOSE_H
#define TPX_DIAGNOSE_DIAGNOSE_H

#include <jansson.h>

#include "common/buf.h"
#include "common/err.h"
#include "diagnose/input.h"
#include "diagnose/rule.h"

/* All borrowed; any may be NULL (or empty) except plan. */
struct dg_inputs {
    const struct dg_plan *plan;
    const struct dg_metrics *metrics;
    const struct dg_bench_set *bench;
    const struct dg_metrics *baseline_metrics;
    const struct dg_bench_set *baseline_bench;
    const struct dg_startup *startup;       /* NULL: no --startup-log */
    const struct dg_thresholds *thresholds; /* NULL: dg_default_thresholds */
};

struct dg_perf {
    bool known;
    double ttft_ms, tpot_ms, throughput, ttft_p99_ms, tpot_p99_ms;
    char source[DG_STR];
};

struct dg_replica_result {
    const struct dg_replica_plan *plan; /* borrowed from the inputs */
    unsigned pp, tp;                    /* what was judged (the startup log's pp when it differs) */
    double bubble_est;
    struct dg_replica_out out;
    double link_tx[DG_MAX_STAGES];     /* per stage, NaN when not measured */
    double stage_occ[DG_MAX_STAGES];   /* per stage occupancy, NaN when not measured */
    size_t gpus_joined, gpus_expected; /* effective or occupancy series joined / tp * pp */
    struct dg_perf perf;
    char **notes; /* one line each */
    size_t nnotes;
};

struct dg_result {
    struct dg_replica_result *r;
    size_t n;
    struct dg_sweep_point *sweep_pts;
    size_t nsweep;
    struct dg_sweep_out sweep;
    double baseline_eff; /* NaN without --baseline-metrics */
    char **notes;        /* about the inputs as a whole, the layout mismatch first */
    size_t nnotes;
};

/* TPX_ENOMEM only: missing or odd inputs become notes and undecided statuses. */
enum tpx_code dg_run(const struct dg_inputs *in, struct dg_result *out, struct tpx_err *err);
void dg_result_release(struct dg_result *r);

/* {"replicas": [...], "sweep": {...}, "notes": [...]}: new reference in *out. */
enum tpx_code dg_report_json(const struct dg_result *r, json_t **out, struct tpx_err *err);
/* The table for people. Appends to out. */
enum tpx_code dg_report_table(const struct dg_result *r, struct tpx_buf *out, struct tpx_err *err);
/* An SVG: effective utilization per stage against the bubble bound, per replica, and the
 * TTFT/TPOT sweep where there is one. Appends to out. */
enum tpx_code dg_report_svg(const struct dg_result *r, struct tpx_buf *out, struct tpx_err *err);

#endif
