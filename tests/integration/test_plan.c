/* SPDX-License-Identifier: Apache-2.0 */
/* tests/integration/test_plan.c - the real `topox plan` and `topox cluster` on fixtures: table and
 * picture, JSON/YAML, records, exit codes 0 / 3 / 2 (file:line, also for errors found after
 * parsing), --explain-labels, --svg, --pods, stdin, and the NodeList round trip through
 * `plan --nodes`; `plan --snapshot` with DRA ResourceSlices and claims, and a ComputeDomain
 * placed whole inside one clique of an NVL72-like snapshot, or rejected with the shortfall. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

#define EXAMPLE TPX_SOURCE_DIR "/manifests/examples/vllm-lws-tp8-pp2.yaml"

static char dir[64];

static void init(void)
{
    snprintf(dir, sizeof(dir), "/tmp/topox-plan-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

static void fini(void)
{
    char cmd[128];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    cr_expect_eq(system(cmd), 0);
}

TestSuite(plan, .init = init, .fini = fini);

static void path_in(char *out, size_t n, const char *name)
{
    snprintf(out, n, "%s/%s", dir, name);
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");

    cr_assert_not_null(f, "%s", path);
    cr_assert_eq(fputs(text, f) >= 0, 1);
    cr_assert_eq(fclose(f), 0);
}

static void expect_has(const char *hay, const char *needle, const char *what)
{
    cr_expect(strstr(hay, needle) != NULL, "%s lacks '%s':\n%s", what, needle, hay);
}

Test(plan, example_table_picture_and_estimates)
{
    struct run_result r;

    cr_assert_eq(
        run_topox((const char *[]){"plan", "-f", EXAMPLE, "--cluster", "example", NULL}, NULL, &r),
        0);
    cr_expect_eq(r.status, 0, "%s", r.err);
    expect_has(r.out, "REPLICA", "table");
    expect_has(r.out, "vllm-3-1", "table");
    expect_has(r.out, "racks (one line per rack", "picture");
    expect_has(r.out, "[00000000]", "picture");
    expect_has(r.out, "legend:", "picture");
    expect_has(r.out, "bubble 11.1% at 8 micro-batches", "estimates");
    expect_has(r.out, "126 layers over 2 stages", "estimates");
    expect_has(r.out, "4 of 4 replicas placed", "summary");
    run_result_release(&r);
}

Test(plan, json_has_placements_rejected_estimates)
{
    struct run_result r;

    cr_assert_eq(run_topox((const char *[]){"plan", "-f", EXAMPLE, "--cluster", "example", "-o",
                                            "json", NULL},
                           NULL, &r),
                 0);
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect_eq(r.out[0], '{');
    expect_has(r.out, "\"placements\": [", "json");
    expect_has(r.out, "\"rejected\": []", "json");
    expect_has(r.out, "\"estimates\": [", "json");
    expect_has(r.out, "\"pod\": \"vllm-0-1\"", "json");
    expect_has(r.out, "\"rack\": \"r0", "json");
    expect_has(r.out, "\"interconnect\": \"nvswitch\"", "json");
    run_result_release(&r);
}

Test(plan, yaml_record_one_document_per_replica)
{
    struct run_result r;
    size_t docs = 0;

    cr_assert_eq(run_topox((const char *[]){"plan", "-f", EXAMPLE, "--cluster", "example", "-o",
                                            "yaml", "--record", NULL},
                           NULL, &r),
                 0);
    cr_expect_eq(r.status, 0, "%s", r.err);
    for (const char *p = r.out; (p = strstr(p, "---\n")) != NULL; p += 4)
        docs++;
    cr_expect_eq(docs, 4, "%s", r.out);
    expect_has(r.out, "pipeline_parallel_size: 2", "record");
    expect_has(r.out, "tensor_parallel_size: 8", "record");
    expect_has(r.out, "card_count: 16", "record");
    expect_has(r.out, "bubble_ratio_est: 0.1111", "record");
    expect_has(r.out, "precision: unknown", "record");
    expect_has(r.out, "status: bubble", "record");
    run_result_release(&r);
}

Test(plan, rejected_replicas_exit_3_with_reason)
{
    struct run_result r;

    cr_assert_eq(run_topox((const char *[]){"plan", "-f", EXAMPLE, "--cluster",
                                            "racks=1,nodes-per-rack=3", NULL},
                           NULL, &r),
                 0);
    cr_expect_eq(r.status, 3, "%s", r.err);
    expect_has(r.out, "rejected (3):", "table");
    expect_has(r.out, "1 of 4 replicas placed", "table");
    run_result_release(&r);
}

Test(plan, a_rejection_names_the_line_that_sets_the_parallelism)
{
    /* line 27 of the SGLang fixture is the "--tp" element of the leader's command (line 28 its
     * value "2"); on 1-GPU nodes TP 2 cannot be placed */
    const char *path = TPX_FIXTURES "/manifests/lws-sglang-llama8b-tp2-2nodes.yaml";
    const char *cluster = "racks=1,nodes-per-rack=2,gpus-per-node=1";
    char want[512];
    struct run_result r;

    cr_assert_eq(
        run_topox((const char *[]){"plan", "-f", path, "--cluster", cluster, NULL}, NULL, &r), 0);
    cr_expect_eq(r.status, 3, "%s", r.err);
    snprintf(want, sizeof(want), "default/sglang #0 (%s:27): replica 0 of default/sglang: ", path);
    expect_has(r.out, want, "table");
    run_result_release(&r);
    cr_assert_eq(
        run_topox((const char *[]){"plan", "-f", path, "--cluster", cluster, "-o", "json", NULL},
                  NULL, &r),
        0);
    snprintf(want, sizeof(want), "\"source\": \"%s:27\"", path);
    expect_has(r.out, want, "json");
    run_result_release(&r);
}

Test(plan, bad_yaml_exits_2_naming_file_and_line)
{
    struct run_result r;
    char bad[128];
    char want[160];

    path_in(bad, sizeof(bad), "bad.yaml");
    write_text(bad, "kind: Pod\nmetadata: {name: [\n");
    cr_assert_eq(
        run_topox((const char *[]){"plan", "-f", bad, "--cluster", "example", NULL}, NULL, &r), 0);
    cr_expect_eq(r.status, 2);
    snprintf(want, sizeof(want), "%s:3:", bad);
    expect_has(r.err, want, "stderr");
    cr_expect_eq(r.out_len, 0, "nothing on stdout: %s", r.out);
    cr_expect(strchr(r.err, '\n') == r.err + r.err_len - 1, "one line: %s", r.err);
    run_result_release(&r);
}

/* A merge key that lists itself once overflowed the stack (SIGSEGV): now it is bad input, exit 2
 * with one FILE:LINE line, from `plan -f` and from `serve --config --print-config` alike. */
Test(plan, recursive_merge_key_exits_2_naming_file_and_line)
{
    const char *const *argvs[2];
    char bad[128];
    char want[160];

    path_in(bad, sizeof(bad), "merge.yaml");
    write_text(bad, "x:\n  <<: &s [*s]\n");
    argvs[0] = (const char *[]){"plan", "-f", bad, "--cluster", "example", NULL};
    argvs[1] = (const char *[]){"serve", "--config", bad, "--print-config", NULL};
    snprintf(want, sizeof(want), "%s:2:", bad);
    for (size_t i = 0; i < 2; i++) {
        struct run_result r;

        cr_assert_eq(run_topox(argvs[i], NULL, &r), 0);
        cr_expect_eq(r.status, 2, "%s: status %d: %s", argvs[i][0], r.status, r.err);
        expect_has(r.err, want, "stderr");
        cr_expect_eq(r.out_len, 0, "nothing on stdout: %s", r.out);
        cr_expect(r.err_len > 0 && strchr(r.err, '\n') == r.err + r.err_len - 1, "one line: %s",
                  r.err);
        run_result_release(&r);
    }
}

/* Errors found after parsing name the line of the offending value, counted across documents. */
Test(plan, bad_annotation_in_multi_document_file_exits_2_naming_its_line)
{
    struct run_result r;
    char bad[128];
    char want[320];

    path_in(bad, sizeof(bad), "multi.yaml");
    write_text(bad, "apiVersion: v1\nkind: Pod\nmetadata: {name: side}\n"
                    "spec: {containers: [{name: c}]}\n"
                    "---\n"
                    "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n"
                    "spec:\n  replicas: 1\n  template:\n    metadata:\n      annotations:\n"
                    "        topox.io/tensor-parallel-size: \"eight\"\n"
                    "    spec:\n      containers:\n      - name: c\n"
                    "        resources: {limits: {nvidia.com/gpu: 8}}\n");
    cr_assert_eq(
        run_topox((const char *[]){"plan", "-f", bad, "--cluster", "example", NULL}, NULL, &r), 0);
    cr_expect_eq(r.status, 2);
    snprintf(want, sizeof(want),
             "%s:14: Deployment 'default/web': pod 'web-0': annotation "
             "'topox.io/tensor-parallel-size': 'eight'",
             bad);
    expect_has(r.err, want, "stderr");
    cr_expect_eq(r.out_len, 0, "nothing on stdout: %s", r.out);
    cr_expect(r.err_len > 0 && strchr(r.err, '\n') == r.err + r.err_len - 1, "one line: %s", r.err);
    run_result_release(&r);
}

Test(plan, bad_replicas_and_bad_node_exit_2_naming_their_lines)
{
    struct run_result r;
    char bad[128];
    char nodes[128];
    char want[320];

    path_in(bad, sizeof(bad), "replicas.yaml");
    write_text(bad, "kind: StatefulSet\nmetadata: {name: s}\nspec:\n  replicas: lots\n"
                    "  template: {spec: {containers: [{name: c}]}}\n");
    cr_assert_eq(
        run_topox((const char *[]){"plan", "-f", bad, "--cluster", "example", NULL}, NULL, &r), 0);
    cr_expect_eq(r.status, 2);
    snprintf(want, sizeof(want), "%s:4: StatefulSet 's': replicas: 'lots'", bad);
    expect_has(r.err, want, "stderr");
    run_result_release(&r);

    path_in(nodes, sizeof(nodes), "nodes.yaml");
    write_text(nodes,
               "kind: Node\nmetadata: {name: a}\nstatus: {allocatable: {nvidia.com/gpu: 8}}\n"
               "---\nkind: Node\nmetadata: {name: b, labels: {topox.io/domain-size: \"-8\"}}\n"
               "status: {allocatable: {nvidia.com/gpu: 8}}\n");
    cr_assert_eq(
        run_topox((const char *[]){"plan", "-f", EXAMPLE, "--nodes", nodes, NULL}, NULL, &r), 0);
    cr_expect_eq(r.status, 2);
    snprintf(want, sizeof(want), "%s:5: node 'b': label 'topox.io/domain-size'", nodes);
    expect_has(r.err, want, "stderr");
    run_result_release(&r);
}

Test(plan, gfd_fragment_nodes_exit_2_with_line)
{
    struct run_result r;

    cr_assert_eq(
        run_topox((const char *[]){"plan", "-f", EXAMPLE, "--nodes",
                                   TPX_FIXTURES "/nodes/gfd-readme-kubectl-get-nodes-a100-dgx2h."
                                                "fragment.yaml",
                                   NULL},
                  NULL, &r),
        0);
    cr_expect_eq(r.status, 2);
    expect_has(r.err, "fragment.yaml:8:", "stderr");
    run_result_release(&r);
}

Test(plan, usage_errors_exit_2_and_help_exits_0)
{
    const char *const *const bad[] = {
        (const char *[]){"plan", "--frobnicate", NULL},
        /* two clusters (with none, plan reads the live one: test_plan_live.c) */
        (const char *[]){"plan", "-f", EXAMPLE, "--cluster", "example", "--snapshot", EXAMPLE,
                         NULL},
        (const char *[]){"plan", "-f", EXAMPLE, "--cluster", "example", "-o", "xml", NULL},
        (const char *[]){"plan", "-f", EXAMPLE, "--cluster", "racks=x", NULL},
        (const char *[]){"cluster", "--spec", "nodes=4", NULL},
        (const char *[]){"cluster", "--bogus", NULL},
    };
    struct run_result r;

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cr_assert_eq(run_topox(bad[i], NULL, &r), 0);
        cr_expect_eq(r.status, 2, "case %zu: %s", i, r.err);
        cr_expect_gt(r.err_len, 0, "case %zu", i);
        run_result_release(&r);
    }
    cr_assert_eq(run_topox((const char *[]){"plan", "--help", NULL}, NULL, &r), 0);
    cr_expect_eq(r.status, 0);
    expect_has(r.out, "usage: topox plan", "help");
    run_result_release(&r);
}

Test(plan, explain_labels_names_the_winning_keys)
{
    struct run_result r;

    cr_assert_eq(run_topox((const char *[]){"plan", "--explain-labels", "--nodes",
                                            TPX_FIXTURES "/plan/nodes-stream.yaml", NULL},
                           NULL, &r),
                 0);
    cr_expect_eq(r.status, 0, "%s", r.err);
    expect_has(r.out, "RACK KEY", "explain");
    expect_has(r.out, "nvl-1", "explain");
    expect_has(r.out, "nvidia.com/gpu.clique", "explain");
    expect_has(r.out, "topox.io/rack", "explain");
    expect_has(r.out, "topology.kubernetes.io/zone", "explain");
    run_result_release(&r);
}

Test(plan, svg_file_is_written)
{
    struct run_result r;
    char svg[128];
    char *data;
    size_t len = 0;

    path_in(svg, sizeof(svg), "racks.svg");
    cr_assert_eq(run_topox((const char *[]){"plan", "-f", EXAMPLE, "--cluster", "example", "--svg",
                                            svg, NULL},
                           NULL, &r),
                 0);
    cr_expect_eq(r.status, 0, "%s", r.err);
    data = read_file(svg, &len);
    cr_assert_not_null(data, "no %s", svg);
    cr_expect(strncmp(data, "<?xml", 5) == 0 || strncmp(data, "<svg", 4) == 0, "%.80s", data);
    expect_has(data, "</svg>", "svg");
    expect_has(data, "llm/vllm #3", "svg legend");
    free(data);
    run_result_release(&r);
}

Test(plan, bound_pods_take_capacity)
{
    struct run_result r;

    cr_assert_eq(run_topox((const char *[]){"plan", "-f", "-", "--nodes",
                                            TPX_FIXTURES "/plan/nodes-2racks.json", "--pods",
                                            TPX_FIXTURES "/plan/pods-2racks.json", NULL},
                           "kind: Pod\nmetadata: {name: p8, annotations: "
                           "{topox.io/tensor-parallel-size: \"8\"}}\n"
                           "spec:\n  containers:\n"
                           "  - {name: c, resources: {limits: {nvidia.com/gpu: \"8\"}}}\n",
                           &r),
                 0);
    cr_expect_eq(r.status, 0, "%s", r.err);
    /* gpu-a1 holds 4 busy GPUs and gpu-b1 2; the cordoned and NotReady nodes take nothing */
    expect_has(r.out, "[####....]", "picture");
    expect_has(r.out, "[##......]", "picture");
    expect_has(r.out, "[--------]", "picture");
    expect_has(r.out, "gpu-a2", "the 8-GPU pod lands on the only free node");
    run_result_release(&r);
}

static void round_trip(const char *fmt)
{
    struct run_result gen;
    struct run_result a;
    struct run_result b;
    char nodes[128];

    path_in(nodes, sizeof(nodes), strcmp(fmt, "json") == 0 ? "nodes.json" : "nodes.yaml");
    cr_assert_eq(run_topox((const char *[]){"cluster", "--spec",
                                            "racks=3,nodes-per-rack=2,blocks=1", "-o", fmt, NULL},
                           NULL, &gen),
                 0);
    cr_assert_eq(gen.status, 0, "%s", gen.err);
    expect_has(gen.out, strcmp(fmt, "json") == 0 ? "\"kind\": \"Node\"" : "kind: Node", "list");
    write_text(nodes, gen.out);
    cr_assert_eq(
        run_topox((const char *[]){"plan", "-f", EXAMPLE, "--nodes", nodes, NULL}, NULL, &a), 0);
    cr_assert_eq(run_topox((const char *[]){"plan", "-f", EXAMPLE, "--cluster",
                                            "racks=3,nodes-per-rack=2,blocks=1", NULL},
                           NULL, &b),
                 0);
    cr_expect_eq(a.status, b.status, "%s", a.err);
    cr_expect_str_eq(a.out, b.out, "saved NodeList and spec plan differently");
    expect_has(a.out, "3 of 4 replicas placed", "round trip");
    run_result_release(&gen);
    run_result_release(&a);
    run_result_release(&b);
}

Test(plan, cluster_json_round_trip_through_plan_nodes)
{
    round_trip("json");
}

Test(plan, cluster_yaml_round_trip_through_plan_nodes)
{
    round_trip("yaml");
}

/* The node `"node": "..."` placed pod in plan -o json output out, into node (n bytes). */
static void node_of(const char *out, const char *pod, char *node, size_t n)
{
    char key[128];
    const char *p;
    size_t l;

    snprintf(key, sizeof(key), "\"pod\": \"%s\"", pod);
    p = strstr(out, key);
    cr_assert_not_null(p, "no placement of %s", pod);
    p = strstr(p, "\"node\": \"");
    cr_assert_not_null(p, "no node for %s", pod);
    p += strlen("\"node\": \"");
    l = strcspn(p, "\"");
    cr_assert_lt(l, n);
    memcpy(node, p, l);
    node[l] = '\0';
}

/* Dynamo's TP8 over two 4-GPU pods (multinode.nodeCount 2), SGLang (--tp-size 8) and TRT-LLM
 * (tensor_parallel_size 8 in the --extra-engine-args ConfigMap): on 8-GPU nodes the planner puts
 * both pods of each worker on one node, so TP stays inside one NVSwitch domain. */
static void expect_two_pods_per_node(const char *fixture, const char *const pods[2][2])
{
    char path[512];
    struct run_result r;
    char a[64];
    char b[64];
    char first[64];

    snprintf(path, sizeof(path), "%s/tests/fixtures/manifests/%s", TPX_SOURCE_DIR, fixture);
    cr_assert_eq(
        run_topox((const char *[]){"plan", "-f", path, "--cluster",
                                   "racks=1,nodes-per-rack=4,gpus-per-node=8", "-o", "json", NULL},
                  NULL, &r),
        0);
    cr_expect_eq(r.status, 0, "%s: %s", fixture, r.err);
    expect_has(r.out, "\"rejected\": []", fixture);
    for (size_t i = 0; i < 2; i++) {
        node_of(r.out, pods[i][0], a, sizeof(a));
        node_of(r.out, pods[i][1], b, sizeof(b));
        cr_expect_str_eq(a, b, "%s and %s on one node", pods[i][0], pods[i][1]);
        if (i == 0)
            memcpy(first, a, sizeof(first));
        else
            cr_expect_str_neq(a, first, "prefill and decode each fill a node");
    }
    run_result_release(&r);
}

Test(plan, dynamo_tp8_over_two_4gpu_pods_lands_on_one_8gpu_node)
{
    static const char *const sglang[2][2] = {
        {"sglang-disagg-multinode-decode-0", "sglang-disagg-multinode-decode-0-1"},
        {"sglang-disagg-multinode-prefill-0", "sglang-disagg-multinode-prefill-0-1"},
    };
    static const char *const trtllm[2][2] = {
        {"trtllm-disagg-tp8-prefill-0", "trtllm-disagg-tp8-prefill-0-1"},
        {"trtllm-disagg-tp8-decode-0", "trtllm-disagg-tp8-decode-0-1"},
    };

    expect_two_pods_per_node("dynamo-dgd-sglang-disagg-multinode-tp8-2x4gpu.yaml", sglang);
    expect_two_pods_per_node("dynamo-dgd-trtllm-disagg-multinode-tp8-2x4gpu.yaml", trtllm);
}

#define DRA_FIX TPX_FIXTURES "/dra/"

Test(plan, snapshot_dra_held_gpus_steer_the_job_to_the_free_node)
{
    struct run_result r;

    cr_assert_eq(
        run_topox((const char *[]){"plan", "-f", DRA_FIX "gpu-test-count.yaml", "--snapshot",
                                   DRA_FIX "snapshot-two-nodes.json", "-o", "json", NULL},
                  NULL, &r),
        0);
    cr_expect_eq(r.status, 0, "%s", r.err);
    expect_has(r.out, "\"node\": \"gpu-node-b\"", "plan");
    cr_expect(strstr(r.out, "\"node\": \"gpu-node-a\"") == NULL, "gpu-node-a's GPUs are claimed");
    run_result_release(&r);
}

/* An NVL72-like snapshot: 2 racks of 18 nodes with 4 GPUs, each rack one clique. */
static void nvl72_snapshot(char *path, size_t n)
{
    struct run_result gen;

    path_in(path, n, "nvl72.json");
    cr_assert_eq(run_topox((const char *[]){"cluster", "--spec",
                                            "racks=2,nodes-per-rack=18,gpus-per-node=4,"
                                            "domain-nodes=18",
                                            "-o", "json", NULL},
                           NULL, &gen),
                 0);
    cr_assert_eq(gen.status, 0, "%s", gen.err);
    write_text(path, gen.out);
    run_result_release(&gen);
}

Test(plan, snapshot_computedomain_placed_inside_one_clique)
{
    struct run_result r;
    char snap[128];
    json_t *plan;
    json_error_t je;
    size_t i;
    json_t *p;
    const char *domain = NULL;

    nvl72_snapshot(snap, sizeof(snap));
    cr_assert_eq(
        run_topox((const char *[]){"plan", "-f",
                                   DRA_FIX "dra-computedomain-nvbandwidth-mpijob-4node.yaml",
                                   "--snapshot", snap, "-o", "json", NULL},
                  NULL, &r),
        0);
    cr_expect_eq(r.status, 0, "%s", r.err);
    plan = json_loads(r.out, 0, &je);
    cr_assert_not_null(plan, "%s", je.text);
    cr_expect_eq(json_array_size(json_object_get(plan, "placements")), 4);
    json_array_foreach(json_object_get(plan, "placements"), i, p)
    {
        const char *d = json_string_value(json_object_get(p, "domain"));
        cr_assert_not_null(d);
        if (!domain)
            domain = d;
        cr_expect_str_eq(d, domain, "every claimant in one clique");
    }
    json_decref(plan);
    run_result_release(&r);
}

Test(plan, snapshot_computedomain_rejected_with_the_shortfall)
{
    struct run_result r;
    char snap[128];
    char job[128];
    FILE *in;
    char buf[8192];
    size_t len;
    char *at;

    nvl72_snapshot(snap, sizeof(snap));
    /* 20 workers of 4 GPUs: 80 GPUs, more than a clique of 72 holds */
    in = fopen(DRA_FIX "dra-computedomain-nvbandwidth-mpijob-4node.yaml", "r");
    cr_assert_not_null(in);
    len = fread(buf, 1, sizeof(buf) - 1, in);
    fclose(in);
    buf[len] = '\0';
    at = strstr(buf, "nvidia.com/gpu: 2");
    cr_assert_not_null(at);
    at[16] = '4';
    at = strstr(buf, "replicas: 4");
    cr_assert_not_null(at);
    memmove(at + 12, at + 11, strlen(at + 11) + 1);
    memcpy(at, "replicas: 20", 12);
    path_in(job, sizeof(job), "cd-too-big.yaml");
    write_text(job, buf);
    cr_assert_eq(run_topox((const char *[]){"plan", "-f", job, "--snapshot", snap, NULL}, NULL, &r),
                 0);
    cr_expect_eq(r.status, 3, "%s%s", r.out, r.err);
    expect_has(r.out, "nvbandwidth-test-compute-domain", "rejection");
    expect_has(r.out, "clique) with 80 free GPUs for its 20 pods; the largest here has 72",
               "the shortfall");
    expect_has(r.err, "numNodes is 4 but 20 pods", "note");
    run_result_release(&r);
}

/* --- layouts of the 2026 serving stacks (docs/workloads.md) ------------------------------------
 */

/* `topox plan -o json` of fixture `name` on cluster `spec`: exit 0, and every needle in out. */
static void expect_layout(const char *name, const char *spec, const char *const *needles)
{
    char path[512];
    struct run_result r;

    snprintf(path, sizeof(path), "%s/manifests/%s", TPX_FIXTURES, name);
    cr_assert_eq(
        run_topox((const char *[]){"plan", "-f", path, "--cluster", spec, "-o", "json", NULL}, NULL,
                  &r),
        0);
    cr_expect_eq(r.status, 0, "%s: %s", name, r.err);
    for (size_t i = 0; needles[i]; i++)
        expect_has(r.out, needles[i], name);
    run_result_release(&r);
}

/* SGLang --tp 16 --dp-size 16 --enable-dp-attention --moe-a2a-backend deepep
 * --moe-dense-tp-size 1 over 2 pods x 8: no dense all-reduce group larger than one rank, dp 16,
 * EP 16 (deepep forces ep = tp) over RDMA inside one rack. */
Test(plan, sglang_dp_attention_prefill_layout)
{
    expect_layout("sglang-lws-pd-prefill-deepseek-dp-attention.yaml", "example",
                  (const char *[]){
                      "\"tp\": 1,", "\"pp\": 1,", "\"dp\": 16,", "\"ep\": 16,", "\"certain\": true",
                      "\"engine\": \"sglang\"", "\"accelerators\": 16,", "\"nodes\": 2,",
                      "EP all-to-all, 16 ranks, over RDMA inside rack r0", "\"placed\": 1", NULL});
}

/* llm-d wide-EP on H100: --tensor-parallel-size $TP_SIZE (env 1), --data-parallel-size
 * $((LWS_GROUP_SIZE * DP_SIZE_LOCAL)) (2 x 8), --enable-expert-parallel: TP 1 x DP 16, EP 16. */
Test(plan, llm_d_wide_ep_h100_layout)
{
    expect_layout("llm-d-wide-ep-lws-prefill-vllm-deepseek-r1-dp16-ep.yaml", "example",
                  (const char *[]){"\"tp\": 1,", "\"dp\": 16,", "\"ep\": 16,", "\"certain\": true",
                                   "\"engine\": \"vllm\"", "\"source\": \"env\"",
                                   "\"what\": \"--data-parallel-size\"",
                                   "EP all-to-all, 16 ranks, over RDMA inside rack r0", NULL});
}

/* The same on GB200 (4 pods x 4 GPUs) on an NVL72-like cluster: the EP group lands inside one
 * NVLink domain. */
Test(plan, llm_d_wide_ep_gb200_lands_in_one_nvlink_domain)
{
    expect_layout("llm-d-wide-ep-lws-gke-a4x-prefill-vllm-dp16-gb200-4x4gpu.yaml",
                  "racks=2,nodes-per-rack=18,gpus-per-node=4,domain-nodes=18,interconnect=nvlink",
                  (const char *[]){"\"tp\": 1,", "\"dp\": 16,", "\"ep\": 16,", "\"certain\": true",
                                   "\"nodes\": 4,", "\"level\": \"nvlink-domain\"",
                                   "EP all-to-all, 16 ranks, inside NVLink domain clique-", NULL});
}

/* TensorRT-LLM through Triton's server.py on LWS (the shape of kubernetes-sigs/lws
 * docs/examples/tensorrt-llm/lws.yaml): --pp=8 --tp=2 --gpu_per_node=8 over 2 pods x 8. */
Test(plan, triton_trtllm_pp8_tp2_layout)
{
    char path[128];
    struct run_result r;

    path_in(path, sizeof(path), "trtllm.yaml");
    write_text(path, "apiVersion: leaderworkerset.x-k8s.io/v1\n"
                     "kind: LeaderWorkerSet\n"
                     "metadata: {name: tensorrt}\n"
                     "spec:\n"
                     "  replicas: 1\n"
                     "  leaderWorkerTemplate:\n"
                     "    size: 2\n"
                     "    leaderTemplate:\n"
                     "      spec:\n"
                     "        containers:\n"
                     "        - name: leader\n"
                     "          command: [sh, -c, \"./install_model.sh; python3 ./server.py leader "
                     "--stateful_set_group_key=${GROUP_KEY} --pp=8 --tp=2 --gpu_per_node=8\"]\n"
                     "          env:\n"
                     "          - name: GROUP_KEY\n"
                     "            valueFrom: {fieldRef: {fieldPath: metadata.name}}\n"
                     "          resources: {limits: {nvidia.com/gpu: \"8\"}}\n"
                     "    workerTemplate:\n"
                     "      spec:\n"
                     "        containers:\n"
                     "        - name: worker\n"
                     "          command: [sh, -c, \"python3 ./server.py worker\"]\n"
                     "          resources: {limits: {nvidia.com/gpu: \"8\"}}\n");
    cr_assert_eq(
        run_topox((const char *[]){"plan", "-f", path, "--cluster", "example", NULL}, NULL, &r), 0);
    cr_expect_eq(r.status, 0, "%s", r.err);
    expect_has(r.out, "tp 2 x pp 8 x dp 1 = 16 GPUs on 2 nodes", "table");
    expect_has(r.out, "layout certain from triton-trtllm flags", "table");
    expect_has(r.out, "PP point-to-point, 8 stages, over RDMA inside rack", "table");
    run_result_release(&r);
}

/* The certainty rule in plan: unknown flags are a warning naming FILE:LINE of each value, the
 * replica is placed as preferred, and the exit status is 0. */
Test(plan, uncertain_layout_warns_with_file_line_and_exits_0)
{
    char path[128];
    struct run_result r;

    path_in(path, sizeof(path), "uncertain.yaml");
    write_text(path,
               "apiVersion: leaderworkerset.x-k8s.io/v1\n"
               "kind: LeaderWorkerSet\n"
               "metadata: {name: moe}\n"
               "spec:\n"
               "  leaderWorkerTemplate:\n"
               "    size: 2\n"
               "    workerTemplate:\n"
               "      spec:\n"
               "        containers:\n"
               "        - name: vllm\n"
               "          command:\n"
               "          - sh\n"
               "          - -c\n"
               "          - vllm serve m --tensor-parallel-size $TP --enable-expert-parallel\n"
               "          env: [{name: TP, valueFrom: {configMapKeyRef: {name: c, key: k}}}]\n"
               "          resources: {limits: {nvidia.com/gpu: 8}}\n");
    cr_assert_eq(
        run_topox((const char *[]){"plan", "-f", path, "--cluster", "example", NULL}, NULL, &r), 0);
    cr_expect_eq(r.status, 0, "%s", r.err);
    expect_has(r.err, "warning:", "stderr");
    expect_has(r.err, "layout not certain", "stderr");
    expect_has(r.err, "placed as preferred", "stderr");
    expect_has(r.err, "uncertain.yaml:14: --tensor-parallel-size (unknown)", "stderr");
    expect_has(r.out, "layout uncertain (placed as preferred)", "table");
    expect_has(r.out, "1 of 1 replicas placed", "table");
    run_result_release(&r);
}

/* The EP rule: each wide-EP replica (4 pods x 4 GPUs, EP 16) keeps its all-to-all inside one
 * NVLink domain while one has room, here three 6-node cliques in a rack (without the EP
 * preference the second replica took the rest of clique-1 and half of clique-2). */
Test(plan, ep_groups_prefer_one_nvlink_domain_each)
{
    char path[128];
    struct run_result r;
    size_t inside = 0;

    path_in(path, sizeof(path), "ep3.yaml");
    write_text(path, "apiVersion: leaderworkerset.x-k8s.io/v1\n"
                     "kind: LeaderWorkerSet\n"
                     "metadata: {name: wide-ep}\n"
                     "spec:\n"
                     "  replicas: 3\n"
                     "  leaderWorkerTemplate:\n"
                     "    size: 4\n"
                     "    workerTemplate:\n"
                     "      spec:\n"
                     "        containers:\n"
                     "        - name: vllm\n"
                     "          command: [sh, -c, \"vllm serve m -tp 1 -dp $((LWS_GROUP_SIZE * 4)) "
                     "-dpl 4 --enable-expert-parallel\"]\n"
                     "          resources: {limits: {nvidia.com/gpu: 4}}\n");
    cr_assert_eq(run_topox((const char *[]){"plan", "-f", path, "--cluster",
                                            "racks=2,nodes-per-rack=18,gpus-per-node=4,domain-"
                                            "nodes=6,interconnect=nvlink",
                                            NULL},
                           NULL, &r),
                 0);
    cr_expect_eq(r.status, 0, "%s", r.err);
    for (const char *p = r.out; (p = strstr(p, "EP all-to-all, 16 ranks, inside NVLink domain"));
         p++)
        inside++;
    cr_expect_eq(inside, 3, "%s", r.out);
    cr_expect_null(strstr(r.out, "EP all-to-all, 16 ranks, over RDMA"), "%s", r.out);
    run_result_release(&r);
}

/* --- traffic beside TP: RDMA NICs and KV transfer (docs/workloads.md) ---------------------------
 */

static struct run_result plan_fixture(const char *name, const char *spec)
{
    char path[512];
    struct run_result r;

    snprintf(path, sizeof(path), "%s/manifests/%s", TPX_FIXTURES, name);
    cr_assert_eq(
        run_topox((const char *[]){"plan", "-f", path, "--cluster", spec, "-o", "json", NULL}, NULL,
                  &r),
        0);
    return r;
}

/* llm-d wide-EP (certain TP 1 x DP 16, EP 16 over 2 pods of 8): the all-to-all crosses nodes, so
 * the nodes of r01, which say topox.io/rdma-nics 0, are not used; with no NICs anywhere the replica
 * is rejected (exit 3) with the reason. vLLM tp 8 x pp 2 sends only pipeline traffic between its
 * pods, which NCCL carries over TCP: it prefers the rack with NICs but is never rejected. */
Test(plan, traffic_across_nodes_avoids_nodes_without_rdma_nics)
{
    static const char *const pods[] = {"vllm-0", "vllm-0-1"};
    struct run_result r = plan_fixture("llm-d-wide-ep-lws-prefill-vllm-deepseek-r1-dp16-ep.yaml",
                                       "racks=2,nodes-per-rack=2,gpus-per-node=8,rdma-nics=8,"
                                       "no-rdma-racks=1");

    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "r02-n01") && !strstr(r.out, "r01-n01"), "%s", r.out);
    run_result_release(&r);
    r = plan_fixture("llm-d-wide-ep-lws-prefill-vllm-deepseek-r1-dp16-ep.yaml",
                     "racks=2,nodes-per-rack=2,gpus-per-node=8,no-rdma-racks=2");
    cr_expect_eq(r.status, 3, "%s", r.err);
    expect_has(r.out, "nodes with topox.io/rdma-nics 0 are left out", "reason");
    run_result_release(&r);
    /* the same nodes without the label: unknown, never 0 */
    r = plan_fixture("llm-d-wide-ep-lws-prefill-vllm-deepseek-r1-dp16-ep.yaml",
                     "racks=2,nodes-per-rack=2,gpus-per-node=8");
    cr_expect_eq(r.status, 0, "%s", r.err);
    run_result_release(&r);
    /* pipeline only: the first replica takes the rack with NICs, the second still fits in r01 */
    r = plan_fixture("lws-vllm-gpu-llama405b-tp8-pp2.yaml",
                     "racks=2,nodes-per-rack=2,gpus-per-node=8,rdma-nics=8,no-rdma-racks=1");
    cr_expect_eq(r.status, 0, "%s", r.err);
    for (size_t i = 0; i < 2; i++) {
        char node[64];
        node_of(r.out, pods[i], node, sizeof(node));
        cr_expect(strncmp(node, "r02-", 4) == 0, "%s on %s", pods[i], node);
    }
    run_result_release(&r);
}

/* A synthetic cluster (SPEC) as kv-nodes.json and one bound pod holding GPUS accelerators of
 * NODE as kv-pods.json, in the suite's folder: their paths in nodes and pods (n bytes each). */
static void busy_cluster(const char *spec, const char *node, unsigned gpus, char *nodes, char *pods,
                         size_t n)
{
    char text[512];
    struct run_result gen;

    path_in(nodes, n, "kv-nodes.json");
    path_in(pods, n, "kv-pods.json");
    cr_assert_eq(
        run_topox((const char *[]){"cluster", "--spec", spec, "-o", "json", NULL}, NULL, &gen), 0);
    cr_assert_eq(gen.status, 0, "%s", gen.err);
    write_text(nodes, gen.out);
    run_result_release(&gen);
    snprintf(text, sizeof(text),
             "{\"apiVersion\": \"v1\", \"kind\": \"List\", \"items\": [{\"apiVersion\": \"v1\", "
             "\"kind\": \"Pod\", \"metadata\": {\"name\": \"busy\", \"namespace\": \"default\", "
             "\"uid\": \"u-busy\"}, \"spec\": {\"nodeName\": \"%s\", \"containers\": [{\"name\": "
             "\"c\", \"resources\": {\"limits\": {\"nvidia.com/gpu\": \"%u\"}}}]}, \"status\": "
             "{\"phase\": \"Running\"}}]}\n",
             node, gpus);
    write_text(pods, text);
}

/* Dynamo's SGLang prefill and decode workers of one graph (nvidia.com/dynamo-graph-deployment-name,
 * --disaggregation-mode) for their KV transfer: 4 racks in 2 blocks, r03-n01 taken by a bound pod,
 * so best fit puts the decode worker on r03-n02 (block b2). Best fit alone would then start the
 * prefill worker on the first empty rack, r01 in block b1; the KV term takes it to b2 (r04). */
Test(plan, dynamo_prefill_follows_its_decode_into_the_block)
{
    static const char *const decode[] = {"sglang-disagg-multinode-decode-0",
                                         "sglang-disagg-multinode-decode-0-1"};
    static const char *const prefill[] = {"sglang-disagg-multinode-prefill-0",
                                          "sglang-disagg-multinode-prefill-0-1"};
    char nodes[128], pods[128], path[512], node[64];
    struct run_result r;

    busy_cluster("racks=4,nodes-per-rack=2,gpus-per-node=8,blocks=2", "r03-n01", 8, nodes, pods,
                 sizeof(nodes));
    snprintf(path, sizeof(path), "%s/manifests/dynamo-dgd-sglang-disagg-multinode-tp8-2x4gpu.yaml",
             TPX_FIXTURES);
    cr_assert_eq(run_topox((const char *[]){"plan", "-f", path, "--nodes", nodes, "--pods", pods,
                                            "-o", "json", NULL},
                           NULL, &r),
                 0);
    cr_expect_eq(r.status, 0, "%s", r.err);
    for (size_t i = 0; i < 2; i++) {
        node_of(r.out, decode[i], node, sizeof(node));
        cr_expect_str_eq(node, "r03-n02", "%s", decode[i]);
        node_of(r.out, prefill[i], node, sizeof(node));
        cr_expect(strncmp(node, "r04-", 4) == 0, "%s on %s, want block b2", prefill[i], node);
    }
    run_result_release(&r);
}

/* A Grove PodCliqueSet of 2 replicas, each a decode and a prefill scaling group of one vLLM TP 8
 * pod (the shape of ai-dynamo/grove operator/samples/user-guide/concept-overview/
 * multi-node-disaggregated.yaml, and the shared tas-hierarchy fixture with replicas 2 and GPUs):
 * the operator labels every pod with its replica (grove.io/podcliqueset-replica-index), and each
 * replica is a KV deployment of its own. 4 racks of 3 nodes in 2 blocks, 4 GPUs of r04-n01 taken:
 * replica 0's decode and prefill fill r04. Replica 1's decode, placed before its own prefill,
 * has no partner yet: best fit puts it on r01-n01, not in block b2 beside replica 0's prefill
 * (the set's name alone would pair them), and replica 1's prefill follows it into r01. */
Test(plan, grove_replicas_pair_prefill_and_decode_within_each_replica)
{
    static const char *const pod[] = {"pd-0-decode-0-dworker-0", "pd-0-prefill-0-pworker-0",
                                      "pd-1-decode-0-dworker-0", "pd-1-prefill-0-pworker-0"};
    static const char *const want[] = {"r04-", "r04-", "r01-n01", "r01-"};
    char nodes[128], pods[128], path[128], node[64];
    struct run_result r;

    busy_cluster("racks=4,nodes-per-rack=3,gpus-per-node=8,blocks=2", "r04-n01", 4, nodes, pods,
                 sizeof(nodes));
    path_in(path, sizeof(path), "grove-pd.yaml");
    write_text(
        path,
        "apiVersion: grove.io/v1alpha1\n"
        "kind: PodCliqueSet\n"
        "metadata:\n"
        "  name: pd\n"
        "  namespace: llm\n"
        "spec:\n"
        "  replicas: 2\n"
        "  template:\n"
        "    cliques:\n"
        "    - name: pworker\n"
        "      spec:\n"
        "        roleName: pworker\n"
        "        replicas: 1\n"
        "        podSpec:\n"
        "          containers:\n"
        "          - name: prefill\n"
        "            image: vllm/vllm-openai:latest\n"
        "            command: [\"vllm\", \"serve\", \"m\", \"--tensor-parallel-size\", \"8\"]\n"
        "            resources:\n"
        "              limits:\n"
        "                nvidia.com/gpu: \"8\"\n"
        "    - name: dworker\n"
        "      spec:\n"
        "        roleName: dworker\n"
        "        replicas: 1\n"
        "        podSpec:\n"
        "          containers:\n"
        "          - name: decode\n"
        "            image: vllm/vllm-openai:latest\n"
        "            command: [\"vllm\", \"serve\", \"m\", \"--tensor-parallel-size\", \"8\"]\n"
        "            resources:\n"
        "              limits:\n"
        "                nvidia.com/gpu: \"8\"\n"
        "    podCliqueScalingGroups:\n"
        "    - name: decode\n"
        "      cliqueNames: [dworker]\n"
        "      replicas: 1\n"
        "    - name: prefill\n"
        "      cliqueNames: [pworker]\n"
        "      replicas: 1\n");
    cr_assert_eq(run_topox((const char *[]){"plan", "-f", path, "--nodes", nodes, "--pods", pods,
                                            "-o", "json", NULL},
                           NULL, &r),
                 0);
    cr_expect_eq(r.status, 0, "%s", r.err);
    expect_has(r.out, "\"placed\": 4,", "summary");
    for (size_t i = 0; i < sizeof(pod) / sizeof(pod[0]); i++) {
        node_of(r.out, pod[i], node, sizeof(node));
        cr_expect(strncmp(node, want[i], strlen(want[i])) == 0, "%s on %s, want %s", pod[i], node,
                  want[i]);
    }
    run_result_release(&r);
}

/* --- RoleBasedGroup, both generations ----------------------------------------------------------
 */

/* sgl-project/rbg examples/inference/pd-disagg-leader-worker.yaml (v1alpha2): prefill 2
 * instances x 4 pods x 1 GPU with --tp-size 4, decode 4 x 2 x 1 with --tp-size 2, each
 * `--nnodes $(RBG_LWP_GROUP_SIZE)`: every layout certain, every instance's TP group on one node. */
Test(plan, rbg_v1alpha2_fixture_places_each_instance_on_one_node)
{
    static const char *const inst[][2] = {
        {"pd-disagg-lws-prefill-0-0", "pd-disagg-lws-prefill-0-3"},
        {"pd-disagg-lws-prefill-1-0", "pd-disagg-lws-prefill-1-3"},
        {"pd-disagg-lws-decode-3-0", "pd-disagg-lws-decode-3-1"},
    };
    char path[512], a[64], b[64];
    struct run_result r;

    snprintf(path, sizeof(path),
             "%s/manifests/rbg-rolebasedgroup-sglang-pd-disagg-leader-worker-tp.yaml",
             TPX_FIXTURES);
    cr_assert_eq(
        run_topox((const char *[]){"plan", "-f", path, "--cluster",
                                   "racks=1,nodes-per-rack=4,gpus-per-node=8", "-o", "json", NULL},
                  NULL, &r),
        0);
    cr_expect_eq(r.status, 0, "%s", r.err);
    expect_has(r.out, "\"placed\": 7,", "summary");
    expect_has(r.out, "\"rejected\": []", "json");
    expect_has(r.out, "TP all-reduce, 4 ranks, inside node", "prefill");
    expect_has(r.out, "TP all-reduce, 2 ranks, inside node", "decode");
    cr_expect_null(strstr(r.out, "\"certain\": false"), "%s", r.out);
    cr_expect_null(strstr(r.err, "not certain"), "%s", r.err);
    for (size_t i = 0; i < sizeof(inst) / sizeof(inst[0]); i++) {
        node_of(r.out, inst[i][0], a, sizeof(a));
        node_of(r.out, inst[i][1], b, sizeof(b));
        cr_expect_str_eq(a, b, "%s and %s on one node", inst[i][0], inst[i][1]);
    }
    run_result_release(&r);
}

/* The pods of one leader-worker instance as each controller generation makes them, with no
 * topox annotation: v1alpha2 (a RoleInstance: the rbg.workloads.x-k8s.io labels, RBG_LWP_* from
 * component-size and component-index) and v1alpha1 (a LeaderWorkerSet: LWS labels and size,
 * LWS_*). Both are one group of 2 read for certain: TP 2 on one node, the worker at rank 1. */
#define RBG_POD(name, labels, ann, nnodes)                                                         \
    "- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: " name "\n    labels: {" labels         \
    "}\n    annotations: {" ann "}\n  spec:\n    containers:\n    - name: sglang\n      command: " \
    "[python3, -m, sglang.launch_server, --tp-size, '2', --nnodes, '" nnodes "']\n"                \
    "      resources: {limits: {nvidia.com/gpu: '1'}}\n"
#define RBG2_LABELS(comp, idx)                                                                     \
    "rbg.workloads.x-k8s.io/group-name: pd, rbg.workloads.x-k8s.io/role-name: decode, "            \
    "rbg.workloads.x-k8s.io/role-instance-name: pd-decode-0, "                                     \
    "rbg.workloads.x-k8s.io/role-instance-index: '0', "                                            \
    "rbg.workloads.x-k8s.io/component-name: " comp                                                 \
    ", rbg.workloads.x-k8s.io/component-index: '" idx "', "                                        \
    "rbg.workloads.x-k8s.io/component-size: '2'"
#define RBG1_LABELS(idx)                                                                           \
    "rolebasedgroup.workloads.x-k8s.io/name: pd, rolebasedgroup.workloads.x-k8s.io/role: decode, " \
    "leaderworkerset.sigs.k8s.io/name: pd-decode, leaderworkerset.sigs.k8s.io/group-index: '0', "  \
    "leaderworkerset.sigs.k8s.io/worker-index: '" idx "'"

Test(plan, rbg_pods_of_each_generation_are_one_group_from_their_labels)
{
    static const char *const gens[][2] = {
        {"v1alpha2.yaml",
         "apiVersion: v1\nkind: List\nitems:\n" RBG_POD("pd-decode-0-0", RBG2_LABELS("leader", "0"),
                                                        "", "$(RBG_LWP_GROUP_SIZE)")
             RBG_POD("pd-decode-0-1", RBG2_LABELS("worker", "1"), "", "$(RBG_LWP_GROUP_SIZE)")},
        {"v1alpha1.yaml",
         "apiVersion: v1\nkind: List\nitems:\n" RBG_POD("pd-decode-0", RBG1_LABELS("0"),
                                                        "leaderworkerset.sigs.k8s.io/size: '2'",
                                                        "$(LWS_GROUP_SIZE)")
             RBG_POD("pd-decode-0-1", RBG1_LABELS("1"), "leaderworkerset.sigs.k8s.io/size: '2'",
                     "$(LWS_GROUP_SIZE)")},
    };

    for (size_t i = 0; i < sizeof(gens) / sizeof(gens[0]); i++) {
        char path[128];
        struct run_result r;

        path_in(path, sizeof(path), gens[i][0]);
        write_text(path, gens[i][1]);
        cr_assert_eq(run_topox((const char *[]){"plan", "-f", path, "--cluster",
                                                "racks=1,nodes-per-rack=2,gpus-per-node=8", "-o",
                                                "json", NULL},
                               NULL, &r),
                     0);
        cr_expect_eq(r.status, 0, "%s: %s", gens[i][0], r.err);
        /* two Pod objects of one group: one replica of both pods */
        expect_has(r.out, "\"replicas\": 1,", gens[i][0]);
        expect_has(r.out, "\"pods\": 2", gens[i][0]);
        expect_has(r.out, "\"certain\": true", gens[i][0]);
        expect_has(r.out, "TP all-reduce, 2 ranks, inside node r01-n01", gens[i][0]);
        expect_has(r.out, "\"ranks\": [\n        1,\n        1\n      ]", gens[i][0]);
        cr_expect_null(strstr(r.out, "\"certain\": false"), "%s: %s", gens[i][0], r.out);
        cr_expect_null(strstr(r.err, "not certain"), "%s: %s", gens[i][0], r.err);
        run_result_release(&r);
    }
}

/* `plan -o json` on FIXTURE over CLUSTER: the estimate of replica r (a new reference). */
static json_t *plan_estimate(const char *fixture, const char *cluster, size_t r, int want_status)
{
    struct run_result res;
    json_error_t jerr;
    json_t *doc, *e;

    cr_assert_eq(
        run_topox((const char *[]){"plan", "-f", fixture, "--cluster", cluster, "-o", "json", NULL},
                  NULL, &res),
        0);
    cr_expect_eq(res.status, want_status, "%s", res.err);
    doc = json_loads(res.out, 0, &jerr);
    cr_assert_not_null(doc, "%s\n%s", jerr.text, res.out);
    run_result_release(&res);
    e = json_incref(json_array_get(json_object_get(doc, "estimates"), r));
    json_decref(doc);
    cr_assert_not_null(e, "no estimate %zu", r);
    return e;
}

static const char *source_of(const json_t *e, const char *size, const char *field)
{
    return json_string_value(
        json_object_get(json_object_get(json_object_get(e, "sources"), size), field));
}

/* issue 19: TensorRT-LLM's --extra-engine-args file inside an `sh -c`, read from the manifest's
 * ConfigMap: the DEP32 decode of Dynamo's GB200 wide-EP recipe (the recipe's shared
 * ComputeDomain cut, SOURCES.md) is tp 1 x dp 32 with ep 32, every size from the file, certain */
Test(plan, trtllm_engine_args_configmap_sizes_show_in_the_estimates)
{
    const char *path = TPX_FIXTURES
        "/manifests/dynamo-dgd-trtllm-dsr1-wideep-gb200-dep4p-dep32d-no-computedomain.yaml";
    json_t *e = plan_estimate(path, "racks=1,nodes-per-rack=10,gpus-per-node=4", 2, 0);

    cr_expect_str_eq(json_string_value(json_object_get(e, "engine")), "dynamo-trtllm");
    cr_expect_eq(json_integer_value(json_object_get(e, "tp")), 1);
    cr_expect_eq(json_integer_value(json_object_get(e, "dp")), 32);
    cr_expect_eq(json_integer_value(json_object_get(e, "ep")), 32);
    cr_expect(json_is_true(json_object_get(e, "certain")));
    cr_expect_str_eq(source_of(e, "dp", "source"), "config");
    cr_expect_str_eq(source_of(e, "dp", "what"), "tensor_parallel_size");
    cr_expect_str_eq(source_of(e, "dp", "via"), "--extra-engine-args");
    cr_expect_str_eq(source_of(e, "ep", "what"), "moe_expert_parallel_size");
    json_decref(e);
}

/* issue 19: KServe's VLLM_ADDITIONAL_ARGS on a single-node LLMInferenceService (no command: the
 * controller's template runs vllm serve with them) */
Test(plan, kserve_vllm_additional_args_show_engine_sizes_and_the_var)
{
    const char *path =
        TPX_FIXTURES "/manifests/kserve-llmisvc-nemotron-ultra-pd-vllm-additional-args.yaml";
    json_t *e = plan_estimate(path, "racks=1,nodes-per-rack=2,gpus-per-node=8", 0, 0);

    cr_expect_str_eq(json_string_value(json_object_get(e, "engine")), "vllm");
    cr_expect_eq(json_integer_value(json_object_get(e, "tp")), 8);
    cr_expect_eq(json_integer_value(json_object_get(e, "ep")), 8);
    cr_expect(json_is_true(json_object_get(e, "certain")));
    cr_expect_str_eq(source_of(e, "tp", "source"), "flag");
    cr_expect_str_eq(source_of(e, "tp", "what"), "--tensor-parallel-size");
    cr_expect_str_eq(source_of(e, "tp", "via"), "VLLM_ADDITIONAL_ARGS");
    cr_expect_str_eq(source_of(e, "ep", "what"), "--enable-expert-parallel");
    json_decref(e);
}

/* issue 19 item 4: NVIDIA Dynamo's DeepSeek-R1 SGLang recipe on two 8-GPU nodes per role: the
 * prefill's TP16 with EP16 and the decode's TP16 with DP-attention and EP16 are MoE traffic, so
 * they are placed (each role in one rack), with a warning, never rejected */
Test(plan, dynamo_sglang_wide_ep_tp16_over_two_nodes_is_placed_with_a_warning)
{
    const char *path = TPX_FIXTURES "/manifests/dynamo-dgd-sglang-dsr1-tep16p-dep16d-2x8gpu.yaml";
    struct run_result r;

    cr_assert_eq(run_topox((const char *[]){"plan", "-f", path, "--cluster",
                                            "racks=1,nodes-per-rack=4,gpus-per-node=8", NULL},
                           NULL, &r),
                 0);
    cr_expect_eq(r.status, 0, "%s\n%s", r.out, r.err);
    expect_has(r.out, "3 of 3 replicas placed, 0 rejected", "table");
    expect_has(r.err,
               "replica 1: tp 16, ep 16 with DP-attention over pods of 8 GPUs: its EP all-to-all "
               "and the dense layers' all-reduce crosses nodes",
               "warning");
    run_result_release(&r);
}

/* ... and a dense TP16 is still refused, naming the escape hatch, which then places it */
Test(plan, dense_tp16_over_nodes_is_refused_unless_its_owner_allows_it)
{
    char path[128];
    struct run_result r;
#define DENSE_LWS(META)                                                                            \
    "apiVersion: leaderworkerset.x-k8s.io/v1\nkind: LeaderWorkerSet\n"                             \
    "metadata: {name: dense}\nspec:\n  replicas: 1\n  leaderWorkerTemplate:\n"                     \
    "    size: 2\n    workerTemplate:\n      metadata:\n" META                                     \
    "      spec:\n        containers:\n        - name: vllm\n"                                     \
    "          command: [vllm, serve, m, --tensor-parallel-size, \"16\"]\n"                        \
    "          resources: {limits: {nvidia.com/gpu: 8}}\n"

    path_in(path, sizeof(path), "dense.yaml");
    write_text(path, DENSE_LWS("        labels: {app: dense}\n"));
    cr_assert_eq(run_topox((const char *[]){"plan", "-f", path, "--cluster",
                                            "racks=1,nodes-per-rack=2,gpus-per-node=8", NULL},
                           NULL, &r),
                 0);
    cr_expect_eq(r.status, 3, "%s", r.err);
    expect_has(r.out, "All-reduce would cross nodes", "table");
    expect_has(r.out, "the annotation topox.io/cross-node-tp: allow on its pods", "table");
    run_result_release(&r);
    write_text(path, DENSE_LWS("        annotations: {topox.io/cross-node-tp: allow}\n"));
    cr_assert_eq(run_topox((const char *[]){"plan", "-f", path, "--cluster",
                                            "racks=1,nodes-per-rack=2,gpus-per-node=8", NULL},
                           NULL, &r),
                 0);
    cr_expect_eq(r.status, 0, "%s\n%s", r.out, r.err);
    expect_has(r.out, "1 of 1 replicas placed", "table");
    expect_has(r.err, "its every-layer all-reduce (topox.io/cross-node-tp: allow)", "warning");
    run_result_release(&r);
}
