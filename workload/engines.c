/* SPDX-License-Identifier: Apache-2.0 */
/* workload/engines.c - one flag table per engine, and how each engine's sizes map to topox's
 * layout (workload/engines.h, docs/workloads.md). The tables were checked against the engines'
 * own argument parsers; each names the file it follows. Adding an engine or a flag is one row
 * here: the layout (wl_engine_read) and the record of `plan --record` (wl_engine_info) read the
 * same tables. */
#include "workload/engines.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cmdline.h"
#include "common/envexpand.h"
#include "common/kv.h"
#include "common/str.h"

#define LWS "leaderworkerset.sigs.k8s.io/"
#define RBG1 "rolebasedgroup.workloads.x-k8s.io/" /* RoleBasedGroup v1alpha1 */
#define RBG2 "rbg.workloads.x-k8s.io/"            /* RoleBasedGroup v1alpha2 */

enum fld {
    F_TP,       /* the engine's tensor-parallel size */
    F_PP,       /* pipeline stages */
    F_DP,       /* data-parallel size (of the instance) */
    F_DPL,      /* vLLM data-parallel ranks in this pod */
    F_EP,       /* an expert-parallel size */
    F_EP_ON,    /* vLLM --enable-expert-parallel; SGLang's old --enable-ep-moe (ep = tp) */
    F_DPATTN,   /* SGLang --enable-dp-attention */
    F_A2A,      /* SGLang --moe-a2a-backend NAME (anything but "none": ep = tp) */
    F_DEEPEP,   /* SGLang's old --enable-deepep-moe (ep = tp) */
    F_DENSE_TP, /* SGLang --moe-dense-tp-size */
    F_NNODES,   /* pods per instance */
    F_NPROC,    /* torchrun processes (accelerators) per pod */
    F_GPN,      /* Triton server.py --gpu_per_node */
    F_NSHARD,   /* TGI --num-shard */
    F_DISAGG,   /* --disaggregation-mode prefill|decode (SGLang, Dynamo's workers) */
    F_PREFILL,  /* Dynamo vLLM's older --is-prefill-worker */
    F_DECODE,   /* Dynamo vLLM's older --is-decode-worker */
    F_CONFIG,   /* an engine config file (--config, --extra-engine-args ...): its path */
    F_ATTN_DP,  /* TensorRT-LLM enable_attention_dp (attention and dense layers data-parallel) */
    F_MOE_TP,   /* TensorRT-LLM moe_tensor_parallel_size */
    /* what `plan --record` keeps (wl_engine_info): not part of the layout */
    F_DTYPE,   /* --dtype */
    F_QUANT,   /* --quantization */
    F_MAXLEN,  /* the longest sequence: vLLM --max-model-len, SGLang --context-length */
    F_MAXSEQS, /* requests in a batch: vLLM --max-num-seqs, SGLang --max-running-requests */
    F_NFIELDS
};

enum fkind { K_COUNT, K_BOOL, K_TEXT };

struct flag_def {
    const char *name; /* long options with dashes: tpx_cmdline_flag() folds '_' into '-' */
    enum fld field;
};

static enum fkind field_kind(enum fld f)
{
    switch (f) {
    case F_EP_ON:
    case F_DPATTN:
    case F_DEEPEP:
    case F_ATTN_DP:
    case F_PREFILL:
    case F_DECODE:
        return K_BOOL;
    case F_A2A:
    case F_DISAGG:
    case F_CONFIG:
    case F_DTYPE:
    case F_QUANT:
    case F_MAXLEN:
    case F_MAXSEQS:
        return K_TEXT;
    default:
        return K_COUNT;
    }
}

/* vLLM: vllm/engine/arg_utils.py (EngineArgs.add_cli_args: ParallelConfig's -tp, -pp, -dp,
 * -dpl, -ep short forms) and vllm/config/parallel.py (world = tp x pp, x dp over the DP group).
 * --config FILE: a YAML file of the long flag names (vllm/utils FlexibleArgumentParser,
 * docs "Server Arguments", "Configuration file"); a flag on the command line wins over it. */
static const struct flag_def vllm_flags[] = {
    {"--config", F_CONFIG},
    {"--tensor-parallel-size", F_TP},
    {"-tp", F_TP},
    {"--pipeline-parallel-size", F_PP},
    {"-pp", F_PP},
    {"--data-parallel-size", F_DP},
    {"-dp", F_DP},
    {"--data-parallel-size-local", F_DPL},
    {"-dpl", F_DPL},
    {"--enable-expert-parallel", F_EP_ON},
    {"-ep", F_EP_ON},
    {"--nnodes", F_NNODES},
    /* python3 -m dynamo.vllm: components/src/dynamo/vllm/args.py */
    {"--disaggregation-mode", F_DISAGG},
    {"--is-prefill-worker", F_PREFILL},
    {"--is-decode-worker", F_DECODE},
    {"--dtype", F_DTYPE},
    {"--quantization", F_QUANT},
    {"-q", F_QUANT},
    {"--max-model-len", F_MAXLEN},
    {"--max-num-seqs", F_MAXSEQS},
};

/* SGLang: python/sglang/srt/server_args.py (add_cli_args: "--tensor-parallel-size", "--tp-size";
 * "--pipeline-parallel-size", "--pp-size"; "--data-parallel-size", "--dp-size";
 * "--expert-parallel-size", "--ep-size"; --enable-dp-attention, --moe-a2a-backend,
 * --moe-dense-tp-size, --nnodes) and argparse's abbreviations --tp, --dp, --ep that SGLang's own
 * docs and tests use. --enable-ep-moe and --enable-deepep-moe are the older spellings. */
/* --config FILE: a YAML file of the long flag names, or tp, pp, dp, ep; the command line wins
 * (python/sglang/srt/server_args_config_parser.py ConfigArgumentMerger, docs/advanced_features/
 * server_arguments.md). */
static const struct flag_def sglang_flags[] = {
    {"--config", F_CONFIG},
    {"--tensor-parallel-size", F_TP},
    {"--tp-size", F_TP},
    {"--tp", F_TP},
    {"--pipeline-parallel-size", F_PP},
    {"--pp-size", F_PP},
    {"--data-parallel-size", F_DP},
    {"--dp-size", F_DP},
    {"--dp", F_DP},
    {"--expert-parallel-size", F_EP},
    {"--ep-size", F_EP},
    {"--ep", F_EP},
    {"--enable-dp-attention", F_DPATTN},
    {"--moe-a2a-backend", F_A2A},
    {"--enable-deepep-moe", F_DEEPEP},
    {"--enable-ep-moe", F_EP_ON},
    {"--moe-dense-tp-size", F_DENSE_TP},
    {"--nnodes", F_NNODES},
    {"--disaggregation-mode", F_DISAGG},
    {"--dtype", F_DTYPE},
    {"--quantization", F_QUANT},
    {"--context-length", F_MAXLEN},
    {"--max-running-requests", F_MAXSEQS},
};

/* TensorRT-LLM: tensorrt_llm/commands/serve.py (trtllm-serve's click options --tp_size,
 * --pp_size, --ep_size, --gpus_per_node; world = tp x pp; --config, alias --extra_llm_api_options:
 * "Path to a YAML file that overwrites the parameters specified by trtllm-serve"). */
static const struct flag_def trtllm_flags[] = {
    {"--extra-llm-api-options", F_CONFIG},
    {"--config", F_CONFIG},
    {"--tp-size", F_TP},
    {"--pp-size", F_PP},
    {"--ep-size", F_EP},
    {"--gpus-per-node", F_GPN},
    {"--max-seq-len", F_MAXLEN},
    {"--max-batch-size", F_MAXSEQS},
};

/* Dynamo's TensorRT-LLM worker, `python3 -m dynamo.trtllm`: ai-dynamo/dynamo
 * components/src/dynamo/trtllm/backend_args.py (DynamoTrtllmArgGroup: --tensor-parallel-size,
 * --pipeline-parallel-size, --expert-parallel-size, --gpus-per-node, --disaggregation-mode, each
 * defaulting to its DYN_TRTLLM_* env var: components/src/dynamo/common/configuration/utils.py
 * add_argument, env_or_default). The sizes mean what trtllm-serve's mean. */
static const struct flag_def dynamo_trtllm_flags[] = {
    {"--tensor-parallel-size", F_TP},    {"--pipeline-parallel-size", F_PP},
    {"--expert-parallel-size", F_EP},    {"--gpus-per-node", F_GPN},
    {"--disaggregation-mode", F_DISAGG}, {"--extra-engine-args", F_CONFIG},
};

/* Env vars an engine reads a flag from when the command line does not give it. */
struct env_def {
    const char *var;
    enum fld field;
};
/* Dynamo's TensorRT-LLM worker: each flag above defaults to its DYN_TRTLLM_* var
 * (backend_args.py add_argument(..., env_var=...)); --extra-engine-args to
 * DYN_TRTLLM_EXTRA_ENGINE_ARGS. */
static const struct env_def dynamo_trtllm_env[] = {
    {"DYN_TRTLLM_TENSOR_PARALLEL_SIZE", F_TP},    {"DYN_TRTLLM_PIPELINE_PARALLEL_SIZE", F_PP},
    {"DYN_TRTLLM_EXPERT_PARALLEL_SIZE", F_EP},    {"DYN_TRTLLM_GPUS_PER_NODE", F_GPN},
    {"DYN_TRTLLM_DISAGGREGATION_MODE", F_DISAGG}, {"DYN_TRTLLM_EXTRA_ENGINE_ARGS", F_CONFIG},
};
/* NVIDIA NIM for LLMs: the container's entrypoint starts the engine itself and takes its sizes
 * from NIM_TENSOR_PARALLEL_SIZE and NIM_PIPELINE_PARALLEL_SIZE (NIM LLM docs, "Configuring a
 * NIM"; multi-node NIM sets both on the leader and the workers). */
static const struct env_def nim_env[] = {
    {"NIM_TENSOR_PARALLEL_SIZE", F_TP},
    {"NIM_PIPELINE_PARALLEL_SIZE", F_PP},
};

/* TensorRT-LLM's LLM API options, the YAML a config flag names (tensorrt_llm/llmapi/llm_args.py
 * BaseLlmArgs: tensor_parallel_size, pipeline_parallel_size, moe_expert_parallel_size,
 * moe_tensor_parallel_size, enable_attention_dp, gpus_per_node; TorchLlmArgs max_seq_len,
 * max_batch_size). Its keys win over the command line. */
struct key_def {
    const char *key;
    enum fld field;
};
static const struct key_def trtllm_keys[] = {
    {"tensor_parallel_size", F_TP},     {"pipeline_parallel_size", F_PP},
    {"moe_expert_parallel_size", F_EP}, {"moe_tensor_parallel_size", F_MOE_TP},
    {"enable_attention_dp", F_ATTN_DP}, {"gpus_per_node", F_GPN},
    {"max_seq_len", F_MAXLEN},          {"max_batch_size", F_MAXSEQS},
};

/* Triton's TensorRT-LLM launcher for LWS: kubernetes-sigs/lws
 * docs/examples/tensorrt-llm/build/server.py (argparse --tp, --pp, --gpu_per_node; world =
 * tp x pp, world / gpu_per_node pods). */
static const struct flag_def triton_flags[] = {
    {"--tp", F_TP},
    {"--pp", F_PP},
    {"--gpu-per-node", F_GPN},
};

/* LMDeploy: lmdeploy/cli/utils.py (ArgumentHelper.tp, .dp, .ep: --tp, --dp, --ep; --nnodes) and
 * lmdeploy/pytorch/config.py (DistConfig: world = ep when ep > 1, else tp; dp splits attention). */
static const struct flag_def lmdeploy_flags[] = {
    {"--tp", F_TP},
    {"--dp", F_DP},
    {"--ep", F_EP},
    {"--nnodes", F_NNODES},
};

/* TGI: launcher/src/main.rs (text-generation-launcher --num-shard, env NUM_SHARD). */
static const struct flag_def tgi_flags[] = {
    {"--num-shard", F_NSHARD},
};

/* Megatron-LM: megatron/training/arguments.py (_add_distributed_args:
 * --tensor-model-parallel-size, --pipeline-model-parallel-size, --expert-model-parallel-size),
 * launched by torchrun: torch/distributed/run.py (--nproc-per-node/--nproc_per_node, --nnodes);
 * world = nproc_per_node x nnodes, dp = world / (tp x pp). */
static const struct flag_def megatron_flags[] = {
    {"--tensor-model-parallel-size", F_TP},
    {"--pipeline-model-parallel-size", F_PP},
    {"--expert-model-parallel-size", F_EP},
    {"--nproc-per-node", F_NPROC},
    {"--nnodes", F_NNODES},
};

/* No engine named: the spellings topox has always read, with vLLM's meanings. */
static const struct flag_def generic_flags[] = {
    {"--tensor-parallel-size", F_TP},
    {"-tp", F_TP},
    {"--tp-size", F_TP},
    {"--tp", F_TP},
    {"--pipeline-parallel-size", F_PP},
    {"-pp", F_PP},
    {"--pp-size", F_PP},
    {"--data-parallel-size", F_DP},
    {"-dp", F_DP},
    {"--dp-size", F_DP},
    {"--dp", F_DP},
    {"--enable-expert-parallel", F_EP_ON},
    {"--nnodes", F_NNODES},
    {"--dtype", F_DTYPE},
    {"--quantization", F_QUANT},
    {"-q", F_QUANT},
    {"--max-model-len", F_MAXLEN},
    {"--context-length", F_MAXLEN},
    {"--max-num-seqs", F_MAXSEQS},
    {"--max-running-requests", F_MAXSEQS},
};

enum eng {
    E_GENERIC,
    E_VLLM,
    E_SGLANG,
    E_TRTLLM,
    E_DYNAMO_TRTLLM,
    E_TRITON,
    E_LMDEPLOY,
    E_TGI,
    E_MEGATRON,
    E_NIM
};

#define TABLE(t) t, sizeof(t) / sizeof(t[0])
#define NONE NULL, 0
/* Each engine: its flags; the env vars its flags default to; the keys of its config file (NONE:
 * the file holds the engine's long flag names, as vLLM's and SGLang's do); whether the file wins
 * over the command line. */
static const struct {
    const char *name;
    const struct flag_def *flags;
    size_t nflags;
    const struct env_def *env;
    size_t nenv;
    const struct key_def *keys;
    size_t nkeys;
    bool file_wins;
} engines[] = {
    [E_GENERIC] = {"", TABLE(generic_flags), NONE, NONE, false},
    [E_VLLM] = {"vllm", TABLE(vllm_flags), NONE, NONE, false},
    [E_SGLANG] = {"sglang", TABLE(sglang_flags), NONE, NONE, false},
    [E_TRTLLM] = {"trtllm", TABLE(trtllm_flags), NONE, TABLE(trtllm_keys), true},
    [E_DYNAMO_TRTLLM] = {"dynamo-trtllm", TABLE(dynamo_trtllm_flags), TABLE(dynamo_trtllm_env),
                         TABLE(trtllm_keys), true},
    [E_TRITON] = {"triton-trtllm", TABLE(triton_flags), NONE, NONE, false},
    [E_LMDEPLOY] = {"lmdeploy", TABLE(lmdeploy_flags), NONE, NONE, false},
    [E_TGI] = {"tgi", TABLE(tgi_flags), NONE, NONE, false},
    [E_MEGATRON] = {"megatron", TABLE(megatron_flags), NONE, NONE, false},
    [E_NIM] = {"nim", TABLE(generic_flags), TABLE(nim_env), NONE, false},
};

/* Env vars in which an operator hands the engine more flags, read as if they ended the command
 * line (first found wins the engine when argv names none):
 *   KServe LLMInferenceService: the main container runs `vllm serve ... ${VLLM_ADDITIONAL_ARGS}`
 *   (kserve config/llmisvc/config-llm-template.yaml; docs/samples/llmisvc put
 * --tensor-parallel-size and --enable-expert-parallel there); NVIDIA NIM: NIM_PASSTHROUGH_ARGS,
 * handed to the NIM's backend engine as it stands. */
static const struct {
    const char *var;
    enum eng e;
} operator_args[] = {
    {"VLLM_ADDITIONAL_ARGS", E_VLLM},
    {"NIM_PASSTHROUGH_ARGS", E_NIM},
};
#define NOPARGS (sizeof(operator_args) / sizeof(operator_args[0]))

/* Words that name an engine (a program, a module, a script), first match in argv order wins. A
 * launcher (weak) names the engine only when nothing after it does: TensorRT-LLM's
 * trtllm-llmapi-launch runs the command that follows it under MPI (tensorrt_llm/llmapi/
 * trtllm-llmapi-launch; examples/llm-api/llm_mgmn_trtllm_serve.sh), e.g. `trtllm-llmapi-launch
 * trtllm-serve ...` or, in Dynamo's multinode leader, `... && trtllm-llmapi-launch python3 -m
 * dynamo.trtllm ...` (deploy/operator backend_trtllm.go). */
struct mark {
    const char *word; /* substring of a token */
    enum eng e;
};
static const struct mark launchers[] = {
    {"trtllm-llmapi-launch", E_TRTLLM},
};
static const struct mark marks[] = {
    {"sglang", E_SGLANG},
    {"dynamo.trtllm", E_DYNAMO_TRTLLM},
    {"vllm", E_VLLM},
    {"trtllm-serve", E_TRTLLM},
    {"tensorrt_llm", E_TRTLLM},
    {"lmdeploy", E_LMDEPLOY},
    {"text-generation-launcher", E_TGI},
    {"torchrun", E_MEGATRON},
    {"torch.distributed.run", E_MEGATRON},
    {"torch.distributed.launch", E_MEGATRON},
    {"pretrain_gpt", E_MEGATRON},
    {"megatron", E_MEGATRON},
    {"--tensor-model-parallel-size", E_MEGATRON},
    {"--gpu_per_node", E_TRITON},
    {"launch_triton_server", E_TRITON},
};

static enum eng which_engine(const struct tpx_cmdline *cl)
{
    enum eng launcher = E_GENERIC;

    for (size_t i = 0; i < cl->ntok; i++) {
        for (size_t k = 0; k < sizeof(marks) / sizeof(marks[0]); k++) {
            if (strstr(cl->tok[i].text, marks[k].word))
                return marks[k].e;
        }
        for (size_t k = 0; k < sizeof(launchers) / sizeof(launchers[0]); k++) {
            if (launcher == E_GENERIC && strstr(cl->tok[i].text, launchers[k].word))
                launcher = launchers[k].e;
        }
    }
    return launcher;
}

/* Positive whole number, at most 1 000 000. */
static bool count_of(const char *s, unsigned *out)
{
    unsigned long v = 0;

    if (!s || *s < '0' || *s > '9')
        return false;
    for (; *s >= '0' && *s <= '9'; s++) {
        v = v * 10 + (unsigned long)(*s - '0');
        if (v > 1000000UL)
            return false;
    }
    if (*s || v == 0)
        return false;
    *out = (unsigned)v;
    return true;
}

bool wl_parse_count(const char *s, bool zero_ok, unsigned *out)
{
    unsigned long v = 0;
    const char *p = s;

    while (*p == ' ')
        p++;
    if (*p < '0' || *p > '9')
        return false;
    while (*p >= '0' && *p <= '9') {
        v = v * 10 + (unsigned long)(*p - '0');
        if (v > 1000000UL)
            return false;
        p++;
    }
    while (*p == ' ')
        p++;
    if (*p || (!zero_ok && v == 0))
        return false;
    *out = (unsigned)v;
    return true;
}

bool wl_rbg_lwp_pod(const struct pol_pod_facts *f)
{
    const char *inst = tpx_kv_get(f->labels, f->nlabels, RBG2 "role-instance-name");
    const char *name = tpx_kv_get(f->labels, f->nlabels, RBG2 "component-name");
    const char *idx = tpx_kv_get(f->labels, f->nlabels, RBG2 "component-index");
    const char *id = tpx_kv_get(f->labels, f->nlabels, RBG2 "component-id");
    const char *size_s = tpx_kv_get(f->labels, f->nlabels, RBG2 "component-size");
    unsigned size, k, cid;

    if (!inst || !inst[0] || !name || !idx || !size_s || !wl_parse_count(size_s, false, &size) ||
        !wl_parse_count(idx, true, &k) || k >= size)
        return false;
    if (strcmp(name, k == 0 ? "leader" : "worker") != 0)
        return false;
    /* component-id counts each component from 0: the leader 0, worker k - 1 */
    return !id || (wl_parse_count(id, true, &cid) && cid == (k == 0 ? 0 : k - 1));
}

/* --- the env a container sees ------------------------------------------------------------------
 */

struct envset {
    struct tpx_env_var *v;
    size_t n;
    char *store;
};

/* The variables the controllers inject, from the labels and annotations they set with them.
 * LWS (pkg/utils/pod): LWS_LEADER_ADDRESS, LWS_GROUP_SIZE, LWS_WORKER_INDEX. RoleBasedGroup has
 * two generations, each with its own labels and its own names (sgl-project/rbg
 * doc/reference/variables.md, v1alpha1 -> v1alpha2 migration guide):
 * - v1alpha1 (rolebasedgroup.workloads.x-k8s.io/{name,role}; pods of a StatefulSet, Deployment
 *   or LeaderWorkerSet, so a leader-worker role also has the LWS labels and LWS_*): GROUP_NAME,
 *   ROLE_NAME, ROLE_INDEX (apps.kubernetes.io/pod-index), pkg/discovery env_builder.go then;
 * - v1alpha2 (rbg.workloads.x-k8s.io/...; api/workloads/constants/env.go, pkg/discovery
 *   env_builder.go): RBG_GROUP_NAME, RBG_ROLE_NAME, RBG_ROLE_INDEX (role-instance-index, or
 *   apps.kubernetes.io/pod-index for a StatefulSet), on RoleInstance pods RBG_ROLE_INSTANCE_NAME,
 *   RBG_COMPONENT_NAME, RBG_COMPONENT_INDEX (component-id), and for a leaderWorkerPattern
 *   (BuildLwsEnv) RBG_LWP_LEADER_ADDRESS, RBG_LWP_WORKER_INDEX (component-index) and
 *   RBG_LWP_GROUP_SIZE (component-size).
 * A variable whose label is missing is set but unknown, as is an address (a name, never a number).
 * They come first, as the controllers put them. */
static size_t injected(const struct pol_pod_facts *f, struct tpx_env_var *out)
{
    const char *size = tpx_kv_get(f->annotations, f->nannotations, LWS "size");
    const char *widx = tpx_kv_get(f->labels, f->nlabels, LWS "worker-index");
    const char *pidx = tpx_kv_get(f->labels, f->nlabels, "apps.kubernetes.io/pod-index");
    const char *rbg1 = tpx_kv_get(f->labels, f->nlabels, RBG1 "name");
    const char *rbg2 = tpx_kv_get(f->labels, f->nlabels, RBG2 "group-name");
    size_t n = 0;

    if (size || widx || tpx_kv_get(f->labels, f->nlabels, LWS "name")) {
        out[n++] = (struct tpx_env_var){"LWS_LEADER_ADDRESS", NULL};
        out[n++] = (struct tpx_env_var){"LWS_GROUP_SIZE", size};
        out[n++] = (struct tpx_env_var){"LWS_WORKER_INDEX", widx};
    }
    if (rbg1) {
        out[n++] = (struct tpx_env_var){"GROUP_NAME", rbg1};
        out[n++] =
            (struct tpx_env_var){"ROLE_NAME", tpx_kv_get(f->labels, f->nlabels, RBG1 "role")};
        out[n++] = (struct tpx_env_var){"ROLE_INDEX", pidx};
    }
    if (rbg2) {
        const char *inst = tpx_kv_get(f->labels, f->nlabels, RBG2 "role-instance-name");
        const char *iidx = tpx_kv_get(f->labels, f->nlabels, RBG2 "role-instance-index");

        out[n++] = (struct tpx_env_var){"RBG_GROUP_NAME", rbg2};
        out[n++] = (struct tpx_env_var){"RBG_ROLE_NAME",
                                        tpx_kv_get(f->labels, f->nlabels, RBG2 "role-name")};
        out[n++] = (struct tpx_env_var){"RBG_ROLE_INDEX", inst ? iidx : pidx};
        if (inst) {
            out[n++] = (struct tpx_env_var){"RBG_ROLE_INSTANCE_NAME", inst};
            out[n++] = (struct tpx_env_var){
                "RBG_COMPONENT_NAME", tpx_kv_get(f->labels, f->nlabels, RBG2 "component-name")};
            out[n++] = (struct tpx_env_var){"RBG_COMPONENT_INDEX",
                                            tpx_kv_get(f->labels, f->nlabels, RBG2 "component-id")};
        }
        if (wl_rbg_lwp_pod(f)) { /* InjectLeaderWorkerSetEnv: that pattern only */
            out[n++] = (struct tpx_env_var){"RBG_LWP_LEADER_ADDRESS", NULL};
            out[n++] = (struct tpx_env_var){
                "RBG_LWP_WORKER_INDEX", tpx_kv_get(f->labels, f->nlabels, RBG2 "component-index")};
            out[n++] = (struct tpx_env_var){
                "RBG_LWP_GROUP_SIZE", tpx_kv_get(f->labels, f->nlabels, RBG2 "component-size")};
        }
    }
    return n;
}

#define ENV_INJECTED_MAX 15 /* LWS 3 + RBG v1alpha1 3 + v1alpha2 9 */
#define ENV_STORE ((size_t)64 << 10)

static enum tpx_code env_build(const struct pol_pod_facts *f, struct envset *es,
                               struct tpx_err *err)
{
    size_t k;

    size_t need = 1024;

    memset(es, 0, sizeof(*es));
    /* room for every value expanded a few times over; what does not fit is unknown */
    for (size_t i = 0; i < f->nenv && need < ENV_STORE; i++)
        need += f->env[i].value ? 2 * strlen(f->env[i].value) + 64 : 0;
    if (need > ENV_STORE)
        need = ENV_STORE;
    es->v = calloc(f->nenv + ENV_INJECTED_MAX + 1, sizeof(*es->v));
    es->store = malloc(need);
    if (!es->v || !es->store) {
        free(es->v);
        free(es->store);
        memset(es, 0, sizeof(*es));
        return tpx_err_set(err, TPX_ENOMEM, "workload: out of memory");
    }
    k = injected(f, es->v);
    for (size_t i = 0; i < f->nenv; i++) {
        if (f->env[i].name)
            es->v[k++] = f->env[i];
    }
    es->n = tpx_env_resolve_list(es->v, k, es->store, need);
    return TPX_OK;
}

static void env_release(struct envset *es)
{
    free(es->v);
    free(es->store);
    memset(es, 0, sizeof(*es));
}

/* --- reading the flags ------------------------------------------------------------------------
 */

enum fstate { S_ABSENT = 0, S_VALUE, S_UNKNOWN };

struct found {
    enum fstate st[F_NFIELDS];
    unsigned val[F_NFIELDS];
    bool env[F_NFIELDS];         /* the value came through the env */
    const char *name[F_NFIELDS]; /* the spelling in the table */
    int argi[F_NFIELDS];
    const char *via[F_NFIELDS]; /* static: the operator's env var or config flag it came in */
    bool cfg[F_NFIELDS];        /* the value is a key of the config file */
    char text[F_NFIELDS][160];  /* F_A2A's value, a path, what an unknown value looked like */
    char cfg_why[256];          /* the config file named could not be read: why */
};

__attribute__((format(printf, 2, 3))) static void append(char *buf, const char *fmt, ...)
{
    size_t len = strlen(buf);
    va_list ap;

    if (len + 1 >= 192)
        return;
    va_start(ap, fmt);
    vsnprintf(buf + len, 192 - len, fmt, ap);
    va_end(ap);
}

/* A flag's value: literal, through the env, or unknown. */
static enum tpx_code take(struct found *ff, const struct flag_def *d,
                          const struct tpx_cmdline_value *v, bool kube_env, const struct envset *es,
                          struct tpx_err *err)
{
    enum fld fl = d->field;
    char buf[TPX_ENV_MAX_LEN + 1];
    const char *text = v->text;
    bool via_env = kube_env;

    ff->name[fl] = d->name;
    ff->argi[fl] = (int)v->tok->argi;
    tpx_str_copy(ff->text[fl], sizeof(ff->text[fl]), text);
    if (tpx_env_has_expansion(text) || (v->tok->flags & TPX_CMDLINE_EXPANDS)) {
        /* a shell expands it only inside a script; anywhere else the engine gets the text */
        if (!(v->tok->flags & TPX_CMDLINE_SCRIPT) ||
            tpx_env_shell_expand(text, es->v, es->n, buf, sizeof(buf)) != TPX_ENV_OK) {
            ff->st[fl] = S_UNKNOWN;
            return TPX_OK;
        }
        text = buf;
        via_env = true;
    }
    if (field_kind(fl) == K_TEXT) {
        tpx_str_copy(ff->text[fl], sizeof(ff->text[fl]), text);
        ff->st[fl] = S_VALUE;
        ff->env[fl] = via_env;
        return TPX_OK;
    }
    if (!count_of(text, &ff->val[fl])) {
        if (via_env) {
            ff->st[fl] = S_UNKNOWN; /* "eight" from the env: not ours to reject */
            return TPX_OK;
        }
        if (fl == F_NNODES || fl == F_NPROC) {
            ff->st[fl] = S_UNKNOWN; /* torchrun's "1:4" ranges, "gpu", "auto" */
            return TPX_OK;
        }
        return tpx_err_set(err, TPX_EINVAL, "flag '%s': '%s' is not a positive whole number",
                           d->name, v->text);
    }
    ff->st[fl] = S_VALUE;
    ff->env[fl] = via_env;
    return TPX_OK;
}

/* argv with the kubelet's $(VAR) expanded; changed[a] says element a was rewritten. */
static enum tpx_code kube_argv(const struct pol_pod_facts *f, const struct envset *es,
                               const char ***argv, char ***owned, bool **changed,
                               struct tpx_err *err)
{
    size_t room = f->nargv + 3 * NOPARGS + 1; /* the operators' flags follow argv */

    *argv = calloc(room, sizeof(**argv));
    *owned = calloc(room, sizeof(**owned));
    *changed = calloc(room, sizeof(**changed));
    if (!*argv || !*owned || !*changed)
        return tpx_err_set(err, TPX_ENOMEM, "workload: out of memory");
    for (size_t a = 0; a < f->nargv; a++) {
        const char *s = f->argv[a];
        size_t cap;
        char *out;

        (*argv)[a] = s;
        if (!s || !strstr(s, "$("))
            continue;
        cap = strlen(s) + 2 * TPX_ENV_MAX_LEN;
        out = malloc(cap);
        if (!out)
            return tpx_err_set(err, TPX_ENOMEM, "workload: out of memory");
        if (tpx_env_kube_expand(s, es->v, es->n, out, cap) != TPX_ENV_OK) {
            free(out); /* a valueFrom variable or too long: keep the text, read as unknown */
            continue;
        }
        (*changed)[a] = strcmp(out, s) != 0;
        (*owned)[a] = out;
        (*argv)[a] = out;
    }
    return TPX_OK;
}

/* A flag the command line did not give, from the env var the engine defaults it to (the last
 * definition of it in the container's env): a literal value, or unknown (valueFrom, not a
 * number). */
static const char *env_last(const struct envset *es, const char *var, bool *found)
{
    *found = false;
    for (size_t i = es->n; i-- > 0;) {
        if (es->v[i].name && strcmp(es->v[i].name, var) == 0) {
            *found = true;
            return es->v[i].value;
        }
    }
    return NULL;
}

static void env_default(struct found *ff, enum fld fl, const char *var, const struct envset *es)
{
    if (ff->st[fl] != S_ABSENT)
        return;
    for (size_t i = es->n; i-- > 0;) {
        const char *v = es->v[i].value;
        if (!es->v[i].name || strcmp(es->v[i].name, var) != 0)
            continue;
        ff->name[fl] = var;
        ff->argi[fl] = -1;
        ff->env[fl] = true;
        tpx_str_copy(ff->text[fl], sizeof(ff->text[fl]), v ? v : "valueFrom");
        if (v && field_kind(fl) == K_TEXT)
            ff->st[fl] = S_VALUE;
        else if (v && count_of(v, &ff->val[fl]))
            ff->st[fl] = S_VALUE;
        else
            ff->st[fl] = S_UNKNOWN;
        return;
    }
}

/* Is key (a config file's, "tensor-parallel-size" or "tensor_parallel_size") the long flag
 * name ("--tensor-parallel-size")? '_' stands for '-', as the engines' parsers accept. */
static bool key_is_flag(const char *key, const char *flag)
{
    if (flag[0] != '-' || flag[1] != '-')
        return false;
    for (flag += 2; *key && *flag; key++, flag++) {
        if (*key != *flag && !(*key == '_' && *flag == '-'))
            return false;
    }
    return !*key && !*flag;
}

/* The config file path names, as the container sees it: the same path, or a relative path the
 * file's path ends with (the engine resolves it from its working directory). */
static const struct pol_config_file *config_named(const struct pol_pod_facts *f, const char *path)
{
    size_t pl = strlen(path);

    for (size_t i = 0; i < f->nconfigs; i++) {
        const char *c = f->configs[i].path;
        size_t cl = c ? strlen(c) : 0;

        if (!c)
            continue;
        if (strcmp(c, path) == 0 ||
            (path[0] != '/' && cl > pl && c[cl - pl - 1] == '/' && strcmp(c + cl - pl, path) == 0))
            return &f->configs[i];
    }
    return NULL;
}

/* One key of the config file into its field: the file wins over the command line where the
 * engine says so (TensorRT-LLM), else only what the command line left unsaid. */
static void config_value(struct found *ff, enum eng e, enum fld fl, const char *name, const char *v)
{
    if (ff->st[fl] != S_ABSENT && !engines[e].file_wins && !ff->cfg[fl])
        return;
    ff->name[fl] = name;
    ff->argi[fl] = ff->argi[F_CONFIG];
    ff->via[fl] = ff->name[F_CONFIG];
    ff->env[fl] = false;
    ff->cfg[fl] = true;
    tpx_str_copy(ff->text[fl], sizeof(ff->text[fl]), v);
    if (field_kind(fl) == K_BOOL) {
        bool on = strcmp(v, "true") == 0 || strcmp(v, "True") == 0 || strcmp(v, "1") == 0;
        ff->st[fl] = on ? S_VALUE : S_ABSENT;
        ff->val[fl] = on;
    } else if (field_kind(fl) == K_TEXT) {
        ff->st[fl] = S_VALUE;
    } else {
        ff->st[fl] = count_of(v, &ff->val[fl]) ? S_VALUE : S_UNKNOWN;
    }
}

/* The config file the flags name (F_CONFIG), read from what objects/ gave the pod: its keys, by
 * the engine's key table or as its long flag names. A file named but not given (not in a
 * ConfigMap of the manifest; serve reads no ConfigMaps) or not a mapping leaves F_CONFIG unknown:
 * what it says cannot be known, so the layout is not certain. */
static void apply_config(const struct pol_pod_facts *f, enum eng e, struct found *ff)
{
    const struct pol_config_file *cf;

    if (ff->st[F_CONFIG] != S_VALUE)
        return;
    cf = config_named(f, ff->text[F_CONFIG]);
    if (!cf || !cf->mapping) {
        ff->st[F_CONFIG] = S_UNKNOWN;
        snprintf(ff->cfg_why, sizeof(ff->cfg_why), "%s %.100s is %s", ff->name[F_CONFIG],
                 ff->text[F_CONFIG],
                 cf ? "not a YAML mapping"
                    : "not read (no ConfigMap of the manifest mounted there; serve reads none)");
        return;
    }
    for (size_t i = 0; i < cf->nkv; i++) {
        const char *k = cf->kv[i].key, *v = cf->kv[i].value;

        if (!k || !v)
            continue;
        for (size_t t = 0; t < engines[e].nkeys; t++) {
            if (strcmp(k, engines[e].keys[t].key) == 0)
                config_value(ff, e, engines[e].keys[t].field, engines[e].keys[t].key, v);
        }
        for (size_t t = 0; !engines[e].keys && t < engines[e].nflags; t++) {
            enum fld fl = engines[e].flags[t].field;
            if (fl != F_CONFIG && key_is_flag(k, engines[e].flags[t].name)) {
                config_value(ff, e, fl, engines[e].flags[t].name, v);
                break;
            }
        }
    }
}

/* The engine the env names when argv does not: an operator's flags var, else a NIM's sizes. */
static enum eng env_engine(const struct envset *es)
{
    bool found;

    for (size_t k = 0; k < NOPARGS; k++) {
        if (env_last(es, operator_args[k].var, &found), found)
            return operator_args[k].e;
    }
    for (size_t k = 0; k < engines[E_NIM].nenv; k++) {
        if (env_last(es, engines[E_NIM].env[k].var, &found), found)
            return E_NIM;
    }
    return E_GENERIC;
}

/* Every occurrence counts, in order: the last one wins, and a bad literal is an error even when
 * a later one is good, as with argparse. A count flag without a value is ignored. The flags an
 * operator hands in an env var (operator_args) follow argv, as a shell script of their own. */
static enum tpx_code scan(const struct pol_pod_facts *f, const struct envset *es, enum eng *eng,
                          struct found *ff, struct tpx_err *err)
{
    struct tpx_cmdline cl;
    const char **argv = NULL;
    char **owned = NULL;
    bool *changed = NULL;
    const char *via[NOPARGS] = {0};
    size_t n = f->nargv, nvia = 0;
    enum tpx_code rc;

    memset(ff, 0, sizeof(*ff));
    tpx_cmdline_init(&cl);
    rc = kube_argv(f, es, &argv, &owned, &changed, err);
    for (size_t k = 0; rc == TPX_OK && k < NOPARGS; k++) {
        bool found;
        const char *v = env_last(es, operator_args[k].var, &found);
        if (!v)
            continue;
        argv[n++] = "sh";
        argv[n++] = "-c";
        argv[n++] = v;
        via[nvia++] = operator_args[k].var;
    }
    if (rc == TPX_OK)
        rc = tpx_cmdline_split(&cl, argv, n, err);
    if (rc == TPX_OK) {
        *eng = which_engine(&cl);
        if (*eng == E_GENERIC)
            *eng = env_engine(es);
    }
    for (size_t i = 0; i < cl.ntok && rc == TPX_OK; i++) {
        const struct flag_def *t = engines[*eng].flags;
        struct tpx_cmdline_value v;
        size_t argi = cl.tok[i].argi;

        if (cl.tok[i].text[0] != '-')
            continue;
        for (size_t k = 0; k < engines[*eng].nflags; k++) {
            enum fld fl = t[k].field;
            if (!tpx_cmdline_flag(&cl, i, t[k].name, &v))
                continue;
            if (field_kind(fl) == K_BOOL) {
                ff->st[fl] = S_VALUE;
                ff->val[fl] = 1;
                ff->name[fl] = t[k].name;
            } else if (v.text) {
                rc = take(ff, &t[k], &v, changed[v.tok->argi], es, err);
            } else {
                break;
            }
            /* the flag's own element names it (FILE:LINE of a rejection or a warning); one an
             * operator's env var carried has none */
            ff->argi[fl] = argi < f->nargv ? (int)argi : -1;
            ff->via[fl] = argi < f->nargv ? NULL : via[(argi - f->nargv) / 3];
            break;
        }
    }
    for (size_t k = 0; rc == TPX_OK && k < engines[*eng].nenv; k++)
        env_default(ff, engines[*eng].env[k].field, engines[*eng].env[k].var, es);
    if (rc == TPX_OK)
        apply_config(f, *eng, ff);
    tpx_cmdline_release(&cl);
    for (size_t a = 0; owned && a < f->nargv; a++)
        free(owned[a]);
    free(owned);
    free(changed);
    free(argv);
    return rc;
}

/* --- the layout each engine means ------------------------------------------------------------
 */

static bool has(const struct found *ff, enum fld f)
{
    return ff->st[f] == S_VALUE;
}

static unsigned val_or(const struct found *ff, enum fld f, unsigned dflt)
{
    return ff->st[f] == S_VALUE ? ff->val[f] : dflt;
}

static void set_size(struct wl_engine_layout *o, const struct found *ff, enum pol_size s,
                     unsigned v, enum fld from)
{
    switch (s) {
    case POL_SIZE_TP:
        o->tp = v;
        break;
    case POL_SIZE_PP:
        o->pp = v;
        break;
    case POL_SIZE_DP:
        o->dp = v;
        break;
    default:
        o->ep = v;
        break;
    }
    o->origin[s].argi = -1;
    if (from == F_NFIELDS) {
        o->origin[s].src = POL_SRC_DERIVED;
    } else if (ff->st[from] == S_ABSENT) {
        o->origin[s].src = POL_SRC_DEFAULT;
    } else if (ff->st[from] == S_UNKNOWN) {
        o->origin[s].src = POL_SRC_FLAG;
        o->origin[s].unknown = true;
        o->origin[s].what = ff->name[from];
        o->origin[s].argi = ff->argi[from];
        o->origin[s].via = ff->via[from];
    } else {
        o->origin[s].src = ff->cfg[from]   ? POL_SRC_CONFIG
                           : ff->env[from] ? POL_SRC_ENV
                                           : POL_SRC_FLAG;
        o->origin[s].what = ff->name[from];
        o->origin[s].argi = ff->argi[from];
        o->origin[s].via = ff->via[from];
    }
}

static void map_vllm(struct wl_engine_layout *o, const struct found *ff)
{
    unsigned tp = val_or(ff, F_TP, 1), pp = val_or(ff, F_PP, 1), dp = val_or(ff, F_DP, 1);

    set_size(o, ff, POL_SIZE_TP, tp, F_TP);
    set_size(o, ff, POL_SIZE_PP, pp, F_PP);
    set_size(o, ff, POL_SIZE_DP, dp, F_DP);
    /* MoE layers run with ep = dp x tp of a stage (vllm/config/parallel.py) */
    set_size(o, ff, POL_SIZE_EP, has(ff, F_EP_ON) ? dp * tp : 1, F_EP_ON);
    if (has(ff, F_EP_ON) && (ff->st[F_TP] == S_UNKNOWN || ff->st[F_DP] == S_UNKNOWN))
        o->origin[POL_SIZE_EP].unknown = true;
    o->accel = tp * pp * dp;
    if (has(ff, F_DPL)) {
        unsigned dpl = ff->val[F_DPL];
        if (dp % dpl != 0) {
            o->inconsistent = true;
            append(o->why,
                   "data-parallel-size %u is not a multiple of data-parallel-size-local "
                   "%u; ",
                   dp, dpl);
        } else {
            o->pods = dp / dpl;
        }
    }
}

static void map_sglang(struct wl_engine_layout *o, const struct found *ff)
{
    unsigned t = val_or(ff, F_TP, 1), pp = val_or(ff, F_PP, 1), d = val_or(ff, F_DP, 1);
    unsigned ep = 1;
    enum fld ep_from = F_EP;

    if (has(ff, F_EP)) {
        ep = ff->val[F_EP];
    } else if ((has(ff, F_A2A) && strcmp(ff->text[F_A2A], "none") != 0) || has(ff, F_DEEPEP) ||
               has(ff, F_EP_ON)) {
        /* --moe-a2a-backend deepep|mooncake|... sets ep_size = tp_size (server_args.py) */
        ep = t;
        ep_from = has(ff, F_A2A) ? F_A2A : has(ff, F_DEEPEP) ? F_DEEPEP : F_EP_ON;
    }
    set_size(o, ff, POL_SIZE_PP, pp, F_PP);
    set_size(o, ff, POL_SIZE_EP, ep, ep_from);
    if (ep_from != F_EP && ff->st[F_TP] == S_UNKNOWN)
        o->origin[POL_SIZE_EP].unknown = true;
    if (has(ff, F_DPATTN)) {
        o->dp_attention = true;
        /* the instance is tp x pp; dp divides tp: attention runs at tp / dp, dense MLP at
         * --moe-dense-tp-size (default tp); the all-reduce group is the larger of the two */
        unsigned attn, dense, grp;
        if (t % d != 0) {
            o->inconsistent = true;
            append(o->why, "dp-size %u does not divide tp-size %u (DP-attention); ", d, t);
            d = 1;
        }
        attn = t / d;
        dense = val_or(ff, F_DENSE_TP, t);
        grp = attn > dense ? attn : dense;
        if (t % grp != 0) {
            o->inconsistent = true;
            append(o->why, "moe-dense-tp-size %u does not divide tp-size %u; ", dense, t);
            grp = t;
        }
        set_size(o, ff, POL_SIZE_TP, grp,
                 grp == dense && has(ff, F_DENSE_TP) ? F_DENSE_TP
                 : grp == t                          ? F_TP
                                                     : F_NFIELDS);
        set_size(o, ff, POL_SIZE_DP, t / grp, t / grp == 1 ? F_NFIELDS : F_DP);
        if (t / grp == 1)
            o->origin[POL_SIZE_DP].src = POL_SRC_DERIVED;
        o->accel = t * pp;
    } else {
        /* dp copies of a tp x pp model */
        set_size(o, ff, POL_SIZE_TP, t, F_TP);
        set_size(o, ff, POL_SIZE_DP, d, F_DP);
        o->accel = d * t * pp;
    }
}

static void map_lmdeploy(struct wl_engine_layout *o, const struct found *ff)
{
    unsigned tp = val_or(ff, F_TP, 1), ep = val_or(ff, F_EP, 1);
    unsigned world = ep > 1 ? ep : tp;

    set_size(o, ff, POL_SIZE_TP, tp, F_TP);
    set_size(o, ff, POL_SIZE_PP, 1, F_PP);
    set_size(o, ff, POL_SIZE_EP, ep, F_EP);
    if (world % tp != 0) {
        o->inconsistent = true;
        append(o->why, "ep %u is not a multiple of tp %u; ", ep, tp);
        world = tp;
    }
    set_size(o, ff, POL_SIZE_DP, world / tp, has(ff, F_DP) ? F_DP : F_NFIELDS);
    if (has(ff, F_DP) && ff->val[F_DP] != world / tp) {
        o->inconsistent = true;
        append(o->why, "dp %u with tp %u and ep %u does not fill %u ranks; ", ff->val[F_DP], tp, ep,
               world);
    }
    o->accel = world;
}

static void map_megatron(struct wl_engine_layout *o, const struct found *ff, unsigned g)
{
    unsigned tp = val_or(ff, F_TP, 1), pp = val_or(ff, F_PP, 1);
    unsigned per = has(ff, F_NPROC) ? ff->val[F_NPROC] : g;
    unsigned world = per * val_or(ff, F_NNODES, 1);

    set_size(o, ff, POL_SIZE_TP, tp, F_TP);
    set_size(o, ff, POL_SIZE_PP, pp, F_PP);
    set_size(o, ff, POL_SIZE_EP, val_or(ff, F_EP, 1), F_EP);
    if (ff->st[F_NPROC] == S_UNKNOWN || ff->st[F_NNODES] == S_UNKNOWN || world == 0) {
        o->unknown = true;
        set_size(o, ff, POL_SIZE_DP, 1, F_NFIELDS);
        return;
    }
    if (world % (tp * pp) != 0) {
        o->inconsistent = true;
        append(o->why, "world %u is not a multiple of tp %u x pp %u; ", world, tp, pp);
        set_size(o, ff, POL_SIZE_DP, 1, F_NFIELDS);
        o->accel = tp * pp;
        return;
    }
    set_size(o, ff, POL_SIZE_DP, world / (tp * pp), F_NFIELDS);
    o->accel = world;
    if (has(ff, F_NPROC))
        o->per_pod = per;
}

/* TensorRT-LLM (tensorrt_llm/mapping.py, llmapi/llm_args.py): world = tp_size x pp_size; MoE
 * layers run at moe_tp x moe_ep = tp_size (moe_ep from --ep_size or moe_expert_parallel_size,
 * else tp_size / moe_tensor_parallel_size, else 1). enable_attention_dp runs attention and the
 * dense layers data-parallel over the tp_size ranks (TP 1, "DEP" layouts), and MoE at
 * moe_ep = tp_size unless the file says otherwise: topox's tp 1, dp tp_size. */
static void map_trtllm(struct wl_engine_layout *o, const struct found *ff)
{
    unsigned tp = val_or(ff, F_TP, 1), pp = val_or(ff, F_PP, 1);
    unsigned moe_tp = val_or(ff, F_MOE_TP, 0);
    unsigned ep = has(ff, F_EP)        ? ff->val[F_EP]
                  : moe_tp             ? tp / moe_tp
                  : has(ff, F_ATTN_DP) ? tp
                                       : 1;
    enum fld ep_from = has(ff, F_EP)        ? F_EP
                       : moe_tp             ? F_MOE_TP
                       : has(ff, F_ATTN_DP) ? F_ATTN_DP
                                            : F_EP;

    set_size(o, ff, POL_SIZE_PP, pp, F_PP);
    if (has(ff, F_ATTN_DP)) {
        o->dp_attention = true;
        set_size(o, ff, POL_SIZE_TP, 1, F_ATTN_DP);
        set_size(o, ff, POL_SIZE_DP, tp, F_TP);
    } else {
        set_size(o, ff, POL_SIZE_TP, tp, F_TP);
        set_size(o, ff, POL_SIZE_DP, 1, F_DP);
    }
    set_size(o, ff, POL_SIZE_EP, ep ? ep : 1, ep_from);
    if (ff->st[F_TP] == S_UNKNOWN && ep_from != F_EP)
        o->origin[POL_SIZE_EP].unknown = true;
    if (ep == 0 || ep > tp || tp % ep != 0 || (moe_tp && ep * moe_tp != tp)) {
        o->inconsistent = true;
        append(o->why, "moe ep %u x moe tp %u does not make tp_size %u; ", ep,
               moe_tp ? moe_tp : (ep ? tp / ep : 0), tp);
    }
    o->accel = tp * pp;
    if (has(ff, F_GPN)) {
        o->per_pod = ff->val[F_GPN];
        if (o->accel % o->per_pod == 0)
            o->pods = o->accel / o->per_pod;
    }
}

static void map_layout(struct wl_engine_layout *o, enum eng e, const struct found *ff,
                       const struct envset *es, unsigned g)
{
    switch (e) {
    case E_SGLANG:
        map_sglang(o, ff);
        break;
    case E_LMDEPLOY:
        map_lmdeploy(o, ff);
        break;
    case E_MEGATRON:
        map_megatron(o, ff, g);
        break;
    case E_TGI: {
        unsigned n = 0;
        bool found = false;
        enum fld from = F_NSHARD;
        if (has(ff, F_NSHARD)) {
            n = ff->val[F_NSHARD];
        } else {
            /* clap reads NUM_SHARD from the env when the flag is absent */
            for (size_t i = es->n; i-- > 0 && !found;) {
                if (strcmp(es->v[i].name, "NUM_SHARD") == 0) {
                    found = true;
                    if (!count_of(es->v[i].value, &n))
                        o->unknown = true;
                }
            }
        }
        set_size(o, ff, POL_SIZE_TP, n ? n : g, from);
        if (!has(ff, F_NSHARD) && n)
            o->origin[POL_SIZE_TP].src = POL_SRC_ENV;
        set_size(o, ff, POL_SIZE_PP, 1, F_PP);
        set_size(o, ff, POL_SIZE_DP, 1, F_DP);
        set_size(o, ff, POL_SIZE_EP, 1, F_EP);
        o->accel = n ? n : g;
        o->pods = 1;
        o->any = o->any || found;
        break;
    }
    case E_TRTLLM:
    case E_DYNAMO_TRTLLM:
    case E_TRITON:
        map_trtllm(o, ff);
        break;
    case E_NIM:
        /* the NIM picks its backend and, by its model profile, the expert parallelism: the
         * sizes are read, what crosses nodes (dense or MoE traffic) is not */
        map_vllm(o, ff);
        if (!has(ff, F_EP_ON)) {
            o->origin[POL_SIZE_EP].unknown = true;
            o->unknown = true;
            append(o->why, "the NIM's profile sets its expert parallelism; ");
        }
        break;
    default:
        map_vllm(o, ff);
        break;
    }
    if (has(ff, F_NNODES) && e != E_MEGATRON)
        o->pods = ff->val[F_NNODES];
    if (ff->st[F_NNODES] == S_UNKNOWN)
        o->pods_unknown = true;
    if (e == E_MEGATRON && has(ff, F_NNODES))
        o->pods = ff->val[F_NNODES];
}

static bool is_record_field(enum fld f)
{
    return f == F_DTYPE || f == F_QUANT || f == F_MAXLEN || f == F_MAXSEQS;
}

static bool is_size_field(enum fld f)
{
    return f != F_NNODES && f != F_NPROC && f != F_GPN && f != F_DISAGG && f != F_PREFILL &&
           f != F_DECODE && f != F_CONFIG && !is_record_field(f);
}

/* The serving role the flags give: --disaggregation-mode prefill|decode, or Dynamo vLLM's
 * --is-prefill-worker / --is-decode-worker. */
static char role_of(const struct found *ff)
{
    if (has(ff, F_DISAGG) && strstr(ff->text[F_DISAGG], "prefill"))
        return 'p';
    if (has(ff, F_DISAGG) && strstr(ff->text[F_DISAGG], "decode"))
        return 'd';
    if (has(ff, F_PREFILL))
        return 'p';
    return has(ff, F_DECODE) ? 'd' : 0;
}

enum tpx_code wl_engine_read(const struct pol_pod_facts *f, struct wl_engine_layout *out,
                             struct tpx_err *err)
{
    struct envset es;
    struct found ff;
    enum eng e = E_GENERIC;
    enum tpx_code rc;

    memset(out, 0, sizeof(*out));
    for (size_t s = 0; s < POL_NSIZES; s++)
        out->origin[s].argi = -1;
    if (env_build(f, &es, err) != TPX_OK)
        return err->code;
    rc = scan(f, &es, &e, &ff, err);
    if (rc != TPX_OK) {
        env_release(&es);
        return rc;
    }
    out->engine = engines[e].name;
    append(out->read, "%s", e == E_GENERIC ? "flags" : engines[e].name);
    for (size_t k = 0; k < F_NFIELDS; k++) {
        if (ff.st[k] == S_ABSENT || is_record_field((enum fld)k))
            continue;
        if (is_size_field((enum fld)k) || k == F_NNODES)
            out->any = true;
        if (k == F_CONFIG && ff.st[k] == S_UNKNOWN) {
            /* what the file says is not known: the sizes it may hold are not */
            out->any = true;
            out->unknown = true;
            append(out->read, " %s %s(not read)", ff.name[k], ff.text[k]);
            append(out->why, "%s; ", ff.cfg_why);
        } else if (ff.st[k] == S_UNKNOWN) {
            if (is_size_field((enum fld)k))
                out->unknown = true;
            append(out->read, " %s %s(unknown)", ff.name[k], ff.text[k]);
            append(out->why, "%s '%s' is not known at scheduling time; ", ff.name[k], ff.text[k]);
        } else if (field_kind((enum fld)k) == K_BOOL) {
            append(out->read, " %s", ff.name[k]);
        } else if (field_kind((enum fld)k) == K_TEXT) {
            append(out->read, " %s %s", ff.name[k], ff.text[k]);
        } else {
            append(out->read, " %s %u%s", ff.name[k], ff.val[k],
                   ff.cfg[k]   ? "(config)"
                   : ff.env[k] ? "(env)"
                               : "");
        }
    }
    if (out->any || e == E_TGI)
        map_layout(out, e, &ff, &es, f->accel);
    out->role = role_of(&ff);
    env_release(&es);
    return TPX_OK;
}

/* --- what `plan --record` keeps ---------------------------------------------------------------
 */

static void info_number(unsigned long *num, const char *v)
{
    unsigned long x = 0;
    const char *p = v;

    for (; *p >= '0' && *p <= '9' && x < 100000000UL; p++)
        x = x * 10 + (unsigned long)(*p - '0');
    if (p != v && (*p == '\0' || ((*p == 'k' || *p == 'K') && p[1] == '\0')))
        *num = *p ? x * 1024 : x; /* "8192", or "8k" */
}

void wl_engine_info(const struct pol_pod_facts *f, struct wl_engine_info *out)
{
    struct tpx_err err = TPX_ERR_INIT;
    struct envset es;
    struct found ff;
    enum eng e = E_GENERIC;

    memset(out, 0, sizeof(*out));
    /* out of memory, past the tokenizer's caps or a bad size literal: a record without flags */
    if (env_build(f, &es, &err) == TPX_OK) {
        if (scan(f, &es, &e, &ff, &err) == TPX_OK) {
            if (has(&ff, F_DTYPE))
                tpx_str_copy(out->dtype, sizeof(out->dtype), ff.text[F_DTYPE]);
            if (has(&ff, F_QUANT))
                tpx_str_copy(out->quantization, sizeof(out->quantization), ff.text[F_QUANT]);
            if (has(&ff, F_MAXLEN))
                info_number(&out->max_model_len, ff.text[F_MAXLEN]);
            if (has(&ff, F_MAXSEQS))
                info_number(&out->max_num_seqs, ff.text[F_MAXSEQS]);
        }
        env_release(&es);
    }
    for (size_t a = 0; a < f->nannotations; a++) {
        const char *k = f->annotations[a].key;
        unsigned v;

        if (!k || !f->annotations[a].value || !wl_parse_count(f->annotations[a].value, true, &v))
            continue;
        if (strcmp(k, "topox.io/input-len") == 0 && !out->input_len)
            out->input_len = v;
        else if (strcmp(k, "topox.io/output-len") == 0 && !out->output_len)
            out->output_len = v;
    }
}

/* The flags and values with which an engine runs its ranks as Ray actors over the whole Ray
 * cluster (head and workers): vLLM's --distributed-executor-backend ray
 * (vllm/engine/arg_utils.py, `distributed_executor_backend`). */
static const struct {
    const char *flag;
    const char *value;
} ray_executors[] = {
    {"--distributed-executor-backend", "ray"},
};

bool wl_argv_ray_executor(const char *const *argv, size_t n)
{
    struct tpx_cmdline cl;
    struct tpx_err err = TPX_ERR_INIT;
    bool found = false;

    tpx_cmdline_init(&cl);
    (void)tpx_cmdline_split(&cl, argv, n, &err); /* on failure cl is empty: not found */
    for (size_t t = 0; t < cl.ntok && !found; t++) {
        for (size_t r = 0; r < sizeof(ray_executors) / sizeof(ray_executors[0]) && !found; r++) {
            struct tpx_cmdline_value v;
            found = tpx_cmdline_flag(&cl, t, ray_executors[r].flag, &v) && v.text &&
                    strcmp(v.text, ray_executors[r].value) == 0;
        }
    }
    tpx_cmdline_release(&cl);
    return found;
}
