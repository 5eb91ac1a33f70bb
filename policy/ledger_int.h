/* SPDX-License-Identifier: Apache-2.0 */
/* policy/ledger_int.h - private to policy/: the ledger's records and the helpers its pieces share
 * (ledger.c, scope.c, judge.c, filter.c, score.c, prefer.c, reserve.c, book.c, index.c, plan.c),
 * as git's refs-internal.h is to refs/. Code outside policy/ uses policy/policy.h only and never
 * includes this header (scripts/check-layering.sh). The hot helpers stay static inline here, so
 * splitting the ledger into files costs the filter and score loops no calls. */
#ifndef TPX_POLICY_LEDGER_INT_H
#define TPX_POLICY_LEDGER_INT_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/map.h"
#include "common/sat.h"
#include "policy/policy.h"

#define NSCOPE 3
#define NO_SLOT (-1)
#define LED_CHANGE_RING 256
#define LED_SLOT_LIST 8
#define LED_PACK_RANK 1
#define LED_PACK_TERM 2

/* --- records ------------------------------------------------------------------------------------
 */

/* Where one pod of a group sits or is held: node, and the domains it takes. For in-node domains
 * dmask is a bitmask relative to the node's first domain; for a multi-node domain it is 0. */
struct where {
    size_t node; /* TOPO_NONE: not planned */
    uint64_t dmask;
};

struct slot {
    struct where at;
    bool filled;   /* a pod is bound there */
    bool reserved; /* capacity held for the pod that will come */
};

/* What a slot a group has not grown to yet is: planned nowhere, neither filled nor held. */
extern const struct slot led_empty_slot;

struct group {
    bool live;
    char key[POL_KEY_MAX];
    char display[POL_KEY_MAX];
    unsigned tp, pp, dp, accel_per_pod, n;
    bool tp_explicit;
    enum pol_scope scope;
    size_t scope_id;
    size_t rack;                /* rack of the first placed member */
    char kv_group[POL_KEY_MAX]; /* pol_workload.kv_group: the deployment it trades KV in */
    char kv_role;               /* 'p' prefill, 'd' decode, 0 */
    /* Slots 0..nslots-1, grown by need (led_slot_grow) as members arrive and holds are made, never
     * past n: a declared size allocates nothing. Slots from nslots to n-1 are led_empty_slot. */
    struct slot *slots;
    unsigned nslots;
    size_t aslots; /* allocated */
    unsigned placed;
    time_t expires;
    bool held_early; /* its room was held at a member's filter before any member was bound
                        (pol_gang_hold); cleared when the first member is booked */
    bool waiting;    /* held while it waited in the queue, no member's cycle seen yet
                        (pol_group_set_waiting): gives way to any bind (book.c) */
};

struct pod {
    bool live;
    char *uid;
    char *name;
    struct where at;
    unsigned accel;
    size_t group; /* TOPO_NONE: on its own */
    int slot;     /* NO_SLOT: an extra member or no group */
    struct pol_placement out;
};

struct pol_ledger {
    const struct topo_cluster *c;
    size_t nnodes, ndomains, nracks;
    unsigned *dom_used, *dom_resv;
    unsigned *node_used, *node_resv;
    unsigned *rack_used, *rack_resv;
    size_t *scope_of[NSCOPE]; /* per node */
    size_t nscopes[NSCOPE];
    unsigned long *scope_cap[NSCOPE];
    unsigned max_scope_cap[NSCOPE];
    struct group *groups;
    size_t ngroups, groups_cap;
    struct pod *pods;
    size_t npods, pods_cap;
    size_t *free_pods; /* dead pod records to reuse */
    size_t nfree_pods;
    struct tpx_map gmap, pmap; /* group key -> group index, pod UID -> pod index */
    /* copies of the cluster's hot fields, so the per-node loops make no calls */
    unsigned *n_alloc;
    size_t *n_dfirst;
    unsigned *n_dcount;
    bool *n_multi;
    bool any_multi; /* some domain spans nodes */
    bool *n_unsched;
    bool *n_nordma; /* the node says topox.io/rdma-nics 0 (unknown is false) */
    int *n_res;     /* index into res[], -1 when the node names no resource */
    unsigned *d_size;
    const char *res[16];
    size_t nres;
    /* Bumped by every change of use or reservations (led_account(), account_external()), so a
     * result derived from them (struct pol_scope_memo) can tell whether it still holds. */
    unsigned long gen;
    unsigned long held;                  /* accelerators reserved, all groups */
    unsigned long budget_ns, budget_all; /* pol_ledger_set_budgets(); 0: no limit */
    unsigned long budget_refused;        /* holds not made for a budget */
    unsigned char pack;                  /* LED_PACK_RANK: pol_ledger_set_pack(); LED_PACK_TERM:
                                            pol_ledger_set_pack_term() (pack.c); 0: best fit */
    /* The placement index (policy/index.c). Per scope kind: each scope's nodes in index order
     * (scope_nodes[k][scope_start[k][s]] up to scope_start[k][s + 1]) and a change count per scope,
     * bumped by every change on a node of the scope or of a multi-node domain with a node there;
     * and the node of each change, by gen, in a ring (changed[gen % LED_CHANGE_RING]), so a memo
     * a few changes behind visits only the scopes they touched. */
    size_t *scope_start[NSCOPE], *scope_nodes[NSCOPE];
    unsigned long *scope_gen[NSCOPE];
    size_t changed[LED_CHANGE_RING];
    unsigned biggest_alloc;         /* the largest node's allocatable accelerators */
    unsigned largest_domain;        /* the largest interconnect domain's accelerators */
    unsigned long long total_alloc; /* the cluster's */
    size_t group_hint;              /* every group record below it is live */
};

/* Slot k of g to read (k < g->n): led_empty_slot when g has not grown to it. */
static inline const struct slot *led_slot(const struct group *g, unsigned k)
{
    return k < g->nslots ? &g->slots[k] : &led_empty_slot;
}

static inline size_t led_node_domains(const struct pol_ledger *l, size_t n, size_t *nd)
{
    *nd = l->n_dcount[n];
    return l->n_dfirst[n];
}

static inline size_t led_node_domain(const struct pol_ledger *l, size_t n)
{
    return l->n_dfirst[n];
}

static inline unsigned led_domain_size(const struct pol_ledger *l, size_t d)
{
    return l->d_size[d];
}

/* The domain a pod at w takes first: the lowest in-node domain in its mask, or the node's domain
 * when the mask is 0 (a multi-node domain). Every node has at least one domain. */
static inline size_t where_domain(const struct pol_ledger *l, const struct where *w)
{
    size_t nd, first = led_node_domains(l, w->node, &nd);

    for (size_t b = 0; b < nd && b < 64 && w->dmask; b++) {
        if (w->dmask & ((uint64_t)1 << b))
            return first + b;
    }
    return first;
}

static inline unsigned sat_sub(unsigned a, unsigned b)
{
    return a > b ? a - b : 0;
}

static inline unsigned dom_free(const struct pol_ledger *l, size_t d)
{
    return sat_sub(led_domain_size(l, d), l->dom_used[d] + l->dom_resv[d]);
}

static inline unsigned node_free(const struct pol_ledger *l, size_t n)
{
    return sat_sub(l->n_alloc[n], l->node_used[n] + l->node_resv[n]);
}

static inline bool node_multinode(const struct pol_ledger *l, size_t n)
{
    return topo_cluster_domain_is_multinode(l->c, led_node_domain(l, n));
}

/* --- the state of one filter, score, commit or record call --------------------------------------
 */

/* The workload as the ledger sees it: a member whose parallelism is a default inherits its
 * group's. */
struct eff {
    unsigned tp, pp, dp, accel_per_pod, n;
    int idx;
    enum pol_scope scope;
    size_t group; /* TOPO_NONE: first member or on its own */
    bool preferred;
};

enum rkind {
    R_NONE,
    R_INVALID,
    R_UNSCHED,
    R_RESOURCE,
    R_DOMAIN_SMALL,
    R_NODE_SMALL,
    R_SCOPE_STATIC,
    R_SCOPE_DYN,
    R_ELSEWHERE,
    R_MATE,
    R_NODE_FREE,
    R_NODE_FREE_TP,
    R_DOM_FREE,
    R_NO_RDMA,
};

struct reason_code {
    enum rkind kind;
    unsigned a, b;
};

/* Where a deployment's groups of the other KV role (prefill vs decode) are placed, for a first
 * member's score (prefer.c): filled once per call. */
struct led_prefer {
    size_t peer_rack[8], peer_block[8];
    size_t npeer_rack, npeer_block;
};

/* State of one filter/score/commit call. */
struct ctx {
    const struct pol_ledger *l;
    const struct pol_workload *wl;
    struct eff e;
    bool invalid;
    char invalid_msg[512];
    unsigned ppu;  /* pods per TP unit: tp/g when a TP group spans pods, else 1 */
    unsigned unit; /* accelerators per unit */
    unsigned ndom; /* in-node domains one pod takes when g > domain size */
    bool scopes_done;
    struct pol_scope_memo *memo; /* the caller's, or NULL */
    unsigned long *sc_dyn;       /* pods placeable now per scope (others' reservations held) */
    unsigned long *sc_static;    /* pods placeable on an empty scope */
    unsigned long *sc_free;      /* free accelerators per scope */
    unsigned *dom_pods;          /* per multi-node domain: pods placeable now */
    bool sc_borrowed;            /* the four arrays above are the memo's (policy/index.c) */
    /* the nodes where a reserved slot of the group waits for this pod: a short list, or a map
     * per node when there are more (led_slot_here) */
    size_t slot_list[LED_SLOT_LIST];
    unsigned nslot;
    unsigned char *slot_map;
    size_t mate_domain;      /* domain of the pod's placed TP mates, or TOPO_NONE */
    size_t mate_node;        /* node of those mates when the domain is in-node */
    int res_id;              /* the pod's resource in l->res[]; -1 any; -2 none has it */
    unsigned long rdma_need; /* accelerators of a group whose traffic crosses pods; 0: none */
    bool rdma_hard;          /* rdma_need is a hard rule: certain TP or EP layout, not preferred */
    struct led_prefer pf;    /* prefer.c's view of the other groups, for a first member */
};

/* A reserved slot of the group waits for this pod on node n. */
static inline bool led_slot_here(const struct ctx *x, size_t n)
{
    if (x->slot_map)
        return x->slot_map[n] != 0;
    for (unsigned i = 0; i < x->nslot; i++) {
        if (x->slot_list[i] == n)
            return true;
    }
    return false;
}

/* Node n says it has no RDMA NIC (topox.io/rdma-nics 0) and its NVLink reach (the node, or its
 * multi-node domain) is smaller than the x->rdma_need accelerators of a group whose TP, EP or PP
 * traffic crosses pods: that traffic would have to leave the node over a NIC it does not have. */
static inline bool led_no_rdma(const struct ctx *x, size_t n)
{
    const struct pol_ledger *l = x->l;
    unsigned reach;

    if (x->rdma_need == 0 || !l->n_nordma[n])
        return false;
    reach = l->n_multi[n] ? l->d_size[l->n_dfirst[n]] : l->n_alloc[n];
    return reach < x->rdma_need;
}

/* The hard form of led_no_rdma(): where placement and holds must not go. */
static inline bool led_rdma_cut(const struct ctx *x, size_t n)
{
    return x->rdma_hard && led_no_rdma(x, n);
}

/* --- shared between the pieces (defined in the file named) --------------------------------------
 */

/* ledger.c: a change of use or holds on node n: bumps gen and the index's change counts */
void led_touch(struct pol_ledger *l, size_t n);
/* ledger.c: use (resv false) or holds (resv true) change on w's node and domains, by sign */
void led_account(struct pol_ledger *l, const struct where *w, unsigned accel, int sign, bool resv);
void led_release_slot(struct pol_ledger *l, struct group *g, struct slot *s);
/* ledger.c: release every hold of group gi and forget it */
void led_drop_group(struct pol_ledger *l, size_t gi);
/* ledger.c: a new group of n pods, with slots 0..need-1 (need <= n) made; TOPO_NONE out of memory
 */
size_t led_new_group(struct pol_ledger *l, const char *key, const char *display, unsigned n,
                     unsigned need);
/* ledger.c: slot k of g (k < g->n) to write, growing the slots to it (TPX_GROW): pointers into
 * g->slots taken before may move. NULL when out of memory or k >= g->n. */
struct slot *led_slot_grow(struct group *g, unsigned k);
size_t led_new_pod(struct pol_ledger *l, const char *uid, const char *name);
void led_kill_pod(struct pol_ledger *l, size_t pi);
size_t led_group_find(const struct pol_ledger *l,
                      const char *key); /* TOPO_NONE: none, or no key (NULL, "") */
size_t led_pod_find(const struct pol_ledger *l, const char *uid); /* TOPO_NONE: none */
/* ledger.c: room in the budgets for one more hold of g's (a refusal is counted) */
bool led_budget_allows(struct pol_ledger *l, const struct group *g);

/* scope.c: per-scope capacity for x's shape, and the names of the scopes */
extern const char *const led_scope_word[NSCOPE];
const char *led_scope_name(const struct pol_ledger *l, enum pol_scope k, size_t sid);
void led_compute_scopes(struct ctx *x);
/* scope.c: led_compute_scopes' pass over every node and domain, into x's zeroed arrays */
void led_scopes_all(struct ctx *x);
/* scope.c: the same for the scopes whose numbers are in dirty[0, ndirty), on zeroed entries (and
 * dom_pods for the multi-node domains with a node in them): what the index refreshes */
void led_scopes_some(struct ctx *x, const size_t *dirty, size_t ndirty);

/* index.c: the slot of memo m where pack.c keeps its per-rack cache (NULL, or pack.c's; freed
 * with the memo by led_pack_cache_free) */
struct led_pack_cache **led_memo_pack_cache(struct pol_scope_memo *m);
/* pack.c: free a cache that led_memo_pack_cache held */
void led_pack_cache_free(struct led_pack_cache *c);

/* index.c: point x's scope arrays at memo m (sized for x's ledger); the index behind it */
enum tpx_code led_memo_attach(struct ctx *x, struct pol_scope_memo *m, struct tpx_err *err);
/* index.c: bring the memo x uses up to date for x's shape (led_compute_scopes with a memo) */
void led_memo_refresh(struct ctx *x);
/* index.c: the first member's best node over the whole cluster from the memo's per-scope best
 * (what pol_filter + pol_score + the highest score, lowest index, give). false: none fits. */
bool led_index_best_first(struct ctx *x, size_t *node);
/* index.c: for pol_plan, the node pol_filter + pol_score + the highest score (lowest index on a
 * tie) choose for wl, from the index (*found), or *found false when a pass over every node must
 * answer: no intent, preferred, invalid, nothing fits (the pass then gives the reasons). */
enum tpx_code led_index_choose(const struct pol_ledger *l, struct pol_scope_memo *m,
                               const struct pol_workload *wl, size_t *node, bool *found,
                               struct tpx_err *err);

/* index.c: a first member's answer on one node, as led_judge and pol_score give it */
struct led_cell {
    unsigned stamp;        /* struct led_cells' stamp while it holds; 0: none */
    unsigned char verdict; /* enum pol_verdict */
    unsigned char kind;    /* enum rkind of the reason, with a and b */
    signed char score;     /* 0 where the node does not fit */
    unsigned a, b;
};
/* The cells of a call: cell[n] holds for node n when its stamp is this stamp. */
struct led_cells {
    const struct led_cell *cell;
    unsigned stamp;
};
/* index.c: x reads its answers from its memo's cells: a first member with intent, neither invalid
 * nor preferred, without KV peers, pack.c's rank off */
bool led_cells_apply(const struct ctx *x);
/* index.c: x's memo's cells, those of changed scopes and of another shape let go, into *out, for
 * an x for which led_cells_apply holds; false when out of memory (the caller then takes the pass
 * over its candidates) */
bool led_memo_cells(struct ctx *x, struct led_cells *out);
/* index.c: node n's cell found for x and kept */
const struct led_cell *led_cell_fill(struct ctx *x, size_t n);

/* node n's cell for x: kept, or found now */
static inline const struct led_cell *led_cell_at(struct ctx *x, const struct led_cells *c, size_t n)
{
    const struct led_cell *p = &c->cell[n];

    return p->stamp == c->stamp ? p : led_cell_fill(x, n);
}

/* judge.c: the call state, the rules and their reason text */
enum tpx_code led_ctx_init(struct ctx *x, const struct pol_ledger *l, const struct pol_workload *wl,
                           struct pol_scope_memo *memo, struct tpx_err *err);
void led_ctx_release(struct ctx *x);
bool led_pick_innode(const struct pol_ledger *l, size_t n, unsigned g, unsigned need, size_t only,
                     uint64_t *mask);
enum pol_verdict led_judge(struct ctx *x, size_t n, struct reason_code *why);
void led_reason_text(const struct ctx *x, const struct reason_code *why, char *buf, size_t len);

/* prefer.c: the soft terms of pol_score beside best fit (score only, never a rejection): nodes
 * without RDMA for a group that may cross nodes, the KV transfer of a deployment's prefill and
 * decode groups, and a later member's EP group in its NVLink domain. led_ctx_init fills x->pf. */
void led_prefer_init(const struct ctx *x, struct led_prefer *pf);
/* score (0..10) of node n adjusted by those terms, kept in 0..10 */
int led_prefer(const struct ctx *x, size_t n, int score);

/* score.c: the score 0..10 of node n, which led_judge found POL_FIT for x (prefer.c's terms in) */
int led_score_node(const struct ctx *x, size_t n);

/* reserve.c: where a pod goes on a node, and the holds of a group */
bool led_place_on(const struct ctx *x, size_t n, unsigned need, size_t only, struct where *w);
void led_reserve_rest(struct pol_ledger *l, const struct ctx *x, struct group *g, unsigned k0);
void led_displace(struct pol_ledger *l, size_t n);
/* reserve.c: hold the whole of new group g (no member bound) in node's scope, its first slot on
 * node, the rest as led_reserve_rest holds them; false when a budget or memory refused the first */
bool led_hold_group(struct pol_ledger *l, const struct ctx *x, struct group *g, size_t node);

#endif
