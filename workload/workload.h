/* SPDX-License-Identifier: Apache-2.0 */
/* workload/workload.h - reading a workload: what one pod says about the model instance it is part
 * of (its facts), the layout an engine reads from them (tp/pp/dp/ep, where each came from, whether
 * it is certain) and the classes of traffic the layout makes. Pure C on plain structs, below
 * policy/ and above common/: no placement, no JSON, no I/O, no logging (docs/ARCHITECTURE.md).
 *
 * The types keep the pol_ names they had in policy/, as every folder above names them; what this
 * library adds is wl_ (docs/ARCHITECTURE.md, "Names"). */
#ifndef TPX_WORKLOAD_WORKLOAD_H
#define TPX_WORKLOAD_WORKLOAD_H

#include <stdbool.h>
#include <stddef.h>

#include "common/envexpand.h"
#include "common/kv.h"

/* An engine config file a container can read, as objects/ found it: a key of a ConfigMap of the
 * same manifest mounted into the container (docs/workloads.md, "Engine configuration"). */
struct pol_config_file {
    const char *path;         /* where the container sees it: mountPath/key, or a subPath's */
    const struct topo_kv *kv; /* its top-level keys with scalar values ("true", "8", "fp8") */
    size_t nkv;
    bool mapping; /* the text is a YAML mapping (false: found, but not readable as one) */
};

/* What an adapter (objects/podfacts.c for serve, objects/manifest.c for plan) extracted from one
 * pod. Everything is borrowed for the call. */
struct pol_pod_facts {
    const char *name; /* may be NULL (a template) */
    const char *ns;
    const char *uid;
    const struct topo_kv *labels;
    size_t nlabels;
    const struct topo_kv *annotations;
    size_t nannotations;
    const char *const *argv; /* every container's command then args, in order; a `sh -c "..."`
                                script stays one string and is searched for flags too */
    size_t nargv;
    const struct tpx_env_var *env; /* every container's env, in order (value NULL: valueFrom);
                                      the kubelet's and the shell's expansions read it */
    size_t nenv;
    unsigned accel;       /* accelerators the pod requests (max of the containers' sum and any
                             init container's) */
    const char *resource; /* which accelerator resource it requests, or NULL */
    const struct pol_config_file *configs; /* the files ConfigMaps of the manifest give it
                                              (none in serve, which reads no ConfigMaps) */
    size_t nconfigs;
    /* The scheduling.k8s.io PodGroup the pod names (spec.schedulingGroup.podGroupName), or NULL;
     * what the PodGroup object says, filled by whoever knows it (serve's watch, plan's
     * manifests): its gang minCount (0: not known, so the PodGroup makes no group) and the
     * finest topox level its schedulingConstraints.topology keys name (-1: none topox reads). */
    const char *pod_group;
    unsigned pod_group_min;
    int pod_group_level; /* enum pol_scope, or -1 */
};

/* Where one size of a layout came from. */
enum pol_src {
    POL_SRC_DEFAULT = 0, /* nothing said it: the pod's accelerators, or 1 */
    POL_SRC_ANNOTATION,  /* a topox.io annotation */
    POL_SRC_FLAG,        /* an engine flag with a literal value */
    POL_SRC_ENV,         /* an engine flag whose value came through the env ($VAR, $((...))) */
    POL_SRC_DERIVED,     /* computed from the others (accelerators / (tp x pp), ...) */
    POL_SRC_CONFIG,      /* a key of an engine config file a flag names (--extra-engine-args) */
    POL_SRC_OBJECT,      /* an object the pod names says it (a ComputeDomain's clique) */
};

/* The sizes of a layout, for pol_layout.origin[]. */
enum pol_size { POL_SIZE_TP = 0, POL_SIZE_PP, POL_SIZE_DP, POL_SIZE_EP, POL_NSIZES };

struct pol_size_origin {
    enum pol_src src;
    const char *what; /* static: the flag or annotation ("--tp-size"), NULL for defaults */
    int argi;         /* the argv element holding the flag (for FILE:LINE), -1: none */
    bool unknown;     /* the flag is there, but its value could not be resolved */
    const char *via;  /* static: what carried it, NULL when the pod's own argv did: the config
                         file's flag ("--extra-engine-args") or an operator's env var
                         ("VLLM_ADDITIONAL_ARGS") */
};

/*
 * The layout of one model instance (a group), docs/workloads.md: accelerators = tp x pp x dp,
 * with tp the dense all-reduce group, dp the attention/data ranks, ep the MoE expert-parallel
 * group (1 when off; it adds no accelerators). Each engine's flags are mapped to these meanings
 * (SGLang's --tp-size with DP-attention is tp x dp here). Certain: explicit topox.io annotations,
 * or engine flags that were all resolved and agree with the pod's accelerators; only a certain
 * layout may be rejected for a layout reason (the certainty rule).
 */
struct pol_layout {
    unsigned tp, pp, dp; /* as the annotations and flags say (0: unknown); the workload's own
                            tp/pp/dp are what placement uses, which differ only when uncertain */
    unsigned accel;      /* accelerators of the instance the flags describe; 0: unknown */
    unsigned ep;         /* expert-parallel size; 1: off */
    const char *engine;  /* static: "vllm", "sglang", "trtllm", "dynamo-trtllm", "triton-trtllm",
                            "lmdeploy", "tgi",  "megatron", or "" when no engine was recognised */
    struct pol_size_origin origin[POL_NSIZES];
    bool dp_attention; /* attention runs data-parallel (SGLang --enable-dp-attention, TensorRT-LLM
                          enable_attention_dp): its all-reduce is not every layer's */
    bool certain;
    bool placement_ann; /* topox.io/placement was given (preferred is the user's choice) */
    char read[192];     /* what was read, e.g. "sglang --tp-size 16 --dp-size 16 ..." */
    char why[192];      /* uncertain: what was unknown or did not add up; "" when certain */
};

/* One class of traffic a layout makes between its ranks (docs/workloads.md). */
enum pol_traffic_kind { POL_TRAFFIC_TP = 0, POL_TRAFFIC_EP, POL_TRAFFIC_PP };

/* "annotation", "flag", "env", "config", "object", "derived" or "default". Static text. */
const char *wl_src_name(enum pol_src src);

/* The traffic class that decides whether a TP group may cross nodes (docs/workloads.md): a dense
 * layout (no expert parallelism, no DP-attention) all-reduces over its whole TP group on every
 * layer; a MoE layout with EP or DP-attention all-reduces over it only in its few dense layers
 * (DeepSeek's first three) or not at all, and trades tokens all-to-all over the EP group. */
bool wl_layout_dense(const struct pol_layout *l);

/* "EP all-to-all", "TP all-reduce", "PP point-to-point". Static text. */
const char *wl_traffic_kind_name(enum pol_traffic_kind k);

#endif
