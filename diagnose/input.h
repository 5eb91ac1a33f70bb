/* SPDX-License-Identifier: Apache-2.0 */
/* diagnose/input.h - the files `topox diagnose` reads, into plain structs: the plan (`topox plan
 * -o json`, with or without --record), benchmark results (vLLM `bench serve --save-result` /
 * `--append-result`, SGLang bench_serving JSON lines of both field-name generations), DCGM
 * series (a Prometheus /api/v1/query_range matrix, or a /metrics scrape) and the engine's
 * startup log. Only the keys needed are read; unknown keys and versions are tolerated.
 *
 * Every loader appends to a caller-allocated set (zero it, or _init), names the file in the one
 * line of its error (TPX_EPARSE for bad content, the errno code for I/O), and is released with
 * the matching _release. Not thread-safe per set. */
#ifndef TPX_DIAGNOSE_INPUT_H
#define TPX_DIAGNOSE_INPUT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/err.h"

#define DG_STR 256
#define DG_MAX_FILE ((size_t)512 << 20) /* a bench or metrics file: 512 MiB at most */

/* --- the plan --------------------------------------------------------------------------------- */

struct dg_pod {
    char name[DG_STR];
    char ns[DG_STR]; /* the job's namespace ("llm" of "llm/vllm"), "" when none */
    char node[DG_STR];
    unsigned stage;
};

struct dg_replica_plan {
    char job[DG_STR]; /* "llm/vllm" */
    unsigned index;
    unsigned pp, tp;
    unsigned num_ubatches; /* 0: unknown */
    double bubble;         /* pol_bubble(pp, num_ubatches), NaN when num_ubatches is unknown */
    double imbalance;      /* the plan's stage imbalance, NaN when unknown */
    char interconnect[64];
    struct dg_pod *pods; /* npods; none for a rejected replica */
    size_t npods;
};

struct dg_plan {
    struct dg_replica_plan *r;
    size_t n;
};

/* One document of `topox plan -o json` (an object with placements[] and estimates[]) or of
 * `-o json|yaml --record` (an array of records, or one record, each with pods[]). name is for
 * messages. Appends to out. */
enum tpx_code dg_plan_add_json(struct dg_plan *out, const json_t *doc, const char *name,
                               struct tpx_err *err);
/* The same from a file (JSON or YAML, several documents). */
enum tpx_code dg_plan_load(struct dg_plan *out, const char *path, struct tpx_err *err);
void dg_plan_release(struct dg_plan *p);

/* --- benchmark results ------------------------------------------------------------------------ */

struct dg_bench {
    char format[16];     /* "vllm", "sglang" (total_input) or "sglang-old" (total_input_tokens) */
    char source[DG_STR]; /* "FILE:LINE" */
    unsigned pp;         /* from a pp / pipeline_parallel_size / pp_size key or the file name
                            (pp4, pp-4, pp_4, pp=4); 0: unknown */
    unsigned long completed;
    double ttft_ms, ttft_p99_ms; /* NaN when absent */
    double tpot_ms, tpot_p99_ms;
    double throughput;  /* output tokens per second */
    bool tpot_from_itl; /* TPOT read from the inter-token latency */
};

struct dg_bench_set {
    struct dg_bench *b;
    size_t n, alloc;
};

/* One result per JSON value of text (one object, or JSON lines). 0 completed requests, no JSON
 * object, a truncated document or no TTFT are errors naming name and the line. */
enum tpx_code dg_bench_parse(struct dg_bench_set *set, const char *text, size_t len,
                             const char *name, struct tpx_err *err);
/* pp from a file name: "pp4", "pp-4", "pp_4" or "pp=4", not inside a word; 0 when none. */
unsigned dg_bench_pp_of_name(const char *name);
enum tpx_code dg_bench_load(struct dg_bench_set *set, const char *path, struct tpx_err *err);
void dg_bench_release(struct dg_bench_set *set);

/* --- DCGM series ------------------------------------------------------------------------------ */

enum dg_metric {
    DG_M_SM_ACTIVE = 0, /* DCGM_FI_PROF_SM_ACTIVE: effective utilization */
    DG_M_GR_ACTIVE,     /* DCGM_FI_PROF_GR_ENGINE_ACTIVE: its fallback */
    DG_M_GPU_UTIL,      /* DCGM_FI_DEV_GPU_UTIL (percent): occupancy */
    DG_M_NVLINK_TX,     /* DCGM_FI_PROF_NVLINK_TX_BYTES (bytes/s) */
    DG_M_PCIE_TX,       /* DCGM_FI_PROF_PCIE_TX_BYTES (bytes/s) */
    DG_M_COUNT
};

/* "DCGM_FI_PROF_SM_ACTIVE", ... Static text. */
const char *dg_metric_name(enum dg_metric m);

/* AMD device-metrics-exporter families read as well: gpu_prof_sm_active (effective),
 * gpu_gfx_activity (occupancy), both percentages; labels gpu_id, hostname, pod, namespace. */
#define DG_AMD_FAMILIES 2
extern const char *const dg_amd_families[DG_AMD_FAMILIES];

struct dg_series {
    enum dg_metric metric;
    char pod[DG_STR], ns[DG_STR]; /* "" when the exporter gave none */
    char host[DG_STR];            /* Hostname or hostname */
    char gpu[48];                 /* gpu, with "/GPU_I_ID" for a MIG instance */
    double scale;                 /* the factor applied to each sample (0.01 for a percentage) */
    double *t, *v; /* n samples, seconds since the epoch (0: a scrape without time); v as a
                      0..1 ratio (GPU_UTIL divided by 100) or bytes/s */
    size_t n;
};

struct dg_window {
    double start, end; /* seconds since the epoch */
    bool set;
};

struct dg_metrics {
    struct dg_series *s;
    size_t n, alloc;
    size_t seen;  /* samples read, DCGM or not */
    size_t other; /* series of other families (skipped) */
};

/* "START,END", each RFC 3339 ("2026-07-22T04:18:43Z", offsets allowed) or seconds since the
 * epoch. TPX_EINVAL when malformed or END <= START. */
enum tpx_code dg_window_parse(const char *s, struct dg_window *w, struct tpx_err *err);

/* A Prometheus query_range (matrix) or query (vector) answer, several concatenated or as JSON
 * lines, or the text exposition of a /metrics scrape. Keeps the DCGM series above with their
 * samples inside w (when set); others are counted in seen/other. */
enum tpx_code dg_metrics_parse(struct dg_metrics *m, const char *text, size_t len, const char *name,
                               const struct dg_window *w, struct tpx_err *err);
/* The same from a file, and an error when the file adds no DCGM series with samples in w. */
enum tpx_code dg_metrics_load(struct dg_metrics *m, const char *path, const struct dg_window *w,
                              struct tpx_err *err);
void dg_metrics_release(struct dg_metrics *m);

/* --- the engine's startup log ----------------------------------------------------------------- */

struct dg_startup {
    char engine[16];  /* "vllm" or "sglang" */
    char version[32]; /* vLLM's "0.18.0"; "" for SGLang */
    unsigned tp, pp;  /* 0: not on the line */
    size_t line;
};

/* The first vLLM "Initializing a V1 LLM engine (vX) with config: ..." or SGLang
 * "server_args=ServerArgs(...)" line. An error when there is none. */
enum tpx_code dg_startup_parse(struct dg_startup *out, const char *text, size_t len,
                               const char *name, struct tpx_err *err);
enum tpx_code dg_startup_load(struct dg_startup *out, const char *path, struct tpx_err *err);

#endif
