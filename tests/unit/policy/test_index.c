/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/policy/test_index.c - the placement index (policy/index.c) against a pass over every
 * node: after random sequences of commits, forgotten pods, external use and expiry, a memo kept
 * across the changes answers every filter and score as a call without one does, and pol_plan (the
 * index's best node per pod) places and rejects exactly as the planner that filters and scores
 * every node for every pod, on racks, blocks, zones, two domains per node and multi-node domains,
 * with racks whose nodes say topox.io/rdma-nics 0 (the RDMA cut and its soft term) and groups of
 * one deployment's prefill and decode roles (the KV term, which reads other groups' places). */
#include "policy/policy.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topology/synthetic.h"

#define NOW 5000
#define MAXN 512
#define MAXUIDS 4096

static struct topo_cluster *cl;
static struct pol_ledger *la, *lb; /* la: planned through the index; lb: by the full pass */
static size_t all[MAXN];
static size_t nn;
static unsigned long long rng;
static time_t now_t;

static unsigned rnd(unsigned n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return n ? (unsigned)(rng % n) : 0;
}

/* "mixed": 4 racks of 5 x 8 GPUs in 2 blocks, where every third node says topox.io/rdma-nics 0
 * and the others 8 (so a rack holds both), r04's nodes pair into 16-GPU NVLink domains (their
 * reach without a NIC is 16), and two nodes are cordoned, one of them in such a domain. */
static struct topo_cluster *mixed_cluster(struct tpx_err *err)
{
    struct topo_cluster *c = topo_cluster_new(err);

    for (unsigned i = 0; c && i < 20; i++) {
        char name[16], rack[8], dom[16];
        struct topo_node_info in = {0};
        snprintf(name, sizeof(name), "r%02u-n%u", i / 5 + 1, i % 5 + 1);
        snprintf(rack, sizeof(rack), "r%02u", i / 5 + 1);
        snprintf(dom, sizeof(dom), "clique-%u", i / 2);
        in.name = name;
        in.rack = rack;
        in.block = i < 10 ? "b1" : "b2";
        in.domain = i >= 15 && i < 19 ? dom : NULL;
        in.resource = "nvidia.com/gpu";
        in.accel_alloc = 8;
        in.fabric = TOPO_FABRIC_NVSWITCH;
        in.rdma_known = true;
        in.rdma_nics = i % 3 == 1 ? 0 : 8;
        in.unschedulable = i == 7 || i == 16;
        if (topo_cluster_add(c, &in, err) != TPX_OK) {
            topo_cluster_free(c);
            return NULL;
        }
    }
    if (c && topo_cluster_seal(c, err) != TPX_OK) {
        topo_cluster_free(c);
        return NULL;
    }
    return c;
}

static void setup_spec(const char *spec, unsigned long long seed)
{
    struct tpx_err err = TPX_ERR_INIT;

    cl = strcmp(spec, "mixed") == 0 ? mixed_cluster(&err) : topo_cluster_synthetic(spec, &err);
    cr_assert_not_null(cl, "%s", err.msg);
    la = pol_ledger_new(cl, &err);
    lb = pol_ledger_new(cl, &err);
    cr_assert(la && lb, "%s", err.msg);
    nn = topo_cluster_node_count(cl);
    cr_assert(nn <= MAXN);
    for (size_t i = 0; i < nn; i++)
        all[i] = i;
    rng = seed;
    now_t = NOW;
}

static void teardown(void)
{
    pol_ledger_free(la);
    pol_ledger_free(lb);
    topo_cluster_free(cl);
    la = lb = NULL;
    cl = NULL;
}

/* The shapes the sequences use: tp, pp, pods per group, accelerators per pod, scope. */
struct shape {
    unsigned tp, pp, n, g;
    enum pol_scope scope;
    bool preferred, no_intent, no_key;
    unsigned ep;
    char kv_role;   /* 'p' prefill, 'd' decode of the one deployment KV_GROUP, 0: none */
    bool uncertain; /* the layout is not certain: the RDMA rule only scores */
};

#define KV_GROUP "llm/ds:x/0"

static const struct shape shapes[] = {
    {8, 2, 2, 8, POL_SCOPE_RACK, false, false, false, 0, 0, false},
    {4, 4, 4, 4, POL_SCOPE_RACK, false, false, false, 0, 0, false},
    {8, 2, 4, 4, POL_SCOPE_RACK, false, false, false, 0, 0, false},  /* a TP unit spans two pods */
    {16, 1, 2, 8, POL_SCOPE_RACK, false, false, false, 0, 0, false}, /* multi-node domains only */
    {2, 1, 1, 2, POL_SCOPE_RACK, false, false, true, 0, 0, false},   /* a pod on its own */
    {8, 3, 3, 8, POL_SCOPE_BLOCK, false, false, false, 0, 0, false},
    {8, 2, 2, 8, POL_SCOPE_ZONE, false, false, false, 0, 0, false},
    {8, 2, 2, 8, POL_SCOPE_RACK, true, false, false, 0, 0, false},   /* preferred */
    {1, 1, 1, 1, POL_SCOPE_RACK, false, true, true, 0, 0, false},    /* no intent */
    {4, 4, 4, 4, POL_SCOPE_RACK, false, false, false, 16, 0, false}, /* EP over pods */
    {8, 8, 8, 8, POL_SCOPE_RACK, false, false, false, 0, 0, false},  /* large: often rejected */
    /* the traffic terms (policy/prefer.c) */
    {4, 4, 4, 4, POL_SCOPE_RACK, false, false, false, 16, 'p', false}, /* RDMA cut, prefill */
    {8, 2, 2, 8, POL_SCOPE_RACK, false, false, false, 0, 'd', false},  /* PP: scored, decode */
    {8, 3, 3, 8, POL_SCOPE_BLOCK, false, false, false, 0, 'p', false}, /* prefill, by block */
    {4, 4, 4, 4, POL_SCOPE_RACK, false, false, false, 16, 0, true},    /* RDMA only scored */
    {8, 1, 1, 8, POL_SCOPE_RACK, false, false, false, 0, 'd', false},  /* a decode pod alone */
    {8, 2, 2, 8, POL_SCOPE_RACK, false, false, false, 0, 'p', false},  /* prefill, decode's twin */
    {8, 1, 2, 8, POL_SCOPE_RACK, false, false, false, 0, 0, false},    /* dp 2: nothing crosses */
};
#define NSHAPES (sizeof(shapes) / sizeof(shapes[0]))

/* Shapes one scope memo keeps alike (scope, accelerators per pod, TP): what differs between
 * them (PP, EP, the RDMA rule, the KV role) must still be told apart. */
static bool twins(const struct shape *a, const struct shape *b)
{
    return a->scope == b->scope && a->g == b->g && a->tp == b->tp;
}

/* A twin of shape s other than s, drawn at random; s itself when it has none. */
static size_t twin_of(size_t s)
{
    size_t t[NSHAPES], nt = 0;

    for (size_t i = 0; i < NSHAPES; i++) {
        if (i != s && twins(&shapes[i], &shapes[s]))
            t[nt++] = i;
    }
    return nt ? t[rnd((unsigned)nt)] : s;
}

static struct pol_workload pod_of(const struct shape *s, const char *group, unsigned k)
{
    struct pol_workload w;

    memset(&w, 0, sizeof(w));
    w.has_intent = !s->no_intent;
    w.tp = s->tp;
    w.pp = s->pp;
    w.dp = s->n * s->g % (s->tp * s->pp) == 0 ? s->n * s->g / (s->tp * s->pp) : 1;
    w.accel_per_pod = s->g;
    w.group_size = s->n;
    w.pod_index = (int)k;
    w.tp_explicit = k == 0;
    w.tp_source = k == 0 ? "annotation" : "default";
    w.scope = s->scope;
    w.preferred = s->preferred;
    w.layout.ep = s->ep ? s->ep : 1;
    w.layout.certain = !s->uncertain;
    if (s->kv_role) {
        w.kv_role = s->kv_role;
        snprintf(w.kv_group, sizeof(w.kv_group), "%s", KV_GROUP);
    }
    snprintf(w.resource, sizeof(w.resource), "nvidia.com/gpu");
    if (!s->no_key)
        snprintf(w.group, sizeof(w.group), "%s", group);
    snprintf(w.display, sizeof(w.display), "%s", group);
    return w;
}

/* --- the planner as it was: every pod filtered and scored over every node -------------------- */

/* The most free accelerators of wl's resource on a schedulable node, as the plan's reason says. */
static unsigned most_free(const struct pol_ledger *l, const struct pol_workload *wl)
{
    unsigned most = 0;

    for (size_t i = 0; i < nn; i++) {
        unsigned f = pol_ledger_node_free(l, i);
        if (pol_ledger_node_serves(l, i, wl->resource) &&
            !topo_cluster_node(pol_ledger_cluster(l), i)->unschedulable)
            most = f > most ? f : most;
    }
    return most;
}

static size_t pick_best(const struct pol_ledger *l, const struct pol_workload *wl,
                        const struct pol_filter_result *res, const int *scores)
{
    size_t best = (size_t)-1;

    for (size_t i = 0; i < nn; i++) {
        if ((!wl->has_intent || wl->preferred) && wl->accel_per_pod &&
            !pol_ledger_node_serves(l, i, wl->resource))
            continue;
        if (!wl->has_intent && pol_ledger_node_free(l, i) < wl->accel_per_pod)
            continue;
        if (res->verdict[i] == POL_FIT && scores[i] >= 0 &&
            (best == (size_t)-1 || scores[i] > scores[best]))
            best = i;
    }
    return best;
}

static const char *top_reason(const struct pol_filter_result *res)
{
    size_t best = 0, best_n = 0;

    for (size_t r = 0; r < res->nreasons; r++) {
        size_t cnt = 0;
        for (size_t i = 0; i < res->n; i++)
            cnt += res->verdict[i] != POL_FIT && res->reason[i] == r;
        if (cnt > best_n) {
            best = r;
            best_n = cnt;
        }
    }
    return res->nreasons ? res->reasons[best] : "no node";
}

/* One replica by the full pass: its nodes in out[] (TOPO_NONE when rejected), the reason. */
static bool reference_replica(struct pol_ledger *l, size_t j, const char *job, size_t r,
                              const struct pol_workload *pods, size_t npods, size_t *out, char *why,
                              size_t whylen)
{
    static int scores[MAXN];
    struct tpx_err err = TPX_ERR_INIT;
    size_t placed = 0;

    why[0] = '\0';
    for (size_t k = 0; k < npods && !why[0]; k++) {
        const struct pol_workload *wl = &pods[k];
        struct pol_filter_result res;
        struct tpx_err cerr = TPX_ERR_INIT;
        struct pol_placement p;
        char name[POL_KEY_MAX], uid[POL_KEY_MAX + 128];
        size_t best;

        cr_assert_eq(pol_filter(l, wl, all, nn, now_t, &res, &err), TPX_OK, "%s", err.msg);
        cr_assert_eq(pol_score(l, wl, all, nn, now_t, scores, &err), TPX_OK, "%s", err.msg);
        best = pick_best(l, wl, &res, scores);
        if (best == (size_t)-1 && (!wl->has_intent || wl->preferred)) {
            unsigned most = most_free(l, wl);
            snprintf(why, whylen, "replica %zu of %s: pod %zu: no node has %u free %s (most: %u)",
                     r, job, k, wl->accel_per_pod, wl->resource, most);
            pol_filter_result_release(&res);
            break;
        }
        if (best == (size_t)-1) {
            char gang[400] = "";
            if (k == 0)
                cr_assert_eq(pol_gang_shortfall(l, wl, gang, sizeof(gang), &err), TPX_OK);
            if (gang[0])
                snprintf(why, whylen, "replica %zu of %s: %s", r, job, gang);
            else
                snprintf(why, whylen, "replica %zu of %s: pod %zu: %s", r, job, k,
                         top_reason(&res));
            pol_filter_result_release(&res);
            break;
        }
        snprintf(name, sizeof(name), "%s-%zu-%zu", job, r, k);
        snprintf(uid, sizeof(uid), "plan:%zu/%zu/%zu/%s", j, r, k, name);
        while (pol_commit(l, wl, uid, name, best, now_t, 600, &p, &cerr) != TPX_OK &&
               cerr.code == TPX_EINVAL && wl->preferred) {
            size_t next;
            scores[best] = -1;
            next = pick_best(l, wl, &res, scores);
            if (next == (size_t)-1) {
                unsigned most = most_free(l, wl);
                if (most < wl->accel_per_pod)
                    snprintf(cerr.msg, sizeof(cerr.msg), "no node has %u free %s (most: %u)",
                             wl->accel_per_pod, wl->resource, most);
                break;
            }
            best = next;
            tpx_err_clear(&cerr);
        }
        pol_filter_result_release(&res);
        if (cerr.code != TPX_OK) {
            snprintf(why, whylen, "replica %zu of %s: pod %zu: %.400s", r, job, k, cerr.msg);
            break;
        }
        out[placed++] = best;
    }
    if (why[0]) {
        for (size_t k = 0; k < placed; k++) {
            char uid[POL_KEY_MAX * 2 + 128];
            snprintf(uid, sizeof(uid), "plan:%zu/%zu/%zu/%s-%zu-%zu", j, r, k, job, r, k);
            cr_assert(pol_ledger_forget_pod(l, uid));
        }
        for (size_t k = 0; k < npods; k++)
            out[k] = TOPO_NONE;
        return false;
    }
    return true;
}

/* --- what both ledgers see alike -------------------------------------------------------------- */

static char uids[MAXUIDS][POL_KEY_MAX + 128];
static size_t nuids;
static unsigned ngroups;

static void remember(const char *uid)
{
    if (nuids < MAXUIDS)
        snprintf(uids[nuids++], sizeof(uids[0]), "%s", uid);
}

/* A group of a random shape committed on both ledgers, each pod on a random node that fits. */
static void random_group(void)
{
    const struct shape *s = &shapes[rnd(NSHAPES)];
    char group[64];
    struct tpx_err err = TPX_ERR_INIT;

    snprintf(group, sizeof(group), "ns%u/g%u", rnd(3), ngroups++);
    for (unsigned k = 0; k < s->n; k++) {
        struct pol_workload w = pod_of(s, group, k);
        struct pol_filter_result res;
        struct pol_placement pa, pb;
        size_t fit[MAXN], nfit = 0, node;
        char uid[POL_KEY_MAX + 32];

        cr_assert_eq(pol_filter(la, &w, all, nn, now_t, &res, &err), TPX_OK, "%s", err.msg);
        for (size_t i = 0; i < nn; i++) {
            if (res.verdict[i] == POL_FIT && pol_ledger_node_free(la, i) >= w.accel_per_pod)
                fit[nfit++] = i;
        }
        pol_filter_result_release(&res);
        if (nfit == 0)
            return;
        node = fit[rnd((unsigned)nfit)];
        snprintf(uid, sizeof(uid), "%s-%u", group, k);
        if (pol_commit(la, &w, uid, uid, node, now_t, 600, &pa, &err) != TPX_OK) {
            struct tpx_err eb = TPX_ERR_INIT;
            cr_assert_neq(pol_commit(lb, &w, uid, uid, node, now_t, 600, &pb, &eb), TPX_OK);
            cr_assert_str_eq(eb.msg, err.msg);
            tpx_err_clear(&err);
            return;
        }
        cr_assert_eq(pol_commit(lb, &w, uid, uid, node, now_t, 600, &pb, &err), TPX_OK, "%s",
                     err.msg);
        cr_assert_eq(pa.node, pb.node);
        remember(uid);
    }
}

static void random_change(void)
{
    struct tpx_err err = TPX_ERR_INIT;
    unsigned op = rnd(10);

    if (op < 4) {
        random_group();
    } else if (op < 6 && nuids > 0) {
        size_t i = rnd((unsigned)nuids);
        cr_assert_eq(pol_ledger_forget_pod(la, uids[i]), pol_ledger_forget_pod(lb, uids[i]));
        memcpy(uids[i], uids[--nuids], sizeof(uids[0]));
    } else if (op < 8) {
        size_t node = rnd((unsigned)nn);
        int64_t delta = (int64_t)rnd(9) - 4;
        cr_assert_eq(pol_ledger_use(la, node, delta, &err), TPX_OK);
        cr_assert_eq(pol_ledger_use(lb, node, delta, &err), TPX_OK);
    } else if (op == 8) {
        now_t += 400;
        cr_assert_eq(pol_ledger_expire(la, now_t), pol_ledger_expire(lb, now_t));
    } else {
        /* a burst: more changes than the index's ring of changes holds */
        for (int b = 0; b < 300; b++) {
            size_t node = rnd((unsigned)nn);
            int64_t delta = b % 2 ? -1 : 1;
            cr_assert_eq(pol_ledger_use(la, node, delta, &err), TPX_OK);
            cr_assert_eq(pol_ledger_use(lb, node, delta, &err), TPX_OK);
        }
    }
}

/* Filter and score of w on la for candidates cand[0, nc) through memo m equal those without a
 * memo, candidate by candidate. */
static void expect_same_on(struct pol_scope_memo *m, const struct pol_workload *w,
                           const size_t *cand, size_t nc, const char *what)
{
    static int sm[2 * MAXN], sp[2 * MAXN];
    struct pol_filter_result rm, rp;
    struct tpx_err err = TPX_ERR_INIT;

    cr_assert_eq(pol_filter_memo(la, m, w, cand, nc, now_t, &rm, &err), TPX_OK, "%s", err.msg);
    cr_assert_eq(pol_filter(la, w, cand, nc, now_t, &rp, &err), TPX_OK, "%s", err.msg);
    cr_assert_eq(rm.nfit, rp.nfit, "%s: nodes that fit", what);
    cr_assert_eq(rm.nreasons, rp.nreasons, "%s: reasons", what);
    for (size_t i = 0; i < nc; i++) {
        cr_assert_eq(rm.verdict[i], rp.verdict[i], "%s: node %zu", what, cand[i]);
        if (rm.verdict[i] != POL_FIT) {
            cr_assert_eq(rm.reason[i], rp.reason[i], "%s: node %zu", what, cand[i]);
            cr_assert_str_eq(rm.reasons[rm.reason[i]], rp.reasons[rp.reason[i]], "%s: node %zu",
                             what, cand[i]);
        }
    }
    pol_filter_result_release(&rm);
    pol_filter_result_release(&rp);
    cr_assert_eq(pol_score_memo(la, m, w, cand, nc, now_t, sm, &err), TPX_OK, "%s", err.msg);
    cr_assert_eq(pol_score(la, w, cand, nc, now_t, sp, &err), TPX_OK, "%s", err.msg);
    for (size_t i = 0; i < nc; i++)
        cr_assert_eq(sm[i], sp[i], "%s: score of node %zu", what, cand[i]);
}

/* The same for every node, in index order. */
static void expect_same_answers(struct pol_scope_memo *m, const struct pol_workload *w,
                                const char *what)
{
    expect_same_on(m, w, all, nn, what);
}

/* The same for a random list of candidates: some nodes left out, some twice, in any order (a
 * scheduler's list after its own filters). */
static void expect_same_on_some(struct pol_scope_memo *m, const struct pol_workload *w,
                                const char *what)
{
    static size_t cand[2 * MAXN];
    size_t nc = rnd((unsigned)(2 * nn)) + 1;

    for (size_t i = 0; i < nc; i++)
        cand[i] = rnd((unsigned)nn);
    expect_same_on(m, w, cand, nc, what);
}

static const char *const specs[] = {
    "racks=4,nodes-per-rack=6,gpus-per-node=8",
    "racks=3,nodes-per-rack=8,gpus-per-node=8,blocks=2,zones=2",
    "racks=3,nodes-per-rack=6,gpus-per-node=16,domains-per-node=2",
    "racks=3,nodes-per-rack=8,gpus-per-node=8,domain-nodes=4",
    "racks=4,nodes-per-rack=4,gpus-per-node=8,domain-nodes=2,blocks=2,used=2",
    /* the first rack's nodes say topox.io/rdma-nics 0, the others 8 */
    "racks=4,nodes-per-rack=4,gpus-per-node=8,blocks=2,rdma-nics=8,no-rdma-racks=1",
    "racks=4,nodes-per-rack=4,gpus-per-node=8,domain-nodes=2,rdma-nics=8,no-rdma-racks=2",
    "mixed",
};

Test(pol_index, a_kept_memo_answers_as_a_full_pass_after_random_changes, .fini = teardown)
{
    for (size_t sp = 0; sp < sizeof(specs) / sizeof(specs[0]); sp++) {
        struct pol_scope_memo *own[NSHAPES], *shared = pol_scope_memo_new();

        setup_spec(specs[sp], 0x9e3779b97f4a7c15ULL + sp);
        nuids = 0;
        for (size_t s = 0; s < NSHAPES; s++) {
            own[s] = pol_scope_memo_new();
            cr_assert_not_null(own[s]);
        }
        for (int step = 0; step < 150; step++) {
            random_change();
            for (size_t s = 0; s < NSHAPES; s++) {
                struct pol_workload first = pod_of(&shapes[s], "probe/first", 0);
                char what[128];
                /* each shape's own memo is looked at only now and then, so it falls behind by
                 * more or fewer changes; the shared one meets every shape in turn */
                snprintf(what, sizeof(what), "%s, step %d, shape %zu", specs[sp], step, s);
                if ((step + (int)s) % 3 == 0)
                    expect_same_answers(own[s], &first, what);
                else if ((step + (int)s) % 3 == 1)
                    expect_same_on_some(own[s], &first, what);
                expect_same_answers(shared, &first, what);
                /* and a twin right after it, on the memo the shape left */
                {
                    struct pol_workload tw = pod_of(&shapes[twin_of(s)], "probe/twin", 0);
                    expect_same_answers(shared, &tw, what);
                    expect_same_answers(shared, &first, what);
                }
            }
            if (nuids > 0) {
                /* a later member of a placed group (its shape is the group's) */
                char group[sizeof(uids[0])];
                const char *dash;
                struct pol_workload w = pod_of(&shapes[0], "", 1);
                snprintf(group, sizeof(group), "%.*s", (int)sizeof(group) - 1,
                         uids[rnd((unsigned)nuids)]);
                dash = strrchr(group, '-');
                if (dash && strncmp(group, "plan:", 5) != 0 && dash - group < POL_KEY_MAX) {
                    snprintf(w.group, sizeof(w.group), "%.*s", (int)(dash - group), group);
                    w.tp_explicit = false;
                    w.pod_index = -1;
                    expect_same_answers(shared, &w, "a later member");
                }
            }
        }
        for (size_t s = 0; s < NSHAPES; s++)
            pol_scope_memo_free(own[s]);
        pol_scope_memo_free(shared);
        teardown();
    }
}

/* Jobs of shapes sh[0, njobs) with nrep[] replicas planned on la by pol_plan (through the index)
 * and on lb by the full pass, job after job: the same nodes, the same rejections. */
static void plan_as_the_full_pass(const struct shape *const *sh, const size_t *nrep, size_t njobs,
                                  const char *what, int step)
{
    static struct pol_workload pods[3][8][8];
    static struct pol_job_replica reps[3][8];
    char job[3][64];
    struct pol_job pj[3];
    struct pol_plan_result res;
    struct tpx_err err = TPX_ERR_INIT;
    size_t q = 0, rj = 0;

    cr_assert(njobs <= 3);
    for (size_t j = 0; j < njobs; j++) {
        cr_assert(nrep[j] <= 8 && sh[j]->n <= 8);
        snprintf(job[j], sizeof(job[j]), "plan/j%d-%zu", step, j);
        for (size_t r = 0; r < nrep[j]; r++) {
            char group[96];
            snprintf(group, sizeof(group), "%s/%zu", job[j], r);
            for (unsigned k = 0; k < sh[j]->n; k++)
                pods[j][r][k] = pod_of(sh[j], group, k);
            reps[j][r] = (struct pol_job_replica){pods[j][r], NULL, sh[j]->n, NULL, NULL};
        }
        pj[j] = (struct pol_job){job[j], reps[j], nrep[j]};
    }
    cr_assert_eq(pol_plan(la, pj, njobs, now_t, &res, &err), TPX_OK, "%s", err.msg);
    for (size_t j = 0; j < njobs; j++) {
        for (size_t r = 0; r < nrep[j]; r++) {
            size_t nodes[8];
            char why[512];
            bool ok =
                reference_replica(lb, j, job[j], r, pods[j][r], sh[j]->n, nodes, why, sizeof(why));
            if (!ok) {
                cr_assert_lt(rj, res.nrejected, "%s step %d: job %zu replica %zu", what, step, j,
                             r);
                cr_assert_eq(res.rejected[rj].job, j);
                cr_assert_eq(res.rejected[rj].replica, r);
                cr_assert_str_eq(res.rejected[rj].reason, why);
                rj++;
                continue;
            }
            for (unsigned k = 0; k < sh[j]->n; k++, q++) {
                char uid[POL_KEY_MAX + 128];
                cr_assert_lt(q, res.npods);
                cr_assert_eq(res.pods[q].job, j);
                cr_assert_eq(res.pods[q].replica, r);
                cr_assert_eq(res.pods[q].where.node, nodes[k],
                             "%s step %d: job %zu replica %zu pod %u: index %zu, full pass %zu",
                             what, step, j, r, k, res.pods[q].where.node, nodes[k]);
                snprintf(uid, sizeof(uid), "plan:%zu/%zu/%u/%s", j, r, k, res.pods[q].pod_name);
                remember(uid);
            }
        }
    }
    cr_assert_eq(q, res.npods);
    cr_assert_eq(rj, res.nrejected);
    pol_plan_result_release(&res);
}

/* 60 random changes on cluster spec, each followed by a plan of one to three jobs, mostly twins
 * of the first (one memo key): each meets the index the one before left. */
static void random_plans(const char *spec, unsigned long long seed, bool pack)
{
    setup_spec(spec, seed);
    pol_ledger_set_pack(la, pack);
    pol_ledger_set_pack(lb, pack);
    nuids = 0;
    for (int step = 0; step < 60; step++) {
        size_t njobs = 1 + rnd(3), s0 = rnd(NSHAPES), nrep[3];
        const struct shape *sh[3];

        random_change();
        for (size_t j = 0; j < njobs; j++) {
            size_t t = j == 0 ? s0 : rnd(3) ? twin_of(j == 1 ? s0 : twin_of(s0)) : rnd(NSHAPES);
            sh[j] = &shapes[t];
            nrep[j] = 1 + rnd(4);
        }
        plan_as_the_full_pass(sh, nrep, njobs, spec, step);
    }
    teardown();
}

Test(pol_index, the_plan_places_as_the_full_pass_after_random_changes, .fini = teardown)
{
    for (size_t sp = 0; sp < sizeof(specs) / sizeof(specs[0]); sp++)
        random_plans(specs[sp], 0x2545f4914f6cdd1dULL + sp, false);
}

/* The experimental rack rank (pol_ledger_set_pack, policy/pack.c) compares racks with each other:
 * the index answers no first member while it is on, so the plan is still the full pass's. */
Test(pol_index, the_plan_with_the_packing_rank_on_is_the_full_pass, .fini = teardown)
{
    random_plans(specs[0], 77, true);
    random_plans(specs[3], 78, true);
}

static size_t shape_index(unsigned tp, unsigned pp, unsigned n, char kv_role)
{
    for (size_t i = 0; i < NSHAPES; i++) {
        if (shapes[i].tp == tp && shapes[i].pp == pp && shapes[i].n == n &&
            shapes[i].kv_role == kv_role && shapes[i].scope == POL_SCOPE_RACK)
            return i;
    }
    cr_assert_fail("no shape %u %u %u %c", tp, pp, n, kv_role);
    return 0;
}

/* Group `group` of shape s committed on both ledgers, pod k on node nodes[k]. */
static void commit_both(const struct shape *s, const char *group, const char *const *nodes)
{
    struct tpx_err err = TPX_ERR_INIT;

    for (unsigned k = 0; k < s->n; k++) {
        struct pol_workload w = pod_of(s, group, k);
        struct pol_placement p;
        char uid[POL_KEY_MAX + 32];
        size_t node = topo_cluster_find(cl, nodes[k]);
        snprintf(uid, sizeof(uid), "%s-%u", group, k);
        cr_assert_eq(pol_commit(la, &w, uid, uid, node, now_t, 600, &p, &err), TPX_OK, "%s",
                     err.msg);
        cr_assert_eq(pol_commit(lb, &w, uid, uid, node, now_t, 600, &p, &err), TPX_OK, "%s",
                     err.msg);
    }
}

Test(pol_index, first_members_with_kv_peers_are_placed_as_the_full_pass, .fini = teardown)
{
    /* decode in r03 (block b2), prefill in r01 (b1): a prefill's first member looks to r03 and
     * b2, a decode's to r01 and b1; the jobs alternate on one memo key, so the index's per-rack
     * best, kept from the job before, would carry the other role's KV bonus */
    const struct shape *pre = &shapes[shape_index(8, 2, 2, 'p')];
    const struct shape *dec = &shapes[shape_index(8, 2, 2, 'd')];
    const char *on_r03[] = {"r03-n01", "r03-n02"}, *on_r01[] = {"r01-n01", "r01-n02"};
    const struct shape *sh[3] = {pre, dec, pre};
    size_t nrep[3] = {1, 2, 1};

    setup_spec("racks=4,nodes-per-rack=4,gpus-per-node=8,blocks=2", 7);
    nuids = 0;
    commit_both(dec, "llm/dec0", on_r03);
    commit_both(pre, "llm/pre0", on_r01);
    plan_as_the_full_pass(sh, nrep, 3, "kv peers", 0);
    sh[0] = dec;
    sh[1] = pre;
    sh[2] = dec;
    plan_as_the_full_pass(sh, nrep, 3, "kv peers", 1);
}

Test(pol_index, shapes_apart_only_in_the_rdma_term_keep_their_own_best, .fini = teardown)
{
    /* r01 says rdma-nics 0 and is the fullest rack. tp 8 x pp 2 over 2 pods of 8 crosses nodes:
     * scored 3 lower on r01, it goes to r02 (twice, filling it); dp 2 of tp 8 sends nothing
     * between its pods, so r01, untouched by the plan so far, is its best again */
    const struct shape *pp = &shapes[shape_index(8, 2, 2, 0)];
    const struct shape *dp = &shapes[shape_index(8, 1, 2, 0)];
    const struct shape *sh[2] = {pp, dp};
    size_t nrep[2] = {2, 1};
    struct tpx_err err = TPX_ERR_INIT;

    setup_spec("racks=4,nodes-per-rack=4,gpus-per-node=8,rdma-nics=8,no-rdma-racks=1", 11);
    nuids = 0;
    cr_assert_eq(pol_ledger_use(la, topo_cluster_find(cl, "r01-n01"), 8, &err), TPX_OK);
    cr_assert_eq(pol_ledger_use(lb, topo_cluster_find(cl, "r01-n01"), 8, &err), TPX_OK);
    plan_as_the_full_pass(sh, nrep, 2, "rdma term", 0);
    /* what the case is for: r02 full of the pipeline, the dp group in r01 */
    for (unsigned r = 1; r <= 2; r++) {
        unsigned full = 0;
        for (unsigned k = 1; k <= 4; k++) {
            char name[16];
            snprintf(name, sizeof(name), "r%02u-n%02u", r, k);
            full += pol_ledger_node_free(lb, topo_cluster_find(cl, name)) == 0;
        }
        cr_expect_eq(full, r == 1 ? 3 : 4, "r%02u: %u nodes full", r, full);
    }
}

Test(pol_index, a_new_group_takes_the_lowest_free_record, .fini = teardown)
{
    /* the groups are listed in record order, and a new group reuses the lowest free record, as a
     * scan from the first record finds it */
    const struct shape one = {8, 1, 1, 8, POL_SCOPE_RACK, false, false, false, 0, 0, false};
    const char *names[] = {"a/0", "a/1", "a/2", "a/3"};
    struct pol_group_summary gs[4];
    struct tpx_err err = TPX_ERR_INIT;
    struct pol_placement p;

    setup_spec("racks=2,nodes-per-rack=4", 1);
    for (size_t i = 0; i < 3; i++) {
        struct pol_workload w = pod_of(&one, names[i], 0);
        cr_assert_eq(pol_commit(la, &w, names[i], names[i], i, NOW, 600, &p, &err), TPX_OK, "%s",
                     err.msg);
    }
    cr_assert(pol_ledger_forget_pod(la, "a/0"));
    cr_assert(pol_ledger_forget_pod(la, "a/1"));
    {
        struct pol_workload w = pod_of(&one, names[3], 0);
        cr_assert_eq(pol_commit(la, &w, names[3], names[3], 4, NOW, 600, &p, &err), TPX_OK);
    }
    cr_assert_eq(pol_ledger_group_count(la), 2);
    pol_ledger_groups(la, gs);
    cr_expect_str_eq(gs[0].group, "a/3");
    cr_expect_str_eq(gs[1].group, "a/2");
}

/* The verdict of node `name` for w through memo m, checked against the call without a memo. */
static enum pol_verdict verdict_on(struct pol_scope_memo *m, const struct pol_workload *w,
                                   const char *name)
{
    size_t node = topo_cluster_find(cl, name);

    expect_same_answers(m, w, name);
    {
        struct pol_filter_result r;
        struct tpx_err err = TPX_ERR_INIT;
        enum pol_verdict v;
        cr_assert_eq(pol_filter_memo(la, m, w, &node, 1, now_t, &r, &err), TPX_OK, "%s", err.msg);
        v = r.verdict[0];
        pol_filter_result_release(&r);
        return v;
    }
}

/* A first member's kept answers (each node's cell in the memo) follow what happens in its rack:
 * the bench's shape (the first of an LWS group of 2, TP 8 x PP 2, 8 GPUs a pod) fits an empty
 * rack; once another group's first member is bound there and holds the rest, the rack cannot take
 * a whole group; the hold's expiry and the bound pod's leaving give it back; a later member of the
 * bound group, asked in between on the same memo, changes none of that. */
Test(pol_index, a_first_members_kept_answers_follow_binds_holds_and_releases, .fini = teardown)
{
    const struct shape *s = &shapes[0];
    struct pol_scope_memo *m = pol_scope_memo_new();
    struct pol_workload probe = pod_of(s, "probe/first", 0), a0 = pod_of(s, "llm/a", 0);
    struct pol_workload a1 = pod_of(s, "llm/a", 1);
    struct pol_placement p;
    struct tpx_err err = TPX_ERR_INIT;

    cr_assert_not_null(m);
    setup_spec("racks=2,nodes-per-rack=2,gpus-per-node=8", 3);
    cr_expect_eq(verdict_on(m, &probe, "r01-n01"), POL_FIT);
    cr_expect_eq(verdict_on(m, &probe, "r01-n02"), POL_FIT);
    cr_assert_eq(pol_commit(la, &a0, "llm/a-0", "llm/a-0", topo_cluster_find(cl, "r01-n01"), now_t,
                            600, &p, &err),
                 TPX_OK, "%s", err.msg);
    /* r01-n01 is taken and r01-n02 held for llm/a's second pod: no room for a whole group */
    cr_expect_neq(verdict_on(m, &probe, "r01-n02"), POL_FIT);
    cr_expect_neq(verdict_on(m, &probe, "r01-n01"), POL_FIT);
    cr_expect_eq(verdict_on(m, &probe, "r02-n01"), POL_FIT);
    a1.tp_explicit = false;
    expect_same_answers(m, &a1, "the bound group's second pod");
    cr_expect_neq(verdict_on(m, &probe, "r01-n02"), POL_FIT);
    /* the hold expires: still one node short in r01 */
    now_t += 1200;
    cr_expect_gt(pol_ledger_expire(la, now_t), 0);
    cr_expect_neq(verdict_on(m, &probe, "r01-n02"), POL_FIT);
    /* the bound pod leaves: r01 is whole again */
    cr_assert(pol_ledger_forget_pod(la, "llm/a-0"));
    cr_expect_eq(verdict_on(m, &probe, "r01-n01"), POL_FIT);
    cr_expect_eq(verdict_on(m, &probe, "r01-n02"), POL_FIT);
    pol_scope_memo_free(m);
}

/* One memo's cells against the full pass while the pack flags are turned on and off between calls
 * (the cells must step aside while either is on) and the resource name differs between shapes
 * otherwise alike (part of the cells' key). */
Test(pol_index, kept_cells_answer_as_the_full_pass_with_pack_flags_and_resources_changing,
     .fini = teardown)
{
    static const char *const res[] = {"nvidia.com/gpu", "", "amd.com/gpu"};

    for (size_t sp = 0; sp < sizeof(specs) / sizeof(specs[0]); sp++) {
        struct pol_scope_memo *shared = pol_scope_memo_new();

        setup_spec(specs[sp], 0x1234567ULL + sp);
        nuids = 0;
        for (int step = 0; step < 120; step++) {
            random_change();
            for (size_t s = 0; s < NSHAPES; s++) {
                struct pol_workload w = pod_of(&shapes[s], "probe/first", 0);
                char what[128];
                unsigned t = rnd(3);

                snprintf(w.resource, sizeof(w.resource), "%s", res[rnd(3)]);
                if (t == 1)
                    pol_ledger_set_pack_term(la, true);
                else if (t == 2)
                    pol_ledger_set_pack(la, rnd(2));
                else
                    pol_ledger_set_pack(la, false);
                snprintf(what, sizeof(what), "%s, step %d, shape %zu, res %s, pack %u", specs[sp],
                         step, s, w.resource, t);
                expect_same_on_some(shared, &w, what);
                expect_same_answers(shared, &w, what);
                pol_ledger_set_pack(la, false);
            }
        }
        pol_scope_memo_free(shared);
        teardown();
    }
}
