/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/policy/test_record.c - pol_record: pods the API server reports as already bound are
 * facts. Every member of every group is recorded whatever order they arrive in (worker before
 * leader, plain pods filling the rack first, groups interleaved), capacity is the sum of the pods,
 * holds they overbook move, contradictions are recorded with a warning, and a new placement
 * (pol_commit) still gets every check. */
#include "policy/policy.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "topology/synthetic.h"

#define NOW 1000000

static struct pol_workload member(const char *group, int idx)
{
    struct pol_workload wl = {.has_intent = true,
                              .tp = 8,
                              .pp = 2,
                              .dp = 1,
                              .accel_per_pod = 8,
                              .group_size = 2,
                              .pod_index = idx,
                              .tp_explicit = true,
                              .pp_explicit = true,
                              .tp_source = "annotation",
                              .resource = "nvidia.com/gpu"};
    snprintf(wl.group, sizeof(wl.group), "%s", group);
    snprintf(wl.display, sizeof(wl.display), "%s", group);
    return wl;
}

static struct topo_cluster *synth(const char *spec)
{
    struct tpx_err err = TPX_ERR_INIT;
    struct topo_cluster *c = topo_cluster_synthetic(spec, &err);

    cr_assert_not_null(c, "%s", err.msg);
    return c;
}

/* Record one bound member; returns the warning (static buffer). */
static const char *rec(struct pol_ledger *l, const char *group, int idx, size_t node)
{
    static char warn[512];
    char uid[64];
    struct pol_workload wl = member(group, idx);
    struct pol_placement out;
    struct tpx_err err = TPX_ERR_INIT;

    snprintf(uid, sizeof(uid), "%s-%d", group, idx);
    cr_assert_eq(pol_record(l, &wl, uid, uid, node, NOW, 600, &out, warn, sizeof(warn), &err),
                 TPX_OK, "%s on node %zu: %s", uid, node, err.msg);
    cr_expect_eq(out.node, node);
    return warn;
}

static unsigned members_of(const struct pol_ledger *l, const char *group, size_t *rack)
{
    struct pol_group_summary g[512];
    size_t n = pol_ledger_group_count(l);

    cr_assert_leq(n, 512);
    pol_ledger_groups(l, g);
    for (size_t i = 0; i < n; i++) {
        if (strcmp(g[i].group, group) == 0) {
            *rack = g[i].rack;
            return g[i].members_placed;
        }
    }
    return 0;
}

/* The old behaviour: pol_commit judges a bound leader like a new one and refuses it, because the
 * first group's hold sits on its node. pol_record takes it. */
Test(pol_record, a_bound_leader_on_a_node_another_group_holds_is_recorded)
{
    struct topo_cluster *c = synth("racks=1,nodes-per-rack=4,gpus-per-node=8");
    struct tpx_err err = TPX_ERR_INIT;
    struct pol_ledger *l = pol_ledger_new(c, &err);
    struct pol_workload b0 = member("b", 0);
    struct pol_placement out;
    size_t rack;

    cr_expect_str_empty(rec(l, "a", 0, 0));
    cr_expect_eq(pol_ledger_node_free(l, 1), 0, "a-1 is held on node 1 (best fit)");
    cr_expect_eq(pol_commit(l, &b0, "b-0x", "b-0x", 1, NOW, 600, &out, &err), TPX_EINVAL,
                 "a new placement onto the held node is refused");
    tpx_err_clear(&err);
    cr_expect_str_empty(rec(l, "b", 0, 1));
    cr_expect_str_empty(rec(l, "a", 1, 2));
    cr_expect_str_empty(rec(l, "b", 1, 3));
    cr_expect_eq(members_of(l, "a", &rack), 2);
    cr_expect_eq(members_of(l, "b", &rack), 2);
    for (size_t i = 0; i < 4; i++)
        cr_expect_eq(pol_ledger_node_free(l, i), 0, "node %zu", i);
    pol_ledger_free(l);
    topo_cluster_free(c);
}

/* A full cluster of 4 racks x 8 nodes: 2 groups per rack (4 nodes) and 4 nodes of plain pods,
 * delivered in many orders. Every group whole, usage the sum of the pods, nothing held. */
Test(pol_record, a_full_cluster_rebuilds_every_group_in_any_order)
{
    struct topo_cluster *c = synth("racks=4,nodes-per-rack=8,gpus-per-node=8");
    struct tpx_err err = TPX_ERR_INIT;
    enum { NPODS = 32 };
    size_t order[NPODS];
    unsigned long seed = 7;

    for (int round = 0; round < 30; round++) {
        struct pol_ledger *l = pol_ledger_new(c, &err);
        struct pol_rack_summary r[4];

        cr_assert_not_null(l, "%s", err.msg);
        for (size_t i = 0; i < NPODS; i++)
            order[i] = round == 1 ? NPODS - 1 - i : i;
        for (size_t i = NPODS; round > 1 && i > 1; i--) {
            size_t j, t;
            seed = seed * 6364136223846793005UL + 1442695040888963407UL;
            j = (size_t)(seed >> 33) % i;
            t = order[i - 1];
            order[i - 1] = order[j];
            order[j] = t;
        }
        for (size_t k = 0; k < NPODS; k++) {
            size_t node = order[k], rack = node / 8, slot = node % 8;
            char group[48];
            /* in each rack: g0 leader, g1 leader, plain, g0 worker, plain, g1 worker, plain x2 */
            static const int idx[8] = {0, 0, -1, 1, -1, 1, -1, -1};
            static const int grp[8] = {0, 1, -1, 0, -1, 1, -1, -1};
            if (grp[slot] < 0) {
                cr_assert_eq(pol_ledger_use(l, node, 8, &err), TPX_OK, "%s", err.msg);
                continue;
            }
            snprintf(group, sizeof(group), "r%zu-g%d", rack, grp[slot]);
            cr_expect_str_empty(rec(l, group, idx[slot], node), "round %d", round);
        }
        cr_expect_eq(pol_ledger_group_count(l), 8, "round %d", round);
        for (size_t rk = 0; rk < 4; rk++) {
            for (int gi = 0; gi < 2; gi++) {
                char group[48];
                size_t rack = 99;
                snprintf(group, sizeof(group), "r%zu-g%d", rk, gi);
                cr_expect_eq(members_of(l, group, &rack), 2, "round %d: %s", round, group);
                cr_expect_eq(rack, rk, "round %d: %s", round, group);
            }
        }
        pol_ledger_racks(l, r);
        for (size_t rk = 0; rk < 4; rk++) {
            cr_expect_eq(r[rk].accel_free, 0, "round %d rack %zu", round, rk);
            cr_expect_eq(r[rk].accel_reserved, 0, "round %d rack %zu", round, rk);
        }
        pol_ledger_free(l);
    }
    topo_cluster_free(c);
}

/* Half-placed group after a restart: its worker is recorded, plain pods filled the rack first.
 * The leader may only go into that rack, onto a node with room. */
Test(pol_record, the_next_member_of_a_half_placed_group_only_goes_to_its_rack)
{
    struct topo_cluster *c = synth("racks=2,nodes-per-rack=4,gpus-per-node=8");
    struct tpx_err err = TPX_ERR_INIT;
    struct pol_ledger *l = pol_ledger_new(c, &err);
    struct pol_workload h0 = member("h", 0);
    struct pol_filter_result res;
    size_t cand[8] = {0, 1, 2, 3, 4, 5, 6, 7}, rack = 99;

    cr_assert_eq(pol_ledger_use(l, 4, 8, &err), TPX_OK);
    cr_assert_eq(pol_ledger_use(l, 5, 8, &err), TPX_OK);
    cr_expect_str_empty(rec(l, "h", 1, 6));
    cr_expect_eq(members_of(l, "h", &rack), 1);
    cr_expect_eq(rack, 1);
    cr_assert_eq(pol_filter(l, &h0, cand, 8, NOW, &res, &err), TPX_OK, "%s", err.msg);
    for (size_t i = 0; i < 4; i++)
        cr_expect_eq(res.verdict[i], POL_UNRESOLVABLE, "node %zu in the other rack", i);
    cr_expect_neq(res.verdict[4], POL_FIT);
    cr_expect_neq(res.verdict[5], POL_FIT);
    cr_expect_neq(res.verdict[6], POL_FIT);
    cr_expect_eq(res.verdict[7], POL_FIT, "the held node in the group's rack");
    cr_expect_eq(res.nfit, 1);
    pol_filter_result_release(&res);
    /* a plain pod lands on the held node: the hold lapses (no room left), nothing double-booked */
    cr_assert_eq(pol_ledger_use(l, 7, 8, &err), TPX_OK);
    cr_expect_eq(pol_ledger_node_free(l, 7), 0);
    {
        struct pol_rack_summary r[2];
        pol_ledger_racks(l, r);
        cr_expect_eq(r[1].accel_reserved, 0, "the hold did not survive on a full node");
    }
    pol_ledger_free(l);
    topo_cluster_free(c);
}

/* Contradictions are recorded anyway, with a warning. */
Test(pol_record, contradictions_are_recorded_with_a_warning)
{
    struct topo_cluster *c = synth("racks=2,nodes-per-rack=2,gpus-per-node=8");
    struct tpx_err err = TPX_ERR_INIT;
    struct pol_ledger *l = pol_ledger_new(c, &err);
    struct pol_workload x1 = member("x", 1);
    struct pol_placement out;
    size_t rack = 99;
    const char *w;

    cr_expect_str_empty(rec(l, "x", 0, 0));
    w = rec(l, "x", 1, 2);
    cr_expect(strstr(w, "outside rack") != NULL, "%s", w);
    cr_expect_eq(members_of(l, "x", &rack), 2, "the stray member is still a member");
    cr_expect_eq(rack, 0);
    cr_expect_eq(pol_ledger_node_free(l, 1), 8, "x's hold left the node once x-1 was recorded");
    cr_assert_eq(pol_ledger_use(l, 3, 8, &err), TPX_OK);
    w = rec(l, "y", 0, 3);
    cr_expect(strstr(w, "allocatable") != NULL, "%s", w);
    cr_expect_eq(members_of(l, "y", &rack), 1);
    /* idempotent: the same uid on the same node, no second booking and no warning */
    {
        char warn[64] = "x";
        cr_expect_eq(pol_record(l, &x1, "x-1", "x-1", 2, NOW, 600, &out, warn, sizeof(warn), &err),
                     TPX_OK);
        cr_expect_str_empty(warn);
        cr_expect_eq(members_of(l, "x", &rack), 2);
        cr_expect_eq(pol_record(l, &x1, "x-1", "x-1", 1, NOW, 600, &out, warn, sizeof(warn), &err),
                     TPX_EINVAL, "a uid on another node is an error");
    }
    pol_ledger_free(l);
    topo_cluster_free(c);
}

/* A second pod with an index its group has filled, and a pod whose intent does not validate, are
 * recorded too, each with its warning. */
Test(pol_record, a_taken_index_and_an_invalid_intent_are_recorded_with_a_warning)
{
    struct topo_cluster *c = synth("racks=1,nodes-per-rack=4,gpus-per-node=8");
    struct tpx_err err = TPX_ERR_INIT;
    struct pol_ledger *l = pol_ledger_new(c, &err);
    struct pol_workload again = member("x", 0), bad = member("bad", 0);
    struct pol_placement out;
    char warn[512];
    size_t rack = 99;

    cr_expect_str_empty(rec(l, "x", 0, 0));
    cr_assert_eq(pol_record(l, &again, "x-0b", "x-0b", 1, NOW, 600, &out, warn, sizeof(warn), &err),
                 TPX_OK, "%s", err.msg);
    cr_expect_str_eq(warn, "pod 'x-0b': index 0 of group x is already taken");
    cr_expect_eq(members_of(l, "x", &rack), 2, "the extra pod is still a member");
    cr_expect_eq(pol_ledger_node_free(l, 1), 0, "its accelerators are taken");
    bad.tp = 16; /* more than a node's 8-GPU domain */
    cr_assert_eq(pol_record(l, &bad, "bad-0", "bad-0", 2, NOW, 600, &out, warn, sizeof(warn), &err),
                 TPX_OK, "%s", err.msg);
    cr_expect(strncmp(warn, "pod 'bad-0': ", 13) == 0 && strlen(warn) > 13, "%s", warn);
    cr_expect_eq(out.node, 2);
    cr_expect_eq(pol_ledger_node_free(l, 2), 0);
    pol_ledger_free(l);
    topo_cluster_free(c);
}
