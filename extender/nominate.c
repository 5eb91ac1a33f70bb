/* SPDX-License-Identifier: Apache-2.0 */
/* extender/nominate.c - nominatedNodeName for the pending members of a group topox holds room
 * for (nominate.h says why). The watch thread keeps the pending members (uid -> struct member);
 * binds, gang holds and a group's second of waiting (hold_waiting) mark their group dirty; WORKERS
 * threads of its own, each with its own API client, take the dirty groups one at a time (never
 * one group on two threads): the slots state holds for it, one member per slot
 * (ext_nominate_assign), and a merge PATCH of pods/status for each member whose nomination
 * differs. Several, because each PATCH is an API round trip (tens of ms on a busy server) and
 * kube-scheduler takes the next pods from its queue meanwhile: with one thread, bench/scheduler
 * saw most nominations land after their pod's cycle. Every second the first worker also looks
 * again at the groups of the members it nominated, so a hold that expired or was let go has its
 * nominations cleared, and at the groups whose second of waiting is over. */
#include "extender/nominate.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/map.h"
#include "kube/bodies.h"
#include "kube/client.h"
#include "common/banned.h"

#define ECHO_S 5       /* a nomination we set is not set again this soon (the watch lags) */
#define RETRY_S 30     /* a member whose PATCH failed is not tried again this soon */
#define LOG_EVERY_S 60 /* one failure line per this, with the count of the others */
#define SWEEP_MS 1000  /* the groups we nominated in are looked at again this often */
#define BUSY_S 2.0     /* a member filtered this recently is in a running cycle */
#define GROUP_MAX 4096 /* members of one group looked at per pass */
#define HOLDS_MAX 1024 /* held slots of one group read per pass */
#define WORKERS 4      /* groups looked at, and PATCHes in flight, at once */
#define WAITING_S 1.0  /* a whole group unfiltered this long waits in kube-scheduler's queue */

/* ---- the pure part ------------------------------------------------------------------------ */

static bool same(const char *a, const char *b)
{
    return strcmp(a ? a : "", b ? b : "") == 0;
}

/* Members without an index, in name order (then their position, so equal names stay put). */
static const struct ext_nom_member *sort_base;

static int by_name(const void *a, const void *b)
{
    size_t i = *(const size_t *)a, j = *(const size_t *)b;
    int c = strcmp(sort_base[i].name ? sort_base[i].name : "",
                   sort_base[j].name ? sort_base[j].name : "");

    return c ? c : (i > j) - (i < j);
}

void ext_nominate_assign(const struct ext_nom_slot *slots, size_t nslots,
                         const struct ext_nom_member *members, size_t nmembers, long *out)
{
    static pthread_mutex_t sort_mu = PTHREAD_MUTEX_INITIALIZER;
    bool *taken = calloc(nslots ? nslots : 1, sizeof(*taken));
    size_t *order = malloc((nmembers ? nmembers : 1) * sizeof(*order));
    size_t nfree = 0, next = 0;

    for (size_t i = 0; i < nmembers; i++)
        out[i] = -1;
    if (!taken || !order) {
        free(taken);
        free(order);
        return; /* out of memory: nobody is nominated, which is always safe */
    }
    /* indexed members: their own slot only */
    for (size_t i = 0; i < nmembers; i++) {
        if (members[i].index < 0)
            continue;
        for (size_t s = 0; s < nslots; s++) {
            if (!taken[s] && slots[s].slot == (unsigned)members[i].index) {
                taken[s] = true;
                out[i] = (long)s;
                break;
            }
        }
    }
    /* members without an index keep the slot their nomination names */
    for (size_t i = 0; i < nmembers; i++) {
        if (members[i].index >= 0 || !members[i].current || !members[i].current[0])
            continue;
        for (size_t s = 0; s < nslots; s++) {
            if (!taken[s] && same(slots[s].node, members[i].current)) {
                taken[s] = true;
                out[i] = (long)s;
                break;
            }
        }
    }
    /* the rest, by name, take the slots left in slot order */
    for (size_t i = 0; i < nmembers; i++) {
        if (members[i].index < 0 && out[i] < 0 && !members[i].busy)
            order[nfree++] = i;
    }
    pthread_mutex_lock(&sort_mu);
    sort_base = members;
    qsort(order, nfree, sizeof(*order), by_name);
    pthread_mutex_unlock(&sort_mu);
    for (size_t k = 0; k < nfree; k++) {
        while (next < nslots && taken[next])
            next++;
        if (next == nslots)
            break;
        taken[next] = true;
        out[order[k]] = (long)next;
    }
    free(taken);
    free(order);
}

/* ---- the running part --------------------------------------------------------------------- */

struct member {
    char *uid, *ns, *name, *group;
    int index;
    char *current; /* status.nominatedNodeName as last seen or set; NULL: none */
    char *ours;    /* what we set last; NULL: nothing */
    time_t ours_at;
    time_t retry_at;    /* a failed PATCH: not before then */
    double filtered_at; /* when topox filtered it (tpx_mono_s); 0: not lately */
    bool bound;         /* our bind went through: never a nominee again, whatever a late watch event
                         * still says, until the watch reports it bound (ext_nominator_forget) */
    struct pol_workload *wl; /* its workload as /filter reads it, while it is in kube-scheduler's
                              * queue (not gated); NULL otherwise */
    double waiting_at;       /* when its group may be held as waiting (tpx_mono_s); 0: looked at */
    bool filtered;           /* topox has filtered it once: a cycle of its group has started */
};

/* A member's copy for one pass, outside the lock. */
struct snap {
    char *uid, *ns, *name;
    int index;
    char *current, *ours;
    time_t ours_at, retry_at;
    bool busy;
};

/* What take_members() saw of a group: whether it may be held as waiting now, and its workload
 * (copied from a member). */
struct group_view {
    bool due;      /* a member's waiting time is over */
    bool fresh;    /* a member's is not: the group is not whole for WAITING_S yet */
    bool any_busy; /* a member's cycle runs, or has run */
    size_t queued; /* members in kube-scheduler's queue (not gated) */
    struct pol_workload wl;
};

/* One worker thread: its API client, and one group's held slots and their nodes' names. */
struct worker {
    struct ext_nominator *n;
    struct kube_client *client;
    pthread_t th;
    bool started;
    bool sweeper; /* the first: also sweeps */
    struct pol_hold holds[HOLDS_MAX];
    char node_names[HOLDS_MAX][POL_KEY_MAX];
    size_t nholds;
    const char *reading; /* the group read_holds() reads */
};

struct ext_nominator {
    struct ext_state *st;
    char *scheduler;
    struct worker *w;   /* WORKERS of them */
    pthread_mutex_t mu; /* everything below */
    pthread_cond_t cv;
    struct tpx_map members; /* uid -> struct member */
    char **dirty;           /* group keys to look at, owned */
    size_t ndirty, adirty;
    struct tpx_map dirty_set; /* key -> 1, keys borrowed from dirty[] */
    struct tpx_map busy;      /* groups a worker is looking at; keys borrowed from the worker */
    struct ext_nominator_stats stats;
    bool nominated;    /* some member named a node we set, at the last sweep or PATCH */
    bool hold_waiting; /* ext_nominator_hold_waiting() */
    time_t logged_at;
    unsigned long unlogged;
    atomic_bool stopping;
};

static void member_free(struct member *m)
{
    if (!m)
        return;
    free(m->uid);
    free(m->ns);
    free(m->name);
    free(m->group);
    free(m->current);
    free(m->ours);
    free(m->wl);
    free(m);
}

/* *field = a copy of s (NULL or "": NULL); false when out of memory. */
static bool set_str(char **field, const char *s)
{
    char *copy = NULL;

    if (s && *s && !(copy = strdup(s)))
        return false;
    free(*field);
    *field = copy;
    return true;
}

/* Mark group dirty. mu held. */
static void mark(struct ext_nominator *n, const char *group)
{
    struct tpx_err e = TPX_ERR_INIT;
    char *key;

    if (!group || !*group || tpx_map_get(&n->dirty_set, group))
        return;
    if (n->ndirty == n->adirty) {
        size_t na = n->adirty ? 2 * n->adirty : 16;
        char **nd = realloc(n->dirty, na * sizeof(*nd));

        if (!nd)
            return;
        n->dirty = nd;
        n->adirty = na;
    }
    key = strdup(group);
    if (!key)
        return;
    if (tpx_map_put(&n->dirty_set, key, n, &e) != TPX_OK) {
        free(key);
        return;
    }
    n->dirty[n->ndirty++] = key;
    pthread_cond_signal(&n->cv);
}

void ext_nominator_touch(struct ext_nominator *n, const char *group)
{
    if (!n || !group || !*group)
        return;
    pthread_mutex_lock(&n->mu);
    mark(n, group);
    pthread_mutex_unlock(&n->mu);
}

void ext_nominator_hold_waiting(struct ext_nominator *n, bool on)
{
    if (!n)
        return;
    pthread_mutex_lock(&n->mu);
    n->hold_waiting = on;
    pthread_mutex_unlock(&n->mu);
}

static void forget_locked(struct ext_nominator *n, const char *uid)
{
    union tpx_map_val old;

    if (uid && tpx_map_del(&n->members, uid, &old))
        member_free(old.ptr);
}

void ext_nominator_forget(struct ext_nominator *n, const char *uid)
{
    if (!n || !uid)
        return;
    pthread_mutex_lock(&n->mu);
    forget_locked(n, uid);
    pthread_mutex_unlock(&n->mu);
}

/* The record of uid, made (with only its uid) when the watch has not shown the pod yet; NULL when
 * out of memory. mu held. */
static struct member *record(struct ext_nominator *n, const char *uid)
{
    struct tpx_err e = TPX_ERR_INIT;
    struct member *m = tpx_map_get(&n->members, uid);

    if (m)
        return m;
    m = calloc(1, sizeof(*m));
    if (!m || !(m->uid = strdup(uid)) || tpx_map_put(&n->members, m->uid, m, &e) != TPX_OK) {
        member_free(m);
        return NULL;
    }
    m->index = -2; /* differs from any index: the first ext_nominator_pending() marks its group */
    return m;
}

void ext_nominator_pending(struct ext_nominator *n, const char *uid, const char *ns,
                           const char *name, const char *scheduler, bool deleting,
                           const char *group, int index, const char *current,
                           const struct pol_workload *queued)
{
    struct member *m;
    bool changed;

    if (!n || !uid || !*uid)
        return;
    pthread_mutex_lock(&n->mu);
    if (deleting || !group || !*group || !ns || !*ns || !name || !*name ||
        (n->scheduler[0] && !same(scheduler, n->scheduler))) {
        forget_locked(n, uid);
        pthread_mutex_unlock(&n->mu);
        return;
    }
    m = record(n, uid);
    if (!m || m->bound) { /* out of memory, or an event from before our bind */
        pthread_mutex_unlock(&n->mu);
        return;
    }
    changed = m->index != index || !same(m->group, group) || !same(m->current, current);
    if (!set_str(&m->ns, ns) || !set_str(&m->name, name) || !set_str(&m->group, group) ||
        !set_str(&m->current, current)) {
        forget_locked(n, uid);
        pthread_mutex_unlock(&n->mu);
        return;
    }
    m->index = index;
    if (!queued) {
        free(m->wl); /* gated: not waiting in kube-scheduler's queue */
        m->wl = NULL;
        m->waiting_at = 0;
    } else if (n->hold_waiting && !m->wl && (m->wl = malloc(sizeof(*m->wl))) != NULL) {
        *m->wl = *queued; /* queued now: its group may be held once it has waited */
        m->waiting_at = tpx_mono_s() + WAITING_S;
    }
    if (changed)
        mark(n, group);
    pthread_mutex_unlock(&n->mu);
}

void ext_nominator_bound(struct ext_nominator *n, const char *uid)
{
    struct member *m;

    if (!n || !uid || !*uid)
        return;
    pthread_mutex_lock(&n->mu);
    m = record(n, uid); /* made when the watch has not shown it yet: it never shows up pending */
    if (m)
        m->bound = true;
    pthread_mutex_unlock(&n->mu);
}

void ext_nominator_filtered(struct ext_nominator *n, const char *uid)
{
    struct member *m;

    if (!n || !uid || !*uid)
        return;
    pthread_mutex_lock(&n->mu);
    m = record(n, uid);
    if (m)
        m->filtered_at = tpx_mono_s();
    m->filtered = true;
    pthread_mutex_unlock(&n->mu);
}

void ext_nominator_prune(struct ext_nominator *n, bool (*listed)(void *ctx, const char *uid),
                         void *ctx)
{
    union tpx_map_val v;

    if (!n)
        return;
    pthread_mutex_lock(&n->mu);
    for (size_t pos = 0; tpx_map_next(&n->members, &pos, NULL, &v);) {
        struct member *m = v.ptr;

        if (!listed(ctx, m->uid))
            forget_locked(n, m->uid);
    }
    pthread_mutex_unlock(&n->mu);
}

void ext_nominator_get_stats(struct ext_nominator *n, struct ext_nominator_stats *out)
{
    pthread_mutex_lock(&n->mu);
    *out = n->stats;
    out->pending = tpx_map_len(&n->members);
    pthread_mutex_unlock(&n->mu);
}

static void snap_release(struct snap *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(s[i].uid);
        free(s[i].ns);
        free(s[i].name);
        free(s[i].current);
        free(s[i].ours);
    }
    free(s);
}

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

/* Copies of group's members (at most GROUP_MAX), and what they say of the group (*gv); members
 * whose waiting second is over are marked looked at (gv->due). NULL when none or out of memory. */
static struct snap *take_members(struct ext_nominator *n, const char *group, size_t *count,
                                 struct group_view *gv)
{
    struct snap *out = NULL;
    size_t k = 0, want = 0;
    union tpx_map_val v;
    double now = tpx_mono_s();

    *count = 0;
    memset(gv, 0, sizeof(*gv));
    pthread_mutex_lock(&n->mu);
    for (size_t pos = 0; tpx_map_next(&n->members, &pos, NULL, &v);) {
        struct member *m = v.ptr;

        if (m->bound || !same(m->group, group))
            continue;
        want++;
        gv->queued += m->wl != NULL;
        gv->any_busy =
            gv->any_busy || m->filtered || (m->filtered_at > 0 && now - m->filtered_at < BUSY_S);
        gv->fresh = gv->fresh || now < m->waiting_at;
        if (m->wl && m->waiting_at > 0 && now >= m->waiting_at) {
            if (!gv->due)
                gv->wl = *m->wl;
            gv->due = true;
            m->waiting_at = 0; /* looked at once: process() decides for it now (hold_waiting) */
        }
    }
    if (want > GROUP_MAX)
        want = GROUP_MAX;
    if (want == 0 || !(out = calloc(want, sizeof(*out)))) {
        pthread_mutex_unlock(&n->mu);
        return NULL;
    }
    for (size_t pos = 0; k < want && tpx_map_next(&n->members, &pos, NULL, &v);) {
        const struct member *m = v.ptr;
        struct snap *s;

        if (m->bound || !same(m->group, group))
            continue;
        s = &out[k++];
        s->uid = strdup(m->uid);
        s->ns = strdup(m->ns);
        s->name = strdup(m->name);
        s->current = dup_or_null(m->current);
        s->ours = dup_or_null(m->ours);
        s->index = m->index;
        s->ours_at = m->ours_at;
        s->retry_at = m->retry_at;
        s->busy = m->filtered_at > 0 && tpx_mono_s() - m->filtered_at < BUSY_S;
        if (!s->uid || !s->ns || !s->name || (m->current && !s->current) || (m->ours && !s->ours)) {
            k--; /* out of memory: this member waits for the next pass */
            free(s->uid);
            free(s->ns);
            free(s->name);
            free(s->current);
            free(s->ours);
            memset(s, 0, sizeof(*s));
        }
    }
    pthread_mutex_unlock(&n->mu);
    *count = k;
    return out;
}

/* One PATCH (node NULL: clear) and its bookkeeping. */
static void patch(struct worker *w, const struct snap *s, const char *node)
{
    struct ext_nominator *n = w->n;
    struct tpx_err e = TPX_ERR_INIT;
    enum tpx_code rc = kube_nominate(w->client, s->ns, s->name, node, &e);
    time_t now = time(NULL);
    struct member *m;

    pthread_mutex_lock(&n->mu);
    m = tpx_map_get(&n->members, s->uid);
    if (rc == TPX_OK) {
        if (node)
            n->stats.set++;
        else
            n->stats.cleared++;
        n->nominated = n->nominated || node;
        if (m) {
            set_str(&m->current, node);
            set_str(&m->ours, node);
            m->ours_at = now;
            m->retry_at = 0;
        }
    } else {
        n->stats.failed++;
        if (m)
            m->retry_at = now + RETRY_S;
        if (now - n->logged_at >= LOG_EVERY_S) {
            TPX_LOG(TPX_WARN, "nomination not written", TPX_S("pod", s->name), TPX_S("ns", s->ns),
                    TPX_S("node", node ? node : "(clear)"), TPX_S("err", e.msg),
                    TPX_I("others_since_last", (long long)n->unlogged));
            n->logged_at = now;
            n->unlogged = 0;
        } else {
            n->unlogged++;
        }
    }
    pthread_mutex_unlock(&n->mu);
}

/* ext_state_read() callback: the held slots of w->reading, with their nodes' names copied. */
static void read_holds(void *ctx, const struct pol_ledger *l, size_t pods_seen)
{
    struct worker *w = ctx;
    const struct topo_cluster *c = pol_ledger_cluster(l);

    (void)pods_seen;
    w->nholds = pol_group_holds(l, w->reading, w->holds, HOLDS_MAX);
    if (w->nholds > HOLDS_MAX)
        w->nholds = HOLDS_MAX;
    for (size_t i = 0; i < w->nholds; i++)
        snprintf(w->node_names[i], POL_KEY_MAX, "%s", topo_cluster_node(c, w->holds[i].node)->name);
}

/* A group waiting in kube-scheduler's queue: every member (a gang's minCount, else the group's
 * size) pending and not gated, seen so WAITING_S ago or more (the last one too), none ever
 * filtered (no cycle of its has started), no room held for it yet. Hold its room now, as its first
 * member's filter would, so that its members are nominated before their cycles: each then costs
 * kube-scheduler one node's filters, with no scan and no scoring (evaluateNominatedNode). Looked
 * at once per member: take_members() has cleared the due members, whatever is decided here.
 * True when a hold was made. */
static bool hold_waiting(struct ext_nominator *n, const char *group, const struct group_view *gv,
                         size_t held_slots)
{
    struct tpx_err e = TPX_ERR_INIT;
    bool held = false;

    if (!gv->any_busy && !gv->fresh && held_slots == 0 && gv->wl.group_size > 1 &&
        gv->queued >= gv->wl.group_size &&
        ext_state_gang_hold(n->st, &gv->wl, time(NULL), &held, &e) != TPX_OK)
        TPX_LOG(TPX_WARN, "waiting group not held", TPX_S("group", group), TPX_S("err", e.msg));
    if (held) {
        pthread_mutex_lock(&n->mu);
        n->stats.waiting_holds++;
        pthread_mutex_unlock(&n->mu);
    }
    return held;
}

/* Nominate group's pending members to the slots held for it; clear what we set where no slot
 * is held any more. */
static void process(struct worker *w, const char *group)
{
    struct ext_nominator *n = w->n;
    time_t now = time(NULL);
    size_t nm = 0;
    struct group_view gv;
    struct snap *s = take_members(n, group, &nm, &gv);
    size_t nh;
    struct ext_nom_slot *slots;
    struct ext_nom_member *mem;
    long *pick;

    if (!s)
        return;
    w->reading = group;
    w->nholds = 0;
    ext_state_read(n->st, read_holds, w);
    if (gv.due && hold_waiting(n, group, &gv, w->nholds))
        ext_state_read(n->st, read_holds, w);
    nh = w->nholds;
    slots = malloc((nh ? nh : 1) * sizeof(*slots));
    mem = malloc(nm * sizeof(*mem));
    pick = malloc(nm * sizeof(*pick));
    if (!slots || !mem || !pick)
        goto out;
    for (size_t i = 0; i < nh; i++)
        slots[i] = (struct ext_nom_slot){w->holds[i].slot, w->node_names[i]};
    for (size_t i = 0; i < nm; i++)
        mem[i] = (struct ext_nom_member){s[i].name, s[i].index, s[i].current, s[i].busy};
    ext_nominate_assign(slots, nh, mem, nm, pick);
    for (size_t i = 0; i < nm && !atomic_load(&n->stopping); i++) {
        const char *want = pick[i] >= 0 ? slots[pick[i]].node : NULL;

        if (now < s[i].retry_at)
            continue;
        if (want) {
            if (same(want, s[i].current) || (same(want, s[i].ours) && now - s[i].ours_at < ECHO_S))
                continue;
            patch(w, &s[i], want);
        } else if (s[i].ours && same(s[i].ours, s[i].current)) {
            patch(w, &s[i], NULL); /* its hold went: clear what we set, nothing else */
        }
    }
out:
    free(slots);
    free(mem);
    free(pick);
    snap_release(s, nm);
}

/* Mark the groups of members we nominated (or failed to), so expired holds are seen, and of
 * members whose cycle is over. mu held. */
static void sweep(struct ext_nominator *n)
{
    union tpx_map_val v;

    n->nominated = false;
    for (size_t pos = 0; tpx_map_next(&n->members, &pos, NULL, &v);) {
        struct member *m = v.ptr;

        if (m->bound)
            continue;
        if (m->waiting_at > 0 && tpx_mono_s() >= m->waiting_at)
            mark(n, m->group); /* its group may be waiting: process() looks */
        n->nominated = n->nominated || m->ours;
        if (m->ours || m->retry_at) {
            mark(n, m->group);
        } else if (m->filtered_at > 0 && tpx_mono_s() - m->filtered_at >= BUSY_S) {
            m->filtered_at = 0; /* its cycle is over: once, a node if one is left for it */
            mark(n, m->group);
        }
    }
}

/* The first dirty group no worker is looking at, taken off the list and marked busy; its key is
 * the caller's. NULL: none (or out of memory: it stays dirty). mu held. */
static char *take_dirty(struct ext_nominator *n)
{
    struct tpx_err e = TPX_ERR_INIT;
    union tpx_map_val old;

    for (size_t i = 0; i < n->ndirty; i++) {
        char *g = n->dirty[i];

        if (tpx_map_get(&n->busy, g))
            continue;
        if (tpx_map_put(&n->busy, g, n, &e) != TPX_OK)
            return NULL;
        tpx_map_del(&n->dirty_set, g, &old);
        memmove(&n->dirty[i], &n->dirty[i + 1], (n->ndirty - i - 1) * sizeof(*n->dirty));
        n->ndirty--;
        return g;
    }
    return NULL;
}

static bool past(const struct timespec *t)
{
    struct timespec now;

    clock_gettime(CLOCK_REALTIME, &now);
    return now.tv_sec > t->tv_sec || (now.tv_sec == t->tv_sec && now.tv_nsec >= t->tv_nsec);
}

static void *loop(void *arg)
{
    struct worker *w = arg;
    struct ext_nominator *n = w->n;
    struct timespec next_sweep = tpx_deadline_ms(SWEEP_MS);

    pthread_mutex_lock(&n->mu);
    while (!atomic_load(&n->stopping)) {
        union tpx_map_val old;
        char *group;

        if (past(&next_sweep)) {
            if (w->sweeper && n->nominated) {
                /* holds that lapsed are let go even while no filter comes to do it */
                pthread_mutex_unlock(&n->mu);
                ext_state_expire(n->st, time(NULL));
                pthread_mutex_lock(&n->mu);
            }
            if (w->sweeper)
                sweep(n);
            next_sweep = tpx_deadline_ms(SWEEP_MS);
        }
        group = take_dirty(n);
        if (!group) {
            /* until a mark() or a worker's end signals, or the sweep is due: not
             * tpx_cond_wait_stop(), which sleeps through signals to the deadline (a nomination
             * then waited up to SWEEP_MS, and most landed after their pod's cycle) */
            pthread_cond_timedwait(&n->cv, &n->mu, &next_sweep);
            continue;
        }
        pthread_mutex_unlock(&n->mu);
        if (!atomic_load(&n->stopping))
            process(w, group);
        pthread_mutex_lock(&n->mu);
        tpx_map_del(&n->busy, group, &old);
        free(group);
        pthread_cond_broadcast(&n->cv); /* a group skipped while busy may be taken now */
    }
    pthread_mutex_unlock(&n->mu);
    return NULL;
}

static bool is_stopping(void *ctx)
{
    struct ext_nominator *n = ctx;

    return atomic_load(&n->stopping);
}

struct ext_nominator *ext_nominator_new(const struct kube_config *kcfg, struct ext_state *st,
                                        const char *scheduler, struct tpx_err *err)
{
    struct ext_nominator *n = calloc(1, sizeof(*n));
    int rc;

    if (!n) {
        tpx_err_set(err, TPX_ENOMEM, "out of memory for the nominator");
        return NULL;
    }
    n->st = st;
    pthread_mutex_init(&n->mu, NULL);
    pthread_cond_init(&n->cv, NULL);
    atomic_init(&n->stopping, false);
    n->scheduler = strdup(scheduler ? scheduler : "");
    if (!n->scheduler) {
        tpx_err_set(err, TPX_ENOMEM, "out of memory for the nominator");
        goto fail;
    }
    n->w = calloc(WORKERS, sizeof(*n->w));
    if (!n->w) {
        tpx_err_set(err, TPX_ENOMEM, "out of memory for the nominator");
        goto fail;
    }
    for (size_t i = 0; i < WORKERS; i++) {
        struct worker *w = &n->w[i];

        w->n = n;
        w->sweeper = i == 0;
        w->client = kube_client_new(kcfg, err);
        if (!w->client)
            goto fail;
        kube_set_cancel(w->client, is_stopping, n);
        rc = pthread_create(&w->th, NULL, loop, w);
        if (rc != 0) {
            tpx_err_errno(err, rc, "cannot start the nominator threads");
            goto fail;
        }
        w->started = true;
    }
    return n;
fail:
    tpx_err_prefix(err, "nominator");
    ext_nominator_free(n);
    return NULL;
}

void ext_nominator_free(struct ext_nominator *n)
{
    union tpx_map_val v;

    if (!n)
        return;
    pthread_mutex_lock(&n->mu);
    atomic_store(&n->stopping, true);
    pthread_cond_broadcast(&n->cv);
    pthread_mutex_unlock(&n->mu);
    for (size_t i = 0; n->w && i < WORKERS; i++) {
        if (n->w[i].started)
            pthread_join(n->w[i].th, NULL);
    }
    for (size_t pos = 0; tpx_map_next(&n->members, &pos, NULL, &v);)
        member_free(v.ptr);
    tpx_map_release(&n->members);
    for (size_t i = 0; i < n->ndirty; i++)
        free(n->dirty[i]);
    free(n->dirty);
    tpx_map_release(&n->dirty_set);
    tpx_map_release(&n->busy);
    for (size_t i = 0; n->w && i < WORKERS; i++)
        kube_client_free(n->w[i].client);
    free(n->w);
    free(n->scheduler);
    pthread_cond_destroy(&n->cv);
    pthread_mutex_destroy(&n->mu);
    free(n);
}
