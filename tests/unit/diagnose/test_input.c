/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/diagnose/test_input.c - every real sample of tests/fixtures/diagnose parses, into
 * the values it holds; bad input fails with one line naming the file and what is wrong. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/file.h"
#include "diagnose/gen.h"
#include "diagnose/input.h"

#define FX TPX_FIXTURES "/diagnose/"

static char *slurp(const char *path, size_t *len)
{
    struct tpx_err err = TPX_ERR_INIT;
    char *d;
    cr_assert_eq(tpx_read_file(path, 1 << 24, &d, len, &err), TPX_OK, "%s", err.msg);
    return d;
}

/* --- bench -------------------------------------------------------------------------------------
 */

Test(bench, the_two_real_vllm_results)
{
    struct dg_bench_set s = {0};
    struct tpx_err err = TPX_ERR_INIT;

    cr_assert_eq(dg_bench_load(&s, FX "vllm_bench_serve_result_Qwen2.5-VL-3B.json", &err), TPX_OK,
                 "%s", err.msg);
    cr_assert_eq(
        dg_bench_load(&s, FX "vllm_bench_serve_result_Qwen3-VL-8B_vllm-ascend-0.18.0.json", &err),
        TPX_OK, "%s", err.msg);
    cr_assert_eq(s.n, 2);
    cr_expect_str_eq(s.b[0].format, "vllm");
    cr_expect_eq(s.b[0].completed, 199);
    cr_expect_float_eq(s.b[0].ttft_ms, 97.50969301155726, 1e-9);
    cr_expect_float_eq(s.b[0].tpot_p99_ms, 35.01290820802995, 1e-9);
    cr_expect_float_eq(s.b[0].throughput, 124.58542994370372, 1e-9);
    cr_expect_eq(s.b[0].pp, 0); /* neither key nor name says it */
    cr_expect_eq(s.b[1].completed, 200);
    cr_expect_float_eq(s.b[1].tpot_ms, 27.911832109121164, 1e-9);
    dg_bench_release(&s);
}

Test(bench, append_result_lines_are_one_result_each)
{
    size_t la, lb;
    char *a = slurp(FX "vllm_bench_serve_result_Qwen2.5-VL-3B.json", &la);
    char *b = slurp(FX "vllm_bench_serve_result_Qwen3-VL-8B_vllm-ascend-0.18.0.json", &lb);
    char *both = malloc(la + lb + 2);
    struct dg_bench_set s = {0};
    struct tpx_err err = TPX_ERR_INIT;

    /* --append-result writes "\n" and the next object (vllm/benchmarks/serve.py) */
    while (la && (a[la - 1] == '\n' || a[la - 1] == ' '))
        la--;
    memcpy(both, a, la);
    both[la] = '\n';
    memcpy(both + la + 1, b, lb);
    cr_assert_eq(dg_bench_parse(&s, both, la + lb + 1, "runs.jsonl", &err), TPX_OK, "%s", err.msg);
    cr_expect_eq(s.n, 2);
    cr_expect_str_eq(s.b[1].source, "runs.jsonl:2");
    dg_bench_release(&s);
    free(a);
    free(b);
    free(both);
}

Test(bench, sglang_both_generations)
{
    struct dg_gen_case c = dg_gen_default(DG_GEN_BUBBLE, 4, 2, 8);
    struct dg_bench_set s = {0};
    struct tpx_err err = TPX_ERR_INIT;
    struct tpx_buf b;

    tpx_buf_init(&b, 1 << 20);
    cr_assert_eq(dg_gen_bench(&c, 4, "sglang", &b, &err), TPX_OK);
    cr_assert_eq(dg_gen_bench(&c, 4, "sglang-old", &b, &err), TPX_OK);
    cr_assert_eq(dg_bench_parse(&s, b.data, b.len, "sglang_0722_pp4.jsonl", &err), TPX_OK, "%s",
                 err.msg);
    cr_assert_eq(s.n, 2);
    cr_expect_str_eq(s.b[0].format, "sglang");
    cr_expect_str_eq(s.b[1].format, "sglang-old");
    cr_expect_float_eq(s.b[0].ttft_ms, 80.0 * 2.05, 1e-6);
    cr_expect(!s.b[0].tpot_from_itl);
    cr_expect(s.b[1].tpot_from_itl); /* the old file has only median_itl_ms */
    cr_expect_float_eq(s.b[1].tpot_ms, 30.0, 1e-6);
    cr_expect_eq(s.b[0].pp, 4); /* from the file name */
    cr_expect_eq(s.b[1].pp, 4);
    tpx_buf_release(&b);
    dg_bench_release(&s);
}

Test(bench, pp_in_a_file_name)
{
    cr_expect_eq(dg_bench_pp_of_name("out/run-pp4.json"), 4);
    cr_expect_eq(dg_bench_pp_of_name("PP_8.jsonl"), 8);
    cr_expect_eq(dg_bench_pp_of_name("bench_pp=2.json"), 2);
    cr_expect_eq(dg_bench_pp_of_name("app4.json"), 0);
    cr_expect_eq(dg_bench_pp_of_name("pp/run.json"), 0);
}

Test(bench, bad_input_names_the_file_and_the_fault)
{
    size_t len;
    char *a = slurp(FX "vllm_bench_serve_result_Qwen2.5-VL-3B.json", &len);
    struct dg_bench_set s = {0};
    struct tpx_err err = TPX_ERR_INIT;
    static const char zero[] = "{\"completed\": 0, \"failed\": 200, \"mean_ttft_ms\": 0}";

    cr_expect_eq(dg_bench_parse(&s, a, len / 2, "cut.json", &err), TPX_EPARSE);
    cr_expect(strstr(err.msg, "cut.json:1") && strstr(err.msg, "truncated"), "%s", err.msg);
    err = (struct tpx_err)TPX_ERR_INIT;
    cr_expect_eq(dg_bench_parse(&s, zero, sizeof(zero) - 1, "zero.json", &err), TPX_EINVAL);
    cr_expect(strstr(err.msg, "zero.json:1: 0 completed requests"), "%s", err.msg);
    err = (struct tpx_err)TPX_ERR_INIT;
    cr_expect_eq(dg_bench_parse(&s, "[1, 2]", 6, "arr.json", &err), TPX_EPARSE);
    cr_expect(strstr(err.msg, "arr.json"), "%s", err.msg);
    err = (struct tpx_err)TPX_ERR_INIT;
    cr_expect_eq(dg_bench_parse(&s, "  \n", 3, "empty.json", &err), TPX_EPARSE);
    cr_expect_eq(s.n, 0);
    free(a);
}

/* --- metrics -----------------------------------------------------------------------------------
 */

static size_t count(const struct dg_metrics *m, enum dg_metric which)
{
    size_t n = 0;
    for (size_t i = 0; i < m->n; i++)
        n += m->s[i].metric == which;
    return n;
}

Test(metrics, the_query_range_shape)
{
    struct dg_metrics m = {0};
    struct tpx_err err = TPX_ERR_INIT;

    cr_assert_eq(dg_metrics_load(&m, FX "prometheus_query_range_matrix_SHAPE.json", NULL, &err),
                 TPX_OK, "%s", err.msg);
    cr_assert_eq(m.n, 2);
    cr_expect_eq(m.s[0].metric, DG_M_SM_ACTIVE);
    cr_expect_str_eq(m.s[0].pod, "llm-0");
    cr_expect_str_eq(m.s[0].ns, "llm");
    cr_expect_str_eq(m.s[1].host, "node-b");
    cr_expect_str_eq(m.s[1].gpu, "1");
    cr_expect_eq(m.s[0].n, 3);
    cr_expect_float_eq(m.s[0].v[2], 0.63, 1e-12);
    cr_expect_float_eq(m.s[0].t[0], 1435781430.781, 1e-6);
    dg_metrics_release(&m);
}

Test(metrics, a_window_keeps_its_samples_and_an_empty_one_is_an_error)
{
    struct dg_metrics m = {0};
    struct tpx_err err = TPX_ERR_INIT;
    struct dg_window w;

    cr_assert_eq(dg_window_parse("1435781431,1435781432.9", &w, &err), TPX_OK);
    cr_assert_eq(dg_metrics_load(&m, FX "prometheus_query_range_matrix_SHAPE.json", &w, &err),
                 TPX_OK);
    cr_expect_eq(m.s[0].n, 2);
    dg_metrics_release(&m);
    cr_assert_eq(dg_window_parse("2026-07-22T04:00:00Z,2026-07-22T05:00:00Z", &w, &err), TPX_OK);
    cr_expect_eq(dg_metrics_load(&m, FX "prometheus_query_range_matrix_SHAPE.json", &w, &err),
                 TPX_EINVAL);
    cr_expect(strstr(err.msg, "prometheus_query_range_matrix_SHAPE.json: no DCGM series with "
                              "samples in the window"),
              "%s", err.msg);
    dg_metrics_release(&m);
}

Test(metrics, the_real_dcgm_scrapes)
{
    struct dg_metrics m = {0};
    struct tpx_err err = TPX_ERR_INIT;

    cr_assert_eq(dg_metrics_load(&m, FX "dcgm_exporter_metrics_L40S_excerpt.prom", NULL, &err),
                 TPX_OK, "%s", err.msg);
    cr_expect_eq(count(&m, DG_M_GPU_UTIL), 1);
    cr_expect_eq(count(&m, DG_M_GR_ACTIVE), 1);
    cr_expect_str_eq(m.s[0].host, "gpu1-wl8sg");
    cr_expect(m.other > 0);
    dg_metrics_release(&m);
    cr_assert_eq(dg_metrics_load(&m, FX "dcgm_exporter_metrics_T4_excerpt.prom", NULL, &err),
                 TPX_OK, "%s", err.msg);
    cr_assert_eq(count(&m, DG_M_GR_ACTIVE), 1);
    for (size_t i = 0; i < m.n; i++) {
        if (m.s[i].metric == DG_M_GR_ACTIVE)
            cr_expect_float_eq(m.s[i].v[0], 0.156205, 1e-9);
    }
    dg_metrics_release(&m);
    cr_assert_eq(dg_metrics_load(&m, FX "dcgm_exporter_metrics_A800_MIG_excerpt.prom", NULL, &err),
                 TPX_OK, "%s", err.msg);
    cr_assert_eq(m.n, 2); /* two MIG instances of GPU 0 */
    cr_expect_str_eq(m.s[0].gpu, "0/3");
    cr_expect_str_eq(m.s[1].gpu, "0/5");
    dg_metrics_release(&m);
}

Test(metrics, engine_scrapes_parse_but_hold_no_dcgm_series)
{
    static const char *const files[] = {FX "vllm_metrics_scrape_excerpt_v0.29.0_cpu.prom",
                                        FX "sglang_metrics_excerpt.prom"};
    static const size_t samples[] = {11, 8};

    for (size_t i = 0; i < 2; i++) {
        struct dg_metrics m = {0};
        struct tpx_err err = TPX_ERR_INIT;
        size_t len;
        char *d = slurp(files[i], &len);
        cr_expect_eq(dg_metrics_parse(&m, d, len, files[i], NULL, &err), TPX_OK, "%s", err.msg);
        cr_expect_eq(m.seen, samples[i]);
        cr_expect_eq(m.n, 0);
        err = (struct tpx_err)TPX_ERR_INIT;
        cr_expect_eq(dg_metrics_load(&m, files[i], NULL, &err), TPX_EINVAL);
        cr_expect(strstr(err.msg, "no DCGM series"), "%s", err.msg);
        dg_metrics_release(&m);
        free(d);
    }
}

/* The fact behind the GR_ENGINE_ACTIVE fallback: dcgm-exporter's default counters ship
 * DCGM_FI_PROF_SM_ACTIVE commented out and GR_ENGINE_ACTIVE on. */
Test(metrics, the_exporter_default_counters_enable_gr_engine_not_sm_active)
{
    static const char *const files[] = {FX "dcgm-exporter_default-counters.csv",
                                        FX "dcgm-exporter_dcp-metrics-included.csv"};

    for (size_t f = 0; f < 2; f++) {
        size_t len;
        char *d = slurp(files[f], &len);
        bool sm = false, gr = false, util = false;
        for (char *line = strtok_r(d, "\n", &(char *){NULL}); line;) {
            char *next = strchr(line, '\0') + 1;
            if (strncmp(line, "DCGM_FI_PROF_SM_ACTIVE,", 23) == 0)
                sm = true;
            if (strncmp(line, "DCGM_FI_PROF_GR_ENGINE_ACTIVE,", 30) == 0)
                gr = true;
            if (strncmp(line, "DCGM_FI_DEV_GPU_UTIL,", 21) == 0)
                util = true;
            line = next < d + len ? strtok_r(next, "\n", &(char *){NULL}) : NULL;
        }
        cr_expect(!sm && gr && util, "%s: sm %d gr %d util %d", files[f], sm, gr, util);
        free(d);
    }
}

Test(metrics, bad_matrices)
{
    struct dg_metrics m = {0};
    struct tpx_err err = TPX_ERR_INIT;
    static const char err_answer[] =
        "{\"status\": \"error\", \"errorType\": \"bad_data\", \"error\": \"parse error\"}";
    static const char scalar[] = "{\"status\": \"success\", \"data\": {\"resultType\": "
                                 "\"scalar\", \"result\": [1, \"2\"]}}";
    static const char cut[] = "{\"status\": \"success\", \"data\": {\"resultType\": \"matrix\", "
                              "\"result\": [{\"metric\": {}";

    cr_expect_eq(dg_metrics_parse(&m, err_answer, sizeof(err_answer) - 1, "e.json", NULL, &err),
                 TPX_EINVAL);
    cr_expect(strstr(err.msg, "e.json:1: Prometheus answered 'error': parse error"), "%s", err.msg);
    err = (struct tpx_err)TPX_ERR_INIT;
    cr_expect_eq(dg_metrics_parse(&m, scalar, sizeof(scalar) - 1, "s.json", NULL, &err),
                 TPX_EPARSE);
    err = (struct tpx_err)TPX_ERR_INIT;
    cr_expect_eq(dg_metrics_parse(&m, cut, sizeof(cut) - 1, "cut.json", NULL, &err), TPX_EPARSE);
    cr_expect(strstr(err.msg, "cut.json:1: truncated JSON"), "%s", err.msg);
    dg_metrics_release(&m);
}

Test(metrics, window_syntax)
{
    struct dg_window w;
    struct tpx_err err = TPX_ERR_INIT;

    cr_assert_eq(dg_window_parse("2026-07-22T04:18:43Z,2026-07-22T06:18:43.5+02:00", &w, &err),
                 TPX_OK, "%s", err.msg);
    cr_expect_float_eq(w.end - w.start, 0.5, 1e-6);
    cr_expect_eq(dg_window_parse("100,50", &w, &err), TPX_EINVAL);
    err = (struct tpx_err)TPX_ERR_INIT;
    cr_expect_eq(dg_window_parse("yesterday,today", &w, &err), TPX_EINVAL);
    cr_expect(strstr(err.msg, "--window"));
}

/* --- startup logs ------------------------------------------------------------------------------
 */

Test(startup, the_real_vllm_and_sglang_lines)
{
    struct dg_startup s;
    struct tpx_err err = TPX_ERR_INIT;

    cr_assert_eq(dg_startup_load(&s, FX "vllm_startup_log_excerpt_v0.18.0.txt", &err), TPX_OK, "%s",
                 err.msg);
    cr_expect_str_eq(s.engine, "vllm");
    cr_expect_str_eq(s.version, "0.18.0");
    cr_expect_eq(s.tp, 1);
    cr_expect_eq(s.pp, 1);
    cr_expect_eq(s.line, 3);
    cr_assert_eq(dg_startup_load(&s, FX "sglang_server_args_log_excerpt.txt", &err), TPX_OK);
    cr_expect_str_eq(s.engine, "sglang");
    cr_expect_eq(s.tp, 8);
    cr_expect_eq(s.pp, 1);
    cr_expect_eq(s.line, 2);
}

Test(startup, field_boundaries_and_no_line)
{
    static const char l[] = "x server_args=ServerArgs(model_path='m', attn_tp_size=4, tp_size=2, "
                            "dp_size=1, pp_size=4)\n";
    struct dg_startup s;
    struct tpx_err err = TPX_ERR_INIT;

    cr_assert_eq(dg_startup_parse(&s, l, sizeof(l) - 1, "l", &err), TPX_OK);
    cr_expect_eq(s.tp, 2);
    cr_expect_eq(s.pp, 4);
    cr_expect_eq(dg_startup_parse(&s, "hello\n", 6, "h.log", &err), TPX_EINVAL);
    cr_expect(strstr(err.msg, "h.log: no vLLM"), "%s", err.msg);
}

/* --- the plan ----------------------------------------------------------------------------------
 */

Test(plan, both_forms)
{
    static const char obj[] =
        "{\"summary\": {}, \"placements\": [{\"pod\": \"a-0\", \"job\": \"ns1/a\", \"replica\": 0, "
        "\"stage\": 0, \"node\": \"n1\"}, {\"pod\": \"a-0-1\", \"job\": \"ns1/a\", \"replica\": 0, "
        "\"stage\": 1, \"node\": \"n2\"}], \"estimates\": [{\"job\": \"ns1/a\", \"replica\": 0, "
        "\"tp\": 8, \"pp\": 2, \"num_ubatches\": 4, \"bubble\": 0.2, \"interconnect\": "
        "\"nvswitch\"}], \"rejected\": [], \"notes\": []}";
    struct dg_plan p = {0};
    struct tpx_err err = TPX_ERR_INIT;
    json_t *doc = json_loads(obj, 0, NULL);
    struct dg_gen_case c = dg_gen_default(DG_GEN_BUBBLE, 4, 2, 0);
    struct tpx_buf b;

    cr_assert_eq(dg_plan_add_json(&p, doc, "plan.json", &err), TPX_OK, "%s", err.msg);
    json_decref(doc);
    cr_assert_eq(p.n, 1);
    cr_expect_eq(p.r[0].npods, 2);
    cr_expect_str_eq(p.r[0].pods[1].ns, "ns1");
    cr_expect_eq(p.r[0].pods[1].stage, 1);
    cr_expect_float_eq(p.r[0].bubble, 0.2, 1e-9); /* (2-1)/(4+2-1) */
    tpx_buf_init(&b, 1 << 20);
    cr_assert_eq(dg_gen_plan(&c, &b, &err), TPX_OK);
    doc = json_loadb(b.data, b.len, 0, NULL);
    cr_assert_eq(dg_plan_add_json(&p, doc, "rec.json", &err), TPX_OK, "%s", err.msg);
    cr_expect_eq(p.r[1].pp, 4);
    cr_expect_eq(p.r[1].npods, 4);
    cr_expect(isnan(p.r[1].bubble)); /* num_ubatches 0: unknown, not assumed */
    json_decref(doc);
    tpx_buf_release(&b);
    doc = json_loads("{\"kind\": \"Pod\"}", 0, NULL);
    cr_expect_eq(dg_plan_add_json(&p, doc, "pod.json", &err), TPX_EPARSE);
    cr_expect(strstr(err.msg, "pod.json"));
    json_decref(doc);
    dg_plan_release(&p);
}

/* AMD's device-metrics-exporter: the label set of a real gpu_gfx_activity line (card_model,
 * gpu_id, hostname, ...), percentages read as ratios, an "amd_" prefix tolerated. */
Test(metrics, amd_device_metrics_exporter)
{
    static const char scrape[] =
        "# TYPE gpu_gfx_activity gauge\n"
        "gpu_gfx_activity{card_model=\"102-G30211-0C\",card_series=\"AMD Instinct MI300X OAM\","
        "card_vendor=\"AMD\",cluster_name=\"\",container=\"\",driver_version=\"6.12.12\","
        "gpu_compute_partition_type=\"spx\",gpu_id=\"2\",gpu_memory_partition_type=\"nps1\","
        "gpu_partition_id=\"0\",hostname=\"tw038\",namespace=\"llm\",pod=\"vllm-0\"} 45\n"
        "amd_gpu_prof_sm_active{gpu_id=\"2\",hostname=\"tw038\",namespace=\"llm\",pod=\"vllm-0\"} "
        "37.5\n";
    struct dg_metrics m = {0};
    struct tpx_err err = TPX_ERR_INIT;

    cr_assert_eq(dg_metrics_parse(&m, scrape, sizeof(scrape) - 1, "amd.prom", NULL, &err), TPX_OK,
                 "%s", err.msg);
    cr_assert_eq(m.n, 2);
    cr_expect_eq(m.s[0].metric, DG_M_GPU_UTIL);
    cr_expect_float_eq(m.s[0].v[0], 0.45, 1e-12);
    cr_expect_eq(m.s[1].metric, DG_M_SM_ACTIVE);
    cr_expect_float_eq(m.s[1].v[0], 0.375, 1e-12);
    cr_expect_str_eq(m.s[1].gpu, "2");
    cr_expect_str_eq(m.s[1].host, "tw038");
    cr_expect_str_eq(m.s[1].pod, "vllm-0");
    dg_metrics_release(&m);
}
