/* SPDX-License-Identifier: Apache-2.0 */
/* extender/nominate.h - `topox serve --bind-mode=api --nominate true` (issue 20, item 2): where
 * topox holds room for the members of a group that are not bound yet (a whole group waiting in
 * kube-scheduler's queue before any member's cycle; the rest of a group after its first bind; a
 * PodGroup gang once a cycle is over and its members are still pending), it sets
 * status.nominatedNodeName of each such member the watch reports pending to the node held for
 * it.
 * kube-scheduler 1.37 tries a pod's nominated node first and alone, in-tree filters and extender
 * filter on that one node, and skips scoring when it passes (pkg/scheduler/schedule_one.go,
 * findNodesThatFitPod -> evaluateNominatedNode); it also counts a nominated pod's requests on that
 * node when filtering pods of lower or equal priority (backend/queue/nominator.go), so the
 * nomination reserves the room in kube-scheduler too. When the hold is let go or expires while
 * the member is still pending, the nomination topox set is cleared (null).
 *
 * The PATCHes go out from WORKERS threads of their own, each with its own API client: neither
 * /filter nor /bind waits on them. Failures (404, 409, 403, an API server away) are counted and
 * logged at most once a minute, and change no verdict: topox's filter never reads
 * nominatedNodeName.
 *
 * Threads: every function is thread-safe. */
#ifndef TPX_EXTENDER_NOMINATE_H
#define TPX_EXTENDER_NOMINATE_H

#include <stdbool.h>
#include <stddef.h>

#include "common/err.h"
#include "extender/state.h"
#include "kube/config.h"

/* ---- the pure part: who is nominated to which node ---------------------------------------- */

/* A pending member of one group. Strings borrowed. */
struct ext_nom_member {
    const char *name;    /* the pod's name: the order among members without an index */
    int index;           /* its pod index in the group (pol_workload.pod_index); -1: none */
    const char *current; /* status.nominatedNodeName now; NULL or "": none */
    bool busy;           /* its scheduling cycle is running (topox filtered it a moment ago): it
                          * keeps a held node it names, but is given no other */
};

/* A held slot (ext_state_group_holds): its number and node. Strings borrowed. */
struct ext_nom_slot {
    unsigned slot;
    const char *node;
};

/* One member per held slot, deterministically. out[i] is the slot (an index into slots) given
 * to member i, or -1. A member with an index takes the slot of that number only (topox's filter
 * gives an indexed member that slot and no other, policy/judge.c note_slots), when held. Members
 * without an index then keep a slot their current nomination names (so a nomination the scheduler
 * set itself, or an earlier one of ours, does not move), and the rest that are not busy, by name,
 * take the slots left in slot order: a busy member will take whichever held node its running
 * cycle picks, so a slot is left free for it. A slot goes to one member at most. */
void ext_nominate_assign(const struct ext_nom_slot *slots, size_t nslots,
                         const struct ext_nom_member *members, size_t nmembers, long *out);

/* ---- the running part ----------------------------------------------------------------------- */

struct ext_nominator; /* opaque */

/* A nominator reading holds from st (borrowed: it must outlive the nominator) and PATCHing
 * through the API server of kcfg (copied), for pods of spec.schedulerName scheduler (copied).
 * Starts its thread. NULL with *err set. Free with ext_nominator_free(). */
struct ext_nominator *ext_nominator_new(const struct kube_config *kcfg, struct ext_state *st,
                                        const char *scheduler, struct tpx_err *err);
/* Stop the thread (a PATCH in flight is cancelled within about a second), free. Accepts NULL. */
void ext_nominator_free(struct ext_nominator *n);

/* The watch saw pod uid pending (not bound). It is kept as a member of group (its key; "" or
 * NULL: none, and it is forgotten) with pod index `index` when its scheduler is the one served
 * (any, when the one served is ""),
 * it is not being deleted, and group is set; otherwise it is forgotten. current: its
 * status.nominatedNodeName (NULL: none). queued: its workload (copied) while it is in
 * kube-scheduler's queue; NULL while it is gated (spec.schedulingGates). The group is looked at
 * again. Strings copied. */
void ext_nominator_pending(struct ext_nominator *n, const char *uid, const char *ns,
                           const char *name, const char *scheduler, bool deleting,
                           const char *group, int index, const char *current,
                           const struct pol_workload *queued);
/* Our bind of pod uid went through: it is no nominee any more, even while the watch still shows
 * it pending, until ext_nominator_forget(). */
void ext_nominator_bound(struct ext_nominator *n, const char *uid);
/* topox filtered pod uid just now: its scheduling cycle is running, and a nomination landing
 * now would name a node the cycle may not pick (kube-scheduler would then count the pod on both).
 * For a few seconds it gets no new node; then, still pending, it is nominated as the others. */
void ext_nominator_filtered(struct ext_nominator *n, const char *uid);
/* The pod is bound, finished or gone: forget it. */
void ext_nominator_forget(struct ext_nominator *n, const char *uid);
/* After a full pod relist: forget every member for which listed(ctx, uid) is false. */
void ext_nominator_prune(struct ext_nominator *n, bool (*listed)(void *ctx, const char *uid),
                         void *ctx);
/* A hold of group changed (a bind, a gang's hold at a filter): look at its members again, off
 * the caller's thread. Never blocks on the API server. */
void ext_nominator_touch(struct ext_nominator *n, const char *group);

/* Hold room for waiting groups (serve's holdWaitingGroups; off until called). A group whose
 * members (a PodGroup gang's minCount, else the group's size) the watch has shown pending and
 * queued for a second, none filtered yet, has its whole room held as its first member's filter
 * would (ext_state_gang_hold, every node a candidate), and its members are nominated to the held
 * nodes then, before kube-scheduler starts their cycles: each member's cycle is then its
 * nominated node's filters alone. A group whose cycle started first is held as without (a gang
 * at its filter, another at its first bind). Looked at once per member. */
void ext_nominator_hold_waiting(struct ext_nominator *n, bool on);

/* Counters for /metrics and tests. */
struct ext_nominator_stats {
    unsigned long set;           /* nominations PATCHed */
    unsigned long waiting_holds; /* groups held while waiting (ext_nominator_hold_waiting) */
    unsigned long cleared;       /* nominations topox had set, cleared when their hold went */
    unsigned long failed;        /* PATCHes the API server refused or could not take */
    size_t pending;              /* pending members known */
};
void ext_nominator_get_stats(struct ext_nominator *n, struct ext_nominator_stats *out);

#endif
