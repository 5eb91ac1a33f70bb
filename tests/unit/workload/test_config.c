/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/workload/test_config.c - engine configuration outside argv (docs/workloads.md,
 * "Engine configuration"): config files a flag names (TensorRT-LLM's --extra-engine-args,
 * --extra_llm_api_options, --config; vLLM's and SGLang's --config), inside `sh -c` too, with
 * which side wins; a file named but not given; TensorRT-LLM's enable_attention_dp and MoE keys;
 * flags an operator hands in an env var (KServe's VLLM_ADDITIONAL_ARGS, NIM_PASSTHROUGH_ARGS);
 * NIM's NIM_*_PARALLEL_SIZE; and the certainty rule over all of them. */
#include <criterion/criterion.h>
#include <string.h>

#include "policy/policy.h"

#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))
#define LWS "leaderworkerset.sigs.k8s.io/"

struct pod {
    const char *argv[8];
    unsigned accel;
    const char *size; /* LWS size, NULL: a pod of its own */
    struct tpx_env_var env[4];
    struct pol_config_file files[2];
};

static struct pol_workload infer(const struct pod *p)
{
    const struct topo_kv labels[] = {
        {LWS "name", "x"}, {LWS "group-index", "0"}, {LWS "worker-index", "0"}};
    const struct topo_kv ann[] = {{LWS "size", p->size}};
    size_t na = 0, ne = 0, nf = 0;
    struct pol_workload wl;
    struct tpx_err err = TPX_ERR_INIT;

    while (na < NELEM(p->argv) && p->argv[na])
        na++;
    while (ne < NELEM(p->env) && p->env[ne].name)
        ne++;
    while (nf < NELEM(p->files) && p->files[nf].path)
        nf++;
    struct pol_pod_facts f = {.name = "p",
                              .ns = "llm",
                              .argv = p->argv,
                              .nargv = na,
                              .env = p->env,
                              .nenv = ne,
                              .labels = p->size ? labels : NULL,
                              .nlabels = p->size ? 3 : 0,
                              .annotations = p->size ? ann : NULL,
                              .nannotations = p->size ? 1 : 0,
                              .accel = p->accel,
                              .resource = "nvidia.com/gpu",
                              .configs = p->files,
                              .nconfigs = nf};
    cr_assert_eq(pol_workload_infer(&f, &wl, &err), TPX_OK, "%s", err.msg);
    return wl;
}

/* ai-dynamo/dynamo recipes/deepseek-r1/trtllm/disagg/wide_ep/gb200/deploy.yaml: the decode's
 * ConfigMap, a DEP32 over 8 pods of 4 GPUs, named by --extra-engine-args in an `sh -c` */
static const struct topo_kv dep32[] = {
    {"tensor_parallel_size", "32"},  {"moe_expert_parallel_size", "32"},
    {"enable_attention_dp", "true"}, {"pipeline_parallel_size", "1"},
    {"max_batch_size", "32"},        {"max_seq_len", "2251"},
};

Test(config, trtllm_engine_args_in_a_script_attention_dp_and_moe_ep)
{
    struct pod p = {{"/bin/sh", "-c",
                     "python3 -m dynamo.trtllm --model-path /m --extra-engine-args "
                     "/config/decode_config_dep32.yaml --disaggregation-mode decode"},
                    4,
                    "8",
                    {{0}},
                    {{"/config/decode_config_dep32.yaml", dep32, NELEM(dep32), true}}};
    struct pol_workload wl = infer(&p);

    cr_expect_str_eq(wl.layout.engine, "dynamo-trtllm");
    /* attention and dense layers data-parallel over the 32 ranks: TP 1, DP 32, EP 32 */
    cr_expect_eq(wl.layout.tp, 1);
    cr_expect_eq(wl.layout.dp, 32);
    cr_expect_eq(wl.layout.ep, 32);
    cr_expect(wl.layout.dp_attention);
    cr_expect(wl.layout.certain, "%s", wl.layout.why);
    cr_expect_eq(wl.layout.origin[POL_SIZE_DP].src, POL_SRC_CONFIG);
    cr_expect_str_eq(wl.layout.origin[POL_SIZE_DP].what, "tensor_parallel_size");
    cr_expect_str_eq(wl.layout.origin[POL_SIZE_DP].via, "--extra-engine-args");
    cr_expect_str_eq(wl.layout.origin[POL_SIZE_EP].what, "moe_expert_parallel_size");
    cr_expect_eq(wl.layout.origin[POL_SIZE_TP].src, POL_SRC_CONFIG);
    cr_expect_str_eq(wl.layout.origin[POL_SIZE_TP].what, "enable_attention_dp");
    cr_expect_eq(wl.layout.origin[POL_SIZE_PP].src, POL_SRC_CONFIG);
}

Test(config, a_file_named_but_not_given_is_uncertain_never_defaults)
{
    struct pod p = {
        {"/bin/sh", "-c", "python3 -m dynamo.trtllm --extra-engine-args /config/decode.yaml"},
        4,
        "8"};
    struct pol_workload wl = infer(&p);

    cr_expect_not(wl.layout.certain);
    cr_expect(wl.preferred);
    cr_expect(strstr(wl.layout.why, "--extra-engine-args /config/decode.yaml is not read"), "%s",
              wl.layout.why);
    /* the same file present but not a mapping (a script mounted there) */
    p.files[0] = (struct pol_config_file){"/config/decode.yaml", NULL, 0, false};
    wl = infer(&p);
    cr_expect_not(wl.layout.certain);
    cr_expect(strstr(wl.layout.why, "is not a YAML mapping"), "%s", wl.layout.why);
}

/* a file read that holds no sizes says nothing of the layout: defaults, as without it */
Test(config, a_file_without_sizes_leaves_the_defaults)
{
    static const struct topo_kv c[] = {{"model", "m"}, {"port", "8000"}};
    struct pod p = {{"vllm", "serve", "--config", "/etc/c.yaml"},
                    8,
                    NULL,
                    {{0}},
                    {{"/etc/c.yaml", c, NELEM(c), true}}};
    struct pol_workload wl = infer(&p);

    /* nothing written says the split: a data-parallel world, uncertain (the certainty rule) */
    cr_expect_eq(wl.tp, 1);
    cr_expect_eq(wl.tp * wl.pp * wl.dp, 8);
    cr_expect(!wl.layout.certain, "%s", wl.layout.why);
    cr_expect_str_eq(wl.tp_source, "default");
}

Test(config, trtllm_serve_file_wins_over_the_command_line)
{
    static const struct topo_kv opts[] = {{"tensor_parallel_size", "8"},
                                          {"moe_tensor_parallel_size", "2"}};
    struct pod p = {{"trtllm-serve", "m", "--tp_size", "4", "--config", "opts.yaml"},
                    8,
                    NULL,
                    {{0}},
                    {{"/workspace/opts.yaml", opts, NELEM(opts), true}}};
    struct pol_workload wl = infer(&p);

    /* "Path to a YAML file that overwrites the parameters specified by trtllm-serve"; a relative
     * path is found by its end */
    cr_expect_eq(wl.layout.tp, 8);
    cr_expect_eq(wl.layout.ep, 4); /* moe_ep = tp / moe_tp */
    cr_expect(wl.layout.certain, "%s", wl.layout.why);
    /* --extra_llm_api_options is the same option */
    p.argv[4] = "--extra_llm_api_options";
    wl = infer(&p);
    cr_expect_eq(wl.layout.tp, 8);
}

Test(config, vllm_and_sglang_config_files_lose_to_the_command_line)
{
    static const struct topo_kv v[] = {{"tensor-parallel-size", "4"},
                                       {"pipeline_parallel_size", "2"}};
    static const struct topo_kv sg[] = {{"tp", "8"}, {"enable-dp-attention", "true"}, {"dp", "8"}};
    struct pod a = {{"vllm", "serve", "m", "--config", "/etc/v.yaml", "-tp", "8"},
                    8,
                    "2",
                    {{0}},
                    {{"/etc/v.yaml", v, NELEM(v), true}}};
    struct pod b = {{"python3", "-m", "sglang.launch_server", "--config", "/c/s.yaml"},
                    8,
                    NULL,
                    {{0}},
                    {{"/c/s.yaml", sg, NELEM(sg), true}}};
    struct pol_workload wl = infer(&a);

    cr_expect_eq(wl.layout.tp, 8); /* the flag */
    cr_expect_eq(wl.layout.origin[POL_SIZE_TP].src, POL_SRC_FLAG);
    cr_expect_eq(wl.layout.pp, 2); /* the file */
    cr_expect_eq(wl.layout.origin[POL_SIZE_PP].src, POL_SRC_CONFIG);
    cr_expect_str_eq(wl.layout.origin[POL_SIZE_PP].via, "--config");
    cr_expect(wl.layout.certain, "%s", wl.layout.why);
    wl = infer(&b);
    cr_expect(wl.layout.dp_attention);
    cr_expect_eq(wl.layout.tp * wl.layout.dp, 8);
    cr_expect(wl.layout.certain, "%s", wl.layout.why);
}

/* kserve docs/samples/llmisvc/agentic-tool-calling/nemotron-3-ultra-pd.yaml: no command (the
 * controller's template runs `vllm serve ... ${VLLM_ADDITIONAL_ARGS}`) */
Test(config, kserve_vllm_additional_args_name_the_engine_and_its_sizes)
{
    struct pod p = {{NULL},
                    8,
                    NULL,
                    {{"VLLM_ADDITIONAL_ARGS",
                      "--trust-remote-code --tensor-parallel-size=8 --enable-expert-parallel "
                      "--model-loader-extra-config '{\"num_threads\": 96}'"}}};
    struct pol_workload wl = infer(&p);

    cr_expect_str_eq(wl.layout.engine, "vllm");
    cr_expect_eq(wl.layout.tp, 8);
    cr_expect_eq(wl.layout.ep, 8);
    cr_expect(wl.layout.certain, "%s", wl.layout.why);
    cr_expect_str_eq(wl.layout.origin[POL_SIZE_TP].via, "VLLM_ADDITIONAL_ARGS");
    cr_expect_eq(wl.layout.origin[POL_SIZE_TP].argi, -1); /* no line of the manifest */
}

Test(config, nim_sizes_and_passthrough_args_from_the_env)
{
    struct pod p = {
        {NULL}, 8, "2", {{"NIM_TENSOR_PARALLEL_SIZE", "8"}, {"NIM_PIPELINE_PARALLEL_SIZE", "2"}}};
    struct pol_workload wl = infer(&p);

    cr_expect_str_eq(wl.layout.engine, "nim");
    cr_expect_eq(wl.layout.tp, 8);
    cr_expect_eq(wl.layout.pp, 2);
    cr_expect_eq(wl.layout.origin[POL_SIZE_PP].src, POL_SRC_ENV);
    cr_expect_str_eq(wl.layout.origin[POL_SIZE_PP].what, "NIM_PIPELINE_PARALLEL_SIZE");
    /* the sizes are read, but the NIM's profile decides EP: its traffic is not known, so it is
     * never judged as a certain dense layout (placed as preferred) */
    cr_expect_not(wl.layout.certain);
    cr_expect(strstr(wl.layout.why, "expert parallelism"), "%s", wl.layout.why);
    cr_expect(wl.preferred);
    /* NIM_PASSTHROUGH_ARGS: the backend's flags, read as argv's end (EP said: certain) */
    p.env[1] = (struct tpx_env_var){"NIM_PASSTHROUGH_ARGS",
                                    "--pipeline-parallel-size 2 --enable-expert-parallel"};
    wl = infer(&p);
    cr_expect_eq(wl.layout.pp, 2);
    cr_expect(wl.layout.certain, "%s", wl.layout.why);
    cr_expect_str_eq(wl.layout.origin[POL_SIZE_PP].via, "NIM_PASSTHROUGH_ARGS");
}
