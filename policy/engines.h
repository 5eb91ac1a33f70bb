/* SPDX-License-Identifier: Apache-2.0 */
/* policy/engines.h - private to policy/: the serving and training engines' parallelism flags
 * (one table per engine, docs/workloads.md) read from a pod's argv through common/cmdline.h, with
 * values resolved through the container env by common/envexpand.h, and mapped to topox's layout
 * meanings (tp: dense all-reduce group, dp: attention/data ranks, ep: expert group). */
#ifndef TPX_POLICY_ENGINES_H
#define TPX_POLICY_ENGINES_H

#include <stdbool.h>

#include "common/err.h"
#include "policy/policy.h"

struct pol_engine_layout {
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
    char read[192];    /* "sglang --tp-size 16 --dp-size 16 --enable-dp-attention ..." */
    char why[192];     /* what was unknown or did not add up */
};

/* Whether the pod's labels say for certain that it is one pod of a RoleBasedGroup v1alpha2
 * leaderWorkerPattern instance, whose component-size is the instance's pod count: a
 * role-instance-name, a component-size, and component-name "leader" with component-index 0 or
 * "worker" with component-index from 1 to component-size - 1 (component-id + 1 where there). The
 * controller sets component-index only for that pattern (InitComponentPodLabels); a
 * customComponentsPattern pod's component-size counts its own component's replicas, and a
 * standalone pod's is "1" (RoleInstanceSetReconciler): neither is a group size. In workload.c;
 * engines.c reads it for the RBG_LWP_* variables. */
bool pol_rbg_lwp_pod(const struct pol_pod_facts *f);

/* Read f's argv (and env) into *out. TPX_EINVAL naming the flag for a literal value that is not
 * a positive whole number ("flag '--tp': 'x' is not a positive whole number"); TPX_ENOMEM,
 * TPX_ETOOBIG from the tokenizer. */
enum tpx_code pol_engine_read(const struct pol_pod_facts *f, struct pol_engine_layout *out,
                              struct tpx_err *err);

#endif
