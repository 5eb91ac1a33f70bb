/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/extender/test_cpumembers.c - the members of groups that ask for no accelerator, as
 * serve remembers them: a CPU leader seen once (however often it is filtered) takes its group's
 * accelerator members' count and index down by one; a pod with accelerators, without a group or
 * in a group of unwritten size is not remembered; a forgotten member counts no more. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "extender/cpumembers.h"

static struct pol_workload member(const char *group, unsigned accel, int idx, unsigned size)
{
    struct pol_workload wl;

    memset(&wl, 0, sizeof(wl));
    snprintf(wl.group, sizeof(wl.group), "%s", group);
    wl.accel_per_pod = accel;
    wl.has_intent = accel > 0;
    wl.group_size = size;
    wl.size_explicit = true;
    wl.pod_index = idx;
    wl.tp = wl.pp = 1;
    wl.dp = size * accel;
    wl.dp_world = true;
    return wl;
}

Test(cpumembers, a_cpu_leader_takes_no_slot_of_its_group)
{
    struct ext_cpu_members *c = ext_cpu_members_new(600);
    struct pol_workload leader = member("ml/lws:a/0", 0, 0, 3), w;

    cr_assert_not_null(c);
    ext_cpu_members_note(c, &leader, "uid-leader", 0, true);
    ext_cpu_members_note(c, &leader, "uid-leader", 0, true); /* a retried filter, then the watch */
    w = member("ml/lws:a/0", 1, 2, 3);
    ext_cpu_members_skip(c, &w, 0);
    cr_expect_eq(w.group_size, 2);
    cr_expect_eq(w.pod_index, 1);
    cr_expect_eq(w.tp * w.pp * w.dp, 2);
    /* another group is untouched */
    w = member("ml/lws:b/0", 1, 2, 3);
    ext_cpu_members_skip(c, &w, 0);
    cr_expect_eq(w.group_size, 3);
    /* gone: its group's members count it no more */
    ext_cpu_members_forget(c, "uid-leader");
    w = member("ml/lws:a/0", 1, 2, 3);
    ext_cpu_members_skip(c, &w, 0);
    cr_expect_eq(w.group_size, 3);
    ext_cpu_members_free(c);
}

Test(cpumembers, only_cpu_members_of_written_groups_are_remembered)
{
    struct ext_cpu_members *c = ext_cpu_members_new(600);
    struct pol_workload gpu = member("ml/g", 8, 0, 2), loose = member("ml/g", 0, 0, 2);
    struct pol_workload alone = member("", 0, 0, 1), w;

    loose.size_explicit = false;
    ext_cpu_members_note(c, &gpu, "a", 0, true);
    ext_cpu_members_note(c, &loose, "b", 0, true);
    ext_cpu_members_note(c, &alone, "c", 0, true);
    ext_cpu_members_note(NULL, &alone, "d", 0, false); /* no registry: nothing, no crash */
    w = member("ml/g", 8, 1, 2);
    ext_cpu_members_skip(c, &w, 0);
    cr_expect_eq(w.group_size, 2);
    cr_expect_eq(w.pod_index, 1);
    ext_cpu_members_free(c);
    ext_cpu_members_free(NULL);
}

/* Without a watch nothing says a CPU member is gone: one only filters have seen lasts ttl_s after
 * its last filter, so a group made again under the same key does not count its old leader for
 * ever; one the watch has seen stays until the watch drops it. */
Test(cpumembers, a_member_only_filters_saw_is_forgotten_after_its_ttl)
{
    struct ext_cpu_members *c = ext_cpu_members_new(600);
    struct pol_workload leader = member("ml/lws:a/0", 0, 0, 3), w;

    ext_cpu_members_note(c, &leader, "filtered", 100, false);
    w = member("ml/lws:a/0", 1, 2, 3);
    ext_cpu_members_skip(c, &w, 650);
    cr_expect_eq(w.group_size, 2, "within its ttl");
    w = member("ml/lws:a/0", 1, 2, 3);
    ext_cpu_members_skip(c, &w, 701);
    cr_expect_eq(w.group_size, 3, "past its ttl, forgotten");
    ext_cpu_members_note(c, &leader, "watched", 701, true);
    w = member("ml/lws:a/0", 1, 2, 3);
    ext_cpu_members_skip(c, &w, 100000);
    cr_expect_eq(w.group_size, 2, "the watch's: until the watch drops it");
    ext_cpu_members_free(c);
}
