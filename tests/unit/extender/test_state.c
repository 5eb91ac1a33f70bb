/* SPDX-License-Identifier: Apache-2.0 */
/* tests/unit/extender/test_state.c - the serve state: readiness, unknown names, binds that race
 * for the same capacity (exactly one wins), pods leaving, and node refreshes that keep groups. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "extender/state.h"
#include "topology/synthetic.h"

static struct topo_cluster *cluster(const char *spec)
{
    struct tpx_err err = TPX_ERR_INIT;
    struct topo_cluster *c = topo_cluster_synthetic(spec, &err);

    cr_assert_not_null(c, "%s", err.msg);
    return c;
}

/* A pod of `accel` GPUs with TP `tp`, in group `group` of `size` pods. */
static struct pol_workload wl_of(const char *group, unsigned tp, unsigned pp, unsigned size,
                                 int index)
{
    struct pol_workload w;

    memset(&w, 0, sizeof(w));
    w.has_intent = true;
    w.tp = tp;
    w.pp = pp;
    w.dp = 1;
    w.accel_per_pod = tp * pp / size;
    w.group_size = size;
    w.pod_index = index;
    snprintf(w.group, sizeof(w.group), "%s", group);
    snprintf(w.display, sizeof(w.display), "%s", group);
    w.scope = POL_SCOPE_RACK;
    w.tp_explicit = true;
    w.tp_source = "annotation";
    return w;
}

static struct ext_state *state_with(const char *spec, char names[][64], size_t *n)
{
    struct tpx_err err = TPX_ERR_INIT;
    struct ext_state *st = ext_state_new(600, &err);
    struct topo_cluster *c = cluster(spec);

    *n = topo_cluster_node_count(c);
    for (size_t i = 0; i < *n && i < 64; i++)
        snprintf(names[i], 64, "%s", topo_cluster_node(c, i)->name);
    cr_assert_eq(ext_state_set_cluster(st, c, &err), TPX_OK, "%s", err.msg);
    return st;
}

Test(ext_state, ready_only_with_a_cluster_and_after_sync_when_required)
{
    struct tpx_err err = TPX_ERR_INIT;
    struct ext_state *st = ext_state_new(600, &err);
    const char *why = NULL;

    cr_expect(!ext_state_ready(st, &why));
    cr_expect_str_eq(why, "no cluster loaded");
    ext_state_require_sync(st);
    cr_assert_eq(ext_state_set_cluster(st, cluster("racks=1,nodes-per-rack=1"), &err), TPX_OK);
    cr_expect(!ext_state_ready(st, &why), "the watch has not synced yet");
    ext_state_mark_synced(st);
    cr_expect(ext_state_ready(st, &why));
    ext_state_free(st);
}

Test(ext_state, unknown_names_fail_with_a_reason_never_dropped)
{
    char names[64][64];
    size_t n;
    struct ext_state *st = state_with("racks=1,nodes-per-rack=2", names, &n);
    struct pol_workload w = wl_of("g", 8, 1, 1, 0);
    const char *cand[] = {names[0], "ghost"};
    struct ext_verdicts v;
    struct tpx_err err = TPX_ERR_INIT;

    cr_assert_eq(ext_state_filter(st, &w, cand, 2, 1000, &v, &err), TPX_OK, "%s", err.msg);
    cr_assert_eq(v.n, 2);
    cr_expect_eq(v.verdict[0], POL_FIT, "%s", v.reason[0] ? v.reason[0] : "");
    cr_expect_eq(v.verdict[1], POL_FAIL);
    cr_expect_str_eq(v.reason[1], EXT_UNKNOWN_NODE_REASON);
    cr_expect_eq(v.nunknown, 1);
    ext_verdicts_release(&v);
    ext_state_free(st);
}

struct racer {
    struct ext_state *st;
    const char *node;
    char uid[32];
    int ok;
};

static void *race(void *arg)
{
    struct racer *r = arg;
    struct ext_bind_out out;
    struct tpx_err err = TPX_ERR_INIT;

    r->ok = ext_state_bind(r->st, r->uid, r->uid, r->node, 1000, &out, &err) == TPX_OK;
    return NULL;
}

Test(ext_state, concurrent_binds_to_one_node_book_it_once)
{
    char names[64][64];
    size_t n;
    struct ext_state *st = state_with("racks=1,nodes-per-rack=2,gpus-per-node=8", names, &n);
    struct racer r[8];
    pthread_t t[8];
    int wins = 0;

    for (int i = 0; i < 8; i++) {
        char group[32];
        struct pol_workload w;

        snprintf(group, sizeof(group), "group-%d", i);
        w = wl_of(group, 8, 1, 1, 0);
        r[i].st = st;
        r[i].node = names[0];
        snprintf(r[i].uid, sizeof(r[i].uid), "uid-%d", i);
        ext_state_remember_pod(st, r[i].uid, r[i].uid, &w, 1000);
    }
    for (int i = 0; i < 8; i++)
        pthread_create(&t[i], NULL, race, &r[i]);
    for (int i = 0; i < 8; i++) {
        pthread_join(t[i], NULL);
        wins += r[i].ok;
    }
    cr_expect_eq(wins, 1, "an 8-GPU node takes one 8-GPU pod, not %d", wins);
    ext_state_free(st);
}

Test(ext_state, a_pod_leaving_frees_its_capacity)
{
    char names[64][64];
    size_t n;
    struct ext_state *st = state_with("racks=1,nodes-per-rack=1,gpus-per-node=8", names, &n);
    struct pol_workload a = wl_of("a", 8, 1, 1, 0), b = wl_of("b", 8, 1, 1, 0);
    struct ext_bind_out out;
    struct tpx_err err = TPX_ERR_INIT;

    ext_state_remember_pod(st, "ua", "a", &a, 1000);
    ext_state_remember_pod(st, "ub", "b", &b, 1000);
    cr_assert_eq(ext_state_bind(st, "ua", "a", names[0], 1000, &out, &err), TPX_OK, "%s", err.msg);
    cr_expect(out.intent);
    cr_expect_neq(ext_state_bind(st, "ub", "b", names[0], 1000, &out, &err), TPX_OK);
    cr_expect_str_not_empty(err.msg, "a refused bind says why");
    cr_expect(ext_state_remove_pod(st, "ua"));
    tpx_err_clear(&err);
    cr_expect_eq(ext_state_bind(st, "ub", "b", names[0], 1000, &out, &err), TPX_OK, "%s", err.msg);
    cr_expect_eq(ext_state_bind(st, "ub", "b", names[0], 1000, &out, &err), TPX_OK,
                 "a repeated bind of the same pod is idempotent");
    ext_state_free(st);
}

Test(ext_state, node_refresh_rebuilds_only_on_change_and_keeps_groups)
{
    char names[64][64];
    size_t n;
    struct ext_state *st = state_with("racks=2,nodes-per-rack=2,gpus-per-node=8", names, &n);
    struct pol_workload lead = wl_of("g", 8, 2, 2, 0), worker = wl_of("g", 8, 2, 2, 1);
    struct tpx_err err = TPX_ERR_INIT;
    struct ext_bind_out out;
    struct ext_verdicts v;
    struct topo_node_info info, fresh;
    const char *cand[4];
    bool changed = true;
    size_t same_rack = 0;

    cr_assert_eq(n, 4);
    ext_state_remember_pod(st, "u0", "g-0", &lead, 1000);
    cr_assert_eq(ext_state_bind(st, "u0", "g-0", names[0], 1000, &out, &err), TPX_OK, "%s",
                 err.msg);
    memset(&info, 0, sizeof(info));
    info.name = names[0];
    info.rack = out.rack;
    /* an identical copy of an existing node changes nothing */
    {
        struct ext_verdicts dummy;
        (void)dummy;
    }
    memset(&fresh, 0, sizeof(fresh));
    fresh.name = "new-node";
    fresh.rack = "r9";
    fresh.resource = "nvidia.com/gpu";
    fresh.accel_alloc = 8;
    cr_assert_eq(ext_state_upsert_nodes(st, &fresh, 1, &changed, &err), TPX_OK, "%s", err.msg);
    cr_expect(changed, "a new node rebuilds the snapshot");
    cr_assert_eq(ext_state_upsert_nodes(st, &fresh, 1, &changed, &err), TPX_OK, "%s", err.msg);
    cr_expect(!changed, "the same node again changes nothing");
    /* the group placed before the rebuild still binds its worker to the leader's rack */
    for (size_t i = 0; i < 4; i++)
        cand[i] = names[i];
    ext_state_remember_pod(st, "u1", "g-1", &worker, 1001);
    cr_assert_eq(ext_state_filter(st, &worker, cand, 4, 1001, &v, &err), TPX_OK, "%s", err.msg);
    for (size_t i = 0; i < 4; i++)
        same_rack += v.verdict[i] == POL_FIT;
    cr_expect_eq(same_rack, 1, "only the other node of the leader's rack fits the worker");
    cr_expect_eq(v.verdict[1], POL_FIT, "%s", v.reason[1] ? v.reason[1] : "");
    ext_verdicts_release(&v);
    cr_assert_eq(ext_state_remove_node(st, "new-node", &err), TPX_OK, "%s", err.msg);
    cr_expect_neq(ext_state_remove_node(st, "new-node", &err), TPX_OK);
    ext_state_free(st);
}

/* A pod without intent is not remembered at filter time, so its bind records it with no
 * accelerators; when the watch then reports it on that node with its GPUs, they must be counted
 * (and freed again when it leaves), or the node looks free while it is full. */
Test(ext_state, a_pod_bound_unseen_counts_its_accelerators_once_the_watch_reports_them)
{
    char names[64][64];
    size_t n;
    struct ext_state *st = state_with("racks=1,nodes-per-rack=1,gpus-per-node=8", names, &n);
    struct pol_workload w = wl_of("g", 8, 1, 1, 0);
    const char *cand[] = {names[0]};
    struct ext_bind_out out;
    struct ext_verdicts v;
    struct tpx_err err = TPX_ERR_INIT;

    cr_assert_eq(ext_state_bind(st, "plain", "plain", names[0], 1000, &out, &err), TPX_OK, "%s",
                 err.msg);
    cr_assert_eq(ext_state_upsert_pod(st, "plain", "plain", names[0], 8, NULL, &err), TPX_OK, "%s",
                 err.msg);
    cr_assert_eq(ext_state_filter(st, &w, cand, 1, 1000, &v, &err), TPX_OK, "%s", err.msg);
    cr_expect_eq(v.nfit, 0, "the node's 8 GPUs are in use by the plain pod");
    ext_verdicts_release(&v);
    cr_expect(ext_state_remove_pod(st, "plain"));
    cr_assert_eq(ext_state_filter(st, &w, cand, 1, 1000, &v, &err), TPX_OK, "%s", err.msg);
    cr_expect_eq(v.nfit, 1, "the GPUs are free again once the pod left");
    ext_verdicts_release(&v);
    ext_state_free(st);
}

Test(ext_state, a_repeated_bind_reports_the_same_placement)
{
    char names[64][64];
    size_t n;
    struct ext_state *st = state_with("racks=2,nodes-per-rack=2,gpus-per-node=8", names, &n);
    struct pol_workload w = wl_of("g", 8, 2, 2, 1);
    struct ext_bind_out first, again;
    struct tpx_err err = TPX_ERR_INIT;

    ext_state_remember_pod(st, "u1", "g-0-1", &w, 1000);
    cr_assert_eq(ext_state_bind(st, "u1", "g-0-1", names[2], 1000, &first, &err), TPX_OK, "%s",
                 err.msg);
    cr_assert_str_not_empty(first.rack);
    /* The scheduler retries a bind whose answer it did not get: the annotations of the second
     * Binding must still say where the pod is. */
    cr_assert_eq(ext_state_bind(st, "u1", "g-0-1", names[2], 1001, &again, &err), TPX_OK, "%s",
                 err.msg);
    cr_expect(again.already);
    cr_expect(again.intent);
    cr_expect_str_eq(again.rack, first.rack);
    cr_expect_str_eq(again.domain, first.domain);
    cr_expect_eq(again.stage, first.stage);
    cr_expect_eq(again.stage, 1, "pod index 1 of TP 8 x PP 2 runs stage 1");
    ext_state_free(st);
}
