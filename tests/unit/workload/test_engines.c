/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/workload/test_engines.c - each engine's flag table (every alias and form, sh -c,
 * quotes), values through the container env and the LWS/RBG variables, the mapping to topox's
 * tp (dense all-reduce group) x pp x dp with ep, and the certainty rule of pol_workload_infer. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "policy/policy.h"

/* the pods below name only the fields they need */
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))
#define LWS "leaderworkerset.sigs.k8s.io/"

struct pod {
    const char *argv[12];
    unsigned accel;
    struct tpx_env_var env[6];
    struct topo_kv labels[8];
    struct topo_kv annotations[4];
};

static size_t count_argv(const char *const *a, size_t cap)
{
    size_t n = 0;
    while (n < cap && a[n])
        n++;
    return n;
}

static struct pol_workload infer(const struct pod *p)
{
    size_t ne = 0, nl = 0, na = 0;
    struct pol_workload wl;
    struct tpx_err err = TPX_ERR_INIT;

    while (ne < NELEM(p->env) && p->env[ne].name)
        ne++;
    while (nl < NELEM(p->labels) && p->labels[nl].key)
        nl++;
    while (na < NELEM(p->annotations) && p->annotations[na].key)
        na++;
    {
        struct pol_pod_facts f = {.name = "p",
                                  .ns = "llm",
                                  .argv = p->argv,
                                  .nargv = count_argv(p->argv, NELEM(p->argv)),
                                  .env = p->env,
                                  .nenv = ne,
                                  .labels = p->labels,
                                  .nlabels = nl,
                                  .annotations = p->annotations,
                                  .nannotations = na,
                                  .accel = p->accel,
                                  .resource = "nvidia.com/gpu"};
        cr_assert_eq(pol_workload_infer(&f, &wl, &err), TPX_OK, "%s", err.msg);
    }
    return wl;
}

/* An LWS pod (leader) of a group of `size`. */
#define LWS_POD(size)                                                                              \
    .labels = {{LWS "name", "x"}, {LWS "group-index", "0"}, {LWS "worker-index", "0"}},            \
    .annotations = {{LWS "size", size}}

struct want {
    unsigned tp, pp, dp, ep;
    bool certain;
    const char *engine;
};

static void expect(const struct pod *p, struct want w, const char *what)
{
    struct pol_workload wl = infer(p);

    cr_expect_eq(wl.layout.tp, w.tp, "%s: tp %u, want %u (%s)", what, wl.layout.tp, w.tp,
                 wl.layout.read);
    cr_expect_eq(wl.layout.pp, w.pp, "%s: pp %u, want %u", what, wl.layout.pp, w.pp);
    cr_expect_eq(wl.layout.dp, w.dp, "%s: dp %u, want %u", what, wl.layout.dp, w.dp);
    cr_expect_eq(wl.layout.ep, w.ep, "%s: ep %u, want %u", what, wl.layout.ep, w.ep);
    cr_expect_eq(wl.layout.certain, w.certain, "%s: certain %d (%s)", what, wl.layout.certain,
                 wl.layout.why);
    cr_expect_str_eq(wl.layout.engine, w.engine, "%s", what);
    if (!w.certain) {
        cr_expect(wl.preferred, "%s: an uncertain layout is placed as preferred", what);
        cr_expect_neq(wl.layout.why[0], '\0', "%s: says why", what);
        /* what placement uses always adds up */
        cr_expect_eq((unsigned long)wl.tp * wl.pp * wl.dp,
                     (unsigned long)wl.group_size * wl.accel_per_pod, "%s", what);
    }
}

Test(engines, vllm_every_spelling)
{
    struct pod a = {{"vllm", "serve", "m", "-tp", "8", "-pp=2"}, 8, LWS_POD("2")};
    struct pod b = {{"vllm", "serve", "m", "--tensor_parallel_size=1", "--data-parallel-size", "16",
                     "-dpl", "8"},
                    8,
                    LWS_POD("2")};
    struct pod c = {
        {"python3", "-m", "vllm.entrypoints.openai.api_server", "-dp=16", "-tp", "1", "-ep"},
        8,
        LWS_POD("2")};
    struct pod d = {{"sh", "-c",
                     "vllm serve m --data_parallel_size 16 --data-parallel-size-local=8 "
                     "--enable-expert-parallel --tensor-parallel-size '1'"},
                    8,
                    LWS_POD("2")};

    expect(&a, (struct want){8, 2, 1, 1, true, "vllm"}, "vllm -tp -pp=");
    expect(&b, (struct want){1, 1, 16, 1, true, "vllm"}, "vllm dp 16 local 8");
    expect(&c, (struct want){1, 1, 16, 16, true, "vllm"}, "vllm -ep");
    expect(&d, (struct want){1, 1, 16, 16, true, "vllm"}, "vllm sh -c underscores");
}

Test(engines, vllm_wide_ep_through_env)
{
    /* llm-d guides/wide-ep-lws prefill: the values come from the env and LWS */
    struct pod p = {{"/bin/sh", "-c",
                     "exec vllm serve deepseek-ai/DeepSeek-R1 --port 8000 "
                     "--tensor-parallel-size $TP_SIZE --data-parallel-hybrid-lb "
                     "--data-parallel-size $((LWS_GROUP_SIZE * DP_SIZE_LOCAL)) "
                     "--data-parallel-size-local $DP_SIZE_LOCAL "
                     "--data-parallel-start-rank $((LWS_WORKER_INDEX*DP_SIZE_LOCAL)) "
                     "--enable-expert-parallel"},
                    8,
                    {{"DP_SIZE_LOCAL", "8"}, {"TP_SIZE", "1"}},
                    LWS_POD("2")};
    struct pol_workload wl = infer(&p);

    expect(&p, (struct want){1, 1, 16, 16, true, "vllm"}, "wide-EP");
    cr_expect_eq(wl.layout.origin[POL_SIZE_DP].src, POL_SRC_ENV);
    cr_expect_str_eq(wl.layout.origin[POL_SIZE_DP].what, "--data-parallel-size");
    cr_expect_eq(wl.layout.origin[POL_SIZE_DP].argi, 2);
    cr_expect_eq(wl.group_size, 2);
    /* without the env the layout is unknown, never a guess: placed as preferred */
    p.env[0] = (struct tpx_env_var){"OTHER", "8"};
    expect(&p, (struct want){1, 1, 0, 0, false, "vllm"}, "wide-EP without DP_SIZE_LOCAL");
}

Test(engines, sglang_dp_attention)
{
    /* sglang docs/references/multi_node_deployment/lws_pd p.yaml, 2 pods x 8 */
    struct pod p = {{"python3", "-m", "sglang.launch_server", "--tp", "16", "--dp-size=16",
                     "--enable-dp-attention", "--moe-a2a-backend"},
                    8,
                    LWS_POD("2")};
    struct pod q = {{"sh", "-c",
                     "python3 -m sglang.launch_server --model-path /m --tp 16 --dp-size 16 "
                     "--enable-dp-attention --moe-a2a-backend deepep --moe-dense-tp-size 1 "
                     "--nnodes $(LWS_GROUP_SIZE) --node-rank $(LWS_WORKER_INDEX)"},
                    8,
                    LWS_POD("2")};
    struct pod r = {{"python3", "-m", "sglang.launch_server", "--tp-size", "16", "--dp", "4",
                     "--enable-dp-attention", "--ep-size", "8"},
                    8,
                    LWS_POD("2")};
    struct pod s = {{"python3", "-m", "sglang.launch_server", "--tensor-parallel-size", "8",
                     "--data-parallel-size", "2", "--enable-deepep-moe"},
                    8,
                    LWS_POD("2")};

    /* --moe-a2a-backend without a value: ep stays 1; attention tp 1 but dense MLP at tp 16 */
    expect(&p, (struct want){16, 1, 1, 1, true, "sglang"}, "dp-attention, dense tp default");
    /* moe-dense-tp-size 1: every rank is its own all-reduce group; deepep: ep = tp */
    expect(&q, (struct want){1, 1, 16, 16, true, "sglang"}, "dp-attention deepep dense 1");
    /* attention tp 16 / 4 = 4 < dense 16 */
    expect(&r, (struct want){16, 1, 1, 8, true, "sglang"}, "dp-attention --ep-size");
    /* without DP-attention dp is copies: 2 x tp 8 = 16 */
    expect(&s, (struct want){8, 1, 2, 8, true, "sglang"}, "sglang dp copies");
}

Test(engines, sglang_dp_attention_bad_division_is_uncertain)
{
    struct pod p = {{"python3", "-m", "sglang.launch_server", "--tp", "16", "--dp", "3",
                     "--enable-dp-attention"},
                    8,
                    LWS_POD("2")};
    struct pol_workload wl = infer(&p);

    cr_expect_not(wl.layout.certain);
    cr_expect(strstr(wl.layout.why, "does not divide"), "%s", wl.layout.why);
}

Test(engines, tensorrt_llm)
{
    /* lws docs/examples/tensorrt-llm/lws.yaml */
    struct pod t = {{"sh", "-c",
                     "./install_model.sh; python3 ./server.py leader "
                     "--stateful_set_group_key=${GROUP_KEY} --pp=8 --tp=2 --gpu_per_node=8 "
                     "--triton_model_repo_dir=/data/x"},
                    8,
                    {{"GROUP_KEY", NULL}},
                    LWS_POD("2")};
    struct pod u = {{"trtllm-serve", "/m", "--tp_size", "8", "--pp_size", "1", "--ep_size", "4"},
                    8};
    struct pod v = {{"trtllm-serve", "/m", "--tp_size", "8", "--ep_size", "3"}, 8};
    struct pod w = {{"python3", "server.py", "leader", "--tp=2", "--pp=8", "--gpu_per_node=4"},
                    8,
                    LWS_POD("2")};

    expect(&t, (struct want){2, 8, 1, 1, true, "triton-trtllm"}, "triton server.py");
    expect(&u, (struct want){8, 1, 1, 4, true, "trtllm"}, "trtllm-serve");
    expect(&v, (struct want){8, 1, 1, 3, false, "trtllm"}, "ep_size not dividing tp_size");
    expect(&w, (struct want){2, 8, 1, 1, false, "triton-trtllm"}, "gpu_per_node disagrees");
}

/* ai-dynamo/dynamo components/src/dynamo/trtllm/backend_args.py: dash spellings, each
 * defaulting to its DYN_TRTLLM_* env var; TensorRT-LLM's trtllm-llmapi-launch names the engine
 * only when what it launches does not. */
Test(engines, dynamo_trtllm_and_the_llmapi_launcher)
{
    struct pod a = {{"python3", "-m", "dynamo.trtllm", "--model-path", "/m",
                     "--tensor-parallel-size", "8", "--expert-parallel-size", "4"},
                    4,
                    LWS_POD("2")};
    struct pod b = {{"python3", "-m", "dynamo.trtllm", "--model-path", "/m"},
                    4,
                    {{"DYN_TRTLLM_TENSOR_PARALLEL_SIZE", "8"}},
                    LWS_POD("2")};
    struct pod c = {{"python3", "-m", "dynamo.trtllm"},
                    4,
                    {{"DYN_TRTLLM_TENSOR_PARALLEL_SIZE", NULL}},
                    LWS_POD("2")};
    /* the script Dynamo's multinode leader hands mpirun: trtllm-llmapi-launch python3 -m
     * dynamo.trtllm ... */
    struct pod d = {{"/bin/sh", "-c",
                     "bash -c 'source /opt/dynamo/venv/bin/activate && trtllm-llmapi-launch "
                     "python3 -m dynamo.trtllm --tensor-parallel-size 8 "
                     "--disaggregation-mode prefill'"},
                    4,
                    LWS_POD("2")};
    struct pod e = {{"srun", "bash", "-c", "trtllm-llmapi-launch trtllm-serve /m --tp_size 16"},
                    8,
                    LWS_POD("2")};
    struct pod f = {
        {"mpirun", "-np", "8", "trtllm-llmapi-launch", "python3", "run.py", "--tp-size", "8"}, 8};
    /* Dynamo's multinode leader as backend_trtllm.go writes it: mpirun ... bash -c '...' */
    struct pod g = {{"/bin/sh", "-c",
                     "mkdir -p $HOME/.ssh && mpirun $([ \"$(id -u)\" = \"0\" ] && echo "
                     "--allow-run-as-root) --oversubscribe -n 8 -H ${LWS_LEADER_ADDRESS},w1 "
                     "--mca pml ob1 --mca plm_rsh_args \"-p 2222\" -x HOME -x PATH bash -c "
                     "'trtllm-llmapi-launch python3 -m dynamo.trtllm --tensor-parallel-size 8'"},
                    4,
                    LWS_POD("2")};

    expect(&a, (struct want){8, 1, 1, 4, true, "dynamo-trtllm"}, "dynamo.trtllm flags");
    expect(&b, (struct want){8, 1, 1, 1, true, "dynamo-trtllm"}, "dynamo.trtllm env default");
    cr_expect_eq(infer(&b).layout.origin[POL_SIZE_TP].src, POL_SRC_ENV);
    cr_expect_str_eq(infer(&b).layout.origin[POL_SIZE_TP].what, "DYN_TRTLLM_TENSOR_PARALLEL_SIZE");
    /* a valueFrom is unknown, never a guess */
    expect(&c, (struct want){0, 1, 1, 1, false, "dynamo-trtllm"}, "dynamo.trtllm valueFrom");
    expect(&d, (struct want){8, 1, 1, 1, true, "dynamo-trtllm"}, "llmapi-launch dynamo.trtllm");
    expect(&e, (struct want){16, 1, 1, 1, true, "trtllm"}, "llmapi-launch trtllm-serve");
    expect(&f, (struct want){8, 1, 1, 1, true, "trtllm"}, "llmapi-launch alone: trtllm");
    expect(&g, (struct want){8, 1, 1, 1, true, "dynamo-trtllm"}, "Dynamo's mpirun leader");
}

/* The deployment and role KV transfer is scored by: the operators' labels, else the flags. */
Test(engines, serving_role_from_operator_labels_and_disaggregation_mode)
{
    static const struct {
        struct pod p;
        const char *group;
        char role;
    } cases[] = {
        {{{"python3", "-m", "sglang.launch_server", "--tp", "8"},
          8,
          {{0}},
          {{"disaggregatedset.x-k8s.io/name", "ds"},
           {"disaggregatedset.x-k8s.io/slice", "0"},
           {"disaggregatedset.x-k8s.io/role", "prefill"}}},
         "llm/ds:ds/0",
         'p'},
        {{{"python3", "-m", "dynamo.vllm"},
          8,
          {{0}},
          {{"nvidia.com/dynamo-graph-deployment-name", "g"},
           {"nvidia.com/dynamo-component", "VllmWorker"},
           {"nvidia.com/dynamo-sub-component-type", "decode"}}},
         "llm/dynamo:g",
         'd'},
        {{{"python3", "-m", "dynamo.vllm"},
          8,
          {{0}},
          {{"nvidia.com/dynamo-graph-deployment-name", "g"},
           {"nvidia.com/dynamo-component", "VllmPrefillWorker"}}},
         "llm/dynamo:g",
         'p'},
        {{{"python3", "-m", "dynamo.trtllm", "--disaggregation-mode", "prefill"},
          8,
          {{0}},
          {{"nvidia.com/dynamo-graph-deployment-name", "g"},
           {"nvidia.com/dynamo-component", "worker"}}},
         "llm/dynamo:g",
         'p'},
        {{{"python3", "-m", "dynamo.vllm", "--is-decode-worker"},
          8,
          {{0}},
          {{"nvidia.com/dynamo-graph-deployment-name", "g"}}},
         "llm/dynamo:g",
         'd'},
        {{{"python3", "-m", "sglang.launch_server"},
          8,
          {{0}},
          {{"rbg.workloads.x-k8s.io/group-name", "r"},
           {"rbg.workloads.x-k8s.io/role-name", "Decode"}}},
         "llm/rbg:r",
         'd'},
        {{{"python3", "-m", "sglang.launch_server"},
          8,
          {{0}},
          {{"rolebasedgroup.workloads.x-k8s.io/name", "r"},
           {"rolebasedgroup.workloads.x-k8s.io/role", "prefill"}}},
         "llm/rbg:r",
         'p'},
        {{{"vllm", "serve"},
          8,
          {{0}},
          {{"app.kubernetes.io/name", "svc"}, {"llm-d.ai/role", "both"}}},
         "llm/llmisvc:svc",
         0},
        {{{"vllm", "serve"}, 8, {{0}}, {{"app.kubernetes.io/name", "svc"}}}, "", 0},
        {{{"python3", "-m", "sglang.launch_server", "--disaggregation-mode", "decode"}, 8},
         "",
         'd'},
    };
    for (size_t i = 0; i < NELEM(cases); i++) {
        struct pol_workload wl = infer(&cases[i].p);
        cr_expect_str_eq(wl.kv_group, cases[i].group, "case %zu", i);
        cr_expect_eq(wl.kv_role, cases[i].role, "case %zu: %d", i, wl.kv_role);
        /* a role flag or label is no parallelism flag: it changes neither the layout nor its
         * certainty (without a size flag, nothing written says the split: uncertain) */
        struct pod bare = cases[i].p;
        struct pol_workload b;
        memset(bare.labels, 0, sizeof(bare.labels));
        b = infer(&bare);
        cr_expect_eq(wl.layout.certain, b.layout.certain, "case %zu: %s", i, wl.layout.why);
        cr_expect_eq(wl.tp, b.tp, "case %zu", i);
        cr_expect_eq(wl.tp * wl.pp * wl.dp, 8, "case %zu", i);
    }
}

Test(engines, lmdeploy_tgi_megatron)
{
    struct pod a = {
        {"lmdeploy", "serve", "api_server", "/m", "--tp", "1", "--dp", "16", "--ep", "16"},
        8,
        LWS_POD("2")};
    struct pod b = {{"lmdeploy", "serve", "api_server", "/m", "--tp", "8"}, 8};
    struct pod c = {{"text-generation-launcher", "--model-id", "m", "--num-shard", "4"}, 4};
    struct pod d = {{"text-generation-launcher", "--model-id", "m"}, 2, {{"NUM_SHARD", "2"}}};
    struct pod e = {{"torchrun", "--nproc_per_node=8", "--nnodes", "2", "pretrain_gpt.py",
                     "--tensor-model-parallel-size", "8", "--pipeline-model-parallel-size"},
                    8,
                    LWS_POD("2")};
    struct pod f = {{"sh", "-c",
                     "torchrun --nproc-per-node $GPUS --nnodes 4 pretrain_gpt.py "
                     "--tensor-model-parallel-size 4 --pipeline-model-parallel-size 2 "
                     "--expert-model-parallel-size 4"},
                    8,
                    {{"GPUS", "8"}},
                    LWS_POD("4")};

    expect(&a, (struct want){1, 1, 16, 16, true, "lmdeploy"}, "lmdeploy ep");
    expect(&b, (struct want){8, 1, 1, 1, true, "lmdeploy"}, "lmdeploy tp");
    expect(&c, (struct want){4, 1, 1, 1, true, "tgi"}, "tgi --num-shard");
    expect(&d, (struct want){2, 1, 1, 1, true, "tgi"}, "tgi NUM_SHARD");
    /* the last flag has no value: pp stays 1; world 16 = tp 8 x dp 2 */
    expect(&e, (struct want){8, 1, 2, 1, true, "megatron"}, "megatron torchrun");
    /* world 32 = tp 4 x pp 2 x dp 4; --nnodes 4 gives the group size */
    expect(&f, (struct want){4, 2, 4, 4, true, "megatron"}, "megatron env");
}

Test(engines, certainty_rule)
{
    /* dense TP16 over two 8-GPU pods from flags: every value known and adding up: certain */
    struct pod dense = {{"vllm", "serve", "m", "--tensor-parallel-size", "16"}, 8, LWS_POD("2")};
    /* the same from annotations */
    struct pod ann = {{"sleep", "inf"},
                      8,
                      .annotations = {{"topox.io/tensor-parallel-size", "16"},
                                      {"topox.io/group", "g"},
                                      {"topox.io/group-size", "2"}}};
    /* flags that do not add up: 8 x 1 x 1 for a group of 16 */
    struct pod odd = {{"vllm", "serve", "m", "-tp", "8"}, 8, LWS_POD("2")};
    /* an unknown value */
    struct pod unk = {{"vllm", "serve", "m", "-tp", "$(TP)"}, 8, LWS_POD("2")};
    /* a valueFrom variable */
    struct pod vf = {{"vllm", "serve", "m", "-tp", "$(TP)"}, 8, {{"TP", NULL}}, LWS_POD("2")};
    struct pol_workload wl;

    expect(&dense, (struct want){16, 1, 1, 1, true, "vllm"}, "dense tp16 flags");
    wl = infer(&ann);
    cr_expect(wl.layout.certain);
    cr_expect_not(wl.preferred);
    cr_expect_eq(wl.layout.origin[POL_SIZE_TP].src, POL_SRC_ANNOTATION);
    expect(&odd, (struct want){8, 1, 1, 1, false, "vllm"}, "8 of 16");
    expect(&unk, (struct want){0, 1, 1, 1, false, "vllm"}, "$(TP)");
    expect(&vf, (struct want){0, 1, 1, 1, false, "vllm"}, "valueFrom");

    /* the setting: reject judges it as if certain, ignore drops the intent */
    wl = infer(&odd);
    pol_workload_uncertain(&wl, POL_UNCERTAIN_REJECT);
    cr_expect_not(wl.preferred);
    cr_expect(wl.has_intent);
    wl = infer(&odd);
    pol_workload_uncertain(&wl, POL_UNCERTAIN_IGNORE);
    cr_expect_not(wl.has_intent);
    /* placement: preferred stays the user's choice */
    odd.annotations[1] = (struct topo_kv){"topox.io/placement", "required"};
    wl = infer(&odd);
    cr_expect_not(wl.layout.certain);
    cr_expect_not(wl.preferred);
}

Test(engines, kubelet_escape_and_self_reference)
{
    struct pod esc = {{"vllm", "serve", "m", "-tp", "$$(TP)"}, 8, {{"TP", "8"}}};
    struct pod self = {{"vllm", "serve", "m", "-tp", "$(A)"}, 8, {{"A", "$(A)"}}};
    struct pod ok = {{"vllm", "serve", "m", "-tp", "$(B)"}, 8, {{"A", "8"}, {"B", "$(A)"}}};

    expect(&esc, (struct want){0, 1, 1, 1, false, "vllm"}, "$$ escape");
    expect(&self, (struct want){0, 1, 1, 1, false, "vllm"}, "A=$(A)");
    expect(&ok, (struct want){8, 1, 1, 1, true, "vllm"}, "B=$(A)");
}

#define RBG1 "rolebasedgroup.workloads.x-k8s.io/"
#define RBG2 "rbg.workloads.x-k8s.io/"

/* RoleBasedGroup's two generations, each with the labels and the env its controller gives a pod
 * (sgl-project/rbg doc/reference/variables.md; api/workloads/constants/{label,env}.go and
 * pkg/discovery/env_builder.go for v1alpha2): the group, its size and the pod's index come from
 * the labels alone, and the engine's $(RBG_...) or $(LWS_...) resolve to the same values. */
Test(engines, rbg_variables)
{
    /* v1alpha1 leader-worker role: a LeaderWorkerSet's pod, LWS labels and LWS_* env */
    struct pod v1 = {{"sh", "-c",
                      "python3 -m sglang.launch_server --tp 16 --nnodes $LWS_GROUP_SIZE "
                      "--node-rank $LWS_WORKER_INDEX"},
                     8,
                     .labels = {{RBG1 "name", "r"},
                                {RBG1 "role", "prefill"},
                                {LWS "worker-index", "1"},
                                {LWS "name", "r-prefill"},
                                {LWS "group-index", "0"}},
                     .annotations = {{LWS "size", "2"}}};
    /* v1alpha2 leaderWorkerPattern: a RoleInstance's pod, RBG labels only, RBG_LWP_* env (the
     * fixture's `--nnodes $(RBG_LWP_GROUP_SIZE) --node-rank $(RBG_LWP_WORKER_INDEX)`) */
    struct pod v2 = {{"python3", "-m", "sglang.launch_server", "--tp", "16", "--nnodes",
                      "$(RBG_LWP_GROUP_SIZE)", "--node-rank", "$(RBG_LWP_WORKER_INDEX)"},
                     8,
                     .labels = {{RBG2 "group-name", "r"},
                                {RBG2 "role-name", "prefill"},
                                {RBG2 "role-instance-name", "r-prefill-0"},
                                {RBG2 "role-instance-index", "0"},
                                {RBG2 "component-name", "worker"},
                                {RBG2 "component-index", "1"},
                                {RBG2 "component-size", "2"}}};
    struct pod v2sh = v2;
    struct pol_workload a, b;

    expect(&v1, (struct want){16, 1, 1, 1, true, "sglang"}, "v1alpha1 LWS variables");
    expect(&v2, (struct want){16, 1, 1, 1, true, "sglang"}, "v1alpha2 RBG_LWP variables");
    memset(v2sh.argv, 0, sizeof(v2sh.argv));
    v2sh.argv[0] = "sh";
    v2sh.argv[1] = "-c";
    v2sh.argv[2] = "python3 -m sglang.launch_server --tp 16 --nnodes $RBG_LWP_GROUP_SIZE "
                   "--node-rank $RBG_LWP_WORKER_INDEX";
    expect(&v2sh, (struct want){16, 1, 1, 1, true, "sglang"}, "v1alpha2 in sh -c");
    a = infer(&v1);
    b = infer(&v2);
    /* each a group of 2 of which this pod is index 1, named by its own controller */
    cr_expect_eq(a.group_size, 2);
    cr_expect_eq(b.group_size, 2);
    cr_expect(b.size_explicit);
    cr_expect_eq(a.pod_index, 1);
    cr_expect_eq(b.pod_index, 1);
    cr_expect_str_eq(b.group, "llm/rbg:r-prefill-0");
    cr_expect_str_eq(b.display, "llm/r-prefill-0");
    /* one deployment and role for the KV transfer, whichever the generation */
    cr_expect_str_eq(a.kv_group, "llm/rbg:r");
    cr_expect_str_eq(b.kv_group, "llm/rbg:r");
    cr_expect_eq(a.kv_role, 'p');
    cr_expect_eq(b.kv_role, 'p');

    /* without its component-size label the v1alpha2 size is not known: --nnodes is unknown, the
     * layout uncertain, placed as preferred (never rejected) */
    v2.labels[6] = (struct topo_kv){0};
    expect(&v2, (struct want){16, 1, 1, 1, false, "sglang"}, "v1alpha2 without component-size");
    cr_expect_eq(infer(&v2).group_size, 1);
    /* the other generation's names are not set on a v1alpha1 pod: its own LWS size still holds */
    v1.argv[2] = "python3 -m sglang.launch_server --tp 16 --nnodes $RBG_LWP_GROUP_SIZE "
                 "--node-rank $RBG_LWP_WORKER_INDEX";
    expect(&v1, (struct want){16, 1, 1, 1, true, "sglang"}, "v1alpha1 with RBG_LWP names");
    cr_expect_eq(infer(&v1).group_size, 2);
}

/* Label key of p (n of them so far) set to value, replacing the one there. */
static void set_label(struct pod *p, size_t *n, const char *key, const char *value)
{
    for (size_t k = 0; k < *n; k++) {
        if (strcmp(p->labels[k].key, key) == 0) {
            p->labels[k].value = value;
            return;
        }
    }
    cr_assert_lt(*n, NELEM(p->labels));
    p->labels[(*n)++] = (struct topo_kv){key, value};
}

/* Each injected variable carries the value of the label its controller's fieldRef names, and
 * only for its own generation: `-tp $(VAR)` reads 4 from the label under test (set to 4), and
 * nothing from a variable the pod's controller does not set. */
Test(engines, rbg_variables_follow_their_labels)
{
    static const struct {
        const char *var, *label;
        bool v2;
    } cases[] = {
        {"GROUP_NAME", RBG1 "name", false},
        {"ROLE_NAME", RBG1 "role", false},
        {"ROLE_INDEX", "apps.kubernetes.io/pod-index", false},
        {"RBG_GROUP_NAME", RBG2 "group-name", true},
        {"RBG_ROLE_NAME", RBG2 "role-name", true},
        {"RBG_ROLE_INDEX", RBG2 "role-instance-index", true},
        {"RBG_ROLE_INSTANCE_NAME", RBG2 "role-instance-name", true},
        {"RBG_COMPONENT_NAME", RBG2 "component-name", true},
        {"RBG_COMPONENT_INDEX", RBG2 "component-id", true},
        {"RBG_LWP_WORKER_INDEX", RBG2 "component-index", true},
        {"RBG_LWP_GROUP_SIZE", RBG2 "component-size", true},
    };

    for (size_t i = 0; i < NELEM(cases); i++) {
        char tp[64];
        for (int gen = 0; gen < 2; gen++) {
            const bool v2 = gen == 1;
            struct pod p = {{"vllm", "serve", "m", "-tp", tp}, 8};
            size_t n = 0;
            struct pol_workload wl;

            snprintf(tp, sizeof(tp), "$(%s)", cases[i].var);
            if (v2) {
                p.labels[n++] = (struct topo_kv){RBG2 "group-name", "g"};
                /* a leaderWorkerPattern worker (wl_rbg_lwp_pod): RBG_LWP_* are its own */
                p.labels[n++] = (struct topo_kv){RBG2 "role-instance-name", "g-r-0"};
                p.labels[n++] = (struct topo_kv){RBG2 "component-name", "worker"};
                p.labels[n++] = (struct topo_kv){RBG2 "component-index", "1"};
                p.labels[n++] = (struct topo_kv){RBG2 "component-size", "8"};
            } else {
                p.labels[n++] = (struct topo_kv){RBG1 "name", "g"};
            }
            /* the label that names the other generation's group would make the pod of both */
            if (v2 == cases[i].v2 || (strcmp(cases[i].label, RBG1 "name") != 0 &&
                                      strcmp(cases[i].label, RBG2 "group-name") != 0))
                set_label(&p, &n, cases[i].label, "4");
            wl = infer(&p);
            if (v2 == cases[i].v2) {
                cr_expect_eq(wl.layout.tp, 4, "%s on a %s pod: tp %u (%s)", cases[i].var,
                             v2 ? "v1alpha2" : "v1alpha1", wl.layout.tp, wl.layout.read);
                cr_expect_eq(wl.layout.origin[POL_SIZE_TP].src, POL_SRC_ENV, "%s", cases[i].var);
            } else {
                cr_expect(wl.layout.origin[POL_SIZE_TP].unknown, "%s is not set on a %s pod",
                          cases[i].var, v2 ? "v1alpha2" : "v1alpha1");
            }
        }
    }
    /* RBG_LWP_* come only with the leaderWorkerPattern (InjectLeaderWorkerSetEnv): a
     * customComponentsPattern or standalone pod's component-size is not its group's size */
    for (int k = 0; k < 2; k++) {
        struct pod p = {
            {"vllm", "serve", "m", "-tp", k ? "$(RBG_LWP_WORKER_INDEX)" : "$(RBG_LWP_GROUP_SIZE)"},
            8};
        size_t n = 0;
        struct pol_workload wl;

        p.labels[n++] = (struct topo_kv){RBG2 "group-name", "g"};
        p.labels[n++] = (struct topo_kv){RBG2 "role-instance-name", "g-r-0"};
        p.labels[n++] = (struct topo_kv){RBG2 "component-name", "decode"};
        p.labels[n++] = (struct topo_kv){RBG2 "component-id", "0"};
        p.labels[n++] = (struct topo_kv){RBG2 "component-size", "4"};
        wl = infer(&p);
        cr_expect(wl.layout.origin[POL_SIZE_TP].unknown, "RBG_LWP_* on a component pod: tp %u",
                  wl.layout.tp);
    }
    /* RBG_ROLE_INDEX of a StatefulSet's pod (no RoleInstance) is its pod-index */
    {
        struct pod p = {
            {"vllm", "serve", "m", "-tp", "$(RBG_ROLE_INDEX)"},
            8,
            .labels = {{RBG2 "group-name", "g"}, {"apps.kubernetes.io/pod-index", "4"}}};
        cr_expect_eq(infer(&p).layout.tp, 4);
    }
}
