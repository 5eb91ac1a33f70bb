/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/objects/test_podfacts.c - pods and pod templates of real LWS/vLLM/SGLang manifests
 * -> pol_pod_facts; Node objects -> topo_node_info. */
#include <criterion/criterion.h>
#include <string.h>

#include "objects/podfacts.h"
#include "objects/yamljson.h"

static struct obj_yaml_docs docs;

static json_t *load_first(const char *path)
{
    struct tpx_err err = TPX_ERR_INIT;

    cr_assert_eq(obj_yaml_load_file(path, 1 << 20, &docs, &err), TPX_OK, "%s", err.msg);
    cr_assert_geq(docs.n, 1);
    return docs.docs[0];
}

static json_t *parse_one(const char *yaml)
{
    struct tpx_err err = TPX_ERR_INIT;

    cr_assert_eq(obj_yaml_parse(yaml, strlen(yaml), "t.yaml", &docs, &err), TPX_OK, "%s", err.msg);
    cr_assert_eq(docs.n, 1);
    return docs.docs[0];
}

static void fini(void)
{
    obj_yaml_docs_release(&docs);
}

static const json_t *lws_template(const json_t *lws, const char *which)
{
    return json_object_get(json_object_get(json_object_get(lws, "spec"), "leaderWorkerTemplate"),
                           which);
}

static const char *kv(const struct topo_kv *a, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp(a[i].key, key) == 0)
            return a[i].value;
    }
    return NULL;
}

static bool argv_has(const struct pol_pod_facts *f, const char *needle)
{
    for (size_t i = 0; i < f->nargv; i++) {
        if (strstr(f->argv[i], needle))
            return true;
    }
    return false;
}

TestSuite(obj_podfacts, .fini = fini);

Test(obj_podfacts, example_vllm_leader_template_sh_c_kept_whole)
{
    const json_t *lws = load_first(TPX_SOURCE_DIR "/manifests/examples/vllm-lws-tp8-pp2.yaml");
    struct obj_pod_facts s;
    struct tpx_err err = TPX_ERR_INIT;

    cr_assert_eq(obj_pod_facts_from_json(lws_template(lws, "leaderTemplate"), &s, &err), TPX_OK,
                 "%s", err.msg);
    cr_expect_eq(s.facts.accel, 8);
    cr_expect_str_eq(s.facts.resource, "nvidia.com/gpu");
    cr_expect_eq(s.facts.nargv, 3);
    cr_expect_str_eq(s.facts.argv[0], "sh");
    cr_expect_str_eq(s.facts.argv[1], "-c");
    cr_expect(strstr(s.facts.argv[2], "--tensor-parallel-size 8 --pipeline_parallel_size 2"));
    cr_expect_str_eq(kv(s.facts.labels, s.facts.nlabels, "role"), "leader");
    cr_expect_str_eq(kv(s.facts.annotations, s.facts.nannotations, "topox.io/num-ubatches"), "8");
    cr_expect_str_eq(kv(s.facts.annotations, s.facts.nannotations, "topox.io/model-layers"), "126");
    cr_expect_null(s.facts.name);
    obj_pod_facts_release(&s);
    obj_pod_facts_release(&s); /* twice is a no-op */
}

Test(obj_podfacts, upstream_lws_vllm_405b_worker_has_gpus_and_no_engine_flags)
{
    const json_t *lws = load_first(TPX_FIXTURES "/manifests/lws-vllm-gpu-llama405b-tp8-pp2.yaml");
    struct obj_pod_facts s;
    struct tpx_err err = TPX_ERR_INIT;

    cr_assert_eq(obj_pod_facts_from_json(lws_template(lws, "workerTemplate"), &s, &err), TPX_OK,
                 "%s", err.msg);
    cr_expect_eq(s.facts.accel, 8);
    cr_expect(!argv_has(&s.facts, "tensor-parallel-size"));
    obj_pod_facts_release(&s);
    cr_assert_eq(obj_pod_facts_from_json(lws_template(lws, "leaderTemplate"), &s, &err), TPX_OK,
                 "%s", err.msg);
    cr_expect(argv_has(&s.facts, "--tensor-parallel-size 8"));
    cr_expect(argv_has(&s.facts, "--pipeline_parallel_size 2"));
    obj_pod_facts_release(&s);
}

Test(obj_podfacts, upstream_sglang_argv_split_per_element)
{
    const json_t *lws = load_first(TPX_FIXTURES "/manifests/lws-sglang-llama8b-tp2-2nodes.yaml");
    struct obj_pod_facts s;
    struct tpx_err err = TPX_ERR_INIT;
    bool tp2 = false;

    cr_assert_eq(obj_pod_facts_from_json(lws_template(lws, "workerTemplate"), &s, &err), TPX_OK,
                 "%s", err.msg);
    cr_expect_eq(s.facts.accel, 1);
    cr_expect_str_eq(s.facts.argv[0], "python3");
    for (size_t i = 0; i + 1 < s.facts.nargv; i++)
        tp2 =
            tp2 || (strcmp(s.facts.argv[i], "--tp") == 0 && strcmp(s.facts.argv[i + 1], "2") == 0);
    cr_expect(tp2, "--tp 2 not found as two argv elements");
    obj_pod_facts_release(&s);
}

Test(obj_podfacts, cpu_only_template_requests_nothing)
{
    const json_t *lws = load_first(TPX_FIXTURES "/manifests/lws-exclusive-placement-nodepool.yaml");
    struct obj_pod_facts s;
    struct tpx_err err = TPX_ERR_INIT;

    cr_assert_eq(obj_pod_facts_from_json(lws_template(lws, "workerTemplate"), &s, &err), TPX_OK,
                 "%s", err.msg);
    cr_expect_eq(s.facts.accel, 0);
    cr_expect_null(s.facts.resource);
    obj_pod_facts_release(&s);
}

Test(obj_podfacts, pod_with_init_containers_command_and_args_and_numbers)
{
    const json_t *pod = parse_one(
        "kind: Pod\n"
        "metadata: {name: p, namespace: ns1, uid: u-1, annotations: {topox.io/model-layers: 80}}\n"
        "spec:\n"
        "  initContainers:\n"
        "  - {name: warm, resources: {limits: {amd.com/gpu: 8}}}\n"
        "  containers:\n"
        "  - name: a\n"
        "    command: [vllm, serve]\n"
        "    args: [m, --tensor-parallel-size, 4]\n"
        "    resources: {requests: {amd.com/gpu: \"2\"}, limits: {amd.com/gpu: \"2\"}}\n"
        "  - name: b\n"
        "    resources: {limits: {amd.com/gpu: 3000m}}\n");
    struct obj_pod_facts s;
    struct tpx_err err = TPX_ERR_INIT;

    cr_assert_eq(obj_pod_facts_from_json(pod, &s, &err), TPX_OK, "%s", err.msg);
    cr_expect_eq(s.facts.accel, 8, "max(2 + 3, init 8)");
    cr_expect_str_eq(s.facts.resource, "amd.com/gpu");
    cr_expect_str_eq(s.facts.name, "p");
    cr_expect_str_eq(s.facts.ns, "ns1");
    cr_expect_str_eq(s.facts.uid, "u-1");
    cr_assert_eq(s.facts.nargv, 5);
    cr_expect_str_eq(s.facts.argv[1], "serve");
    cr_expect_str_eq(s.facts.argv[4], "4", "an unquoted number becomes its text");
    cr_expect_str_eq(kv(s.facts.annotations, s.facts.nannotations, "topox.io/model-layers"), "80");
    obj_pod_facts_release(&s);
}

Test(obj_podfacts, sum_over_containers_beats_smaller_init)
{
    const json_t *pod = parse_one("spec:\n"
                                  "  initContainers: [{name: i, resources: {limits: "
                                  "{nvidia.com/gpu: 1}}}]\n"
                                  "  containers:\n"
                                  "  - {name: a, resources: {limits: {nvidia.com/gpu: 4}}}\n"
                                  "  - {name: b, resources: {limits: {nvidia.com/gpu: 4}}}\n");
    unsigned accel = 0;
    const char *res = NULL;
    struct tpx_err err = TPX_ERR_INIT;

    cr_assert_eq(obj_pod_accel(pod, NULL, &accel, &res, &err), TPX_OK, "%s", err.msg);
    cr_expect_eq(accel, 8);
    cr_expect_str_eq(res, "nvidia.com/gpu");
}

Test(obj_podfacts, bad_quantity_names_container_and_resource)
{
    const json_t *pod =
        parse_one("spec:\n  containers:\n"
                  "  - {name: main, resources: {limits: {nvidia.com/gpu: \"1.5\"}}}\n");
    struct obj_pod_facts s;
    struct tpx_err err = TPX_ERR_INIT;

    cr_assert_eq(obj_pod_facts_from_json(pod, &s, &err), TPX_EINVAL);
    cr_expect(strstr(err.msg, "container 'main'"), "%s", err.msg);
    cr_expect(strstr(err.msg, "nvidia.com/gpu"), "%s", err.msg);
    cr_expect(strstr(err.msg, "1.5"), "%s", err.msg);
    cr_expect_null(s.kv, "released on failure");
}

Test(obj_podfacts, requests_past_the_accelerator_cap_are_refused)
{
    /* 2^31 + 8 once became a negative int in the ledger and freed other pods' capacity; two
     * containers of 2^31 + 4 summed past 2^32 */
    static const char *const cases[] = {
        "spec:\n  containers:\n"
        "  - {name: main, resources: {limits: {nvidia.com/gpu: \"2147483656\"}}}\n",
        "spec:\n  containers:\n"
        "  - {name: a, resources: {limits: {nvidia.com/gpu: \"2147483652\"}}}\n"
        "  - {name: b, resources: {limits: {nvidia.com/gpu: \"2147483652\"}}}\n",
        "spec:\n  containers:\n"
        "  - {name: a, resources: {limits: {nvidia.com/gpu: 4000}}}\n"
        "  - {name: b, resources: {limits: {nvidia.com/gpu: 4000}}}\n",
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const json_t *pod = parse_one(cases[i]);
        struct tpx_err err = TPX_ERR_INIT;
        unsigned accel = 99;

        cr_expect_eq(obj_pod_accel(pod, NULL, &accel, NULL, &err), TPX_EINVAL, "case %zu", i);
        cr_expect(strstr(err.msg, "4096") && strstr(err.msg, "nvidia.com/gpu"), "case %zu: %s", i,
                  err.msg);
        obj_yaml_docs_release(&docs);
    }
}

Test(obj_podfacts, not_an_object_is_einval)
{
    const json_t *pod = parse_one("[1, 2]\n");
    struct obj_pod_facts s;
    struct tpx_err err = TPX_ERR_INIT;

    cr_expect_eq(obj_pod_facts_from_json(pod, &s, &err), TPX_EINVAL);
}

/* --- nodes -------------------------------------------------------------------------------------
 */

Test(obj_podfacts, real_gke_node_has_zone_and_no_gpu)
{
    const json_t *node =
        load_first(TPX_FIXTURES "/nodes/k8s-apimachinery-testdata-gke-node-full.yaml");
    struct topo_node_info info;
    struct topo_label_explain ex;
    struct tpx_err err = TPX_ERR_INIT;

    cr_assert_eq(obj_node_from_json(node, NULL, &info, &ex, &err), TPX_OK, "%s", err.msg);
    cr_expect_str_eq(info.name, "node-default-pool-something");
    cr_expect_str_eq(info.zone, "us-central1-b");
    cr_expect_eq(info.accel_alloc, 0);
    cr_expect_null(info.rack);
    cr_expect_null(info.domain);
    cr_expect(!info.unschedulable, "Ready is True");
    cr_expect_str_eq(ex.key[TOPO_LEVEL_ZONE], "topology.kubernetes.io/zone");
    cr_expect_null(ex.key[TOPO_LEVEL_RACK]);
}

Test(obj_podfacts, node_labels_precedence_and_readiness)
{
    static const struct {
        const char *yaml;
        const char *rack;
        const char *rack_key;
        unsigned alloc;
        bool unschedulable;
    } cases[] = {
        {"metadata: {name: n1, labels: {volcano.sh/tor: t1, topox.io/rack: r1}}\n"
         "status: {allocatable: {nvidia.com/gpu: \"8\"}, conditions: [{type: Ready, status: "
         "\"True\"}]}\n",
         "r1", "topox.io/rack", 8, false},
        {"metadata: {name: n1, labels: {volcano.sh/tor: t1}}\n"
         "status: {allocatable: {huawei.com/Ascend910: 8}}\n",
         "t1", "volcano.sh/tor", 8, false},
        {"metadata: {name: n1}\nspec: {unschedulable: true}\n"
         "status: {allocatable: {nvidia.com/gpu: \"4\"}}\n",
         NULL, NULL, 4, true},
        {"metadata: {name: n1}\n"
         "status: {allocatable: {nvidia.com/gpu: \"4\"}, conditions: [{type: Ready, status: "
         "Unknown}]}\n",
         NULL, NULL, 4, true},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct topo_node_info info;
        struct topo_label_explain ex;
        struct tpx_err err = TPX_ERR_INIT;
        const json_t *node = parse_one(cases[i].yaml);

        cr_assert_eq(obj_node_from_json(node, NULL, &info, &ex, &err), TPX_OK, "case %zu: %s", i,
                     err.msg);
        if (cases[i].rack) {
            cr_expect_str_eq(info.rack, cases[i].rack, "case %zu", i);
            cr_expect_str_eq(ex.key[TOPO_LEVEL_RACK], cases[i].rack_key, "case %zu", i);
        } else {
            cr_expect_null(info.rack, "case %zu", i);
        }
        cr_expect_eq(info.accel_alloc, cases[i].alloc, "case %zu", i);
        cr_expect_eq(info.unschedulable, cases[i].unschedulable, "case %zu", i);
        obj_yaml_docs_release(&docs);
    }
}

Test(obj_podfacts, node_errors_name_the_node)
{
    static const struct {
        const char *yaml;
        const char *want;
    } cases[] = {
        {"metadata: {labels: {a: b}}\n", "metadata.name"},
        {"metadata: {name: n1, labels: {topox.io/rack: 7}}\n", "node 'n1': label 'topox.io/rack'"},
        {"metadata: {name: n2, labels: {topox.io/interconnect: warp}}\n", "node 'n2'"},
        {"metadata: {name: n3}\nstatus: {allocatable: {nvidia.com/gpu: lots}}\n", "node 'n3'"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct topo_node_info info;
        struct tpx_err err = TPX_ERR_INIT;
        const json_t *node = parse_one(cases[i].yaml);

        cr_expect_neq(obj_node_from_json(node, NULL, &info, NULL, &err), TPX_OK, "case %zu", i);
        cr_expect(strstr(err.msg, cases[i].want), "case %zu: %s", i, err.msg);
        obj_yaml_docs_release(&docs);
    }
}

Test(obj_podfacts, container_env_in_order_valuefrom_unknown)
{
    const json_t *pod = parse_one("spec:\n"
                                  "  containers:\n"
                                  "  - name: a\n"
                                  "    env:\n"
                                  "    - {name: DP_SIZE_LOCAL, value: 8}\n"
                                  "    - {name: KEY, valueFrom: {fieldRef: {fieldPath: x}}}\n"
                                  "    - {value: no-name}\n"
                                  "  - name: b\n"
                                  "    env: [{name: TP_SIZE, value: \"1\"}]\n");
    struct obj_pod_facts s;
    struct tpx_err err = TPX_ERR_INIT;

    cr_assert_eq(obj_pod_facts_from_json(pod, &s, &err), TPX_OK, "%s", err.msg);
    cr_assert_eq(s.facts.nenv, 3);
    cr_expect_str_eq(s.facts.env[0].name, "DP_SIZE_LOCAL");
    cr_expect_str_eq(s.facts.env[0].value, "8", "a number becomes its text");
    cr_expect_str_eq(s.facts.env[1].name, "KEY");
    cr_expect_null(s.facts.env[1].value, "valueFrom is unknown here");
    cr_expect_str_eq(s.facts.env[2].name, "TP_SIZE");
    obj_pod_facts_release(&s);
}

/* A PodGroup as kubernetes v1.37.2 test/integration/scheduler_perf/podgroup/tas/templates/
 * podgroup.yaml writes it (v1beta1, gang minCount, topology key topology.kubernetes.io/rack), the
 * jobset TAS sample (v1alpha2, a key topox does not read) and a pod naming its group as that
 * benchmark's gang-pod.yaml does (spec.schedulingGroup.podGroupName, k8s.io/api core/v1). */
Test(obj_podfacts, podgroup_min_count_and_topology_key_and_the_pods_group)
{
    const json_t *tas = parse_one("apiVersion: scheduling.k8s.io/v1beta1\n"
                                  "kind: PodGroup\n"
                                  "metadata: {name: gang-3}\n"
                                  "spec:\n"
                                  "  schedulingPolicy:\n"
                                  "    gang: {minCount: 4}\n"
                                  "  schedulingConstraints:\n"
                                  "    topology:\n"
                                  "    - key: topology.kubernetes.io/rack\n");
    const json_t *js;
    unsigned min = 99;
    int level = 99;

    obj_podgroup_read(tas, NULL, &min, &level);
    cr_expect_eq(min, 4);
    cr_expect_eq(level, POL_SCOPE_RACK);
    obj_yaml_docs_release(&docs);
    js = load_first(TPX_FIXTURES "/manifests/k8s-podgroup-gang-topology-rack-jobset-tas.yaml");
    obj_podgroup_read(js, NULL, &min, &level);
    cr_expect_eq(min, 4);
    cr_expect_eq(level, -1, "topology.example.com/rack is no label topox reads");
    cr_expect_eq(obj_podgroup_key_scope(NULL, "topology.kubernetes.io/zone"), POL_SCOPE_ZONE);
    cr_expect_eq(obj_podgroup_key_scope(NULL, "nvidia.com/gpu.clique"), -1);
}

Test(obj_podfacts, pod_names_its_podgroup)
{
    const json_t *pod = parse_one("metadata: {name: test-tas-scheduling-5, namespace: ns}\n"
                                  "spec:\n"
                                  "  schedulingGroup: {podGroupName: gang-1}\n"
                                  "  containers:\n"
                                  "  - name: pause\n"
                                  "    resources: {requests: {nvidia.com/gpu: 8}}\n");
    struct obj_pod_facts s;
    struct tpx_err err = TPX_ERR_INIT;

    memset(&s, 0, sizeof(s));
    cr_assert_eq(obj_pod_facts_from_json(pod, &s, &err), TPX_OK, "%s", err.msg);
    cr_expect_str_eq(s.facts.pod_group, "gang-1");
    cr_expect_eq(s.facts.pod_group_min, 0, "the PodGroup object says the minCount");
    cr_expect_eq(s.facts.pod_group_level, -1);
    obj_pod_facts_release(&s);
}
