/* SPDX-License-Identifier: Apache-2.0 */
/* simulate/sim.h - `topox simulate`'s pure core: a trace of group arrivals and departures replayed
 * through the very pol_filter, pol_score and pol_commit that serve runs (or through the two
 * reference policies), the counters and fragmentation curve of a replay, and the deterministic
 * trace generator (docs/simulate.md). No I/O, no JSON: simulate/trace.c reads and writes traces. */
#ifndef TPX_SIMULATE_SIM_H
#define TPX_SIMULATE_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "topology/model.h"

#define SIM_NAME_MAX 128

/* One line of a trace. A leave needs only t and group; its sizes are the arrival's. */
struct sim_event {
    double t;    /* seconds from the start of the trace, never decreasing */
    bool arrive; /* false: leave */
    char group[SIM_NAME_MAX];
    unsigned pods, gpus, tp, pp; /* pods per group, accelerators per pod, TP and PP sizes */
    bool block;                  /* the pipeline scope is the block, not the rack (training gangs
                                    larger than a rack: "scope": "block" in a trace) */
    size_t line;                 /* line of the trace file, for messages (0: none) */
};

enum sim_policy {
    SIM_TOPOX = 0,  /* pol_filter + pol_score + pol_commit, as serve */
    SIM_BEST_FIT,   /* the same rules and holds; first member: the rack left with the least free
                           accelerators after the whole group, then the fullest node */
    SIM_BLIND,      /* no rules, no holds: every pod on the first node with room */
    SIM_PACK,       /* topox with the experimental rack rank of policy/pack.c turned on
                           (pol_ledger_set_pack): off in serve and plan, kept to measure it */
    SIM_PACK_TERM,  /* topox with the absolute per-rack packing term of policy/pack.c
                           (pol_ledger_set_pack_term): off in serve and plan, kept to measure it */
    SIM_FLUID,      /* a reference, not a placement: a group is admitted whole whenever the
                           cluster has as many free accelerators as it needs, as if any free ones
                           could be combined (no rules, no topology: no fragmentation at all) */
    SIM_FLUID_RACK, /* the same inside a rack: admitted whole (into the rack with the fewest
                           free that has enough) whenever some rack has as many free as it needs */
    /* What other schedulers do, as the node for a group's first member among those pol_filter
       passes (the same rules and holds; simulate/anchors.c, docs/simulate.md): */
    SIM_KUEUE_BEST_FIT,   /* Kueue TAS BestFit: the tightest rack in pods, the roomiest node */
    SIM_KUEUE_LEAST_FREE, /* Kueue TAS LeastFreeCapacity: the least free rack and node */
    SIM_VOLCANO_BINPACK,  /* Volcano HyperNode binpack: the most utilised rack, then node */
    SIM_SLURM_BLOCK,      /* Slurm topology/block: keep whole racks and domains free, best fit */
};

/* "topox", "best-fit", "blind", "pack", "pack-term", "fluid", "fluid-rack", "kueue-best-fit",
 * "kueue-least-free", "volcano-binpack", "slurm-block"; sim_policy_parse: false for another
 * word. */
const char *sim_policy_name(enum sim_policy p);
bool sim_policy_parse(const char *s, enum sim_policy *out);

/* How a replay treats a group that cannot be placed (`--queue`, docs/simulate.md "The queue").
 * Without the queue it is counted rejected at once (or half-placed). With it, it waits as a Pending
 * group does: retried when capacity is freed, in arrival order, after a backoff that doubles from
 * backoff_initial_s to backoff_max_s per failed attempt (kube-scheduler's podInitialBackoffSeconds
 * 1 and podMaxBackoffSeconds 10: DefaultPodInitialBackoffDuration and DefaultPodMaxBackoffDuration
 * of pkg/scheduler/internal/queue/scheduling_queue.go). A group is placed whole or not at all (an
 * attempt that places some pods and not all takes them back). */
struct sim_opts {
    bool queue;
    bool backfill;            /* later groups may be placed while an earlier one waits (kube-
                                 scheduler's and Kueue's BestEffortFIFO); else the head waits first
                                 and blocks the rest (Kueue's StrictFIFO) */
    double max_wait_s;        /* give up after waiting this long (0: never), counted in gave_up */
    double backoff_initial_s; /* 1 */
    double backoff_max_s;     /* 10 */
};
#define SIM_OPTS_INIT                                                                              \
    {                                                                                              \
        false, false, 0, 1, 10                                                                     \
    }

/* What happened to the groups of a replay. Each arrival is counted in exactly one of whole,
 * cross_rack, tp_split, half and rejected. */
struct sim_counts {
    size_t arrived;
    size_t whole;      /* every pod placed, in one rack, each TP group in one domain */
    size_t cross_rack; /* every pod placed, but the pipeline spans racks */
    size_t tp_split;   /* every pod placed in one rack, but a TP group spans domains */
    size_t half;       /* some pods placed, not all: they hold accelerators they cannot use */
    size_t rejected;   /* no pod placed */
    size_t rejected_with_room; /* of the rejected: the cluster had as many free accelerators as
                                  the group needs, not where the rules allow them */
    size_t whole_gpus;         /* accelerators of the whole groups */
    double gpu_hours_used;     /* held by placed pods, integrated over the trace */
    double gpu_hours_stranded; /* held by half-placed pods, plus free accelerators in partly used
                                  interconnect domains, integrated over the trace */
    /* With the queue (all measured up to the horizon, the last arrival of the trace): */
    double horizon_s;
    double gpu_hours_delivered;      /* held by placed groups, integrated up to the horizon */
    double gpu_hours_idle_waiting;   /* free while some group waited, up to the horizon */
    double saturated_hours;          /* time some group waited, up to the horizon */
    double allocation_at_saturation; /* held / allocatable, averaged over saturated_hours (FGD's
                                        allocation rate once demand passes capacity); 0 if none */
    size_t gave_up;                  /* waited max_wait_s and gave up */
    size_t never_placed;             /* still waiting when nothing was left to free capacity */
};

/* The groups of one shape (pods x accelerators, TP, PP) in a replay: where the rejections with
 * room come from (docs/simulate.md, "Where the rejections with room come from"). */
struct sim_shape {
    unsigned pods, gpus, tp, pp;
    bool block;
    char name[48]; /* "tp8xpp2-2x8": TP x PP (x DP when > 1), then pods x accelerators */
    size_t arrived, whole, rejected;
    size_t with_room;      /* rejected, the cluster had as many free accelerators */
    size_t with_rack_room; /* of those, some rack alone had as many free: the rules wanted them
                              in other domains or nodes of it (a whole free domain for TP 16, free
                              whole nodes for 8-GPU pods); the rest had them only across racks */
    /* With the queue: the wait of each arrival until it was placed (gave-up and never-placed
       groups count with the time they waited), nearest rank; and the share of the time up to the
       horizon that a group of this shape could have been placed at once (sampled after every
       event: free accelerators per node, whole TP units per interconnect domain, enough of them in
       one rack or block; the fluid references: free accelerators in the cluster or a rack). */
    double wait_p50_s, wait_p95_s, wait_max_s, wait_mean_s;
    size_t gave_up;
    double placeable_share;
    double *waits; /* every arrival's wait, ascending (nwaits of them; owned by the result) */
    size_t nwaits;
};

/* The cluster after an event (one sample per event time). */
struct sim_sample {
    double t;
    unsigned used;       /* accelerators held by placed pods */
    unsigned free;       /* allocatable and not held */
    unsigned free_whole; /* free accelerators in completely free interconnect domains */
    unsigned stranded;   /* free in partly used domains, plus held by half-placed pods */
    double frag;         /* 1 - free_whole / free (0 when nothing is free) */
};

/* The result of a replay. Owned by the caller: sim_result_release(). */
struct sim_result {
    enum sim_policy policy;
    struct sim_counts counts;
    struct sim_sample *samples;
    size_t nsamples;
    struct sim_shape *shapes; /* in order of first arrival */
    size_t nshapes;
    unsigned accel_total; /* allocatable accelerators of the cluster */
};

/* Replay ev[0, n) on an empty ledger over c (sealed, borrowed) with policy p. A group is placed
 * pod by pod, leader first, each pod the best-scored node that passes the filter (ties: the lowest
 * node index), committed at time t; a pod that fits nowhere leaves its group half-placed (its
 * placed pods stay until the group leaves). The fluid references keep only counts of free
 * accelerators (per rack): their samples have nothing stranded and no fragmentation. A leave
 * releases the group's pods. Events must be in time order with arrivals and leaves that match
 * (simulate/trace.c checks a file); a leave of a group that is not live is ignored. TPX_ENOMEM,
 * TPX_EINVAL for events out of order. */
enum tpx_code sim_run(const struct topo_cluster *c, const struct sim_event *ev, size_t n,
                      enum sim_policy p, struct sim_result *out, struct tpx_err *err);
/* The same with options (NULL: SIM_OPTS_INIT). With o->queue, a leave in the trace gives only the
 * group's lifetime (leave - arrive): it leaves that long after it was placed. */
enum tpx_code sim_run_opts(const struct topo_cluster *c, const struct sim_event *ev, size_t n,
                           enum sim_policy p, const struct sim_opts *o, struct sim_result *out,
                           struct tpx_err *err);
void sim_result_release(struct sim_result *r);

/* The cluster of `--cluster SPEC` (simulate/fleet.c): a synthetic spec, several joined with '+'
 * (one fleet; each part's racks, blocks and domains apart), or a named shape: "hgx", "gb200",
 * "mixed", "openb" (docs/simulate.md). sim_cluster_spec: the spec a name stands for (else name).
 * NULL with *err for a bad spec. */
struct topo_cluster *sim_cluster_new(const char *spec, struct tpx_err *err);
const char *sim_cluster_spec(const char *name);

/* ------------------------------------------------------------------------------------------------
 * The generator (simulate/simgen.c).
 */

/* What `--generate` reads: "seed=N,mix=M,fleet=F,groups=N,gpus=N,load=X,life=H,diurnal=0|1". */
enum sim_mix {
    SIM_MIX_CLASSIC = 0, /* the LWS shapes of issue 14 (TP 4/8/16, PP 1-4): the default */
    SIM_MIX_SERVING,     /* "llm-serving": TP 1-8 in a node, TP8 x PP2, DP16 + EP over 2 nodes,
                            prefill/decode pairs, NVL72 ComputeDomains of 4-18 nodes */
    SIM_MIX_TRAINING,    /* "training": gangs of 8-64 nodes, block scope */
    SIM_MIX_MIXED,       /* "mixed": serving with training gangs next to it */
};
enum sim_fleet {
    SIM_FLEET_HGX = 0, /* shapes for 8-GPU NVSwitch nodes */
    SIM_FLEET_GB200,   /* shapes for 4-GPU nodes in 18-node NVLink racks */
    SIM_FLEET_MIXED,   /* both, half each */
};
struct sim_gen {
    uint64_t seed; /* 1 */
    size_t groups; /* arrivals (400) */
    unsigned gpus; /* accelerators of the cluster the load is meant for (512; with a mix, the
                      named cluster shape of the fleet: hgx 1024, gb200 576, mixed 928) */
    double load;   /* offered load: arrival rate x mean lifetime x mean GPUs / gpus (1.0) */
    double life_h; /* mean lifetime in hours (6; with a mix: 8, training 1.5 times that) */
    enum sim_mix mix;
    enum sim_fleet fleet;
    bool diurnal; /* arrivals follow a day: rate x (1 + 0.5 sin(2 pi t / 24 h)) (llm-serving and
                     mixed: on) */
};

/* Defaults, then the comma-separated key=value pairs of spec (NULL or "": defaults only).
 * TPX_EINVAL naming the key for an unknown key or a bad value. */
enum tpx_code sim_gen_parse(const char *spec, struct sim_gen *g, struct tpx_err *err);

/* The trace of g: groups arrivals and their leaves, in time order (a leave before an arrival at
 * the same time). The same g gives the same trace, byte for byte, on every machine. *ev is owned by
 * the caller (free()). TPX_ENOMEM. */
enum tpx_code sim_gen_run(const struct sim_gen *g, struct sim_event **ev, size_t *n,
                          struct tpx_err *err);

#endif
