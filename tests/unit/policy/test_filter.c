/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/policy/test_filter.c - filter, score and commit on a ledger (DESIGN.md placement
 * rules 1-5, best fit, reservations): HGX racks, NVL72-like multi-node domains, PCIe-only nodes,
 * a 16-NPU host with two 8-NPU domains, a full cluster, fragmentation; ledger expiry, forget and
 * rebase. */
#include "policy/policy.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "topology/synthetic.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))
#define NOW 1000000

static struct topo_cluster *cl;
static struct pol_ledger *led;
static size_t all[20000];

static void setup_spec(const char *spec)
{
    struct tpx_err err = TPX_ERR_INIT;

    cl = topo_cluster_synthetic(spec, &err);
    cr_assert_not_null(cl, "%s", err.msg);
    led = pol_ledger_new(cl, &err);
    cr_assert_not_null(led, "%s", err.msg);
    for (size_t i = 0; i < NELEM(all); i++)
        all[i] = i;
}

static void teardown(void)
{
    pol_ledger_free(led);
    topo_cluster_free(cl);
    led = NULL;
    cl = NULL;
}

/* A member of group `group` (n pods of g accelerators, tp x pp), pod index idx (-1 unknown). */
static struct pol_workload member(const char *group, unsigned tp, unsigned pp, unsigned g,
                                  unsigned n, int idx)
{
    struct pol_workload wl = {.has_intent = true,
                              .tp = tp,
                              .pp = pp,
                              .dp = 1,
                              .accel_per_pod = g,
                              .group_size = n,
                              .pod_index = idx,
                              .tp_explicit = true,
                              .pp_explicit = true,
                              .tp_source = "annotation",
                              .resource = "nvidia.com/gpu"};
    snprintf(wl.group, sizeof(wl.group), "%s", group);
    snprintf(wl.display, sizeof(wl.display), "%s", group);
    return wl;
}

/* An LWS-style worker: no engine flags, so tp is the default (its own GPUs). */
static struct pol_workload worker(const char *group, unsigned g, unsigned n, int idx)
{
    struct pol_workload wl = member(group, g, 1, g, n, idx);
    wl.tp_explicit = false;
    wl.pp_explicit = false;
    wl.tp_source = "default";
    return wl;
}

static size_t node_of(const char *name)
{
    size_t i = topo_cluster_find(cl, name);
    cr_assert_neq(i, TOPO_NONE, "%s", name);
    return i;
}

static const char *rack_of(size_t node)
{
    return topo_cluster_rack_name(cl, topo_cluster_node_rack(cl, node));
}

/* What serve does for one pod: filter, score, take the best, commit. TOPO_NONE when nothing fits;
 * *why gets the reason of the first candidate then. */
static size_t place(const struct pol_workload *wl, const char *uid, struct pol_placement *out,
                    char *why, size_t whylen)
{
    size_t n = topo_cluster_node_count(cl), best = TOPO_NONE;
    struct pol_filter_result res;
    static int scores[20000];
    struct tpx_err err = TPX_ERR_INIT;
    struct pol_placement tmp;

    cr_assert_eq(pol_filter(led, wl, all, n, NOW, &res, &err), TPX_OK, "%s", err.msg);
    cr_assert_eq(pol_score(led, wl, all, n, NOW, scores, &err), TPX_OK, "%s", err.msg);
    for (size_t i = 0; i < n; i++) {
        cr_assert(scores[i] >= 0 && scores[i] <= 10);
        if (res.verdict[i] == POL_FIT && (best == TOPO_NONE || scores[i] > scores[best]))
            best = i;
    }
    if (best == TOPO_NONE) {
        if (why)
            snprintf(why, whylen, "%s", res.nreasons ? res.reasons[res.reason[0]] : "");
        pol_filter_result_release(&res);
        return TOPO_NONE;
    }
    pol_filter_result_release(&res);
    cr_assert_eq(pol_commit(led, wl, uid, uid, best, NOW, 600, out ? out : &tmp, &err), TPX_OK,
                 "%s", err.msg);
    return best;
}

static void use_node(const char *name, int accel)
{
    struct tpx_err err = TPX_ERR_INIT;
    cr_assert_eq(pol_ledger_use(led, node_of(name), accel, &err), TPX_OK);
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

/* --- HGX racks ---------------------------------------------------------------------------------
 */

Test(pol_filter, hgx_tp8_pp2_group_stays_in_one_rack, .fini = teardown)
{
    struct pol_workload leader = member("llm/vllm-0", 8, 2, 8, 2, 0);
    struct pol_workload w1 = worker("llm/vllm-0", 8, 2, 1);
    struct pol_placement p0, p1;
    size_t n0, n1;
    char why[512];

    setup_spec("example");
    n0 = place(&leader, "uid-l", &p0, NULL, 0);
    cr_assert_neq(n0, TOPO_NONE);
    cr_expect_eq(p0.stage, 0);
    cr_expect_eq(p0.rank_first, 0);
    cr_expect_eq(p0.rank_last, 7);
    cr_expect_str_eq(p0.rack, rack_of(n0));
    cr_expect_str_eq(p0.domain, topo_cluster_node(cl, n0)->name);
    /* the worker carries no flags: it inherits tp 8 x pp 2 from the group */
    for (size_t i = 0; i < topo_cluster_node_count(cl); i++) {
        enum pol_verdict v = verdict_on(&w1, topo_cluster_node(cl, i)->name, why, sizeof(why));
        if (strcmp(rack_of(i), rack_of(n0)) != 0) {
            cr_expect_eq(v, POL_UNRESOLVABLE);
            char want[128];
            snprintf(want, sizeof(want), "group llm/vllm-0 is placed in rack %s", rack_of(n0));
            cr_expect_str_eq(why, want);
        } else if (i == n0) {
            cr_expect_eq(v, POL_FAIL, "the leader's node is full");
        } else {
            cr_expect_eq(v, POL_FIT);
        }
    }
    n1 = place(&w1, "uid-w1", &p1, NULL, 0);
    cr_assert_neq(n1, TOPO_NONE);
    cr_expect_neq(n1, n0);
    cr_expect_str_eq(rack_of(n1), rack_of(n0));
    cr_expect_eq(p1.stage, 1);
    cr_expect_eq(p1.rank_first, 8);
    cr_expect_eq(p1.rank_last, 15);
}

Test(pol_filter, reserved_node_scores_highest_for_the_next_member, .fini = teardown)
{
    struct pol_workload leader = member("g", 8, 4, 8, 4, 0);
    struct pol_workload w = worker("g", 8, 4, 2);
    struct pol_group_summary gs[4];
    int scores[16];
    struct tpx_err err = TPX_ERR_INIT;
    size_t n0, tens = 0;

    setup_spec("example");
    n0 = place(&leader, "l", NULL, NULL, 0);
    cr_assert_neq(n0, TOPO_NONE);
    cr_assert_eq(pol_ledger_group_count(led), 1);
    pol_ledger_groups(led, gs);
    cr_expect_str_eq(gs[0].group, "g");
    cr_expect_eq(gs[0].members_placed, 1);
    cr_expect_eq(gs[0].group_size, 4);
    cr_expect_eq(gs[0].accel_reserved, 24, "the rest of the group is held in the rack");
    cr_expect_eq(gs[0].expires, NOW + 600);
    cr_assert_eq(pol_score(led, &w, all, 16, NOW, scores, &err), TPX_OK);
    for (size_t i = 0; i < 16; i++)
        tens += scores[i] == 10;
    cr_expect_eq(tens, 1, "exactly one node holds pod 2's place");
}

Test(pol_filter, first_member_needs_a_rack_for_the_whole_group, .fini = teardown)
{
    struct pol_workload big = member("big", 8, 5, 8, 5, 0);
    struct pol_workload two = member("two", 8, 2, 8, 2, 0);
    char why[512];

    setup_spec("example");
    /* 5 nodes never fit a rack of 4: unresolvable everywhere */
    cr_expect_eq(verdict_on(&big, "r01-n01", why, sizeof(why)), POL_UNRESOLVABLE);
    cr_expect_str_eq(why, "rack r01: 4 8-GPU domains in all, group needs 5");
    /* r01 has one free node left: eviction could help, so FailedNodes, not unresolvable */
    use_node("r01-n01", 8);
    use_node("r01-n02", 8);
    use_node("r01-n03", 4);
    cr_expect_eq(verdict_on(&two, "r01-n04", why, sizeof(why)), POL_FAIL);
    cr_expect_str_eq(why, "rack r01: 1 free 8-GPU domains, group needs 2");
    cr_expect_eq(verdict_on(&two, "r02-n01", why, sizeof(why)), POL_FIT);
}

Test(pol_filter, best_fit_prefers_the_fullest_rack_that_still_fits, .fini = teardown)
{
    struct pol_workload two = member("two", 8, 2, 8, 2, 0);
    struct pol_placement p;

    setup_spec("example");
    use_node("r03-n01", 8);
    use_node("r03-n02", 8);
    use_node("r02-n01", 8);
    /* r03 has exactly 2 free nodes: the best fit */
    cr_assert_neq(place(&two, "a", &p, NULL, 0), TOPO_NONE);
    cr_expect_str_eq(p.rack, "r03");
}

/* Fragmentation-aware packing (policy/pack.c, on only with pol_ledger_set_pack): a 4-GPU pod
 * fills the 4-GPU hole of r02 rather than open r01's last whole node, which a live 8-GPU shape
 * could still use. Plain best fit, the score without it (r01 is left with less free), takes
 * r01-n02. */
Test(pol_filter, first_member_fills_a_hole_before_opening_a_whole_node, .fini = teardown)
{
    struct pol_workload big = member("big", 8, 1, 8, 1, 0);
    struct pol_workload small = member("small", 4, 1, 4, 1, 0);
    struct pol_placement p;

    for (int pack = 0; pack < 2; pack++) {
        setup_spec("racks=2,nodes-per-rack=2");
        pol_ledger_set_pack(led, pack);
        cr_assert_neq(place(&big, "big-0", &p, NULL, 0), TOPO_NONE);
        cr_expect_str_eq(p.node_name, "r01-n01");
        use_node("r02-n01", 4);
        cr_assert_neq(place(&small, "small-0", &p, NULL, 0), TOPO_NONE);
        cr_expect_str_eq(p.node_name, pack ? "r02-n01" : "r01-n02", "pack %d", pack);
        teardown();
    }
}

/* With the packing rank on, and as much to lose and as much left either way, groups of one shape
 * share a rack: the second 2-pod group joins the first in r02, where plain best fit would take
 * the lower index r01. */
Test(pol_filter, first_member_prefers_a_rack_with_its_shape, .fini = teardown)
{
    struct pol_workload a = member("a", 8, 2, 8, 2, 0);
    struct pol_workload b = member("b", 8, 2, 8, 2, 0);
    struct pol_placement p;

    setup_spec("racks=2,nodes-per-rack=4");
    pol_ledger_set_pack(led, true);
    for (int k = 1; k <= 4; k++) {
        char name[16];
        snprintf(name, sizeof(name), "r01-n0%d", k);
        use_node(name, 8);
    }
    cr_assert_neq(place(&a, "a-0", &p, NULL, 0), TOPO_NONE);
    cr_expect_str_eq(p.rack, "r02");
    /* r01 gets two free nodes back: both racks now hold two */
    use_node("r01-n01", -8);
    use_node("r01-n02", -8);
    cr_assert_neq(place(&b, "b-0", &p, NULL, 0), TOPO_NONE);
    cr_expect_str_eq(p.rack, "r02", "the rack that holds a group of the same shape, not %s",
                     p.node_name);
}

Test(pol_filter, other_groups_reservations_count, .fini = teardown)
{
    struct pol_workload a = member("a", 8, 4, 8, 4, 0);
    struct pol_workload b = member("b", 8, 2, 8, 2, 0);
    struct pol_placement pa, pb;
    char why[512];
    struct pol_rack_summary rs[4];

    setup_spec("racks=2,nodes-per-rack=4");
    cr_assert_neq(place(&a, "a0", &pa, NULL, 0), TOPO_NONE);
    pol_ledger_racks(led, rs);
    cr_expect_eq(rs[0].accel_reserved, 24);
    cr_expect_eq(rs[0].accel_free, 0);
    cr_expect_eq(rs[0].free_domains, 0);
    cr_expect_eq(rs[1].accel_free, 32);
    cr_expect_eq(rs[1].largest_tp_now, 8);
    cr_expect_eq(rs[1].free_domains, 4);
    cr_expect_eq(verdict_on(&b, "r01-n04", why, sizeof(why)), POL_FAIL);
    cr_expect_str_eq(why, "rack r01: 0 free 8-GPU domains, group needs 2");
    cr_assert_neq(place(&b, "b0", &pb, NULL, 0), TOPO_NONE);
    cr_expect_str_eq(pb.rack, "r02");
}

Test(pol_filter, expiry_releases_reservations, .fini = teardown)
{
    struct pol_workload a = member("a", 8, 4, 8, 4, 0);
    struct pol_workload b = member("b", 8, 2, 8, 2, 0);
    struct pol_group_summary gs[2];

    setup_spec("racks=1,nodes-per-rack=4");
    cr_assert_neq(place(&a, "a0", NULL, NULL, 0), TOPO_NONE);
    cr_expect_eq(verdict_on(&b, "r01-n04", NULL, 0), POL_FAIL);
    cr_expect_eq(pol_ledger_expire(led, NOW + 599), 0, "not yet");
    cr_expect_eq(pol_ledger_expire(led, NOW + 600), 1);
    pol_ledger_groups(led, gs);
    cr_expect_eq(gs[0].accel_reserved, 0);
    cr_expect_eq(gs[0].expires, 0);
    cr_expect_eq(pol_ledger_node_free(led, node_of("r01-n04")), 8);
    cr_expect_eq(verdict_on(&b, "r01-n04", NULL, 0), POL_FIT);
    cr_expect_eq(pol_ledger_group_count(led), 1, "the group keeps its placed member");
}

Test(pol_filter, forget_releases_capacity_and_drops_empty_groups, .fini = teardown)
{
    struct pol_workload a = member("a", 8, 2, 8, 2, 0);
    struct pol_workload a1 = worker("a", 8, 2, 1);
    size_t n0, n1;

    setup_spec("racks=1,nodes-per-rack=2");
    n0 = place(&a, "a0", NULL, NULL, 0);
    n1 = place(&a1, "a1", NULL, NULL, 0);
    cr_assert_neq(n1, TOPO_NONE);
    cr_expect_eq(pol_ledger_node_free(led, n0) + pol_ledger_node_free(led, n1), 0);
    cr_expect(pol_ledger_forget_pod(led, "a1"));
    cr_expect_not(pol_ledger_forget_pod(led, "a1"), "second forget: unknown uid");
    /* the worker's place is held for its replacement */
    cr_expect_eq(pol_ledger_node_free(led, n1), 0);
    cr_expect_eq(verdict_on(&a1, topo_cluster_node(cl, n1)->name, NULL, 0), POL_FIT);
    cr_expect(pol_ledger_forget_pod(led, "a0"));
    cr_expect_eq(pol_ledger_group_count(led), 0);
    cr_expect_eq(pol_ledger_node_free(led, n0), 8);
    cr_expect_eq(pol_ledger_node_free(led, n1), 8);
}

Test(pol_filter, rebase_carries_groups_by_node_name, .fini = teardown)
{
    struct pol_workload a = member("a", 8, 4, 8, 4, 0);
    struct pol_workload a1 = worker("a", 8, 4, 1);
    struct pol_placement p0, p1;
    struct tpx_err err = TPX_ERR_INIT;
    struct topo_cluster *c2;
    struct pol_ledger *l2;
    struct pol_group_summary gs[1];
    const char *keep0, *keep1;
    char name0[64], name1[64];

    setup_spec("racks=2,nodes-per-rack=4");
    cr_assert_neq(place(&a, "a0", &p0, NULL, 0), TOPO_NONE);
    cr_assert_neq(place(&a1, "a1", &p1, NULL, 0), TOPO_NONE);
    snprintf(name0, sizeof(name0), "%s", p0.node_name);
    snprintf(name1, sizeof(name1), "%s", p1.node_name);
    /* same nodes in a new snapshot, listed in another order */
    c2 = topo_cluster_new(&err);
    for (size_t i = topo_cluster_node_count(cl); i-- > 0;)
        cr_assert_eq(topo_cluster_add(c2, topo_cluster_node(cl, i), &err), TPX_OK);
    cr_assert_eq(topo_cluster_seal(c2, &err), TPX_OK);
    l2 = pol_ledger_rebase(led, c2, &err);
    cr_assert_not_null(l2, "%s", err.msg);
    cr_expect_eq(pol_ledger_group_count(l2), 1);
    pol_ledger_groups(l2, gs);
    cr_expect_eq(gs[0].members_placed, 2);
    cr_expect_eq(gs[0].accel_reserved, 16);
    for (size_t i = 0; i < topo_cluster_node_count(cl); i++) {
        const char *nm = topo_cluster_node(cl, i)->name;
        cr_expect_eq(pol_ledger_node_free(l2, topo_cluster_find(c2, nm)),
                     pol_ledger_node_free(led, i), "%s", nm);
    }
    /* idempotent commit in the new ledger finds the pod where it was */
    {
        struct pol_placement again;
        cr_expect_eq(
            pol_commit(l2, &a1, "a1", "a1", topo_cluster_find(c2, name1), NOW, 600, &again, &err),
            TPX_OK, "%s", err.msg);
        cr_expect_eq(again.rank_first, 8);
    }
    pol_ledger_free(l2);
    topo_cluster_free(c2);

    /* a snapshot without the worker's node drops that member, keeps the leader */
    keep0 = name0;
    keep1 = name1;
    c2 = topo_cluster_new(&err);
    for (size_t i = 0; i < topo_cluster_node_count(cl); i++) {
        if (strcmp(topo_cluster_node(cl, i)->name, keep1) != 0)
            cr_assert_eq(topo_cluster_add(c2, topo_cluster_node(cl, i), &err), TPX_OK);
    }
    cr_assert_eq(topo_cluster_seal(c2, &err), TPX_OK);
    l2 = pol_ledger_rebase(led, c2, &err);
    cr_assert_not_null(l2);
    pol_ledger_groups(l2, gs);
    cr_expect_eq(gs[0].members_placed, 1);
    cr_expect_eq(pol_ledger_node_free(l2, topo_cluster_find(c2, keep0)), 0);
    pol_ledger_free(l2);
    topo_cluster_free(c2);
}

/* --- NVL72-like multi-node domains -------------------------------------------------------------
 */

Test(pol_filter, nvl_tp_groups_span_pods_inside_one_clique, .fini = teardown)
{
    /* 2 racks x 18 nodes x 4 GPUs, two 36-GPU cliques per rack; tp 8 over 2 pods of 4, pp 2 */
    struct pol_workload w[4];
    struct pol_placement p[4];

    setup_spec("racks=2,nodes-per-rack=18,gpus-per-node=4,interconnect=nvlink,domain-nodes=9");
    for (int k = 0; k < 4; k++) {
        char uid[16];
        w[k] = k == 0 ? member("nvl", 8, 2, 4, 4, 0) : worker("nvl", 4, 4, k);
        snprintf(uid, sizeof(uid), "p%d", k);
        cr_assert_neq(place(&w[k], uid, &p[k], NULL, 0), TOPO_NONE, "pod %d", k);
    }
    cr_expect_str_eq(p[0].domain, p[1].domain, "TP group 0 in one clique");
    cr_expect_str_eq(p[2].domain, p[3].domain, "TP group 1 in one clique");
    cr_expect_str_eq(p[0].rack, p[3].rack);
    cr_expect_eq(p[0].stage, 0);
    cr_expect_eq(p[1].stage, 0);
    cr_expect_eq(p[2].stage, 1);
    cr_expect_eq(p[3].stage, 1);
}

Test(pol_filter, nvl_tp36_needs_a_whole_clique, .fini = teardown)
{
    struct pol_workload w = member("big", 36, 1, 4, 9, 0);
    struct pol_workload w2 = member("big2", 36, 1, 4, 9, 0);
    struct pol_placement p;
    char why[512];

    setup_spec("racks=1,nodes-per-rack=18,gpus-per-node=4,interconnect=nvlink,domain-nodes=9");
    use_node("r01-n01", 4); /* clique-1 loses a node */
    cr_expect_eq(verdict_on(&w, "r01-n02", why, sizeof(why)), POL_FAIL);
    cr_expect_str_eq(why, "domain clique-1 has 32 free GPUs, TP group needs 36");
    cr_expect_eq(verdict_on(&w, "r01-n10", NULL, 0), POL_FIT);
    cr_assert_neq(place(&w, "b0", &p, NULL, 0), TOPO_NONE);
    cr_expect_str_eq(p.domain, "clique-2");
    /* the rest of clique-2 is held: a second such group finds nothing */
    cr_expect_eq(verdict_on(&w2, "r01-n11", why, sizeof(why)), POL_FAIL);
    cr_expect_str_eq(why, "rack r01: 0 free 36-GPU domains, group needs 1");
}

/* --- PCIe-only nodes ---------------------------------------------------------------------------
 */

Test(pol_filter, pcie_nodes_reject_tp_beyond_the_node, .fini = teardown)
{
    struct pol_workload w = member("p", 8, 1, 4, 2, 0);
    struct pol_workload ok = member("q", 4, 2, 4, 2, 0);
    struct pol_filter_result res;
    struct tpx_err err = TPX_ERR_INIT;

    setup_spec("racks=2,nodes-per-rack=2,gpus-per-node=4,interconnect=pcie");
    cr_assert_eq(pol_filter(led, &w, all, 4, NOW, &res, &err), TPX_OK);
    cr_expect_eq(res.nfit, 0);
    cr_expect_eq(res.nreasons, 1, "one message for every node");
    for (size_t i = 0; i < 4; i++)
        cr_expect_eq(res.verdict[i], POL_UNRESOLVABLE);
    cr_expect_str_eq(
        res.reasons[0],
        "tensor-parallel-size 8 needs one interconnect domain of 8 GPUs; the largest "
        "here has 4 (pcie, one node). All-reduce would cross nodes. Try "
        "tensor-parallel-size 4 with pipeline-parallel-size 2. A MoE model may cross nodes "
        "with EP or DP-attention; a dense one with the annotation "
        "topox.io/cross-node-tp: allow on its pods.");
    pol_filter_result_release(&res);
    cr_expect_neq(place(&ok, "q0", NULL, NULL, 0), TOPO_NONE);
}

/* --- a 16-NPU host with two 8-NPU HCCS domains -------------------------------------------------
 */

Test(pol_filter, npu_host_two_domains_one_pod_each, .fini = teardown)
{
    struct pol_workload w[4];
    struct pol_placement p[4];
    struct pol_workload other = member("o", 8, 1, 8, 1, 0);
    struct pol_workload whole = member("h", 8, 2, 16, 1, 0);
    char why[512];

    setup_spec("racks=1,nodes-per-rack=2,gpus-per-node=16,domains-per-node=2,interconnect=hccs,"
               "resource=huawei.com/Ascend910");
    for (int k = 0; k < 4; k++) {
        char uid[16];
        w[k] = k == 0 ? member("npu", 8, 4, 8, 4, 0) : worker("npu", 8, 4, k);
        strcpy(w[k].resource, "huawei.com/Ascend910");
        snprintf(uid, sizeof(uid), "n%d", k);
        cr_assert_neq(place(&w[k], uid, &p[k], NULL, 0), TOPO_NONE, "pod %d", k);
    }
    for (int a = 0; a < 4; a++) {
        for (int b = a + 1; b < 4; b++)
            cr_expect_str_neq(p[a].domain, p[b].domain, "pods %d and %d share a domain", a, b);
    }
    strcpy(other.resource, "huawei.com/Ascend910");
    cr_expect_eq(verdict_on(&other, "r01-n01", why, sizeof(why)), POL_FAIL);
    cr_expect_str_eq(why, "rack r01: 0 free 8-NPU domains, group needs 1");
    /* a pod of 16 NPUs with tp 8 takes both domains of an empty host */
    teardown();
    setup_spec("racks=1,nodes-per-rack=2,gpus-per-node=16,domains-per-node=2,interconnect=hccs,"
               "resource=huawei.com/Ascend910");
    strcpy(whole.resource, "huawei.com/Ascend910");
    use_node("r01-n01", 1);
    cr_expect_eq(verdict_on(&whole, "r01-n01", why, sizeof(why)), POL_FAIL);
    cr_expect_eq(verdict_on(&whole, "r01-n02", NULL, 0), POL_FIT);
}

/* --- full cluster, fragmentation ----------------------------------------------------------------
 */

Test(pol_filter, full_cluster_is_failed_never_unresolvable, .fini = teardown)
{
    struct pol_workload w = member("x", 8, 1, 8, 1, 0);
    struct pol_filter_result res;
    struct tpx_err err = TPX_ERR_INIT;

    setup_spec("example");
    for (size_t i = 0; i < 16; i++)
        use_node(topo_cluster_node(cl, i)->name, 8);
    cr_assert_eq(pol_filter(led, &w, all, 16, NOW, &res, &err), TPX_OK);
    cr_expect_eq(res.nfit, 0);
    for (size_t i = 0; i < 16; i++)
        cr_expect_eq(res.verdict[i], POL_FAIL, "node %zu: preemption must stay possible", i);
    cr_expect_eq(res.nreasons, 4, "one reason per rack");
    pol_filter_result_release(&res);
}

Test(pol_filter, fragmentation_prefers_partly_used_domains, .fini = teardown)
{
    struct pol_workload tp8 = member("big", 8, 1, 8, 1, 0);
    struct pol_workload tp4 = member("small", 4, 1, 4, 1, 0);
    struct pol_placement p;
    char why[512];

    setup_spec("racks=1,nodes-per-rack=2");
    use_node("r01-n01", 4);
    cr_expect_eq(verdict_on(&tp8, "r01-n01", why, sizeof(why)), POL_FAIL);
    cr_expect_str_eq(why, "node has 4 free GPUs, pod needs 8");
    /* the small group goes to the half-used node, keeping r01-n02 whole for the big one */
    cr_assert_neq(place(&tp4, "s", &p, NULL, 0), TOPO_NONE);
    cr_expect_str_eq(p.node_name, "r01-n01");
    cr_assert_neq(place(&tp8, "b", &p, NULL, 0), TOPO_NONE);
    cr_expect_str_eq(p.node_name, "r01-n02");
}

/* --- rules around the edges ------------------------------------------------------------------- */

Test(pol_filter, no_intent_and_preferred_pass, .fini = teardown)
{
    struct pol_workload none = {.accel_per_pod = 1, .pod_index = -1};
    struct pol_workload pref = member("p", 16, 1, 8, 2, 0);
    struct pol_filter_result res;
    struct tpx_err err = TPX_ERR_INIT;
    int scores[16];

    setup_spec("example");
    for (size_t i = 0; i < 16; i++)
        use_node(topo_cluster_node(cl, i)->name, 8);
    cr_assert_eq(pol_filter(led, &none, all, 16, NOW, &res, &err), TPX_OK);
    cr_expect_eq(res.nfit, 16);
    pol_filter_result_release(&res);
    cr_assert_eq(pol_score(led, &none, all, 16, NOW, scores, &err), TPX_OK);
    cr_expect_eq(scores[3], 0);
    pref.preferred = true;
    cr_assert_eq(pol_filter(led, &pref, all, 16, NOW, &res, &err), TPX_OK);
    cr_expect_eq(res.nfit, 16, "preferred never rejects");
    pol_filter_result_release(&res);
}

Test(pol_filter, commit_refuses_a_node_that_no_longer_fits, .fini = teardown)
{
    struct pol_workload w = member("c", 8, 1, 8, 1, 0);
    struct pol_placement p;
    struct tpx_err err = TPX_ERR_INIT;
    size_t n = 0;

    setup_spec("racks=1,nodes-per-rack=2");
    use_node("r01-n01", 2); /* a concurrent bind took part of it */
    n = node_of("r01-n01");
    cr_expect_eq(pol_commit(led, &w, "c0", "c-0", n, NOW, 600, &p, &err), TPX_EINVAL);
    cr_expect_str_eq(err.msg, "node 'r01-n01' no longer fits: node has 6 free GPUs, pod needs 8");
    tpx_err_clear(&err);
    n = node_of("r01-n02");
    cr_expect_eq(pol_commit(led, &w, "c0", "c-0", n, NOW, 600, &p, &err), TPX_OK, "%s", err.msg);
    cr_expect_eq(pol_commit(led, &w, "c0", "c-0", n, NOW, 600, &p, &err), TPX_OK, "idempotent");
    cr_expect_eq(pol_ledger_node_free(led, n), 0, "counted once");
    cr_expect_eq(pol_commit(led, &w, "c0", "c-0", node_of("r01-n01"), NOW, 600, &p, &err),
                 TPX_EINVAL);
    cr_expect(strstr(err.msg, "already placed on node 'r01-n02'") != NULL, "%s", err.msg);
}

Test(pol_filter, unschedulable_and_small_nodes_are_unresolvable, .fini = teardown)
{
    struct tpx_err err = TPX_ERR_INIT;
    struct topo_node_info nodes[] = {
        {.name = "cordoned",
         .rack = "r1",
         .accel_alloc = 8,
         .resource = "nvidia.com/gpu",
         .fabric = TOPO_FABRIC_NVSWITCH,
         .unschedulable = true},
        {.name = "small",
         .rack = "r1",
         .accel_alloc = 4,
         .resource = "nvidia.com/gpu",
         .fabric = TOPO_FABRIC_NVLINK},
        {.name = "amd",
         .rack = "r1",
         .accel_alloc = 8,
         .resource = "amd.com/gpu",
         .fabric = TOPO_FABRIC_XGMI},
        {.name = "ok",
         .rack = "r1",
         .accel_alloc = 8,
         .resource = "nvidia.com/gpu",
         .fabric = TOPO_FABRIC_NVSWITCH},
    };
    struct pol_workload w = member("u", 8, 1, 8, 1, 0);
    char why[512];

    cl = topo_cluster_new(&err);
    for (size_t i = 0; i < NELEM(nodes); i++)
        cr_assert_eq(topo_cluster_add(cl, &nodes[i], &err), TPX_OK);
    cr_assert_eq(topo_cluster_seal(cl, &err), TPX_OK);
    led = pol_ledger_new(cl, &err);
    cr_expect_eq(verdict_on(&w, "cordoned", why, sizeof(why)), POL_UNRESOLVABLE);
    cr_expect_str_eq(why, "node is cordoned or not ready");
    cr_expect_eq(verdict_on(&w, "small", why, sizeof(why)), POL_UNRESOLVABLE);
    cr_expect_str_eq(why, "node has 4 GPUs, pod needs 8");
    cr_expect_eq(verdict_on(&w, "amd", why, sizeof(why)), POL_UNRESOLVABLE);
    cr_expect_str_eq(why, "node has no nvidia.com/gpu");
    cr_expect_eq(verdict_on(&w, "ok", NULL, 0), POL_FIT);
}

Test(pol_filter, bad_index_is_an_error, .fini = teardown)
{
    struct pol_workload w = member("b", 8, 1, 8, 1, 0);
    struct pol_filter_result res;
    struct tpx_err err = TPX_ERR_INIT;
    size_t bad = 99;

    setup_spec("example");
    cr_expect_eq(pol_filter(led, &w, &bad, 1, NOW, &res, &err), TPX_EINVAL);
    cr_expect_eq(pol_ledger_use(led, 99, 1, &err), TPX_EINVAL);
}

Test(pol_filter, reasons_are_shared_across_5000_nodes, .fini = teardown)
{
    struct pol_workload a = member("a", 8, 2, 8, 2, 0);
    struct pol_workload a1 = worker("a", 8, 2, 1);
    struct pol_filter_result res;
    struct tpx_err err = TPX_ERR_INIT;

    setup_spec("racks=125,nodes-per-rack=40");
    cr_assert_neq(place(&a, "a0", NULL, NULL, 0), TOPO_NONE);
    cr_assert_eq(pol_filter(led, &a1, all, 5000, NOW, &res, &err), TPX_OK);
    cr_expect_eq(res.nfit, 39, "the rest of the leader's rack");
    cr_expect_eq(res.nreasons, 2, "elsewhere + the leader's full node");
    pol_filter_result_release(&res);
}

Test(pol_filter, worker_first_uses_its_defaults, .fini = teardown)
{
    struct pol_workload w1 = worker("lws", 8, 2, 1);
    struct pol_workload l0 = member("lws", 8, 2, 8, 2, 0);
    struct pol_placement p0, p1;

    setup_spec("example");
    cr_assert_neq(place(&w1, "w1", &p1, NULL, 0), TOPO_NONE);
    cr_assert_neq(place(&l0, "l0", &p0, NULL, 0), TOPO_NONE);
    cr_expect_str_eq(p0.rack, p1.rack);
    cr_expect_str_neq(p0.node_name, p1.node_name);
}

Test(pol_filter, block_scope_keeps_the_group_in_one_block, .fini = teardown)
{
    struct pol_workload w = member("blk", 8, 8, 8, 8, 0);
    struct pol_placement p;
    char why[512];

    setup_spec("racks=4,nodes-per-rack=4,blocks=2");
    w.scope = POL_SCOPE_BLOCK;
    /* 8 nodes: more than a rack, exactly a block */
    cr_assert_neq(place(&w, "b0", &p, NULL, 0), TOPO_NONE);
    for (int k = 1; k < 8; k++) {
        struct pol_workload wk = worker("blk", 8, 8, k);
        struct pol_placement pk;
        char uid[8];
        wk.scope = POL_SCOPE_BLOCK;
        snprintf(uid, sizeof(uid), "b%d", k);
        cr_assert_neq(place(&wk, uid, &pk, NULL, 0), TOPO_NONE, "pod %d", k);
        cr_expect_eq(topo_cluster_node_block(cl, pk.node), topo_cluster_node_block(cl, p.node));
    }
    w = worker("blk", 8, 8, 3);
    w.scope = POL_SCOPE_BLOCK;
    cr_expect_eq(verdict_on(&w, "r04-n01", why, sizeof(why)), POL_UNRESOLVABLE);
    cr_expect_str_eq(why, "group blk is placed in block b1");
}

/* --- review fixes --------------------------------------------------------------------------------
 */

Test(pol_filter, member_index_beyond_the_groups_slots_stays_in_bounds, .fini = teardown)
{
    /* The group was created by a member of a 2-pod group; a member that says the group has 4 pods
     * (a resized LWS) and index 3 must not index past the group's 2 slots. */
    struct pol_workload first = member("resized", 8, 2, 8, 2, 0);
    struct pol_workload later = member("resized", 8, 4, 8, 4, 3);
    /* preferred and invalid (TP 16 on 8-GPU domains), index 5 of 2 */
    struct pol_workload pref = member("pref", 16, 1, 8, 2, 5);
    struct pol_group_summary gs[4];

    setup_spec("racks=1,nodes-per-rack=4");
    cr_assert_neq(place(&first, "rs0", NULL, NULL, 0), TOPO_NONE);
    cr_assert_neq(place(&later, "rs3", NULL, NULL, 0), TOPO_NONE);
    cr_assert_eq(pol_ledger_group_count(led), 1);
    pol_ledger_groups(led, gs);
    cr_expect_eq(gs[0].members_placed, 2);
    cr_expect_eq(gs[0].group_size, 2);
    pref.preferred = true;
    for (size_t i = 0, k = 0; i < 4; i++) {
        struct pol_placement p;
        struct tpx_err err = TPX_ERR_INIT;
        char uid[8];
        if (pol_ledger_node_free(led, i) < 8)
            continue;
        snprintf(uid, sizeof(uid), "pf%zu", k++);
        cr_assert_eq(pol_commit(led, &pref, uid, uid, i, NOW, 600, &p, &err), TPX_OK, "%s",
                     err.msg);
    }
    cr_expect_eq(pol_ledger_group_count(led), 2);
}

Test(pol_filter, node_capacity_bounds_its_domains, .fini = teardown)
{
    /* Labelled 2 x 8 GPUs by topox label, but 8 went unhealthy: allocatable is 8. */
    struct topo_node_info in = {.name = "half",
                                .resource = "nvidia.com/gpu",
                                .accel_alloc = 8,
                                .fabric = TOPO_FABRIC_NVSWITCH,
                                .domain_size = 8,
                                .domains_per_node = 2};
    struct pol_workload a = member("a", 8, 1, 8, 1, 0);
    struct pol_workload b = member("b", 8, 1, 8, 1, 0);
    struct pol_workload pair = member("pair", 8, 2, 8, 2, 0);
    struct pol_placement p;
    struct tpx_err err = TPX_ERR_INIT;
    char why[256];

    cl = topo_cluster_new(&err);
    cr_assert_not_null(cl);
    cr_assert_eq(topo_cluster_add(cl, &in, &err), TPX_OK, "%s", err.msg);
    cr_assert_eq(topo_cluster_seal(cl, &err), TPX_OK, "%s", err.msg);
    led = pol_ledger_new(cl, &err);
    cr_assert_not_null(led, "%s", err.msg);
    all[0] = 0;
    cr_expect_eq(verdict_on(&pair, "half", why, sizeof(why)), POL_UNRESOLVABLE,
                 "one node of 8 cannot hold a group of 2 x 8");
    cr_assert_eq(pol_commit(led, &a, "a0", "a-0", 0, NOW, 600, &p, &err), TPX_OK, "%s", err.msg);
    cr_expect_eq(pol_ledger_node_free(led, 0), 0);
    cr_expect_eq(verdict_on(&b, "half", why, sizeof(why)), POL_FAIL, "node is full");
    cr_expect_eq(pol_commit(led, &b, "b0", "b-0", 0, NOW, 600, &p, &err), TPX_EINVAL,
                 "a full node takes no second pod");
}

/* verdict_on() through a scope memo. */
static enum pol_verdict verdict_memo(struct pol_scope_memo *m, const struct pol_workload *wl,
                                     const char *node, char *why, size_t whylen)
{
    struct pol_filter_result res;
    struct tpx_err err = TPX_ERR_INIT;
    size_t i = node_of(node);
    enum pol_verdict v;

    cr_assert_eq(pol_filter_memo(led, m, wl, &i, 1, NOW, &res, &err), TPX_OK, "%s", err.msg);
    v = res.verdict[0];
    if (why)
        snprintf(why, whylen, "%s", v == POL_FIT ? "" : res.reasons[res.reason[0]]);
    pol_filter_result_release(&res);
    return v;
}

Test(pol_filter, the_scope_memo_never_outlives_a_change, .fini = teardown)
{
    /* A memo keeps the per-scope capacity of a first member between calls of the same shape
     * while the ledger is unchanged; each kind of change must make the next answer fresh, and
     * the answers must be those of pol_filter() without a memo. */
    struct pol_workload two = member("two", 8, 2, 8, 2, 0);
    struct pol_workload three = member("three", 8, 3, 8, 3, 0);
    struct pol_workload other = member("other", 8, 2, 8, 2, 0);
    struct pol_scope_memo *m = pol_scope_memo_new();
    char why[512];
    int scores[2][6];
    size_t cand[6];
    struct tpx_err err = TPX_ERR_INIT;

    cr_assert_not_null(m);
    setup_spec("racks=2,nodes-per-rack=3");
    cr_expect_eq(verdict_memo(m, &two, "r01-n03", NULL, 0), POL_FIT);
    cr_expect_eq(verdict_memo(m, &two, "r01-n03", NULL, 0), POL_FIT, "the same question again");
    /* use (pol_ledger_use): r01 keeps one free node */
    use_node("r01-n01", 8);
    use_node("r01-n02", 8);
    cr_expect_eq(verdict_memo(m, &two, "r01-n03", why, sizeof(why)), POL_FAIL);
    cr_expect_str_eq(why, "rack r01: 1 free 8-GPU domains, group needs 2");
    /* another shape in between, then back: each answer is its own */
    cr_expect_eq(verdict_memo(m, &three, "r02-n01", NULL, 0), POL_FIT);
    cr_expect_eq(verdict_memo(m, &two, "r01-n03", NULL, 0), POL_FAIL);
    /* scores through the memo equal scores without it */
    for (size_t i = 0; i < 6; i++)
        cand[i] = i;
    cr_assert_eq(pol_score_memo(led, m, &two, cand, 6, NOW, scores[0], &err), TPX_OK);
    cr_assert_eq(pol_score(led, &two, cand, 6, NOW, scores[1], &err), TPX_OK);
    cr_expect_arr_eq(scores[0], scores[1], sizeof(scores[0]));
    /* use given back */
    use_node("r01-n02", -8);
    cr_expect_eq(verdict_memo(m, &two, "r01-n03", NULL, 0), POL_FIT);
    /* a commit with its reservation: other's first member in r02 holds a second node there */
    cr_expect_eq(verdict_memo(m, &three, "r02-n01", NULL, 0), POL_FIT);
    {
        struct pol_placement p;

        cr_assert_eq(pol_commit(led, &other, "o0", "o0", node_of("r02-n01"), NOW, 600, &p, &err),
                     TPX_OK, "%s", err.msg);
    }
    cr_expect_eq(verdict_memo(m, &three, "r02-n03", NULL, 0), POL_FAIL, "r02 has one node left");
    /* expiry of the reservation, then forgetting the pod: r02 whole again */
    cr_expect_eq(pol_ledger_expire(led, NOW + 600), 1);
    cr_expect_eq(verdict_memo(m, &three, "r02-n03", NULL, 0), POL_FAIL, "o0 still holds r02-n01");
    cr_expect(pol_ledger_forget_pod(led, "o0"));
    cr_expect_eq(verdict_memo(m, &three, "r02-n03", NULL, 0), POL_FIT);
    /* a memo that met another ledger: forgotten, then used with a new one */
    pol_scope_memo_forget(m);
    cr_expect_eq(verdict_memo(m, &three, "r02-n03", NULL, 0), POL_FIT);
    pol_scope_memo_free(m);
}

Test(pol_filter, preferred_group_larger_than_any_rack_reserves_nothing, .fini = teardown)
{
    /* group-size 1000000 with placement preferred: one commit used to hold the whole rack for the
     * TTL (and size a slot array of a million). It goes on its own now. */
    struct pol_workload big = worker("big", 8, 1000000, 0);
    struct pol_workload fits = worker("fits", 8, 4, 0);

    big.preferred = true;
    setup_spec("racks=1,nodes-per-rack=4");
    cr_assert_neq(place(&big, "big0", NULL, NULL, 0), TOPO_NONE);
    cr_expect_eq(pol_ledger_group_count(led), 0);
    cr_expect_eq(pol_ledger_node_free(led, node_of("r01-n01")) +
                     pol_ledger_node_free(led, node_of("r01-n02")) +
                     pol_ledger_node_free(led, node_of("r01-n03")) +
                     pol_ledger_node_free(led, node_of("r01-n04")),
                 24, "only the pod's own 8 are taken");
    /* a group that does fit still forms and holds its rest */
    teardown();
    setup_spec("racks=1,nodes-per-rack=4");
    fits.preferred = true;
    cr_assert_neq(place(&fits, "fits0", NULL, NULL, 0), TOPO_NONE);
    cr_expect_eq(pol_ledger_group_count(led), 1);
}

static unsigned rack_free(void)
{
    unsigned f = 0;
    for (size_t i = 0; i < topo_cluster_node_count(cl); i++)
        f += pol_ledger_node_free(led, i);
    return f;
}

/* Slot arrays grow by need: a group that declares many pods makes a slot for each member that
 * comes and each hold its first member makes, not for the declared size (issue 12, item 2). */
Test(pol_filter, slot_arrays_grow_as_members_come, .fini = teardown)
{
    /* 500 pods of 1 GPU fit the 512 GPUs of the rack, but tp 1 x pp 1 says 1 GPU: nothing is
     * held for a preferred group whose size contradicts its layout, so one slot is made */
    struct pol_workload odd = member("llm/odd", 1, 1, 1, 500, 0);
    struct pol_workload four = member("llm/four", 8, 4, 8, 4, 0);
    struct pol_group_summary gs[4];

    setup_spec("racks=1,nodes-per-rack=64,gpus-per-node=8");
    odd.preferred = true;
    cr_assert_neq(place(&odd, "odd0", NULL, NULL, 0), TOPO_NONE);
    cr_assert_eq(pol_ledger_group_count(led), 1);
    pol_ledger_groups(led, gs);
    cr_expect_eq(gs[0].group_size, 500);
    cr_expect_eq(gs[0].slots, 1, "a slot per member that came, not %u", gs[0].slots);
    /* members without an index take the next slot; one with index 99 needs slot 99 */
    odd.pod_index = -1;
    cr_assert_neq(place(&odd, "odd1", NULL, NULL, 0), TOPO_NONE);
    pol_ledger_groups(led, gs);
    cr_expect_eq(gs[0].slots, 2);
    odd.pod_index = 99;
    cr_assert_neq(place(&odd, "odd99", NULL, NULL, 0), TOPO_NONE);
    pol_ledger_groups(led, gs);
    cr_expect_eq(gs[0].slots, 100);
    cr_expect_eq(gs[0].members_placed, 3);
    cr_expect(pol_ledger_forget_pod(led, "odd99"));
    cr_expect(pol_ledger_forget_pod(led, "odd1"));
    cr_expect(pol_ledger_forget_pod(led, "odd0"));
    cr_expect_eq(pol_ledger_group_count(led), 0);

    /* a group whose first member holds the rest makes a slot per hold: all four */
    cr_assert_neq(place(&four, "four0", NULL, NULL, 0), TOPO_NONE);
    pol_ledger_groups(led, gs);
    cr_expect_eq(gs[0].slots, 4);
    cr_expect_eq(gs[0].accel_reserved, 24);
    four.pod_index = 3;
    cr_assert_neq(place(&four, "four3", NULL, NULL, 0), TOPO_NONE);
    pol_ledger_groups(led, gs);
    cr_expect_eq(gs[0].slots, 4);
    cr_expect_eq(gs[0].accel_reserved, 16, "the member took its own hold");
}

/* A declared group size that contradicts a certain layout (tp 8 x pp 2 = 16 GPUs, 3 pods of 8
 * declared): required, every node is unresolvable with the arithmetic; preferred, the pod is
 * placed on its own and nothing is held for the other two. */
Test(pol_filter, a_group_size_that_contradicts_a_certain_layout, .fini = teardown)
{
    struct pol_workload wl = member("llm/odd", 8, 2, 8, 3, 0);
    char why[512];

    setup_spec("racks=1,nodes-per-rack=4");
    cr_expect_eq(verdict_on(&wl, "r01-n01", why, sizeof(why)), POL_UNRESOLVABLE);
    cr_expect(strstr(why, "= 16 GPUs, but the group has 3 pods x 8 GPUs = 24") != NULL, "%s", why);
    cr_expect_eq(place(&wl, "odd0", NULL, NULL, 0), TOPO_NONE);
    wl.preferred = true;
    cr_expect_eq(verdict_on(&wl, "r01-n01", NULL, 0), POL_FIT);
    cr_assert_neq(place(&wl, "odd0", NULL, NULL, 0), TOPO_NONE);
    cr_expect_eq(rack_free(), 32 - 8, "only the pod's own 8 are taken, nothing is held");
    /* the same group with a size that adds up holds its rest */
    wl = member("llm/even", 8, 2, 8, 2, 0);
    wl.preferred = true;
    cr_assert_neq(place(&wl, "even0", NULL, NULL, 0), TOPO_NONE);
    cr_expect_eq(rack_free(), 32 - 8 - 16);
}

Test(pol_filter, reservation_budgets_per_namespace_and_in_all, .fini = teardown)
{
    struct pol_workload a = member("ns1/a", 8, 4, 8, 4, 0);
    struct pol_workload b = member("ns1/b", 8, 2, 8, 2, 0);
    struct pol_workload c = member("ns2/c", 8, 2, 8, 2, 0);
    struct pol_workload d = member("ns3/d", 8, 2, 8, 2, 0);

    setup_spec("racks=1,nodes-per-rack=8");
    pol_ledger_set_budgets(led, 16, 24);
    cr_assert_neq(place(&a, "a0", NULL, NULL, 0), TOPO_NONE);
    cr_expect_eq(rack_free(), 64 - 8 - 16, "ns1 holds 16 of a's 24");
    cr_expect_eq(pol_ledger_budget_refusals(led), 1);
    cr_assert_neq(place(&b, "b0", NULL, NULL, 0), TOPO_NONE);
    cr_expect_eq(rack_free(), 64 - 16 - 16, "ns1's budget is spent: b holds nothing");
    cr_assert_neq(place(&c, "c0", NULL, NULL, 0), TOPO_NONE);
    cr_expect_eq(rack_free(), 64 - 24 - 24, "ns2 holds 8: 24 in all");
    cr_assert_neq(place(&d, "d0", NULL, NULL, 0), TOPO_NONE);
    cr_expect_eq(rack_free(), 64 - 32 - 24, "the global cap is spent: d holds nothing");
    cr_expect_eq(pol_ledger_budget_refusals(led), 3);
    /* the budgets free up when holds lapse */
    pol_ledger_expire(led, NOW + 600);
    cr_expect_eq(rack_free(), 64 - 32);
}
