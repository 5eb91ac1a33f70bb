/* SPDX-License-Identifier: Apache-2.0 */
/* tests/integration/test_simulate.c - the real `topox simulate`: a small trace replayed under the
 * three policies (table and JSON), the SVG, a generated trace written twice the same, and the
 * exit status 2 with FILE:LINE for a bad trace, flag or spec. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

#define SMALL TPX_FIXTURES "/simulate/small.jsonl"
#define CLUSTER "racks=2,nodes-per-rack=2,gpus-per-node=8"

static void expect_has(const char *hay, const char *needle, const char *what)
{
    cr_expect(strstr(hay, needle) != NULL, "%s lacks '%s':\n%s", what, needle, hay);
}

/* The policy's object in the JSON answer. */
static json_t *policy_of(json_t *root, const char *name)
{
    size_t i;
    json_t *p;

    json_array_foreach(json_object_get(root, "policies"), i, p)
    {
        if (strcmp(json_string_value(json_object_get(p, "policy")), name) == 0)
            return p;
    }
    cr_assert_fail("no policy %s", name);
    return NULL;
}

static long num(json_t *p, const char *key)
{
    return (long)json_integer_value(json_object_get(p, key));
}

Test(simulate, help_names_every_flag)
{
    struct run_result r;

    cr_assert_eq(run_topox((const char *[]){"simulate", "--help", NULL}, NULL, &r), 0);
    cr_expect_eq(r.status, 0);
    expect_has(r.out, "--cluster SPEC", "help");
    expect_has(r.out, "--trace FILE", "help");
    expect_has(r.out, "--generate GEN", "help");
    expect_has(r.out, "best-fit", "help");
    expect_has(r.out, "pack", "help");
    expect_has(r.out, "fluid-rack", "help");
    expect_has(r.out, "--by-shape", "help");
    expect_has(r.out, "--svg FILE", "help");
    expect_has(r.out, "--queue", "help");
    expect_has(r.out, "--backfill", "help");
    expect_has(r.out, "--max-wait DUR", "help");
    expect_has(r.out, "slurm-block", "help");
    expect_has(r.out, "mix=classic|llm-serving|training|mixed", "help");
    expect_has(r.out, "fleet=hgx|gb200|mixed", "help");
    run_result_release(&r);
}

Test(simulate, small_trace_table)
{
    struct run_result r;

    cr_assert_eq(
        run_topox((const char *[]){"simulate", "--cluster", CLUSTER, "--trace", SMALL, NULL}, NULL,
                  &r),
        0);
    cr_expect_eq(r.status, 0, "%s", r.err);
    expect_has(r.out, "8 events" /* the comments are not events */, "table");
    expect_has(r.out, "32 GPUs", "table");
    expect_has(r.out, "POLICY", "table");
    expect_has(r.out, "best-fit", "table");
    expect_has(r.out, "blind", "table");
    run_result_release(&r);
}

Test(simulate, small_trace_json_counts)
{
    struct run_result r;
    json_t *root, *p;
    json_error_t jerr;

    cr_assert_eq(
        run_topox((const char *[]){"simulate", "--cluster", CLUSTER, "--trace", SMALL, "--policy",
                                   "topox,best-fit,blind,pack,pack-term,fluid", "-o", "json", NULL},
                  NULL, &r),
        0);
    cr_assert_eq(r.status, 0, "%s", r.err);
    root = json_loads(r.out, 0, &jerr);
    cr_assert_not_null(root, "%s: %s", jerr.text, r.out);
    cr_expect_eq(json_integer_value(json_object_get(root, "gpus")), 32);
    /* the rules: a, b (rack r02), c whole; d finds the cluster full; e has no 16-GPU domain */
    p = policy_of(root, "topox");
    cr_expect_eq(num(p, "groups"), 5);
    cr_expect_eq(num(p, "whole"), 3);
    cr_expect_eq(num(p, "rejected"), 2);
    cr_expect_eq(num(p, "rejected_with_room"), 1, "e: 16 GPUs free, no 16-GPU domain");
    cr_expect_eq(num(p, "cross_rack"), 0);
    cr_expect(json_array_size(json_object_get(p, "samples")) >= 6);
    p = policy_of(root, "best-fit");
    cr_expect_eq(num(p, "whole"), 3);
    /* pack: the same rules, so the same groups whole and rejected */
    p = policy_of(root, "pack");
    cr_expect_eq(num(p, "whole"), 3);
    cr_expect_eq(num(p, "rejected"), 2);
    p = policy_of(root, "pack-term");
    cr_expect_eq(num(p, "whole"), 3);
    cr_expect_eq(num(p, "rejected"), 2);
    /* blind: b over r01-n02 and r02-n01, e over r01-n01 and r02-n02 */
    p = policy_of(root, "blind");
    cr_expect_eq(num(p, "whole"), 2);
    cr_expect_eq(num(p, "cross_rack"), 2);
    /* fluid: e's 16 GPUs are free by count; d found the cluster full either way */
    p = policy_of(root, "fluid");
    cr_expect_eq(num(p, "whole"), 4);
    cr_expect_eq(num(p, "rejected"), 1);
    cr_expect_eq(num(p, "rejected_with_room"), 0);
    cr_expect(json_array_size(json_object_get(p, "shapes")) >= 2, "the per-shape counts");
    json_decref(root);
    run_result_release(&r);
}

/* The interface of issue 22 (scripts read it): --queue -o json on the small trace. d waits from
 * 180 s until a and c leave at 3600 s; e (TP 16, no 16-GPU domain) never finds a place: with
 * --max-wait 1h it gives up at 7300 s, counted. */
Test(simulate, queue_json_has_the_interface_keys)
{
    struct run_result r;
    json_t *root, *p, *sh, *rb;
    json_error_t jerr;
    size_t i;
    bool seen = false;

    cr_assert_eq(run_topox((const char *[]){"simulate", "--cluster", CLUSTER, "--trace", SMALL,
                                            "--queue", "--max-wait", "1h", "--policy",
                                            "topox,best-fit", "-o", "json", NULL},
                           NULL, &r),
                 0);
    cr_assert_eq(r.status, 0, "%s", r.err);
    root = json_loads(r.out, 0, &jerr);
    cr_assert_not_null(root, "%s: %s", jerr.text, r.out);
    p = policy_of(root, "topox");
    cr_expect(json_is_number(json_object_get(p, "gpu_hours_delivered")));
    cr_expect(json_is_number(json_object_get(p, "gpu_hours_stranded")));
    cr_expect(json_is_number(json_object_get(p, "allocation_at_saturation")));
    cr_expect_eq(num(p, "gave_up"), 1, "e gave up");
    rb = json_object_get(p, "rule_breaks");
    cr_assert(json_is_object(rb));
    cr_expect_eq(num(rb, "tp_split"), 0);
    cr_expect_eq(num(rb, "cross_rack"), 0);
    cr_expect_eq(num(rb, "half_placed"), 0);
    json_array_foreach(json_object_get(p, "shapes"), i, sh)
    {
        if (strcmp(json_string_value(json_object_get(sh, "shape")), "tp8xpp1-1x8") != 0)
            continue;
        seen = true;
        cr_expect_eq(num(sh, "gpus"), 8);
        cr_expect_eq(num(sh, "groups"), 3);
        cr_expect(json_real_value(json_object_get(sh, "wait_max_s")) == 3420.0, "d waited");
        cr_expect(json_real_value(json_object_get(sh, "wait_p50_s")) == 0.0);
        cr_expect(json_is_number(json_object_get(sh, "wait_p95_s")));
        cr_expect(json_is_number(json_object_get(sh, "placeable_share")));
    }
    cr_expect(seen, "the 1 x 8 shape: %s", r.out);
    json_decref(root);
    run_result_release(&r);
}

/* The traces of issue 22's targets are the generator's: the first of each cluster shape, kept in
 * tests/fixtures/simulate, is what `--generate` still writes, byte for byte. */
Test(simulate, the_target_traces_are_what_the_generator_writes)
{
    static const char *const fleets[] = {"hgx", "gb200", "mixed"};

    for (size_t i = 0; i < 3; i++) {
        struct run_result r;
        char gen[96], path[256], *want;
        size_t len;
        snprintf(gen, sizeof(gen), "seed=1,mix=mixed,fleet=%s,load=1.0,groups=400", fleets[i]);
        snprintf(path, sizeof(path), "%s/simulate/mixed-%s-seed1-load1.0.jsonl", TPX_FIXTURES,
                 fleets[i]);
        want = read_file(path, &len);
        cr_assert_not_null(want, "%s", path);
        cr_assert_eq(run_topox((const char *[]){"simulate", "--generate", gen, NULL}, NULL, &r), 0);
        cr_expect_eq(r.status, 0, "%s", r.err);
        cr_expect(strlen(r.out) == len && memcmp(r.out, want, len) == 0, "%s differs from %s", gen,
                  path);
        free(want);
        run_result_release(&r);
    }
}

/* openb, the regression case: the converter's first window of 1/40 of the real pods, arrivals 4x
 * compressed, replayed on the openb cluster with the queue: every policy delivers the same
 * GPU-hours (1-GPU pods fill every hole: no policy may lose), no rule broken, nobody waits
 * forever. */
Test(simulate, openb_window_no_policy_loses)
{
    struct run_result r;
    char trace[64], cmd[512];
    json_t *root, *p;
    json_error_t jerr;
    size_t i;
    double first = -1;

    snprintf(trace, sizeof(trace), "/tmp/topox-openb-%d.jsonl", (int)getpid());
    snprintf(cmd, sizeof(cmd),
             "sh %s/../../scripts/openb-to-trace.sh %s/simulate/openb_gpu_pods.csv 1/40 4 > %s",
             TPX_FIXTURES, TPX_FIXTURES, trace);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    cr_assert_eq(run_topox((const char *[]){"simulate", "--cluster", "openb", "--trace", trace,
                                            "--queue", "--backfill", "--policy",
                                            "best-fit,topox,slurm-block", "-o", "json", NULL},
                           NULL, &r),
                 0);
    cr_assert_eq(r.status, 0, "%s", r.err);
    root = json_loads(r.out, 0, &jerr);
    cr_assert_not_null(root, "%s", jerr.text);
    json_array_foreach(json_object_get(root, "policies"), i, p)
    {
        double d = json_real_value(json_object_get(p, "gpu_hours_delivered"));
        cr_expect(num(p, "groups") >= 170, "the window's pods: %ld", num(p, "groups"));
        cr_expect_eq(num(p, "rejected"), 0);
        cr_expect_eq(num(json_object_get(p, "rule_breaks"), "cross_rack"), 0);
        cr_expect(d > 0, "GPU-hours delivered");
        if (first < 0)
            first = d;
        cr_expect(d == first, "%s delivered %f, best-fit %f",
                  json_string_value(json_object_get(p, "policy")), d, first);
    }
    json_decref(root);
    run_result_release(&r);
    unlink(trace);
}

Test(simulate, svg_has_a_curve_per_policy)
{
    struct run_result r;
    char path[64], *svg;
    size_t len;

    snprintf(path, sizeof(path), "/tmp/topox-sim-%d.svg", (int)getpid());
    cr_assert_eq(run_topox((const char *[]){"simulate", "--cluster", CLUSTER, "--trace", SMALL,
                                            "--policy", "topox,blind", "--svg", path, NULL},
                           NULL, &r),
                 0);
    cr_expect_eq(r.status, 0, "%s", r.err);
    svg = read_file(path, &len);
    cr_assert_not_null(svg);
    expect_has(svg, "<svg", "svg");
    cr_expect_eq(strstr(strstr(svg, "<polyline") + 1, "<polyline") != NULL, 1, "two curves");
    cr_expect_null(strstr(strstr(strstr(svg, "<polyline") + 1, "<polyline") + 1, "<polyline"));
    free(svg);
    unlink(path);
    run_result_release(&r);
    /* --queue: the wait CDF, one panel per shape (3 in the trace) with a curve per policy */
    cr_assert_eq(
        run_topox((const char *[]){"simulate", "--cluster", CLUSTER, "--trace", SMALL, "--policy",
                                   "topox,blind", "--queue", "--svg", path, NULL},
                  NULL, &r),
        0);
    cr_expect_eq(r.status, 0, "%s", r.err);
    svg = read_file(path, &len);
    cr_assert_not_null(svg);
    expect_has(svg, "wait CDF per shape", "svg");
    expect_has(svg, "tp16xpp1-2x8 (16 GPUs)", "svg");
    {
        size_t curves = 0;
        for (const char *q = strstr(svg, "<polyline"); q; q = strstr(q + 1, "<polyline"))
            curves++;
        cr_expect_eq(curves, 6, "3 shapes x 2 policies: %zu", curves);
    }
    free(svg);
    unlink(path);
    run_result_release(&r);
}

Test(simulate, generate_is_deterministic_and_replays)
{
    struct run_result a, b, c;

    cr_assert_eq(
        run_topox((const char *[]){"simulate", "--generate", "seed=5,groups=10", NULL}, NULL, &a),
        0);
    cr_assert_eq(
        run_topox((const char *[]){"simulate", "--generate", "seed=5,groups=10", NULL}, NULL, &b),
        0);
    cr_expect_eq(a.status, 0, "%s", a.err);
    cr_expect_str_eq(a.out, b.out);
    expect_has(a.out, "{\"time\":", "trace");
    expect_has(a.out, "\"event\":\"leave\"", "trace");
    /* what it wrote reads back as a trace */
    cr_assert_eq(run_topox((const char *[]){"simulate", "--cluster", CLUSTER, "--trace", "-",
                                            "--policy", "topox", NULL},
                           a.out, &c),
                 0);
    cr_expect_eq(c.status, 0, "%s", c.err);
    expect_has(c.out, "20 events", "replay");
    run_result_release(&a);
    run_result_release(&b);
    run_result_release(&c);
}

Test(simulate, bad_input_exits_2_with_the_line)
{
    static const struct {
        const char *const args[10];
        const char *in, *msg;
    } cases[] = {
        {{"simulate", "--cluster", CLUSTER, "--trace", "-", NULL},
         "{\"time\":0,\"event\":\"arrive\",\"group\":\"a\",\"pods\":1,\"gpus\":8,\"tp\":8,\"pp\":1}"
         "\n"
         "{\"time\":1,\"event\":\"arrive\",\"group\":\"b\",\"pods\":1}\n",
         "<stdin>:2: arrival without \"gpus\""},
        {{"simulate", "--cluster", CLUSTER, "--trace", "-", NULL}, "not json\n", "<stdin>:1:"},
        {{"simulate", "--cluster", CLUSTER, "--trace", "/nonexistent/t.jsonl", NULL},
         NULL,
         "trace '/nonexistent/t.jsonl'"},
        {{"simulate", "--cluster", "racks=x", "--generate", "seed=1", NULL}, NULL, "--cluster"},
        {{"simulate", "--generate", "seed=1,color=2", NULL}, NULL, "unknown key 'color'"},
        {{"simulate", "--cluster", CLUSTER, "--generate", "seed=1", "--policy", "worst", NULL},
         NULL,
         "'worst' is not topox, best-fit, blind, pack, pack-term, fluid, fluid-rack"},
        {{"simulate", "--cluster", CLUSTER, "--generate", "seed=1", "--backfill", NULL},
         NULL,
         "--backfill and --max-wait need --queue"},
        {{"simulate", "--cluster", CLUSTER, "--generate", "seed=1", "--queue", "--max-wait", "soon",
          NULL},
         NULL,
         "--max-wait"},
        {{"simulate", "--generate", "seed=1,mix=chat", NULL}, NULL, "key 'mix': 'chat'"},
        {{"simulate", "--cluster", "hgx+", "--generate", "seed=1", NULL}, NULL, "empty part"},
        {{"simulate", "--cluster", CLUSTER, NULL}, NULL, "give --trace FILE or --generate GEN"},
        {{"simulate", NULL}, NULL, "give --cluster SPEC and --trace FILE"},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct run_result r;
        cr_assert_eq(run_topox(cases[i].args, cases[i].in, &r), 0);
        cr_expect_eq(r.status, 2, "case %zu: %d\n%s", i, r.status, r.err);
        expect_has(r.err, cases[i].msg, "stderr");
        run_result_release(&r);
    }
}
