/* SPDX-License-Identifier: Apache-2.0 */
/* extender/state.h - what `topox serve` knows: a sealed cluster snapshot and the policy ledger
 * (placements, reservations, capacity in use) behind one read-write lock, plus the pods seen at
 * filter time so that bind knows what they asked for. Fed by --nodes/--cluster, by full Node
 * objects in filter requests, and by the API-server watch (extender/state_feed.c) through the
 * upsert/remove functions, which take plain C values. No JSON, no HTTP.
 *
 * Threads: every function is thread-safe. Filter and score take the lock shared; bind, node and
 * pod updates take it exclusive, so two binds can never book the same capacity twice. */
#ifndef TPX_EXTENDER_STATE_H
#define TPX_EXTENDER_STATE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "common/err.h"
#include "policy/policy.h"
#include "topology/model.h"

/* Reason given for a node name topox does not know. */
#define EXT_UNKNOWN_NODE_REASON "unknown node (not in topox's cluster view)"

struct ext_state;

/* New empty state (no cluster: not ready). ttl_s is the reservation TTL for binds. NULL with *err
 * on failure. Free with ext_state_free(). */
struct ext_state *ext_state_new(unsigned ttl_s, struct tpx_err *err);

/* The reservation budgets every ledger of st gets (pol_ledger_set_budgets; 0: no limit). Call
 * before the first snapshot. */
void ext_state_set_budgets(struct ext_state *st, unsigned per_namespace, unsigned total);
void ext_state_free(struct ext_state *st); /* accepts NULL */

/* Replace the cluster with c (sealed; ownership passes to the state, also on failure). Existing
 * placements and reservations are carried over by node name. */
enum tpx_code ext_state_set_cluster(struct ext_state *st, struct topo_cluster *c,
                                    struct tpx_err *err);

/* Add or refresh nodes (copied). accel_used of a node already known is kept from the state (a
 * Node object does not say what pods use). The snapshot is rebuilt once, and only when some node
 * is new or differs; *changed (may be NULL) says whether it was. */
enum tpx_code ext_state_upsert_nodes(struct ext_state *st, const struct topo_node_info *nodes,
                                     size_t n, bool *changed, struct tpx_err *err);
enum tpx_code ext_state_upsert_node(struct ext_state *st, const struct topo_node_info *node,
                                    struct tpx_err *err);
/* TPX_ENOENT when unknown. */
enum tpx_code ext_state_remove_node(struct ext_state *st, const char *name, struct tpx_err *err);

/* A pod bound to node_name (from the watch): with wl carrying intent it is recorded as a group
 * member (see ext_state_record_pod), otherwise its accel accelerators are counted as used.
 * Idempotent per uid. wl may be NULL. TPX_ENOENT for an unknown node. */
enum tpx_code ext_state_upsert_pod(struct ext_state *st, const char *uid, const char *name,
                                   const char *node_name, unsigned accel,
                                   const struct pol_workload *wl, struct tpx_err *err);
/* The same for a pod the API server reports as bound: recorded as a fact through pol_record(),
 * never refused for the placement rules (gang feasibility, capacity, rack of its group), so a
 * restart rebuilds every group whatever order the pods arrive in. warn (may be NULL; warn_len
 * bytes) gets "" or what the pod contradicts (a member outside its group's rack, a node over its
 * allocatable), for the caller to log once. TPX_ENOENT for an unknown node; TPX_EEXIST when the
 * uid is recorded on another node. ext_state_upsert_pod() is this with warn NULL. */
enum tpx_code ext_state_record_pod(struct ext_state *st, const char *uid, const char *name,
                                   const char *node_name, unsigned accel,
                                   const struct pol_workload *wl, char *warn, size_t warn_len,
                                   struct tpx_err *err);
/* The pod is gone (deleted, finished, binding failed): its capacity and group slot are freed.
 * false when the uid was not known. */
bool ext_state_remove_pod(struct ext_state *st, const char *uid);

/* The API server refused the Binding of pod uid: take back what ext_state_bind() booked, unless
 * the watch has reported the pod bound meanwhile (then the booking is the API server's truth and
 * stays). true when it was taken back. */
bool ext_state_unbind(struct ext_state *st, const char *uid);

/* After a full pod relist: forget every bound pod for which listed(ctx, uid) is false (deleted,
 * or finished, while the watch was not looking), except those a bind booked at or after
 * booked_before (the list's start) that the API server has not reported yet: the list may
 * predate them. Returns how many were forgotten. listed is called under the state's locks. */
size_t ext_state_prune_pods(struct ext_state *st, bool (*listed)(void *ctx, const char *uid),
                            void *ctx, time_t booked_before);

/* Readiness: a cluster is loaded, and, when ext_state_require_sync() was called, the watch has
 * called ext_state_mark_synced(). */
void ext_state_require_sync(struct ext_state *st);
void ext_state_mark_synced(struct ext_state *st);
/* true when ready; otherwise *why (static text) says what is missing. */
bool ext_state_ready(struct ext_state *st, const char **why);

/* Remember what pod uid of namespace ns (NULL: none) asked for (at filter time), so bind can
 * commit it. Copied. Entries of pods not bound are kept in LRU order: forgotten after an hour,
 * or, when the table is full (200 000 entries), the least recently used go, down to 7/8 of it.
 * One namespace holds at most ext_state_set_pod_ns_max() of them (20 000): past it, its own least
 * recently used entry goes, never another namespace's. Bound pods are never evicted for room,
 * and when the table holds only those a new filter is not remembered. */
void ext_state_remember_pod(struct ext_state *st, const char *uid, const char *ns, const char *name,
                            const struct pol_workload *wl, time_t now);

/* The pod table's size (0: 200 000): setting podTableSize. */
void ext_state_set_pod_max(struct ext_state *st, size_t max);
/* Entries of pods not bound one namespace may hold (0: no such bound; default 20 000): setting
 * podTableNamespaceMax. */
void ext_state_set_pod_ns_max(struct ext_state *st, size_t max);
/* Record mode (issue 21, item 3): no watch ever says that a pod bound through /bind is gone, so
 * with on, a bind keeps no entry for a pod without a topology intent: its accelerators stay
 * counted on the node (as before), but the table does not fill with such pods for good. Pods
 * with an intent keep their entry (their group needs it). Off (the default): bound pods stay
 * until the watch removes them. */
void ext_state_set_bound_ageing(struct ext_state *st, bool on);

/* What the pod table holds and has done, for /metrics. */
struct ext_state_pod_stats {
    size_t entries;                  /* pods remembered, bound or not */
    size_t max;                      /* the table's size */
    size_t ns_max;                   /* entries of pods not bound per namespace; 0: no bound */
    size_t namespaces;               /* namespaces with an entry */
    unsigned long evicted_full;      /* not-bound entries forgotten because the table was full */
    unsigned long evicted_namespace; /* ... because their namespace held its bound */
    unsigned long expired;           /* ... because they were older than an hour */
    unsigned long refused;           /* filters not remembered: the table held only bound pods */
};
void ext_state_pod_stats(struct ext_state *st, struct ext_state_pod_stats *out);

/* The pod uid went through /filter here, without a workload to remember (no intent, no
 * accelerators): only the time is kept, for ext_state_was_filtered(). */
void ext_state_note_filtered(struct ext_state *st, const char *uid, const char *ns,
                             const char *name, time_t now);
/* true when this process filtered pod uid (ext_state_remember_pod() or _note_filtered()) within
 * the reservation TTL before now. /bind accepts no other pod (issue 12, item 4). */
bool ext_state_was_filtered(struct ext_state *st, const char *uid, time_t now);
/* The schedulerName this extender serves (copied; at most EXT_SCHEDULER_NAME_MAX bytes). */
#define EXT_SCHEDULER_NAME_MAX 253
void ext_state_set_scheduler(struct ext_state *st, const char *name);
/* The watch saw pod uid, not yet bound, with spec.schedulerName scheduler (NULL: none given,
 * ignored). A pod of another scheduler than the one given to ext_state_set_scheduler() is
 * remembered as foreign. */
void ext_state_note_scheduler(struct ext_state *st, const char *uid, const char *ns,
                              const char *name, const char *scheduler, time_t now);
/* true when the watch saw pod uid pending with another schedulerName: --bind-mode=api refuses to
 * create its Binding. A pod the watch has not reported yet is not foreign (the bind may race the
 * watch event; it still needs a filter, and the API server refuses a uid that does not exist). */
bool ext_state_is_foreign(struct ext_state *st, const char *uid);
/* true when a cluster is loaded (--nodes, --cluster or the watch), whether or not it is synced. */
bool ext_state_has_cluster(struct ext_state *st);

/* Per input name: a verdict and a reason (borrowed until ext_state_verdicts_release()). */
struct ext_state_verdicts {
    size_t n;
    enum pol_verdict *verdict;
    const char **reason; /* NULL for POL_FIT */
    size_t nfit;
    size_t nunknown;
    struct pol_filter_result res; /* owns the reason strings */
};

/* What a list of candidate names resolved to in one cluster snapshot, kept by the caller for a
 * list it will see again (the codec's NodeNames cache, issue 14): the next filter or prioritize
 * with the same list skips the name lookups while the cluster is the same. Initialise with
 * ext_state_resolution_init(), free with ext_state_resolution_release(). Thread-safe: requests
 * share one. */
struct ext_state_resolution {
    pthread_mutex_t lock;
    unsigned long long gen; /* the snapshot it was made for (0: none yet) */
    size_t n;               /* names */
    size_t *idx;            /* per name: node index, or TOPO_NONE */
    size_t *known;          /* the known indices, in input order */
    size_t nknown;
};
void ext_state_resolution_init(struct ext_state_resolution *r);
void ext_state_resolution_release(struct ext_state_resolution *r);

/* Filter the named nodes for a pod with intent, the names' resolution taken from (or stored in)
 * *res when it is for the current snapshot (res NULL: resolved afresh; res must have been used
 * only with these names). Unknown names get POL_FAIL with EXT_UNKNOWN_NODE_REASON. TPX_ENOENT
 * when no cluster is loaded. A PodGroup gang's member (wl->gang) first has its group's room held
 * among the candidates (pol_gang_hold); so has another group's member whose group was held while it
 * waited (ext_state_gang_hold) and no member is bound yet, when that hold lies outside them. */
enum tpx_code ext_state_filter_res(struct ext_state *st, const struct pol_workload *wl,
                                   const char *const *names, size_t n,
                                   struct ext_state_resolution *res, time_t now,
                                   struct ext_state_verdicts *out, struct tpx_err *err);
static inline enum tpx_code ext_state_filter(struct ext_state *st, const struct pol_workload *wl,
                                             const char *const *names, size_t n, time_t now,
                                             struct ext_state_verdicts *out, struct tpx_err *err)
{
    return ext_state_filter_res(st, wl, names, n, NULL, now, out, err);
}
void ext_state_verdicts_release(struct ext_state_verdicts *v);

/* Hold the whole room of wl's group (pol_gang_hold) as its first member's filter would, with
 * every node of the snapshot as a candidate: for a group the watch sees waiting before any
 * member's cycle (extender/nominate.c). *held (NULL: not wanted; unchanged without a cluster) says
 * whether a new hold was made; an existing hold stands. */
enum tpx_code ext_state_gang_hold(struct ext_state *st, const struct pol_workload *wl, time_t now,
                                  bool *held, struct tpx_err *err);

/* Scores 0..10 for the named nodes (unknown names score 0); res as for ext_state_filter_res. */
enum tpx_code ext_state_score_res(struct ext_state *st, const struct pol_workload *wl,
                                  const char *const *names, size_t n,
                                  struct ext_state_resolution *res, time_t now, int *scores,
                                  struct tpx_err *err);
static inline enum tpx_code ext_state_score(struct ext_state *st, const struct pol_workload *wl,
                                            const char *const *names, size_t n, time_t now,
                                            int *scores, struct tpx_err *err)
{
    return ext_state_score_res(st, wl, names, n, NULL, now, scores, err);
}

/* Where a bound pod went; strings copied. */
struct ext_state_bind_out {
    bool known;  /* the pod was seen at filter time */
    bool intent; /* and had a topology intent (committed to a group) */
    char rack[POL_KEY_MAX];
    char domain[POL_KEY_MAX];
    char group[POL_KEY_MAX];
    char display[POL_KEY_MAX]; /* the group for people: "llm/vllm group 0" */
    bool already;              /* the pod was already recorded on this node before the call */
    unsigned stage;
    unsigned rank_first;
    unsigned rank_last;
};

/* Record the bind of pod uid to node_name: commits it to its group (reserving the rest of the
 * group's capacity in the rack for the TTL) or counts its accelerators as used. TPX_EINVAL with
 * policy's message when the node no longer fits (a concurrent bind took it), TPX_ENOENT for an
 * unknown node or no cluster. A pod never seen at filter time is accepted and only recorded. */
enum tpx_code ext_state_bind(struct ext_state *st, const char *uid, const char *name,
                             const char *node_name, time_t now, struct ext_state_bind_out *out,
                             struct tpx_err *err);

/* Release reservations whose TTL passed. Returns how many. */
size_t ext_state_expire(struct ext_state *st, time_t now);

/* Call fn with the current ledger under the shared lock (for /debug/state and /metrics). The
 * ledger and its cluster are valid only during the call. Returns false (fn not called) when no
 * cluster is loaded. */
bool ext_state_read(struct ext_state *st,
                    void (*fn)(void *ctx, const struct pol_ledger *l, size_t pods_seen), void *ctx);

#endif
