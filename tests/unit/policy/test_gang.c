/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/policy/test_gang.c - PodGroup gangs (pol_gang_hold): kube-scheduler 1.37 filters
 * every member of a PodGroup before it binds any (pkg/scheduler/schedule_one_podgroup.go), so
 * the group's room is held at a member's filter; in-tree TAS filters the gang once per candidate
 * placement and binds the one it scores best, which the hold follows. */
#include "policy/policy.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "topology/synthetic.h"

#define NOW 1000000
#define TTL 600

static struct topo_cluster *cl;
static struct pol_ledger *led;
static size_t all[64];
static size_t nall;

static void setup(void)
{
    struct tpx_err err = TPX_ERR_INIT;

    cl = topo_cluster_synthetic("example", &err); /* racks r01..r04, 4 nodes of 8 GPUs each */
    cr_assert_not_null(cl, "%s", err.msg);
    led = pol_ledger_new(cl, &err);
    cr_assert_not_null(led, "%s", err.msg);
    nall = topo_cluster_node_count(cl);
    cr_assert_leq(nall, 64);
    for (size_t i = 0; i < nall; i++)
        all[i] = i;
}

static void teardown(void)
{
    pol_ledger_free(led);
    topo_cluster_free(cl);
    led = NULL;
    cl = NULL;
}

/* A member of PodGroup `name` (minCount n, pods of 8 GPUs, no engine flags, no index). */
static struct pol_workload gang_member(const char *name, unsigned n)
{
    struct pol_workload wl = {.has_intent = true,
                              .tp = 8,
                              .pp = 1,
                              .dp = 1,
                              .accel_per_pod = 8,
                              .group_size = n,
                              .pod_index = -1,
                              .tp_source = "default",
                              .size_explicit = true,
                              .gang = true,
                              .resource = "nvidia.com/gpu"};
    snprintf(wl.group, sizeof(wl.group), "default/podgroup:%s", name);
    snprintf(wl.display, sizeof(wl.display), "default/%s (PodGroup)", name);
    return wl;
}

static const char *rack_of(size_t node)
{
    return topo_cluster_rack_name(cl, topo_cluster_node_rack(cl, node));
}

static bool in(const size_t *set, size_t n, size_t x)
{
    for (size_t i = 0; i < n; i++) {
        if (set[i] == x)
            return true;
    }
    return false;
}

/*
 * One gang cycle as kube-scheduler runs it over cand[0, ncand): each member's filter (after
 * pol_gang_hold when hold), the node chosen among those that pass and that no earlier member of
 * the cycle assumed, then every bind. The choice is the scheduler's, not topox's: it spreads,
 * taking the passing node of the rack with the fewest members so far (NodeResourcesFit's
 * LeastAllocated does this on an empty cluster). chosen[] gets each member's node; returns the
 * binds refused.
 */
static unsigned gang_cycle(const struct pol_workload *wl, const size_t *cand, size_t ncand,
                           bool hold, size_t *chosen)
{
    struct tpx_err err = TPX_ERR_INIT;
    unsigned refused = 0, n = wl->group_size;

    for (unsigned k = 0; k < n; k++) {
        struct pol_filter_result res;
        size_t best = TOPO_NONE;
        unsigned best_mates = ~0u;

        if (hold)
            cr_assert_eq(pol_gang_hold(led, NULL, wl, cand, ncand, NOW, TTL, NULL, &err), TPX_OK,
                         "%s", err.msg);
        cr_assert_eq(pol_filter(led, wl, cand, ncand, NOW, &res, &err), TPX_OK, "%s", err.msg);
        for (size_t i = 0; i < ncand; i++) {
            unsigned mates = 0;
            if (res.verdict[i] != POL_FIT || in(chosen, k, cand[i]))
                continue;
            for (unsigned j = 0; j < k; j++)
                mates += strcmp(rack_of(chosen[j]), rack_of(cand[i])) == 0;
            if (mates < best_mates) {
                best = cand[i];
                best_mates = mates;
            }
        }
        pol_filter_result_release(&res);
        cr_assert_neq(best, TOPO_NONE, "member %u: no node passes", k);
        chosen[k] = best;
    }
    for (unsigned k = 0; k < n; k++) {
        struct pol_placement out;
        char uid[300];
        snprintf(uid, sizeof(uid), "%s-%u", wl->group, k);
        err = (struct tpx_err)TPX_ERR_INIT;
        if (pol_commit(led, wl, uid, uid, chosen[k], NOW, TTL, &out, &err) != TPX_OK)
            refused++;
    }
    return refused;
}

static unsigned reserved_in(const char *rack)
{
    struct pol_rack_summary rs[16];
    size_t nr = topo_cluster_rack_count(cl);

    cr_assert_leq(nr, 16);
    pol_ledger_racks(led, rs);
    for (size_t r = 0; r < nr; r++) {
        if (strcmp(topo_cluster_rack_name(cl, r), rack) == 0)
            return rs[r].accel_reserved;
    }
    cr_assert_fail("no rack %s", rack);
    return 0;
}

/* The members' filters all come before the first bind: with the room held at the first filter,
 * every member is answered inside one rack and no bind is refused. The same cycle without the hold
 * (the scheduler's own spreading choice among nodes that each pass as a first member) is refused
 * binds: the bug this closes. */
Test(pol_gang, every_filter_before_any_bind_then_no_bind_is_refused, .init = setup,
     .fini = teardown)
{
    struct pol_workload wl = gang_member("gang-0", 4);
    size_t chosen[4];
    struct pol_group_summary gs[2];

    cr_expect_gt(gang_cycle(&wl, all, nall, false, chosen), 0, "without the hold binds bounce");
    teardown();
    setup();
    cr_expect_eq(gang_cycle(&wl, all, nall, true, chosen), 0, "no bind refused");
    cr_expect_not(pol_group_held_early(led, wl.group), "bound: no longer held early");
    for (unsigned k = 1; k < 4; k++)
        cr_expect_str_eq(rack_of(chosen[k]), rack_of(chosen[0]), "member %u", k);
    cr_assert_eq(pol_ledger_group_count(led), 1);
    pol_ledger_groups(led, gs);
    cr_expect_eq(gs[0].members_placed, 4);
    cr_expect_eq(gs[0].accel_reserved, 0, "every held slot was taken by a bind");
    for (size_t r = 0; r < topo_cluster_rack_count(cl); r++)
        cr_expect_eq(reserved_in(topo_cluster_rack_name(cl, r)), 0);
}

/* After the hold, a member's filter passes the held rack only, and the hold is the whole group. */
Test(pol_gang, the_hold_is_the_whole_group_and_the_filter_follows_it, .init = setup,
     .fini = teardown)
{
    struct pol_workload wl = gang_member("gang-1", 3);
    struct tpx_err err = TPX_ERR_INIT;
    struct pol_filter_result res;
    struct pol_group_summary gs[1];
    bool held = false;
    const char *rack;
    char want[128];

    cr_expect_not(pol_group_held_early(led, wl.group), "nothing held yet");
    cr_assert_eq(pol_gang_hold(led, NULL, &wl, all, nall, NOW, TTL, &held, &err), TPX_OK);
    cr_assert(held);
    cr_expect(pol_group_held_early(led, wl.group), "held with no member bound");
    cr_expect_not(pol_group_held_early(led, "default/podgroup:other"));
    pol_ledger_groups(led, gs);
    cr_expect_eq(gs[0].members_placed, 0);
    cr_expect_eq(gs[0].accel_reserved, 24);
    rack = topo_cluster_rack_name(cl, gs[0].rack);
    cr_expect_eq(reserved_in(rack), 24);
    /* a second call with the same candidates holds nothing more */
    cr_assert_eq(pol_gang_hold(led, NULL, &wl, all, nall, NOW, TTL, &held, &err), TPX_OK);
    cr_expect_not(held);
    cr_expect_eq(reserved_in(rack), 24);
    snprintf(want, sizeof(want), "group default/gang-1 (PodGroup) is placed in rack %s", rack);
    cr_assert_eq(pol_filter(led, &wl, all, nall, NOW, &res, &err), TPX_OK);
    for (size_t i = 0; i < nall; i++) {
        if (strcmp(rack_of(i), rack) == 0) {
            cr_expect_eq(res.verdict[i], POL_FIT, "%s", topo_cluster_node(cl, i)->name);
        } else {
            cr_expect_eq(res.verdict[i], POL_UNRESOLVABLE);
            cr_expect_str_eq(res.reasons[res.reason[i]], want);
        }
    }
    pol_filter_result_release(&res);
}

/* In-tree TAS filters the gang once per candidate placement (one rack each), then binds the
 * placement it scores best: the hold follows each placement, and the binds in the first one,
 * which TAS chose, are taken, with the last placement's hold let go. */
Test(pol_gang, tas_placements_and_the_one_tas_binds, .init = setup, .fini = teardown)
{
    struct pol_workload wl = gang_member("gang-2", 4);
    size_t r2[4], r3[4], n2 = 0, n3 = 0, chosen[4];
    struct tpx_err err = TPX_ERR_INIT;
    struct pol_group_summary gs[1];

    for (size_t i = 0; i < nall; i++) {
        if (strcmp(rack_of(i), "r02") == 0)
            r2[n2++] = i;
        else if (strcmp(rack_of(i), "r03") == 0)
            r3[n3++] = i;
    }
    cr_assert_eq(n2, 4);
    cr_assert_eq(n3, 4);
    cr_assert_eq(pol_gang_hold(led, NULL, &wl, r2, n2, NOW, TTL, NULL, &err), TPX_OK);
    cr_expect_eq(reserved_in("r02"), 32);
    cr_assert_eq(pol_gang_hold(led, NULL, &wl, r3, n3, NOW, TTL, NULL, &err), TPX_OK);
    cr_expect_eq(reserved_in("r02"), 0, "the hold left the placement TAS moved away from");
    cr_expect_eq(reserved_in("r03"), 32);
    /* TAS binds placement r02 */
    for (unsigned k = 0; k < 4; k++) {
        struct pol_placement out;
        char uid[16];
        snprintf(uid, sizeof(uid), "m%u", k);
        chosen[k] = r2[k];
        cr_expect_eq(pol_commit(led, &wl, uid, uid, chosen[k], NOW, TTL, &out, &err), TPX_OK,
                     "member %u: %s", k, err.msg);
    }
    cr_expect_eq(reserved_in("r03"), 0);
    cr_expect_eq(reserved_in("r02"), 0);
    pol_ledger_groups(led, gs);
    cr_expect_eq(gs[0].members_placed, 4);
    cr_expect_str_eq(topo_cluster_rack_name(cl, gs[0].rack), "r02");
}

/* A placement that cannot hold the group moves nothing: the hold stays where it was. */
Test(pol_gang, a_placement_too_small_keeps_the_hold, .init = setup, .fini = teardown)
{
    struct pol_workload wl = gang_member("gang-3", 4);
    struct tpx_err err = TPX_ERR_INIT;
    size_t r1[4], n1 = 0;
    bool held = true;

    for (size_t i = 0; i < nall; i++) {
        if (strcmp(rack_of(i), "r01") == 0)
            r1[n1++] = i;
    }
    cr_assert_eq(pol_ledger_use(led, r1[0], 8, &err), TPX_OK);
    cr_assert_eq(pol_gang_hold(led, NULL, &wl, all, nall, NOW, TTL, NULL, &err), TPX_OK);
    cr_expect_eq(reserved_in("r01"), 0, "r01 has 3 free nodes, the group needs 4");
    cr_assert_eq(pol_gang_hold(led, NULL, &wl, r1, n1, NOW, TTL, &held, &err), TPX_OK);
    cr_expect_not(held);
    cr_expect_eq(pol_ledger_group_count(led), 1);
    cr_expect_eq(reserved_in("r01"), 0);
}

/* A hold no member binds lapses with its TTL, not before; a rebase keeps it. */
Test(pol_gang, the_hold_lapses_with_its_ttl_and_survives_a_rebase, .init = setup, .fini = teardown)
{
    struct pol_workload wl = gang_member("gang-4", 2);
    struct tpx_err err = TPX_ERR_INIT;
    struct pol_ledger *n;
    struct pol_group_summary gs[1];

    cr_assert_eq(pol_gang_hold(led, NULL, &wl, all, nall, NOW, TTL, NULL, &err), TPX_OK);
    pol_ledger_expire(led, NOW + 1);
    cr_expect_eq(pol_ledger_group_count(led), 1, "held, no member bound yet");
    n = pol_ledger_rebase(led, cl, &err);
    cr_assert_not_null(n, "%s", err.msg);
    pol_ledger_free(led);
    led = n;
    cr_assert_eq(pol_ledger_group_count(led), 1);
    pol_ledger_groups(led, gs);
    cr_expect_eq(gs[0].accel_reserved, 16);
    cr_expect_neq(gs[0].rack, TOPO_NONE);
    cr_expect_eq(pol_ledger_expire(led, NOW + TTL + 1), 1);
    cr_expect_eq(pol_ledger_group_count(led), 0);
}

/* Nothing is held for a preferred group, a group of one, or a pod without intent. */
Test(pol_gang, no_hold_without_a_required_group, .init = setup, .fini = teardown)
{
    struct pol_workload pref = gang_member("p", 4), one = gang_member("o", 1),
                        none = gang_member("n", 4);
    struct tpx_err err = TPX_ERR_INIT;
    bool held = true;

    pref.preferred = true;
    none.has_intent = false;
    cr_assert_eq(pol_gang_hold(led, NULL, &pref, all, nall, NOW, TTL, &held, &err), TPX_OK);
    cr_expect_not(held);
    cr_assert_eq(pol_gang_hold(led, NULL, &one, all, nall, NOW, TTL, &held, &err), TPX_OK);
    cr_expect_not(held);
    cr_assert_eq(pol_gang_hold(led, NULL, &none, all, nall, NOW, TTL, &held, &err), TPX_OK);
    cr_expect_not(held);
    cr_expect_eq(pol_ledger_group_count(led), 0);
}

/* pol_group_holds (issue 20, item 2: serve nominates pending members to these nodes): the held,
 * unfilled slots of a group, in slot order, each on its own node, all in the held rack; a bind
 * takes its slot off the list; a group topox does not know holds nothing. */
Test(pol_gang, group_holds_lists_the_held_slots_a_bind_takes_one, .init = setup, .fini = teardown)
{
    struct pol_workload wl = gang_member("gang-h", 3);
    struct tpx_err err = TPX_ERR_INIT;
    struct pol_placement pl;
    struct pol_hold h[8];
    bool held = false;
    size_t n;

    cr_expect_eq(pol_group_holds(led, wl.group, h, 8), 0, "nothing held yet");
    cr_assert_eq(pol_gang_hold(led, NULL, &wl, all, nall, NOW, TTL, &held, &err), TPX_OK);
    cr_assert(held);
    n = pol_group_holds(led, wl.group, h, 8);
    cr_assert_eq(n, 3);
    for (size_t i = 0; i < n; i++) {
        cr_expect_eq(h[i].slot, (unsigned)i, "slot order");
        cr_expect_str_eq(rack_of(h[i].node), rack_of(h[0].node), "slot %zu", i);
        for (size_t j = 0; j < i; j++)
            cr_expect_neq(h[i].node, h[j].node, "slots %zu and %zu share a node", i, j);
    }
    cr_expect_eq(pol_group_holds(led, wl.group, h, 1), 3, "the count, past max too");
    n = pol_group_holds(led, wl.group, h, 8);
    cr_assert_eq(pol_commit(led, &wl, "u-0", "gang-h-0", h[1].node, NOW, TTL, &pl, &err), TPX_OK,
                 "%s", err.msg);
    cr_expect_eq(pol_group_holds(led, wl.group, h, 8), 2, "the bind took one slot");
    cr_expect_eq(pol_group_holds(led, "default/podgroup:none", h, 8), 0);
    cr_expect_eq(pol_group_holds(led, "", h, 8), 0);
    pol_ledger_expire(led, NOW + TTL + 1);
    cr_expect_eq(pol_group_holds(led, wl.group, h, 8), 0, "the hold lapsed");
}

/* A hold made while a group waited in the queue (pol_group_set_waiting) was made without
 * kube-scheduler, which may meanwhile have passed that room to another pod: a bind that fits
 * only without it takes it, and the waiting group's hold goes. A hold a member's cycle has
 * reached (not waiting, as a gang's at its filter) is kept, and the bind is refused. */
Test(pol_gang, a_waiting_hold_gives_way_to_a_bind, .init = setup, .fini = teardown)
{
    struct pol_workload a = gang_member("a", 4);
    struct pol_workload b = gang_member("b", 4);
    struct tpx_err err = TPX_ERR_INIT;
    struct pol_placement out;
    struct pol_hold h[8];
    bool held = false;

    b.gang = false; /* a group scheduled pod by pod, its first member's bind */
    cr_assert_eq(pol_gang_hold(led, NULL, &a, all, nall, NOW, TTL, &held, &err), TPX_OK);
    cr_assert(held);
    cr_assert_eq(pol_group_holds(led, a.group, h, 8), 4, "a rack of 4 held");
    /* reached by a cycle: kept, the other group's first member refused in its rack */
    pol_group_set_waiting(led, a.group, false);
    cr_expect_eq(pol_commit(led, &b, "b-0", "b-0", h[0].node, NOW, TTL, &out, &err), TPX_EINVAL);
    cr_expect(pol_group_held_early(led, a.group));
    /* waiting: it gives way */
    pol_group_set_waiting(led, a.group, true);
    err = (struct tpx_err)TPX_ERR_INIT;
    cr_expect_eq(pol_commit(led, &b, "b-0", "b-0", h[0].node, NOW, TTL, &out, &err), TPX_OK, "%s",
                 err.msg);
    cr_expect_not(pol_group_held_early(led, a.group), "the waiting hold went");
    cr_expect_eq(pol_group_holds(led, a.group, h, 8), 0);
}
