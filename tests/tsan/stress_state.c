/* SPDX-License-Identifier: Apache-2.0 */
/* tests/tsan/stress_state.c - a plain-C driver (no Criterion: it aborts under TSan, see STYLE.md
 * 2.8) that hammers extender/state.h from 8 threads with filters, scores, binds, pod removals,
 * reservation expiries, node upserts and ledger reads on a synthetic cluster, then checks the
 * invariants: no node over its capacity, the state's usage equal to what the binds that succeeded
 * add up to, each pod bound to at most one node, no group split across racks.
 *
 * Usage: stress_state [OPS_PER_THREAD [THREADS]]   (defaults 3000 and 8). Exit 0 when every
 * invariant holds.
 *
 * Bookkeeping. Each pod slot holds one atomic word: generation, and FREE, REMOVING or the node it
 * is bound to. A pod's uid carries the generation, and a removal bumps it, so a bind that lands
 * after the pod was removed is a different pod to the state; the thread that sees its bind went
 * stale removes that uid again. After the threads join, the bookkeeping therefore describes
 * exactly the pods the state holds, and the two can be compared node by node. */
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/err.h"
#include "extender/state.h"
#include "policy/policy.h"
#include "topology/model.h"
#include "topology/synthetic.h"

#define NTHREADS 8
#define NGROUPS 24 /* TP 8 x PP 2 groups of two 8-GPU pods: 384 GPUs asked, 256 exist */
#define GROUP_SIZE 2
#define NPLAIN 16 /* 4-GPU pods without a topology intent */
#define NSLOTS (NGROUPS * GROUP_SIZE + NPLAIN)
#define TTL_S 30
#define SPEC "racks=4,nodes-per-rack=8,gpus-per-node=8,interconnect=nvswitch"

/* slot word: generation << 32 | state, state FREE, REMOVING or node index */
#define ST_FREE 0xffffffffu
#define ST_REMOVING 0xfffffffeu

struct slot {
    _Atomic uint64_t word;
    struct pol_workload wl;
    char name[64];
    int group; /* -1: plain pod */
};

struct stats {
    unsigned long ops, binds_ok, binds_rejected, rebinds_refused, removes, stale_cleanups, filters,
        scores, expired, upserts, reads;
};

static struct ext_state *g_state;
static const struct topo_cluster *g_ref; /* a second copy of the cluster: node infos, racks */
static size_t g_nnodes;
static const char **g_names;
static struct slot g_slots[NSLOTS];
static atomic_long g_clock; /* seconds added to the start time */
static atomic_ulong g_violations;
static atomic_bool g_unsched[256]; /* which nodes the upserts have cordoned */
static time_t g_t0;
/* kube-scheduler checks the capacity of pods without intent itself (NodeResourcesFit) and never
 * binds two pods from one stale view: such a pod picks its node and binds under the write lock,
 * while binds of pods with intent, which the state checks, race each other under the read lock */
static pthread_rwlock_t g_sched = PTHREAD_RWLOCK_INITIALIZER;

static uint64_t mkword(uint32_t gen, uint32_t st)
{
    return (uint64_t)gen << 32 | st;
}
static uint32_t w_gen(uint64_t w)
{
    return (uint32_t)(w >> 32);
}
static uint32_t w_state(uint64_t w)
{
    return (uint32_t)w;
}

static void uid_of(const struct slot *s, uint32_t gen, char *buf, size_t n)
{
    snprintf(buf, n, "%s-gen%u", s->name, gen);
}

static time_t now_s(void)
{
    return g_t0 + atomic_load(&g_clock);
}

static void violation(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void violation(const char *fmt, ...)
{
    char line[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    atomic_fetch_add(&g_violations, 1);
    fprintf(stderr, "stress_state: VIOLATION: %s\n", line);
}

static enum tpx_code make_workload(struct slot *s, int group, unsigned index, struct tpx_err *err)
{
    char gname[32];
    char idx[16];
    struct topo_kv ann[] = {
        {"topox.io/group", gname},
        {"topox.io/tensor-parallel-size", "8"},
        {"topox.io/pipeline-parallel-size", "2"},
        {"topox.io/group-size", "2"},
        {"topox.io/pod-index", idx},
    };
    struct pol_pod_facts f = {0};

    snprintf(gname, sizeof(gname), "g%02d", group);
    snprintf(idx, sizeof(idx), "%u", index);
    f.name = s->name;
    f.ns = "stress";
    f.uid = s->name;
    f.resource = "nvidia.com/gpu";
    if (group >= 0) {
        f.annotations = ann;
        f.nannotations = sizeof(ann) / sizeof(ann[0]);
        f.accel = 8;
    } else {
        f.accel = 4;
    }
    return pol_workload_infer(&f, &s->wl, err);
}

/* A bind that succeeded: record it, or notice it went stale and undo it. */
static void settle_bind(struct slot *s, uint32_t gen, const char *uid, uint32_t node)
{
    for (;;) {
        uint64_t w = atomic_load(&s->word);
        uint32_t st = w_state(w);

        if (w_gen(w) != gen) {
            /* removed meanwhile: if our bind landed after the removal, it made a new pod */
            ext_state_remove_pod(g_state, uid);
            return;
        }
        if (st == ST_REMOVING) {
            sched_yield();
            continue;
        }
        if (st == ST_FREE) {
            if (atomic_compare_exchange_weak(&s->word, &w, mkword(gen, node)))
                return;
            continue;
        }
        if (st != node)
            violation("pod '%s' bound to '%s' and also to '%s'", uid, g_names[st], g_names[node]);
        return;
    }
}

struct fit_ctx {
    unsigned accel;
    unsigned r;
    size_t pick;
};

static void fit_fn(void *ctx, const struct pol_ledger *l, size_t pods_seen)
{
    struct fit_ctx *fc = ctx;
    size_t n = topo_cluster_node_count(pol_ledger_cluster(l));

    (void)pods_seen;
    for (size_t k = 0; k < n; k++) {
        size_t i = (fc->r + k) % n;
        if (pol_ledger_node_free(l, i) >= fc->accel) {
            fc->pick = i;
            return;
        }
    }
}

/* A pod without intent: bind where the capacity is, as the scheduler's own plugins would. */
static void op_bind_plain(struct slot *s, unsigned *seed, struct stats *sx)
{
    uint64_t w = atomic_load(&s->word);
    uint32_t gen = w_gen(w);
    time_t now = now_s();
    struct fit_ctx fc = {s->wl.accel_per_pod, (unsigned)rand_r(seed), SIZE_MAX};
    struct ext_state_bind_out out;
    struct tpx_err err = TPX_ERR_INIT;
    char uid[96];

    if (w_state(w) < g_nnodes)
        return;
    uid_of(s, gen, uid, sizeof(uid));
    ext_state_remember_pod(g_state, uid, NULL, s->name, &s->wl, now);
    pthread_rwlock_wrlock(&g_sched);
    ext_state_read(g_state, fit_fn, &fc);
    if (fc.pick == SIZE_MAX) {
        pthread_rwlock_unlock(&g_sched);
        sx->binds_rejected++;
        return;
    }
    if (ext_state_bind(g_state, uid, s->name, g_names[fc.pick], now, &out, &err) == TPX_OK) {
        pthread_rwlock_unlock(&g_sched);
        sx->binds_ok++;
        settle_bind(s, gen, uid, (uint32_t)fc.pick);
    } else {
        /* another thread bound this pod first: the state must say so, nothing else */
        pthread_rwlock_unlock(&g_sched);
        if (err.code != TPX_EEXIST)
            violation("bind of '%s' (no intent) to '%s' failed: %s", uid, g_names[fc.pick],
                      err.msg);
        sx->binds_rejected++;
    }
}

static void op_bind(struct slot *s, unsigned *seed, struct stats *sx)
{
    uint64_t w = atomic_load(&s->word);
    uint32_t gen = w_gen(w);
    time_t now = now_s();
    struct ext_state_verdicts v;
    enum tpx_code rc;
    struct ext_state_bind_out out;
    struct tpx_err err = TPX_ERR_INIT;
    char uid[96];
    int *scores = calloc(g_nnodes, sizeof(*scores));
    size_t pick = SIZE_MAX;
    int best = -1;

    if (!scores)
        return;
    if (s->group < 0) {
        free(scores);
        op_bind_plain(s, seed, sx);
        return;
    }
    uid_of(s, gen, uid, sizeof(uid));
    ext_state_remember_pod(g_state, uid, NULL, s->name, &s->wl, now);
    if (ext_state_filter(g_state, &s->wl, g_names, g_nnodes, now, &v, &err) != TPX_OK) {
        violation("filter failed for '%s': %s", uid, err.msg);
        free(scores);
        return;
    }
    sx->filters++;
    if (ext_state_score(g_state, &s->wl, g_names, g_nnodes, now, scores, &err) != TPX_OK) {
        violation("score failed for '%s': %s", uid, err.msg);
        tpx_err_clear(&err);
    }
    sx->scores++;
    for (size_t i = 0; i < g_nnodes; i++) {
        if (v.verdict[i] != POL_FIT)
            continue;
        /* mostly the best score, sometimes a random fit, so binds also race for other nodes */
        if (pick == SIZE_MAX || scores[i] > best || rand_r(seed) % 8 == 0) {
            pick = i;
            best = scores[i];
        }
    }
    ext_state_verdicts_release(&v);
    free(scores);
    if (pick == SIZE_MAX)
        pick = (size_t)rand_r(seed) % g_nnodes; /* nothing fits: the bind must be refused */
    pthread_rwlock_rdlock(&g_sched);
    rc = ext_state_bind(g_state, uid, s->name, g_names[pick], now, &out, &err);
    pthread_rwlock_unlock(&g_sched);
    if (rc == TPX_OK) {
        sx->binds_ok++;
        settle_bind(s, gen, uid, (uint32_t)pick);
    } else {
        sx->binds_rejected++;
    }
}

/* A second bind of a bound pod to another node must be refused while the pod stays bound. */
static void op_rebind(struct slot *s, unsigned *seed, struct stats *sx)
{
    uint64_t w = atomic_load(&s->word);
    uint32_t st = w_state(w);
    struct ext_state_bind_out out;
    struct tpx_err err = TPX_ERR_INIT;
    char uid[96];
    size_t other;

    if (st == ST_FREE || st == ST_REMOVING)
        return;
    other = ((size_t)st + 1 + (size_t)rand_r(seed) % (g_nnodes - 1)) % g_nnodes;
    uid_of(s, w_gen(w), uid, sizeof(uid));
    if (ext_state_bind(g_state, uid, s->name, g_names[other], now_s(), &out, &err) != TPX_OK) {
        sx->rebinds_refused++;
        return;
    }
    /* accepted: legitimate only if the pod was removed meanwhile (its uid is then new) */
    if (atomic_load(&s->word) == w)
        violation("pod '%s' on '%s' was bound again to '%s'", uid, g_names[st], g_names[other]);
    else
        ext_state_remove_pod(g_state, uid);
}

static void op_remove(struct slot *s, struct stats *sx)
{
    uint64_t w = atomic_load(&s->word);
    uint32_t st = w_state(w);
    char uid[96];

    if (st == ST_FREE || st == ST_REMOVING)
        return;
    if (!atomic_compare_exchange_strong(&s->word, &w, mkword(w_gen(w), ST_REMOVING)))
        return;
    uid_of(s, w_gen(w), uid, sizeof(uid));
    if (!ext_state_remove_pod(g_state, uid))
        violation("bound pod '%s' on '%s' unknown to the state", uid, g_names[st]);
    atomic_store(&s->word, mkword(w_gen(w) + 1, ST_FREE));
    sx->removes++;
}

static void op_read_only(struct slot *s, struct stats *sx)
{
    struct ext_state_verdicts v;
    struct tpx_err err = TPX_ERR_INIT;
    int scores[256];
    time_t now = now_s();

    if (ext_state_filter(g_state, &s->wl, g_names, g_nnodes, now, &v, &err) == TPX_OK) {
        ext_state_verdicts_release(&v);
        sx->filters++;
    }
    if (ext_state_score(g_state, &s->wl, g_names, g_nnodes, now, scores, &err) == TPX_OK)
        sx->scores++;
}

static void node_info(size_t i, bool unsched, struct topo_node_info *out)
{
    *out = *topo_cluster_node(g_ref, i);
    out->accel_used = 0;
    out->unschedulable = unsched;
}

static void op_upsert(unsigned *seed, struct stats *sx)
{
    struct tpx_err err = TPX_ERR_INIT;

    if (rand_r(seed) % 2) {
        size_t i = (size_t)rand_r(seed) % g_nnodes;
        bool un = !atomic_load(&g_unsched[i]);
        struct topo_node_info info;

        atomic_store(&g_unsched[i], un);
        node_info(i, un, &info);
        if (ext_state_upsert_node(g_state, &info, &err) != TPX_OK)
            violation("upsert of '%s' failed: %s", info.name, err.msg);
    } else {
        struct topo_node_info *all = calloc(g_nnodes, sizeof(*all));
        bool changed;

        if (!all)
            return;
        for (size_t i = 0; i < g_nnodes; i++)
            node_info(i, atomic_load(&g_unsched[i]), &all[i]);
        if (ext_state_upsert_nodes(g_state, all, g_nnodes, &changed, &err) != TPX_OK)
            violation("batch upsert failed: %s", err.msg);
        free(all);
    }
    sx->upserts++;
}

static void read_fn(void *ctx, const struct pol_ledger *l, size_t pods_seen)
{
    const struct topo_cluster *c = pol_ledger_cluster(l);
    size_t nr = topo_cluster_rack_count(c);
    struct pol_rack_summary r[16];

    (void)ctx;
    (void)pods_seen;
    if (nr > 16)
        return;
    pol_ledger_racks(l, r);
    for (size_t i = 0; i < nr; i++) {
        if (r[i].accel_free + r[i].accel_reserved > r[i].accel_total)
            violation("rack '%s': %u free + reserved of %u", topo_cluster_rack_name(c, i),
                      r[i].accel_free + r[i].accel_reserved, r[i].accel_total);
    }
    for (size_t i = 0; i < topo_cluster_node_count(c); i++) {
        if (pol_ledger_node_free(l, i) > topo_cluster_node(c, i)->accel_alloc)
            violation("node '%s' has more free than allocatable", topo_cluster_node(c, i)->name);
    }
}

struct thread_arg {
    unsigned seed;
    unsigned long ops;
    struct stats st;
};

static void *worker(void *p)
{
    struct thread_arg *a = p;
    unsigned *seed = &a->seed;

    for (unsigned long k = 0; k < a->ops; k++) {
        struct slot *s = &g_slots[rand_r(seed) % NSLOTS];
        unsigned r = (unsigned)rand_r(seed) % 100;

        a->st.ops++;
        if (r < 40) {
            op_bind(s, seed, &a->st);
        } else if (r < 50) {
            op_rebind(s, seed, &a->st);
        } else if (r < 68) {
            op_remove(s, &a->st);
        } else if (r < 85) {
            op_read_only(s, &a->st);
        } else if (r < 90) {
            /* time moves on: now and then far enough for reservations to lapse */
            long step = rand_r(seed) % 4 == 0 ? TTL_S : 1;
            atomic_fetch_add(&g_clock, step);
            a->st.expired += ext_state_expire(g_state, now_s());
        } else if (r < 95) {
            op_upsert(seed, &a->st);
        } else {
            ext_state_read(g_state, read_fn, NULL);
            a->st.reads++;
        }
    }
    return NULL;
}

/* After the threads: the state against the bookkeeping. */
struct final_ctx {
    unsigned used[256];
    unsigned long bad;
};

static void final_fn(void *ctx, const struct pol_ledger *l, size_t pods_seen)
{
    struct final_ctx *fc = ctx;
    const struct topo_cluster *c = pol_ledger_cluster(l);
    size_t ng = pol_ledger_group_count(l);
    struct pol_group_summary *g = calloc(ng ? ng : 1, sizeof(*g));

    (void)pods_seen;
    for (size_t i = 0; i < topo_cluster_node_count(c); i++) {
        const struct topo_node_info *n = topo_cluster_node(c, i);
        unsigned in_state = n->accel_alloc - pol_ledger_node_free(l, i);

        if (fc->used[i] > n->accel_alloc) {
            fprintf(stderr, "stress_state: node '%s' over capacity: %u of %u\n", n->name,
                    fc->used[i], n->accel_alloc);
            fc->bad++;
        }
        if (in_state != fc->used[i]) {
            fprintf(stderr, "stress_state: node '%s': state uses %u, bound pods add up to %u\n",
                    n->name, in_state, fc->used[i]);
            fc->bad++;
        }
    }
    if (!g)
        return;
    pol_ledger_groups(l, g);
    for (size_t k = 0; k < ng; k++) {
        int gi = -1;
        unsigned placed = 0;

        if (sscanf(g[k].group, "stress/g%d", &gi) != 1 || gi < 0 || gi >= NGROUPS)
            continue;
        for (size_t m = 0; m < GROUP_SIZE; m++) {
            uint32_t st = w_state(atomic_load(&g_slots[gi * GROUP_SIZE + m].word));
            if (st < g_nnodes) {
                placed++;
                if (topo_cluster_node_rack(c, st) != g[k].rack) {
                    fprintf(stderr,
                            "stress_state: group %s is in rack '%s' but a member is on "
                            "'%s'\n",
                            g[k].group, topo_cluster_rack_name(c, g[k].rack), g_names[st]);
                    fc->bad++;
                }
            }
        }
        if (placed != g[k].members_placed) {
            fprintf(stderr, "stress_state: group %s: state has %u members placed, binds %u\n",
                    g[k].group, g[k].members_placed, placed);
            fc->bad++;
        }
    }
    free(g);
}

static unsigned long check_final(void)
{
    struct final_ctx fc;
    struct tpx_err err = TPX_ERR_INIT;
    unsigned long bad = 0;
    size_t bound = 0;

    memset(&fc, 0, sizeof(fc));
    /* uncordon every node and let every reservation lapse: what is left is what pods use */
    for (size_t i = 0; i < g_nnodes; i++) {
        struct topo_node_info info;
        node_info(i, false, &info);
        if (ext_state_upsert_node(g_state, &info, &err) != TPX_OK) {
            fprintf(stderr, "stress_state: final upsert: %s\n", err.msg);
            bad++;
        }
    }
    ext_state_expire(g_state, now_s() + 100 * TTL_S);

    for (size_t k = 0; k < NSLOTS; k++) {
        uint32_t st = w_state(atomic_load(&g_slots[k].word));
        int rack = -1;

        if (st >= g_nnodes)
            continue;
        bound++;
        fc.used[st] += g_slots[k].wl.accel_per_pod;
        if (g_slots[k].group < 0)
            continue;
        /* group members in one rack */
        for (size_t m = 0; m < GROUP_SIZE; m++) {
            uint32_t o = w_state(atomic_load(&g_slots[g_slots[k].group * GROUP_SIZE + m].word));
            if (o >= g_nnodes)
                continue;
            if (rack < 0)
                rack = (int)topo_cluster_node_rack(g_ref, o);
            if ((size_t)rack != topo_cluster_node_rack(g_ref, o)) {
                fprintf(stderr, "stress_state: group g%02d split across racks\n", g_slots[k].group);
                bad++;
            }
        }
    }
    /* compare before the probes below: a bind renews a group's reservation */
    if (!ext_state_read(g_state, final_fn, &fc)) {
        fprintf(stderr, "stress_state: no cluster at the end\n");
        bad++;
    }
    /* bound at most once: another node is refused, the same node is idempotent */
    for (size_t k = 0; k < NSLOTS; k++) {
        uint64_t w = atomic_load(&g_slots[k].word);
        uint32_t st = w_state(w);
        char uid[96];
        struct ext_state_bind_out out;
        struct tpx_err e1 = TPX_ERR_INIT;
        struct tpx_err e2 = TPX_ERR_INIT;
        size_t other = (st + 1) % g_nnodes;

        if (st >= g_nnodes)
            continue;
        uid_of(&g_slots[k], w_gen(w), uid, sizeof(uid));
        if (ext_state_bind(g_state, uid, g_slots[k].name, g_names[other], now_s(), &out, &e1) !=
            TPX_EEXIST) {
            fprintf(stderr, "stress_state: '%s' on '%s' not refused on '%s': %s\n", uid,
                    g_names[st], g_names[other], e1.msg);
            bad++;
        }
        if (ext_state_bind(g_state, uid, g_slots[k].name, g_names[st], now_s(), &out, &e2) !=
            TPX_OK) {
            fprintf(stderr, "stress_state: '%s' rebind to its own node '%s' failed: %s\n", uid,
                    g_names[st], e2.msg);
            bad++;
        }
    }
    printf("stress_state: %zu pods bound at the end\n", bound);
    return bad + fc.bad;
}

int main(int argc, char **argv)
{
    struct tpx_err err = TPX_ERR_INIT;
    struct topo_cluster *c;
    struct topo_cluster *ref;
    pthread_t th[NTHREADS];
    struct thread_arg args[NTHREADS];
    struct stats tot = {0};
    unsigned long ops = 3000;
    unsigned long bad;
    int nthreads = NTHREADS;

    if (argc > 1) {
        char *end;
        ops = strtoul(argv[1], &end, 10);
        if (*end || ops == 0) {
            fprintf(stderr, "usage: stress_state [OPS_PER_THREAD [THREADS]]\n");
            return 2;
        }
    }
    if (argc > 2) {
        char *end;
        long t = strtol(argv[2], &end, 10);
        if (*end || t < 1 || t > NTHREADS) {
            fprintf(stderr, "usage: stress_state [OPS_PER_THREAD [THREADS]]\n");
            return 2;
        }
        nthreads = (int)t;
    }
    g_t0 = time(NULL);
    c = topo_cluster_synthetic(SPEC, &err);
    ref = c ? topo_cluster_synthetic(SPEC, &err) : NULL;
    g_state = ref ? ext_state_new(TTL_S, &err) : NULL;
    if (!g_state || ext_state_set_cluster(g_state, c, &err) != TPX_OK) {
        if (!ref)
            topo_cluster_free(c);
        fprintf(stderr, "stress_state: setup: %s\n", err.msg);
        topo_cluster_free(ref);
        ext_state_free(g_state);
        return 1;
    }
    g_ref = ref;
    g_nnodes = topo_cluster_node_count(ref);
    g_names = calloc(g_nnodes, sizeof(*g_names));
    if (!g_names || g_nnodes > 256)
        return 1;
    for (size_t i = 0; i < g_nnodes; i++)
        g_names[i] = topo_cluster_node(ref, i)->name;
    for (size_t k = 0; k < NSLOTS; k++) {
        struct slot *s = &g_slots[k];
        int group = k < NGROUPS * GROUP_SIZE ? (int)(k / GROUP_SIZE) : -1;

        s->group = group;
        if (group >= 0)
            snprintf(s->name, sizeof(s->name), "g%02d-m%zu", group, k % GROUP_SIZE);
        else
            snprintf(s->name, sizeof(s->name), "plain-%zu", k);
        atomic_init(&s->word, mkword(0, ST_FREE));
        if (make_workload(s, group, (unsigned)(k % GROUP_SIZE), &err) != TPX_OK) {
            fprintf(stderr, "stress_state: workload: %s\n", err.msg);
            return 1;
        }
    }

    for (int t = 0; t < nthreads; t++) {
        memset(&args[t], 0, sizeof(args[t]));
        args[t].seed = 12345u + 7919u * (unsigned)t;
        args[t].ops = ops;
        if (pthread_create(&th[t], NULL, worker, &args[t]) != 0) {
            fprintf(stderr, "stress_state: pthread_create failed\n");
            return 1;
        }
    }
    for (int t = 0; t < nthreads; t++) {
        pthread_join(th[t], NULL);
        tot.ops += args[t].st.ops;
        tot.binds_ok += args[t].st.binds_ok;
        tot.binds_rejected += args[t].st.binds_rejected;
        tot.rebinds_refused += args[t].st.rebinds_refused;
        tot.removes += args[t].st.removes;
        tot.filters += args[t].st.filters;
        tot.scores += args[t].st.scores;
        tot.expired += args[t].st.expired;
        tot.upserts += args[t].st.upserts;
        tot.reads += args[t].st.reads;
    }
    printf("stress_state: %d threads, %lu ops: %lu binds ok, %lu refused, %lu second binds "
           "refused, %lu removals, %lu filters, %lu scores, %lu reservations expired, %lu node "
           "upserts, %lu ledger reads\n",
           nthreads, tot.ops, tot.binds_ok, tot.binds_rejected, tot.rebinds_refused, tot.removes,
           tot.filters, tot.scores, tot.expired, tot.upserts, tot.reads);

    bad = check_final() + atomic_load(&g_violations);
    ext_state_free(g_state);
    topo_cluster_free(ref);
    free(g_names);
    if (bad) {
        printf("stress_state: FAILED: %lu invariant violations\n", bad);
        return 1;
    }
    printf("stress_state: ok: no node over capacity, state usage equals the bound pods, each pod "
           "bound at most once, no group split across racks\n");
    return 0;
}
