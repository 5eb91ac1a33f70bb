/* SPDX-License-Identifier: Apache-2.0 */
/* tests/integration/test_plan_live.c - `topox plan` against the live cluster: the real binary
 * against the in-process fake API server (fake_apiserver.c, reached through a kubeconfig written
 * here). It lists Nodes, bound Pods, the DRA kinds and PodGroups page by page, sends nothing but
 * GET, plans on what it read (the bound pod's GPUs are taken), and says clearly what went wrong:
 * no kubeconfig, an unreachable server, 401, 403 naming the verb and resource, a server without
 * resource.k8s.io. --context and -n as kubectl reads them. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fake_apiserver.h"
#include "harness.h"

#define SLICES "/apis/resource.k8s.io/v1/resourceslices"
#define PODGROUPS "/apis/scheduling.k8s.io/v1beta1/podgroups"

struct world {
    struct fake_api *api;
    char kubeconfig[64];
    char job[64];
};

static struct world *cur;

static void teardown(void)
{
    if (!cur)
        return;
    fake_api_stop(cur->api);
    unlink(cur->kubeconfig);
    unlink(cur->job);
    free(cur);
    cur = NULL;
}

TestSuite(plan_live, .fini = teardown);

static void write_text(char *path, const char *text)
{
    int fd = mkstemp(path);
    FILE *f;

    cr_assert(fd >= 0);
    f = fdopen(fd, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
}

/* A kubeconfig with two contexts: "fake" (current unless told) reaches the fake with token
 * plan-token in namespace ns; "gone" points at a closed port. */
static void write_kubeconfig(struct world *w, const char *current, const char *ns)
{
    char text[1024];

    snprintf(text, sizeof(text),
             "apiVersion: v1\nkind: Config\ncurrent-context: %s\n"
             "clusters:\n- name: fake\n  cluster:\n    server: %s\n"
             "- name: gone\n  cluster:\n    server: http://127.0.0.1:1\n"
             "users:\n- name: planner\n  user:\n    token: plan-token\n"
             "contexts:\n- name: fake\n  context:\n    cluster: fake\n    user: planner\n"
             "    namespace: %s\n"
             "- name: gone\n  context:\n    cluster: gone\n    user: planner\n",
             current, fake_api_url(w->api), ns);
    unlink(w->kubeconfig);
    snprintf(w->kubeconfig, sizeof(w->kubeconfig), "/tmp/topox-plan-kc-XXXXXX");
    write_text(w->kubeconfig, text);
}

/* A Deployment of `replicas` single-pod replicas of 8 GPUs each, TP 8. */
static void write_job(struct world *w, int replicas, const char *extra_pod_spec)
{
    char text[2048];

    snprintf(text, sizeof(text),
             "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: tp8}\n"
             "spec:\n  replicas: %d\n  selector: {matchLabels: {app: tp8}}\n"
             "  template:\n    metadata:\n      labels: {app: tp8}\n"
             "      annotations: {topox.io/tensor-parallel-size: \"8\"}\n"
             "    spec:\n%s      containers:\n      - name: vllm\n        image: vllm\n"
             "        resources: {limits: {nvidia.com/gpu: \"8\"}}\n",
             replicas, extra_pod_spec ? extra_pod_spec : "");
    unlink(w->job);
    snprintf(w->job, sizeof(w->job), "/tmp/topox-plan-job-XXXXXX");
    write_text(w->job, text);
}

static struct world *world_new(void)
{
    struct world *w = calloc(1, sizeof(*w));

    cr_assert_not_null(w);
    cur = w;
    w->api = fake_api_start(TPX_FIXTURES "/apiserver");
    cr_assert_not_null(w->api, "the fake API server did not start");
    fake_api_set_token(w->api, "plan-token");
    write_kubeconfig(w, "fake", "default");
    write_job(w, 2, NULL);
    unsetenv("KUBECONFIG");
    unsetenv("KUBERNETES_SERVICE_HOST");
    setenv("HOME", "/nonexistent", 1);
    return w;
}

static int plan(struct world *w, const char *const *more, struct run_result *r)
{
    const char *args[16] = {"plan", "-f", w->job, "--insecure", "-o", "json"};
    size_t n = 6;

    for (size_t i = 0; more && more[i]; i++)
        args[n++] = more[i];
    args[n] = NULL;
    return run_topox(args, NULL, r);
}

/* The nodes the placements name, as "a b c" in plan order. */
static void placed_nodes(const char *out, char *nodes, size_t len, json_t **plan_out)
{
    json_error_t je;
    json_t *plan = json_loads(out, 0, &je);
    size_t i;
    json_t *p;

    cr_assert_not_null(plan, "not JSON: %s\n%s", je.text, out);
    nodes[0] = '\0';
    json_array_foreach(json_object_get(plan, "placements"), i, p)
    {
        size_t l = strlen(nodes);
        snprintf(nodes + l, len - l, "%s%s", l ? " " : "",
                 json_string_value(json_object_get(p, "node")));
    }
    if (plan_out)
        *plan_out = plan;
    else
        json_decref(plan);
}

Test(plan_live, plans_on_what_the_cluster_lists_and_only_reads)
{
    struct world *w = world_new();
    struct run_result r;
    char nodes[256];
    char *log;

    setenv("KUBECONFIG", w->kubeconfig, 1);
    write_job(w, 3, NULL);
    cr_assert_eq(plan(w, NULL, &r), 0);
    /* three 8-GPU nodes, vllm-0 bound on gpu-r1-n1 holds all 8 of its GPUs: 2 of 3 fit */
    cr_expect_eq(r.status, 3, "%s", r.err);
    placed_nodes(r.out, nodes, sizeof(nodes), NULL);
    cr_expect(strstr(nodes, "gpu-r1-n2") && strstr(nodes, "gpu-r2-n1"), "placed on: %s", nodes);
    cr_expect_null(strstr(nodes, "gpu-r1-n1"), "the bound pod's node was used: %s", nodes);
    cr_expect(strstr(r.err, "3 nodes, 1 bound pods"), "%s", r.err);
    log = fake_api_log(w->api);
    cr_expect(strstr(log, "GET /api/v1/nodes?limit=100"), "%s", log);
    cr_expect(strstr(log, "GET /api/v1/pods?limit=100&fieldSelector=spec.nodeName!=,"
                          "status.phase!=Succeeded,status.phase!=Failed"),
              "%s", log);
    cr_expect(strstr(log, "GET " SLICES "?limit=100"), "%s", log);
    cr_expect(strstr(log, "GET /apis/resource.k8s.io/v1/resourceclaims?"), "%s", log);
    cr_expect(strstr(log, "GET /apis/resource.k8s.io/v1/deviceclasses?"), "%s", log);
    cr_expect(strstr(log, "GET " PODGROUPS "?"), "%s", log);
    cr_expect_eq(fake_api_count(w->api, "POST", ""), 0, "%s", log);
    cr_expect_eq(fake_api_count(w->api, "PATCH", ""), 0, "%s", log);
    cr_expect_eq(fake_api_count(w->api, "PUT", ""), 0, "%s", log);
    cr_expect_eq(fake_api_count(w->api, "DELETE", ""), 0, "%s", log);
    free(log);
    run_result_release(&r);
}

Test(plan_live, lists_page_by_page)
{
    struct world *w = world_new();
    struct run_result r;
    json_t *list = json_pack("{s:s,s:s,s:{s:s},s:[]}", "kind", "NodeList", "apiVersion", "v1",
                             "metadata", "resourceVersion", "7", "items");
    char *text;

    for (int i = 0; i < 250; i++) {
        char name[32];
        snprintf(name, sizeof(name), "n%03d", i);
        json_array_append_new(json_object_get(list, "items"),
                              json_pack("{s:{s:s,s:{s:s}},s:{s:{s:s},s:{s:s}}}", "metadata", "name",
                                        name, "labels", "topox.io/rack", i < 125 ? "r1" : "r2",
                                        "status", "allocatable", "nvidia.com/gpu", "8", "capacity",
                                        "nvidia.com/gpu", "8"));
    }
    text = json_dumps(list, 0);
    cr_assert_eq(fake_api_set_list(w->api, "/api/v1/nodes", text), 0);
    free(text);
    json_decref(list);
    cr_assert_eq(plan(w, (const char *[]){"--kubeconfig", w->kubeconfig, NULL}, &r), 0);
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.err, "250 nodes"), "%s", r.err);
    cr_expect_eq(fake_api_count(w->api, "GET", "/api/v1/nodes?limit=100&continue="), 2);
    run_result_release(&r);
}

Test(plan_live, context_and_namespace_as_kubectl_reads_them)
{
    struct world *w = world_new();
    struct run_result r;
    char nodes[256];
    json_t *p;

    /* current-context "gone" is unreachable; --context fake is used instead, with its namespace */
    write_kubeconfig(w, "gone", "team-a");
    cr_assert_eq(
        plan(w, (const char *[]){"--kubeconfig", w->kubeconfig, "--context", "fake", NULL}, &r), 0);
    cr_expect_eq(r.status, 0, "%s", r.err);
    placed_nodes(r.out, nodes, sizeof(nodes), &p);
    cr_expect_str_eq(json_string_value(json_object_get(
                         json_array_get(json_object_get(p, "placements"), 0), "job")),
                     "team-a/tp8");
    json_decref(p);
    run_result_release(&r);
    cr_assert_eq(plan(w,
                      (const char *[]){"--kubeconfig", w->kubeconfig, "--context", "fake", "-n",
                                       "team-b", NULL},
                      &r),
                 0);
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "\"team-b/tp8\""), "%s", r.out);
    run_result_release(&r);
    cr_assert_eq(
        plan(w, (const char *[]){"--kubeconfig", w->kubeconfig, "--context", "nope", NULL}, &r), 0);
    cr_expect_eq(r.status, 1);
    cr_expect(strstr(r.err, "context 'nope' not found"), "%s", r.err);
    run_result_release(&r);
}

Test(plan_live, no_kubeconfig_is_said_and_exits_1)
{
    struct run_result r;

    world_new();
    cr_assert_eq(plan(cur, NULL, &r), 0);
    cr_expect_eq(r.status, 1);
    cr_expect(strstr(r.err, "topox plan: no kubeconfig: give --kubeconfig FILE"), "%s", r.err);
    cr_expect_eq(fake_api_count(cur->api, "GET", ""), 0);
    run_result_release(&r);
}

Test(plan_live, unreachable_server_is_named)
{
    struct world *w = world_new();
    struct run_result r;

    cr_assert_eq(
        plan(w, (const char *[]){"--kubeconfig", w->kubeconfig, "--context", "gone", NULL}, &r), 0);
    cr_expect_eq(r.status, 1);
    cr_expect(strstr(r.err, "cannot reach the API server http://127.0.0.1:1"), "%s", r.err);
    run_result_release(&r);
}

Test(plan_live, unauthorized_and_forbidden_name_what_is_missing)
{
    struct world *w = world_new();
    struct run_result r;

    setenv("KUBECONFIG", w->kubeconfig, 1);
    fake_api_set_token(w->api, "another-token");
    cr_assert_eq(plan(w, NULL, &r), 0);
    cr_expect_eq(r.status, 1);
    cr_expect(strstr(r.err, "401 Unauthorized: the API server does not accept the credentials"),
              "%s", r.err);
    run_result_release(&r);

    fake_api_set_token(w->api, "plan-token");
    fake_api_fail_method(w->api, "GET", 1, 403, "status-403-list-nodes.json");
    cr_assert_eq(plan(w, NULL, &r), 0);
    cr_expect_eq(r.status, 1);
    cr_expect(strstr(r.err, "403 Forbidden: the kubeconfig's user may not list nodes at the "
                            "cluster scope"),
              "%s", r.err);
    cr_expect(strstr(r.err, "topox-planner (manifests/planner-rbac.yaml)"), "%s", r.err);
    run_result_release(&r);
}

Test(plan_live, a_server_without_dra_plans_without_it)
{
    struct world *w = world_new();
    struct run_result r;

    cr_assert_eq(fake_api_set_list(w->api, SLICES, NULL), 0);
    cr_assert_eq(fake_api_set_list(w->api, "/apis/resource.k8s.io/v1/resourceclaims", NULL), 0);
    cr_assert_eq(fake_api_set_list(w->api, "/apis/resource.k8s.io/v1/deviceclasses", NULL), 0);
    cr_assert_eq(plan(w, (const char *[]){"--kubeconfig", w->kubeconfig, NULL}, &r), 0);
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.err, "note: the API server does not serve resource.k8s.io/v1"), "%s", r.err);
    /* once resourceslices is a 404, the other DRA kinds are not asked for */
    cr_expect_eq(fake_api_count(w->api, "GET", "resourceclaims"), 0);
    run_result_release(&r);
}

Test(plan_live, the_clusters_podgroup_serves_the_jobs_pods)
{
    struct world *w = world_new();
    struct run_result r;

    /* one PodGroup of 2 pods of 4 GPUs, TP 4 x PP 2: fits gpu-r1-n2 or gpu-r2-n1 */
    unlink(w->job);
    snprintf(w->job, sizeof(w->job), "/tmp/topox-plan-job-XXXXXX");
    write_text(w->job, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: pp2}\n"
                       "spec:\n  replicas: 2\n  selector: {matchLabels: {app: pp2}}\n"
                       "  template:\n    metadata:\n      labels: {app: pp2}\n"
                       "      annotations: {topox.io/tensor-parallel-size: \"4\", "
                       "topox.io/pipeline-parallel-size: \"2\"}\n"
                       "    spec:\n      schedulingGroup: {podGroupName: gang}\n"
                       "      containers:\n      - name: vllm\n        image: vllm\n"
                       "        resources: {limits: {nvidia.com/gpu: \"4\"}}\n");
    cr_assert_eq(plan(w, (const char *[]){"--kubeconfig", w->kubeconfig, NULL}, &r), 0);
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.err, "note: the API server does not serve scheduling.k8s.io/v1beta1"), "%s",
              r.err);
    cr_expect(strstr(r.err, "PodGroup 'gang' is not in this manifest"), "%s", r.err);
    run_result_release(&r);

    cr_assert_eq(
        fake_api_set_list(w->api, PODGROUPS,
                          "{\"kind\":\"PodGroupList\",\"apiVersion\":\"scheduling.k8s.io/v1beta1\","
                          "\"metadata\":{\"resourceVersion\":\"5\"},\"items\":["
                          "{\"metadata\":{\"name\":\"gang\",\"namespace\":\"default\"},"
                          "\"spec\":{\"schedulingPolicy\":{\"gang\":{\"minCount\":2}}}}]}"),
        0);
    cr_assert_eq(plan(w, (const char *[]){"--kubeconfig", w->kubeconfig, NULL}, &r), 0);
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.err, "1 PodGroups"), "%s", r.err);
    cr_expect_null(strstr(r.err, "is not in this manifest"), "%s", r.err);
    run_result_release(&r);
    /* a PodGroup of another namespace is not the job's */
    cr_assert_eq(plan(w, (const char *[]){"--kubeconfig", w->kubeconfig, "-n", "team-c", NULL}, &r),
                 0);
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.err, "PodGroup 'gang' is not in this manifest"), "%s", r.err);
    run_result_release(&r);
}

Test(plan_live, cluster_flags_do_not_mix_with_files)
{
    struct world *w = world_new();
    struct run_result r;

    cr_assert_eq(plan(w, (const char *[]){"--cluster", "example", "--context", "fake", NULL}, &r),
                 0);
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "do not go with --nodes, --snapshot or --cluster"), "%s", r.err);
    cr_expect_eq(fake_api_count(w->api, "GET", ""), 0);
    run_result_release(&r);
}

/* `kubectl topox`: kubectl runs kubectl-topox (a link to topox) with the words after "topox";
 * kubectl's --kubeconfig, --context and -n may come before the command. */
static void kubectl_topox(char *path, size_t len)
{
    const char *slash = strrchr(TOPOX_BIN, '/');

    snprintf(path, len, "%.*s/kubectl-topox", (int)(slash - TOPOX_BIN), TOPOX_BIN);
}

Test(plan_live, kubectl_topox_plan_with_kubectls_flags)
{
    struct world *w = world_new();
    struct run_result r;
    char bin[512];

    kubectl_topox(bin, sizeof(bin));
    write_kubeconfig(w, "gone", "team-a");
    cr_assert_eq(run_program(bin,
                             (const char *[]){"--kubeconfig", w->kubeconfig, "--context=fake", "-n",
                                              "team-b", "plan", "-f", w->job, "--insecure", "-o",
                                              "json", NULL},
                             NULL, &r),
                 0);
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "\"team-b/tp8\""), "%s", r.out);
    run_result_release(&r);
    /* the same words after the command, and the plugin's own name in its help */
    setenv("KUBECONFIG", w->kubeconfig, 1);
    cr_assert_eq(run_program(bin,
                             (const char *[]){"plan", "-f", w->job, "--context", "fake",
                                              "--insecure", "-o", "json", NULL},
                             NULL, &r),
                 0);
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "\"team-a/tp8\""), "%s", r.out);
    run_result_release(&r);
    cr_assert_eq(run_program(bin, (const char *[]){"--help", NULL}, NULL, &r), 0);
    cr_expect_eq(r.status, 0);
    cr_expect(strncmp(r.out, "usage: kubectl topox ", 21) == 0, "%s", r.out);
    cr_expect(strstr(r.out, "  plan "), "%s", r.out);
    run_result_release(&r);
}

/* Issue 31, item 6: --pending plans the cluster's pending pods themselves, of a namespace and a
 * label selector, read-only: any operator is covered once its pods exist. Two pending pods of
 * SGLang's StatefulSet (--nnodes 2, the controller's pod-index labels) are one group; a bound pod
 * is not planned, and the namespace and selector are what the API server is asked for. */
Test(plan_live, pending_pods_are_planned_as_they_are)
{
    struct world *w = world_new();
    struct run_result r;
    char *log;
#define SG_POD(i, app, node)                                                                       \
    "{\"metadata\":{\"name\":\"sg-" i "\",\"namespace\":\"ml\",\"labels\":{\"app\":\"" app         \
    "\",\"apps.kubernetes.io/pod-index\":\"" i "\",\"statefulset.kubernetes.io/pod-name\":"        \
    "\"sg-" i "\"}},\"spec\":{" node "\"containers\":[{\"name\":\"s\",\"image\":\"sglang\","       \
    "\"command\":[\"python3\",\"-m\",\"sglang.launch_server\",\"--tp-size\",\"16\",\"--ep-size\"," \
    "\"16\",\"--nnodes\",\"2\"],\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"8\"}}}]},"         \
    "\"status\":{\"phase\":\"Pending\"}}"

    cr_assert_eq(fake_api_set_list(
                     w->api, "/api/v1/pods",
                     "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{"
                     "\"resourceVersion\":\"7\"},\"items\":[" SG_POD("1", "sg", "") "," SG_POD(
                         "0", "sg", "") "," SG_POD("2", "sg", "\"nodeName\":\"gpu-r1-n1\",") "]}"),
                 0);
    cr_assert_eq(
        run_topox((const char *[]){"plan", "--pending", "-n", "ml", "-l", "app=sg", "--kubeconfig",
                                   w->kubeconfig, "--insecure", "-o", "json", NULL},
                  NULL, &r),
        0);
    cr_expect(r.status == 0 || r.status == 3, "%d: %s", r.status, r.err);
    cr_expect(strstr(r.err, "2 pending pods in ml with app=sg"), "%s", r.err);
    cr_expect(strstr(r.out, "\"replicas\": 1,"), "one world, one group:\n%s", r.out);
    cr_expect(strstr(r.out, "\"engine\": \"sglang\""), "%s", r.out);
    cr_expect_null(strstr(r.out, "sg-2"), "a bound pod is not pending:\n%s", r.out);
    run_result_release(&r);
    log = fake_api_log(w->api);
    cr_expect(strstr(log,
                     "GET /api/v1/pods?limit=100&fieldSelector=spec.nodeName=,status.phase=Pending,"
                     "metadata.namespace=ml&labelSelector=app=sg"),
              "%s", log);
    cr_expect_null(strstr(log, "POST"), "read-only:\n%s", log);
    free(log);
    /* -l without --pending, and --pending on a synthetic cluster, are refused */
    cr_assert_eq(
        run_topox((const char *[]){"plan", "-l", "app=sg", "--kubeconfig", w->kubeconfig, NULL},
                  NULL, &r),
        0);
    cr_expect_eq(r.status, 2, "%s", r.err);
    run_result_release(&r);
    cr_assert_eq(
        run_topox((const char *[]){"plan", "--pending", "--cluster", "example", NULL}, NULL, &r),
        0);
    cr_expect_eq(r.status, 2, "%s", r.err);
    run_result_release(&r);
#undef SG_POD
}

/* --pending on a snapshot: its Pods without a node, of -n's namespace, ordered by name with
 * numbers as numbers (sts-2 before sts-10), so that a StatefulSet of 12 pods is 6 worlds of 2
 * (--nnodes 2), never pods of different worlds side by side. */
Test(plan_live, pending_pods_of_a_snapshot_are_worlds_in_order)
{
    char path[64] = "/tmp/topox-pending-snap-XXXXXX";
    char *text = malloc(65536);
    size_t n = 0;
    struct run_result r;

    cr_assert_not_null(text);
    n += (size_t)snprintf(text + n, 65536 - n,
                          "{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[");
    for (int i = 0; i < 4; i++)
        n += (size_t)snprintf(
            text + n, 65536 - n,
            "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"n%d\",\"labels\":{"
            "\"topox.io/rack\":\"r%d\"}},\"status\":{\"allocatable\":{\"nvidia.com/gpu\":\"8\"},"
            "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}},",
            i, i / 2);
    for (int i = 11; i >= 0; i--)
        n += (size_t)snprintf(
            text + n, 65536 - n,
            "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"sts-%d\","
            "\"namespace\":\"ml\",\"labels\":{\"apps.kubernetes.io/pod-index\":\"%d\","
            "\"statefulset.kubernetes.io/pod-name\":\"sts-%d\"}},\"spec\":{\"containers\":[{"
            "\"name\":\"c\",\"image\":\"x\",\"command\":[\"python3\",\"-m\",\"sglang.launch_"
            "server\","
            "\"--tp-size\",\"8\",\"--nnodes\",\"2\"],\"resources\":{\"limits\":{"
            "\"nvidia.com/gpu\":\"4\"}}}]},\"status\":{\"phase\":\"Pending\"}}%s",
            i, i, i, i ? "," : "");
    snprintf(text + n, 65536 - n, "]}");
    write_text(path, text);
    free(text);
    cr_assert_eq(run_topox((const char *[]){"plan", "--pending", "--snapshot", path, "-n", "ml",
                                            "-o", "json", NULL},
                           NULL, &r),
                 0);
    /* 4 nodes of 8 GPUs hold 4 of the 6 worlds of 2 x 4 GPUs */
    cr_expect_eq(r.status, 3, "%s", r.err);
    cr_expect(strstr(r.out, "\"replicas\": 6,"), "%s", r.out);
    cr_expect(strstr(r.out, "\"placed\": 4,"), "%s", r.out);
    cr_expect(strstr(r.out, "\"job\": \"ml/sts-10\""), "%s", r.out);
    cr_expect_null(strstr(r.out, "\"job\": \"ml/sts-11\""), "sts-11 is sts-10's world:\n%s", r.out);
    run_result_release(&r);
    unlink(path);
}
