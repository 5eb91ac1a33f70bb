/* SPDX-License-Identifier: Apache-2.0 */
/* tests/integration/test_drive.c - topox-drive (the `make run` demo) against the real topox:
 * every pod of the example LWS job bound, the two pods of each group in one rack, leader before
 * worker, in both nodeCacheCapable modes; a cluster too small for the job gives the scheduler's
 * "0/N nodes are available" message and exit 1; --help, unknown flags and missing files. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define EXAMPLE TPX_SOURCE_DIR "/manifests/examples/vllm-lws-tp8-pp2.yaml"

static void expect_has(const char *hay, const char *needle, const char *what)
{
    cr_expect(strstr(hay, needle) != NULL, "%s lacks '%s':\n%s", what, needle, hay);
}

/* The table row of pod "llm/NAME": node and rack. false when there is no bound row. */
static bool row(const char *out, const char *name, char *node, char *rack, size_t *line_no)
{
    char want[128];
    const char *p = out;
    size_t no = 0;

    snprintf(want, sizeof(want), "llm/%s ", name);
    while (p && *p) {
        const char *nl = strchr(p, '\n');
        no++;
        if (strncmp(p, want, strlen(want)) == 0) {
            char pod[128];
            *line_no = no;
            return sscanf(p, "%127s %127s %127s", pod, node, rack) == 3 && strcmp(node, "not") != 0;
        }
        p = nl ? nl + 1 : NULL;
    }
    return false;
}

static void check_groups_bound_in_one_rack(const char *out, unsigned groups)
{
    for (unsigned g = 0; g < groups; g++) {
        char leader[32], worker[32];
        char ln[128], lr[128], wn[128], wr[128];
        size_t lno = 0, wno = 0;

        snprintf(leader, sizeof(leader), "vllm-%u", g);
        snprintf(worker, sizeof(worker), "vllm-%u-1", g);
        cr_assert(row(out, leader, ln, lr, &lno), "no bound row for %s:\n%s", leader, out);
        cr_assert(row(out, worker, wn, wr, &wno), "no bound row for %s:\n%s", worker, out);
        cr_expect_str_eq(lr, wr, "group %u split: %s in %s, %s in %s", g, ln, lr, wn, wr);
        cr_expect_str_neq(ln, wn, "group %u: both pods on %s", g, ln);
        cr_expect_lt(lno, wno, "group %u: worker before leader", g);
    }
}

static void run_drive(const char *const *extra, struct run_result *r)
{
    const char *args[16] = {"--topox", TOPOX_BIN, "-f", EXAMPLE};
    size_t n = 4;

    while (extra && *extra && n < 15)
        args[n++] = *extra++;
    args[n] = NULL;
    cr_assert_eq(run_program(TOPOX_DRIVE_BIN, args, NULL, r), 0);
}

Test(drive, example_binds_every_pod_and_keeps_groups_in_one_rack)
{
    struct run_result r;

    run_drive(NULL, &r);
    cr_expect_eq(r.status, 0, "stdout:\n%s\nstderr:\n%s", r.out, r.err);
    expect_has(r.out, "8/8 pods bound", "summary");
    expect_has(r.out, "nodeCacheCapable: true", "header");
    expect_has(r.out, "16/16 nodes passed", "first leader's filter");
    expect_has(r.out, "topox serve stopped with SIGTERM: exit status 0", "server stop");
    expect_has(r.out, "racks (the extender's view):", "state summary");
    expect_has(r.out, "llm/vllm group 3", "state groups");
    cr_expect_null(strstr(r.out, "not scheduled"), "%s", r.out);
    check_groups_bound_in_one_rack(r.out, 4);
    run_result_release(&r);
}

Test(drive, full_node_objects_when_not_node_cache_capable)
{
    struct run_result r;

    run_drive((const char *[]){"--ncc", "false", NULL}, &r);
    cr_expect_eq(r.status, 0, "stdout:\n%s\nstderr:\n%s", r.out, r.err);
    expect_has(r.out, "nodeCacheCapable: false", "header");
    expect_has(r.out, "8/8 pods bound", "summary");
    check_groups_bound_in_one_rack(r.out, 4);
    run_result_release(&r);
}

Test(drive, too_small_cluster_reports_scheduler_message_and_exits_1)
{
    struct run_result r;

    run_drive((const char *[]){"--cluster", "racks=1,nodes-per-rack=4", NULL}, &r);
    cr_expect_eq(r.status, 1, "stdout:\n%s\nstderr:\n%s", r.out, r.err);
    expect_has(r.out, "4/8 pods bound", "summary");
    expect_has(r.out, "llm/vllm-2             not scheduled: 0/4 nodes are available: 4 ",
               "rejection");
    expect_has(r.out, "topox serve stopped with SIGTERM: exit status 0", "server stop");
    check_groups_bound_in_one_rack(r.out, 2);
    run_result_release(&r);
}

Test(drive, help_usage_and_bad_input)
{
    struct run_result r;

    cr_assert_eq(run_program(TOPOX_DRIVE_BIN, (const char *[]){"--help", NULL}, NULL, &r), 0);
    cr_expect_eq(r.status, 0);
    expect_has(r.out, "usage: topox-drive", "--help");
    run_result_release(&r);

    cr_assert_eq(run_program(TOPOX_DRIVE_BIN, (const char *[]){"--bogus", NULL}, NULL, &r), 0);
    cr_expect_eq(r.status, 2);
    expect_has(r.err, "usage: topox-drive", "unknown flag");
    cr_expect_str_empty(r.out);
    run_result_release(&r);

    cr_assert_eq(
        run_program(TOPOX_DRIVE_BIN,
                    (const char *[]){"--topox", TOPOX_BIN, "-f", "/nonexistent.yaml", NULL}, NULL,
                    &r),
        0);
    cr_expect_eq(r.status, 1);
    expect_has(r.err, "/nonexistent.yaml", "missing file");
    cr_expect_eq(strchr(r.err, '\n'), r.err + strlen(r.err) - 1, "one line: %s", r.err);
    run_result_release(&r);

    run_drive((const char *[]){"--ncc", "maybe", NULL}, &r);
    cr_expect_eq(r.status, 2);
    expect_has(r.err, "--ncc: 'maybe' is not true or false", "bad --ncc");
    run_result_release(&r);
}

/* Through serve, as kube-scheduler sends them: the wide-EP (GB200) and DP-attention fixtures are
 * placed whole, the EP group of 4 pods x 4 GPUs inside one NVLink domain of an NVL72-like
 * cluster (every pod's DOMAIN column names the same clique). */
Test(drive, wide_ep_and_dp_attention_fixtures_placed_whole)
{
    const char *gb200[] = {"--topox",
                           TOPOX_BIN,
                           "-f",
                           TPX_FIXTURES
                           "/manifests/"
                           "llm-d-wide-ep-lws-gke-a4x-prefill-vllm-dp16-gb200-4x4gpu.yaml",
                           "--cluster",
                           "racks=2,nodes-per-rack=18,gpus-per-node=4,domain-nodes=18",
                           NULL};
    const char *sgl[] = {
        "--topox",   TOPOX_BIN,
        "-f",        TPX_FIXTURES "/manifests/sglang-lws-pd-prefill-deepseek-dp-attention.yaml",
        "--cluster", "example",
        NULL};
    struct run_result r;
    const char *p;
    char clique[32] = "";
    size_t n = 0;

    cr_assert_eq(run_program(TOPOX_DRIVE_BIN, gb200, NULL, &r), 0);
    cr_expect_eq(r.status, 0, "stdout:\n%s\nstderr:\n%s", r.out, r.err);
    expect_has(r.out, "4/4 pods bound", "summary");
    for (p = r.out; (p = strstr(p, " clique-")) != NULL; p++, n++) {
        char c[32];
        sscanf(p + 1, "%31s", c);
        if (!clique[0])
            snprintf(clique, sizeof(clique), "%s", c);
        cr_expect_str_eq(c, clique, "every EP rank in one NVLink domain:\n%s", r.out);
    }
    cr_expect_eq(n, 4, "%s", r.out);
    run_result_release(&r);
    cr_assert_eq(run_program(TOPOX_DRIVE_BIN, sgl, NULL, &r), 0);
    cr_expect_eq(r.status, 0, "stdout:\n%s\nstderr:\n%s", r.out, r.err);
    expect_has(r.out, "2/2 pods bound", "summary");
    expect_has(r.out, "2/2 pods placed", "one group, whole");
    run_result_release(&r);
}

/* topox-drive on fixture FILE (under tests/fixtures) and cluster SPEC: its exit status. */
static int drive_fixture(const char *file, const char *spec, struct run_result *r)
{
    char path[512];

    snprintf(path, sizeof(path), "%s/%s", TPX_FIXTURES, file);
    cr_assert_eq(
        run_program(TOPOX_DRIVE_BIN,
                    (const char *[]){"--topox", TOPOX_BIN, "-f", path, "--cluster", spec, NULL},
                    NULL, r),
        0);
    return r->status;
}

/* Issue 31, driven through serve as kube-scheduler drives it. A Kueue TAS LWS whose leader asks
 * for 100m CPU and whose two workers ask for one GPU each, on racks of one 2-GPU node: the
 * leader takes no slot, so each group fits its rack (it was refused: "group needs 3"). */
Test(drive, a_cpu_leader_takes_no_slot_of_its_group)
{
    struct run_result r;

    cr_expect_eq(drive_fixture("plan/kueue-tas-lws-cpu-leader-1gpu-workers.yaml",
                               "racks=2,nodes-per-rack=1,gpus-per-node=2", &r),
                 0, "%s%s", r.out, r.err);
    expect_has(r.out, "6/6 pods bound", "summary");
    cr_expect_null(strstr(r.out, "group needs 3"), "%s", r.out);
    run_result_release(&r);
}

/* A DeepSpeed MPIJob on Gaudi (2 workers x 8 habana.ai/gaudi, no TP flag anywhere) on nodes whose
 * 8 accelerators are two domains of 4: nothing written says tensor parallelism, so nothing is
 * refused for it (every worker was refused on all 16 nodes). */
Test(drive, a_deepspeed_mpijob_on_split_gaudi_nodes_is_bound)
{
    struct run_result r;

    cr_expect_eq(drive_fixture("corpus/mpijob-gaudi-megatron-deepspeed-llama7b-2x8hpu-tp8-dp2.yaml",
                               "racks=4,nodes-per-rack=4,gpus-per-node=8,resource=habana.ai/gaudi,"
                               "domains-per-node=2",
                               &r),
                 0, "%s%s", r.out, r.err);
    expect_has(r.out, "2/2 pods bound", "summary");
    cr_expect_null(strstr(r.out, "tensor-parallel-size 8 needs"), "%s", r.out);
    run_result_release(&r);
}

/* SGLang's own StatefulSet (--tp 16 --ep 16 --nnodes 2 --node-rank from the pod-index label) is
 * one world: one group, both pods in one rack (it was two groups of one). */
Test(drive, an_sglang_statefulset_world_is_one_group_in_one_rack)
{
    struct run_result r;

    cr_expect_eq(drive_fixture("corpus/sglang-statefulset-2nodes-tp16-ep16-8gpu.yaml",
                               "racks=4,nodes-per-rack=4,gpus-per-node=8", &r),
                 0, "%s%s", r.out, r.err);
    expect_has(r.out, "2/2 pods bound", "summary");
    expect_has(r.out, "default/distributed-sglang world 0 rack r0", "one group");
    expect_has(r.out, "2/2 pods placed", "both members in it");
    run_result_release(&r);
}

/* An amd.com/gpu vLLM Deployment on AMD nodes: bound (its resource is the nodes'). */
Test(drive, an_amd_deployment_is_bound_on_amd_nodes)
{
    struct run_result r;

    cr_expect_eq(drive_fixture("corpus/amd-rocm-vllm-deployment-mistral-7b-1gpu.yaml",
                               "racks=2,nodes-per-rack=2,gpus-per-node=8,resource=amd.com/gpu", &r),
                 0, "%s%s", r.out, r.err);
    expect_has(r.out, "1/1 pods bound", "summary");
    run_result_release(&r);
}

/* An AscendJob (Scheduler + 2 Workers of 8 NPUs, one HCCL world by its minAvailable) and a Volcano
 * Job of 8 pods x 8 NPUs (minAvailable 8) are each one group through serve, in one rack (they
 * were 2 and 8 groups of one). */
Test(drive, ascend_and_volcano_worlds_are_one_group_in_one_rack)
{
    static const struct {
        const char *file, *group, *bound;
    } cases[] = {
        {"corpus/ascendjob-mindspore-distribute-scheduler-2x8-ascend910.yaml",
         "default/default/default-test-mindspore rack r01", "3/3 pods bound"},
        {"corpus/volcano-vcjob-ascend910b-8pod-8npu-hostnetwork.yaml",
         "default/default/default-test-vcjob-8pod-8npu rack r01", "8/8 pods bound"},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct run_result r;
        cr_expect_eq(drive_fixture(cases[i].file,
                                   "racks=3,nodes-per-rack=8,gpus-per-node=8,"
                                   "resource=huawei.com/Ascend910",
                                   &r),
                     0, "%s%s", r.out, r.err);
        expect_has(r.out, cases[i].bound, cases[i].file);
        expect_has(r.out, cases[i].group, cases[i].file);
        run_result_release(&r);
    }
}
