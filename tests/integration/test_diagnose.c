/* SPDX-License-Identifier: Apache-2.0 */
/* tests/integration/test_diagnose.c - the real `topox diagnose`: generated cases of every status
 * across pp 2, 4, 8 in the exact file formats (written by diagnose/gen.c through
 * tpx_diagnose_gen, so that this test links no project library), the manifest path (-f with
 * --cluster), the sweep, the startup-log mismatch reported first, -o json|yaml, --svg, --help,
 * a small fake Prometheus for --prometheus, and bad input: exit 2 with one line naming the file
 * and what is wrong. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

#define FX TPX_FIXTURES "/diagnose/"
#define EXAMPLE TPX_SOURCE_DIR "/manifests/examples/vllm-lws-tp8-pp2.yaml"

static char dir[64];

static void init(void)
{
    snprintf(dir, sizeof(dir), "/tmp/topox-diagnose-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

static void fini(void)
{
    char cmd[128];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    cr_expect_eq(system(cmd), 0);
}

TestSuite(diagnose, .init = init, .fini = fini);

static void path_in(char *out, size_t n, const char *name)
{
    snprintf(out, n, "%s/%s", dir, name);
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");

    cr_assert_not_null(f, "%s", path);
    cr_assert(fputs(text, f) >= 0);
    cr_assert_eq(fclose(f), 0);
}

/* A generated case (diagnose/gen.h, through tpx_diagnose_gen) and the status it must get. */
enum kind { BUBBLE, SLOW_STAGE, SLOW_LINKS };
static const char *const kind_names[] = {"bubble", "slow-stage", "slow-links"};
static const char *const truth[] = {"bubble-dominated", "imbalance-dominated",
                                    "inter-stage-transfer-dominated"};

struct gen {
    enum kind kind;
    unsigned pp, tp, ubatches;
};

/* Files of a case: plan.json, run.json (matrix), base.json (matrix at pp 1), bench-ppN.json. */
struct files {
    char plan[128], run[128], base[128], bench[4][128];
};

static void generate(const struct gen *g, struct files *f)
{
    static const unsigned at[] = {1, 2, 4, 8};
    char pp[16], tp[16], m[16];
    struct run_result r;

    snprintf(pp, sizeof(pp), "%u", g->pp);
    snprintf(tp, sizeof(tp), "%u", g->tp);
    snprintf(m, sizeof(m), "%u", g->ubatches);
    cr_assert_eq(run_program(TPX_DIAGNOSE_GEN,
                             (const char *[]){dir, kind_names[g->kind], pp, tp, m, NULL}, NULL, &r),
                 0);
    cr_assert_eq(r.status, 0, "%s", r.err);
    run_result_release(&r);
    path_in(f->plan, sizeof(f->plan), "plan.json");
    path_in(f->run, sizeof(f->run), "run.json");
    path_in(f->base, sizeof(f->base), "base.json");
    for (size_t i = 0; i < 4; i++) {
        char name[32];
        snprintf(name, sizeof(name), "bench-pp%u.json", at[i]);
        path_in(f->bench[i], sizeof(f->bench[i]), name);
    }
}

static json_t *run_json(const char *const *args, struct run_result *r)
{
    json_t *doc;

    cr_assert_eq(run_topox(args, NULL, r), 0);
    cr_assert_eq(r->status, 0, "exit %d: %s", r->status, r->err);
    doc = json_loads(r->out, 0, NULL);
    cr_assert_not_null(doc, "not JSON:\n%s", r->out);
    return doc;
}

static const char *status_of(json_t *doc, size_t replica)
{
    return json_string_value(
        json_object_get(json_array_get(json_object_get(doc, "replicas"), replica), "status"));
}

Test(diagnose, every_generated_status_across_pp_2_4_8)
{
    static const unsigned pps[] = {2, 4, 8};

    for (int k = BUBBLE; k <= SLOW_LINKS; k++) {
        for (size_t i = 0; i < 3; i++) {
            struct gen c = {(enum kind)k, pps[i], 2, 16};
            struct files f;
            struct run_result r;
            json_t *doc, *rep, *use;

            generate(&c, &f);
            doc = run_json((const char *[]){"diagnose", "--plan", f.plan, "--bench", f.bench[0],
                                            f.bench[1], f.bench[2], f.bench[3], "--metrics", f.run,
                                            "--baseline-metrics", f.base, "-o", "json", NULL},
                           &r);
            cr_expect_str_eq(status_of(doc, 0), truth[k], "kind %d pp %u", k, c.pp);
            rep = json_array_get(json_object_get(doc, "replicas"), 0);
            use = json_object_get(rep, "utilization");
            cr_expect_eq(json_integer_value(json_object_get(rep, "pp")), c.pp);
            cr_expect_eq(json_array_size(json_object_get(use, "per_stage_effective")), c.pp);
            cr_expect(json_is_number(json_object_get(use, "measured_gap")));
            cr_expect(json_is_number(json_object_get(use, "occupancy")));
            cr_expect(json_is_number(json_object_get(json_object_get(rep, "perf"), "ttft")));
            cr_expect(json_array_size(json_object_get(rep, "advice")) >= 1);
            cr_expect_str_eq(
                json_string_value(json_object_get(json_object_get(doc, "sweep"), "verdict")),
                k == SLOW_LINKS ? "tpot-rises" : "pipeline-depth");
            json_decref(doc);
            run_result_release(&r);
        }
    }
}

Test(diagnose, table_yaml_svg_and_the_startup_mismatch_first)
{
    struct gen c = {BUBBLE, 4, 2, 16};
    struct files f;
    struct run_result r;
    char svg[128], log[128];

    generate(&c, &f);
    path_in(svg, sizeof(svg), "d.svg");
    path_in(log, sizeof(log), "engine.log");
    write_text(log, "(EngineCore pid=1) INFO 07-22 04:30:57 [core.py:103] Initializing a V1 LLM "
                    "engine (v0.18.0) with config: model='m', tensor_parallel_size=2, "
                    "pipeline_parallel_size=3, data_parallel_size=1\n");
    cr_assert_eq(run_topox((const char *[]){"diagnose", "--plan", f.plan, "--bench", f.bench[2],
                                            "--metrics", f.run, "--baseline-metrics", f.base,
                                            "--startup-log", log, "--svg", svg, NULL},
                           NULL, &r),
                 0);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect_eq(strncmp(r.out, "note: layout mismatch: llm/vllm #0: the engine ran tp 2 pp 3", 60),
                 0, "%s", r.out);
    cr_expect(strstr(r.out, "undecided"), "%s", r.out);
    run_result_release(&r);
    {
        FILE *s = fopen(svg, "r");
        char head[8] = {0};
        cr_assert_not_null(s);
        cr_expect_eq(fread(head, 1, 4, s), 4);
        cr_expect_str_eq(head, "<svg");
        fclose(s);
    }
    cr_assert_eq(run_topox((const char *[]){"diagnose", "--plan", f.plan, "--metrics", f.run,
                                            "--baseline-metrics", f.base, "-o", "yaml", NULL},
                           NULL, &r),
                 0);
    cr_expect_eq(r.status, 0);
    cr_expect(strstr(r.out, "status: bubble-dominated"), "%s", r.out);
    cr_expect(strstr(r.err, "no --bench"), "%s", r.err);
    run_result_release(&r);
}

/* -f with --cluster: the plan is made here, by plan's own code; the generator's pods are the
 * LWS's (vllm-0, vllm-0-1 in namespace llm), so replica 0 joins and the others have no series. */
Test(diagnose, manifest_and_cluster_instead_of_a_plan_file)
{
    struct gen c = {SLOW_STAGE, 2, 8, 8};
    struct files f;
    struct run_result r;
    json_t *doc, *reps;

    generate(&c, &f);
    doc = run_json((const char *[]){"diagnose", "-f", EXAMPLE, "--cluster", "example", "--metrics",
                                    f.run, "-o", "json", NULL},
                   &r);
    reps = json_object_get(doc, "replicas");
    cr_expect_eq(json_array_size(reps), 4);
    cr_expect_str_eq(status_of(doc, 0), "imbalance-dominated");
    cr_expect_str_eq(status_of(doc, 1), "undecided");
    cr_expect_eq(json_integer_value(json_object_get(json_array_get(reps, 0), "odd_stage")), 0);
    json_decref(doc);
    run_result_release(&r);
}

static void expect_bad(const char *const *args, const char *needle)
{
    struct run_result r;

    cr_assert_eq(run_topox(args, NULL, &r), 0);
    cr_expect_eq(r.status, 2, "exit %d: %s", r.status, r.err);
    cr_expect(strstr(r.err, needle), "stderr lacks '%s':\n%s", needle, r.err);
    cr_expect(strchr(r.err, '\n') == r.err + r.err_len - 1, "more than one line:\n%s", r.err);
    run_result_release(&r);
}

Test(diagnose, bad_input_exits_2_with_one_line)
{
    struct gen c = {BUBBLE, 2, 2, 8};
    struct files f;
    char cut[128], zero[128];
    FILE *in, *out;
    char buf[400];
    size_t n;

    generate(&c, &f);
    path_in(cut, sizeof(cut), "cut.json");
    path_in(zero, sizeof(zero), "zero.json");
    in = fopen(FX "vllm_bench_serve_result_Qwen2.5-VL-3B.json", "r");
    out = fopen(cut, "w");
    cr_assert(in && out);
    n = fread(buf, 1, sizeof(buf), in);
    cr_assert_eq(fwrite(buf, 1, n, out), n);
    fclose(in);
    fclose(out);
    write_text(zero, "{\"date\": \"20260722-041843\", \"completed\": 0, \"failed\": 200, "
                     "\"mean_ttft_ms\": 0.0}\n");
    expect_bad((const char *[]){"diagnose", "--plan", f.plan, "--bench", cut, NULL},
               "cut.json:1: truncated JSON");
    expect_bad((const char *[]){"diagnose", "--plan", f.plan, "--bench", zero, NULL},
               "zero.json:1: 0 completed requests");
    expect_bad((const char *[]){"diagnose", "--plan", f.plan, "--metrics", f.run, "--window",
                                "2020-01-01T00:00:00Z,2020-01-01T01:00:00Z", NULL},
               "run.json: no DCGM series with samples in the window");
    expect_bad((const char *[]){"diagnose", "--plan", f.plan, "--metrics", cut, NULL},
               "cut.json:1: truncated JSON");
    expect_bad((const char *[]){"diagnose", "--plan",
                                FX "vllm_bench_serve_result_Qwen2.5-VL-3B.json", NULL},
               "not `topox plan -o json` output");
    expect_bad((const char *[]){"diagnose", "--plan", f.plan, "--startup-log", f.run, NULL},
               "run.json: no vLLM");
    expect_bad((const char *[]){"diagnose", "--plan", f.plan, "--window", "1,0", NULL},
               "--window '1,0': END is not after START");
    expect_bad(
        (const char *[]){"diagnose", "--plan", f.plan, "--bench", "/nonexistent/b.json", NULL},
        "/nonexistent/b.json");
}

Test(diagnose, usage_errors_and_help)
{
    struct run_result r;

    cr_assert_eq(run_topox((const char *[]){"diagnose", "--help", NULL}, NULL, &r), 0);
    cr_expect_eq(r.status, 0);
    cr_expect(strstr(r.out, "usage: topox diagnose (--plan PLAN.json | -f MANIFEST"), "%s", r.out);
    cr_expect(strstr(r.out, "--baseline-metrics FILE") && strstr(r.out, "--prometheus URL"));
    run_result_release(&r);
    cr_assert_eq(run_topox((const char *[]){"diagnose", "--metrics", "x.json", NULL}, NULL, &r), 0);
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "give the plan"), "%s", r.err);
    run_result_release(&r);
    cr_assert_eq(run_topox((const char *[]){"diagnose", "--plan", "p.json", "--prometheus",
                                            "http://127.0.0.1:1", NULL},
                           NULL, &r),
                 0);
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "--prometheus needs --window"), "%s", r.err);
    run_result_release(&r);
    cr_assert_eq(run_topox((const char *[]){"help", NULL}, NULL, &r), 0);
    cr_expect(strstr(r.out, "diagnose"), "%s", r.out);
    run_result_release(&r);
}

/* --- a small fake Prometheus: /api/v1/query_range answers the series of the query's metric ---- */

struct fake_prom {
    struct MHD_Daemon *d;
    json_t *all;    /* the generated matrix answer */
    char log[4096]; /* "query start end step" per request */
    size_t log_len;
};

static enum MHD_Result prom_answer(void *cls, struct MHD_Connection *c, const char *url,
                                   const char *method, const char *version, const char *upload,
                                   size_t *upload_len, void **con_cls)
{
    struct fake_prom *p = cls;
    const char *q = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "query");
    const char *st = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "start");
    const char *en = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "end");
    const char *sp = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "step");
    json_t *res = json_array(), *r;
    char *body;
    size_t i;
    struct MHD_Response *resp;
    enum MHD_Result ret;

    (void)method;
    (void)version;
    (void)upload;
    (void)upload_len;
    (void)con_cls;
    if (strcmp(url, "/api/v1/query_range") != 0 || !q || !st || !en || !sp)
        return MHD_NO;
    p->log_len += (size_t)snprintf(p->log + p->log_len, sizeof(p->log) - p->log_len,
                                   "%s %s %s %s\n", q, st, en, sp);
    json_array_foreach(json_object_get(json_object_get(p->all, "data"), "result"), i, r)
    {
        const char *name =
            json_string_value(json_object_get(json_object_get(r, "metric"), "__name__"));
        if (name && strcmp(name, q) == 0)
            json_array_append(res, r);
    }
    r = json_pack("{s:s, s:{s:s, s:o}}", "status", "success", "data", "resultType", "matrix",
                  "result", res);
    body = json_dumps(r, 0);
    json_decref(r);
    resp = MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
    MHD_add_response_header(resp, "Content-Type", "application/json");
    ret = MHD_queue_response(c, MHD_HTTP_OK, resp);
    MHD_destroy_response(resp);
    return ret;
}

/* Serve the series of the matrix answer in file `matrix`. */
static int prom_start(struct fake_prom *p, const char *matrix)
{
    const union MHD_DaemonInfo *info;

    memset(p, 0, sizeof(*p));
    p->all = json_load_file(matrix, 0, NULL);
    cr_assert_not_null(p->all, "%s", matrix);
    p->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, 0, NULL, NULL,
                            prom_answer, p, MHD_OPTION_END);
    cr_assert_not_null(p->d);
    info = MHD_get_daemon_info(p->d, MHD_DAEMON_INFO_BIND_PORT);
    return info->port;
}

static void prom_stop(struct fake_prom *p)
{
    MHD_stop_daemon(p->d);
    json_decref(p->all);
}

Test(diagnose, prometheus_url_with_a_window)
{
    struct gen c = {SLOW_LINKS, 4, 2, 32};
    struct files f;
    struct fake_prom p;
    struct run_result r;
    char url[64];
    json_t *doc;

    generate(&c, &f);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/", prom_start(&p, f.run));
    /* the generated samples run from 1784692800 for 60 x 15 s */
    doc = run_json((const char *[]){"diagnose", "--plan", f.plan, "--prometheus", url, "--window",
                                    "2026-07-22T04:00:00Z,2026-07-22T04:20:00Z",
                                    "--baseline-metrics", f.base, "-o", "json", NULL},
                   &r);
    cr_expect_str_eq(status_of(doc, 0), "inter-stage-transfer-dominated");
    cr_expect(strstr(p.log, "DCGM_FI_PROF_SM_ACTIVE 1784692800.000 1784694000.000 5\n"), "%s",
              p.log);
    cr_expect(strstr(p.log, "DCGM_FI_DEV_GPU_UTIL "), "%s", p.log);
    json_decref(doc);
    run_result_release(&r);
    /* a window with no samples: exit 2, one line */
    expect_bad((const char *[]){"diagnose", "--plan", f.plan, "--prometheus", url, "--window",
                                "2020-01-01T00:00:00Z,2020-01-01T01:00:00Z", NULL},
               "no DCGM series in the window");
    prom_stop(&p);
}
