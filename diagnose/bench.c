/* SPDX-License-Identifier: Apache-2.0 */
/* diagnose/bench.c - benchmark results into struct dg_bench. The keys read, and where they are
 * written (docs/diagnose.md, "Inputs"):
 *   vLLM `vllm bench serve --save-result` (one object) and `--append-result` (one object per
 *     line): vllm/benchmarks/serve.py @ 009e6d4a (`result` in benchmark(): completed, failed,
 *     output_throughput, and mean_/median_/pNN_ of ttft, tpot, itl in ms; `--metadata KEY=VALUE`
 *     adds top-level keys, so `--metadata pp=4` names the pipeline size);
 *   SGLang bench_serving JSON lines, new generation: python/sglang/benchmark/metrics.py @ 1291c7fc
 *     (save_results: **BenchmarkMetrics.__dict__, so total_input, total_output, completed,
 *     mean_ttft_ms, p99_ttft_ms, mean_tpot_ms, p99_tpot_ms, output_throughput);
 *   SGLang, old generation: python/sglang/bench_serving.py (total_input_tokens,
 *     total_output_tokens, median_ttft_ms, median_itl_ms; some versions no TPOT at all).
 * Everything else is ignored. */
#include "diagnose/input.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/file.h"
#include "common/grow.h"
#include "common/str.h"
#include "diagnose/jsonseq.h"
#include "common/banned.h"

static double num(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static double first_num(const json_t *o, const char *a, const char *b)
{
    double v = num(o, a);
    return isnan(v) && b ? num(o, b) : v;
}

/* pp from a key (an integer, or a string as --metadata writes it). */
static unsigned pp_of_keys(const json_t *o)
{
    static const char *const keys[] = {"pp", "pipeline_parallel_size", "pp_size"};

    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        const json_t *v = json_object_get(o, keys[i]);
        if (json_is_integer(v) && json_integer_value(v) > 0 && json_integer_value(v) <= 1024)
            return (unsigned)json_integer_value(v);
        if (json_is_string(v)) {
            char *end;
            unsigned long x = strtoul(json_string_value(v), &end, 10);
            if (end != json_string_value(v) && *end == '\0' && x > 0 && x <= 1024)
                return (unsigned)x;
        }
    }
    return 0;
}

unsigned dg_bench_pp_of_name(const char *name)
{
    const char *base = strrchr(name, '/');

    for (const char *p = base ? base + 1 : name; *p; p++) {
        const char *q = p + 2;
        if (tolower((unsigned char)p[0]) != 'p' || tolower((unsigned char)p[1]) != 'p')
            continue;
        if (p > name && isalpha((unsigned char)p[-1]))
            continue;
        if (*q == '-' || *q == '_' || *q == '=')
            q++;
        if (isdigit((unsigned char)*q)) {
            unsigned long x = strtoul(q, NULL, 10);
            if (x > 0 && x <= 1024)
                return (unsigned)x;
        }
    }
    return 0;
}

static enum tpx_code one(struct dg_bench_set *set, const json_t *o, const char *name, size_t line,
                         struct tpx_err *err)
{
    struct dg_bench *b;
    const json_t *c = json_object_get(o, "completed");

    if (!json_is_object(o))
        return tpx_err_set(err, TPX_EPARSE, "%s:%zu: not a JSON object", name, line);
    if (!json_is_integer(c))
        return tpx_err_set(err, TPX_EPARSE,
                           "%s:%zu: no 'completed': not a vLLM or SGLang benchmark result", name,
                           line);
    if (json_integer_value(c) <= 0)
        return tpx_err_set(err, TPX_EINVAL, "%s:%zu: 0 completed requests: the benchmark failed",
                           name, line);
    if (!TPX_GROW(set->b, set->alloc, set->n + 1))
        return tpx_err_set(err, TPX_ENOMEM, "out of memory");
    b = &set->b[set->n];
    memset(b, 0, sizeof(*b));
    snprintf(b->source, sizeof(b->source), "%s:%zu", name, line);
    b->completed = (unsigned long)json_integer_value(c);
    if (json_object_get(o, "total_input") && !json_object_get(o, "total_input_tokens"))
        tpx_str_copy(b->format, sizeof(b->format), "sglang");
    else if (json_object_get(o, "total_output_retokenized") || json_object_get(o, "dataset_name") ||
             json_object_get(o, "total_output_tokens_retokenized"))
        tpx_str_copy(b->format, sizeof(b->format), "sglang-old");
    else
        tpx_str_copy(b->format, sizeof(b->format), "vllm");
    b->ttft_ms = first_num(o, "mean_ttft_ms", "median_ttft_ms");
    b->ttft_p99_ms = num(o, "p99_ttft_ms");
    b->tpot_ms = first_num(o, "mean_tpot_ms", "median_tpot_ms");
    b->tpot_p99_ms = num(o, "p99_tpot_ms");
    if (isnan(b->tpot_ms)) {
        b->tpot_ms = first_num(o, "mean_itl_ms", "median_itl_ms");
        b->tpot_p99_ms = num(o, "p99_itl_ms");
        b->tpot_from_itl = !isnan(b->tpot_ms);
    }
    b->throughput = num(o, "output_throughput");
    if (isnan(b->ttft_ms))
        return tpx_err_set(err, TPX_EPARSE,
                           "%s:%zu: no 'mean_ttft_ms' or 'median_ttft_ms' (run the benchmark with "
                           "streaming and the ttft percentile metric)",
                           name, line);
    b->pp = pp_of_keys(o);
    if (!b->pp)
        b->pp = dg_bench_pp_of_name(name);
    set->n++;
    return TPX_OK;
}

struct bench_ctx {
    struct dg_bench_set *set;
    const char *name;
};

static enum tpx_code one_value(void *ctx, const json_t *v, size_t line, struct tpx_err *err)
{
    struct bench_ctx *c = ctx;
    return one(c->set, v, c->name, line, err);
}

enum tpx_code dg_bench_parse(struct dg_bench_set *set, const char *text, size_t len,
                             const char *name, struct tpx_err *err)
{
    struct bench_ctx c = {set, name};
    size_t n;

    if (dg_json_each(text, len, name, one_value, &c, &n, err) != TPX_OK)
        return err->code;
    if (n == 0)
        return tpx_err_set(err, TPX_EPARSE, "%s: empty: no benchmark result", name);
    return TPX_OK;
}

enum tpx_code dg_bench_load(struct dg_bench_set *set, const char *path, struct tpx_err *err)
{
    char *data;
    size_t len;
    enum tpx_code rc;

    if (tpx_read_file(path, DG_MAX_FILE, &data, &len, err) != TPX_OK)
        return err->code;
    rc = dg_bench_parse(set, data, len, path, err);
    free(data);
    return rc;
}

void dg_bench_release(struct dg_bench_set *set)
{
    if (!set)
        return;
    free(set->b);
    memset(set, 0, sizeof(*set));
}
