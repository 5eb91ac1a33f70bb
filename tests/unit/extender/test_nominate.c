/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/extender/test_nominate.c - who serve nominates to which held node
 * (ext_nominate_assign, issue 20, item 2): one member per held slot, an indexed member to its own
 * slot only (as topox's filter gives it no other), members without an index keep the slot their
 * nomination names and the rest, but those whose cycle runs, take the slots left by name, never
 * two on one slot. */
#include "extender/nominate.h"

#include <criterion/criterion.h>
#include <string.h>

static const struct ext_nom_slot held[] = {{1, "r2-n2"}, {2, "r2-n3"}, {3, "r2-n4"}};

Test(ext_nominate, an_indexed_member_gets_its_own_slot_only)
{
    const struct ext_nom_member m[] = {{"vllm-0-3", 3, NULL, false},
                                       {"vllm-0-1", 1, NULL, false},
                                       {"vllm-0-0", 0, NULL, false},
                                       {"vllm-0-2", 2, "", false}};
    long out[4];

    ext_nominate_assign(held, 3, m, 4, out);
    cr_expect_eq(out[0], 2, "index 3 -> slot 3 (r2-n4)");
    cr_expect_eq(out[1], 0, "index 1 -> slot 1 (r2-n2)");
    cr_expect_eq(out[2], -1, "index 0: its slot is not held (the leader is bound)");
    cr_expect_eq(out[3], 1, "index 2 -> slot 2 (r2-n3)");
}

Test(ext_nominate, an_indexed_member_keeps_its_slot_whatever_its_nomination_says)
{
    const struct ext_nom_member m[] = {{"w-2", 2, "r2-n4", false}, {"w-3", 3, "r2-n3", false}};
    long out[2];

    ext_nominate_assign(held, 3, m, 2, out);
    cr_expect_eq(out[0], 1, "w-2 goes to slot 2's node, not the r2-n4 it was nominated to");
    cr_expect_eq(out[1], 2);
}

Test(ext_nominate, members_without_an_index_keep_their_node_then_go_by_name)
{
    /* the scheduler nominated gang-c to r2-n3 itself; a and b come by name to the rest */
    const struct ext_nom_member m[] = {{"gang-c", -1, "r2-n3", false},
                                       {"gang-b", -1, NULL, false},
                                       {"gang-a", -1, "elsewhere", false}};
    long out[3];

    ext_nominate_assign(held, 3, m, 3, out);
    cr_expect_eq(out[0], 1, "gang-c keeps r2-n3");
    cr_expect_eq(out[2], 0, "gang-a (first by name) -> the first slot left, r2-n2");
    cr_expect_eq(out[1], 2, "gang-b -> r2-n4");
}

Test(ext_nominate, more_members_than_slots_one_per_slot_and_deterministic)
{
    const struct ext_nom_member m[] = {{"p-4", -1, NULL, false},
                                       {"p-1", -1, NULL, false},
                                       {"p-3", -1, NULL, false},
                                       {"p-2", -1, NULL, false},
                                       {"p-0", -1, "r2-n2", false}};
    const struct ext_nom_member r[] = {{"p-0", -1, "r2-n2", false},
                                       {"p-2", -1, NULL, false},
                                       {"p-3", -1, NULL, false},
                                       {"p-1", -1, NULL, false},
                                       {"p-4", -1, NULL, false}};
    long out[5], again[5];
    int used[3] = {0};

    ext_nominate_assign(held, 3, m, 5, out);
    for (int i = 0; i < 5; i++) {
        if (out[i] >= 0)
            used[out[i]]++;
    }
    cr_expect(used[0] == 1 && used[1] == 1 && used[2] == 1, "each slot once");
    cr_expect_eq(out[4], 0, "p-0 keeps r2-n2");
    cr_expect_eq(out[1], 1, "p-1 next by name");
    cr_expect_eq(out[3], 2, "then p-2");
    cr_expect(out[0] == -1 && out[2] == -1, "p-3, p-4: no slot left");
    /* the same members in another order: the same nodes */
    ext_nominate_assign(held, 3, r, 5, again);
    cr_expect_eq(again[0], out[4]);
    cr_expect_eq(again[3], out[1]);
    cr_expect_eq(again[1], out[3]);
    cr_expect(again[2] == -1 && again[4] == -1);
}

Test(ext_nominate, no_slot_held_nobody_is_nominated)
{
    const struct ext_nom_member m[] = {{"a", -1, "r2-n2", false}, {"b", 1, NULL, false}};
    long out[2] = {7, 7};

    ext_nominate_assign(held, 0, m, 2, out);
    cr_expect(out[0] == -1 && out[1] == -1);
    ext_nominate_assign(held, 3, m, 0, out); /* no member: nothing written, no crash */
}

Test(ext_nominate, two_members_naming_the_same_node_one_keeps_it)
{
    const struct ext_nom_member m[] = {{"b", -1, "r2-n2", false}, {"a", -1, "r2-n2", false}};
    long out[2];

    ext_nominate_assign(held, 3, m, 2, out);
    cr_expect_eq(out[0], 0, "the first that names it keeps it");
    cr_expect_eq(out[1], 1, "the other moves to the next slot");
}

/* A member whose cycle runs (topox filtered it a moment ago, here the gang's first member) keeps
 * a held node it names but takes no other: one slot stays free for whichever node its cycle
 * picks, so its mates, nominated elsewhere, never find their room taken. */
Test(ext_nominate, a_busy_member_takes_no_slot_and_leaves_one_free)
{
    const struct ext_nom_member m[] = {
        {"gang-0", -1, NULL, true}, {"gang-1", -1, NULL, false}, {"gang-2", -1, NULL, false}};
    const struct ext_nom_member kept[] = {{"gang-0", -1, "r2-n4", true}};
    long out[3];

    ext_nominate_assign(held, 3, m, 3, out);
    cr_expect_eq(out[0], -1, "the busy member is not nominated");
    cr_expect_eq(out[1], 0);
    cr_expect_eq(out[2], 1, "slot 3 (r2-n4) stays free");
    ext_nominate_assign(held, 3, kept, 1, out);
    cr_expect_eq(out[0], 2, "a held node it already names stays its own");
}
