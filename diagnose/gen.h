/* SPDX-License-Identifier: Apache-2.0 */
/* diagnose/gen.h - measurement series with a known ground truth, in the exact file formats
 * `topox diagnose` reads: the plan (`plan --record` JSON with pods[]), a Prometheus query_range
 * matrix of DCGM series, and benchmark results (vLLM, SGLang new and old). The model of each
 * case is in docs/diagnose.md, "The generator". Deterministic for a seed; no I/O. */
#ifndef TPX_DIAGNOSE_GEN_H
#define TPX_DIAGNOSE_GEN_H

#include <stdbool.h>
#include <stddef.h>

#include "common/buf.h"
#include "common/err.h"
#include "diagnose/rule.h"

enum dg_gen_kind {
    DG_GEN_BUBBLE = 0, /* equal stages, zero-cost links: the bubble alone */
    DG_GEN_SLOW_STAGE, /* one stage slow_factor times slower: the others wait for it */
    DG_GEN_SLOW_LINKS, /* every hop costs link_ratio of a stage's compute */
};

struct dg_gen_case {
    enum dg_gen_kind kind;
    unsigned pp, tp, ubatches;
    double base_eff;    /* effective utilization of the pp = 1 run (0.70) */
    double slow_factor; /* DG_GEN_SLOW_STAGE (1.6) */
    unsigned slow_stage;
    double link_ratio; /* DG_GEN_SLOW_LINKS (0.6) */
    double noise;      /* standard deviation of each sample (0: none) */
    size_t steps;      /* samples per series (60) */
    double t0, step_s; /* first sample time and spacing (seconds) */
    unsigned long long seed;
    int missing_stage;     /* -1: none; else that stage has no effective series */
    bool no_effective;     /* only DCGM_FI_DEV_GPU_UTIL: occupancy without effective */
    bool gr_fallback;      /* GR_ENGINE_ACTIVE instead of SM_ACTIVE */
    bool by_host;          /* no pod/namespace labels: join by Hostname + gpu */
    const char *ns, *name; /* the job "ns/name" and its pods "name-0", "name-0-1", ... */
};

/* A clean case of kind k at pp/tp/ubatches with the defaults above. */
struct dg_gen_case dg_gen_default(enum dg_gen_kind k, unsigned pp, unsigned tp, unsigned ubatches);

/* The status the rule should name for c without noise or missing series. */
enum dg_status dg_gen_truth(const struct dg_gen_case *c);

/* Pod s of c ("name-0", "name-0-s"), written into buf. */
void dg_gen_pod_name(const struct dg_gen_case *c, unsigned stage, char *buf, size_t len);

/* `topox plan -o json --record` for c: one record with pods[] (pod s on node "node-s"). */
enum tpx_code dg_gen_plan(const struct dg_gen_case *c, struct tpx_buf *out, struct tpx_err *err);

/* A query_range matrix answer of c's GPUs (baseline: the same workload at pp 1 on one pod). */
enum tpx_code dg_gen_matrix(const struct dg_gen_case *c, bool baseline, struct tpx_buf *out,
                            struct tpx_err *err);

/* One benchmark result of c's workload at pp: format "vllm", "sglang" or "sglang-old". TTFT
 * rises with pp (pipeline depth), TPOT is flat except with slow links. */
enum tpx_code dg_gen_bench(const struct dg_gen_case *c, unsigned pp, const char *format,
                           struct tpx_buf *out, struct tpx_err *err);

#endif
