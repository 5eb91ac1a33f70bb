/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/policy/test_pack.c - the absolute per-rack packing term of policy/pack.c
 * (pol_ledger_set_pack_term, docs/simulate.md): what it prefers on small hand-made ledgers (a whole
 * free NVLink domain kept for a live TP 16 shape, a hole filled before a whole node), that it never
 * changes a verdict, that a rack's score reads that rack only (what a placement index needs), and
 * that the per-rack cache in the scope memo answers what the pass without a memo answers. */
#include "policy/policy.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "topology/synthetic.h"

#define NOW 1000000
#define MAXN 256

static struct topo_cluster *cl;
static struct pol_ledger *led, *plain;
static size_t all[MAXN];

/* A ledger with the term (led) and one without (plain) over the same cluster. */
static void setup(const char *spec)
{
    struct tpx_err err = TPX_ERR_INIT;

    cl = topo_cluster_synthetic(spec, &err);
    cr_assert_not_null(cl, "%s", err.msg);
    cr_assert(topo_cluster_node_count(cl) <= MAXN);
    led = pol_ledger_new(cl, &err);
    plain = pol_ledger_new(cl, &err);
    cr_assert(led && plain, "%s", err.msg);
    pol_ledger_set_pack_term(led, true);
    for (size_t i = 0; i < MAXN; i++)
        all[i] = i;
}

static void teardown(void)
{
    pol_ledger_free(led);
    pol_ledger_free(plain);
    topo_cluster_free(cl);
    led = plain = NULL;
    cl = NULL;
}

/* Pod idx of group `group`: n pods of g accelerators, TP tp, PP pp, in one rack. */
static struct pol_workload pod(const char *group, unsigned tp, unsigned pp, unsigned g, unsigned n,
                               int idx)
{
    struct pol_workload wl = {.has_intent = true,
                              .tp = tp,
                              .pp = pp,
                              .dp = g * n / (tp * pp) ? g * n / (tp * pp) : 1,
                              .accel_per_pod = g,
                              .group_size = n,
                              .pod_index = idx,
                              .scope = POL_SCOPE_RACK,
                              .tp_explicit = true,
                              .pp_explicit = true,
                              .size_explicit = true,
                              .tp_source = "annotation",
                              .resource = "nvidia.com/gpu"};
    snprintf(wl.group, sizeof(wl.group), "%s", group);
    snprintf(wl.display, sizeof(wl.display), "%s", group);
    return wl;
}

static size_t node_of(const char *name)
{
    size_t i = topo_cluster_find(cl, name);
    cr_assert_neq(i, TOPO_NONE, "%s", name);
    return i;
}

/* Both ledgers: accel more used on node name (negative: freed). */
static void use(const char *name, int accel)
{
    struct tpx_err err = TPX_ERR_INIT;

    cr_assert_eq(pol_ledger_use(led, node_of(name), accel, &err), TPX_OK);
    cr_assert_eq(pol_ledger_use(plain, node_of(name), accel, &err), TPX_OK);
}

/* The best-scored node that passes the filter on l (ties: the lowest index), or TOPO_NONE. */
static size_t choose(struct pol_ledger *l, struct pol_scope_memo *m, const struct pol_workload *wl)
{
    size_t n = topo_cluster_node_count(cl), best = TOPO_NONE;
    struct pol_filter_result res;
    int scores[MAXN];
    struct tpx_err err = TPX_ERR_INIT;

    cr_assert_eq(pol_filter_memo(l, m, wl, all, n, NOW, &res, &err), TPX_OK, "%s", err.msg);
    cr_assert_eq(pol_score_memo(l, m, wl, all, n, NOW, scores, &err), TPX_OK, "%s", err.msg);
    for (size_t i = 0; i < n; i++) {
        cr_assert(scores[i] >= 0 && scores[i] <= 10, "score %d", scores[i]);
        if (res.verdict[i] == POL_FIT && (best == TOPO_NONE || scores[i] > scores[best]))
            best = i;
    }
    pol_filter_result_release(&res);
    return best;
}

/* Commit wl on node at on l under uid. */
static void commit(struct pol_ledger *l, const struct pol_workload *wl, const char *uid, size_t at)
{
    struct pol_placement p;
    struct tpx_err err = TPX_ERR_INIT;

    cr_assert_eq(pol_commit(l, wl, uid, uid, at, NOW, 600, &p, &err), TPX_OK, "%s", err.msg);
}

/* Place every pod of the group (n pods, leader first) on both ledgers where l chooses. */
static void place_group(struct pol_ledger *l, const char *group, unsigned tp, unsigned pp,
                        unsigned g, unsigned n)
{
    for (unsigned k = 0; k < n; k++) {
        struct pol_workload wl = pod(group, tp, pp, g, n, (int)k);
        char uid[64];
        size_t at = choose(l, NULL, &wl);
        cr_assert_neq(at, TOPO_NONE, "%s/%u", group, k);
        snprintf(uid, sizeof(uid), "%s/%u", group, k);
        commit(led, &wl, uid, at);
        commit(plain, &wl, uid, at);
    }
}

/* Two-node NVLink domains (n01+n02, n03+n04 of each rack). A TP 16 group lives in r03. r01 has
 * 20 free: a whole free domain and 4 on n03; r02 has 24: one free node in its first domain and
 * a whole free second domain. An 8-GPU pod left alone by best fit goes to r01 (12 left, not 16),
 * and the only node there that takes it opens r01's whole domain: no TP 16 group fits r01 after.
 * The term counts that loss (16 GPUs of a live shape) and puts the pod in r02's half-used
 * domain, where both racks keep a whole domain each. */
Test(pol_pack, the_term_keeps_a_whole_domain_for_a_live_tp16_shape, .fini = teardown)
{
    static const char *const busy[] = {"r01-n01", "r01-n02", "r01-n03", "r01-n04",
                                       "r02-n01", "r02-n02", "r02-n03", "r02-n04"};
    struct pol_workload solo = pod("solo", 8, 1, 8, 1, 0);
    size_t a, b;

    setup("racks=3,nodes-per-rack=4,gpus-per-node=8,domain-nodes=2");
    for (size_t i = 0; i < sizeof(busy) / sizeof(busy[0]); i++)
        use(busy[i], 8);
    place_group(plain, "big", 16, 1, 8, 2);
    use("r03-n03", 8);
    use("r03-n04", 8);
    /* r01: n01 and n02 free, n03 4 free, n04 full; r02: n01 free, n02 full, n03 and n04 free */
    use("r01-n01", -8);
    use("r01-n02", -8);
    use("r01-n03", -4);
    use("r02-n01", -8);
    use("r02-n03", -8);
    use("r02-n04", -8);
    a = choose(plain, NULL, &solo);
    b = choose(led, NULL, &solo);
    cr_assert(a != TOPO_NONE && b != TOPO_NONE);
    cr_expect_str_eq(topo_cluster_rack_name(cl, topo_cluster_node_rack(cl, a)), "r01",
                     "best fit: the rack left with the least free");
    cr_expect_str_eq(topo_cluster_node(cl, b)->name, "r02-n01",
                     "the term: the half-used domain of r02, not a whole one");
}

/* Two racks of two 8-GPU nodes: r01 holds a live 8-GPU pod and has one whole node left, r02 has
 * a 4-GPU hole and a whole node. A 4-GPU pod: best fit takes r01-n02 (r01 is left with less
 * free), which costs r01 its last place for the live 8-GPU shape; the term fills r02's hole. */
Test(pol_pack, the_term_fills_a_hole_before_a_whole_node, .fini = teardown)
{
    struct pol_workload small = pod("small", 4, 1, 4, 1, 0);
    size_t a, b;

    setup("racks=2,nodes-per-rack=2,gpus-per-node=8");
    place_group(plain, "big", 8, 1, 8, 1); /* r01-n01 */
    use("r02-n01", 4);
    a = choose(plain, NULL, &small);
    b = choose(led, NULL, &small);
    cr_assert(a != TOPO_NONE && b != TOPO_NONE);
    cr_expect_str_eq(topo_cluster_node(cl, a)->name, "r01-n02", "best fit");
    cr_expect_str_eq(topo_cluster_node(cl, b)->name, "r02-n01",
                     "the hole of r02 rather than r01's last whole node");
}

/* A pseudo-random walk of groups arriving and leaving, the same on both ledgers (placed where the
 * term chooses): at every step the filter's verdicts of several shapes are the same with the term
 * and without it (a score only orders what the rules allow), and the scores with a memo kept
 * across the walk (the term's per-rack cache) are the scores without one. */
Test(pol_pack, the_term_never_changes_a_verdict_and_its_cache_is_exact, .fini = teardown)
{
    static const unsigned shapes[][4] = {
        /* tp, pp, gpus per pod, pods */
        {8, 1, 8, 1}, {4, 1, 4, 1}, {16, 1, 8, 2}, {8, 2, 8, 2}, {8, 3, 8, 3}, {4, 2, 4, 2},
    };
    const size_t nshape = sizeof(shapes) / sizeof(shapes[0]);
    struct pol_scope_memo *memo = pol_scope_memo_new(), *fmemo = pol_scope_memo_new();
    unsigned long long r = 88172645463325252ULL;
    size_t n;
    char live[64][32];
    unsigned live_pods[64];
    size_t nlive = 0;

    cr_assert(memo && fmemo);
    setup("racks=4,nodes-per-rack=4,gpus-per-node=8,domain-nodes=2");
    n = topo_cluster_node_count(cl);
    for (int step = 0; step < 160; step++) {
        r ^= r << 13;
        r ^= r >> 7;
        r ^= r << 17;
        if (nlive > 0 && (r % 3 == 0 || nlive == 64)) {
            size_t k = (size_t)(r >> 8) % nlive;
            for (unsigned q = 0; q < live_pods[k]; q++) {
                char uid[64];
                snprintf(uid, sizeof(uid), "%s/%u", live[k], q);
                pol_ledger_forget_pod(led, uid);
                pol_ledger_forget_pod(plain, uid);
            }
            memcpy(live[k], live[nlive - 1], sizeof(live[k]));
            live_pods[k] = live_pods[nlive - 1];
            nlive--;
        } else {
            const unsigned *s = shapes[(r >> 16) % nshape];
            char name[32];
            unsigned placed = 0;
            snprintf(name, sizeof(name), "g%d", step);
            for (unsigned k = 0; k < s[3]; k++) {
                struct pol_workload wl = pod(name, s[0], s[1], s[2], s[3], (int)k);
                char uid[64];
                size_t at = choose(led, memo, &wl);
                if (at == TOPO_NONE)
                    break;
                snprintf(uid, sizeof(uid), "%s/%u", name, k);
                commit(led, &wl, uid, at);
                commit(plain, &wl, uid, at);
                placed++;
            }
            if (placed > 0) {
                snprintf(live[nlive], sizeof(live[nlive]), "%s", name);
                live_pods[nlive++] = placed;
            }
        }
        for (size_t q = 0; q < nshape; q++) {
            const unsigned *s = shapes[q];
            struct pol_workload wl = pod("probe", s[0], s[1], s[2], s[3], 0);
            struct pol_filter_result ra, rb;
            int sa[MAXN], sb[MAXN];
            struct tpx_err err = TPX_ERR_INIT;
            cr_assert_eq(pol_filter_memo(led, fmemo, &wl, all, n, NOW, &ra, &err), TPX_OK);
            cr_assert_eq(pol_filter(plain, &wl, all, n, NOW, &rb, &err), TPX_OK);
            for (size_t i = 0; i < n; i++)
                cr_assert_eq(ra.verdict[i], rb.verdict[i], "step %d shape %zu node %zu", step, q,
                             i);
            pol_filter_result_release(&ra);
            pol_filter_result_release(&rb);
            cr_assert_eq(pol_score_memo(led, memo, &wl, all, n, NOW, sa, &err), TPX_OK);
            cr_assert_eq(pol_score(led, &wl, all, n, NOW, sb, &err), TPX_OK);
            for (size_t i = 0; i < n; i++)
                cr_assert_eq(sa[i], sb[i], "step %d shape %zu node %zu: memo %d, none %d", step, q,
                             i, sa[i], sb[i]);
        }
    }
    pol_scope_memo_free(memo);
    pol_scope_memo_free(fmemo);
}

/* What a placement index needs: the term of a rack reads that rack's state and the set of live
 * shapes only. Use on r01 (no group: the set stays) moves no score outside r01. */
Test(pol_pack, a_racks_term_reads_that_rack_only, .fini = teardown)
{
    struct pol_workload solo = pod("solo", 8, 1, 8, 1, 0);
    size_t n;
    int before[MAXN], after[MAXN];
    struct tpx_err err = TPX_ERR_INIT;

    setup("racks=3,nodes-per-rack=4,gpus-per-node=8,domain-nodes=2");
    n = topo_cluster_node_count(cl);
    place_group(led, "big", 16, 1, 8, 2);
    place_group(led, "pair", 8, 2, 8, 2);
    use("r02-n03", 4);
    cr_assert_eq(pol_score(led, &solo, all, n, NOW, before, &err), TPX_OK);
    use("r01-n04", 4);
    cr_assert_eq(pol_score(led, &solo, all, n, NOW, after, &err), TPX_OK);
    for (size_t i = 0; i < n; i++) {
        if (strcmp(topo_cluster_rack_name(cl, topo_cluster_node_rack(cl, i)), "r01") != 0)
            cr_expect_eq(before[i], after[i], "node %s", topo_cluster_node(cl, i)->name);
    }
}
