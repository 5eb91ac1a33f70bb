/* SPDX-License-Identifier: Apache-2.0 */
/* diagnose/gen.c - the generator of measured cases with a known answer (diagnose/gen.h). */
#include "diagnose/gen.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "policy/estimate.h"
#include "common/banned.h"

struct dg_gen_case dg_gen_default(enum dg_gen_kind k, unsigned pp, unsigned tp, unsigned ubatches)
{
    struct dg_gen_case c;

    memset(&c, 0, sizeof(c));
    c.kind = k;
    c.pp = pp;
    c.tp = tp;
    c.ubatches = ubatches;
    c.base_eff = 0.70;
    c.slow_factor = 1.6;
    c.slow_stage = pp > 1 ? pp - 1 : 0;
    c.link_ratio = 0.6;
    c.steps = 60;
    c.t0 = 1784692800; /* 2026-07-22T04:00:00Z */
    c.step_s = 15;
    c.seed = 1;
    c.missing_stage = -1;
    c.ns = "llm";
    c.name = "vllm";
    return c;
}

enum dg_status dg_gen_truth(const struct dg_gen_case *c)
{
    if (c->no_effective || c->missing_stage >= 0 || c->pp < 2)
        return DG_UNDECIDED;
    switch (c->kind) {
    case DG_GEN_SLOW_STAGE:
        return DG_IMBALANCE;
    case DG_GEN_SLOW_LINKS:
        return DG_TRANSFER;
    default:
        return DG_BUBBLE;
    }
}

void dg_gen_pod_name(const struct dg_gen_case *c, unsigned stage, char *buf, size_t len)
{
    if (stage == 0)
        snprintf(buf, len, "%s-0", c->name);
    else
        snprintf(buf, len, "%s-0-%u", c->name, stage);
}

/* splitmix64, then Box-Muller: the same seed gives the same files. */
static double uniform(unsigned long long *s)
{
    unsigned long long z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return ((double)(z >> 11) + 0.5) / 9007199254740992.0;
}

static double gauss(unsigned long long *s)
{
    double u = uniform(s), v = uniform(s);
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

/* The steady-state effective utilization of stage s (docs/diagnose.md, "The generator"). */
static double stage_eff(const struct dg_gen_case *c, unsigned pp, unsigned s)
{
    double b = pol_bubble(pp, c->ubatches), e = c->base_eff * (1.0 - b);

    if (pp < 2)
        return c->base_eff;
    switch (c->kind) {
    case DG_GEN_SLOW_STAGE:
        return s == c->slow_stage ? e : e / c->slow_factor;
    case DG_GEN_SLOW_LINKS:
        return e / (1.0 + c->link_ratio);
    default:
        return e;
    }
}

enum tpx_code dg_gen_plan(const struct dg_gen_case *c, struct tpx_buf *out, struct tpx_err *err)
{
    if (tpx_buf_addf(out, err,
                     "[{\"replica\": \"%s/%s\", \"index\": 0, \"hardware\": {\"interconnect\": "
                     "\"nvswitch\"}, \"parallelism\": {\"pipeline_parallel_size\": %u, "
                     "\"tensor_parallel_size\": %u, \"num_ubatches\": %u}, \"utilization\": "
                     "{\"bubble_ratio_est\": %.4f, \"stage_imbalance\": null}, \"pods\": [",
                     c->ns, c->name, c->pp, c->tp, c->ubatches,
                     pol_bubble(c->pp, c->ubatches)) != TPX_OK)
        return err->code;
    for (unsigned s = 0; s < c->pp; s++) {
        char pod[128];
        dg_gen_pod_name(c, s, pod, sizeof(pod));
        if (tpx_buf_addf(out, err,
                         "%s{\"pod\": \"%s\", \"stage\": %u, \"node\": \"node-%u\", \"ranks\": "
                         "[%u, %u]}",
                         s ? ", " : "", pod, s, s, s * c->tp, s * c->tp + c->tp - 1) != TPX_OK)
            return err->code;
    }
    return tpx_buf_adds(out, "]}]\n", err);
}

static enum tpx_code series(const struct dg_gen_case *c, struct tpx_buf *out, bool *first,
                            const char *metric, const char *pod, const char *node, unsigned gpu,
                            double level, double scale, unsigned long long *rng,
                            struct tpx_err *err)
{
    if (tpx_buf_addf(out, err,
                     "%s\n{\"metric\": {\"__name__\": \"%s\", \"gpu\": \"%u\", "
                     "\"UUID\": \"GPU-%s-%u\", \"Hostname\": \"%s\"",
                     *first ? "" : ",", metric, gpu, node, gpu, node) != TPX_OK)
        return err->code;
    *first = false;
    if (!c->by_host && tpx_buf_addf(out, err,
                                    ", \"pod\": \"%s\", \"namespace\": \"%s\", \"container\": "
                                    "\"engine\"",
                                    pod, c->ns) != TPX_OK)
        return err->code;
    if (tpx_buf_adds(out, "}, \"values\": [", err) != TPX_OK)
        return err->code;
    for (size_t k = 0; k < c->steps; k++) {
        double v = level + (c->noise > 0 ? c->noise * gauss(rng) : 0);
        v = v < 0 ? 0 : v > 1 ? 1 : v;
        if (tpx_buf_addf(out, err, "%s[%.3f, \"%.6f\"]", k ? ", " : "",
                         c->t0 + (double)k * c->step_s, v * scale) != TPX_OK)
            return err->code;
    }
    return tpx_buf_adds(out, "]}", err);
}

enum tpx_code dg_gen_matrix(const struct dg_gen_case *c, bool baseline, struct tpx_buf *out,
                            struct tpx_err *err)
{
    unsigned long long rng = c->seed * 2654435761ULL + (baseline ? 7 : 0);
    unsigned pp = baseline ? 1 : c->pp;
    const char *eff_name =
        c->gr_fallback ? "DCGM_FI_PROF_GR_ENGINE_ACTIVE" : "DCGM_FI_PROF_SM_ACTIVE";
    bool first = true;

    if (tpx_buf_adds(out,
                     "{\"status\": \"success\", \"data\": {\"resultType\": \"matrix\", "
                     "\"result\": [",
                     err) != TPX_OK)
        return err->code;
    for (unsigned s = 0; s < pp; s++) {
        char pod[128], node[64];
        double e = stage_eff(c, pp, s);
        if (baseline) {
            snprintf(pod, sizeof(pod), "%s-base", c->name);
            snprintf(node, sizeof(node), "node-base");
        } else {
            dg_gen_pod_name(c, s, pod, sizeof(pod));
            snprintf(node, sizeof(node), "node-%u", s);
        }
        for (unsigned g = 0; g < c->tp; g++) {
            /* each GPU a little apart from its neighbours: equal work is never exactly equal */
            double own = e * (1.0 + 0.01 * ((double)(g % 3) - 1.0));
            bool skip = !baseline && (int)s == c->missing_stage;
            if (!c->no_effective && !skip &&
                series(c, out, &first, eff_name, pod, node, g, own, 1.0, &rng, err) != TPX_OK)
                return err->code;
            if (series(c, out, &first, "DCGM_FI_DEV_GPU_UTIL", pod, node, g,
                       own * 1.35 > 1 ? 1 : own * 1.35, 100.0, &rng, err) != TPX_OK ||
                series(c, out, &first, "DCGM_FI_PROF_NVLINK_TX_BYTES", pod, node, g, own, 2e9, &rng,
                       err) != TPX_OK)
                return err->code;
        }
    }
    return tpx_buf_adds(out, "\n]}}\n", err);
}

enum tpx_code dg_gen_bench(const struct dg_gen_case *c, unsigned pp, const char *format,
                           struct tpx_buf *out, struct tpx_err *err)
{
    double ttft = 80.0 * (1.0 + 0.35 * (double)(pp - 1));
    double tpot = 30.0 * (c->kind == DG_GEN_SLOW_LINKS ? 1.0 + 0.2 * (double)(pp - 1) : 1.0);
    double tput = 4000.0 / tpot;

    if (strcmp(format, "sglang") == 0)
        return tpx_buf_addf(out, err,
                            "{\"backend\": \"sglang\", \"dataset_name\": \"random\", "
                            "\"request_rate\": 4.0, \"duration\": 120.5, \"completed\": 480, "
                            "\"total_input\": 491520, \"total_output\": 122880, "
                            "\"total_output_retokenized\": 122800, \"output_throughput\": %.3f, "
                            "\"mean_ttft_ms\": %.3f, \"p99_ttft_ms\": %.3f, \"mean_tpot_ms\": "
                            "%.3f, \"p99_tpot_ms\": %.3f, \"mean_itl_ms\": %.3f, "
                            "\"concurrency\": 12.5}\n",
                            tput, ttft, ttft * 1.8, tpot, tpot * 1.2, tpot);
    if (strcmp(format, "sglang-old") == 0)
        return tpx_buf_addf(out, err,
                            "{\"backend\": \"sglang\", \"dataset_name\": \"random\", "
                            "\"request_rate\": 4.0, \"completed\": 480, \"total_input_tokens\": "
                            "491520, \"total_output_tokens\": 122880, "
                            "\"total_output_tokens_retokenized\": 122800, \"median_ttft_ms\": "
                            "%.3f, \"median_itl_ms\": %.3f, \"output_throughput\": %.3f}\n",
                            ttft, tpot, tput);
    return tpx_buf_addf(out, err,
                        "{\"date\": \"20260722-041843\", \"endpoint_type\": \"openai\", "
                        "\"backend\": \"openai\", \"label\": null, \"num_prompts\": 480, "
                        "\"request_rate\": 4.0, \"burstiness\": 1.0, \"max_concurrency\": null, "
                        "\"pp\": \"%u\", \"duration\": 120.5, \"completed\": 480, \"failed\": 0, "
                        "\"total_input_tokens\": 491520, \"total_output_tokens\": 122880, "
                        "\"request_throughput\": 3.98, \"output_throughput\": %.3f, "
                        "\"mean_ttft_ms\": %.3f, \"median_ttft_ms\": %.3f, \"p99_ttft_ms\": %.3f, "
                        "\"mean_tpot_ms\": %.3f, \"median_tpot_ms\": %.3f, \"p99_tpot_ms\": %.3f, "
                        "\"mean_itl_ms\": %.3f}\n",
                        pp, tput, ttft, ttft, ttft * 1.8, tpot, tpot, tpot * 1.2, tpot);
}
