/* SPDX-License-Identifier: Apache-2.0 */
/* tests/integration/test_plan_kinds.c - the real `topox plan` on operators' manifests of the kinds
 * read by API group and kind (tests/fixtures/manifests, SOURCES.md): exit 0 with the engine's
 * layout in `estimates[]`, a kind topox does not know expanded generically with a note and an
 * uncertain layout, `plan --help` printing the kinds table, and a ComputeDomain shared by several
 * groups placed in one clique. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"

static void expect_has(const char *hay, const char *needle, const char *what)
{
    cr_expect(strstr(hay, needle) != NULL, "%s: no '%s' in:\n%s", what, needle, hay);
}

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;

    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

/* `topox plan -o json` of fixture `name` on the example cluster: its exit status. */
static int plan_json(const char *name, struct run_result *r)
{
    char path[512];

    snprintf(path, sizeof(path), "%s/manifests/%s", TPX_FIXTURES, name);
    cr_assert_eq(
        run_topox((const char *[]){"plan", "-f", path, "--cluster", "example", "-o", "json", NULL},
                  NULL, r),
        0);
    return r->status;
}

/* AIBrix StormService: was skipped as "no pods to place" (exit 2); now two SGLang TP 2 groups. */
Test(plan_kinds, stormservice_groups_are_planned_with_the_engine_layout)
{
    struct run_result r;

    cr_expect_eq(plan_json("aibrix-stormservice-sglang-tp-1p1d-podgroupsize2.yaml", &r), 0, "%s",
                 r.err);
    expect_has(r.out, "\"engine\": \"sglang\"", "plan");
    expect_has(r.out, "\"tp\": 2,", "plan");
    expect_has(r.out, "\"accelerators\": 2,", "plan");
    expect_has(r.out, "tp-1p1d-roleset-0-prefill-", "plan");
    cr_expect(strstr(r.err, "no pods to place") == NULL, "%s", r.err);
    run_result_release(&r);
}

/* Volcano's Job (batch.volcano.sh): was refused as a batch/v1 Job without a template (exit 2);
 * now planned from its tasks' templates, with a note, every layout uncertain. */
Test(plan_kinds, unknown_kind_is_planned_generically_with_a_note)
{
    struct run_result r;

    cr_expect_eq(plan_json("volcano-job-mindspore-gpu-mpi.yaml", &r), 0, "%s", r.err);
    expect_has(r.err, "is not a kind topox knows: spec.tasks[1].template read as 2 group(s)",
               "note");
    expect_has(r.out, "mindspore-gpu-mpiworker-1-0", "plan");
    /* the two GPU workers are uncertain; the CPU-only master has no layout to be unsure of */
    cr_expect_eq(count(r.out, "\"certain\": false"), 2, "%s", r.out);
    cr_expect_eq(count(r.out, "\"certain\": true"), 1, "%s", r.out);
    run_result_release(&r);
}

/* --help lists the kinds plan reads, from the one table in objects/manifest_kinds.c. */
Test(plan_kinds, help_lists_every_kind_read)
{
    struct run_result r;

    cr_assert_eq(run_topox((const char *[]){"plan", "--help", NULL}, NULL, &r), 0);
    cr_expect_eq(r.status, 0);
    expect_has(r.out, "StormService           orchestration.aibrix.ai/v1alpha1", "help");
    expect_has(r.out, "RayCluster             ray.io/v1", "help");
    expect_has(r.out, "NIMService             apps.nvidia.com/v1alpha1", "help");
    expect_has(r.out, "PodCliqueSet", "help");
    expect_has(r.out, "any other kind that embeds a pod template", "help");
    run_result_release(&r);
}

/* NVIDIA's GB200 wide-EP recipe: one ComputeDomain (numNodes 9) shared by the prefill worker and
 * the 8-pod decode worker. It was refused as bad input (exit 2); every claimant now lands in one
 * clique of the NVL72-like cluster. */
Test(plan_kinds, computedomain_shared_by_prefill_and_decode_lands_in_one_clique)
{
    char path[512];
    struct run_result r;

    snprintf(path, sizeof(path), "%s/manifests/%s", TPX_FIXTURES,
             "dynamo-dgd-trtllm-gb200-wide-ep-computedomain-1p-8d.yaml");
    cr_assert_eq(run_topox((const char *[]){"plan", "-f", path, "--cluster",
                                            "racks=2,nodes-per-rack=18,gpus-per-node=4,"
                                            "domain-nodes=18",
                                            "-o", "json", NULL},
                           NULL, &r),
                 0);
    cr_expect_eq(r.status, 0, "%s", r.err);
    expect_has(r.err, "its 9 claimants come from 2 groups of the manifest", "note");
    cr_expect_eq(count(r.out, "\"domain\": \"clique-1\""), 10, "%s", r.out);
    cr_expect_eq(count(r.out, "\"domain\": \"clique-2\""), 0, "%s", r.out);
    run_result_release(&r);
}
