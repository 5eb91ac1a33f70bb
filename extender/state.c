/* SPDX-License-Identifier: Apache-2.0 */
/* extender/state.c - the cluster snapshot and the ledger behind one rwlock, and the table of pods
 * seen at filter time (its own mutex, taken after the rwlock when both are needed).
 *
 * A rwlock: filter and prioritize read the ledger from many scheduler goroutines at once; binds,
 * node updates and expiry (at most once a second, from a filter) write. */
#include "extender/state.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/map.h"
#include "common/str.h"
#include "extender/wlpack.h"
#include "objects/dra.h"

#define POD_MAX 200000
#define POD_NS_MAX 20000
#define POD_SEEN_TTL 3600
#define MEMOS 16

/* Snapshot numbers, unique in the process: no resolution passes for another snapshot's. */
static atomic_ullong snapshot_gens;

enum pod_kind { POD_SEEN = 0, POD_COMMITTED, POD_USED };

/* The entries of one namespace: how many, and its SEEN ones in LRU order, so a namespace at its
 * bound gives up its own least recently used entry and never another namespace's. */
struct pod_ns {
    char *name;  /* owned; the key in ext_state.namespaces */
    size_t refs; /* entries of this namespace, of every kind */
    size_t nseen;
    struct pod *head, *tail; /* its SEEN entries, most recent first */
};

/* A node name, shared by the entries bound there; the state's (not the snapshot's, which rebuilds
 * replace), freed with its last entry. */
struct node_name {
    size_t refs;
    char name[]; /* the key in ext_state.node_names */
};

/* One allocation an entry: the record, then its uid and name; fields by size, no padding. */
struct pod {
    struct pod_ns *ns; /* its namespace's record (counted in ns->refs) */
    /* What the pod asked for (has_wl): its accelerators, and, only when it has a topology
     * intent, the whole workload, packed (extender/wlpack.h). Most pods (plain and CPU-only)
     * keep no workload at all. */
    unsigned char *wl_packed;
    /* A SEEN entry is on the lists and bound nowhere; any other is bound and on no list, so the
     * two share their room (read the bound ones with pod_node() and pod_booked()). */
    union {
        struct {
            struct pod *lru_prev; /* on the SEEN list (see lru_push) */
            struct pod *lru_next;
            struct pod *ns_prev; /* on ns's SEEN list, as on the table's */
            struct pod *ns_next;
        };
        struct {
            const char *bound_node; /* a node_name's */
            time_t booked_at;       /* when a bind booked it here (0: the watch did) */
        };
    };
    time_t seen;
    time_t filtered; /* when this process last filtered it (0: never): bind needs it */
    unsigned wl_accel;
    unsigned accel;
    uint32_t name_at;   /* its name is uid + name_at */
    unsigned char kind; /* enum pod_kind */
    bool has_wl;
    bool foreign;   /* the watch saw it pending with another schedulerName than ours */
    bool confirmed; /* the API server has reported it bound to node */
    char uid[];     /* the key in ext_state.pods, then the name */
};

/* The node it is bound to, or NULL. */
static const char *pod_node(const struct pod *p)
{
    return p->kind == POD_SEEN ? NULL : p->bound_node;
}

static time_t pod_booked(const struct pod *p)
{
    return p->kind == POD_SEEN ? 0 : p->booked_at;
}

static const char *pod_name(const struct pod *p)
{
    return p->uid + p->name_at;
}

struct ext_state {
    pthread_rwlock_t lock; /* cluster, ledger */
    struct topo_cluster *cluster;
    struct pol_ledger *ledger;
    unsigned long long gen; /* this snapshot's number, unique in the process (resolutions) */
    unsigned ttl_s;
    unsigned budget_ns, budget_all; /* ext_state_set_budgets() */
    atomic_llong next_expire;
    atomic_bool need_sync;
    atomic_bool synced;

    pthread_mutex_t pods_lock;                       /* pods, scheduler_name */
    char scheduler_name[EXT_SCHEDULER_NAME_MAX + 1]; /* "" until ext_state_set_scheduler() */
    size_t pod_max;                                  /* entries; 0 until first used: POD_MAX */
    size_t pod_ns_max;    /* SEEN entries per namespace; 0: no such bound */
    bool age_bound;       /* ext_state_set_bound_ageing() */
    struct pod *lru_head; /* SEEN entries, most recent first */
    struct pod *lru_tail;
    struct tpx_map pods;       /* uid (borrowed from the entry) -> struct pod (owned) */
    struct tpx_map namespaces; /* namespace (borrowed from the record) -> struct pod_ns (owned) */
    struct tpx_map node_names; /* node name (borrowed) -> struct node_name (owned) */
    struct ext_state_pod_stats stats; /* counters only: the sizes are filled when read */

    /* Scope memos for filter and score (policy.h): each call takes one, the most recently given
     * back (likely the same pod's shape: prioritize follows filter), and gives it back before the
     * shared lock is released, so a writer finds them all home. */
    pthread_mutex_t memo_lock; /* memo_home, nhome, nmemo */
    struct pol_scope_memo *memo_home[MEMOS];
    size_t nhome;
    size_t nmemo;
};

/* What a pod asked for. false when out of memory (p keeps what it had). */
static bool pod_set_wl(struct pod *p, const struct pol_workload *wl)
{
    unsigned char *packed = NULL;

    if (wl->has_intent && !(packed = ext_wlpack_pack(wl)))
        return false;
    free(p->wl_packed);
    p->wl_packed = packed;
    p->wl_accel = wl->accel_per_pod;
    p->has_wl = true;
    return true;
}

static bool pod_intent(const struct pod *p)
{
    return p->has_wl && p->wl_packed;
}

/* pods_lock held: the shared copy of node name, counted once more; NULL when out of memory. */
static const char *node_ref(struct ext_state *st, const char *name)
{
    struct node_name *r = tpx_map_get(&st->node_names, name);
    struct tpx_err e = TPX_ERR_INIT;

    if (!r) {
        size_t len = strlen(name);

        r = malloc(sizeof(*r) + len + 1);
        if (!r)
            return NULL;
        r->refs = 0;
        memcpy(r->name, name, len + 1);
        if (tpx_map_put(&st->node_names, r->name, r, &e) != TPX_OK) {
            free(r);
            return NULL;
        }
    }
    r->refs++;
    return r->name;
}

/* pods_lock held: one count of a name node_ref() gave back (NULL: none) given up. */
static void node_unref(struct ext_state *st, const char *name)
{
    struct node_name *r;

    if (!name)
        return;
    r = (struct node_name *)(void *)(name - offsetof(struct node_name, name));
    if (--r->refs > 0)
        return;
    tpx_map_del(&st->node_names, r->name, NULL);
    free(r);
}

static void pod_free(struct ext_state *st, struct pod *p)
{
    free(p->wl_packed);
    node_unref(st, pod_node(p));
    free(p);
}

/* pods_lock held */
static struct pod *pod_find(struct ext_state *st, const char *uid)
{
    return tpx_map_get(&st->pods, uid);
}

/* The LRU list of SEEN entries (pods filtered, not bound): most recent at lru_head. Bound pods
 * (POD_COMMITTED, POD_USED) are facts and never on it, so a flood of made-up UIDs can evict
 * only other SEEN entries, and a new UID never scans the table (issue 12, item 8). Invariant:
 * an entry is on the list exactly when its kind is POD_SEEN. pods_lock held for all of these. */
static void lru_unlink(struct ext_state *st, struct pod *p)
{
    struct pod_ns *ns = p->ns;

    if (p->lru_prev)
        p->lru_prev->lru_next = p->lru_next;
    else
        st->lru_head = p->lru_next;
    if (p->lru_next)
        p->lru_next->lru_prev = p->lru_prev;
    else
        st->lru_tail = p->lru_prev;
    p->lru_prev = p->lru_next = NULL;
    /* the same on its namespace's list */
    if (p->ns_prev)
        p->ns_prev->ns_next = p->ns_next;
    else
        ns->head = p->ns_next;
    if (p->ns_next)
        p->ns_next->ns_prev = p->ns_prev;
    else
        ns->tail = p->ns_prev;
    p->ns_prev = p->ns_next = NULL;
    ns->nseen--;
}

static void lru_push(struct ext_state *st, struct pod *p)
{
    struct pod_ns *ns = p->ns;

    p->lru_prev = NULL;
    p->lru_next = st->lru_head;
    if (st->lru_head)
        st->lru_head->lru_prev = p;
    else
        st->lru_tail = p;
    st->lru_head = p;
    p->ns_prev = NULL;
    p->ns_next = ns->head;
    if (ns->head)
        ns->head->ns_prev = p;
    else
        ns->tail = p;
    ns->head = p;
    ns->nseen++;
}

/* A SEEN entry was used again: to the front. */
static void lru_touch(struct ext_state *st, struct pod *p)
{
    if (p->kind == POD_SEEN && st->lru_head != p) {
        lru_unlink(st, p);
        lru_push(st, p);
    }
}

static void set_kind(struct ext_state *st, struct pod *p, enum pod_kind kind)
{
    if (p->kind == POD_SEEN && kind != POD_SEEN)
        lru_unlink(st, p);
    else if (p->kind != POD_SEEN && kind == POD_SEEN)
        lru_push(st, p);
    p->kind = (unsigned char)kind;
}

static size_t pod_limit(const struct ext_state *st)
{
    return st->pod_max ? st->pod_max : POD_MAX;
}

/* The record of namespace name ("" for none), made on first use; NULL when out of memory. */
static struct pod_ns *ns_ref(struct ext_state *st, const char *name)
{
    struct pod_ns *ns = tpx_map_get(&st->namespaces, name ? name : "");
    struct tpx_err e = TPX_ERR_INIT;

    if (!ns) {
        ns = calloc(1, sizeof(*ns));
        if (!ns || !(ns->name = strdup(name ? name : "")) ||
            tpx_map_put(&st->namespaces, ns->name, ns, &e) != TPX_OK) {
            if (ns)
                free(ns->name);
            free(ns);
            return NULL;
        }
    }
    ns->refs++;
    return ns;
}

static void ns_unref(struct ext_state *st, struct pod_ns *ns)
{
    if (--ns->refs > 0)
        return;
    tpx_map_del(&st->namespaces, ns->name, NULL);
    free(ns->name);
    free(ns);
}

/* Forget the SEEN entry p: off both lists, out of the table, freed. */
static void pod_forget(struct ext_state *st, struct pod *p)
{
    struct pod_ns *ns = p->ns;

    lru_unlink(st, p);
    tpx_map_del(&st->pods, p->uid, NULL);
    pod_free(st, p);
    ns_unref(st, ns);
}

/* Forget SEEN entries from the LRU end: those older than the TTL, and, when the table is full,
 * down to the low-water mark. Each eviction is O(1); facts are never touched. */
static void pods_sweep(struct ext_state *st, time_t now)
{
    size_t low = pod_limit(st) - pod_limit(st) / 8;

    while (st->lru_tail) {
        struct pod *p = st->lru_tail;
        bool full = tpx_map_len(&st->pods) > low;

        if (!full && now - p->seen <= POD_SEEN_TTL)
            break;
        if (full)
            st->stats.evicted_full++;
        else
            st->stats.expired++;
        pod_forget(st, p);
    }
}

/* A new SEEN entry of ns is coming: when ns already holds its bound, its own least recently used
 * SEEN entries make room, so a flood of made-up UIDs in one namespace only pushes out its own. */
static void ns_make_room(struct ext_state *st, struct pod_ns *ns)
{
    while (st->pod_ns_max && ns->nseen >= st->pod_ns_max && ns->tail) {
        st->stats.evicted_namespace++;
        pod_forget(st, ns->tail);
    }
}

/* pods_lock held. fact: the caller records what the API server or a bind says (never refused
 * for space: such entries are bounded by the cluster's real pods); otherwise a filter's note,
 * which gets NULL when the table is full of facts. A new entry is SEEN, at the LRU front. */
static struct pod *pod_get(struct ext_state *st, const char *uid, const char *ns, const char *name,
                           time_t now, bool fact)
{
    struct pod *p = pod_find(st, uid);
    struct tpx_err e = TPX_ERR_INIT;
    struct pod_ns *rec;
    size_t ulen, nlen;

    if (p) {
        lru_touch(st, p);
        return p;
    }
    rec = ns_ref(st, ns);
    if (!rec)
        return NULL;
    if (!fact)
        ns_make_room(st, rec);
    if (tpx_map_len(&st->pods) >= pod_limit(st) ||
        (st->lru_tail && now - st->lru_tail->seen > POD_SEEN_TTL))
        pods_sweep(st, now);
    if (!fact && tpx_map_len(&st->pods) >= pod_limit(st)) {
        st->stats.refused++;
        ns_unref(st, rec);
        return NULL;
    }
    if (!name)
        name = uid;
    ulen = strlen(uid);
    nlen = strlen(name);
    p = ulen < UINT32_MAX ? calloc(1, sizeof(*p) + ulen + nlen + 2) : NULL;
    if (!p) {
        ns_unref(st, rec);
        return NULL;
    }
    memcpy(p->uid, uid, ulen + 1);
    memcpy(p->uid + ulen + 1, name, nlen + 1);
    p->name_at = (uint32_t)(ulen + 1);
    p->ns = rec;
    if (tpx_map_put(&st->pods, p->uid, p, &e) != TPX_OK) {
        pod_free(st, p);
        ns_unref(st, rec);
        return NULL;
    }
    p->seen = now;
    lru_push(st, p);
    return p;
}

void ext_state_set_pod_max(struct ext_state *st, size_t max)
{
    pthread_mutex_lock(&st->pods_lock);
    st->pod_max = max ? max : POD_MAX;
    pthread_mutex_unlock(&st->pods_lock);
}

void ext_state_set_pod_ns_max(struct ext_state *st, size_t max)
{
    pthread_mutex_lock(&st->pods_lock);
    st->pod_ns_max = max;
    pthread_mutex_unlock(&st->pods_lock);
}

void ext_state_set_bound_ageing(struct ext_state *st, bool on)
{
    pthread_mutex_lock(&st->pods_lock);
    st->age_bound = on;
    pthread_mutex_unlock(&st->pods_lock);
}

void ext_state_pod_stats(struct ext_state *st, struct ext_state_pod_stats *out)
{
    pthread_mutex_lock(&st->pods_lock);
    *out = st->stats;
    out->entries = tpx_map_len(&st->pods);
    out->max = pod_limit(st);
    out->ns_max = st->pod_ns_max;
    out->namespaces = tpx_map_len(&st->namespaces);
    pthread_mutex_unlock(&st->pods_lock);
}

/* A memo for one call, or NULL when all are out (the call then computes without one). */
static struct pol_scope_memo *memo_take(struct ext_state *st)
{
    struct pol_scope_memo *m = NULL;

    pthread_mutex_lock(&st->memo_lock);
    if (st->nhome)
        m = st->memo_home[--st->nhome];
    else if (st->nmemo < MEMOS && (m = pol_scope_memo_new()) != NULL)
        st->nmemo++;
    pthread_mutex_unlock(&st->memo_lock);
    return m;
}

static void memo_give(struct ext_state *st, struct pol_scope_memo *m)
{
    if (!m)
        return;
    pthread_mutex_lock(&st->memo_lock);
    st->memo_home[st->nhome++] = m;
    pthread_mutex_unlock(&st->memo_lock);
}

/* Both locks held: give back what p holds on its node (its group slot, or the accelerators it
 * counts as used); p stays in the table, bound nowhere. */
static void unbook(struct ext_state *st, struct pod *p)
{
    struct tpx_err e = TPX_ERR_INIT;

    if (st->ledger && p->kind == POD_COMMITTED) {
        pol_ledger_forget_pod(st->ledger, p->uid);
    } else if (st->ledger && p->kind == POD_USED && p->accel) {
        size_t i = topo_cluster_find(st->cluster, p->bound_node);
        if (i != TOPO_NONE)
            pol_ledger_use(st->ledger, i, -(int64_t)p->accel, &e);
    }
    node_unref(st, pod_node(p));
    set_kind(st, p, POD_SEEN); /* the links take the room of its node and booking */
    p->confirmed = false;
}

/* Both locks held: unbook and forget the entry p. */
static void drop_entry(struct ext_state *st, struct pod *p)
{
    unbook(st, p); /* SEEN now */
    pod_forget(st, p);
}

struct ext_state *ext_state_new(unsigned ttl_s, struct tpx_err *err)
{
    struct ext_state *st = calloc(1, sizeof(*st));

    if (!st) {
        tpx_err_set(err, TPX_ENOMEM, "out of memory for the extender state");
        return NULL;
    }
    {
        /* glibc's default rwlock prefers readers: a steady stream of filters and /debug/state
         * reads could starve binds and watch updates past the scheduler's bind timeout. No
         * path takes the read lock twice, so the non-recursive writer-preferring kind is safe. */
        pthread_rwlockattr_t attr;

        pthread_rwlockattr_init(&attr);
        pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
        pthread_rwlock_init(&st->lock, &attr);
        pthread_rwlockattr_destroy(&attr);
    }
    pthread_mutex_init(&st->pods_lock, NULL);
    pthread_mutex_init(&st->memo_lock, NULL);
    st->ttl_s = ttl_s;
    st->pod_ns_max = POD_NS_MAX;
    atomic_init(&st->next_expire, 0);
    atomic_init(&st->need_sync, false);
    atomic_init(&st->synced, false);
    return st;
}

void ext_state_set_budgets(struct ext_state *st, unsigned per_namespace, unsigned total)
{
    st->budget_ns = per_namespace;
    st->budget_all = total;
}

void ext_state_free(struct ext_state *st)
{
    union tpx_map_val v;

    if (!st)
        return;
    pol_ledger_free(st->ledger);
    topo_cluster_free(st->cluster);
    for (size_t pos = 0; tpx_map_next(&st->pods, &pos, NULL, &v);)
        pod_free(st, v.ptr);
    tpx_map_release(&st->pods);
    tpx_map_release(&st->node_names); /* empty now */
    for (size_t pos = 0; tpx_map_next(&st->namespaces, &pos, NULL, &v);) {
        struct pod_ns *ns = v.ptr;
        free(ns->name);
        free(ns);
    }
    tpx_map_release(&st->namespaces);
    pthread_rwlock_destroy(&st->lock);
    pthread_mutex_destroy(&st->pods_lock);
    for (size_t i = 0; i < st->nhome; i++)
        pol_scope_memo_free(st->memo_home[i]);
    pthread_mutex_destroy(&st->memo_lock);
    free(st);
}

/* Write lock held: pods counted as used by pol_ledger_use() are not carried by a rebase (it
 * carries groups, placements and reservations), so they are applied again to a new ledger. */
static void reapply_used(struct ext_state *st, struct pol_ledger *l)
{
    const struct topo_cluster *c = pol_ledger_cluster(l);
    union tpx_map_val v;

    pthread_mutex_lock(&st->pods_lock);
    for (size_t pos = 0; tpx_map_next(&st->pods, &pos, NULL, &v);) {
        const struct pod *p = v.ptr;
        struct tpx_err e = TPX_ERR_INIT;
        size_t i;

        if (p->kind != POD_USED)
            continue;
        i = topo_cluster_find(c, p->bound_node);
        if (i != TOPO_NONE)
            pol_ledger_use(l, i, (int64_t)p->accel, &e);
    }
    pthread_mutex_unlock(&st->pods_lock);
}

/* Write lock held: make c (sealed, owned) the snapshot, carrying the ledger over. */
static enum tpx_code install(struct ext_state *st, struct topo_cluster *c, struct tpx_err *err)
{
    struct pol_ledger *l;

    if (st->ledger)
        l = pol_ledger_rebase(st->ledger, c, err);
    else
        l = pol_ledger_new(c, err);
    if (!l) {
        topo_cluster_free(c);
        return err->code;
    }
    pol_ledger_set_budgets(l, st->budget_ns, st->budget_all);
    if (st->ledger)
        reapply_used(st, l);
    /* the memos know the old ledger, whose address the next one may take: every memo is home
     * (no reader holds the state) */
    pthread_mutex_lock(&st->memo_lock);
    for (size_t i = 0; i < st->nhome; i++)
        pol_scope_memo_forget(st->memo_home[i]);
    pthread_mutex_unlock(&st->memo_lock);
    pol_ledger_free(st->ledger);
    topo_cluster_free(st->cluster);
    st->ledger = l;
    st->cluster = c;
    st->gen = atomic_fetch_add(&snapshot_gens, 1) + 1;
    return TPX_OK;
}

enum tpx_code ext_state_set_cluster(struct ext_state *st, struct topo_cluster *c,
                                    struct tpx_err *err)
{
    enum tpx_code rc;

    pthread_rwlock_wrlock(&st->lock);
    rc = install(st, c, err);
    pthread_rwlock_unlock(&st->lock);
    return rc;
}

/* Write lock held. Rebuild the cluster from the old one with updates (upd[i] replaces the node of
 * the same name; new names are appended) and without the node called `drop`. */
static enum tpx_code rebuild(struct ext_state *st, const struct topo_node_info *upd, size_t n,
                             const char *drop, struct tpx_err *err)
{
    const struct topo_cluster *old = st->cluster;
    size_t nold = old ? topo_cluster_node_count(old) : 0;
    const struct topo_node_info **repl = NULL;
    struct topo_cluster *c = topo_cluster_new(err);

    if (!c)
        return err->code;
    if (nold) {
        repl = calloc(nold, sizeof(*repl));
        if (!repl) {
            topo_cluster_free(c);
            return tpx_err_set(err, TPX_ENOMEM, "out of memory rebuilding the cluster");
        }
    }
    for (size_t i = 0; i < n; i++) {
        size_t k = old ? topo_cluster_find(old, upd[i].name) : TOPO_NONE;
        if (k != TOPO_NONE)
            repl[k] = &upd[i];
    }
    for (size_t k = 0; k < nold; k++) {
        const struct topo_node_info *o = topo_cluster_node(old, k);
        struct topo_node_info v;

        if (drop && strcmp(o->name, drop) == 0)
            continue;
        v = repl[k] ? *repl[k] : *o;
        v.accel_used = o->accel_used;
        if (topo_cluster_add(c, &v, err) != TPX_OK)
            goto fail;
    }
    for (size_t i = 0; i < n; i++) {
        if (old && topo_cluster_find(old, upd[i].name) != TOPO_NONE)
            continue;
        /* a name twice in one batch: the first wins */
        if (topo_cluster_add(c, &upd[i], err) != TPX_OK) {
            if (err->code != TPX_EEXIST)
                goto fail;
            tpx_err_clear(err);
        }
    }
    free(repl);
    if (topo_cluster_seal(c, err) != TPX_OK) {
        topo_cluster_free(c);
        return err->code;
    }
    return install(st, c, err);
fail:
    free(repl);
    topo_cluster_free(c);
    return err->code;
}

enum tpx_code ext_state_upsert_nodes(struct ext_state *st, const struct topo_node_info *nodes,
                                     size_t n, bool *changed, struct tpx_err *err)
{
    bool diff = false;
    enum tpx_code rc = TPX_OK;

    if (changed)
        *changed = false;
    for (size_t i = 0; i < n; i++) {
        if (!nodes[i].name)
            return tpx_err_set(err, TPX_EINVAL, "a node without a name");
    }
    /* the common case (nothing changed) only needs the shared lock */
    pthread_rwlock_rdlock(&st->lock);
    if (!st->cluster) {
        diff = n > 0;
    } else {
        for (size_t i = 0; i < n && !diff; i++) {
            size_t k = topo_cluster_find(st->cluster, nodes[i].name);
            diff = k == TOPO_NONE ||
                   !topo_node_info_same_place(topo_cluster_node(st->cluster, k), &nodes[i]);
        }
    }
    pthread_rwlock_unlock(&st->lock);
    if (!diff)
        return TPX_OK;
    pthread_rwlock_wrlock(&st->lock);
    rc = rebuild(st, nodes, n, NULL, err);
    pthread_rwlock_unlock(&st->lock);
    if (rc == TPX_OK && changed)
        *changed = true;
    return rc;
}

enum tpx_code ext_state_upsert_node(struct ext_state *st, const struct topo_node_info *node,
                                    struct tpx_err *err)
{
    return ext_state_upsert_nodes(st, node, 1, NULL, err);
}

enum tpx_code ext_state_remove_node(struct ext_state *st, const char *name, struct tpx_err *err)
{
    enum tpx_code rc;

    pthread_rwlock_wrlock(&st->lock);
    if (!st->cluster || topo_cluster_find(st->cluster, name) == TOPO_NONE)
        rc = tpx_err_set(err, TPX_ENOENT, "node '%s' is not known", name);
    else
        rc = rebuild(st, NULL, 0, name, err);
    pthread_rwlock_unlock(&st->lock);
    return rc;
}

/* Write lock and pods_lock held: account pod p on node index i. bound: p is already bound (the
 * watch says so), so a pod with intent is recorded with pol_record() (a fact: never refused; warn,
 * when not NULL, gets what contradicts the rules); otherwise this is a new placement (bind) and
 * pol_commit() checks it. */
static enum tpx_code place(struct ext_state *st, struct pod *p, size_t i, time_t now, bool bound,
                           char *warn, size_t warn_len, struct pol_placement *where,
                           struct tpx_err *err)
{
    const char *node = topo_cluster_node(st->cluster, i)->name;
    const char *copy;

    if (pod_node(p)) {
        /* Idempotent. A committed pod gets its placement again (pol_commit is idempotent for the
         * same uid and node), so a repeated bind still carries its rack, domain and stage. */
        if (strcmp(p->bound_node, node) == 0 && p->kind == POD_COMMITTED && pod_intent(p)) {
            struct pol_workload wl;

            ext_wlpack_unpack(p->wl_packed, &wl);
            return pol_commit(st->ledger, &wl, p->uid, pod_name(p), i, now, st->ttl_s, where, err);
        }
        if (strcmp(p->bound_node, node) == 0)
            return TPX_OK;
        return tpx_err_set(err, TPX_EEXIST, "pod '%s' is already bound to node '%s'", pod_name(p),
                           p->bound_node);
    }
    copy = node_ref(st, node);
    if (!copy)
        return tpx_err_set(err, TPX_ENOMEM, "out of memory");
    if (pod_intent(p)) {
        struct pol_workload wl;
        enum tpx_code rc;

        ext_wlpack_unpack(p->wl_packed, &wl);
        if (bound)
            rc = pol_record(st->ledger, &wl, p->uid, pod_name(p), i, now, st->ttl_s, where, warn,
                            warn_len, err);
        else {
            /* a memo of the same shape (the pod's filter and score just used one) answers the
             * first member's rack check from the scopes changed since, not every node */
            struct pol_scope_memo *m = memo_take(st);
            rc = pol_commit_memo(st->ledger, m, &wl, p->uid, pod_name(p), i, now, st->ttl_s, where,
                                 err);
            memo_give(st, m);
        }
        if (rc != TPX_OK) {
            node_unref(st, copy);
            return err->code;
        }
        set_kind(st, p, POD_COMMITTED);
    } else {
        p->accel = p->has_wl ? p->wl_accel : p->accel;
        if (p->accel && pol_ledger_use(st->ledger, i, (int64_t)p->accel, err) != TPX_OK) {
            node_unref(st, copy);
            return err->code;
        }
        set_kind(st, p, POD_USED);
    }
    p->bound_node = copy; /* off the lists now: the room is its node's */
    p->booked_at = 0;
    return TPX_OK;
}

enum tpx_code ext_state_upsert_pod(struct ext_state *st, const char *uid, const char *name,
                                   const char *node_name, unsigned accel,
                                   const struct pol_workload *wl, struct tpx_err *err)
{
    return ext_state_record_pod(st, uid, name, node_name, accel, wl, NULL, 0, err);
}

enum tpx_code ext_state_record_pod(struct ext_state *st, const char *uid, const char *name,
                                   const char *node_name, unsigned accel,
                                   const struct pol_workload *wl, char *warn, size_t warn_len,
                                   struct tpx_err *err)
{
    struct pol_placement where;
    enum tpx_code rc = TPX_OK;
    time_t now = time(NULL);
    struct pod *p;
    size_t i;

    if (warn && warn_len)
        warn[0] = '\0';
    pthread_rwlock_wrlock(&st->lock);
    pthread_mutex_lock(&st->pods_lock);
    if (!st->cluster) {
        rc = tpx_err_set(err, TPX_ENOENT, "no cluster loaded");
        goto out;
    }
    i = topo_cluster_find(st->cluster, node_name);
    if (i == TOPO_NONE) {
        rc = tpx_err_set(err, TPX_ENOENT, "node '%s' is not known", node_name);
        goto out;
    }
    p = pod_get(st, uid, NULL, name, now, true);
    if (!p) {
        rc = tpx_err_set(err, TPX_ENOMEM, "out of memory");
        goto out;
    }
    if (wl && !pod_set_wl(p, wl)) {
        rc = tpx_err_set(err, TPX_ENOMEM, "out of memory");
        goto out;
    }
    if (p->kind == POD_USED && strcmp(p->bound_node, node_name) == 0) {
        /* Already counted here, maybe with 0 (a bind of a pod never seen at filter time): the
         * watch knows what it really uses, so count the difference. */
        if (accel != p->accel)
            rc = pol_ledger_use(st->ledger, i, (int64_t)accel - (int64_t)p->accel, err);
        if (rc == TPX_OK) {
            p->accel = accel;
            p->confirmed = true;
        }
        goto out;
    }
    if (pod_node(p) && strcmp(p->bound_node, node_name) != 0 && !p->confirmed) {
        /* Our bind booked it on another node, and the API server says it is bound here (a
         * racing binder won, and our Binding will get a 409): the API server is right. */
        unbook(st, p);
    }
    p->accel = accel;
    rc = place(st, p, i, now, true, warn, warn_len, &where, err);
    if (rc == TPX_OK)
        p->confirmed = true;
out:
    pthread_mutex_unlock(&st->pods_lock);
    pthread_rwlock_unlock(&st->lock);
    return rc;
}

bool ext_state_remove_pod(struct ext_state *st, const char *uid)
{
    struct pod *p;

    pthread_rwlock_wrlock(&st->lock);
    pthread_mutex_lock(&st->pods_lock);
    p = pod_find(st, uid);
    if (p)
        drop_entry(st, p);
    pthread_mutex_unlock(&st->pods_lock);
    pthread_rwlock_unlock(&st->lock);
    return p != NULL;
}

bool ext_state_unbind(struct ext_state *st, const char *uid)
{
    struct pod *p;
    bool undone = false;

    pthread_rwlock_wrlock(&st->lock);
    pthread_mutex_lock(&st->pods_lock);
    p = pod_find(st, uid);
    if (p && !p->confirmed) {
        drop_entry(st, p);
        undone = true;
    }
    pthread_mutex_unlock(&st->pods_lock);
    pthread_rwlock_unlock(&st->lock);
    return undone;
}

size_t ext_state_prune_pods(struct ext_state *st, bool (*listed)(void *ctx, const char *uid),
                            void *ctx, time_t booked_before)
{
    size_t n = 0;
    union tpx_map_val v;

    pthread_rwlock_wrlock(&st->lock);
    pthread_mutex_lock(&st->pods_lock);
    for (size_t pos = 0; tpx_map_next(&st->pods, &pos, NULL, &v);) {
        struct pod *p = v.ptr;
        /* booked by a bind while the list ran: the list may predate the pod, and its watch
         * event is still to come */
        bool fresh = !p->confirmed && pod_booked(p) >= booked_before;

        if (pod_node(p) && !fresh && !listed(ctx, p->uid)) {
            drop_entry(st, p);
            n++;
        }
    }
    pthread_mutex_unlock(&st->pods_lock);
    pthread_rwlock_unlock(&st->lock);
    return n;
}

void ext_state_require_sync(struct ext_state *st)
{
    atomic_store(&st->need_sync, true);
}

void ext_state_mark_synced(struct ext_state *st)
{
    atomic_store(&st->synced, true);
}

bool ext_state_ready(struct ext_state *st, const char **why)
{
    bool has;

    pthread_rwlock_rdlock(&st->lock);
    has = st->cluster != NULL;
    pthread_rwlock_unlock(&st->lock);
    if (!has) {
        *why = "no cluster loaded";
        return false;
    }
    if (atomic_load(&st->need_sync) && !atomic_load(&st->synced)) {
        *why = "waiting for the first sync with the API server";
        return false;
    }
    *why = "ok";
    return true;
}

void ext_state_remember_pod(struct ext_state *st, const char *uid, const char *ns, const char *name,
                            const struct pol_workload *wl, time_t now)
{
    struct pod *p;

    if (!uid || !*uid)
        return;
    pthread_mutex_lock(&st->pods_lock);
    p = pod_get(st, uid, ns, name, now, false);
    if (p && p->kind == POD_SEEN && pod_set_wl(p, wl))
        p->seen = now;
    if (p)
        p->filtered = now;
    pthread_mutex_unlock(&st->pods_lock);
}

void ext_state_note_filtered(struct ext_state *st, const char *uid, const char *ns,
                             const char *name, time_t now)
{
    struct pod *p;

    if (!uid || !*uid)
        return;
    pthread_mutex_lock(&st->pods_lock);
    p = pod_get(st, uid, ns, name, now, false);
    if (p && p->kind == POD_SEEN)
        p->seen = now;
    if (p)
        p->filtered = now;
    pthread_mutex_unlock(&st->pods_lock);
}

bool ext_state_was_filtered(struct ext_state *st, const char *uid, time_t now)
{
    struct pod *p;
    bool ok = false;

    if (!uid || !*uid)
        return false;
    pthread_mutex_lock(&st->pods_lock);
    p = pod_find(st, uid);
    /* <= ttl: a bind arrives right after its filter; the TTL is what a reservation lives */
    if (p && p->filtered && now >= p->filtered && now - p->filtered <= (time_t)st->ttl_s)
        ok = true;
    pthread_mutex_unlock(&st->pods_lock);
    return ok;
}

void ext_state_set_scheduler(struct ext_state *st, const char *name)
{
    size_t n = name ? strlen(name) : 0;

    if (n > EXT_SCHEDULER_NAME_MAX)
        n = EXT_SCHEDULER_NAME_MAX; /* config.c refuses longer names; this only keeps it safe */
    pthread_mutex_lock(&st->pods_lock);
    memcpy(st->scheduler_name, name ? name : "", n);
    st->scheduler_name[n] = '\0';
    pthread_mutex_unlock(&st->pods_lock);
}

void ext_state_note_scheduler(struct ext_state *st, const char *uid, const char *ns,
                              const char *name, const char *scheduler, time_t now)
{
    struct pod *p;

    if (!uid || !*uid || !scheduler)
        return;
    pthread_mutex_lock(&st->pods_lock);
    if (st->scheduler_name[0]) {
        bool foreign = strcmp(scheduler, st->scheduler_name) != 0;

        /* an entry only for a foreign pod, or one that already has one: a pod of ours gets its
         * entry from the filter, and the table stays as small as before for it */
        p = foreign ? pod_get(st, uid, ns, name, now, false) : pod_find(st, uid);
        if (p)
            p->foreign = foreign;
    }
    pthread_mutex_unlock(&st->pods_lock);
}

bool ext_state_is_foreign(struct ext_state *st, const char *uid)
{
    struct pod *p;
    bool yes;

    if (!uid || !*uid)
        return false;
    pthread_mutex_lock(&st->pods_lock);
    p = pod_find(st, uid);
    yes = p && p->foreign;
    pthread_mutex_unlock(&st->pods_lock);
    return yes;
}

bool ext_state_has_cluster(struct ext_state *st)
{
    bool ok;

    pthread_rwlock_rdlock(&st->lock);
    ok = st->cluster != NULL;
    pthread_rwlock_unlock(&st->lock);
    return ok;
}

size_t ext_state_expire(struct ext_state *st, time_t now)
{
    size_t n = 0;

    pthread_rwlock_wrlock(&st->lock);
    if (st->ledger)
        n = pol_ledger_expire(st->ledger, now);
    atomic_store(&st->next_expire, (long long)now + 1);
    pthread_rwlock_unlock(&st->lock);
    return n;
}

/* Run expiry at most once a second, from the read paths. */
static void maybe_expire(struct ext_state *st, time_t now)
{
    if ((long long)now >= atomic_load(&st->next_expire))
        ext_state_expire(st, now);
}

void ext_state_resolution_init(struct ext_state_resolution *r)
{
    memset(r, 0, sizeof(*r));
    pthread_mutex_init(&r->lock, NULL);
}

void ext_state_resolution_release(struct ext_state_resolution *r)
{
    if (!r)
        return;
    free(r->idx);
    free(r->known);
    pthread_mutex_destroy(&r->lock);
    memset(r, 0, sizeof(*r));
}

/* names -> node indices: borrowed from a resolution memo, or owned. */
struct resolved {
    const size_t *idx;
    const size_t *known;
    size_t nknown;
    size_t *own_idx;
    size_t *own_known;
};

static void resolved_release(struct resolved *r)
{
    free(r->own_idx);
    free(r->own_known);
}

/* Read lock held: fill idx (TOPO_NONE for unknown names) and known (the known indices); names
 * NULL: every node of the snapshot. */
static bool resolve_into(struct ext_state *st, const char *const *names, size_t n, size_t **idx,
                         size_t **known, size_t *nknown)
{
    if (!names)
        n = topo_cluster_node_count(st->cluster);
    *idx = malloc((n ? n : 1) * sizeof(**idx));
    *known = malloc((n ? n : 1) * sizeof(**known));
    *nknown = 0;
    if (!*idx || !*known) {
        free(*idx);
        free(*known);
        *idx = *known = NULL;
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        (*idx)[i] = names ? topo_cluster_find(st->cluster, names[i]) : i;
        if ((*idx)[i] != TOPO_NONE)
            (*known)[(*nknown)++] = (*idx)[i];
    }
    return true;
}

/* Read lock held. With res, its arrays are reused when they were made for this snapshot, or
 * replaced: a snapshot changes only under the write lock, so no reader of the old one is left,
 * and readers of this one never replace them (borrowed arrays stay valid while the read lock is
 * held). */
static enum tpx_code resolve(struct ext_state *st, const char *const *names, size_t n,
                             struct ext_state_resolution *res, struct resolved *out,
                             struct tpx_err *err)
{
    memset(out, 0, sizeof(*out));
    if (!res) {
        if (!resolve_into(st, names, n, &out->own_idx, &out->own_known, &out->nknown))
            return tpx_err_set(err, TPX_ENOMEM, "out of memory for %zu candidates", n);
        out->idx = out->own_idx;
        out->known = out->own_known;
        return TPX_OK;
    }
    pthread_mutex_lock(&res->lock);
    if (res->gen != st->gen || res->n != n || !res->idx) {
        size_t *idx, *known, nknown;

        if (!resolve_into(st, names, n, &idx, &known, &nknown)) {
            pthread_mutex_unlock(&res->lock);
            return tpx_err_set(err, TPX_ENOMEM, "out of memory for %zu candidates", n);
        }
        free(res->idx);
        free(res->known);
        res->idx = idx;
        res->known = known;
        res->nknown = nknown;
        res->n = n;
        res->gen = st->gen;
    }
    out->idx = res->idx;
    out->known = res->known;
    out->nknown = res->nknown;
    pthread_mutex_unlock(&res->lock);
    return TPX_OK;
}

/* pol_gang_hold under the write lock, among the named candidates (NULL: every node, the group
 * waiting). create false: only move a hold made before any member was bound (no gang). */
static enum tpx_code gang_hold(struct ext_state *st, const struct pol_workload *wl,
                               const char *const *names, size_t n, struct ext_state_resolution *res,
                               time_t now, bool create, bool *held, struct tpx_err *err)
{
    struct resolved rv = {0};
    enum tpx_code rc = TPX_OK;
    bool early = create;

    if (!create) { /* most filters: under the shared lock, nothing to move */
        pthread_rwlock_rdlock(&st->lock);
        early = st->ledger && pol_group_held_early(st->ledger, wl->group);
        pthread_rwlock_unlock(&st->lock);
        if (!early)
            return TPX_OK;
    }
    pthread_rwlock_wrlock(&st->lock);
    if (st->ledger && st->cluster && (create || pol_group_held_early(st->ledger, wl->group)) &&
        (rc = resolve(st, names, n, res, &rv, err)) == TPX_OK) {
        struct pol_scope_memo *m = memo_take(st);

        rc = pol_gang_hold(st->ledger, m, wl, rv.known, rv.nknown, now, st->ttl_s, held, err);
        memo_give(st, m);
        if (rc == TPX_OK && (names || (held && *held))) /* made while waiting, or a cycle came */
            pol_group_set_waiting(st->ledger, wl->group, !names);
    }
    pthread_rwlock_unlock(&st->lock);
    resolved_release(&rv);
    return rc;
}

enum tpx_code ext_state_gang_hold(struct ext_state *st, const struct pol_workload *wl, time_t now,
                                  bool *held, struct tpx_err *err)
{
    maybe_expire(st, now); /* pol_gang_hold sets *held */
    return gang_hold(st, wl, NULL, 0, NULL, now, true, held, err);
}

enum tpx_code ext_state_filter_res(struct ext_state *st, const struct pol_workload *wl,
                                   const char *const *names, size_t n,
                                   struct ext_state_resolution *res, time_t now,
                                   struct ext_state_verdicts *out, struct tpx_err *err)
{
    struct resolved rv = {0};
    enum tpx_code rc = TPX_OK;

    memset(out, 0, sizeof(*out));
    maybe_expire(st, now);
    if (wl->has_intent && wl->group[0] && wl->group_size > 1 &&
        (rc = gang_hold(st, wl, names, n, res, now, wl->gang, NULL, err)) != TPX_OK)
        return rc;
    out->n = n;
    out->reason = malloc((n ? n : 1) * sizeof(*out->reason));
    if (!out->reason) {
        ext_state_verdicts_release(out);
        return tpx_err_set(err, TPX_ENOMEM, "out of memory for %zu candidates", n);
    }
    pthread_rwlock_rdlock(&st->lock);
    if (!st->cluster) {
        rc = tpx_err_set(err, TPX_ENOENT, "no cluster loaded yet");
        goto out;
    }
    rc = resolve(st, names, n, res, &rv, err);
    if (rc != TPX_OK)
        goto out;
    {
        struct pol_scope_memo *m = memo_take(st);

        rc = pol_filter_memo(st->ledger, m, wl, rv.known, rv.nknown, now, &out->res, err);
        memo_give(st, m);
    }
    if (rc != TPX_OK)
        goto out;
    /* every name known (the usual list): the policy's verdicts are the answer's, moved over */
    if (rv.nknown == n) {
        out->verdict = out->res.verdict;
        out->res.verdict = NULL;
    } else if (!(out->verdict = malloc((n ? n : 1) * sizeof(*out->verdict)))) {
        rc = tpx_err_set(err, TPX_ENOMEM, "out of memory for %zu candidates", n);
        goto out;
    }
    /* a ComputeDomain takes no pipeline stages: say its shortfall as plan does */
    for (size_t k = 0; k < out->res.nreasons; k++) {
        char why[512];
        char *copy;

        if (obj_dra_domain_reason(wl, out->res.reasons[k], why, sizeof(why)) &&
            (copy = strdup(why)) != NULL) {
            free(out->res.reasons[k]);
            out->res.reasons[k] = copy;
        }
    }
    if (rv.nknown == n && out->res.nfit == n) { /* every name known and passing */
        memset(out->reason, 0, (n ? n : 1) * sizeof(*out->reason));
        out->nfit = n;
        goto out;
    }
    for (size_t i = 0, k = 0; i < n; i++) {
        out->reason[i] = NULL;
        if (rv.idx[i] == TOPO_NONE) {
            out->verdict[i] = POL_FAIL;
            out->reason[i] = EXT_UNKNOWN_NODE_REASON;
            out->nunknown++;
            continue;
        }
        if (out->res.verdict)
            out->verdict[i] = out->res.verdict[k];
        if (out->verdict[i] == POL_FIT)
            out->nfit++;
        else if (out->res.reason && out->res.reason[k] < out->res.nreasons)
            out->reason[i] = out->res.reasons[out->res.reason[k]];
        else
            out->reason[i] = "rejected by topology policy";
        k++;
    }
out:
    pthread_rwlock_unlock(&st->lock);
    resolved_release(&rv);
    if (rc != TPX_OK)
        ext_state_verdicts_release(out);
    return rc;
}

void ext_state_verdicts_release(struct ext_state_verdicts *v)
{
    free(v->verdict);
    free(v->reason);
    pol_filter_result_release(&v->res);
    memset(v, 0, sizeof(*v));
}

enum tpx_code ext_state_score_res(struct ext_state *st, const struct pol_workload *wl,
                                  const char *const *names, size_t n,
                                  struct ext_state_resolution *res, time_t now, int *scores,
                                  struct tpx_err *err)
{
    struct resolved rv = {0};
    int *ks = NULL;
    enum tpx_code rc = TPX_OK;

    maybe_expire(st, now);
    pthread_rwlock_rdlock(&st->lock);
    if (!st->cluster) {
        rc = tpx_err_set(err, TPX_ENOENT, "no cluster loaded yet");
        goto out;
    }
    rc = resolve(st, names, n, res, &rv, err);
    if (rc != TPX_OK)
        goto out;
    /* every name known (the usual list): the scores go straight into the answer's array */
    if (rv.nknown < n && !(ks = calloc(n, sizeof(*ks)))) {
        rc = tpx_err_set(err, TPX_ENOMEM, "out of memory for %zu candidates", n);
        goto out;
    }
    {
        struct pol_scope_memo *m = memo_take(st);

        rc = pol_score_memo(st->ledger, m, wl, rv.known, rv.nknown, now, ks ? ks : scores, err);
        memo_give(st, m);
    }
    if (rc != TPX_OK)
        goto out;
    for (size_t i = 0, k = 0; ks && i < n; i++)
        scores[i] = rv.idx[i] != TOPO_NONE ? ks[k++] : 0;
    for (size_t i = 0; i < n; i++) /* one pass without a branch (vectorised) */
        scores[i] = scores[i] < 0 ? 0 : scores[i] > 10 ? 10 : scores[i];
out:
    pthread_rwlock_unlock(&st->lock);
    resolved_release(&rv);
    free(ks);
    return rc;
}

enum tpx_code ext_state_bind(struct ext_state *st, const char *uid, const char *name,
                             const char *node_name, time_t now, struct ext_state_bind_out *out,
                             struct tpx_err *err)
{
    struct pol_placement where;
    enum tpx_code rc = TPX_OK;
    struct pod *p;
    size_t i;

    memset(out, 0, sizeof(*out));
    memset(&where, 0, sizeof(where));
    pthread_rwlock_wrlock(&st->lock);
    pthread_mutex_lock(&st->pods_lock);
    if (!st->cluster) {
        rc = tpx_err_set(err, TPX_ENOENT, "no cluster loaded yet");
        goto out;
    }
    if (st->ledger)
        pol_ledger_expire(st->ledger, now);
    i = topo_cluster_find(st->cluster, node_name);
    if (i == TOPO_NONE) {
        rc = tpx_err_set(err, TPX_ENOENT, "%s: '%s'", EXT_UNKNOWN_NODE_REASON, node_name);
        goto out;
    }
    p = pod_find(st, uid);
    out->known = p && p->has_wl;
    if (!p) {
        p = pod_get(st, uid, NULL, name, now, true);
        if (!p) {
            rc = tpx_err_set(err, TPX_ENOMEM, "out of memory");
            goto out;
        }
    }
    out->already = pod_node(p) && strcmp(p->bound_node, node_name) == 0;
    /* issue 21, item 6: a pod without intent counts its accelerators, so they must be free */
    if (!pod_node(p) && !pod_intent(p) && st->ledger &&
        p->wl_accel > pol_ledger_make_room(st->ledger, i, p->wl_accel)) {
        rc = tpx_err_set(err, TPX_EINVAL,
                         "node '%s' has %u free accelerators and pod '%s' asks for %u; refusing "
                         "to bind it",
                         node_name, pol_ledger_node_free(st->ledger, i), pod_name(p), p->wl_accel);
        goto out;
    }
    rc = place(st, p, i, now, false, NULL, 0, &where, err);
    if (rc != TPX_OK)
        goto out;
    if (!out->already)
        p->booked_at = now;
    if (st->age_bound && !pod_intent(p)) { /* see ext_state_set_bound_ageing() */
        node_unref(st, pod_node(p));
        set_kind(st, p, POD_SEEN);
        pod_forget(st, p);
        goto out;
    }
    out->intent = p->kind == POD_COMMITTED;
    if (out->intent) {
        struct pol_workload wl;

        tpx_str_copy(out->rack, sizeof(out->rack), where.rack);
        tpx_str_copy(out->domain, sizeof(out->domain), where.domain);
        memset(&wl, 0, sizeof(wl));
        if (pod_intent(p))
            ext_wlpack_unpack(p->wl_packed, &wl);
        tpx_str_copy(out->group, sizeof(out->group), wl.group);
        tpx_str_copy(out->display, sizeof(out->display), wl.display);
        out->stage = where.stage;
        out->rank_first = where.rank_first;
        out->rank_last = where.rank_last;
    }
out:
    pthread_mutex_unlock(&st->pods_lock);
    pthread_rwlock_unlock(&st->lock);
    return rc;
}

bool ext_state_read(struct ext_state *st,
                    void (*fn)(void *ctx, const struct pol_ledger *l, size_t pods_seen), void *ctx)
{
    bool ok = false;
    size_t npods;

    pthread_mutex_lock(&st->pods_lock);
    npods = tpx_map_len(&st->pods);
    pthread_mutex_unlock(&st->pods_lock);
    pthread_rwlock_rdlock(&st->lock);
    if (st->ledger) {
        fn(ctx, st->ledger, npods);
        ok = true;
    }
    pthread_rwlock_unlock(&st->lock);
    return ok;
}
