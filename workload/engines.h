/* SPDX-License-Identifier: Apache-2.0 */
/* workload/engines.h - the serving and training engines' parallelism flags (one table per engine,
 * docs/workloads.md) read from a pod's argv through common/cmdline.h, with values resolved through
 * the container env by common/envexpand.h, and mapped to topox's layout meanings (tp: dense
 * all-reduce group, dp: attention/data ranks, ep: expert group); and what `plan --record` keeps of
 * the same flags. */
#ifndef TPX_WORKLOAD_ENGINES_H
#define TPX_WORKLOAD_ENGINES_H

#include <stdbool.h>

#include "common/err.h"
#include "workload/workload.h"

struct wl_engine_layout {
    const char *engine;      /* static: "vllm", ..., "" for the generic table (no engine named) */
    bool any;                /* some parallelism flag of the engine was given (known or not) */
    bool unknown;            /* some such flag's value could not be resolved */
    bool inconsistent;       /* the flags contradict each other (why says how) */
    unsigned tp, pp, dp, ep; /* in topox's meanings; 0: the flags do not say */
    struct pol_size_origin origin[POL_NSIZES];
    unsigned accel;    /* accelerators of the instance the flags describe; 0: unknown */
    unsigned pods;     /* pods per instance the flags imply (--nnodes, dp / dp-local, world /
                          gpu_per_node); 0: they do not say */
    bool pods_unknown; /* a flag would say, but its value is unknown */
    unsigned per_pod;  /* accelerators per pod the flags say (--gpu_per_node); 0: not said */
    char role;         /* serving role: 'p' prefill, 'd' decode (--disaggregation-mode ...); 0 */
    bool dp_attention; /* attention runs data-parallel (SGLang --enable-dp-attention,
                          TensorRT-LLM enable_attention_dp) */
    char read[192];    /* "sglang --tp-size 16 --dp-size 16 --enable-dp-attention ..." */
    char why[192];     /* what was unknown or did not add up */
};

/* Whether the pod's labels say for certain that it is one pod of a RoleBasedGroup v1alpha2
 * leaderWorkerPattern instance, whose component-size is the instance's pod count: a
 * role-instance-name, a component-size, and component-name "leader" with component-index 0 or
 * "worker" with component-index from 1 to component-size - 1 (component-id + 1 where there). The
 * controller sets component-index only for that pattern (InitComponentPodLabels); a
 * customComponentsPattern pod's component-size counts its own component's replicas, and a
 * standalone pod's is "1" (RoleInstanceSetReconciler): neither is a group size. The engines read
 * it for the RBG_LWP_* variables, policy/ for the pod's group. */
bool wl_rbg_lwp_pod(const struct pol_pod_facts *f);

/* Read f's argv (and env) into *out. TPX_EINVAL naming the flag for a literal value that is not
 * a positive whole number ("flag '--tp': 'x' is not a positive whole number"); TPX_ENOMEM,
 * TPX_ETOOBIG from the tokenizer. */
enum tpx_code wl_engine_read(const struct pol_pod_facts *f, struct wl_engine_layout *out,
                             struct tpx_err *err);

/* A whole number written in an annotation or label: positive (or >= 0 when zero_ok), at most
 * 1 000 000, blanks around it allowed. */
bool wl_parse_count(const char *s, bool zero_ok, unsigned *out);

/* What the engine flags and annotations of a pod say, for `plan --record`. Numbers are 0 and
 * strings "" when not given. */
struct wl_engine_info {
    char dtype[32];              /* --dtype */
    char quantization[32];       /* vLLM --quantization/-q, SGLang --quantization */
    unsigned long max_model_len; /* vLLM --max-model-len, SGLang --context-length, trtllm-serve
                                    --max_seq_len ("8192" or "8k") */
    unsigned long max_num_seqs;  /* vLLM --max-num-seqs, SGLang --max-running-requests,
                                    trtllm-serve --max_batch_size */
    unsigned long input_len;     /* topox.io/input-len */
    unsigned long output_len;    /* topox.io/output-len */
};

/* Read f's argv (the engine's own table, as wl_engine_read() does) and annotations into *out.
 * Cannot fail: what cannot be read is left empty. */
void wl_engine_info(const struct pol_pod_facts *f, struct wl_engine_info *out);

/* Does argv (a container's command and args, `sh -c` scripts split as the engine reader splits
 * them) start an engine that spreads its TP x PP ranks over a whole Ray cluster? One row per
 * engine flag in ray_executors[] (workload/engines.c). False when argv cannot be read. */
bool wl_argv_ray_executor(const char *const *argv, size_t n);

#endif
