/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/policy/test_prefer.c - the traffic rules beside TP (docs/workloads.md): a group whose
 * TP or EP traffic crosses nodes and nodes that say topox.io/rdma-nics 0 (hard only for a certain
 * layout, scored otherwise and for pipeline sends alone, never for an unknown count), the KV
 * transfer of one deployment's prefill and decode groups (score only), and an EP group wider than
 * its TP unit held in one NVLink domain. */
#include "policy/policy.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "topology/synthetic.h"

#define NOW 1000000

static struct topo_cluster *cl;
static struct pol_ledger *led;
static size_t all[256];

static void setup_spec(const char *spec)
{
    struct tpx_err err = TPX_ERR_INIT;

    cl = topo_cluster_synthetic(spec, &err);
    cr_assert_not_null(cl, "%s", err.msg);
    led = pol_ledger_new(cl, &err);
    cr_assert_not_null(led, "%s", err.msg);
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        all[i] = i;
}

static void teardown(void)
{
    pol_ledger_free(led);
    topo_cluster_free(cl);
    led = NULL;
    cl = NULL;
}

/* Member idx of group `group`: n pods of g, tp x pp x dp, ep; a certain layout unless said. */
static struct pol_workload member(const char *group, unsigned tp, unsigned pp, unsigned dp,
                                  unsigned ep, unsigned g, unsigned n, int idx)
{
    struct pol_workload wl = {.has_intent = true,
                              .tp = tp,
                              .pp = pp,
                              .dp = dp,
                              .accel_per_pod = g,
                              .group_size = n,
                              .pod_index = idx,
                              .tp_explicit = true,
                              .pp_explicit = true,
                              .size_explicit = true,
                              .tp_source = "annotation",
                              .resource = "nvidia.com/gpu"};
    wl.layout.tp = tp;
    wl.layout.pp = pp;
    wl.layout.dp = dp;
    wl.layout.ep = ep;
    wl.layout.accel = tp * pp * dp;
    wl.layout.certain = true;
    wl.layout.engine = "";
    snprintf(wl.group, sizeof(wl.group), "%s", group);
    snprintf(wl.display, sizeof(wl.display), "%s", group);
    return wl;
}

/* The same, read as uncertain: placed as preferred (pol_workload_uncertain). */
static struct pol_workload uncertain(struct pol_workload wl)
{
    wl.layout.certain = false;
    pol_workload_uncertain(&wl, POL_UNCERTAIN_PREFER);
    return wl;
}

static size_t node_of(const char *name)
{
    size_t i = topo_cluster_find(cl, name);
    cr_assert_neq(i, TOPO_NONE, "%s", name);
    return i;
}

static enum pol_verdict verdict_on(const struct pol_workload *wl, const char *node, char *why,
                                   size_t whylen)
{
    struct pol_filter_result res;
    struct tpx_err err = TPX_ERR_INIT;
    size_t i = node_of(node);
    enum pol_verdict v;

    cr_assert_eq(pol_filter(led, wl, &i, 1, NOW, &res, &err), TPX_OK, "%s", err.msg);
    v = res.verdict[0];
    if (why)
        snprintf(why, whylen, "%s", v == POL_FIT ? "" : res.reasons[res.reason[0]]);
    pol_filter_result_release(&res);
    return v;
}

static int score_on(const struct pol_workload *wl, const char *node)
{
    struct tpx_err err = TPX_ERR_INIT;
    size_t i = node_of(node);
    int s = -1;

    cr_assert_eq(pol_score(led, wl, &i, 1, NOW, &s, &err), TPX_OK, "%s", err.msg);
    return s;
}

/* filter, score, best, commit: what serve does for one pod. TOPO_NONE when nothing fits. */
static size_t place(const struct pol_workload *wl, const char *uid, struct pol_placement *out)
{
    size_t n = topo_cluster_node_count(cl), best = TOPO_NONE;
    struct pol_filter_result res;
    int scores[256];
    struct tpx_err err = TPX_ERR_INIT;

    cr_assert_eq(pol_filter(led, wl, all, n, NOW, &res, &err), TPX_OK, "%s", err.msg);
    cr_assert_eq(pol_score(led, wl, all, n, NOW, scores, &err), TPX_OK, "%s", err.msg);
    for (size_t i = 0; i < n; i++) {
        if (res.verdict[i] == POL_FIT && (best == TOPO_NONE || scores[i] > scores[best]))
            best = i;
    }
    pol_filter_result_release(&res);
    if (best != TOPO_NONE)
        cr_assert_eq(pol_commit(led, wl, uid, uid, best, NOW, 600, out, &err), TPX_OK, "%s",
                     err.msg);
    return best;
}

/* --- RDMA NICs --------------------------------------------------------------------------------
 */

/* 2 racks x 2 nodes x 8 GPUs; the nodes of r1 say topox.io/rdma-nics 0, those of r2 say 8. */
#define TWO_RACKS_R1_NO_RDMA "racks=2,nodes-per-rack=2,gpus-per-node=8,rdma-nics=8,no-rdma-racks=1"

Test(pol_prefer, certain_group_crossing_nodes_is_kept_off_nodes_without_rdma, .fini = teardown)
{
    /* tp 8 x dp 2 with ep 16 over 2 pods of 8: the EP all-to-all crosses nodes */
    struct pol_workload w0 = member("ep", 8, 1, 2, 16, 8, 2, 0);
    struct pol_workload w1 = member("ep", 8, 1, 2, 16, 8, 2, 1);
    struct pol_placement p0, p1;
    char why[512];

    setup_spec(TWO_RACKS_R1_NO_RDMA);
    cr_expect_eq(verdict_on(&w0, "r01-n01", why, sizeof(why)), POL_UNRESOLVABLE);
    cr_expect(strstr(why, "no RDMA NIC (topox.io/rdma-nics 0)"), "%s", why);
    cr_expect(strstr(why, "only 8 fit without leaving this node's interconnect domain"), "%s", why);
    cr_expect_eq(verdict_on(&w0, "r02-n01", NULL, 0), POL_FIT);
    cr_assert_neq(place(&w0, "a", &p0), TOPO_NONE);
    cr_assert_neq(place(&w1, "b", &p1), TOPO_NONE);
    cr_expect_str_eq(p0.rack, "r02");
    cr_expect_str_eq(p1.rack, "r02");
}

/* Pipeline sends alone never make the rule hard: NCCL carries them over TCP where a node has no
 * RDMA NIC (slower, not broken), so a certain tp 8 x pp 2 group only scores such nodes lower. */
Test(pol_prefer, pipeline_alone_scores_nodes_without_rdma_lower_but_never_rejects, .fini = teardown)
{
    struct pol_workload w = member("pp", 8, 2, 1, 1, 8, 2, 0);

    setup_spec(TWO_RACKS_R1_NO_RDMA);
    cr_expect_eq(verdict_on(&w, "r01-n01", NULL, 0), POL_FIT);
    cr_expect_eq(verdict_on(&w, "r02-n01", NULL, 0), POL_FIT);
    cr_expect_lt(score_on(&w, "r01-n01"), score_on(&w, "r02-n01"), "r1 %d, r2 %d",
                 score_on(&w, "r01-n01"), score_on(&w, "r02-n01"));
}

Test(pol_prefer, rack_without_rdma_is_not_counted_for_the_gang, .fini = teardown)
{
    /* an EP 16 group of 2 pods of 8 needs both nodes of a rack; only r2 has NICs, and once r2 is
     * half used no rack fits now */
    struct pol_workload w = member("g", 8, 1, 2, 16, 8, 2, 0);
    char why[512];

    setup_spec(TWO_RACKS_R1_NO_RDMA);
    cr_expect_eq(verdict_on(&w, "r02-n01", NULL, 0), POL_FIT);
    /* r1's two free nodes do not make r1 a rack for the group */
    {
        struct tpx_err err = TPX_ERR_INIT;
        cr_assert_eq(pol_ledger_use(led, node_of("r02-n02"), 8, &err), TPX_OK);
    }
    cr_expect_neq(verdict_on(&w, "r02-n01", why, sizeof(why)), POL_FIT);
    cr_expect(strstr(why, "rack r02"), "%s", why);
    cr_expect_eq(verdict_on(&w, "r01-n01", why, sizeof(why)), POL_UNRESOLVABLE);
    cr_expect(strstr(why, "rdma-nics 0"), "%s", why);
}

Test(pol_prefer, uncertain_layout_scores_nodes_without_rdma_lower, .fini = teardown)
{
    struct pol_workload w = uncertain(member("pp", 8, 2, 1, 1, 8, 2, 0));

    setup_spec(TWO_RACKS_R1_NO_RDMA);
    /* never rejected: the layout is not certain */
    w.tp = 8;
    w.pp = 2;
    cr_expect(w.preferred);
    cr_expect_eq(verdict_on(&w, "r01-n01", NULL, 0), POL_FIT);
    cr_expect_lt(score_on(&w, "r01-n01"), score_on(&w, "r02-n01"), "r1 %d, r2 %d",
                 score_on(&w, "r01-n01"), score_on(&w, "r02-n01"));
    /* once the group stands in r01, the place held for the next member stays its best */
    {
        struct pol_workload w1 = uncertain(member("pp", 8, 2, 1, 1, 8, 2, 1));
        struct pol_placement p0;
        struct tpx_err err = TPX_ERR_INIT;

        w1.tp = 8;
        w1.pp = 2;
        cr_assert_eq(pol_commit(led, &w, "a", "a", node_of("r01-n01"), NOW, 600, &p0, &err), TPX_OK,
                     "%s", err.msg);
        cr_expect_eq(score_on(&w1, "r01-n02"), 10);
    }
}

Test(pol_prefer, unknown_nic_count_and_groups_inside_one_node_are_untouched, .fini = teardown)
{
    /* Dynamo's TP 8 over two 4-GPU pods fits one 8-GPU node: no traffic has to leave it */
    struct pol_workload inside = member("dyn", 8, 1, 1, 1, 4, 2, 0);
    struct pol_workload cross = member("pp", 8, 2, 1, 1, 8, 2, 0);
    int s1, s2;

    setup_spec(TWO_RACKS_R1_NO_RDMA);
    cr_expect_eq(verdict_on(&inside, "r01-n01", NULL, 0), POL_FIT);
    s1 = score_on(&inside, "r01-n01");
    s2 = score_on(&inside, "r02-n01");
    cr_expect_eq(s1, s2, "r1 %d, r2 %d", s1, s2);
    teardown();
    /* no topox.io/rdma-nics label: unknown, never 0 */
    setup_spec("racks=2,nodes-per-rack=2,gpus-per-node=8");
    cr_expect_eq(verdict_on(&cross, "r01-n01", NULL, 0), POL_FIT);
    cr_expect_eq(score_on(&cross, "r01-n01"), score_on(&cross, "r02-n01"));
}

Test(pol_prefer, multi_node_nvlink_domain_is_reach_without_rdma, .fini = teardown)
{
    /* an NVL domain of 4 nodes x 4 GPUs without NICs holds an EP 16 group whole over NVLink */
    struct pol_workload w = member("ep", 1, 1, 16, 16, 4, 4, 0);
    struct pol_workload big = member("ep2", 1, 1, 32, 32, 4, 8, 0);
    char why[512];

    setup_spec("racks=1,nodes-per-rack=8,gpus-per-node=4,interconnect=nvlink,domain-nodes=4,"
               "no-rdma-racks=1");
    cr_expect_eq(verdict_on(&w, "r01-n01", NULL, 0), POL_FIT);
    /* 32 GPUs do not fit one 16-GPU domain: the EP all-to-all would need NICs */
    cr_expect_eq(verdict_on(&big, "r01-n01", why, sizeof(why)), POL_UNRESOLVABLE);
    cr_expect(strstr(why, "only 16 fit without"), "%s", why);
}

/* --- KV transfer prefill -> decode ------------------------------------------------------------
 */

Test(pol_prefer, prefill_prefers_the_rack_then_the_block_of_its_decode, .fini = teardown)
{
    /* 4 racks in 2 blocks (r1 r2 in b1, r3 r4 in b2) of 4 nodes x 8 */
    struct pol_workload dec = member("dec", 8, 1, 1, 1, 8, 1, 0);
    struct pol_workload pre = member("pre", 8, 1, 1, 1, 8, 1, 0);
    struct pol_workload plain = pre;
    struct pol_placement pd;
    struct tpx_err err = TPX_ERR_INIT;
    size_t r3;
    int d_same, d_block, d_other;

    setup_spec("racks=4,nodes-per-rack=4,gpus-per-node=8,blocks=2");
    snprintf(dec.kv_group, sizeof(dec.kv_group), "llm/ds:x/0");
    dec.kv_role = 'd';
    snprintf(pre.kv_group, sizeof(pre.kv_group), "llm/ds:x/0");
    pre.kv_role = 'p';
    r3 = node_of("r03-n01");
    cr_assert_eq(pol_commit(led, &dec, "d", "d", r3, NOW, 600, &pd, &err), TPX_OK, "%s", err.msg);
    cr_expect_str_eq(pd.rack, "b2/r03");
    /* the bonus alone: the same prefill without a role against one with it */
    d_same = score_on(&pre, "r03-n02") - score_on(&plain, "r03-n02");
    d_block = score_on(&pre, "r04-n01") - score_on(&plain, "r04-n01");
    d_other = score_on(&pre, "r01-n01") - score_on(&plain, "r01-n01");
    cr_expect_eq(d_same, 2, "same rack %d", d_same);
    cr_expect_eq(d_block, 1, "same block %d", d_block);
    cr_expect_eq(d_other, 0, "other block %d", d_other);
    /* another deployment's prefill, or a second decode, gets nothing */
    {
        struct pol_workload other = pre, dec2 = dec;
        snprintf(other.kv_group, sizeof(other.kv_group), "llm/ds:y/0");
        snprintf(dec2.group, sizeof(dec2.group), "dec2");
        cr_expect_eq(score_on(&other, "r03-n02"), score_on(&plain, "r03-n02"));
        d_same = score_on(&dec2, "r03-n02");
        dec2.kv_role = 0;
        cr_expect_eq(d_same, score_on(&dec2, "r03-n02"), "decode beside decode %d", d_same);
    }
}

/* The KV pairing of a RoleBasedGroup's prefill and decode roles, read from the labels of each
 * controller generation (v1alpha1 rolebasedgroup.workloads.x-k8s.io/{name,role}, v1alpha2
 * rbg.workloads.x-k8s.io/{group-name,role-name}), an upgrade's mix of the two included: the
 * prefill scores +2 in the rack of its decode, whichever labels each carries. */
Test(pol_prefer, rbg_prefill_follows_its_decode_in_either_generation, .fini = teardown)
{
    static const struct topo_kv v1d[] = {{"rolebasedgroup.workloads.x-k8s.io/name", "pd"},
                                         {"rolebasedgroup.workloads.x-k8s.io/role", "decode"}};
    static const struct topo_kv v1p[] = {{"rolebasedgroup.workloads.x-k8s.io/name", "pd"},
                                         {"rolebasedgroup.workloads.x-k8s.io/role", "prefill"}};
    static const struct topo_kv v2d[] = {{"rbg.workloads.x-k8s.io/group-name", "pd"},
                                         {"rbg.workloads.x-k8s.io/role-name", "decode"}};
    static const struct topo_kv v2p[] = {{"rbg.workloads.x-k8s.io/group-name", "pd"},
                                         {"rbg.workloads.x-k8s.io/role-name", "prefill"}};
    static const struct {
        const struct topo_kv *dec, *pre;
    } gens[] = {{v1d, v1p}, {v2d, v2p}, {v1d, v2p}, {v2d, v1p}};

    for (size_t k = 0; k < sizeof(gens) / sizeof(gens[0]); k++) {
        struct pol_workload dec = member("dec", 8, 1, 1, 1, 8, 1, 0);
        struct pol_workload pre = member("pre", 8, 1, 1, 1, 8, 1, 0);
        struct pol_workload plain = pre, read;
        struct pol_pod_facts f = {.name = "p", .ns = "llm", .nlabels = 2, .accel = 8};
        struct pol_placement pd;
        struct tpx_err err = TPX_ERR_INIT;

        setup_spec("racks=4,nodes-per-rack=4,gpus-per-node=8,blocks=2");
        f.labels = gens[k].dec;
        cr_assert_eq(pol_workload_infer(&f, &read, &err), TPX_OK, "%s", err.msg);
        memcpy(dec.kv_group, read.kv_group, sizeof(dec.kv_group));
        dec.kv_role = read.kv_role;
        f.labels = gens[k].pre;
        cr_assert_eq(pol_workload_infer(&f, &read, &err), TPX_OK, "%s", err.msg);
        memcpy(pre.kv_group, read.kv_group, sizeof(pre.kv_group));
        pre.kv_role = read.kv_role;
        cr_expect_eq(dec.kv_role, 'd', "pair %zu", k);
        cr_expect_eq(pre.kv_role, 'p', "pair %zu", k);
        cr_assert_eq(pol_commit(led, &dec, "d", "d", node_of("r03-n01"), NOW, 600, &pd, &err),
                     TPX_OK, "%s", err.msg);
        cr_expect_eq(score_on(&pre, "r03-n02") - score_on(&plain, "r03-n02"), 2, "pair %zu", k);
        cr_expect_eq(score_on(&pre, "r04-n01") - score_on(&plain, "r04-n01"), 1, "pair %zu", k);
        teardown();
    }
}

/* A Grove PodCliqueSet of 2 replicas, each with its prefill and decode scaling groups: the pods'
 * labels as the operator sets them (app.kubernetes.io/part-of the set, grove.io/podclique,
 * grove.io/podcliqueset-replica-index). Replica 0's decode is in r03, replica 1's in r01: each
 * replica's prefill scores +2 in the rack of its own decode and nothing in the other's, where
 * the set's name alone would draw both prefills to both racks. */
Test(pol_prefer, grove_prefill_follows_the_decode_of_its_own_replica, .fini = teardown)
{
    static const struct topo_kv d0[] = {{"app.kubernetes.io/part-of", "pd"},
                                        {"grove.io/podclique", "pd-0-decode-0-dworker"},
                                        {"grove.io/podcliqueset-replica-index", "0"}};
    static const struct topo_kv d1[] = {{"app.kubernetes.io/part-of", "pd"},
                                        {"grove.io/podclique", "pd-1-decode-0-dworker"},
                                        {"grove.io/podcliqueset-replica-index", "1"}};
    static const struct topo_kv p0[] = {{"app.kubernetes.io/part-of", "pd"},
                                        {"grove.io/podclique", "pd-0-prefill-0-pworker"},
                                        {"grove.io/podcliqueset-replica-index", "0"}};
    static const struct topo_kv p1[] = {{"app.kubernetes.io/part-of", "pd"},
                                        {"grove.io/podclique", "pd-1-prefill-0-pworker"},
                                        {"grove.io/podcliqueset-replica-index", "1"}};
    static const struct {
        const struct topo_kv *kv;
        const char *group;
    } pods[] = {{d0, "d0"}, {d1, "d1"}, {p0, "p0"}, {p1, "p1"}};
    struct pol_workload wl[4], plain = member("p", 8, 1, 1, 1, 8, 1, 0);
    struct pol_placement pd;
    struct tpx_err err = TPX_ERR_INIT;

    setup_spec("racks=4,nodes-per-rack=4,gpus-per-node=8,blocks=2");
    for (size_t i = 0; i < 4; i++) {
        struct pol_pod_facts f = {
            .name = pods[i].group, .ns = "llm", .labels = pods[i].kv, .nlabels = 3, .accel = 8};
        struct pol_workload read;

        wl[i] = member(pods[i].group, 8, 1, 1, 1, 8, 1, 0);
        cr_assert_eq(pol_workload_infer(&f, &read, &err), TPX_OK, "%s", err.msg);
        memcpy(wl[i].kv_group, read.kv_group, sizeof(wl[i].kv_group));
        wl[i].kv_role = read.kv_role;
    }
    cr_expect_str_eq(wl[0].kv_group, "llm/grove:pd/0");
    cr_expect_str_eq(wl[1].kv_group, "llm/grove:pd/1");
    cr_expect_eq(wl[0].kv_role, 'd');
    cr_expect_eq(wl[3].kv_role, 'p');
    cr_assert_eq(pol_commit(led, &wl[0], "d0", "d0", node_of("r03-n01"), NOW, 600, &pd, &err),
                 TPX_OK, "%s", err.msg);
    cr_assert_eq(pol_commit(led, &wl[1], "d1", "d1", node_of("r01-n01"), NOW, 600, &pd, &err),
                 TPX_OK, "%s", err.msg);
    /* replica 1's prefill: its decode's rack r01, its block (r02); replica 0's rack r03 and
     * block (r04) give nothing */
    cr_expect_eq(score_on(&wl[3], "r01-n02") - score_on(&plain, "r01-n02"), 2);
    cr_expect_eq(score_on(&wl[3], "r02-n01") - score_on(&plain, "r02-n01"), 1);
    cr_expect_eq(score_on(&wl[3], "r03-n02") - score_on(&plain, "r03-n02"), 0);
    cr_expect_eq(score_on(&wl[3], "r04-n01") - score_on(&plain, "r04-n01"), 0);
    /* and replica 0's the other way round */
    cr_expect_eq(score_on(&wl[2], "r03-n02") - score_on(&plain, "r03-n02"), 2);
    cr_expect_eq(score_on(&wl[2], "r04-n01") - score_on(&plain, "r04-n01"), 1);
    cr_expect_eq(score_on(&wl[2], "r01-n02") - score_on(&plain, "r01-n02"), 0);
}

/* --- EP wider than its TP unit ------------------------------------------------------------------
 */

Test(pol_prefer, ep_group_over_tp_units_spanning_pods_is_held_in_one_nvlink_domain,
     .fini = teardown)
{
    /* 2 cliques of 4 nodes x 4 GPUs in one rack; clique-1 is half used, so best fit alone would
     * hold the second TP unit there. tp 8 (2 pods) x dp 2 = 16 GPUs, ep 16. */
    struct pol_workload w[4];
    struct pol_placement p[4];
    struct tpx_err err = TPX_ERR_INIT;

    setup_spec("racks=1,nodes-per-rack=8,gpus-per-node=4,interconnect=nvlink,domain-nodes=4");
    cr_assert_eq(pol_ledger_use(led, node_of("r01-n01"), 4, &err), TPX_OK);
    cr_assert_eq(pol_ledger_use(led, node_of("r01-n02"), 4, &err), TPX_OK);
    for (int k = 0; k < 4; k++)
        w[k] = member("ep", 8, 1, 2, 16, 4, 4, k);
    cr_assert_eq(pol_commit(led, &w[0], "p0", "p0", node_of("r01-n05"), NOW, 600, &p[0], &err),
                 TPX_OK, "%s", err.msg);
    for (int k = 1; k < 4; k++) {
        char uid[8];
        snprintf(uid, sizeof(uid), "p%d", k);
        cr_assert_neq(place(&w[k], uid, &p[k]), TOPO_NONE, "pod %d", k);
        cr_expect_str_eq(p[k].domain, p[0].domain, "pod %d in %s, leader in %s", k, p[k].domain,
                         p[0].domain);
    }
}

Test(pol_prefer, later_ep_member_without_a_hold_prefers_its_members_domain, .fini = teardown)
{
    /* no holds (a budget of 1 accelerator refuses them): member 1 has only the score to go by */
    struct pol_workload w0 = member("ep", 1, 1, 16, 16, 4, 4, 0);
    struct pol_workload w1 = member("ep", 1, 1, 16, 16, 4, 4, 1);
    struct pol_workload narrow = w1;
    struct pol_placement p0;
    struct tpx_err err = TPX_ERR_INIT;
    int in_dom, other;

    setup_spec("racks=1,nodes-per-rack=8,gpus-per-node=4,interconnect=nvlink,domain-nodes=4");
    pol_ledger_set_budgets(led, 0, 1);
    cr_assert_eq(pol_commit(led, &w0, "p0", "p0", node_of("r01-n05"), NOW, 600, &p0, &err), TPX_OK,
                 "%s", err.msg);
    in_dom = score_on(&w1, "r01-n06");
    other = score_on(&w1, "r01-n01");
    cr_expect_eq(in_dom - other, 2, "in the domain %d, elsewhere %d", in_dom, other);
    /* an EP group no wider than a pod has nothing to gain */
    narrow.layout.ep = 4;
    cr_expect_eq(score_on(&narrow, "r01-n06"), score_on(&narrow, "r01-n01"));
}
