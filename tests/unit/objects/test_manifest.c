/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/objects/test_manifest.c - manifests -> the pods their controllers create: every kind,
 * the labels LWS/JobSet/Job put on pods, group boundaries, leader parallelism shared with workers,
 * engine facts for --record, and bad input; kinds told apart by API group and kind, the generic
 * expansion of kinds topox does not know, and StormService, RayClusterFleet, RayService,
 * NIMService and RoleBasedGroup roleTemplates on their operators' public manifests. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "objects/manifest.h"

static struct obj_manifest m;

static void init(void)
{
    obj_manifest_init(&m);
}

static void fini(void)
{
    obj_manifest_release(&m);
}

TestSuite(obj_manifest, .init = init, .fini = fini);

static void load(const char *path)
{
    struct tpx_err err = TPX_ERR_INIT;

    cr_assert_eq(obj_manifest_add_file(&m, path, &err), TPX_OK, "%s", err.msg);
    cr_assert_eq(obj_manifest_finish(&m, &err), TPX_OK, "%s", err.msg);
}

static void load_yaml(const char *y)
{
    struct obj_yaml_docs d;
    struct tpx_err err = TPX_ERR_INIT;

    cr_assert_eq(obj_yaml_parse(y, strlen(y), "p.yaml", &d, &err), TPX_OK, "%s", err.msg);
    cr_assert_eq(obj_manifest_add_docs(&m, &d, "p.yaml", &err), TPX_OK, "%s", err.msg);
    cr_assert_eq(obj_manifest_finish(&m, &err), TPX_OK, "%s", err.msg);
}

static const char *label(size_t pod, const char *key)
{
    const struct pol_pod_facts *f = obj_manifest_pod_facts(&m, pod);

    for (size_t i = 0; i < f->nlabels; i++) {
        if (strcmp(f->labels[i].key, key) == 0)
            return f->labels[i].value;
    }
    return NULL;
}

static const char *annotation(size_t pod, const char *key)
{
    const struct pol_pod_facts *f = obj_manifest_pod_facts(&m, pod);

    for (size_t i = 0; i < f->nannotations; i++) {
        if (strcmp(f->annotations[i].key, key) == 0)
            return f->annotations[i].value;
    }
    return NULL;
}

static size_t replica_size(size_t r)
{
    return m.replica_first_pod[r + 1] - m.replica_first_pod[r];
}

Test(obj_manifest, example_lws_four_groups_of_leader_and_worker)
{
    load(TPX_SOURCE_DIR "/manifests/examples/vllm-lws-tp8-pp2.yaml");
    cr_assert_eq(m.njobs, 1);
    cr_expect_str_eq(m.jobs[0].name, "llm/vllm");
    cr_expect_str_eq(m.jobs[0].kind, "LeaderWorkerSet");
    cr_assert_eq(m.nreplicas, 4);
    cr_assert_eq(m.npods, 8);
    cr_expect_str_eq(m.names[0], "vllm-0");
    cr_expect_str_eq(m.names[1], "vllm-0-1");
    cr_expect_str_eq(m.names[7], "vllm-3-1");
    cr_expect_str_eq(label(1, "leaderworkerset.sigs.k8s.io/name"), "vllm");
    cr_expect_str_eq(label(1, "leaderworkerset.sigs.k8s.io/group-index"), "0");
    cr_expect_str_eq(label(1, "leaderworkerset.sigs.k8s.io/worker-index"), "1");
    cr_expect_str_eq(label(0, "role"), "leader");
    cr_expect_null(label(1, "role"), "workers use the worker template");
    cr_expect_str_eq(annotation(1, "leaderworkerset.sigs.k8s.io/size"), "2");
    cr_expect_str_eq(label(0, "leaderworkerset.sigs.k8s.io/group-key"),
                     label(1, "leaderworkerset.sigs.k8s.io/group-key"));
    cr_expect_str_neq(label(0, "leaderworkerset.sigs.k8s.io/group-key"),
                      label(2, "leaderworkerset.sigs.k8s.io/group-key"));
    cr_expect_eq(m.pol_jobs[0].nreplicas, 4);
    cr_expect_eq(m.pol_jobs[0].replicas[3].npods, 2);
    cr_expect_str_eq(m.pol_jobs[0].replicas[3].pod_names[1], "vllm-3-1");
    /* the leader's flags reach the worker, whose own command says nothing about parallelism */
    for (size_t i = 0; i < m.npods; i++) {
        cr_expect_eq(m.wl[i].tp, 8, "pod %zu", i);
        cr_expect_eq(m.wl[i].pp, 2, "pod %zu", i);
        cr_expect_eq(m.wl[i].num_ubatches, 8, "pod %zu", i);
        cr_expect_eq(m.wl[i].model_layers, 126, "pod %zu", i);
    }
    cr_expect_eq(m.wl[1].pod_index, 1);
    cr_expect_eq(m.wl[0].group_size, 2);
    cr_expect_str_eq(m.wl[0].group, m.wl[1].group);
}

Test(obj_manifest, upstream_sglang_lws_skips_the_service)
{
    load(TPX_FIXTURES "/manifests/lws-sglang-llama8b-tp2-2nodes.yaml");
    cr_expect_eq(m.nreplicas, 2);
    cr_expect_eq(m.npods, 4);
    cr_expect_eq(m.wl[0].tp, 2);
    cr_assert_eq(m.nnotes, 1);
    cr_expect(strstr(m.notes[0], "skipped Service 'sglang-leader'"), "%s", m.notes[0]);
    cr_expect(strstr(m.notes[0], "#2"), "names the document: %s", m.notes[0]);
}

Test(obj_manifest, upstream_jobset_and_cpu_lws)
{
    struct tpx_err err = TPX_ERR_INIT;

    cr_assert_eq(obj_manifest_add_file(
                     &m, TPX_FIXTURES "/manifests/jobset-exclusive-placement-nodepool.yaml", &err),
                 TPX_OK, "%s", err.msg);
    cr_assert_eq(obj_manifest_add_file(
                     &m, TPX_FIXTURES "/manifests/lws-exclusive-placement-nodepool.yaml", &err),
                 TPX_OK, "%s", err.msg);
    cr_assert_eq(obj_manifest_finish(&m, &err), TPX_OK, "%s", err.msg);
    cr_expect_eq(m.njobs, 2);
    cr_expect_str_eq(m.jobs[0].kind, "JobSet");
    cr_expect_str_eq(m.jobs[1].kind, "LeaderWorkerSet");
    cr_expect(!m.wl[0].has_intent, "CPU pods carry no topology intent");
}

Test(obj_manifest, every_kind_in_one_stream)
{
    static const struct {
        const char *kind;
        const char *name;
        size_t nreplicas;
        size_t pods_per_replica;
    } want[] = {
        {"Deployment", "svc/embed", 3, 1},      {"Pod", "svc/solo", 1, 1},
        {"StatefulSet", "default/pairs", 2, 2}, {"Job", "ml/train", 4, 1},
        {"Job", "default/batch", 2, 1},         {"JobSet", "ml/js", 2, 2},
    };
    size_t n = sizeof(want) / sizeof(want[0]);

    /* ml/train is an Indexed Job: nothing on its pods says how many there are, so serve reads
     * each as a group of its own, and plan's replicas are the groups */
    load(TPX_FIXTURES "/plan/kinds.yaml");
    cr_assert_eq(m.njobs, n);
    for (size_t j = 0; j < n; j++) {
        cr_expect_str_eq(m.jobs[j].kind, want[j].kind, "job %zu", j);
        cr_expect_str_eq(m.jobs[j].name, want[j].name, "job %zu", j);
        cr_expect_eq(m.jobs[j].nreplicas, want[j].nreplicas, "job %zu", j);
        cr_expect_eq(replica_size(m.jobs[j].first_replica), want[j].pods_per_replica, "job %zu", j);
    }
    cr_expect_eq(m.npods, 3 + 1 + 4 + 4 + 2 + 4);
    cr_assert_eq(m.nnotes, 1);
    cr_expect(strstr(m.notes[0], "ConfigMap 'settings'"), "%s", m.notes[0]);
}

Test(obj_manifest, controller_labels_per_kind)
{
    size_t p;

    load(TPX_FIXTURES "/plan/kinds.yaml");
    /* Deployment: its own groups of one; merge key carried the container into the Pod */
    cr_expect_str_eq(m.names[0], "embed-0");
    cr_expect_str_eq(label(0, "app"), "embed");
    cr_expect_eq(m.wl[3].tp, 2, "the Pod got --tensor-parallel-size=2 via <<: *small");
    cr_expect_eq(m.wl[3].accel_per_pod, 2);
    /* StatefulSet with topox.io/group-size 2: two groups of two */
    p = m.replica_first_pod[m.jobs[2].first_replica + 1];
    cr_expect_str_eq(m.names[p], "pairs-2");
    cr_expect_str_eq(annotation(p, "topox.io/group"), "default/pairs-1");
    cr_expect_str_eq(annotation(p + 1, "topox.io/pod-index"), "1");
    cr_expect_eq(m.wl[p + 1].pod_index, 1);
    /* Indexed Job: completion indexes */
    p = m.replica_first_pod[m.jobs[3].first_replica];
    cr_expect_str_eq(m.names[p + 3], "train-3");
    cr_expect_str_eq(label(p + 3, "batch.kubernetes.io/job-completion-index"), "3");
    cr_expect_str_eq(label(p, "batch.kubernetes.io/job-name"), "train");
    /* JobSet: job-key shared inside a child job, different across them */
    p = m.replica_first_pod[m.jobs[5].first_replica];
    cr_expect_str_eq(m.names[p + 2], "js-workers-1-0");
    cr_expect_str_eq(label(p, "jobset.sigs.k8s.io/job-key"),
                     label(p + 1, "jobset.sigs.k8s.io/job-key"));
    cr_expect_str_neq(label(p, "jobset.sigs.k8s.io/job-key"),
                      label(p + 2, "jobset.sigs.k8s.io/job-key"));
    cr_expect_str_eq(label(p + 3, "jobset.sigs.k8s.io/job-index"), "1");
    cr_expect_str_eq(label(p + 3, "batch.kubernetes.io/job-completion-index"), "1");
}

Test(obj_manifest, engine_info_for_records)
{
    struct wl_engine_info ei;

    load(TPX_FIXTURES "/plan/kinds.yaml");
    obj_manifest_engine_info(&m, 0, &ei);
    cr_expect_str_eq(ei.dtype, "bfloat16");
    cr_expect_str_eq(ei.quantization, "");
    obj_manifest_release(&m);
    obj_manifest_init(&m);
    load_yaml("kind: Pod\nmetadata: {name: p, annotations: {topox.io/output-len: \"256\"}}\n"
              "spec:\n  containers:\n  - name: c\n    command: [sh, -c, \"vllm serve m "
              "--max_model_len=8192 --quantization fp8 --max-num-seqs 64; echo done\"]\n");
    obj_manifest_engine_info(&m, 0, &ei);
    cr_expect_eq(ei.max_model_len, 8192);
    cr_expect_str_eq(ei.quantization, "fp8");
    cr_expect_eq(ei.max_num_seqs, 64);
    cr_expect_eq(ei.output_len, 256);
}

/* The engine info is read with the same tokenizer as the parallelism (common/cmdline.h). The old
 * reader here got three of these wrong: a flag without a value (--enforce-eager) took the next flag
 * for its value, quotes stayed in values ("\"half\""), and a quote closing a nested script spoiled
 * the number before it ("64'"). */
Test(obj_manifest, engine_info_reads_argv_as_the_shell_does)
{
    struct wl_engine_info ei;

    load_yaml("kind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n"
              "    command: [sh, -c]\n"
              "    args: [\"exec bash -c 'vllm serve m --enforce-eager --max-model-len 4096 "
              "--dtype \\\"half\\\" -q fp8 --max-num-seqs 64' 2>&1\"]\n");
    obj_manifest_engine_info(&m, 0, &ei);
    cr_expect_eq(ei.max_model_len, 4096);
    cr_expect_str_eq(ei.dtype, "half");
    cr_expect_str_eq(ei.quantization, "fp8");
    cr_expect_eq(ei.max_num_seqs, 64);
}

Test(obj_manifest, bad_input_names_the_file_and_line)
{
    static const struct {
        const char *yaml;
        enum tpx_code code;
        const char *want;
    } cases[] = {
        {"kind: Deployment\nmetadata: {name: d}\nspec: {replicas: -1, template: {spec: {}}}\n",
         TPX_EINVAL, "bad.yaml:3: Deployment 'd': replicas: -1 is out of range"},
        {"kind: LeaderWorkerSet\nmetadata: {name: l}\nspec: {replicas: 2}\n", TPX_EINVAL,
         "bad.yaml:3: LeaderWorkerSet 'l': spec.leaderWorkerTemplate"},
        {"kind: LeaderWorkerSet\nmetadata: {name: big}\nspec: {replicas: 1000, "
         "leaderWorkerTemplate: {size: 1000, workerTemplate: {spec: {}}}}\n",
         TPX_ETOOBIG, "more than"},
        /* issue 21, item 9: 99,996 pods cost plan 1.65 GB; refused after the first slice */
        {"kind: DisaggregatedSet\nmetadata: {name: ds}\nspec:\n  slices: 24999\n  roles:\n"
         "  - {name: r, spec: {replicas: 2, leaderWorkerTemplate: {size: 2, workerTemplate: "
         "{spec: {}}}}}\n",
         TPX_ETOOBIG,
         "bad.yaml:4: DisaggregatedSet 'ds': spec.slices: 24999 slices of 4 pods are more than the "
         "40000 pods one plan expands"},
        {"kind: JobSet\nmetadata: {name: j}\nspec: {}\n", TPX_EINVAL,
         "bad.yaml:1: JobSet 'j': spec.replicatedJobs"},
        {"kind: Deployment\nmetadata: {name: d}\nspec: {replicas: 1}\n", TPX_EINVAL,
         "bad.yaml:1: Deployment 'd': pod template"},
        {"a: [\n", TPX_EPARSE, "bad.yaml:"},
        /* a multi-document file: the line is the stream's, pointing at the replicas value */
        {"kind: Service\nmetadata: {name: s}\n---\nkind: StatefulSet\nmetadata:\n  name: st\n"
         "spec:\n  replicas: many\n  template: {spec: {}}\n",
         TPX_EINVAL, "bad.yaml:8: StatefulSet 'st': replicas: 'many' is not a whole number"},
        {"kind: LeaderWorkerSet\nmetadata: {name: z}\nspec:\n  leaderWorkerTemplate:\n"
         "    size: 0\n    workerTemplate: {spec: {}}\n",
         TPX_EINVAL, "bad.yaml:5: LeaderWorkerSet 'z': leaderWorkerTemplate.size"},
        {"kind: List\nitems:\n- kind: Job\n  metadata: {name: a}\n  spec: {template: {spec: {}}}\n"
         "- kind: Job\n  metadata: {name: b}\n  spec:\n    parallelism: x\n",
         TPX_EINVAL, "bad.yaml:9: Job 'b': parallelism"},
        {"kind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: a\n  - name: b\n"
         "    resources: {limits: {nvidia.com/gpu: lots}}\n",
         TPX_EINVAL, "bad.yaml:6: Pod 'p': container 'b'"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct obj_yaml_docs d = {0};
        struct tpx_err err = TPX_ERR_INIT;
        enum tpx_code rc =
            obj_yaml_parse(cases[i].yaml, strlen(cases[i].yaml), "bad.yaml", &d, &err);
        if (rc == TPX_OK)
            rc = obj_manifest_add_docs(&m, &d, "bad.yaml", &err);
        cr_expect_eq(rc, cases[i].code, "case %zu: %s", i, err.msg);
        cr_expect(strstr(err.msg, cases[i].want), "case %zu: %s", i, err.msg);
        obj_manifest_release(&m);
        obj_manifest_init(&m);
    }
}

Test(obj_manifest, nothing_to_place_is_an_error)
{
    struct obj_yaml_docs d;
    struct tpx_err err = TPX_ERR_INIT;
    static const char y[] = "kind: Service\nmetadata: {name: s}\n";

    cr_assert_eq(obj_yaml_parse(y, strlen(y), "s.yaml", &d, &err), TPX_OK);
    cr_assert_eq(obj_manifest_add_docs(&m, &d, "s.yaml", &err), TPX_OK);
    cr_expect_eq(obj_manifest_finish(&m, &err), TPX_EINVAL);
    cr_expect(strstr(err.msg, "no pods to place"), "%s", err.msg);
}

static bool has_note(const char *needle);

/* Issue 19 item 1: "no pods to place" is never said of an object that asks for accelerators. A
 * KServe ClusterServingRuntime (for the InferenceServices that name it) alone makes no pods; the
 * error says why, and the note names it and what it is for. */
Test(obj_manifest, a_template_asking_for_gpus_alone_is_not_no_pods_to_place)
{
    struct obj_yaml_docs d;
    struct tpx_err err = TPX_ERR_INIT;
    static const char y[] = "apiVersion: serving.kserve.io/v1alpha1\nkind: ClusterServingRuntime\n"
                            "metadata: {name: hf-multinode}\n"
                            "spec:\n  containers:\n  - name: kserve-container\n"
                            "    resources: {limits: {nvidia.com/gpu: 8}}\n";

    cr_assert_eq(obj_yaml_parse(y, strlen(y), "rt.yaml", &d, &err), TPX_OK);
    cr_assert_eq(obj_manifest_add_docs(&m, &d, "rt.yaml", &err), TPX_OK, "%s", err.msg);
    cr_expect_eq(obj_manifest_finish(&m, &err), TPX_EINVAL);
    cr_expect_null(strstr(err.msg, "no pods to place"), "%s", err.msg);
    cr_expect(strstr(err.msg, "templates for other objects"), "%s", err.msg);
    /* nothing here names it: not called a template of no pods (issue 31, item 5) */
    cr_expect(has_note("ClusterServingRuntime 'hf-multinode' defines accelerator pods for the "
                       "objects that name it, and none in this manifest does"));
}

/* Errors pol_workload_infer() finds after expansion, in a multi-document JSON or YAML stream. */
static void expect_finish_error(const char *y, const char *want)
{
    struct obj_yaml_docs d;
    struct tpx_err err = TPX_ERR_INIT;

    cr_assert_eq(obj_yaml_parse(y, strlen(y), "f.yaml", &d, &err), TPX_OK, "%s", err.msg);
    cr_assert_eq(obj_manifest_add_docs(&m, &d, "f.yaml", &err), TPX_OK, "%s", err.msg);
    cr_expect_eq(obj_manifest_finish(&m, &err), TPX_EINVAL, "%s", err.msg);
    cr_expect(strncmp(err.msg, want, strlen(want)) == 0, "got  %s\nwant %s...", err.msg, want);
    cr_expect_null(strchr(err.msg, '\n'), "one line: %s", err.msg);
    obj_manifest_release(&m);
    obj_manifest_init(&m);
}

#define GPU_POD "spec:\n  containers:\n  - name: c\n    resources: {limits: {nvidia.com/gpu: 8}}\n"

Test(obj_manifest, workload_errors_name_the_annotation_line)
{
    expect_finish_error("kind: Pod\nmetadata: {name: ok}\n" GPU_POD "---\n"
                        "kind: Deployment\nmetadata: {name: d}\nspec:\n  replicas: 1\n"
                        "  template:\n    metadata:\n      annotations:\n"
                        "        topox.io/input-len: \"10\"\n"
                        "        topox.io/tensor-parallel-size: \"abc\"\n"
                        "    spec:\n      containers:\n      - name: c\n",
                        "f.yaml:16: Deployment 'default/d': pod 'd-0': annotation "
                        "'topox.io/tensor-parallel-size'");
}

Test(obj_manifest, workload_errors_name_the_flag_line)
{
    /* the element holding the flag, written with underscores */
    expect_finish_error("kind: Pod\nmetadata: {name: p}\n" GPU_POD
                        "    command: [python3, -m, vllm.entrypoints.openai.api_server]\n"
                        "    args:\n    - --model=m\n    - --tensor_parallel_size\n    - abc\n",
                        "f.yaml:10: Pod 'default/p': pod 'p': flag '--tensor-parallel-size'");
    /* JSON input, and a flag inside a `sh -c` script */
    expect_finish_error("{\"kind\": \"Pod\", \"metadata\": {\"name\": \"j\"},\n"
                        " \"spec\": {\"containers\": [{\"name\": \"c\",\n"
                        "   \"resources\": {\"limits\": {\"nvidia.com/gpu\": 8}},\n"
                        "   \"command\": [\"sh\", \"-c\",\n"
                        "     \"vllm serve m --pipeline-parallel-size=two\"]}]}}\n",
                        "f.yaml:5: Pod 'default/j': pod 'j': flag '--pipeline-parallel-size'");
    /* the element that is the flag, not one that only contains its name (--tp-size holds
     * "-tp"): the old substring search named line 9 */
    expect_finish_error("kind: Pod\nmetadata: {name: s}\n" GPU_POD "    command: [vllm, serve, m]\n"
                        "    args:\n    - --tp-size=2\n    - -tp\n    - abc\n",
                        "f.yaml:10: Pod 'default/s': pod 's': flag '-tp'");
}

Test(obj_manifest, workload_errors_in_flow_annotations_and_lists)
{
    expect_finish_error("kind: Deployment\nmetadata: {name: d}\nspec:\n  template:\n"
                        "    metadata:\n      annotations: {topox.io/placement: sometimes}\n"
                        "    spec:\n      containers:\n      - name: c\n"
                        "        resources: {limits: {nvidia.com/gpu: 8}}\n",
                        "f.yaml:6: Deployment 'default/d': pod 'd-0': annotation "
                        "'topox.io/placement'");
    /* an LWS leader template inside a List: the leader's own annotation */
    expect_finish_error("kind: List\nitems:\n- kind: LeaderWorkerSet\n  metadata: {name: l}\n"
                        "  spec:\n    leaderWorkerTemplate:\n      size: 2\n"
                        "      leaderTemplate:\n        metadata:\n          annotations:\n"
                        "            topox.io/pipeline-scope: galaxy\n"
                        "        "
                        "spec: {containers: [{name: c, resources: {limits: "
                        "{nvidia.com/gpu: 8}}}]}\n"
                        "      workerTemplate:\n"
                        "        spec: {containers: [{name: c, resources: {limits: "
                        "{nvidia.com/gpu: 8}}}]}\n",
                        "f.yaml:11: LeaderWorkerSet 'default/l': pod 'l-0': annotation "
                        "'topox.io/pipeline-scope'");
}

static size_t pod_named(const char *name)
{
    for (size_t i = 0; i < m.npods; i++) {
        if (strcmp(m.names[i], name) == 0)
            return i;
    }
    cr_assert_fail("no pod '%s'", name);
    return 0;
}

/* The value of env var name in pod i's first container that sets it; "(unknown)" for valueFrom. */
static const char *env(size_t pod, const char *name)
{
    size_t n;
    const struct tpx_env_var *e = obj_manifest_pod_env(&m, pod, &n);

    for (size_t i = 0; i < n; i++) {
        if (strcmp(e[i].name, name) == 0)
            return e[i].value ? e[i].value : "(unknown)";
    }
    return NULL;
}

static bool has_note(const char *needle)
{
    for (size_t i = 0; i < m.nnotes; i++) {
        if (strstr(m.notes[i], needle))
            return true;
    }
    return false;
}

static bool argv_has(size_t pod, const char *needle)
{
    const struct pol_pod_facts *f = obj_manifest_pod_facts(&m, pod);

    for (size_t i = 0; i < f->nargv; i++) {
        if (strstr(f->argv[i], needle))
            return true;
    }
    return false;
}

Test(obj_manifest, lws_env_in_front_of_every_container_and_subgroups)
{
    load_yaml("apiVersion: leaderworkerset.x-k8s.io/v1\n"
              "kind: LeaderWorkerSet\n"
              "metadata: {name: wide, namespace: llm}\n"
              "spec:\n"
              "  replicas: 1\n"
              "  leaderWorkerTemplate:\n"
              "    size: 5\n"
              "    subGroupPolicy: {subGroupPolicyType: LeaderExcluded, subGroupSize: 2}\n"
              "    workerTemplate:\n"
              "      spec:\n"
              "        containers:\n"
              "        - name: a\n"
              "          env:\n"
              "          - {name: LWS_GROUP_SIZE, value: '99'}\n"
              "          - {name: DP_SIZE_LOCAL, value: '8'}\n"
              "          - name: POD_IP\n"
              "            valueFrom: {fieldRef: {fieldPath: status.podIP}}\n"
              "        - name: b\n");
    cr_assert_eq(m.npods, 5);
    cr_assert_eq(m.nreplicas, 1);
    /* pod_utils.go addEnvVarsIfNotExists: the three in front, the user's LWS_GROUP_SIZE gone */
    size_t n;
    const struct tpx_env_var *e = obj_manifest_pod_env(&m, 3, &n);
    cr_assert_eq(n, 8); /* a: 3 + DP_SIZE_LOCAL + POD_IP; b: 3 */
    cr_expect_str_eq(e[0].name, "LWS_LEADER_ADDRESS");
    cr_expect_str_eq(e[0].value, "wide-0.wide.llm");
    cr_expect_str_eq(e[1].name, "LWS_GROUP_SIZE");
    cr_expect_str_eq(e[1].value, "5");
    cr_expect_str_eq(e[2].name, "LWS_WORKER_INDEX");
    cr_expect_str_eq(e[2].value, "3");
    cr_expect_str_eq(e[3].name, "DP_SIZE_LOCAL");
    cr_expect_null(e[4].value); /* valueFrom */
    cr_expect_str_eq(e[5].name, "LWS_LEADER_ADDRESS");
    /* LeaderExcluded: the leader is in no subgroup; workers 1,2 -> 0 and 3,4 -> 1 */
    cr_expect_null(label(0, "leaderworkerset.sigs.k8s.io/subgroup-index"));
    cr_expect_str_eq(annotation(0, "leaderworkerset.sigs.k8s.io/subgroup-policy-type"),
                     "LeaderExcluded");
    cr_expect_str_eq(label(1, "leaderworkerset.sigs.k8s.io/subgroup-index"), "0");
    cr_expect_str_eq(label(2, "leaderworkerset.sigs.k8s.io/subgroup-index"), "0");
    cr_expect_str_eq(label(3, "leaderworkerset.sigs.k8s.io/subgroup-index"), "1");
    cr_expect_str_eq(label(4, "leaderworkerset.sigs.k8s.io/subgroup-index"), "1");
    cr_expect_str_eq(label(3, "leaderworkerset.sigs.k8s.io/subgroup-key"),
                     label(4, "leaderworkerset.sigs.k8s.io/subgroup-key"));
    cr_expect_str_neq(label(2, "leaderworkerset.sigs.k8s.io/subgroup-key"),
                      label(3, "leaderworkerset.sigs.k8s.io/subgroup-key"));
    cr_expect_str_eq(annotation(4, "leaderworkerset.sigs.k8s.io/subgroup-size"), "2");
}

Test(obj_manifest, lws_subgroups_with_the_leader_and_per_replica_subdomain)
{
    load_yaml("kind: LeaderWorkerSet\n"
              "metadata: {name: s}\n"
              "spec:\n"
              "  networkConfig: {subdomainPolicy: UniquePerReplica}\n"
              "  replicas: 2\n"
              "  leaderWorkerTemplate:\n"
              "    size: 4\n"
              "    subGroupPolicy: {subGroupSize: 2}\n"
              "    workerTemplate: {spec: {containers: [{name: a}]}}\n");
    cr_assert_eq(m.npods, 8);
    /* size divides by 2: (0,1) (2,3) */
    cr_expect_str_eq(label(0, "leaderworkerset.sigs.k8s.io/subgroup-index"), "0");
    cr_expect_str_eq(label(1, "leaderworkerset.sigs.k8s.io/subgroup-index"), "0");
    cr_expect_str_eq(label(2, "leaderworkerset.sigs.k8s.io/subgroup-index"), "1");
    cr_expect_str_eq(annotation(0, "leaderworkerset.sigs.k8s.io/subgroup-policy-type"),
                     "LeaderWorker");
    cr_expect_str_eq(env(5, "LWS_LEADER_ADDRESS"), "s-1.s-1.default");
    cr_expect_str_eq(env(5, "LWS_WORKER_INDEX"), "1");
}

Test(obj_manifest, upstream_wide_ep_lws_gets_the_lws_env)
{
    load(TPX_SOURCE_DIR
         "/tests/fixtures/manifests/llm-d-wide-ep-lws-prefill-vllm-deepseek-r1-dp16-ep.yaml");
    cr_assert_eq(m.npods, 2);
    cr_expect_str_eq(env(1, "LWS_GROUP_SIZE"), "2");
    cr_expect_str_eq(env(1, "LWS_WORKER_INDEX"), "1");
    cr_expect_str_eq(env(1, "DP_SIZE_LOCAL"), "8");
    cr_expect_str_eq(env(1, "TP_SIZE"), "1");
}

Test(obj_manifest, upstream_disaggregatedset_slices_of_role_lwss)
{
    load(TPX_SOURCE_DIR
         "/tests/fixtures/manifests/lws-disaggregatedset-sample-prefill-decode.yaml");
    cr_assert_eq(m.njobs, 1);
    cr_expect_str_eq(m.jobs[0].kind, "DisaggregatedSet");
    /* 2 slices x (prefill, decode) x 2 replicas of an LWS of size 1 */
    cr_assert_eq(m.nreplicas, 8);
    cr_assert_eq(m.npods, 8);
    const char *lws = label(0, "leaderworkerset.sigs.k8s.io/name");
    cr_assert_not_null(lws);
    cr_expect(strncmp(lws, "disaggregatedset-sample-0-", 26) == 0, "%s", lws);
    cr_expect(strcmp(lws + strlen(lws) - 8, "-prefill") == 0, "%s", lws);
    cr_expect_str_eq(label(0, "disaggregatedset.x-k8s.io/role"), "prefill");
    cr_expect_str_eq(label(0, "disaggregatedset.x-k8s.io/slice"), "0");
    cr_expect_str_eq(label(0, "disaggregatedset.x-k8s.io/name"), "disaggregatedset-sample");
    cr_expect_str_eq(label(0, "app"), "disaggregatedset-sample-0-prefill");
    cr_expect_str_eq(label(0, "role"), "prefill");
    cr_expect_str_eq(label(2, "disaggregatedset.x-k8s.io/role"), "decode");
    cr_expect_str_eq(label(4, "disaggregatedset.x-k8s.io/slice"), "1");
    cr_expect_str_eq(label(0, "disaggregatedset.x-k8s.io/revision"),
                     label(7, "disaggregatedset.x-k8s.io/revision"));
    cr_expect_str_eq(env(1, "LWS_GROUP_SIZE"), "1");
}

Test(obj_manifest, upstream_dynamo_sglang_multinode_is_an_lws_of_two_4gpu_pods)
{
    load(TPX_SOURCE_DIR
         "/tests/fixtures/manifests/dynamo-dgd-sglang-disagg-multinode-tp8-2x4gpu.yaml");
    cr_assert_eq(m.njobs, 1);
    cr_expect_str_eq(m.jobs[0].kind, "DynamoGraphDeployment");
    cr_assert_eq(m.npods, 5); /* Frontend + 2 decode + 2 prefill */
    cr_assert_eq(m.nreplicas, 3);
    size_t fe = pod_named("sglang-disagg-multinode-frontend-0");
    size_t l = pod_named("sglang-disagg-multinode-prefill-0");
    size_t w = pod_named("sglang-disagg-multinode-prefill-0-1");
    cr_expect_eq(m.wl[fe].accel_per_pod, 0);
    cr_expect_eq(m.wl[l].accel_per_pod, 4);
    cr_expect_eq(m.wl[w].accel_per_pod, 4);
    cr_expect_eq(m.wl[l].tp, 8);
    cr_expect_eq(m.wl[w].tp, 8);
    cr_expect_eq(m.wl[l].group_size, 2);
    cr_expect_str_eq(m.wl[l].group, m.wl[w].group);
    cr_expect_eq(m.wl[w].pod_index, 1);
    /* backend_sglang.go: the multinode flags appended to the python args */
    cr_expect(argv_has(l, "$(LWS_LEADER_ADDRESS):29500"));
    cr_expect(argv_has(w, "$(LWS_WORKER_INDEX)"));
    cr_expect_str_eq(env(w, "LWS_WORKER_INDEX"), "1");
    cr_expect_str_eq(env(w, "GLOO_SOCKET_IFNAME"), "eth0");
    cr_expect_str_eq(env(w, "HF_TOKEN"), "(unknown)");
    cr_expect_str_eq(label(l, "nvidia.com/dynamo-component"), "prefill");
}

Test(obj_manifest, upstream_dynamo_trtllm_reads_the_engine_args_configmap)
{
    load(TPX_SOURCE_DIR
         "/tests/fixtures/manifests/dynamo-dgd-trtllm-disagg-multinode-tp8-2x4gpu.yaml");
    cr_assert_eq(m.npods, 5);
    size_t l = pod_named("trtllm-disagg-tp8-decode-0");
    size_t w = pod_named("trtllm-disagg-tp8-decode-0-1");
    /* the ConfigMap's key, mounted at /workspace, is a file of the pod; the engine's table reads
     * it where --extra-engine-args names it (workload/engines.c), no annotation is made */
    cr_expect_null(annotation(l, "topox.io/tensor-parallel-size"));
    cr_expect_eq(obj_manifest_pod_facts(&m, l)->nconfigs, 2); /* prefill.yaml, decode.yaml */
    cr_expect(strstr(m.wl[l].layout.read, "--extra-engine-args /workspace/decode.yaml"), "%s",
              m.wl[l].layout.read);
    cr_expect_eq(m.wl[l].layout.origin[POL_SIZE_TP].src, POL_SRC_CONFIG);
    cr_expect_str_eq(m.wl[l].layout.origin[POL_SIZE_TP].what, "tensor_parallel_size");
    cr_expect_str_eq(m.wl[l].layout.origin[POL_SIZE_TP].via, "--extra-engine-args");
    cr_expect_eq(m.wl[l].layout.ep, 1);
    cr_expect(m.wl[l].layout.certain, "%s", m.wl[l].layout.why);
    cr_expect_eq(m.wl[l].tp, 8);
    cr_expect_eq(m.wl[w].tp, 8); /* shared from the leader */
    cr_expect_eq(m.wl[l].accel_per_pod, 4);
    /* backend_trtllm.go: mpirun over 2 x 4 GPUs on the leader, sshd on the worker */
    cr_expect(argv_has(
        l, "mpirun --oversubscribe -n 8 -H ${LWS_LEADER_ADDRESS},${LWS_WORKER_1_ADDRESS}"));
    cr_expect(argv_has(l, "trtllm-llmapi-launch python3 -m dynamo.trtllm --model-path "
                          "Qwen/Qwen3-0.6B"));
    cr_expect_str_eq(m.wl[l].layout.engine, "dynamo-trtllm"); /* named by what it launches */
    cr_expect(argv_has(w, "/usr/sbin/sshd"));
    cr_expect_str_eq(env(w, "OMPI_MCA_orte_keep_fqdn_hostnames"), "1");
    cr_expect_str_eq(env(w, "OMPI_ALLOW_RUN_AS_ROOT"), "1");
}

Test(obj_manifest, upstream_rbg_router_and_leader_worker_instances_with_rbg_env)
{
    load(TPX_SOURCE_DIR
         "/tests/fixtures/manifests/rbg-rolebasedgroup-sglang-pd-disagg-leader-worker-tp.yaml");
    cr_assert_eq(m.njobs, 1);
    cr_expect_str_eq(m.jobs[0].kind, "RoleBasedGroup");
    /* router 1, prefill 2 x 4, decode 4 x 2 */
    cr_assert_eq(m.npods, 17);
    cr_assert_eq(m.nreplicas, 7);
    size_t rt = pod_named("pd-disagg-lws-router-0");
    size_t l = pod_named("pd-disagg-lws-prefill-1-0");
    size_t w = pod_named("pd-disagg-lws-prefill-1-3");
    cr_expect_str_eq(env(rt, "RBG_ROLE_NAME"), "router");
    cr_expect_null(env(rt, "RBG_LWP_GROUP_SIZE"));
    cr_expect_str_eq(label(l, "role"), "leader"); /* leaderTemplatePatch */
    cr_expect_str_eq(label(w, "role"), "worker");
    cr_expect_str_eq(label(w, "app"), "llm-inference-tp");
    cr_expect_str_eq(label(w, "rbg.workloads.x-k8s.io/role-instance-name"),
                     "pd-disagg-lws-prefill-1");
    cr_expect_str_eq(label(w, "rbg.workloads.x-k8s.io/component-index"), "3");
    /* component-id counts the workers from 0 (RBG InitComponentPodLabels), and the env names it */
    cr_expect_str_eq(label(w, "rbg.workloads.x-k8s.io/component-id"), "2");
    cr_expect_str_eq(env(w, "RBG_COMPONENT_INDEX"), "2");
    cr_expect_str_eq(label(l, "rbg.workloads.x-k8s.io/component-id"), "0");
    cr_expect_str_eq(env(l, "RBG_COMPONENT_INDEX"), "0");
    cr_expect_str_eq(env(w, "RBG_LWP_GROUP_SIZE"), "4");
    cr_expect_str_eq(env(w, "RBG_LWP_WORKER_INDEX"), "3");
    cr_expect_str_eq(env(w, "RBG_LWP_LEADER_ADDRESS"),
                     "$(RBG_ROLE_INSTANCE_NAME)-0.s-pd-disagg-lws-prefill.default");
    cr_expect_str_eq(env(w, "RBG_ROLE_INSTANCE_NAME"), "pd-disagg-lws-prefill-1");
    cr_expect_eq(m.wl[w].group_size, 4);
    cr_expect_eq(m.wl[w].pod_index, 3);
    cr_expect_str_eq(m.wl[l].group, m.wl[w].group);
    cr_expect_eq(m.wl[l].tp, 4);
    cr_expect_eq(m.wl[l].accel_per_pod, 1);
    size_t d = pod_named("pd-disagg-lws-decode-3-1");
    cr_expect_eq(m.wl[d].tp, 2);
    cr_expect_eq(m.wl[d].group_size, 2);
}

Test(obj_manifest, pytorchjob_master_and_workers_are_one_world_with_the_operator_env)
{
    load_yaml("apiVersion: kubeflow.org/v1\n"
              "kind: PyTorchJob\n"
              "metadata: {name: mg}\n"
              "spec:\n"
              "  elasticPolicy: {rdzvBackend: etcd, rdzvHost: etcd, rdzvPort: 2379,\n"
              "                  minReplicas: 1, maxReplicas: 8, maxRestarts: 3}\n"
              "  pytorchReplicaSpecs:\n"
              "    Master:\n"
              "      replicas: 1\n"
              "      template:\n"
              "        spec:\n"
              "          containers:\n"
              "          - name: pytorch\n"
              "            ports: [{name: pytorchjob-port, containerPort: 29500}]\n"
              "            env: [{name: NCCL_DEBUG, value: INFO}]\n"
              "            command: [torchrun, --nproc_per_node=8, --nnodes=3,\n"
              "                      pretrain_gpt.py, --tensor-model-parallel-size=8]\n"
              "            resources: {limits: {nvidia.com/gpu: 8}}\n"
              "    Worker:\n"
              "      replicas: 2\n"
              "      template:\n"
              "        spec:\n"
              "          containers:\n"
              "          - name: pytorch\n"
              "            command: [torchrun, --nproc_per_node=8, --nnodes=3,\n"
              "                      pretrain_gpt.py, --tensor-model-parallel-size=8]\n"
              "            resources: {limits: {nvidia.com/gpu: 8}}\n");
    cr_assert_eq(m.npods, 3);
    cr_assert_eq(m.nreplicas, 1);
    cr_expect_str_eq(m.names[0], "mg-master-0");
    cr_expect_str_eq(m.names[2], "mg-worker-1");
    cr_expect_str_eq(label(0, "training.kubeflow.org/job-role"), "master");
    cr_expect_str_eq(label(2, "training.kubeflow.org/replica-type"), "worker");
    cr_expect_str_eq(label(2, "training.kubeflow.org/replica-index"), "1");
    size_t n;
    const struct tpx_env_var *e = obj_manifest_pod_env(&m, 0, &n);
    cr_assert_geq(n, 2);
    cr_expect_str_eq(e[0].name, "NCCL_DEBUG"); /* the operator appends */
    cr_expect_str_eq(e[1].name, "PYTHONUNBUFFERED");
    cr_expect_str_eq(env(0, "MASTER_PORT"), "29500");
    cr_expect_str_eq(env(2, "MASTER_ADDR"), "mg-master-0");
    cr_expect_str_eq(env(2, "WORLD_SIZE"), "3");
    cr_expect_str_eq(env(2, "RANK"), "2");
    cr_expect_str_eq(env(1, "PET_RDZV_ENDPOINT"), "etcd:2379");
    cr_expect_str_eq(env(1, "PET_RDZV_BACKEND"), "etcd");
    cr_expect_str_eq(env(1, "PET_NNODES"), "1:8");
    cr_expect_str_eq(env(1, "PET_MAX_RESTARTS"), "3");
    cr_expect_eq(m.wl[2].group_size, 3);
    cr_expect_eq(m.wl[2].pod_index, 2);
    cr_expect_str_eq(m.wl[0].group, m.wl[2].group);
    cr_expect_eq(m.wl[1].accel_per_pod, 8);
}

Test(obj_manifest, upstream_pytorchjob_envsubst_template_is_bad_input_naming_the_line)
{
    struct tpx_err err = TPX_ERR_INIT;

    cr_assert_eq(obj_manifest_add_file(&m,
                                       TPX_SOURCE_DIR "/tests/fixtures/manifests/"
                                                      "kubeflow-pytorchjob-megatron-gpt3-tp-pp-"
                                                      "envsubst.yaml",
                                       &err),
                 TPX_EINVAL);
    cr_expect(strstr(err.msg, "PyTorchJob 'megatron'") != NULL, "%s", err.msg);
    cr_expect(strstr(err.msg, "${NUM_NODES}") != NULL, "%s", err.msg);
}

Test(obj_manifest, upstream_mpijob_workers_one_group_with_the_operator_env)
{
    load(TPX_SOURCE_DIR
         "/tests/fixtures/manifests/dra-computedomain-nvbandwidth-mpijob-4node.yaml");
    cr_assert_eq(m.njobs, 1);
    cr_expect_str_eq(m.jobs[0].kind, "MPIJob");
    /* the launcher asks for no GPUs: left out with a note */
    cr_assert_eq(m.npods, 4);
    cr_assert_eq(m.nreplicas, 1);
    cr_expect_str_eq(m.names[3], "nvbandwidth-test-worker-3");
    cr_expect_eq(m.wl[3].accel_per_pod, 2);
    cr_expect_eq(m.wl[3].group_size, 4);
    cr_expect_eq(m.wl[3].pod_index, 3);
    cr_expect_str_eq(label(3, "training.kubeflow.org/replica-index"), "3");
    cr_expect_str_eq(label(3, "training.kubeflow.org/operator-name"), "mpi-operator");
    cr_expect_str_eq(label(3, "mpi-memcpy-dra-test-replica"), "mpi-worker");
    cr_expect_str_eq(env(3, "K_MPI_JOB_ROLE"), "worker");
    cr_expect_null(env(3, "OMPI_MCA_orte_default_hostfile"));
    cr_expect(has_note("the launcher is not placed"));
}

Test(obj_manifest, mpijob_launcher_with_gpus_is_a_replica_of_its_own)
{
    load_yaml("apiVersion: kubeflow.org/v2beta1\n"
              "kind: MPIJob\n"
              "metadata: {name: j}\n"
              "spec:\n"
              "  slotsPerWorker: 8\n"
              "  mpiReplicaSpecs:\n"
              "    Launcher:\n"
              "      replicas: 1\n"
              "      template:\n"
              "        spec:\n"
              "          containers:\n"
              "          - {name: l, command: [mpirun, -np, '16'],\n"
              "             resources: {limits: {nvidia.com/gpu: 8}}}\n"
              "    Worker:\n"
              "      replicas: 2\n"
              "      template:\n"
              "        spec:\n"
              "          containers: [{name: w, resources: {limits: {nvidia.com/gpu: 8}}}]\n");
    cr_assert_eq(m.npods, 3);
    cr_assert_eq(m.nreplicas, 2);
    cr_expect_str_eq(m.names[0], "j-launcher");
    cr_expect_str_eq(label(0, "training.kubeflow.org/job-role"), "launcher");
    cr_expect_null(label(0, "training.kubeflow.org/replica-index"));
    cr_expect_str_eq(env(0, "K_MPI_JOB_ROLE"), "launcher");
    cr_expect_str_eq(env(0, "OMPI_MCA_orte_set_default_slots"), "8");
    cr_expect_str_eq(env(0, "OMPI_MCA_orte_default_hostfile"), "/etc/mpi/hostfile");
    cr_expect_str_eq(m.names[2], "j-worker-1");
    cr_expect_eq(m.wl[2].group_size, 2);
}

Test(obj_manifest, upstream_kserve_llmisvc_dp32_is_an_lws_of_four_8gpu_pods)
{
    load(TPX_SOURCE_DIR
         "/tests/fixtures/manifests/kserve-llmisvc-dp32-ep-deepseek-r1-deepep-ht.yaml");
    cr_assert_eq(m.njobs, 1);
    cr_expect_str_eq(m.jobs[0].kind, "LLMInferenceService");
    /* data 32 / dataLocal 8 = 4 pods of 8 GPUs */
    cr_assert_eq(m.npods, 4);
    cr_assert_eq(m.nreplicas, 1);
    cr_expect_str_eq(m.names[0], "deepseek-r1-0528-kserve-mn-0");
    cr_expect_str_eq(m.names[3], "deepseek-r1-0528-kserve-mn-0-3");
    cr_expect_eq(m.wl[3].accel_per_pod, 8);
    cr_expect_eq(m.wl[3].group_size, 4);
    /* no spec.prefill: the main workload serves both */
    cr_expect_str_eq(label(0, "llm-d.ai/role"), "both");
    cr_expect_str_eq(label(0, "app.kubernetes.io/component"),
                     "llminferenceservice-workload-leader");
    cr_expect_str_eq(label(1, "app.kubernetes.io/component"),
                     "llminferenceservice-workload-worker");
    cr_expect(argv_has(0, "--data-parallel-size 32 --data-parallel-size-local 8"));
    cr_expect(argv_has(0, "--enable-expert-parallel --tensor-parallel-size 1"));
    cr_expect(argv_has(0, "--data-parallel-start-rank $START_RANK ${VLLM_ADDITIONAL_ARGS}"));
    cr_expect(argv_has(2, "START_RANK=$(( ${LWS_WORKER_INDEX:-0} * 8 ))"));
    cr_expect(argv_has(2, "--headless"));
    cr_expect_str_eq(env(2, "LWS_WORKER_INDEX"), "2");
    cr_expect_str_eq(env(2, "VLLM_ALL2ALL_BACKEND"), "deepep_high_throughput");
    cr_expect_str_eq(env(2, "HF_HUB_CACHE"), "/models");
}

/* kserve/kserve pkg/apis/serving/v1alpha2 ParallelismSpec.GetSize(): data / dataLocal wins over
 * pipeline; pipeline alone is the size; the main workload beside a prefill is "decode". */
Test(obj_manifest, kserve_llmisvc_lws_size_follows_getsize_and_roles_follow_prefill)
{
    load_yaml("apiVersion: serving.kserve.io/v1alpha2\n"
              "kind: LLMInferenceService\n"
              "metadata: {name: s}\n"
              "spec:\n"
              "  model: {name: m}\n"
              "  parallelism: {data: 4, dataLocal: 2, pipeline: 3}\n"
              "  template: {containers: [{name: main, resources: {limits: {nvidia.com/gpu: 2}}}]}\n"
              "  worker: {containers: [{name: main, resources: {limits: {nvidia.com/gpu: 2}}}]}\n"
              "  prefill:\n"
              "    parallelism: {pipeline: 3, tensor: 8}\n"
              "    template: {containers: [{name: main, command: [vllm, serve],\n"
              "               resources: {limits: {nvidia.com/gpu: 8}}}]}\n"
              "    worker: {containers: [{name: main, command: [vllm, serve],\n"
              "             resources: {limits: {nvidia.com/gpu: 8}}}]}\n");
    /* main: 4 / 2 = 2 pods (not pipeline 3); prefill: pipeline 3 */
    cr_assert_eq(m.nreplicas, 2);
    cr_expect_eq(replica_size(0), 2);
    cr_expect_eq(replica_size(1), 3);
    cr_expect_str_eq(m.names[0], "s-kserve-mn-0");
    cr_expect_str_eq(m.names[2], "s-kserve-mn-prefill-0");
    cr_expect_str_eq(label(0, "llm-d.ai/role"), "decode");
    cr_expect_str_eq(label(2, "llm-d.ai/role"), "prefill");
}

Test(obj_manifest, kserve_llmisvc_data_local_above_data_is_one_pod)
{
    load_yaml("apiVersion: serving.kserve.io/v1alpha2\n"
              "kind: LLMInferenceService\n"
              "metadata: {name: s}\n"
              "spec:\n"
              "  parallelism: {data: 1, dataLocal: 8}\n"
              "  template: {containers: [{name: main, resources: {limits: {nvidia.com/gpu: 8}}}]}\n"
              "  worker: {containers: [{name: main, resources: {limits: {nvidia.com/gpu: 8}}}]}\n");
    cr_assert_eq(m.nreplicas, 1);
    cr_expect_eq(replica_size(0), 1);
}

Test(obj_manifest, upstream_grove_pcs_scaling_group_instances_are_groups_packed_by_rack)
{
    load(TPX_SOURCE_DIR
         "/tests/fixtures/manifests/grove-podcliqueset-tas-hierarchy-prefill-decode.yaml");
    cr_assert_eq(m.njobs, 1);
    cr_expect_str_eq(m.jobs[0].kind, "PodCliqueSet");
    /* 2 instances of inference-group, each prefill x2 + decode x2 */
    cr_assert_eq(m.npods, 8);
    cr_assert_eq(m.nreplicas, 2);
    size_t p0 = pod_named("tas-hierarchy-0-inference-group-0-prefill-0");
    size_t d1 = pod_named("tas-hierarchy-0-inference-group-1-decode-1");
    cr_expect_str_eq(label(p0, "grove.io/podcliquescalinggroup"),
                     "tas-hierarchy-0-inference-group");
    cr_expect_str_eq(label(d1, "grove.io/podcliquescalinggroup-replica-index"), "1");
    cr_expect_str_eq(label(d1, "grove.io/podclique"), "tas-hierarchy-0-inference-group-1-decode");
    cr_expect_str_eq(label(d1, "kai.scheduler/queue"), "test");
    /* the labels the operator puts on the PodClique (its pods inherit them) and on the pod */
    cr_expect_str_eq(label(d1, "app.kubernetes.io/managed-by"), "grove-operator");
    cr_expect_str_eq(label(d1, "app.kubernetes.io/part-of"), "tas-hierarchy");
    cr_expect_str_eq(label(d1, "app.kubernetes.io/name"),
                     "tas-hierarchy-0-inference-group-1-decode");
    cr_expect_str_eq(label(d1, "app.kubernetes.io/component"), "pcsg-podclique");
    cr_expect_str_eq(label(d1, "grove.io/podcliqueset-replica-index"), "0");
    cr_expect_str_eq(label(d1, "grove.io/podclique-pod-index"), "1");
    cr_expect_str_eq(label(p0, "grove.io/podclique-pod-index"), "0");
    /* KV pairing per PodCliqueSet replica: the set's name and the replica index */
    cr_expect_str_eq(m.wl[d1].kv_group, "default/grove:tas-hierarchy/0");
    cr_expect_eq(m.wl[d1].kv_role, 'd');
    cr_expect_str_eq(m.wl[p0].kv_group, m.wl[d1].kv_group);
    cr_expect_eq(m.wl[p0].kv_role, 'p');
    cr_expect_str_eq(env(d1, "GROVE_PCSG_TEMPLATE_NUM_PODS"), "4");
    cr_expect_str_eq(env(d1, "GROVE_PCLQ_POD_INDEX"), "1");
    cr_expect_str_eq(env(d1, "GROVE_HEADLESS_SERVICE"),
                     "tas-hierarchy-0.default.svc.cluster.local");
    cr_expect_eq(m.wl[d1].group_size, 4);
    cr_expect_eq(m.wl[d1].pod_index, 3);
    cr_expect_eq(m.wl[d1].scope, POL_SCOPE_RACK);
    cr_expect_str_eq(annotation(d1, "topox.io/pipeline-scope"), "rack");
    cr_expect_str_neq(m.wl[p0].group, m.wl[d1].group);
}

/* Two PodCliqueSet replicas of standalone cliques: each pod carries its replica's index (the
 * operator's podclique getLabels), so each replica is its own KV deployment. */
Test(obj_manifest, grove_pcs_replicas_are_kv_deployments_of_their_own)
{
    load_yaml("apiVersion: grove.io/v1alpha1\n"
              "kind: PodCliqueSet\n"
              "metadata: {name: pd, namespace: llm}\n"
              "spec:\n"
              "  replicas: 2\n"
              "  template:\n"
              "    cliques:\n"
              "    - name: prefill\n"
              "      spec: {replicas: 1, podSpec: {containers: [{name: c}]}}\n"
              "    - name: decode\n"
              "      spec: {replicas: 1, podSpec: {containers: [{name: c}]}}\n");
    cr_assert_eq(m.npods, 4);
    size_t p1 = pod_named("pd-1-prefill-0");
    size_t d0 = pod_named("pd-0-decode-0");
    size_t d1 = pod_named("pd-1-decode-0");
    cr_expect_str_eq(label(p1, "app.kubernetes.io/component"), "pcs-podclique");
    cr_expect_str_eq(label(p1, "app.kubernetes.io/name"), "pd-1-prefill");
    cr_expect_str_eq(label(p1, "grove.io/podcliqueset-replica-index"), "1");
    cr_expect_null(label(p1, "grove.io/podcliquescalinggroup"));
    /* (the namespace part is the plan's: the expanded pods' facts carry none) */
    cr_expect(strstr(m.wl[p1].kv_group, "/grove:pd/1") != NULL, "%s", m.wl[p1].kv_group);
    cr_expect_eq(m.wl[p1].kv_role, 'p');
    cr_expect_str_eq(m.wl[d1].kv_group, m.wl[p1].kv_group);
    cr_expect(strstr(m.wl[d0].kv_group, "/grove:pd/0") != NULL, "%s", m.wl[d0].kv_group);
    cr_expect_eq(m.wl[d0].kv_role, 'd');
}

static void add_yaml(const char *y)
{
    struct obj_yaml_docs d;
    struct tpx_err err = TPX_ERR_INIT;

    cr_assert_eq(obj_yaml_parse(y, strlen(y), "p.yaml", &d, &err), TPX_OK, "%s", err.msg);
    cr_assert_eq(obj_manifest_add_docs(&m, &d, "p.yaml", &err), TPX_OK, "%s", err.msg);
}

Test(obj_manifest, upstream_podgroup_groups_pods_by_scheduling_group_unknown_key_is_a_note)
{
    struct tpx_err err = TPX_ERR_INIT;

    cr_assert_eq(obj_manifest_add_file(&m,
                                       TPX_SOURCE_DIR "/tests/fixtures/manifests/"
                                                      "k8s-podgroup-gang-topology-rack-jobset-"
                                                      "tas.yaml",
                                       &err),
                 TPX_OK, "%s", err.msg);
    add_yaml("kind: Job\n"
             "metadata: {name: w}\n"
             "spec:\n"
             "  parallelism: 4\n"
             "  template:\n"
             "    spec:\n"
             "      schedulingGroup: {podGroupName: js-abc-workers-def}\n"
             "      containers: [{name: a, resources: {limits: {nvidia.com/gpu: 8}}}]\n");
    cr_assert_eq(obj_manifest_finish(&m, &err), TPX_OK, "%s", err.msg);
    cr_assert_eq(m.npods, 4);
    cr_expect_str_eq(annotation(0, "topox.io/group"), "default/js-abc-workers-def");
    cr_expect_str_eq(m.wl[3].group, m.wl[0].group);
    cr_expect_eq(m.wl[3].group_size, 4);
    cr_expect_eq(m.wl[3].pod_index, 3);
    cr_expect_null(annotation(0, "topox.io/pipeline-scope"));
    cr_expect(has_note("topology key 'topology.example.com/rack'"));
}

Test(obj_manifest, podgroup_topology_key_topox_reads_sets_the_pipeline_scope)
{
    load_yaml("apiVersion: scheduling.k8s.io/v1beta1\n"
              "kind: PodGroup\n"
              "metadata: {name: pg, namespace: ml}\n"
              "spec:\n"
              "  schedulingPolicy: {gang: {minCount: 2}}\n"
              "  schedulingConstraints: {topology: [{key: topology.kubernetes.io/zone}]}\n"
              "---\n"
              "kind: Pod\n"
              "metadata: {name: a, namespace: ml}\n"
              "spec: {schedulingGroup: {podGroupName: pg}, containers: [{name: c}]}\n"
              "---\n"
              "kind: Pod\n"
              "metadata: {name: b, namespace: ml}\n"
              "spec: {schedulingGroup: {podGroupName: pg}, containers: [{name: c}]}\n");
    cr_assert_eq(m.npods, 2);
    cr_expect_str_eq(annotation(1, "topox.io/group"), "ml/pg");
    cr_expect_eq(m.wl[1].group_size, 2);
    cr_expect_eq(m.wl[1].pod_index, 1);
    cr_expect_eq(m.wl[1].scope, POL_SCOPE_ZONE);
}

Test(obj_manifest, another_api_version_is_read_by_the_same_rules_with_a_note)
{
    load_yaml("apiVersion: workloads.x-k8s.io/v1alpha3\n"
              "kind: RoleBasedGroup\n"
              "metadata: {name: r}\n"
              "spec:\n"
              "  roles:\n"
              "  - name: x\n"
              "    replicas: 2\n"
              "    standalonePattern: {template: {spec: {containers: [{name: c}]}}}\n");
    cr_expect_eq(m.npods, 2);
    cr_expect(has_note("RoleBasedGroup 'r' is workloads.x-k8s.io/v1alpha3; read as "
                       "workloads.x-k8s.io/v1alpha2"));
}

Test(obj_manifest, trainjob_is_its_runtimes_jobset_with_the_torch_env)
{
    load_yaml("apiVersion: trainer.kubeflow.org/v1alpha1\n"
              "kind: ClusterTrainingRuntime\n"
              "metadata: {name: torch-distributed}\n"
              "spec:\n"
              "  mlPolicy: {numNodes: 1, torch: {numProcPerNode: auto}}\n"
              "  template:\n"
              "    spec:\n"
              "      replicatedJobs:\n"
              "      - name: node\n"
              "        template:\n"
              "          metadata:\n"
              "            labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}\n"
              "          spec:\n"
              "            template:\n"
              "              spec:\n"
              "                containers:\n"
              "                - {name: node, image: pytorch, command: [torchrun, train.py]}\n"
              "---\n"
              "apiVersion: trainer.kubeflow.org/v1alpha1\n"
              "kind: TrainJob\n"
              "metadata: {name: tj, namespace: ml}\n"
              "spec:\n"
              "  runtimeRef: {name: torch-distributed}\n"
              "  trainer:\n"
              "    numNodes: 3\n"
              "    numProcPerNode: 8\n"
              "    env: [{name: NCCL_DEBUG, value: INFO}]\n"
              "    resourcesPerNode: {limits: {nvidia.com/gpu: 8}}\n");
    cr_assert_eq(m.njobs, 1);
    cr_expect_str_eq(m.jobs[0].kind, "TrainJob");
    cr_expect_str_eq(m.jobs[0].name, "ml/tj");
    cr_assert_eq(m.npods, 3);
    cr_assert_eq(m.nreplicas, 1);
    cr_expect_str_eq(m.names[0], "tj-node-0-0");
    cr_expect_str_eq(m.names[2], "tj-node-0-2");
    cr_expect_eq(m.wl[2].accel_per_pod, 8);
    cr_expect_eq(replica_size(0), 3);
    cr_expect_str_eq(m.wl[0].group, m.wl[2].group); /* one JobSet job */
    /* its torch world's size is PET_NNODES: each node's ranks once (issue 31, item 9) */
    cr_expect_eq(m.wl[2].group_size, 3);
    cr_expect_eq(m.wl[2].pod_index, 2);
    cr_expect(m.wl[2].size_explicit);
    cr_expect_str_eq(label(2, "jobset.sigs.k8s.io/jobset-name"), "tj");
    cr_expect_str_eq(label(2, "batch.kubernetes.io/job-completion-index"), "2");
    cr_expect_str_eq(env(2, "PET_NNODES"), "3");
    cr_expect_str_eq(env(2, "PET_NPROC_PER_NODE"), "8");
    cr_expect_str_eq(env(2, "PET_NODE_RANK"), "2");
    cr_expect_str_eq(env(2, "PET_MASTER_ADDR"), "tj-node-0-0.tj");
    cr_expect_str_eq(env(2, "PET_MASTER_PORT"), "29400");
    cr_expect_str_eq(env(2, "NCCL_DEBUG"), "INFO");
}

Test(obj_manifest, trainjob_without_its_runtime_is_a_note)
{
    struct obj_yaml_docs d;
    struct tpx_err err = TPX_ERR_INIT;
    const char *y = "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\n"
                    "metadata: {name: tj}\nspec: {runtimeRef: {name: torch-distributed}}\n";

    cr_assert_eq(obj_yaml_parse(y, strlen(y), "p.yaml", &d, &err), TPX_OK, "%s", err.msg);
    cr_assert_eq(obj_manifest_add_docs(&m, &d, "p.yaml", &err), TPX_OK, "%s", err.msg);
    cr_expect_eq(m.npods, 0);
    cr_expect(
        has_note("runtime ClusterTrainingRuntime 'torch-distributed' is not in this manifest"));
}

Test(obj_manifest, env_numbers_are_their_text_value_from_is_unknown)
{
    load_yaml("kind: Pod\n"
              "metadata: {name: p}\n"
              "spec:\n"
              "  containers:\n"
              "  - name: c\n"
              "    env:\n"
              "    - {name: TP, value: 8}\n"
              "    - {name: FLAG, value: true}\n"
              "    - {name: IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}\n");
    cr_expect_str_eq(env(0, "TP"), "8");
    cr_expect_str_eq(env(0, "FLAG"), "true");
    cr_expect_str_eq(env(0, "IP"), "(unknown)");
}

Test(obj_manifest, rbg_leader_worker_pattern_without_template_is_bad_input)
{
    struct obj_yaml_docs d;
    struct tpx_err err = TPX_ERR_INIT;
    const char *y = "apiVersion: workloads.x-k8s.io/v1alpha2\nkind: RoleBasedGroup\n"
                    "metadata: {name: r}\n"
                    "spec: {roles: [{name: x, leaderWorkerPattern: {size: 2}}]}\n";

    cr_assert_eq(obj_yaml_parse(y, strlen(y), "p.yaml", &d, &err), TPX_OK, "%s", err.msg);
    cr_expect_eq(obj_manifest_add_docs(&m, &d, "p.yaml", &err), TPX_EINVAL);
    cr_expect(strstr(err.msg, "p.yaml:4: RoleBasedGroup 'r': role 'x': "
                              "leaderWorkerPattern.template is missing") != NULL,
              "%s", err.msg);
}

/* The nvbandwidth demo's MPIJob: 4 workers are one group (the ranks of one mpirun); the launcher
 * asks for no accelerators and is left out with a note. */
Test(obj_manifest, mpijob_workers_are_one_group)
{
    load(TPX_FIXTURES "/dra/dra-computedomain-nvbandwidth-mpijob-4node.yaml");
    cr_assert_eq(m.njobs, 1);
    cr_expect_str_eq(m.jobs[0].kind, "MPIJob");
    cr_assert_eq(m.nreplicas, 1);
    cr_assert_eq(replica_size(0), 4);
    cr_expect_str_eq(m.names[3], "nvbandwidth-test-worker-3");
    cr_expect_str_eq(label(3, "training.kubeflow.org/job-role"), "worker");
    cr_expect_str_eq(label(3, "training.kubeflow.org/replica-index"), "3");
    cr_expect_str_eq(annotation(3, "topox.io/group"), "default/nvbandwidth-test");
    for (size_t i = 0; i < 4; i++) {
        cr_expect_str_eq(m.wl[i].group, "default/default/nvbandwidth-test");
        cr_expect_eq(m.wl[i].group_size, 4);
        cr_expect_eq(m.wl[i].pod_index, (int)i);
        cr_expect_eq(m.wl[i].accel_per_pod, 2);
    }
    cr_expect(m.nnotes >= 1);
    cr_expect(strstr(m.notes[m.nnotes - 1], "launcher is not placed") != NULL, "%s",
              m.notes[m.nnotes - 1]);
}

/* --- kinds by API group and kind, the generic expansion, the operators' kinds of 2026 ----------
 */

/* Load tests/fixtures/manifests/NAME and finish. */
static void load_fixture(const char *name)
{
    char path[512];

    snprintf(path, sizeof(path), "%s/manifests/%s", TPX_FIXTURES, name);
    load(path);
}

/* Volcano's Job (batch.volcano.sh) is not a batch/v1 Job: read as one, it had no spec.template
 * and was refused as bad input. It is expanded from its tasks' templates instead. */
Test(obj_manifest, volcano_job_is_told_apart_from_batch_job_and_expanded_generically)
{
    load_fixture("volcano-job-mindspore-gpu-mpi.yaml");
    cr_assert_eq(m.njobs, 1);
    cr_expect_str_eq(m.jobs[0].kind, "Job");
    cr_expect(m.jobs[0].generic);
    cr_assert_eq(m.npods, 3, "1 mpimaster + 2 mpiworker");
    /* its minAvailable 3 is Volcano's PodGroup minMember: the three pods are one gang, one world */
    cr_expect_eq(m.nreplicas, 1, "minAvailable: one group of all the job's pods");
    cr_expect(has_note("spec.minAvailable makes its 3 pods one gang: planned as one group"));
    cr_expect_str_eq(m.wl[1].group, m.wl[2].group);
    cr_expect_str_eq(m.wl[0].group, m.wl[1].group);
    cr_expect_eq(m.wl[1].group_size, 2, "the CPU-only master takes no slot");
    cr_expect_eq(m.wl[2].pod_index, 1, "ranks counted among the GPU members");
    cr_expect_str_eq(m.names[0], "mindspore-gpu-mpimaster-0-0");
    cr_expect_str_eq(m.names[2], "mindspore-gpu-mpiworker-1-0");
    cr_expect_eq(obj_manifest_pod_facts(&m, 1)->accel, 1);
    cr_expect(has_note("batch.volcano.sh/v1alpha1) is not a kind topox knows: "
                       "spec.tasks[1].template read as 2 group(s) of 1 pod(s) (replicas 2)"));
    cr_expect_null(label(0, "batch.kubernetes.io/job-name"), "no batch/v1 labels");
}

/* Every object is matched by group and kind: a Service of another group is not skipped as a core
 * Service, and a core Service is skipped as no pods to place. */
Test(obj_manifest, objects_without_templates_are_notes_naming_their_kind)
{
    load_fixture("aibrix-rayclusterfleet-vllm-ray-executor-two-node.yaml");
    cr_expect(has_note("skipped Service 'qwen-coder-7b-instruct' (no pods to place)"));
    cr_expect(has_note("skipped HTTPRoute 'qwen-coder-7b-instruct-router' (no pods to place)"));
}

/* AIBrix StormService: a role of podGroupSize 2 is one PodSet of 2 pods (one group), with the
 * PodSet's env in front of the RoleSet's (podset_controller.go createPodFromTemplate). */
Test(obj_manifest, stormservice_podsets_are_groups_with_the_operators_env_and_labels)
{
    size_t p0, p1, lb;

    load_fixture("aibrix-stormservice-sglang-tp-1p1d-podgroupsize2.yaml");
    cr_assert_eq(m.njobs, 1);
    cr_expect_str_eq(m.jobs[0].kind, "StormService");
    cr_expect(!m.jobs[0].generic);
    cr_assert_eq(m.npods, 5, "routing 1 + prefill 2 + decode 2");
    cr_assert_eq(m.nreplicas, 3);
    cr_expect_eq(replica_size(1), 2);
    cr_expect_eq(replica_size(2), 2);
    lb = 0;
    p0 = m.replica_first_pod[1];
    p1 = p0 + 1;
    cr_expect_str_eq(label(lb, "role-name"), "routing");
    cr_expect_str_eq(label(p0, "role-name"), "prefill");
    cr_expect_str_eq(label(p1, "stormservice.orchestration.aibrix.ai/pod-group-index"), "1");
    cr_expect_str_eq(label(p1, "storm-service-name"), "tp-1p1d");
    cr_expect_str_eq(label(p1, "model.aibrix.ai/engine"), "sglang", "the template's own labels");
    cr_expect_str_eq(env(p1, "POD_GROUP_INDEX"), "1");
    cr_expect_str_eq(env(p1, "POD_GROUP_SIZE"), "2");
    cr_expect_str_eq(env(p1, "STORM_SERVICE_NAME"), "tp-1p1d");
    cr_expect_str_eq(env(p0, "PODSET_NAME"), label(p0, "stormservice.orchestration.aibrix.ai/"
                                                       "podset-name"));
    cr_expect_null(env(lb, "PODSET_NAME"), "podGroupSize 1: no PodSet");
    cr_expect_str_eq(env(lb, "ROLE_NAME"), "routing");
    cr_expect_str_eq(annotation(p1, "topox.io/group-size"), "2");
    /* --tp-size 2 --nnodes 2 on two 1-GPU pods: read for certain */
    cr_expect_eq(m.wl[p0].tp, 2);
    cr_expect_eq(m.wl[p0].group_size, 2);
    cr_expect_eq(m.wl[p1].pod_index, 1);
    cr_expect(m.wl[p0].layout.certain, "%s", m.wl[p0].layout.why);
}

/* AIBrix RayClusterFleet of KubeRay clusters: the head starts vLLM with the Ray executor, so head
 * and worker are one TP 2 group; the worker, which states no flags, takes the head's layout. */
Test(obj_manifest, rayclusterfleet_head_with_ray_executor_spans_the_cluster)
{
    size_t h, w;

    load_fixture("aibrix-rayclusterfleet-vllm-ray-executor-two-node.yaml");
    cr_assert_eq(m.njobs, 1);
    cr_expect_str_eq(m.jobs[0].kind, "RayClusterFleet");
    cr_assert_eq(m.npods, 2);
    cr_assert_eq(m.nreplicas, 1, "one Ray cluster, one group");
    h = 0;
    w = 1;
    cr_expect_str_eq(label(h, "ray.io/node-type"), "head");
    cr_expect_str_eq(label(w, "ray.io/group"), "small-group");
    cr_expect_str_eq(label(w, "model.aibrix.ai/name"), "qwen-coder-7b-instruct");
    cr_expect(strstr(env(w, "RAY_ADDRESS"), "-head-svc.default.svc.cluster.local:6379"));
    cr_expect_eq(m.wl[h].tp, 2);
    cr_expect_eq(m.wl[w].tp, 2, "the worker takes the head's layout");
    cr_expect_eq(m.wl[w].group_size, 2);
    cr_expect_eq(m.wl[w].pod_index, 1);
    cr_expect(m.wl[h].layout.certain, "%s", m.wl[h].layout.why);
}

/* KubeRay's RayService sample runs vLLM inside Ray Serve (no engine flags on the head): its pods
 * are not one model instance and are planned one by one. */
Test(obj_manifest, rayservice_without_ray_executor_plans_pods_alone)
{
    load_fixture("kuberay-rayservice-vllm-serve-llama3-8b.yaml");
    cr_assert_eq(m.njobs, 1);
    cr_expect_str_eq(m.jobs[0].kind, "RayService");
    cr_assert_eq(m.npods, 2);
    cr_expect_eq(m.nreplicas, 2);
    cr_expect_str_eq(m.names[0], "llama-3-8b-raycluster-0-head");
    cr_expect_str_eq(m.names[1], "llama-3-8b-raycluster-0-gpu-group-worker-0");
    cr_expect_eq(obj_manifest_pod_facts(&m, 1)->accel, 2);
    cr_expect(has_note("planned one by one"));
    cr_expect_null(annotation(1, "topox.io/group"));
}

/* NVIDIA NIMService with multiNode.parallelism.pp 2 on 8-GPU pods: a LeaderWorkerSet of 2 pods,
 * TP 8 x PP 2. The NIMCache beside it makes no pods. */
Test(obj_manifest, nimservice_multinode_is_an_lws_of_pp_pods)
{
    load_fixture("nim-operator-nimservice-multinode-deepseek-r1-pp2.yaml");
    cr_assert_eq(m.njobs, 1);
    cr_expect_str_eq(m.jobs[0].kind, "NIMService");
    cr_expect(has_note("skipped NIMCache 'deepseek-r1-nimcache' (no pods to place)"));
    cr_assert_eq(m.npods, 2);
    cr_assert_eq(m.nreplicas, 1);
    cr_expect_str_eq(m.names[0], "deepseek-r1-0");
    cr_expect_str_eq(m.names[1], "deepseek-r1-0-1");
    cr_expect_str_eq(env(0, "NIM_LEADER_ROLE"), "1");
    cr_expect_str_eq(env(1, "NIM_LEADER_ROLE"), "0");
    cr_expect_str_eq(env(1, "NIM_USE_SGLANG"), "1");
    cr_expect_str_eq(label(1, "leaderworkerset.sigs.k8s.io/worker-index"), "1");
    cr_expect_eq(obj_manifest_pod_facts(&m, 0)->accel, 8);
    cr_expect_eq(m.wl[0].tp, 8);
    cr_expect_eq(m.wl[0].pp, 2);
    cr_expect_eq(m.wl[1].group_size, 2);
    cr_expect(m.wl[0].layout.certain, "%s", m.wl[0].layout.why);
}

/* RBG v1alpha2 roleTemplates: templateRef names a template, and its patch is merged as a strategic
 * merge patch (containers by name; the template's image stays). */
Test(obj_manifest, rbg_roletemplates_templateref_and_patch)
{
    const json_t *c;
    size_t b;

    load_fixture("rbg-v1alpha2-roletemplates-templateref-patch.yaml");
    cr_assert_eq(m.npods, 5, "frontend 2 + backend 3");
    cr_expect_str_eq(label(0, "app"), "nginx", "the template's labels");
    b = pod_named("rbg-with-roletemplates-backend-2");
    c = json_array_get(
        json_object_get(json_object_get(obj_manifest_pod_template(&m, b), "spec"), "containers"),
        0);
    cr_assert_not_null(c);
    cr_expect_str_eq(json_string_value(json_object_get(c, "image")),
                     "anolis-registry.cn-zhangjiakou.cr.aliyuncs.com/openanolis/nginx:1.14.1-8.6");
    cr_expect_eq(json_integer_value(json_object_get(json_array_get(json_object_get(c, "ports"), 0),
                                                    "containerPort")),
                 8080);
    cr_expect_str_eq(json_string_value(json_object_get(
                         json_object_get(json_object_get(c, "resources"), "requests"), "memory")),
                     "128Mi");
    c = json_array_get(
        json_object_get(json_object_get(obj_manifest_pod_template(&m, 0), "spec"), "containers"),
        0);
    cr_expect_null(json_object_get(c, "ports"), "the frontend has no patch");
}

/* RBG's templateRef with a leaderWorkerPattern: template -> templateRef.patch (the SGLang
 * command) -> leader/worker patch (labels), as the controller applies them in order. */
Test(obj_manifest, rbg_templateref_patch_then_leader_worker_patches)
{
    load_fixture("rbg-v1alpha2-templateref-leaderworker-sglang-tp2.yaml");
    cr_assert_eq(m.npods, 2);
    cr_expect_str_eq(m.names[0], "agg-tp-with-templates-backend-0-0");
    cr_expect_str_eq(label(0, "role"), "leader");
    cr_expect_str_eq(label(1, "role"), "worker");
    cr_expect_eq(obj_manifest_pod_facts(&m, 1)->accel, 1);
    cr_expect_eq(m.wl[0].tp, 2);
    cr_expect_eq(m.wl[1].group_size, 2);
    cr_expect(m.wl[0].layout.certain, "%s", m.wl[0].layout.why);
}

/* The kinds table names each kind with its API group; the generic kinds are none of them. */
Test(obj_manifest, the_table_has_a_group_for_every_kind)
{
    bool storm = false, job = false;

    cr_assert_gt(obj_manifest_nkinds(), 20);
    for (size_t i = 0; i < obj_manifest_nkinds(); i++) {
        const struct obj_kind_row *k = obj_manifest_kind(i);
        cr_assert_not_null(k->group);
        if (strcmp(k->kind, "StormService") == 0)
            storm = strcmp(k->group, "orchestration.aibrix.ai") == 0;
        if (strcmp(k->kind, "Job") == 0)
            job = strcmp(k->group, "batch") == 0;
    }
    cr_expect(storm && job);
    cr_expect_null(obj_manifest_kind(obj_manifest_nkinds()));
}

/* KFServing's KFService holds no pod template, only a container-like `tensorflow` asking for a
 * GPU: it was skipped ("no pods to place"); it is now one pod of that container, with a note. */
Test(obj_manifest, container_like_object_asking_for_a_gpu_is_one_pod)
{
    load_fixture("kfserving-kfservice-tensorflow-gpu.yaml");
    cr_assert_eq(m.njobs, 1);
    cr_expect_str_eq(m.jobs[0].kind, "KFService");
    cr_expect(m.jobs[0].generic);
    cr_assert_eq(m.npods, 1);
    cr_expect_eq(obj_manifest_pod_facts(&m, 0)->accel, 1);
    cr_expect(has_note("spec.default.tensorflow read as 1 group(s) of 1 pod(s)"));
    cr_expect_not(m.wl[0].layout.certain);
    cr_expect(m.wl[0].preferred);
}
