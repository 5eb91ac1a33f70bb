/* SPDX-License-Identifier: Apache-2.0 */
/* tests/integration/test_plan_kinds.c - the real `topox plan` on operators' manifests of the kinds
 * read by API group and kind (tests/fixtures/manifests, SOURCES.md): exit 0 with the engine's
 * layout in `estimates[]`, a kind topox does not know expanded generically with a note and an
 * uncertain layout, `plan --help` printing the kinds table, a ComputeDomain shared by several
 * groups placed in one clique, and kube-scheduler's filters (nodeSelector, taints) before topox's
 * rules, with CPU-only pods drawn without GPU cells. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
    /* minAvailable 3 makes the master and the two GPU workers one gang: one replica, whose
     * layout (the workers') is uncertain */
    expect_has(r.err, "spec.minAvailable makes its 3 pods one gang", "note");
    cr_expect_eq(count(r.out, "\"certain\": false"), 1, "%s", r.out);
    cr_expect_eq(count(r.out, "\"certain\": true"), 0, "%s", r.out);
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

/* A nodes file of `topox cluster --spec spec`, each node given label key=value (key NULL: none)
 * and the taint taint_key=present:NoSchedule (NULL: none), written to path. */
static void nodes_file(const char *path, const char *spec, const char *key, const char *value,
                       const char *taint_key)
{
    struct run_result r;
    json_t *list;
    json_error_t je;
    size_t i;
    json_t *n;

    cr_assert_eq(
        run_topox((const char *[]){"cluster", "--spec", spec, "-o", "json", NULL}, NULL, &r), 0);
    cr_assert_eq(r.status, 0, "%s", r.err);
    list = json_loads(r.out, 0, &je);
    cr_assert_not_null(list, "%s", je.text);
    json_array_foreach(json_object_get(list, "items"), i, n)
    {
        if (key)
            json_object_set_new(json_object_get(json_object_get(n, "metadata"), "labels"), key,
                                json_string(value));
        if (taint_key)
            json_object_set_new(n, "spec",
                                json_pack("{s:[{s:s,s:s,s:s}]}", "taints", "key", taint_key,
                                          "value", "present", "effect", "NoSchedule"));
    }
    cr_assert_eq(json_dump_file(list, path, JSON_INDENT(1)), 0);
    json_decref(list);
    run_result_release(&r);
}

static int plan_on_nodes(const char *name, const char *nodes, struct run_result *r)
{
    char path[512];

    snprintf(path, sizeof(path), "%s/manifests/%s", TPX_FIXTURES, name);
    cr_assert_eq(
        run_topox((const char *[]){"plan", "-f", path, "--nodes", nodes, "-o", "json", NULL}, NULL,
                  r),
        0);
    return r->status;
}

/* SGLang's LWS prefill sample selects nodes `pd: "yes"` and tolerates `bopd` and `node-role`
 * taints. On nodes without the label kube-scheduler would leave it pending: plan rejects it
 * (exit 3) naming the selector, where it used to place it. With the label it is placed. */
Test(plan_kinds, node_selector_no_node_matches_is_rejected_naming_it)
{
    char nodes[64] = "/tmp/topox-kinds-nodes-XXXXXX";
    struct run_result r;
    int fd = mkstemp(nodes);

    cr_assert_geq(fd, 0);
    close(fd);
    nodes_file(nodes, "racks=1,nodes-per-rack=2,gpus-per-node=8", NULL, NULL, NULL);
    cr_expect_eq(plan_on_nodes("sglang-lws-pd-prefill-deepseek-dp-attention.yaml", nodes, &r), 3,
                 "%s", r.err);
    expect_has(r.out,
               "0/2 nodes admit it (kube-scheduler's filters): 2 node(s) didn't match "
               "nodeSelector pd=yes",
               "plan");
    run_result_release(&r);
    nodes_file(nodes, "racks=1,nodes-per-rack=2,gpus-per-node=8", "pd", "yes", "bopd");
    cr_expect_eq(plan_on_nodes("sglang-lws-pd-prefill-deepseek-dp-attention.yaml", nodes, &r), 0,
                 "%s", r.out);
    expect_has(r.out, "\"placed\": 1", "plan");
    run_result_release(&r);
    unlink(nodes);
}

/* KubeRay's RayService sample: its GPU worker tolerates `nvidia.com/gpu` taints, its CPU head
 * does not. On GPU nodes all tainted, the worker is placed and the head is rejected naming the
 * taint; the head, which asks for no GPU, takes no GPU cell in the rack picture. */
Test(plan_kinds, taints_reject_the_pod_that_does_not_tolerate_them)
{
    char nodes[64] = "/tmp/topox-kinds-nodes-XXXXXX";
    char path[512];
    struct run_result r;
    int fd = mkstemp(nodes);

    cr_assert_geq(fd, 0);
    close(fd);
    nodes_file(nodes, "racks=1,nodes-per-rack=2,gpus-per-node=8", NULL, NULL, "nvidia.com/gpu");
    cr_expect_eq(plan_on_nodes("kuberay-rayservice-vllm-serve-llama3-8b.yaml", nodes, &r), 3, "%s",
                 r.err);
    expect_has(r.out, "node(s) had untolerated taint {nvidia.com/gpu=present: NoSchedule}", "plan");
    expect_has(r.out, "\"pod\": \"llama-3-8b-raycluster-0-gpu-group-worker-0\"", "plan");
    run_result_release(&r);
    /* untainted: both placed, and the CPU-only head draws no cell */
    nodes_file(nodes, "racks=1,nodes-per-rack=2,gpus-per-node=8", NULL, NULL, NULL);
    snprintf(path, sizeof(path), "%s/manifests/%s", TPX_FIXTURES,
             "kuberay-rayservice-vllm-serve-llama3-8b.yaml");
    cr_assert_eq(run_topox((const char *[]){"plan", "-f", path, "--nodes", nodes, NULL}, NULL, &r),
                 0);
    cr_expect_eq(r.status, 0, "%s", r.err);
    expect_has(r.out, "[11......]", "picture: the worker's 2 GPUs only");
    cr_expect(strstr(r.out, "[0") == NULL, "the head takes no GPU cell:\n%s", r.out);
    run_result_release(&r);
    unlink(nodes);
}

/* The same, for a fixture of tests/fixtures/corpus. */
static int plan_corpus(const char *name, struct run_result *r)
{
    char rel[300];

    snprintf(rel, sizeof(rel), "../corpus/%s", name);
    return plan_json(rel, r);
}

/* Issue 31, item 5: objects that make accelerator pods without a pod template of their own are
 * planned as their operators make the pods; none is "no pods to place" or "a template". */
Test(plan_kinds, operators_that_render_their_pods_are_planned)
{
    struct run_result r;

    /* production-stack's VLLMRuntime: deploymentConfig.replicas 2 x gpu 1, vllm serve with the
     * vllmConfig's tensorParallelSize (operator/internal/controller/vllmruntime_controller.go) */
    cr_expect_eq(plan_corpus("vllm-production-stack-vllmruntime-llama31-8b-lmcache.yaml", &r), 0,
                 "%s", r.err);
    expect_has(r.out, "\"placed\": 2,", "VLLMRuntime");
    expect_has(r.out, "\"engine\": \"vllm\"", "VLLMRuntime");
    cr_expect_null(strstr(r.err, "a template for other objects"), "%s", r.err);
    run_result_release(&r);

    /* Kaito's Workspace: count 2 of Standard_NC48ads_A100_v4 (2 GPUs each, Kaito's SKU table) */
    cr_expect_eq(plan_corpus("kaito-workspace-llama33-70b-2x-a100-vllm-config.yaml", &r), 0, "%s",
                 r.err);
    expect_has(r.err, "2 node(s) of Standard_NC48ads_A100_v4, 2 GPU(s) each", "Workspace");
    expect_has(r.out, "\"accelerators\": 4,", "one group of both nodes");
    cr_expect_null(strstr(r.err, "skipped Workspace"), "%s", r.err);
    run_result_release(&r);

    /* an Argo Workflow (generateName, no name): the step template whose script asks for a GPU */
    cr_expect_eq(plan_corpus("argo-workflow-gpu-say-withparam-1gpu.yaml", &r), 0, "%s", r.err);
    expect_has(r.out, "gpu-say-gpu-echo-0-0", "the step's pod");
    run_result_release(&r);

    /* OME: the InferenceService's pods are those of the ClusterServingRuntime it names, in the
     * same file: its leader and worker.size 1 are one group of two 8-GPU pods */
    cr_expect_eq(plan_corpus("ome-isvc-deepseek-v3-clusterservingruntime-srt-rdma-lws.yaml", &r), 0,
                 "%s", r.err);
    expect_has(r.err, "its pods are those ClusterServingRuntime 'srt-deepseek-rdma'", "join");
    expect_has(r.out, "\"accelerators\": 16,", "one group");
    expect_has(r.out, "\"replicas\": 1,", "one group");
    run_result_release(&r);
}

/* A serving runtime nothing in the manifest names is not called a template of no pods: the note
 * says it defines accelerator pods for the objects that name it. */
Test(plan_kinds, an_unused_runtime_says_what_it_defines)
{
    static const char doc[] =
        "apiVersion: ome.io/v1beta1\nkind: ClusterServingRuntime\nmetadata: {name: rt}\n"
        "spec:\n  engineConfig:\n    runner:\n      name: c\n      image: x\n"
        "      resources: {limits: {nvidia.com/gpu: 8}}\n";
    char path[256];
    FILE *f;
    struct run_result r;

    snprintf(path, sizeof(path), "/tmp/topox-unused-runtime-%d.yaml", (int)getpid());
    f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(doc, f);
    fclose(f);
    cr_assert_eq(
        run_topox((const char *[]){"plan", "-f", path, "--cluster", "example", NULL}, NULL, &r), 0);
    cr_expect_eq(r.status, 2, "%s", r.err);
    expect_has(r.err, "defines accelerator pods for the objects that name it", "note");
    cr_expect_null(strstr(r.err, "a template for other objects"), "%s", r.err);
    run_result_release(&r);
    unlink(path);
}

/* Issue 31, item 3: every pod on nodes of its own resource, on a fleet of four vendors: an AMD
 * vLLM Deployment only on AMD nodes, an Ascend Volcano Job only on Ascend nodes, and the rack
 * picture names each rack's devices. */
Test(plan_kinds, every_pod_on_its_own_vendors_nodes)
{
    static const struct {
        const char *file, *prefix;
    } cases[] = {
        {"corpus/amd-rocm-vllm-deployment-mistral-7b-1gpu.yaml", "amd-"},
        {"corpus/volcano-vcjob-atlas800-pangu-alpha-ascend910-rings-config.yaml", "huawei-"},
        {"corpus/gaudi-vllm-deployment-llama31-8b-1hpu-hugepages.yaml", "habana-"}};

    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        char path[512];
        struct run_result r;
        json_error_t je;
        json_t *plan, *p;
        size_t i, n = 0;

        snprintf(path, sizeof(path), "%s/%s", TPX_FIXTURES, cases[c].file);
        cr_assert_eq(run_topox((const char *[]){"plan", "-f", path, "--nodes",
                                                TPX_FIXTURES "/nodes/mixed-four-vendors.json", "-o",
                                                "json", NULL},
                               NULL, &r),
                     0);
        cr_expect_eq(r.status, 0, "%s: %s", cases[c].file, r.err);
        plan = json_loads(r.out, 0, &je);
        cr_assert_not_null(plan, "%s", r.out);
        json_array_foreach(json_object_get(plan, "placements"), i, p)
        {
            const char *node = json_string_value(json_object_get(p, "node"));
            n++;
            cr_expect(node && strncmp(node, cases[c].prefix, strlen(cases[c].prefix)) == 0,
                      "%s: pod on %s", cases[c].file, node ? node : "(none)");
        }
        cr_expect_gt(n, 0, "%s placed nothing", cases[c].file);
        json_decref(plan);
        run_result_release(&r);
    }
    {
        struct run_result r;
        cr_assert_eq(
            run_topox((const char *[]){"plan", "-f",
                                       TPX_FIXTURES "/corpus/amd-rocm-vllm-deployment-"
                                                    "mistral-7b-1gpu.yaml",
                                       "--nodes", TPX_FIXTURES "/nodes/mixed-four-vendors.json",
                                       NULL},
                      NULL, &r),
            0);
        expect_has(r.out, "amd-r01-n01..amd-r01-n02   amd.com/gpu", "the picture");
        expect_has(r.out, "huawei-r01-n01..huawei-r01-n02   huawei.com/Ascend910", "the picture");
        run_result_release(&r);
    }
}
