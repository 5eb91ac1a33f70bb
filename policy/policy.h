/* SPDX-License-Identifier: Apache-2.0 */
/* policy/policy.h - the placement core shared by `topox serve` (one pod at a time) and `topox plan`
 * (a whole job): workload inference and validation, filter, score, commit, and the whole-job
 * planner. Pure C on plain structs: never includes HTTP, JSON, YAML, curl, hwloc or log headers.
 * Reentrant: no globals. A sealed topo_cluster may be shared; a pol_ledger is not internally locked
 * (the caller serialises access to one ledger, e.g. with a mutex in extender/state.c). */
#ifndef TPX_POLICY_POLICY_H
#define TPX_POLICY_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "common/envexpand.h"
#include "common/err.h"
#include "topology/labels.h"
#include "topology/model.h"
#include "workload/workload.h"

/* ------------------------------------------------------------------------------------------------
 * Workload: what one pod (or pod template) asks for.
 */

enum pol_scope { POL_SCOPE_RACK = 0, POL_SCOPE_BLOCK, POL_SCOPE_ZONE };

#define POL_KEY_MAX 256

struct pol_workload {
    bool has_intent;           /* false: no topology intent; the pod passes every node untouched */
    unsigned tp;               /* tensor-parallel size */
    unsigned pp;               /* pipeline-parallel size */
    unsigned dp;               /* data-parallel size inside the group (usually 1) */
    unsigned accel_per_pod;    /* g */
    unsigned group_size;       /* pods per group (n); 0: unknown */
    int pod_index;             /* this pod's index in its group; -1: unknown (any free slot) */
    char group[POL_KEY_MAX];   /* group key; "" when the pod is its own group */
    char display[POL_KEY_MAX]; /* for messages: "llm/vllm group 0" or the pod name */
    enum pol_scope scope;      /* where the whole group must fit: rack (default), block, zone */
    bool preferred;            /* topox.io/placement: preferred: never reject, only score */
    unsigned num_ubatches;     /* for estimates; 0: unknown */
    unsigned model_layers;     /* for estimates; 0: unknown */
    bool tp_explicit;          /* tp came from an annotation or an engine flag, not a default */
    const char *tp_source; /* static text: "annotation", "vllm flag", "sglang flag", "default" */
    bool pp_explicit;      /* pp came from an annotation or an engine flag */
    bool size_explicit;    /* group_size came from an annotation, LWS or --nnodes */
    bool dp_world;     /* nothing written says how the accelerators are split (no engine flag, no
                          topox.io/tensor-parallel-size), but a written group holds the pod (a gang's
                          minCount, an LWS size, a group-size annotation): its ranks are one
                          data-parallel world (tp 1), uncertain, yet held in its scope like any
                          group, as no TP rule can refuse it (the certainty rule) */
    char resource[64]; /* accelerator resource ("nvidia.com/gpu"), "" when unknown */
    struct pol_layout layout;
    /* KV transfer: the deployment whose prefill and decode groups trade KV ("ns/kind:name", ""
     * when none is known) and this pod's role in it ('p' prefill, 'd' decode, 0: neither or
     * both). Read from the operators' labels (DisaggregatedSet, Dynamo, RoleBasedGroup, KServe,
     * Grove), the role also from --disaggregation-mode; score only (docs/workloads.md). */
    char kv_group[POL_KEY_MAX];
    char kv_role;
    bool cross_node_tp; /* topox.io/cross-node-tp: allow: the owner lets a dense TP group that no
                           interconnect domain holds cross nodes (placed as a MoE one is) */
    unsigned tp_spans;  /* set by pol_workload_fit_tp(): the layout's TP group, placed as tp
                           groups inside domains of the rack because no domain holds it; 0 */
    /* The group is a PodGroup gang (pol_pod_facts.pod_group with its minCount): kube-scheduler
     * 1.37 filters every member before it binds any, so serve holds the group's room at a
     * member's filter (pol_gang_hold). gang_level: the PodGroup's topology level
     * (pol_pod_facts.pod_group_level), which narrows scope when finer; -1: none. */
    bool gang;
    int gang_level;
    /* Another scheduler's topology intent on the pod, read as topox intent and never
     * contradicted (docs/workloads.md, "Other schedulers' topology"): Kueue's
     * podset-required-topology, KAI's topology-required-placement. When sched_scoped, the level
     * its label key names is the group's scope whatever topox's default (pol_workload_set_scope);
     * a key at a node or an NVLink domain sets none (topox's rack holds it). */
    bool sched_scoped;
    enum pol_scope sched_scope;
    const char *sched_prefers; /* static: the annotation by which another scheduler's intent made
                                  the group preferred; NULL: none */
    bool by_group_total;       /* uncertain only because tp x pp x dp is not the group's pods x the
                                  pod's accelerators (pol_workload_skip_members looks again) */
};

/* What serve does with an uncertain layout (setting `uncertain`). */
enum pol_uncertain {
    POL_UNCERTAIN_PREFER = 0, /* placed as preferred: scored, never rejected (the default) */
    POL_UNCERTAIN_REJECT,     /* judged as if it were certain */
    POL_UNCERTAIN_IGNORE,     /* no topology intent: the pod passes every node untouched */
};

/* Fill *wl from the pod's facts: topox.io annotations, then the engine's flags (vLLM, SGLang,
 * TensorRT-LLM, LMDeploy, TGI, Megatron/torchrun: every spelling of docs/workloads.md, inside
 * `sh -c` strings too, values through the container env), then defaults. An uncertain layout
 * (wl->layout.certain false) is made preferred unless topox.io/placement says otherwise; see
 * pol_workload_uncertain(). TPX_EINVAL with a message naming the annotation or flag for a
 * malformed literal value (a value that cannot be resolved is unknown, not an error). */
enum tpx_code pol_workload_infer(const struct pol_pod_facts *f, struct pol_workload *wl,
                                 struct tpx_err *err);

/* Members that ask for no accelerator (an LWS leader on CPU, an MPI launcher, a Ray head, a
 * router) are members of the group for the gang, but take no accelerator slot and no rank: wl, an
 * accelerator member, belongs to a group of which `total` members, `below` of them at a lower
 * pod index, ask for none. Its group size and index then count the accelerator members only, and
 * an uncertain layout's data-parallel ranks with them. Nothing changes for a pod without a group
 * or accelerators, or when the members without accelerators would be the whole group. */
void pol_workload_skip_members(struct pol_workload *wl, unsigned total, unsigned below);

/* Members without accelerators counted in one group at most (a leader, a launcher, a router: a
 * few); serve's and plan's counts follow the same rule: only in a group whose size was written. */
#define POL_CPU_MEMBERS_MAX 4

/* Set wl's scope (serve's default scope, after pol_workload_infer): a PodGroup's topology key is a
 * required level beside topox's own, so a gang's wl->gang_level still narrows it when finer. */
void pol_workload_set_scope(struct pol_workload *wl, enum pol_scope scope);

/* Apply the `uncertain` setting to an inferred workload whose layout is uncertain (a certain one
 * is left alone). Cannot fail. */
void pol_workload_uncertain(struct pol_workload *wl, enum pol_uncertain mode);

/* "GPUs" or "NPUs" (Ascend and other NPU resources), for messages. Static text; never NULL. */
const char *pol_accel_word(const char *resource);

/* Does wl's TP or EP group span pods, and so nodes, with the owner's leave or because its traffic
 * allows it (a certain MoE layout with EP or DP-attention, or topox.io/cross-node-tp: allow)? The
 * case plan warns about and serve puts in an Event: placed in the tightest scope (one multi-node
 * NVLink domain where one holds it, else one rack, on RDMA nodes). */
bool pol_workload_spans_nodes(const struct pol_workload *wl);

/* When wl's TP group is larger than the largest interconnect domain (largest accelerators) and
 * its traffic lets it cross nodes (pol_workload_spans_nodes' reasons), place it as tp groups of
 * the largest size that divides it and fits a domain, dp grown to keep the group's accelerators,
 * and tp_spans set to the layout's tp. Any other workload is left alone. */
void pol_workload_fit_tp(struct pol_workload *wl, unsigned largest);

/* Check *wl against the rules of DESIGN.md and the cluster's largest interconnect domain. The
 * message names the cause and the fix, e.g. "tensor-parallel-size 16 needs one interconnect domain
 * of 16 GPUs; the largest here has 8 (nvswitch, one node). All-reduce would cross nodes. Try
 * tensor-parallel-size 8 with pipeline-parallel-size 2." TPX_EINVAL when invalid. */
enum tpx_code pol_workload_validate(const struct pol_workload *wl, const struct topo_cluster *c,
                                    struct tpx_err *err);
/* The same with the cluster's largest node (allocatable accelerators) and their total given, as
 * a ledger keeps them, so a filter does not count every node for them. */
enum tpx_code pol_workload_validate_sized(const struct pol_workload *wl,
                                          const struct topo_cluster *c, unsigned biggest,
                                          unsigned long long all, struct tpx_err *err);

/* ------------------------------------------------------------------------------------------------
 * Ledger: capacity in use, group placements and reservations over one sealed cluster.
 */

struct pol_ledger;

/* New ledger over c (borrowed: c must outlive the ledger). Capacity starts at each node's
 * accel_used. NULL with *err on failure. Free with pol_ledger_free(). */
struct pol_ledger *pol_ledger_new(const struct topo_cluster *c, struct tpx_err *err);
void pol_ledger_free(struct pol_ledger *l); /* accepts NULL */

/* The cluster the ledger is over. Borrowed. */
const struct topo_cluster *pol_ledger_cluster(const struct pol_ledger *l);

/* A new ledger over c carrying l's groups, placements and reservations over by node name (for a
 * node update or a new snapshot). Members on nodes that no longer exist are dropped. */
struct pol_ledger *pol_ledger_rebase(const struct pol_ledger *l, const struct topo_cluster *c,
                                     struct tpx_err *err);

/* Account accel accelerators on node as taken by a pod we did not place (or undo with a negative
 * value; a removal never takes more than the node's use, an addition saturates). Group holds the
 * pod overbooks move elsewhere in their scope (or lapse). TPX_EINVAL for a bad node index. */
enum tpx_code pol_ledger_use(struct pol_ledger *l, size_t node, int64_t accel, struct tpx_err *err);

/* Drop reservations whose TTL passed at `now`, and groups with no placed member left. Returns how
 * many groups released a reservation. */
size_t pol_ledger_expire(struct pol_ledger *l, time_t now);

/* A pod went away (deleted, failed, binding failed): release its capacity and group slot. false
 * when the uid is unknown. */
bool pol_ledger_forget_pod(struct pol_ledger *l, const char *uid);

/* Free accelerators on node now (allocatable - used - reserved for any group). */
unsigned pol_ledger_node_free(const struct pol_ledger *l, size_t node);
/* Does node offer accelerator resource `resource` ("nvidia.com/gpu", "amd.com/gpu")? NULL or ""
 * (a pod that asks for none): every node does. kube-scheduler's NodeResourcesFit: a pod goes only
 * where its own resource is, whatever the count. */
bool pol_ledger_node_serves(const struct pol_ledger *l, size_t node, const char *resource);

/* Free accelerators of the schedulable nodes now (*free_all), and of those the ones in completely
 * free interconnect domains (*free_whole, at most *free_all): what `topox simulate` samples for
 * its fragmentation after every event. O(nodes + domains). */
void pol_ledger_free_whole(const struct pol_ledger *l, unsigned *free_all, unsigned *free_whole);

/* Budgets for the holds a group's first member makes for the rest (0: no limit): accelerators
 * held for the groups of one namespace (the group key up to its first '/'), and for all groups.
 * A hold past either is not made, and counted (pol_ledger_budget_refusals). Rebase keeps them. */
void pol_ledger_set_budgets(struct pol_ledger *l, unsigned long per_namespace, unsigned long total);
unsigned long pol_ledger_budget_refusals(const struct pol_ledger *l);

/* Experimental, off unless set (only `topox simulate --policy pack` sets it): a group's first
 * member ranks the racks that hold the whole group against each other by what the placement costs
 * the live groups' shapes (policy/pack.c, docs/simulate.md). The rank reads other racks' state,
 * so while it is on pol_plan answers first members by the pass over every node, not the index.
 * Rebase keeps it. */
void pol_ledger_set_pack(struct pol_ledger *l, bool on);

/* Experimental, off unless set (only `topox simulate --policy pack-term` sets it; it replaces the
 * rank of pol_ledger_set_pack): a group's first member scores each rack that holds the whole group
 * on an absolute scale from that rack's own state after the placement: its free accelerators left
 * plus what the placement costs the shapes of the live groups (policy/pack.c, docs/simulate.md).
 * No rack is compared with another, so a placement index could keep it per rack, keyed also on
 * the set of live shapes; pol_plan still answers first members by the pass over every node while
 * it is on. Rebase keeps it. */
void pol_ledger_set_pack_term(struct pol_ledger *l, bool on);

/* Read-only summaries for /debug/state, metrics and `plan`'s picture. */
struct pol_rack_summary {
    size_t rack;             /* rack index in the cluster */
    unsigned accel_total;    /* allocatable accelerators in the rack */
    unsigned accel_free;     /* not used and not reserved */
    unsigned accel_reserved; /* held for groups */
    unsigned largest_tp_now; /* largest TP group placeable now in one domain of this rack */
    unsigned free_domains;   /* completely free interconnect domains */
};
struct pol_group_summary {
    const char *group; /* borrowed until the ledger changes */
    const char *display;
    size_t rack; /* TOPO_NONE until the first member is placed */
    unsigned members_placed;
    unsigned group_size;
    unsigned accel_reserved;
    time_t expires; /* when the reservation lapses; 0: none */
    unsigned slots; /* member slots made so far: grown as members come and holds are made, so a
                       declared group_size allocates nothing by itself */
};
/* Fill caller arrays (sized by topo_cluster_rack_count / pol_ledger_group_count). */
void pol_ledger_racks(const struct pol_ledger *l, struct pol_rack_summary *out);
size_t pol_ledger_group_count(const struct pol_ledger *l);
void pol_ledger_groups(const struct pol_ledger *l, struct pol_group_summary *out);

/* One member slot a group holds room in for a pod not bound yet: the slot's number (the pod
 * index a member with an index must have to take it) and its node. */
struct pol_hold {
    unsigned slot;
    size_t node;
};
/* The held, unfilled slots of group (by key) in slot order, at most max into out; returns how
 * many there are (0: no such group, or nothing held). Read-only. */
size_t pol_group_holds(const struct pol_ledger *l, const char *group, struct pol_hold *out,
                       size_t max);
/* Is group's room held with no member bound yet (pol_gang_hold)? Read-only. */
bool pol_group_held_early(const struct pol_ledger *l, const char *group);
/* Mark group's early hold as made while it waited in the queue (true), before any member's
 * scheduling cycle reached topox, or as reached by one (false). A waiting hold was made without
 * kube-scheduler, which may meanwhile have passed its room to another pod: it gives way to any
 * bind judged not to fit without it (pol_commit drops the waiting holds in the node's scopes
 * and judges again). A group with a member bound is never waiting. */
void pol_group_set_waiting(struct pol_ledger *l, const char *group, bool waiting);
/* Drop the holds of waiting groups but group `own`'s (NULL or "": none's), in any scope node
 * lies in: a bind kube-scheduler decided never loses to room held without it (pol_commit does
 * this for a pod with intent; serve for a pod without). Returns how many went. */
size_t pol_yield_waiting(struct pol_ledger *l, const char *own, size_t node);
/* node's free accelerators (pol_ledger_node_free), after the waiting holds of its scopes are let
 * go (pol_yield_waiting) when fewer than want are free: for binding a pod without intent. */
unsigned pol_ledger_make_room(struct pol_ledger *l, size_t node, unsigned want);

/* ------------------------------------------------------------------------------------------------
 * One pod: filter, score, commit (what `serve` does per scheduler call).
 */

enum pol_verdict {
    POL_FIT = 0,      /* the pod may go here */
    POL_FAIL,         /* not now, but evicting lower-priority pods could make room (FailedNodes) */
    POL_UNRESOLVABLE, /* never for this pod: wrong rack/domain, too small (FailedAndUnresolvable) */
};

/* Owned by the caller after pol_filter(); free with pol_filter_result_release(). Reasons are
 * deduplicated: reason[i] indexes reasons[] for candidate i (unused when verdict[i] is POL_FIT), so
 * thousands of nodes share a handful of strings. */
struct pol_filter_result {
    size_t n;
    enum pol_verdict *verdict;
    unsigned *reason;
    char **reasons;
    size_t nreasons;
    size_t nfit;
};

/*
 * Judge each candidate node (indices into the ledger's cluster) for a pod with workload wl, at time
 * now. A pod without intent fits every schedulable node. An invalid workload makes every candidate
 * POL_UNRESOLVABLE with the validation message. Members after the first must follow the group's
 * placed members (same domain for TP mates, same rack/scope for the replica); the first member
 * only gets racks that can still hold the whole group (gang feasibility, counting others'
 * reservations). A later member whose own parallelism is only a default inherits the group's.
 * Does not change the ledger. TPX_ENOMEM, TPX_EINVAL for a bad index.
 */
enum tpx_code pol_filter(const struct pol_ledger *l, const struct pol_workload *wl,
                         const size_t *cand, size_t n, time_t now, struct pol_filter_result *res,
                         struct tpx_err *err);
void pol_filter_result_release(struct pol_filter_result *res);

/* Scores 0..10 (integers). A group's first member: best fit, the rack left with the least free
 * capacity after the whole group scores highest (with pol_ledger_set_pack, the experimental rank
 * of policy/pack.c instead, docs/simulate.md); within a rack partially used domains first; the
 * RDMA, KV and EP terms of policy/prefer.c on top (docs/workloads.md). A later member: its
 * reserved place 10. scores has n entries. */
enum tpx_code pol_score(const struct pol_ledger *l, const struct pol_workload *wl,
                        const size_t *cand, size_t n, time_t now, int *scores, struct tpx_err *err);

/*
 * A group's first member needs the capacity of every rack (one pass over all nodes). A memo keeps
 * that result for one shape and brings it up to date from the ledger's per-rack change counts:
 * the next filter or score of the same shape (kube-scheduler's prioritize right after filter, the
 * next pod of the same job, the next pod after a bind) recomputes only the racks (blocks, zones)
 * changed since, so each candidate costs O(1) (policy/index.c, the placement index). The caller
 * owns the memo and gives it to one call at a time; a ledger is never written by a filter or
 * score, memo or not. After the ledger a memo was used with is freed, pol_scope_memo_forget() it
 * before it meets another (a new ledger may take the old one's address).
 */
struct pol_scope_memo;
struct pol_scope_memo *pol_scope_memo_new(void); /* NULL when out of memory */
void pol_scope_memo_forget(struct pol_scope_memo *m);
void pol_scope_memo_free(struct pol_scope_memo *m); /* accepts NULL */

/* pol_filter() and pol_score() with a memo (NULL: none). The answers are the same either way. */
enum tpx_code pol_filter_memo(const struct pol_ledger *l, struct pol_scope_memo *memo,
                              const struct pol_workload *wl, const size_t *cand, size_t n,
                              time_t now, struct pol_filter_result *res, struct tpx_err *err);
enum tpx_code pol_score_memo(const struct pol_ledger *l, struct pol_scope_memo *memo,
                             const struct pol_workload *wl, const size_t *cand, size_t n,
                             time_t now, int *scores, struct tpx_err *err);

/* Where a committed pod went, for annotations and plan output. Strings are borrowed from the
 * cluster (valid while it lives). */
struct pol_placement {
    size_t node;
    const char *node_name;
    const char *rack;
    const char *domain;
    unsigned stage;      /* pipeline stage of this pod's first rank */
    unsigned rank_first; /* global ranks [rank_first, rank_last] live in this pod */
    unsigned rank_last;
};

/* Record that pod uid (name for display) of workload wl is bound to node: takes its capacity,
 * reserves the rest of its group in that rack until now + ttl_s (renewed by each member), and
 * fills *out. Idempotent for a uid already placed on the same node. TPX_EINVAL when the node no
 * longer fits (a concurrent bind took it): the caller answers the bind with that message. */
enum tpx_code pol_commit(struct pol_ledger *l, const struct pol_workload *wl, const char *uid,
                         const char *name, size_t node, time_t now, unsigned ttl_s,
                         struct pol_placement *out, struct tpx_err *err);

/* pol_commit() with a scope memo (NULL: none): the check of a group's first member reads the
 * rack capacities from it instead of a pass over every node. The answer is the same either way. */
enum tpx_code pol_commit_memo(struct pol_ledger *l, struct pol_scope_memo *memo,
                              const struct pol_workload *wl, const char *uid, const char *name,
                              size_t node, time_t now, unsigned ttl_s, struct pol_placement *out,
                              struct tpx_err *err);

/* Record that pod uid (name for display) of workload wl IS bound to node (a fact from the API
 * server, e.g. after a restart, in whatever order the watch lists pods): takes its capacity and
 * its slot in its group, with none of the checks meant for new placements (gang feasibility,
 * free capacity, rack of the group, cordoned nodes). Never refuses a bound pod: holds of other
 * groups it overbooks move elsewhere in their scope (or lapse), and the first recorded member of a
 * group holds the rest of it in its scope until now + ttl_s, as pol_commit does. When the pod
 * contradicts the rules (a member outside its group's rack, an index taken twice, a node over its
 * allocatable, an invalid workload) it is recorded anyway and warn (may be NULL; warn_len bytes,
 * "" when none) says why, for the caller to log. Idempotent for a uid already placed on the same
 * node (no warning then). TPX_EINVAL for a bad node index, no uid, or a uid placed on another
 * node; TPX_ENOMEM. */
enum tpx_code pol_record(struct pol_ledger *l, const struct pol_workload *wl, const char *uid,
                         const char *name, size_t node, time_t now, unsigned ttl_s,
                         struct pol_placement *out, char *warn, size_t warn_len,
                         struct tpx_err *err);

/*
 * A gang's room, held at a member's filter (wl->gang; kube-scheduler 1.37 runs the filters of
 * every member of a PodGroup before any bind: pkg/scheduler/schedule_one_podgroup.go). When no
 * member of wl's group is bound and no hold of the group lies in the scope of one of the
 * candidates, the candidate a first member would take (pol_filter + pol_score, the highest score,
 * the first on a tie) gets the whole group held in its scope until now + ttl_s, as pol_commit
 * holds the rest of a group after its first member; a hold the group had elsewhere is let go
 * (in-tree TAS filters the gang once per candidate placement). Later filters of the group then
 * follow the hold, and its binds take the held room. A bound first member outside the hold
 * (the scheduler chose another placement) lets it go and books as the group's first.
 * Nothing is held for a group without intent, preferred, of one pod, or with no candidate that
 * fits (the filter then says why). *held (may be NULL): a hold was made. TPX_ENOMEM.
 */
enum tpx_code pol_gang_hold(struct pol_ledger *l, struct pol_scope_memo *memo,
                            const struct pol_workload *wl, const size_t *cand, size_t n, time_t now,
                            unsigned ttl_s, bool *held, struct tpx_err *err);

/* Why the first member of wl's group fits nowhere, in the words of a plan rejection: "no rack has
 * 2 free 8-GPU domains (best: rack r2, 1)", or the validation message. Writes "" when some scope
 * can hold the group now. Does not change the ledger. TPX_ENOMEM. */
enum tpx_code pol_gang_shortfall(const struct pol_ledger *l, const struct pol_workload *wl,
                                 char *buf, size_t len, struct tpx_err *err);

/* ------------------------------------------------------------------------------------------------
 * Whole job (what `plan` does): every pod of every replica through pol_filter, pol_score and
 * pol_commit on a ledger, exactly as serve would see them arrive (leader first, then workers).
 */

/* One replica (group) of a job: the pods in index order. */
struct pol_job_replica {
    const struct pol_workload *pods; /* group_size entries */
    const char *const *pod_names;    /* npods names ("vllm-0", "vllm-0-1"), or NULL */
    size_t npods;
    /* plan only: which nodes kube-scheduler's filters admit each pod on (policy/admit.h), one
     * byte per node of the cluster, and why some do not; NULL (or a NULL entry): every node */
    const unsigned char *const *admit;
    const char *const *admit_why;
};

struct pol_job {
    const char *name; /* "llm/vllm" */
    const struct pol_job_replica *replicas;
    size_t nreplicas;
};

struct pol_plan_pod {
    size_t job;
    size_t replica;
    size_t pod; /* index in the replica */
    char pod_name[POL_KEY_MAX];
    struct pol_placement where;
};

struct pol_plan_reject {
    size_t job;
    size_t replica;
    char reason[768];
};

/* One class of traffic of a placed replica and the level it lands on (docs/workloads.md). */
enum pol_traffic_level {
    POL_LEVEL_NODE = 0, /* inside one node */
    POL_LEVEL_DOMAIN,   /* inside one multi-node NVLink domain */
    POL_LEVEL_RACK,     /* over RDMA inside one rack */
    POL_LEVEL_WIDER,    /* over RDMA across racks */
};
struct pol_traffic {
    enum pol_traffic_kind kind;
    unsigned ranks; /* ranks (stages for PP) in one group of this traffic */
    enum pol_traffic_level level;
    const char *where; /* the node, domain or rack, borrowed from the cluster; NULL for WIDER */
};
#define POL_TRAFFIC_MAX 3

/* "EP all-to-all, 16 ranks, inside NVLink domain cafe.1", "... over RDMA inside rack r01". */
void pol_traffic_text(const struct pol_traffic *t, char *buf, size_t len);

struct pol_plan_estimate {
    size_t job;
    size_t replica;
    unsigned tp, pp, dp;
    unsigned ep;     /* expert-parallel size, 1 when off */
    bool certain;    /* the layout was read for certain (the certainty rule) */
    const char *why; /* uncertain: why ("" when certain); borrowed from the replica's workloads
                        or static */
    size_t lead;     /* the replica's pod whose layout this is: its first accelerator member */
    struct pol_traffic traffic[POL_TRAFFIC_MAX]; /* of a placed replica: TP, EP, PP when > 1 */
    size_t ntraffic;
    unsigned accel;             /* accelerators in the replica */
    unsigned nodes;             /* distinct nodes it landed on (0 if rejected) */
    enum topo_fabric tp_fabric; /* the interconnect each TP group runs on */
    bool tp_multinode;          /* a TP group spans nodes of a multi-node domain */
    bool tp_cross_node;         /* a TP group spans nodes outside any one domain (over RDMA):
                                   a MoE layout or topox.io/cross-node-tp: allow */
    double bubble;              /* for num_ubatches, or -1 when unknown */
    unsigned num_ubatches;
    double stage_imbalance; /* -1 when model_layers is unknown */
    unsigned model_layers;
};

/* The plan. Owned by the caller; free with pol_plan_result_release(). */
struct pol_plan_result {
    struct pol_plan_pod *pods;
    size_t npods;
    struct pol_plan_reject *rejected;
    size_t nrejected;
    struct pol_plan_estimate *estimates; /* one per replica, placed or not */
    size_t nestimates;
};

/* Plan jobs on ledger l (changed: placed pods are committed, so a second job sees the first).
 * A replica that cannot be placed whole is rolled back and listed in rejected[] with the reason.
 * now and ttl_s as for pol_commit. TPX_ENOMEM only: rejections are results, not errors. */
enum tpx_code pol_plan(struct pol_ledger *l, const struct pol_job *jobs, size_t njobs, time_t now,
                       struct pol_plan_result *out, struct tpx_err *err);
void pol_plan_result_release(struct pol_plan_result *r);

#endif
