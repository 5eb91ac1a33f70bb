/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/policy/test_workload.c - workload inference (annotations, every vLLM/SGLang flag
 * spelling, sh -c scripts, $(VAR), LWS/JobSet/Indexed Job groups) and validation messages. The
 * argv strings of the real manifests in tests/fixtures/manifests/ are copied verbatim. */
#include "policy/policy.h"

#include <criterion/criterion.h>
#include <string.h>

#include "topology/synthetic.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static struct pol_workload infer_argv(const char *const *argv, size_t n, unsigned accel)
{
    struct pol_pod_facts f = {.name = "p",
                              .ns = "llm",
                              .argv = argv,
                              .nargv = n,
                              .accel = accel,
                              .resource = "nvidia.com/gpu"};
    struct pol_workload wl;
    struct tpx_err err = TPX_ERR_INIT;

    cr_assert_eq(pol_workload_infer(&f, &wl, &err), TPX_OK, "%s", err.msg);
    return wl;
}

/* What argv (up to 10 elements) gives a pod of 8 GPUs. */
struct flag_case {
    const char *argv[10];
    unsigned tp, pp, dp;
    const char *source;
};

static void expect_flag_cases(const struct flag_case *cases, size_t ncases)
{
    for (size_t i = 0; i < ncases; i++) {
        size_t n = 0;
        struct pol_workload wl;
        while (n < 10 && cases[i].argv[n])
            n++;
        wl = infer_argv(cases[i].argv, n, 8);
        /* as read; placement may use a safer layout when it is uncertain */
        cr_expect_eq(wl.layout.tp, cases[i].tp, "case %zu tp %u", i, wl.layout.tp);
        cr_expect_eq(wl.layout.pp, cases[i].pp, "case %zu pp %u", i, wl.layout.pp);
        cr_expect_eq(wl.layout.dp, cases[i].dp, "case %zu dp %u", i, wl.layout.dp);
        cr_expect_str_eq(wl.tp_source, cases[i].source, "case %zu", i);
        cr_expect_eq(wl.tp_explicit, strcmp(cases[i].source, "default") != 0, "case %zu", i);
    }
}

Test(pol_workload, every_flag_spelling)
{
    static const struct flag_case cases[] = {
        {{"vllm", "serve", "m", "--tensor-parallel-size", "8"}, 8, 1, 1, "vllm flag"},
        {{"vllm", "serve", "m", "--tensor-parallel-size=4"}, 4, 1, 1, "vllm flag"},
        {{"vllm", "serve", "m", "-tp", "2"}, 2, 1, 1, "vllm flag"},
        {{"vllm", "serve", "m", "--tensor_parallel_size", "8"}, 8, 1, 1, "vllm flag"},
        {{"vllm", "serve", "m", "--tensor_parallel_size=8", "--pipeline_parallel_size=2"},
         8,
         2,
         1,
         "vllm flag"},
        {{"vllm", "serve", "-tp", "8", "--pipeline-parallel-size", "4"}, 8, 4, 1, "vllm flag"},
        {{"vllm", "serve", "-tp", "8", "-pp", "2", "-dp", "2"}, 8, 2, 2, "vllm flag"},
        {{"vllm", "serve", "--data-parallel-size", "2", "-tp=4"}, 4, 1, 2, "vllm flag"},
        {{"python3", "-m", "sglang.launch_server", "--tp-size", "8"}, 8, 1, 1, "sglang flag"},
        {{"python3", "-m", "sglang.launch_server", "--tp", "4", "--dp", "2"},
         4,
         1,
         2,
         "sglang flag"},
        {{"python3", "-m", "sglang.launch_server", "--tp", "8", "--pp-size", "2", "--dp-size", "1"},
         8,
         2,
         1,
         "sglang flag"},
        {{"sh", "-c", "vllm serve m --tensor-parallel-size 8 --pipeline-parallel-size 2"},
         8,
         2,
         1,
         "vllm flag"},
        {{"/bin/bash", "-c", "exec python3 -m vllm.entrypoints.openai.api_server -tp=2 && true"},
         2,
         1,
         1,
         "vllm flag"},
        {{"sh", "-c", "vllm serve m --tensor-parallel-size '8' --pipeline_parallel_size \"2\""},
         8,
         2,
         1,
         "vllm flag"},
        /* the last occurrence wins, as with argparse */
        {{"vllm", "serve", "-tp", "2", "--tensor-parallel-size", "4"}, 4, 1, 1, "vllm flag"},
        /* no flags: a data-parallel world (tp 1), never a TP group of the pod's size */
        {{"sleep", "1000s"}, 1, 1, 8, "default"},
        /* unexpanded values are unknown (0), not errors: the layout is uncertain */
        {{"vllm", "serve", "--tensor-parallel-size", "$(TP)"}, 0, 1, 1, "vllm flag"},
    };
    expect_flag_cases(cases, NELEM(cases));
}

/* Flags are read as a shell would hand them to the engine (common/cmdline.h). The old tokenizer
 * here read all but the last case wrongly: "'\\' / 'echo' / 'nproc' is not a positive whole
 * number" errors, and values from a comment, from past the script and from inside one quoted
 * word. */
Test(pol_workload, shell_rules_decide_what_a_flag_gets)
{
    static const struct flag_case cases[] = {
        /* line continuations, redirections and pipes are not values */
        {{"sh", "-c", "vllm serve m \\\n  --tensor-parallel-size \\\n  8 2>&1 | tee /log"},
         8,
         1,
         1,
         "vllm flag"},
        /* comments are not read */
        {{"sh", "-c", "vllm serve m -tp 8 # was: -tp 4"}, 8, 1, 1, "vllm flag"},
        /* a value never comes from the next command or from past the script's end */
        {{"sh", "-c", "vllm serve m -tp 8 --pipeline-parallel-size\necho 2"}, 8, 1, 1, "vllm flag"},
        {{"sh", "-c", "vllm serve m -tp 8 --pipeline-parallel-size", "2"}, 8, 1, 1, "vllm flag"},
        /* one quoted word is one argument, which argparse does not take for a flag */
        {{"sh", "-c", "vllm serve m '--tensor-parallel-size 4'"}, 1, 1, 8, "default"},
        /* a command substitution is unknown, not an error */
        {{"sh", "-c", "vllm serve m --tensor-parallel-size `nproc`"}, 0, 1, 1, "vllm flag"},
        /* a nested script is read too */
        {{"sh", "-c", "exec bash -lc 'vllm serve m -tp \"2\" -pp=4'"}, 2, 4, 1, "vllm flag"},
    };

    expect_flag_cases(cases, NELEM(cases));
}

Test(pol_workload, sglang_pp_abbreviation_is_ambiguous_and_ignored)
{
    static const char *const argv[] = {"python3", "-m", "sglang.launch_server", "--tp", "4",
                                       "--pp",    "2"};
    struct pol_workload wl = infer_argv(argv, NELEM(argv), 4);

    cr_expect_eq(wl.tp, 4);
    cr_expect_eq(wl.pp, 1);
}

Test(pol_workload, bad_flag_value_names_the_flag)
{
    static const char *const argv[] = {"vllm", "serve", "--tensor_parallel_size=eight"};
    struct pol_pod_facts f = {.argv = argv, .nargv = 3, .accel = 8};
    struct pol_workload wl;
    struct tpx_err err = TPX_ERR_INIT;

    cr_expect_eq(pol_workload_infer(&f, &wl, &err), TPX_EINVAL);
    cr_expect_str_eq(err.msg, "flag '--tensor-parallel-size': 'eight' is not a positive whole "
                              "number");
}

/* tests/fixtures/manifests/lws-vllm-gpu-llama405b-tp8-pp2.yaml, leader and worker, as the
 * YAML parser folds them. */
static const char *const vllm_leader[] = {
    "sh", "-c",
    "bash /vllm-workspace/examples/online_serving/multi-node-serving.sh leader "
    "--ray_cluster_size=$(LWS_GROUP_SIZE); python3 -m vllm.entrypoints.openai.api_server "
    "--port 8080 --model meta-llama/Llama-3.1-405B-Instruct --tensor-parallel-size 8 "
    "--pipeline_parallel_size 2"};
static const char *const vllm_worker[] = {
    "sh", "-c",
    "bash /vllm-workspace/examples/online_serving/multi-node-serving.sh worker "
    "--ray_address=$(LWS_LEADER_ADDRESS)"};
/* tests/fixtures/manifests/lws-sglang-llama8b-tp2-2nodes.yaml (leader; the worker is the same) */
static const char *const sglang_leader[] = {"python3",
                                            "-m",
                                            "sglang.launch_server",
                                            "--model-path",
                                            "meta-llama/Meta-Llama-3.1-8B-Instruct",
                                            "--tp",
                                            "2",
                                            "--dist-init-addr",
                                            "$(LWS_LEADER_ADDRESS):20000",
                                            "--nnodes",
                                            "$(LWS_GROUP_SIZE)",
                                            "--node-rank",
                                            "$(LWS_WORKER_INDEX)",
                                            "--trust-remote-code",
                                            "--host",
                                            "0.0.0.0",
                                            "--port",
                                            "40000"};

Test(pol_workload, lws_vllm_manifest_leader_and_worker)
{
    const struct topo_kv leader_labels[] = {
        {"leaderworkerset.sigs.k8s.io/name", "vllm"},
        {"leaderworkerset.sigs.k8s.io/group-index", "3"},
        {"leaderworkerset.sigs.k8s.io/worker-index", "0"},
        {"leaderworkerset.sigs.k8s.io/group-key", "689ad1f7c5"},
    };
    const struct topo_kv worker_labels[] = {
        {"leaderworkerset.sigs.k8s.io/name", "vllm"},
        {"leaderworkerset.sigs.k8s.io/group-index", "3"},
        {"leaderworkerset.sigs.k8s.io/worker-index", "1"},
        {"leaderworkerset.sigs.k8s.io/group-key", "689ad1f7c5"},
    };
    const struct topo_kv ann[] = {{"leaderworkerset.sigs.k8s.io/size", "2"}};
    struct pol_pod_facts f = {.name = "vllm-3",
                              .ns = "llm",
                              .labels = leader_labels,
                              .nlabels = 4,
                              .annotations = ann,
                              .nannotations = 1,
                              .argv = vllm_leader,
                              .nargv = 3,
                              .accel = 8,
                              .resource = "nvidia.com/gpu"};
    struct pol_workload wl;
    struct tpx_err err = TPX_ERR_INIT;

    cr_assert_eq(pol_workload_infer(&f, &wl, &err), TPX_OK, "%s", err.msg);
    cr_expect(wl.has_intent);
    cr_expect_eq(wl.tp, 8);
    cr_expect_eq(wl.pp, 2);
    cr_expect(wl.tp_explicit);
    cr_expect_eq(wl.group_size, 2);
    cr_expect_eq(wl.pod_index, 0);
    cr_expect_str_eq(wl.group, "llm/lws:689ad1f7c5");
    cr_expect_str_eq(wl.display, "llm/vllm group 3");
    cr_expect_eq(wl.scope, POL_SCOPE_RACK);

    f.name = "vllm-3-1";
    f.labels = worker_labels;
    f.argv = vllm_worker;
    cr_assert_eq(pol_workload_infer(&f, &wl, &err), TPX_OK, "%s", err.msg);
    cr_expect(wl.has_intent, "LWS labels are an intent");
    cr_expect_not(wl.tp_explicit, "the worker runs Ray, not vLLM");
    cr_expect_str_eq(wl.tp_source, "default");
    cr_expect_eq(wl.pod_index, 1);
    cr_expect_eq(wl.group_size, 2);
    cr_expect_str_eq(wl.group, "llm/lws:689ad1f7c5");
}

Test(pol_workload, lws_sglang_manifest_tp_over_nodes)
{
    const struct topo_kv labels[] = {
        {"leaderworkerset.sigs.k8s.io/name", "sglang"},
        {"leaderworkerset.sigs.k8s.io/group-index", "0"},
        {"leaderworkerset.sigs.k8s.io/worker-index", "0"},
    };
    const struct topo_kv ann[] = {{"leaderworkerset.sigs.k8s.io/size", "2"}};
    struct pol_pod_facts f = {.name = "sglang-0",
                              .ns = "default",
                              .labels = labels,
                              .nlabels = 3,
                              .annotations = ann,
                              .nannotations = 1,
                              .argv = sglang_leader,
                              .nargv = NELEM(sglang_leader),
                              .accel = 1,
                              .resource = "nvidia.com/gpu"};
    struct pol_workload wl;
    struct tpx_err err = TPX_ERR_INIT;
    struct topo_cluster *c = topo_cluster_synthetic("example", &err);

    cr_assert_eq(pol_workload_infer(&f, &wl, &err), TPX_OK, "%s", err.msg);
    cr_expect_eq(wl.tp, 2, "SGLang's --tp counts GPUs over both pods");
    cr_expect_str_eq(wl.tp_source, "sglang flag");
    cr_expect_eq(wl.group_size, 2);
    cr_expect_eq(wl.accel_per_pod, 1);
    cr_expect_str_eq(wl.group, "default/lws:sglang/0", "name + group-index without group-key");
    /* 2 x 1 GPU = tp 2: valid; the TP group spans the two pods */
    cr_expect_eq(pol_workload_validate(&wl, c, &err), TPX_OK, "%s", err.msg);
    topo_cluster_free(c);
}

Test(pol_workload, sglang_nnodes_gives_the_group_size)
{
    static const char *const argv[] = {"python3",  "-m", "sglang.launch_server", "--tp", "16",
                                       "--nnodes", "2"};
    struct pol_pod_facts f = {.argv = argv,
                              .nargv = NELEM(argv),
                              .accel = 8,
                              .annotations = (const struct topo_kv[]){{"topox.io/group", "g"}},
                              .nannotations = 1};
    struct pol_workload wl;
    struct tpx_err err = TPX_ERR_INIT;

    cr_assert_eq(pol_workload_infer(&f, &wl, &err), TPX_OK);
    cr_expect_eq(wl.group_size, 2);
    cr_expect(wl.size_explicit);
    cr_expect_str_eq(wl.group, "default/g");
}

Test(pol_workload, annotations_win_over_flags)
{
    static const char *const argv[] = {"vllm", "serve", "-tp", "2", "-pp", "8"};
    const struct topo_kv ann[] = {
        {"topox.io/tensor-parallel-size", "8"},
        {"topox.io/pipeline-parallel-size", "4"},
        {"topox.io/group", "job-a"},
        {"topox.io/group-size", "4"},
        {"topox.io/pod-index", "2"},
        {"topox.io/pipeline-scope", "block"},
        {"topox.io/placement", "preferred"},
        {"topox.io/num-ubatches", "32"},
        {"topox.io/model-layers", "126"},
    };
    struct pol_pod_facts f = {.ns = "ml",
                              .annotations = ann,
                              .nannotations = NELEM(ann),
                              .argv = argv,
                              .nargv = NELEM(argv),
                              .accel = 8};
    struct pol_workload wl;
    struct tpx_err err = TPX_ERR_INIT;

    cr_assert_eq(pol_workload_infer(&f, &wl, &err), TPX_OK, "%s", err.msg);
    cr_expect_eq(wl.tp, 8);
    cr_expect_eq(wl.pp, 4);
    cr_expect_str_eq(wl.tp_source, "annotation");
    cr_expect_str_eq(wl.group, "ml/job-a");
    cr_expect_eq(wl.group_size, 4);
    cr_expect_eq(wl.pod_index, 2);
    cr_expect_eq(wl.scope, POL_SCOPE_BLOCK);
    cr_expect(wl.preferred);
    cr_expect_eq(wl.num_ubatches, 32);
    cr_expect_eq(wl.model_layers, 126);
}

Test(pol_workload, bad_annotations_name_the_annotation)
{
    static const struct {
        const char *key, *value, *want;
    } cases[] = {
        {"topox.io/tensor-parallel-size", "eight", "annotation 'topox.io/tensor-parallel-size'"},
        {"topox.io/tensor-parallel-size", "0", "positive"},
        {"topox.io/pipeline-parallel-size", "-2", "'topox.io/pipeline-parallel-size'"},
        {"topox.io/group-size", "x", "'topox.io/group-size'"},
        {"topox.io/pod-index", "first", "'topox.io/pod-index'"},
        {"topox.io/pipeline-scope", "galaxy", "is not rack, block or zone"},
        {"topox.io/placement", "maybe", "is not required or preferred"},
    };
    for (size_t i = 0; i < NELEM(cases); i++) {
        const struct topo_kv ann[] = {{cases[i].key, cases[i].value}};
        struct pol_pod_facts f = {.annotations = ann, .nannotations = 1, .accel = 8};
        struct pol_workload wl;
        struct tpx_err err = TPX_ERR_INIT;
        cr_expect_eq(pol_workload_infer(&f, &wl, &err), TPX_EINVAL, "case %zu", i);
        cr_expect(strstr(err.msg, cases[i].want) != NULL, "case %zu: %s", i, err.msg);
    }
}

Test(pol_workload, groups_indexes_and_intent)
{
    const struct topo_kv jobset[] = {
        {"jobset.sigs.k8s.io/job-key", "abc123"},
        {"jobset.sigs.k8s.io/jobset-name", "train"},
        {"jobset.sigs.k8s.io/job-index", "1"},
        {"batch.kubernetes.io/job-completion-index", "3"},
    };
    struct pol_pod_facts f = {
        .name = "train-w-1-3", .ns = "ml", .labels = jobset, .nlabels = 4, .accel = 8};
    struct pol_workload wl;
    struct tpx_err err = TPX_ERR_INIT;

    cr_assert_eq(pol_workload_infer(&f, &wl, &err), TPX_OK);
    cr_expect(wl.has_intent);
    cr_expect_str_eq(wl.group, "ml/jobset:abc123");
    cr_expect_str_eq(wl.display, "ml/train job 1");
    cr_expect_eq(wl.pod_index, 3);

    /* a plain pod with GPUs and no hint: no intent, its own group */
    f = (struct pol_pod_facts){.name = "notebook", .ns = "dev", .accel = 1};
    cr_assert_eq(pol_workload_infer(&f, &wl, &err), TPX_OK);
    cr_expect_not(wl.has_intent);
    cr_expect_str_eq(wl.group, "");
    cr_expect_eq(wl.group_size, 1);
    cr_expect_str_eq(wl.display, "dev/notebook");

    /* flags but no accelerators: no intent */
    f = (struct pol_pod_facts){.argv = (const char *const[]){"vllm", "-tp", "8"}, .nargv = 3};
    cr_assert_eq(pol_workload_infer(&f, &wl, &err), TPX_OK);
    cr_expect_not(wl.has_intent);

    /* flags alone are an intent; the pod is its own group of one */
    f.accel = 8;
    cr_assert_eq(pol_workload_infer(&f, &wl, &err), TPX_OK);
    cr_expect(wl.has_intent);
    cr_expect_eq(wl.group_size, 1);
    cr_expect_eq(wl.pod_index, 0);
}

/* RoleBasedGroup pods as each controller generation labels them (sgl-project/rbg
 * api/workloads/constants/label.go; the v1alpha1 -> v1alpha2 migration guide): a v1alpha2
 * leaderWorkerPattern instance is a group of component-size pods indexed by component-index; a
 * v1alpha1 leader-worker role is a LeaderWorkerSet and is read from the LWS labels; a standalone
 * instance or a StatefulSet's pod is its own group. Group, size and index come from the labels
 * alone, with no engine flag and no topox annotation. */
Test(pol_workload, rbg_groups_of_each_generation)
{
    const struct topo_kv v2[] = {
        {"rbg.workloads.x-k8s.io/group-name", "pd"},
        {"rbg.workloads.x-k8s.io/role-name", "decode"},
        {"rbg.workloads.x-k8s.io/role-instance-name", "pd-decode-3"},
        {"rbg.workloads.x-k8s.io/role-instance-index", "3"},
        {"rbg.workloads.x-k8s.io/component-name", "worker"},
        {"rbg.workloads.x-k8s.io/component-id", "0"},
        {"rbg.workloads.x-k8s.io/component-index", "1"},
        {"rbg.workloads.x-k8s.io/component-size", "2"},
    };
    const struct topo_kv v1[] = {
        {"rolebasedgroup.workloads.x-k8s.io/name", "pd"},
        {"rolebasedgroup.workloads.x-k8s.io/role", "decode"},
        {"leaderworkerset.sigs.k8s.io/name", "pd-decode"},
        {"leaderworkerset.sigs.k8s.io/group-index", "3"},
        {"leaderworkerset.sigs.k8s.io/worker-index", "1"},
    };
    const struct topo_kv v1_ann[] = {{"leaderworkerset.sigs.k8s.io/size", "2"}};
    struct pol_pod_facts f = {
        .name = "pd-decode-3-1", .ns = "llm", .labels = v2, .nlabels = 8, .accel = 4};
    struct pol_workload a, b;
    struct tpx_err err = TPX_ERR_INIT;

    cr_assert_eq(pol_workload_infer(&f, &a, &err), TPX_OK, "%s", err.msg);
    cr_expect(a.has_intent, "an RBG instance is a group: an intent without flags");
    cr_expect_str_eq(a.group, "llm/rbg:pd-decode-3");
    cr_expect_str_eq(a.display, "llm/pd-decode-3");
    cr_expect_eq(a.group_size, 2);
    cr_expect(a.size_explicit);
    cr_expect_eq(a.pod_index, 1);
    cr_expect_str_eq(a.kv_group, "llm/rbg:pd");
    cr_expect_eq(a.kv_role, 'd');
    /* the group is written, its split is not: uncertain, tp 1 x dp 8 (the certainty rule) */
    cr_expect(!a.layout.certain);
    cr_expect(strstr(a.layout.why, "nothing written says how its 4 GPUs are split"), "%s",
              a.layout.why);
    cr_expect_eq(a.tp * a.pp * a.dp, a.group_size * a.accel_per_pod);
    cr_expect_eq(a.tp, 1);

    f = (struct pol_pod_facts){.name = "pd-decode-3-1",
                               .ns = "llm",
                               .labels = v1,
                               .nlabels = 5,
                               .annotations = v1_ann,
                               .nannotations = 1,
                               .accel = 4};
    cr_assert_eq(pol_workload_infer(&f, &b, &err), TPX_OK, "%s", err.msg);
    cr_expect(b.has_intent);
    cr_expect_str_eq(b.group, "llm/lws:pd-decode/3");
    cr_expect_eq(b.group_size, a.group_size);
    cr_expect_eq(b.pod_index, a.pod_index);
    cr_expect_str_eq(b.kv_group, a.kv_group);
    cr_expect_eq(b.kv_role, a.kv_role);

    /* a standalone instance (no component-size) is one pod: its own group, index 0 */
    f = (struct pol_pod_facts){
        .name = "pd-router-0", .ns = "llm", .labels = v2, .nlabels = 4, .accel = 4};
    cr_assert_eq(pol_workload_infer(&f, &a, &err), TPX_OK, "%s", err.msg);
    cr_expect_str_eq(a.group, "");
    cr_expect_eq(a.group_size, 1);
    cr_expect_eq(a.pod_index, 0);
    cr_expect_str_eq(a.kv_group, "llm/rbg:pd");

    /* the controller's size wins no argument, as with LWS */
    {
        const struct topo_kv ann[] = {{"topox.io/group-size", "4"}};
        f = (struct pol_pod_facts){.name = "pd-decode-3-1",
                                   .ns = "llm",
                                   .labels = v2,
                                   .nlabels = 8,
                                   .annotations = ann,
                                   .nannotations = 1,
                                   .accel = 4};
        cr_expect_eq(pol_workload_infer(&f, &a, &err), TPX_EINVAL);
        cr_expect(strstr(err.msg, "component-size 2"), "%s", err.msg);
    }
}

/* --- validation --- */

/* Grove: the KV deployment is the PodCliqueSet (app.kubernetes.io/part-of) and, where the pod
 * has it, its replica (grove.io/podcliqueset-replica-index, ai-dynamo/grove operator/api/common
 * labels.go): replica 1's prefill pairs with replica 1's decode only. The role is the
 * PodClique's name. */
Test(pol_workload, grove_kv_deployment_is_the_podcliqueset_replica)
{
    static const struct {
        const char *part_of, *pclq, *idx;
        const char *group;
        char role;
    } cases[] = {
        {"pd", "pd-1-prefill-0-pworker", "1", "llm/grove:pd/1", 'p'},
        {"pd", "pd-1-decode-0-dworker", "1", "llm/grove:pd/1", 'd'},
        {"pd", "pd-0-decode-0-dworker", "0", "llm/grove:pd/0", 'd'},
        /* no replica index (or an empty one): the set's name alone, as before */
        {"pd", "pd-0-prefill", NULL, "llm/grove:pd", 'p'},
        {"pd", "pd-0-prefill", "", "llm/grove:pd", 'p'},
        /* the set's own name says nothing of the role: the rest of the clique's name does */
        {"prefill-decode", "prefill-decode-1-decode-0-dworker", "1", "llm/grove:prefill-decode/1",
         'd'},
        {"decode-a", "decode-a-0-worker", "0", "llm/grove:decode-a/0", 0},
        /* part-of without the clique label says nothing of KV */
        {"pd", NULL, "0", "", 0},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct topo_kv kv[3];
        size_t n = 0;
        struct pol_pod_facts f = {.name = "p", .ns = "llm", .labels = kv, .accel = 8};
        struct pol_workload wl;
        struct tpx_err err = TPX_ERR_INIT;

        kv[n++] = (struct topo_kv){"app.kubernetes.io/part-of", cases[i].part_of};
        if (cases[i].pclq)
            kv[n++] = (struct topo_kv){"grove.io/podclique", cases[i].pclq};
        if (cases[i].idx)
            kv[n++] = (struct topo_kv){"grove.io/podcliqueset-replica-index", cases[i].idx};
        f.nlabels = n;
        cr_assert_eq(pol_workload_infer(&f, &wl, &err), TPX_OK, "%s", err.msg);
        cr_expect_str_eq(wl.kv_group, cases[i].group, "case %zu", i);
        cr_expect_eq(wl.kv_role, cases[i].role, "case %zu: %d", i, wl.kv_role);
    }
}
/* A Grove pod is labelled app.kubernetes.io/name (its PodClique) by the operator; with llm-d's
 * llm-d.ai/role on its clique it is still Grove's, paired within its PodCliqueSet replica, its
 * role from llm-d.ai/role where the clique's name says none (not KServe's rule, which would key
 * each clique apart so prefill and decode never pair). */
Test(pol_workload, grove_pods_with_llm_d_roles_pair_within_their_replica)
{
    static const char *const clique[] = {"pd-0-pworker", "pd-0-dworker"};
    static const char *const role[] = {"prefill", "decode"};

    for (size_t i = 0; i < 2; i++) {
        struct topo_kv kv[] = {{"app.kubernetes.io/part-of", "pd"},
                               {"app.kubernetes.io/name", clique[i]},
                               {"grove.io/podclique", clique[i]},
                               {"grove.io/podcliqueset-replica-index", "0"},
                               {"llm-d.ai/role", role[i]}};
        struct pol_pod_facts f = {.name = "p", .ns = "llm", .labels = kv, .nlabels = 5, .accel = 8};
        struct pol_workload wl;
        struct tpx_err err = TPX_ERR_INIT;

        cr_assert_eq(pol_workload_infer(&f, &wl, &err), TPX_OK, "%s", err.msg);
        cr_expect_str_eq(wl.kv_group, "llm/grove:pd/0", "%s", clique[i]);
        cr_expect_eq(wl.kv_role, i == 0 ? 'p' : 'd', "%s: %d", clique[i], wl.kv_role);
    }
}

static struct pol_workload wl_of(unsigned tp, unsigned pp, unsigned g, unsigned n)
{
    struct pol_workload wl = {.has_intent = true,
                              .tp = tp,
                              .pp = pp,
                              .dp = 1,
                              .accel_per_pod = g,
                              .group_size = n,
                              .pod_index = -1,
                              .tp_explicit = true,
                              .resource = "nvidia.com/gpu"};
    return wl;
}

Test(pol_workload, validation_messages)
{
    static const struct {
        const char *spec;
        unsigned tp, pp, g, n;
        const char *want;
    } cases[] = {
        {"example", 16, 1, 8, 2,
         "tensor-parallel-size 16 needs one interconnect domain of 16 GPUs; the largest here has "
         "8 (nvswitch, one node). All-reduce would cross nodes. Try tensor-parallel-size 8 with "
         "pipeline-parallel-size 2."},
        {"example", 32, 2, 8, 8,
         "tensor-parallel-size 32 needs one interconnect domain of 32 GPUs; the largest here has "
         "8 (nvswitch, one node). All-reduce would cross nodes. Try tensor-parallel-size 8 with "
         "pipeline-parallel-size 8."},
        {"racks=1,nodes-per-rack=18,gpus-per-node=4,interconnect=nvlink,domain-nodes=9", 72, 1, 4,
         18,
         "tensor-parallel-size 72 needs one interconnect domain of 72 GPUs; the largest here has "
         "36 (nvlink, 9 nodes). All-reduce would cross nodes. Try tensor-parallel-size 36 with "
         "pipeline-parallel-size 2."},
        {"racks=1,gpus-per-node=16,domains-per-node=2,interconnect=hccs,"
         "resource=huawei.com/Ascend910",
         16, 1, 16, 1,
         "tensor-parallel-size 16 needs one interconnect domain of 16 NPUs; the largest here has "
         "8 (hccs, one node). All-reduce would cross nodes. Try tensor-parallel-size 8 with "
         "pipeline-parallel-size 2."},
        {"example", 8, 2, 8, 3,
         "tensor-parallel-size 8 x pipeline-parallel-size 2 x data-parallel-size 1 = 16 GPUs, but "
         "the group has 3 pods x 8 GPUs = 24"},
        {"example", 8, 1, 3, 0, "pods of 3 GPUs do not align with tensor-parallel-size 8"},
        {"example", 0, 1, 8, 1, "tensor-parallel-size must be a positive number"},
        {"example", 8, 0, 8, 1, "pipeline-parallel-size must be a positive number"},
    };
    for (size_t i = 0; i < NELEM(cases); i++) {
        struct tpx_err err = TPX_ERR_INIT;
        struct topo_cluster *c = topo_cluster_synthetic(cases[i].spec, &err);
        struct pol_workload wl = wl_of(cases[i].tp, cases[i].pp, cases[i].g, cases[i].n);
        cr_assert_not_null(c, "%s", err.msg);
        if (strstr(cases[i].spec, "Ascend"))
            strcpy(wl.resource, "huawei.com/Ascend910");
        cr_expect_eq(pol_workload_validate(&wl, c, &err), TPX_EINVAL, "case %zu", i);
        cr_expect(strncmp(err.msg, cases[i].want, strlen(cases[i].want)) == 0, "case %zu: %s", i,
                  err.msg);
        topo_cluster_free(c);
    }
}

Test(pol_workload, valid_layouts_pass)
{
    static const struct {
        const char *spec;
        unsigned tp, pp, g, n;
    } cases[] = {
        {"example", 8, 2, 8, 2},
        {"example", 4, 2, 8, 1},
        {"example", 8, 1, 4, 2},
        {"racks=1,nodes-per-rack=18,gpus-per-node=4,interconnect=nvlink,domain-nodes=18", 72, 1, 4,
         18},
    };
    for (size_t i = 0; i < NELEM(cases); i++) {
        struct tpx_err err = TPX_ERR_INIT;
        struct topo_cluster *c = topo_cluster_synthetic(cases[i].spec, &err);
        struct pol_workload wl = wl_of(cases[i].tp, cases[i].pp, cases[i].g, cases[i].n);
        cr_expect_eq(pol_workload_validate(&wl, c, &err), TPX_OK, "case %zu: %s", i, err.msg);
        topo_cluster_free(c);
    }
}

Test(pol_workload, defaults_are_not_checked_against_the_group)
{
    /* an LWS worker: tp is a default, the group has 2 pods; no product check */
    struct pol_workload wl = wl_of(8, 1, 8, 2);
    struct tpx_err err = TPX_ERR_INIT;
    struct topo_cluster *c = topo_cluster_synthetic("example", &err);

    wl.tp_explicit = false;
    cr_expect_eq(pol_workload_validate(&wl, c, &err), TPX_OK, "%s", err.msg);
    wl.has_intent = false;
    wl.tp = 0;
    cr_expect_eq(pol_workload_validate(&wl, c, &err), TPX_OK);
    topo_cluster_free(c);
}

Test(pol_workload, group_size_is_bounded_by_the_controller_and_the_cluster)
{
    /* group-size 1000000 used to pass validation and, preferred, hold a rack for the TTL */
    const struct topo_kv labels[] = {{"leaderworkerset.sigs.k8s.io/name", "vllm"},
                                     {"leaderworkerset.sigs.k8s.io/group-index", "0"}};
    const struct topo_kv ann[] = {{"leaderworkerset.sigs.k8s.io/size", "2"},
                                  {"topox.io/group-size", "1000000"}};
    struct pol_pod_facts f = {.name = "vllm-0",
                              .ns = "llm",
                              .labels = labels,
                              .nlabels = 2,
                              .annotations = ann,
                              .nannotations = 2,
                              .accel = 8,
                              .resource = "nvidia.com/gpu"};
    struct pol_workload wl;
    struct tpx_err err = TPX_ERR_INIT;
    struct topo_cluster *c = topo_cluster_synthetic("example", &err);

    cr_assert_not_null(c, "%s", err.msg);
    cr_expect_eq(pol_workload_infer(&f, &wl, &err), TPX_EINVAL);
    cr_expect(strstr(err.msg, "topox.io/group-size") && strstr(err.msg, "size 2"), "%s", err.msg);

    /* the example cluster has 128 GPUs: 17 pods of 8 fit nowhere, 16 fill it exactly */
    wl = wl_of(8, 1, 8, 17);
    wl.tp_explicit = false;
    err = (struct tpx_err)TPX_ERR_INIT;
    cr_expect_eq(pol_workload_validate(&wl, c, &err), TPX_EINVAL);
    cr_expect(strstr(err.msg, "17 pods x 8 GPUs = 136 GPUs cannot be placed: the cluster has 128"),
              "%s", err.msg);
    wl.group_size = 16;
    cr_expect_eq(pol_workload_validate(&wl, c, &err), TPX_OK, "%s", err.msg);
    /* preferred: valid, and the ledger holds nothing for it (test_filter.c) */
    wl.group_size = 1000000;
    wl.preferred = true;
    cr_expect_eq(pol_workload_validate(&wl, c, &err), TPX_OK, "%s", err.msg);
    topo_cluster_free(c);
}

/* The group-size check compares tp x pp x dp with the group's pods x accelerators only when all
 * three are known. tp from the annotation with the pipeline size in an unresolved flag
 * (`-pp $(PP)`): the product is not known, so a group of 2 pods of 8 is not "8 GPUs, but the
 * group has 16" (a false rejection): the layout is uncertain, placed as preferred, and says why. */
Test(pol_workload, an_unknown_size_is_never_checked_against_the_group)
{
    const char *argv[] = {"vllm", "serve", "m", "-pp", "$(PP)"};
    const struct topo_kv labels[] = {{"leaderworkerset.sigs.k8s.io/name", "vllm"},
                                     {"leaderworkerset.sigs.k8s.io/group-index", "0"}};
    const struct topo_kv ann[] = {{"leaderworkerset.sigs.k8s.io/size", "2"},
                                  {"topox.io/tensor-parallel-size", "8"}};
    struct pol_pod_facts f = {.name = "vllm-0",
                              .ns = "llm",
                              .labels = labels,
                              .nlabels = 2,
                              .annotations = ann,
                              .nannotations = 2,
                              .argv = argv,
                              .nargv = 5,
                              .accel = 8,
                              .resource = "nvidia.com/gpu"};
    struct pol_workload wl;
    struct tpx_err err = TPX_ERR_INIT;
    struct topo_cluster *c = topo_cluster_synthetic("example", &err);

    cr_assert_not_null(c, "%s", err.msg);
    cr_assert_eq(pol_workload_infer(&f, &wl, &err), TPX_OK, "%s", err.msg);
    cr_expect(wl.has_intent);
    cr_expect_eq(wl.group_size, 2);
    cr_expect_eq(wl.layout.pp, 0, "pp is unknown");
    cr_expect_not(wl.layout.certain, "an unknown size that leaves the group unexplained");
    cr_expect(wl.preferred);
    cr_expect(strstr(wl.layout.why, "group has 2 pods") != NULL, "%s", wl.layout.why);
    cr_expect_eq(pol_workload_validate(&wl, c, &err), TPX_OK, "%s", err.msg);

    /* validation alone: the same sizes with pp unknown are not compared */
    wl = wl_of(8, 1, 8, 2);
    wl.layout.origin[POL_SIZE_PP].unknown = true;
    cr_expect_eq(pol_workload_validate(&wl, c, &err), TPX_OK, "%s", err.msg);
    /* known, they are: the declared size contradicts tp 8 x pp 1 x dp 1 */
    wl.layout.origin[POL_SIZE_PP].unknown = false;
    cr_expect_eq(pol_workload_validate(&wl, c, &err), TPX_EINVAL);
    cr_expect(strstr(err.msg, "but the group has 2 pods x 8 GPUs = 16") != NULL, "%s", err.msg);
    topo_cluster_free(c);
}

/* RoleBasedGroup v1alpha2 labels name a group only for a leaderWorkerPattern instance. A
 * customComponentsPattern instance's components share its role-instance-name and each one's
 * component-size counts that component; a standalone pod's is "1" (RoleInstanceSetReconciler).
 * Read as one group, a bound component would confine the others to its rack for certain. */
Test(pol_workload, rbg_components_and_standalone_pods_are_no_group_of_their_component_size)
{
    const struct topo_kv pre[] = {
        {"rbg.workloads.x-k8s.io/role-instance-name", "g-r-0"},
        {"rbg.workloads.x-k8s.io/component-name", "prefill"},
        {"rbg.workloads.x-k8s.io/component-id", "0"},
        {"rbg.workloads.x-k8s.io/component-index", "0"},
        {"rbg.workloads.x-k8s.io/component-size", "1"},
    };
    const struct topo_kv dec[] = {
        {"rbg.workloads.x-k8s.io/role-instance-name", "g-r-0"},
        {"rbg.workloads.x-k8s.io/component-name", "decode"},
        {"rbg.workloads.x-k8s.io/component-id", "0"},
        {"rbg.workloads.x-k8s.io/component-size", "3"},
    };
    /* a "worker" whose component-id does not say component-index - 1 is not the pattern's */
    const struct topo_kv odd[] = {
        {"rbg.workloads.x-k8s.io/role-instance-name", "g-r-0"},
        {"rbg.workloads.x-k8s.io/component-name", "worker"},
        {"rbg.workloads.x-k8s.io/component-id", "2"},
        {"rbg.workloads.x-k8s.io/component-index", "1"},
        {"rbg.workloads.x-k8s.io/component-size", "4"},
    };
    const struct topo_kv solo[] = {
        {"rbg.workloads.x-k8s.io/role-instance-name", "g-r-0"},
        {"rbg.workloads.x-k8s.io/component-size", "1"},
    };
    const struct topo_kv grp[] = {{"topox.io/group", "inst0"}, {"topox.io/group-size", "4"}};
    const struct topo_kv grp_only[] = {{"topox.io/group", "pp2"}};
    const char *const argv[] = {
        "vllm", "serve", "m", "--tensor-parallel-size", "8", "--pipeline-parallel-size", "2"};
    struct pol_pod_facts fa = {.name = "a", .ns = "llm", .labels = pre, .nlabels = 5, .accel = 8};
    struct pol_pod_facts fb = {.name = "b", .ns = "llm", .labels = dec, .nlabels = 4, .accel = 8};
    struct pol_pod_facts fo = {.name = "o", .ns = "llm", .labels = odd, .nlabels = 5, .accel = 8};
    struct pol_workload a, b, w;
    struct tpx_err err = TPX_ERR_INIT;
    struct topo_cluster *c = topo_cluster_synthetic("example", &err);
    struct pol_ledger *l;
    struct pol_placement p;
    struct pol_filter_result r;
    size_t nn, all[512];
    char warn[256];

    cr_assert_eq(pol_workload_infer(&fa, &a, &err), TPX_OK, "%s", err.msg);
    cr_assert_eq(pol_workload_infer(&fb, &b, &err), TPX_OK, "%s", err.msg);
    cr_expect_str_eq(a.group, "");
    cr_expect_str_eq(b.group, "");
    cr_expect_eq(b.group_size, 1);
    cr_assert_eq(pol_workload_infer(&fo, &w, &err), TPX_OK, "%s", err.msg);
    cr_expect_str_eq(w.group, "");

    /* the prefill component bound: the decode component is refused nowhere */
    cr_assert_not_null(c, "%s", err.msg);
    l = pol_ledger_new(c, &err);
    cr_assert_not_null(l, "%s", err.msg);
    nn = topo_cluster_node_count(c);
    cr_assert_leq(nn, 512);
    for (size_t i = 0; i < nn; i++)
        all[i] = i;
    cr_assert_eq(pol_record(l, &a, "ua", "a", 0, 5000, 600, &p, warn, sizeof(warn), &err), TPX_OK,
                 "%s", err.msg);
    cr_assert_eq(pol_filter(l, &b, all, nn, 5000, &r, &err), TPX_OK, "%s", err.msg);
    for (size_t i = 0; i < nn; i++)
        cr_expect_neq(r.verdict[i], POL_UNRESOLVABLE, "node %zu: %s", i, r.reasons[r.reason[i]]);
    pol_filter_result_release(&r);
    pol_ledger_free(l);
    topo_cluster_free(c);

    /* the user's group and size on a component: the component's size does not argue */
    fa.annotations = grp;
    fa.nannotations = 2;
    cr_assert_eq(pol_workload_infer(&fa, &w, &err), TPX_OK, "%s", err.msg);
    cr_expect_str_eq(w.group, "llm/inst0");
    cr_expect_eq(w.group_size, 4);

    /* a standalone pod grouped by the user keeps the size its flags give (2 pods of 8: pp 2) */
    fa = (struct pol_pod_facts){.name = "s",
                                .ns = "llm",
                                .labels = solo,
                                .nlabels = 2,
                                .annotations = grp_only,
                                .nannotations = 1,
                                .argv = argv,
                                .nargv = 7,
                                .accel = 8};
    cr_assert_eq(pol_workload_infer(&fa, &w, &err), TPX_OK, "%s", err.msg);
    cr_expect_str_eq(w.group, "llm/pp2");
    cr_expect_eq(w.group_size, 2);
    cr_expect_eq(w.pp, 2);
    cr_expect(w.layout.certain);
}

/* issue 19 item 4: traffic, not the word "tp", decides whether a TP group may cross nodes. A
 * certain dense layout whose every-layer all-reduce would cross nodes is refused, and the message
 * knows EP, DP-attention and the owner's annotation; EP, DP-attention or the annotation place it
 * as TP groups of the largest domain, the group in its rack. */
Test(pol_workload, cross_node_tp_is_decided_by_traffic)
{
    struct tpx_err err = TPX_ERR_INIT;
    struct topo_cluster *c = topo_cluster_synthetic("example", &err); /* 8-GPU nvswitch nodes */
    struct pol_workload dense = wl_of(16, 1, 8, 2);

    cr_assert_not_null(c, "%s", err.msg);
    dense.layout.certain = true;
    dense.layout.ep = 1;
    struct pol_workload moe = dense, dpa = dense, allow = dense, unsure;
    moe.layout.ep = 16;
    dpa.layout.dp_attention = true;
    allow.cross_node_tp = true;
    unsure = moe;
    unsure.layout.certain = false;

    cr_expect_eq(pol_workload_validate(&dense, c, &err), TPX_EINVAL);
    cr_expect(strstr(err.msg, "All-reduce would cross nodes"), "%s", err.msg);
    cr_expect(strstr(err.msg, "EP or DP-attention"), "%s", err.msg);
    cr_expect(strstr(err.msg, "topox.io/cross-node-tp: allow"), "%s", err.msg);
    cr_expect_not(pol_workload_spans_nodes(&dense));
    for (struct pol_workload *w = &moe; w; w = w == &moe ? &dpa : w == &dpa ? &allow : NULL) {
        cr_expect_eq(pol_workload_validate(w, c, &err), TPX_OK, "%s", err.msg);
        cr_expect(pol_workload_spans_nodes(w));
        pol_workload_fit_tp(w, 8);
        cr_expect_eq(w->tp, 8);
        cr_expect_eq(w->dp, 2);
        cr_expect_eq(w->tp_spans, 16);
        cr_expect_eq(pol_workload_validate(w, c, &err), TPX_OK, "%s", err.msg);
    }
    /* an uncertain layout is preferred already: never fitted, never a case */
    pol_workload_fit_tp(&unsure, 8);
    cr_expect_eq(unsure.tp, 16);
    cr_expect_not(pol_workload_spans_nodes(&unsure));
    /* a dense group that fits a domain is left alone */
    dense.tp = 8;
    dense.group_size = 1;
    pol_workload_fit_tp(&dense, 8);
    cr_expect_eq(dense.tp_spans, 0);
    topo_cluster_free(c);
}

Test(pol_workload, cross_node_tp_annotation_takes_allow_only)
{
    const char *argv[] = {"vllm", "serve", "m", "--tensor-parallel-size", "16"};
    const struct topo_kv ann[] = {{"topox.io/cross-node-tp", "yes"}};
    struct pol_pod_facts f = {
        .name = "p", .argv = argv, .nargv = 5, .annotations = ann, .nannotations = 1, .accel = 8};
    struct pol_workload wl;
    struct tpx_err err = TPX_ERR_INIT;

    cr_expect_eq(pol_workload_infer(&f, &wl, &err), TPX_EINVAL);
    cr_expect_str_eq(err.msg, "annotation 'topox.io/cross-node-tp': 'yes' is not allow");
}

/* A pod naming a PodGroup (spec.schedulingGroup.podGroupName) whose gang minCount is known is a
 * member of that group, before its JobSet's labels (the pods of the JobSet TAS sample of
 * kubernetes-sigs/jobset carry both): the group is the PodGroup, its size the minCount, and the
 * PodGroup's topology level narrows the scope. Without a known minCount the PodGroup makes no
 * group (the JobSet's stands). */
Test(pol_workload, podgroup_is_the_group_with_its_min_count)
{
    const struct topo_kv jobset[] = {
        {"jobset.sigs.k8s.io/job-key", "abc123"},
        {"jobset.sigs.k8s.io/jobset-name", "js-abc"},
        {"jobset.sigs.k8s.io/job-index", "0"},
    };
    const struct topo_kv zone_scope[] = {{"topox.io/pipeline-scope", "zone"}};
    struct pol_pod_facts f = {.name = "js-abc-workers-0-1",
                              .ns = "default",
                              .labels = jobset,
                              .nlabels = 3,
                              .accel = 8,
                              .resource = "nvidia.com/gpu",
                              .pod_group = "js-abc-workers-def",
                              .pod_group_min = 4,
                              .pod_group_level = POL_SCOPE_RACK};
    struct pol_workload wl;
    struct tpx_err err = TPX_ERR_INIT;

    cr_assert_eq(pol_workload_infer(&f, &wl, &err), TPX_OK, "%s", err.msg);
    cr_expect(wl.gang);
    cr_expect(wl.has_intent);
    cr_expect_str_eq(wl.group, "default/podgroup:js-abc-workers-def");
    cr_expect_eq(wl.group_size, 4);
    cr_expect(wl.size_explicit);
    cr_expect_eq(wl.pod_index, -1);
    cr_expect_eq(wl.scope, POL_SCOPE_RACK);
    /* a wider scope asked for by annotation: the PodGroup's rack key still holds */
    f.annotations = zone_scope;
    f.nannotations = 1;
    cr_assert_eq(pol_workload_infer(&f, &wl, &err), TPX_OK, "%s", err.msg);
    cr_expect_eq(wl.scope, POL_SCOPE_RACK);
    f.pod_group_level = -1;
    cr_assert_eq(pol_workload_infer(&f, &wl, &err), TPX_OK, "%s", err.msg);
    cr_expect_eq(wl.scope, POL_SCOPE_ZONE, "a key topox does not read narrows nothing");
    /* a topox.io/group annotation names the group (e2e scenario 7's pods): still a gang for the
     * hold, its size the annotation's */
    {
        const struct topo_kv own[] = {{"topox.io/group", "gang"}, {"topox.io/group-size", "2"}};
        f.annotations = own;
        f.nannotations = 2;
        cr_assert_eq(pol_workload_infer(&f, &wl, &err), TPX_OK, "%s", err.msg);
        cr_expect(wl.gang);
        cr_expect_str_eq(wl.group, "default/gang");
        cr_expect_eq(wl.group_size, 2);
    }
    /* minCount not known: the JobSet's group */
    f.annotations = NULL;
    f.nannotations = 0;
    f.pod_group_min = 0;
    cr_assert_eq(pol_workload_infer(&f, &wl, &err), TPX_OK, "%s", err.msg);
    cr_expect_not(wl.gang);
    cr_expect_str_eq(wl.group, "default/jobset:abc123");
}

/* A member that asks for no accelerator (an LWS leader on CPU) takes no slot and no rank: the
 * accelerator members are the group's slots, their indexes counted among themselves. */
Test(pol_workload, members_without_accelerators_take_no_slot)
{
    const struct topo_kv labels[] = {{"leaderworkerset.sigs.k8s.io/name", "tas"},
                                     {"leaderworkerset.sigs.k8s.io/group-index", "0"},
                                     {"leaderworkerset.sigs.k8s.io/worker-index", "2"}};
    const struct topo_kv ann[] = {{"leaderworkerset.sigs.k8s.io/size", "3"}};
    struct pol_pod_facts f = {.name = "tas-0-2",
                              .ns = "ml",
                              .labels = labels,
                              .nlabels = 3,
                              .annotations = ann,
                              .nannotations = 1,
                              .accel = 1,
                              .resource = "nvidia.com/gpu"};
    struct pol_workload wl, same;
    struct tpx_err err = TPX_ERR_INIT;

    cr_assert_eq(pol_workload_infer(&f, &wl, &err), TPX_OK, "%s", err.msg);
    cr_expect_eq(wl.group_size, 3);
    cr_expect_eq(wl.pod_index, 2);
    cr_expect(wl.dp_world, "a written group whose split nothing says");
    cr_expect(!wl.preferred, "held in its scope: no TP rule can refuse it");
    pol_workload_skip_members(&wl, 1, 1); /* the leader, index 0, asks for none */
    cr_expect_eq(wl.group_size, 2);
    cr_expect_eq(wl.pod_index, 1);
    cr_expect_eq(wl.tp * wl.pp * wl.dp, 2, "the world is the two GPUs");
    /* a pod without accelerators, or members that would be the whole group: unchanged */
    same = wl;
    pol_workload_skip_members(&same, 2, 0);
    cr_expect_eq(same.group_size, 2);
    same.accel_per_pod = 0;
    pol_workload_skip_members(&same, 1, 0);
    cr_expect_eq(same.group_size, 2);
}

/* Another scheduler's topology intent is topox intent, never contradicted: Kueue's required
 * level is the group's scope whatever topox's default, a key topox does not read or a mere
 * preference makes the group preferred, a node-level key keeps topox's rack. */
Test(pol_workload, other_schedulers_topology_is_never_contradicted)
{
    const struct topo_kv labels[] = {{"leaderworkerset.sigs.k8s.io/name", "w"},
                                     {"leaderworkerset.sigs.k8s.io/group-index", "0"},
                                     {"leaderworkerset.sigs.k8s.io/worker-index", "1"}};
    static const struct {
        const char *key, *value;
        bool scoped;
        enum pol_scope scope;
        bool preferred;
    } cases[] = {
        {"kueue.x-k8s.io/podset-required-topology", "topox.io/block", true, POL_SCOPE_BLOCK, false},
        {"kueue.x-k8s.io/podset-required-topology", "topology.kubernetes.io/zone", true,
         POL_SCOPE_ZONE, false},
        {"kueue.x-k8s.io/podset-required-topology", "kubernetes.io/hostname", false, POL_SCOPE_RACK,
         false},
        {"kueue.x-k8s.io/podset-required-topology", "cloud.provider.com/topology-rack", false,
         POL_SCOPE_RACK, true},
        {"kueue.x-k8s.io/podset-preferred-topology", "topox.io/rack", false, POL_SCOPE_RACK, true},
        {"kai.scheduler/topology-required-placement", "topox.io/block", true, POL_SCOPE_BLOCK,
         false},
        {"kai.scheduler/topology-preferred-placement", "topox.io/rack", false, POL_SCOPE_RACK,
         true},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct topo_kv ann[] = {{"leaderworkerset.sigs.k8s.io/size", "2"},
                                      {cases[i].key, cases[i].value}};
        struct pol_pod_facts f = {.name = "w-0-1",
                                  .ns = "ml",
                                  .labels = labels,
                                  .nlabels = 3,
                                  .annotations = ann,
                                  .nannotations = 2,
                                  .accel = 8,
                                  .resource = "nvidia.com/gpu"};
        struct pol_workload wl;
        struct tpx_err err = TPX_ERR_INIT;

        cr_assert_eq(pol_workload_infer(&f, &wl, &err), TPX_OK, "%s", err.msg);
        cr_expect_eq(wl.sched_scoped, cases[i].scoped, "case %zu", i);
        pol_workload_set_scope(&wl, POL_SCOPE_RACK); /* serve's default scope */
        cr_expect_eq(wl.scope, cases[i].scoped ? cases[i].scope : POL_SCOPE_RACK, "case %zu", i);
        cr_expect_eq(wl.preferred, cases[i].preferred, "case %zu", i);
    }
}

/* The training operator's WORLD_SIZE counts processes where it runs several a pod
 * (pods x nprocPerNode): the world's pods are PET_NNODES, or WORLD_SIZE / PET_NPROC_PER_NODE,
 * never 32 pods of a 4-pod job. */
Test(pol_workload, a_kubeflow_world_counts_pods_not_processes)
{
    const struct topo_kv labels[] = {{"training.kubeflow.org/job-name", "ddp"},
                                     {"training.kubeflow.org/replica-type", "worker"}};
    static const struct {
        struct tpx_env_var env[3];
        size_t nenv;
        unsigned size;
        int index;
    } cases[] = {
        {{{"WORLD_SIZE", "4"}, {"RANK", "2"}}, 2, 4, 2}, /* one a pod */
        {{{"WORLD_SIZE", "32"}, {"PET_NPROC_PER_NODE", "8"}, {"PET_NODE_RANK", "2"}}, 3, 4, 2},
        {{{"WORLD_SIZE", "32"}, {"PET_NNODES", "4"}, {"RANK", "9"}}, 3, 4, -1},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct pol_pod_facts f = {.name = "ddp-worker-1",
                                  .ns = "ml",
                                  .labels = labels,
                                  .nlabels = 2,
                                  .env = cases[i].env,
                                  .nenv = cases[i].nenv,
                                  .accel = 8,
                                  .resource = "nvidia.com/gpu"};
        struct pol_workload wl;
        struct tpx_err err = TPX_ERR_INIT;

        cr_assert_eq(pol_workload_infer(&f, &wl, &err), TPX_OK, "%s", err.msg);
        cr_expect_str_eq(wl.group, "ml/kubeflow:ddp", "case %zu", i);
        cr_expect_eq(wl.group_size, cases[i].size, "case %zu: %u", i, wl.group_size);
        cr_expect_eq(wl.pod_index, cases[i].index, "case %zu: %d", i, wl.pod_index);
    }
}

/* Flags that add up over the accelerator members only (tp 8 x pp 2 on two 8-GPU workers of an
 * LWS of 3 with a CPU leader) are certain again once the leader is taken out: not preferred. */
Test(pol_workload, flags_that_add_up_without_the_cpu_leader_are_certain)
{
    const struct topo_kv labels[] = {{"leaderworkerset.sigs.k8s.io/name", "w"},
                                     {"leaderworkerset.sigs.k8s.io/group-index", "0"},
                                     {"leaderworkerset.sigs.k8s.io/worker-index", "1"}};
    const struct topo_kv ann[] = {{"leaderworkerset.sigs.k8s.io/size", "3"}};
    const char *argv[] = {
        "vllm", "serve", "m", "--tensor-parallel-size", "8", "--pipeline-parallel-size", "2"};
    struct pol_pod_facts f = {.name = "w-0-1",
                              .ns = "ml",
                              .labels = labels,
                              .nlabels = 3,
                              .annotations = ann,
                              .nannotations = 1,
                              .argv = argv,
                              .nargv = 7,
                              .accel = 8,
                              .resource = "nvidia.com/gpu"};
    struct pol_workload wl;
    struct tpx_err err = TPX_ERR_INIT;

    cr_assert_eq(pol_workload_infer(&f, &wl, &err), TPX_OK, "%s", err.msg);
    cr_expect(!wl.layout.certain, "16 GPUs over a group of 3 x 8 does not add up");
    pol_workload_skip_members(&wl, 1, 1);
    cr_expect(wl.layout.certain, "%s", wl.layout.why);
    cr_expect(!wl.preferred);
    cr_expect_eq(wl.tp, 8);
    cr_expect_eq(wl.pp, 2);
    cr_expect_eq(wl.group_size, 2);
    cr_expect_eq(wl.pod_index, 0);
}

/* A PodGroup's topology level narrows the scope another scheduler set, not serve's default. */
Test(pol_workload, a_podgroup_level_narrows_the_scope_another_scheduler_set)
{
    struct pol_workload wl;

    memset(&wl, 0, sizeof(wl));
    wl.gang = true;
    wl.gang_level = POL_SCOPE_BLOCK;
    wl.sched_scoped = true;
    wl.sched_scope = POL_SCOPE_RACK;
    pol_workload_set_scope(&wl, POL_SCOPE_ZONE);
    cr_expect_eq(wl.scope, POL_SCOPE_RACK, "Kueue's rack is finer than the PodGroup's block");
    wl.sched_scoped = false;
    pol_workload_set_scope(&wl, POL_SCOPE_ZONE);
    cr_expect_eq(wl.scope, POL_SCOPE_BLOCK);
}
