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
    struct ext_state_verdicts v;
    struct tpx_err err = TPX_ERR_INIT;

    cr_assert_eq(ext_state_filter(st, &w, cand, 2, 1000, &v, &err), TPX_OK, "%s", err.msg);
    cr_assert_eq(v.n, 2);
    cr_expect_eq(v.verdict[0], POL_FIT, "%s", v.reason[0] ? v.reason[0] : "");
    cr_expect_eq(v.verdict[1], POL_FAIL);
    cr_expect_str_eq(v.reason[1], EXT_UNKNOWN_NODE_REASON);
    cr_expect_eq(v.nunknown, 1);
    ext_state_verdicts_release(&v);
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
    struct ext_state_bind_out out;
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
        ext_state_remember_pod(st, r[i].uid, NULL, r[i].uid, &w, 1000);
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
    struct ext_state_bind_out out;
    struct tpx_err err = TPX_ERR_INIT;

    ext_state_remember_pod(st, "ua", NULL, "a", &a, 1000);
    ext_state_remember_pod(st, "ub", NULL, "b", &b, 1000);
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

/* A node of 8 GPUs in a rack of its own, new to the cluster. */
static struct topo_node_info new_node(void)
{
    struct topo_node_info info;

    memset(&info, 0, sizeof(info));
    info.name = "new-node";
    info.rack = "r9";
    info.resource = "nvidia.com/gpu";
    info.accel_alloc = 8;
    return info;
}

Test(ext_state, node_refresh_rebuilds_only_on_change_and_keeps_groups)
{
    char names[64][64];
    size_t n;
    struct ext_state *st = state_with("racks=2,nodes-per-rack=2,gpus-per-node=8", names, &n);
    struct pol_workload lead = wl_of("g", 8, 2, 2, 0), worker = wl_of("g", 8, 2, 2, 1);
    struct tpx_err err = TPX_ERR_INIT;
    struct ext_state_bind_out out;
    struct ext_state_verdicts v;
    struct topo_node_info info, fresh;
    const char *cand[4];
    bool changed = true;
    size_t same_rack = 0;

    cr_assert_eq(n, 4);
    ext_state_remember_pod(st, "u0", NULL, "g-0", &lead, 1000);
    cr_assert_eq(ext_state_bind(st, "u0", "g-0", names[0], 1000, &out, &err), TPX_OK, "%s",
                 err.msg);
    memset(&info, 0, sizeof(info));
    info.name = names[0];
    info.rack = out.rack;
    /* an identical copy of an existing node changes nothing */
    {
        struct ext_state_verdicts dummy;
        (void)dummy;
    }
    fresh = new_node();
    cr_assert_eq(ext_state_upsert_nodes(st, &fresh, 1, &changed, &err), TPX_OK, "%s", err.msg);
    cr_expect(changed, "a new node rebuilds the snapshot");
    cr_assert_eq(ext_state_upsert_nodes(st, &fresh, 1, &changed, &err), TPX_OK, "%s", err.msg);
    cr_expect(!changed, "the same node again changes nothing");
    /* the group placed before the rebuild still binds its worker to the leader's rack */
    for (size_t i = 0; i < 4; i++)
        cand[i] = names[i];
    ext_state_remember_pod(st, "u1", NULL, "g-1", &worker, 1001);
    cr_assert_eq(ext_state_filter(st, &worker, cand, 4, 1001, &v, &err), TPX_OK, "%s", err.msg);
    for (size_t i = 0; i < 4; i++)
        same_rack += v.verdict[i] == POL_FIT;
    cr_expect_eq(same_rack, 1, "only the other node of the leader's rack fits the worker");
    cr_expect_eq(v.verdict[1], POL_FIT, "%s", v.reason[1] ? v.reason[1] : "");
    ext_state_verdicts_release(&v);
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
    struct ext_state_bind_out out;
    struct ext_state_verdicts v;
    struct tpx_err err = TPX_ERR_INIT;

    cr_assert_eq(ext_state_bind(st, "plain", "plain", names[0], 1000, &out, &err), TPX_OK, "%s",
                 err.msg);
    cr_assert_eq(ext_state_upsert_pod(st, "plain", "plain", names[0], 8, NULL, &err), TPX_OK, "%s",
                 err.msg);
    cr_assert_eq(ext_state_filter(st, &w, cand, 1, 1000, &v, &err), TPX_OK, "%s", err.msg);
    cr_expect_eq(v.nfit, 0, "the node's 8 GPUs are in use by the plain pod");
    ext_state_verdicts_release(&v);
    cr_expect(ext_state_remove_pod(st, "plain"));
    cr_assert_eq(ext_state_filter(st, &w, cand, 1, 1000, &v, &err), TPX_OK, "%s", err.msg);
    cr_expect_eq(v.nfit, 1, "the GPUs are free again once the pod left");
    ext_state_verdicts_release(&v);
    ext_state_free(st);
}

Test(ext_state, a_repeated_bind_reports_the_same_placement)
{
    char names[64][64];
    size_t n;
    struct ext_state *st = state_with("racks=2,nodes-per-rack=2,gpus-per-node=8", names, &n);
    struct pol_workload w = wl_of("g", 8, 2, 2, 1);
    struct ext_state_bind_out first, again;
    struct tpx_err err = TPX_ERR_INIT;

    ext_state_remember_pod(st, "u1", NULL, "g-0-1", &w, 1000);
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

/* ---- restart: bound pods rebuild their groups whatever order the watch delivers them in ---- */

/* One bound pod as the watch reports it: group "" is a plain pod of `accel` GPUs. */
struct bound {
    const char *uid;
    const char *group;
    int index;
    size_t node;
    unsigned accel;
};

/* A full 3 x 4 cluster of 8-GPU nodes. Rack 1: groups a and b interleaved (a-0 n0, b-0 n1, a-1
 * n2, b-1 n3). Rack 2: group e, a plain pod, and the worker of f (its leader is being recreated).
 * Rack 3: the worker of d and a 4-GPU plain pod; two nodes free. */
static const struct bound restart_pods[] = {
    {"a0", "a", 0, 0, 8}, {"b0", "b", 0, 1, 8}, {"a1", "a", 1, 2, 8}, {"b1", "b", 1, 3, 8},
    {"p5", "", -1, 5, 8}, {"e0", "e", 0, 4, 8}, {"f1", "f", 1, 6, 8}, {"e1", "e", 1, 7, 8},
    {"d1", "d", 1, 8, 8}, {"p9", "", -1, 9, 4},
};
#define NRESTART (sizeof(restart_pods) / sizeof(restart_pods[0]))

struct seen_groups {
    char key[8][16];
    size_t rack[8];
    unsigned placed[8];
    size_t n;
    unsigned long used[3], reserved[3];
};

static void collect(void *ctx, const struct pol_ledger *l, size_t pods_seen)
{
    struct seen_groups *s = ctx;
    struct pol_group_summary g[8];
    struct pol_rack_summary r[3];

    (void)pods_seen;
    s->n = pol_ledger_group_count(l);
    cr_assert_leq(s->n, 8);
    pol_ledger_groups(l, g);
    for (size_t i = 0; i < s->n; i++) {
        snprintf(s->key[i], sizeof(s->key[i]), "%s", g[i].group);
        s->rack[i] = g[i].rack;
        s->placed[i] = g[i].members_placed;
    }
    cr_assert_eq(topo_cluster_rack_count(pol_ledger_cluster(l)), 3);
    pol_ledger_racks(l, r);
    for (size_t i = 0; i < 3; i++) {
        s->reserved[i] = r[i].accel_reserved;
        s->used[i] = r[i].accel_total - r[i].accel_free - r[i].accel_reserved;
    }
}

static void feed_in_order(struct ext_state *st, char names[][64], const size_t *order)
{
    for (size_t k = 0; k < NRESTART; k++) {
        const struct bound *b = &restart_pods[order[k]];
        struct pol_workload w = wl_of(b->group, 8, 2, 2, b->index);
        struct tpx_err err = TPX_ERR_INIT;

        cr_assert_eq(ext_state_upsert_pod(st, b->uid, b->uid, names[b->node], b->accel,
                                          b->group[0] ? &w : NULL, &err),
                     TPX_OK, "pod %s on %s (order step %zu): %s", b->uid, names[b->node], k,
                     err.msg);
    }
}

static void check_restart_order(const size_t *order, const char *what)
{
    char names[64][64];
    size_t n;
    struct ext_state *st = state_with("racks=3,nodes-per-rack=4,gpus-per-node=8", names, &n);
    struct seen_groups s;
    static const struct {
        const char *key;
        size_t rack;
        unsigned placed;
    } want[] = {{"a", 0, 2}, {"b", 0, 2}, {"e", 1, 2}, {"f", 1, 1}, {"d", 2, 1}};
    const char *cand[12];
    struct pol_workload d0 = wl_of("d", 8, 2, 2, 0), f0 = wl_of("f", 8, 2, 2, 0);
    struct ext_state_verdicts v;
    struct ext_state_bind_out out;
    struct tpx_err err = TPX_ERR_INIT;

    cr_assert_eq(n, 12);
    feed_in_order(st, names, order);
    /* the watch delivers the list again after a reconnect: nothing is booked twice */
    feed_in_order(st, names, order);
    memset(&s, 0, sizeof(s));
    cr_assert(ext_state_read(st, collect, &s));
    cr_expect_eq(s.n, 5, "%s: every group with a bound member is recorded (%zu)", what, s.n);
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        bool found = false;
        for (size_t j = 0; j < s.n; j++) {
            if (strcmp(s.key[j], want[i].key) != 0)
                continue;
            found = true;
            cr_expect_eq(s.placed[j], want[i].placed, "%s: group %s has %u members, want %u", what,
                         want[i].key, s.placed[j], want[i].placed);
            cr_expect_eq(s.rack[j], want[i].rack, "%s: group %s in rack %zu, want %zu", what,
                         want[i].key, s.rack[j], want[i].rack);
        }
        cr_expect(found, "%s: group %s is not recorded", what, want[i].key);
    }
    /* usage is the sum of the pods: racks 1 and 2 full, rack 3 holds 8 + 4 */
    cr_expect_eq(s.used[0], 32, "%s: rack 1 uses %lu", what, s.used[0]);
    cr_expect_eq(s.used[1], 32, "%s: rack 2 uses %lu", what, s.used[1]);
    cr_expect_eq(s.used[2], 12, "%s: rack 3 uses %lu", what, s.used[2]);
    cr_expect_eq(s.reserved[1], 0, "%s: nothing is held on a full rack", what);
    cr_expect_leq(s.reserved[2], 8, "%s: at most d's missing leader is held", what);

    /* the missing leader of d may only go to rack 3, onto a node with room */
    for (size_t i = 0; i < 12; i++)
        cand[i] = names[i];
    cr_assert_eq(ext_state_filter(st, &d0, cand, 12, 1000, &v, &err), TPX_OK, "%s", err.msg);
    for (size_t i = 0; i < 8; i++)
        cr_expect_eq(v.verdict[i], POL_UNRESOLVABLE, "%s: d-0 on %s: %s", what, names[i],
                     v.reason[i] ? v.reason[i] : "fits");
    cr_expect_neq(v.verdict[8], POL_FIT, "%s: %s holds d-1", what, names[8]);
    cr_expect_neq(v.verdict[9], POL_FIT, "%s: %s has 4 free GPUs", what, names[9]);
    cr_expect_eq(v.verdict[10], POL_FIT, "%s: %s", what, v.reason[10] ? v.reason[10] : "");
    cr_expect_eq(v.verdict[11], POL_FIT, "%s: %s", what, v.reason[11] ? v.reason[11] : "");
    ext_state_verdicts_release(&v);
    /* the missing leader of f: its rack is full, and no other rack is allowed */
    cr_assert_eq(ext_state_filter(st, &f0, cand, 12, 1000, &v, &err), TPX_OK, "%s", err.msg);
    cr_expect_eq(v.nfit, 0, "%s: f-0 fits nowhere", what);
    for (size_t i = 0; i < 12; i++) {
        if (i >= 4 && i < 8)
            cr_expect_eq(v.verdict[i], POL_FAIL, "%s: f-0 on %s", what, names[i]);
        else
            cr_expect_eq(v.verdict[i], POL_UNRESOLVABLE, "%s: f-0 on %s: %s", what, names[i],
                         v.reason[i] ? v.reason[i] : "fits");
    }
    ext_state_verdicts_release(&v);
    /* a new placement still goes through every check: d-0 binds in rack 3, not elsewhere */
    ext_state_remember_pod(st, "d0", NULL, "d0", &d0, 1000);
    cr_expect_eq(ext_state_bind(st, "d0", "d0", names[11], 1000, &out, &err), TPX_OK, "%s",
                 err.msg);
    memset(&s, 0, sizeof(s));
    cr_assert(ext_state_read(st, collect, &s));
    for (size_t j = 0; j < s.n; j++) {
        if (strcmp(s.key[j], "d") == 0)
            cr_expect_eq(s.placed[j], 2, "%s: d is whole after the bind", what);
    }
    cr_expect_eq(s.used[2], 20, "%s: rack 3 uses %lu after the bind", what, s.used[2]);
    ext_state_free(st);
}

Test(ext_state, bound_pods_rebuild_their_groups_in_list_order)
{
    size_t order[NRESTART];

    for (size_t i = 0; i < NRESTART; i++)
        order[i] = i;
    check_restart_order(order, "list order");
}

Test(ext_state, bound_pods_rebuild_their_groups_workers_first)
{
    size_t order[NRESTART];

    for (size_t i = 0; i < NRESTART; i++)
        order[i] = NRESTART - 1 - i;
    check_restart_order(order, "reverse order");
}

Test(ext_state, bound_pods_rebuild_their_groups_in_every_shuffled_order)
{
    size_t order[NRESTART];
    unsigned long seed = 12345;
    char what[64];

    for (int round = 0; round < 40; round++) {
        for (size_t i = 0; i < NRESTART; i++)
            order[i] = i;
        for (size_t i = NRESTART; i > 1; i--) {
            size_t j;
            seed = seed * 6364136223846793005UL + 1442695040888963407UL;
            j = (size_t)(seed >> 33) % i;
            size_t t = order[i - 1];
            order[i - 1] = order[j];
            order[j] = t;
        }
        snprintf(what, sizeof(what), "shuffle %d", round);
        check_restart_order(order, what);
    }
}

/* Whether a fresh single-pod TP 8 job would fit on node name now. */
static bool tp8_fits(struct ext_state *st, const char *name)
{
    struct pol_workload w = wl_of("probe", 8, 1, 1, 0);
    const char *cand[] = {name};
    struct ext_state_verdicts v;
    struct tpx_err err = TPX_ERR_INIT;
    bool fit;

    cr_assert_eq(ext_state_filter(st, &w, cand, 1, 1000, &v, &err), TPX_OK, "%s", err.msg);
    fit = v.nfit == 1;
    ext_state_verdicts_release(&v);
    return fit;
}

Test(ext_state, a_refused_bind_is_taken_back_unless_the_watch_confirmed_it)
{
    char names[64][64];
    size_t n;
    struct ext_state *st = state_with("racks=1,nodes-per-rack=2,gpus-per-node=8", names, &n);
    struct pol_workload a = wl_of("a", 8, 1, 1, 0), b = wl_of("b", 8, 1, 1, 0);
    struct ext_state_bind_out out;
    struct tpx_err err = TPX_ERR_INIT;

    /* a: booked by our bind, refused by the API server: taken back */
    ext_state_remember_pod(st, "ua", NULL, "a", &a, 1000);
    cr_assert_eq(ext_state_bind(st, "ua", "a", names[0], 1000, &out, &err), TPX_OK, "%s", err.msg);
    cr_expect(!tp8_fits(st, names[0]));
    cr_expect(ext_state_unbind(st, "ua"));
    cr_expect(tp8_fits(st, names[0]), "the refused bind gave its GPUs back");

    /* b: booked, then the watch reports it bound there before the 409 comes back: it stays */
    ext_state_remember_pod(st, "ub", NULL, "b", &b, 1000);
    cr_assert_eq(ext_state_bind(st, "ub", "b", names[0], 1000, &out, &err), TPX_OK, "%s", err.msg);
    cr_assert_eq(ext_state_record_pod(st, "ub", "b", names[0], 8, &b, NULL, 0, &err), TPX_OK, "%s",
                 err.msg);
    cr_expect(!ext_state_unbind(st, "ub"), "the API server said it is bound: keep it");
    cr_expect(!tp8_fits(st, names[0]));
    cr_expect(!ext_state_unbind(st, "nobody"));
    ext_state_free(st);
}

Test(ext_state, the_api_servers_node_wins_over_an_unconfirmed_booking)
{
    char names[64][64];
    size_t n;
    struct ext_state *st = state_with("racks=1,nodes-per-rack=2,gpus-per-node=8", names, &n);
    struct pol_workload a = wl_of("a", 8, 1, 1, 0);
    struct ext_state_bind_out out;
    struct tpx_err err = TPX_ERR_INIT;

    /* we booked node 0; another binder won and the watch says node 1 */
    ext_state_remember_pod(st, "ua", NULL, "a", &a, 1000);
    cr_assert_eq(ext_state_bind(st, "ua", "a", names[0], 1000, &out, &err), TPX_OK, "%s", err.msg);
    cr_assert_eq(ext_state_record_pod(st, "ua", "a", names[1], 8, &a, NULL, 0, &err), TPX_OK, "%s",
                 err.msg);
    cr_expect(tp8_fits(st, names[0]), "node 0 is free again");
    cr_expect(!tp8_fits(st, names[1]), "node 1 holds the pod");
    /* our Binding's 409 then changes nothing */
    cr_expect(!ext_state_unbind(st, "ua"));
    cr_expect(!tp8_fits(st, names[1]));
    /* a confirmed pod does not move: a second report elsewhere is refused */
    cr_expect_eq(ext_state_record_pod(st, "ua", "a", names[0], 8, &a, NULL, 0, &err), TPX_EEXIST);
    ext_state_free(st);
}

/* Entries bound to one node share one copy of its name, owned by the state: it outlives the
 * cluster snapshots that rebuilds replace and every entry but the last that uses it, and a pod's
 * name (kept with its uid) still names it. */
Test(ext_state, pods_on_one_node_keep_its_name_through_rebuilds_and_removals)
{
    char names[64][64];
    size_t n;
    struct ext_state *st = state_with("racks=1,nodes-per-rack=2,gpus-per-node=8", names, &n);
    struct topo_node_info fresh;
    struct tpx_err err = TPX_ERR_INIT;
    bool changed = false;

    cr_assert_eq(ext_state_upsert_pod(st, "u1", "pod-one", names[0], 4, NULL, &err), TPX_OK, "%s",
                 err.msg);
    cr_assert_eq(ext_state_upsert_pod(st, "u2", "pod-two", names[0], 4, NULL, &err), TPX_OK, "%s",
                 err.msg);
    cr_expect(!tp8_fits(st, names[0]), "two pods of 4 GPUs fill node 0");
    cr_expect(ext_state_remove_pod(st, "u1"));
    /* a rebuild carries u2's GPUs over by its node's name */
    fresh = new_node();
    cr_assert_eq(ext_state_upsert_nodes(st, &fresh, 1, &changed, &err), TPX_OK, "%s", err.msg);
    cr_expect(changed);
    cr_expect(!tp8_fits(st, names[0]), "u2's 4 GPUs are still counted on node 0");
    cr_expect_eq(ext_state_record_pod(st, "u2", "pod-two", names[1], 4, NULL, NULL, 0, &err),
                 TPX_EEXIST);
    cr_expect(strstr(err.msg, "'pod-two'") && strstr(err.msg, names[0]), "%s", err.msg);
    cr_expect(ext_state_remove_pod(st, "u2"));
    cr_expect(tp8_fits(st, names[0]), "node 0 is free once its last pod left");
    /* the name's copy went with its last pod; a new pod there makes it again */
    tpx_err_clear(&err);
    cr_assert_eq(ext_state_upsert_pod(st, "u3", NULL, names[0], 8, NULL, &err), TPX_OK, "%s",
                 err.msg);
    cr_expect(!tp8_fits(st, names[0]));
    cr_expect_eq(ext_state_record_pod(st, "u3", NULL, names[1], 8, NULL, NULL, 0, &err),
                 TPX_EEXIST);
    cr_expect(strstr(err.msg, "'u3'") && strstr(err.msg, names[0]),
              "a pod without a name goes by its uid: %s", err.msg);
    ext_state_free(st);
}

static bool listed_only_kept(void *ctx, const char *uid)
{
    (void)ctx;
    return strcmp(uid, "kept") == 0;
}

Test(ext_state, a_relist_prunes_bound_pods_it_lacks_but_not_binds_made_during_it)
{
    char names[64][64];
    size_t n;
    struct ext_state *st = state_with("racks=1,nodes-per-rack=4,gpus-per-node=8", names, &n);
    struct pol_workload w[4];
    const char *uid[] = {"kept", "gone-booked", "gone-watched", "fresh"};
    struct ext_state_bind_out out;
    struct tpx_err err = TPX_ERR_INIT;

    for (int i = 0; i < 4; i++) {
        char g[8];

        snprintf(g, sizeof(g), "g%d", i);
        w[i] = wl_of(g, 8, 1, 1, 0);
        ext_state_remember_pod(st, uid[i], NULL, uid[i], &w[i], 1000);
    }
    /* booked by binds at t=1000 (the list starts at 2000), one of them confirmed by the watch */
    cr_assert_eq(ext_state_bind(st, "kept", "kept", names[0], 1000, &out, &err), TPX_OK);
    cr_assert_eq(ext_state_bind(st, "gone-booked", "gone-booked", names[1], 1000, &out, &err),
                 TPX_OK);
    cr_assert_eq(ext_state_bind(st, "gone-watched", "gone-watched", names[2], 1000, &out, &err),
                 TPX_OK);
    cr_assert_eq(
        ext_state_record_pod(st, "gone-watched", "gone-watched", names[2], 8, &w[2], NULL, 0, &err),
        TPX_OK);
    /* booked while the list ran: the list may predate it */
    cr_assert_eq(ext_state_bind(st, "fresh", "fresh", names[3], 2001, &out, &err), TPX_OK);

    cr_expect_eq(ext_state_prune_pods(st, listed_only_kept, NULL, 2000), 2);
    cr_expect(!tp8_fits(st, names[0]), "listed: kept");
    cr_expect(tp8_fits(st, names[1]), "booked before the list, not listed: released");
    cr_expect(tp8_fits(st, names[2]), "confirmed, then not listed: released");
    cr_expect(!tp8_fits(st, names[3]), "booked during the list: kept until its event");
    cr_expect(!ext_state_remove_pod(st, "gone-booked"), "its entry is gone too");
    ext_state_free(st);
}

/* issue 12, item 4: what /bind checks before it books anything. */
Test(ext_state, bind_checks_filtered_within_the_ttl_and_foreign_pods)
{
    char names[64][64];
    size_t n;
    struct ext_state *st = state_with("racks=1,nodes-per-rack=2", names, &n);
    struct pol_workload wl = wl_of("solo", 8, 1, 1, 0);

    cr_expect_not(ext_state_was_filtered(st, "u-1", 1000));
    ext_state_remember_pod(st, "u-1", NULL, "p1", &wl, 1000);
    cr_expect(ext_state_was_filtered(st, "u-1", 1000));
    cr_expect(ext_state_was_filtered(st, "u-1", 1600), "the TTL (600 s) is inclusive");
    cr_expect_not(ext_state_was_filtered(st, "u-1", 1601), "past the TTL");
    ext_state_note_filtered(st, "u-2", NULL, "p2", 1000);
    cr_expect(ext_state_was_filtered(st, "u-2", 1000));
    cr_expect_not(ext_state_was_filtered(st, NULL, 1000));

    ext_state_set_scheduler(st, "topox-scheduler");
    ext_state_note_scheduler(st, "u-3", NULL, "p3", "default-scheduler", 1000);
    ext_state_note_scheduler(st, "u-2", NULL, "p2", "topox-scheduler", 1000);
    ext_state_note_scheduler(st, "u-4", NULL, "p4", NULL, 1000);
    cr_expect(ext_state_is_foreign(st, "u-3"));
    cr_expect_not(ext_state_is_foreign(st, "u-2"));
    cr_expect_not(ext_state_is_foreign(st, "u-4"));
    cr_expect_not(ext_state_is_foreign(st, "never-seen"));
    ext_state_free(st);
}

/* issue 12, item 8: a flood of made-up UIDs evicts only other filtered-not-bound entries, least
 * recently used first, and never a bound pod's facts. */
Test(ext_state, pod_table_flood_evicts_lru_never_bound_pods)
{
    char names[64][64];
    size_t n;
    struct ext_state *st = state_with("racks=1,nodes-per-rack=2,gpus-per-node=8", names, &n);
    struct pol_workload wl = wl_of("solo", 1, 1, 1, 0);
    struct tpx_err err = TPX_ERR_INIT;
    char uid[32];

    ext_state_set_pod_max(st, 64);
    for (int i = 0; i < 8; i++) {
        snprintf(uid, sizeof(uid), "real-%d", i);
        cr_assert_eq(ext_state_upsert_pod(st, uid, uid, names[i % 2], 1, NULL, &err), TPX_OK, "%s",
                     err.msg);
    }
    ext_state_remember_pod(st, "kept", NULL, "kept", &wl, 1000);
    for (int i = 0; i < 10000; i++) {
        snprintf(uid, sizeof(uid), "fake-%d", i);
        ext_state_remember_pod(st, uid, NULL, uid, &wl, 1000);
        if (i % 16 == 0)
            ext_state_note_filtered(st, "kept", NULL, "kept", 1000); /* used again: stays */
    }
    cr_expect(ext_state_was_filtered(st, "fake-9999", 1000), "the newest is remembered");
    cr_expect_not(ext_state_was_filtered(st, "fake-0", 1000), "the oldest went first");
    cr_expect(ext_state_was_filtered(st, "kept", 1000), "a recently used entry stays");
    for (int i = 0; i < 8; i++) {
        snprintf(uid, sizeof(uid), "real-%d", i);
        cr_expect(ext_state_remove_pod(st, uid), "bound pod %s was evicted", uid);
    }
    ext_state_free(st);
}

Test(ext_state, pod_table_full_of_bound_pods_remembers_no_new_filter)
{
    char names[64][64];
    size_t n;
    struct ext_state *st = state_with("racks=1,nodes-per-rack=2,gpus-per-node=8", names, &n);
    struct tpx_err err = TPX_ERR_INIT;
    char uid[32];

    ext_state_set_pod_max(st, 4);
    for (int i = 0; i < 6; i++) { /* facts are taken even past the limit */
        snprintf(uid, sizeof(uid), "real-%d", i);
        cr_assert_eq(ext_state_upsert_pod(st, uid, uid, names[i % 2], 1, NULL, &err), TPX_OK, "%s",
                     err.msg);
    }
    ext_state_note_filtered(st, "fake", NULL, "fake", 1000);
    cr_expect_not(ext_state_was_filtered(st, "fake", 1000));
    for (int i = 0; i < 6; i++) {
        snprintf(uid, sizeof(uid), "real-%d", i);
        cr_expect(ext_state_remove_pod(st, uid), "%s", uid);
    }
    ext_state_free(st);
}

/* One tenant filtering made-up UIDs in its own namespace pushes out only its own entries: the
 * other namespaces' filter-time facts stay, however long the flood (issue 12, item 8). */
Test(ext_state, one_namespace_flooding_evicts_only_its_own_entries)
{
    char names[64][64];
    size_t n;
    struct ext_state *st = state_with("racks=1,nodes-per-rack=2,gpus-per-node=8", names, &n);
    struct pol_workload wl = wl_of("solo", 1, 1, 1, 0);
    struct ext_state_pod_stats ps;
    char uid[32];

    ext_state_set_pod_max(st, 1000);
    ext_state_set_pod_ns_max(st, 100);
    for (int i = 0; i < 50; i++) {
        snprintf(uid, sizeof(uid), "team-%d", i);
        ext_state_remember_pod(st, uid, "team", uid, &wl, 1000);
    }
    for (int i = 0; i < 100000; i++) {
        snprintf(uid, sizeof(uid), "fake-%d", i);
        ext_state_remember_pod(st, uid, "flood", uid, &wl, 1000);
    }
    for (int i = 0; i < 50; i++) {
        snprintf(uid, sizeof(uid), "team-%d", i);
        cr_expect(ext_state_was_filtered(st, uid, 1000), "%s was evicted by another namespace",
                  uid);
    }
    cr_expect(ext_state_was_filtered(st, "fake-99999", 1000), "the newest of the flood stays");
    cr_expect_not(ext_state_was_filtered(st, "fake-99899", 1000), "past its bound it lost it");
    ext_state_pod_stats(st, &ps);
    cr_expect_eq(ps.entries, 150, "50 + the flood's 100, not %zu", ps.entries);
    cr_expect_eq(ps.evicted_namespace, 100000 - 100);
    cr_expect_eq(ps.evicted_full, 0);
    cr_expect_eq(ps.namespaces, 2);
    cr_expect_eq(ps.ns_max, 100);
    cr_expect_eq(ps.max, 1000);

    /* without the bound the flood fills the table and the LRU takes the other tenant's too */
    ext_state_set_pod_ns_max(st, 0);
    for (int i = 0; i < 2000; i++) {
        snprintf(uid, sizeof(uid), "fake2-%d", i);
        ext_state_remember_pod(st, uid, "flood", uid, &wl, 1000);
    }
    cr_expect_not(ext_state_was_filtered(st, "team-0", 1000));
    ext_state_pod_stats(st, &ps);
    cr_expect_gt(ps.evicted_full, 0);
    cr_expect_leq(ps.entries, 1000);
    ext_state_free(st);
}

/* The namespace's bound counts entries of pods not bound: a namespace's bound pods are facts,
 * neither counted nor evicted, and a pod that leaves gives its namespace's record back. */
Test(ext_state, a_namespace_bound_never_touches_bound_pods)
{
    char names[64][64];
    size_t n;
    struct ext_state *st = state_with("racks=1,nodes-per-rack=2,gpus-per-node=8", names, &n);
    struct pol_workload wl = wl_of("solo", 1, 1, 1, 0);
    struct ext_state_pod_stats ps;
    struct tpx_err err = TPX_ERR_INIT;
    char uid[32];

    ext_state_set_pod_ns_max(st, 4);
    for (int i = 0; i < 4; i++) {
        snprintf(uid, sizeof(uid), "real-%d", i);
        ext_state_remember_pod(st, uid, "team", uid, &wl, 1000);
        cr_assert_eq(ext_state_upsert_pod(st, uid, uid, names[i % 2], 1, NULL, &err), TPX_OK, "%s",
                     err.msg);
    }
    for (int i = 0; i < 40; i++) {
        snprintf(uid, sizeof(uid), "new-%d", i);
        ext_state_note_filtered(st, uid, "team", uid, 1000);
    }
    cr_expect(ext_state_was_filtered(st, "new-39", 1000));
    cr_expect_not(ext_state_was_filtered(st, "new-35", 1000));
    for (int i = 0; i < 4; i++) {
        snprintf(uid, sizeof(uid), "real-%d", i);
        cr_expect(ext_state_remove_pod(st, uid), "bound pod %s was evicted", uid);
    }
    for (int i = 36; i < 40; i++) {
        snprintf(uid, sizeof(uid), "new-%d", i);
        cr_expect(ext_state_remove_pod(st, uid), "%s", uid);
    }
    ext_state_pod_stats(st, &ps);
    cr_expect_eq(ps.entries, 0);
    cr_expect_eq(ps.namespaces, 0, "a namespace without entries keeps no record");
    ext_state_free(st);
}

/* A kept resolution (issue 14) gives the same verdicts as a fresh one, and is made again once the
 * cluster changes: a node that appears is found, one that goes is unknown. */
Test(ext_state, a_kept_resolution_follows_the_cluster)
{
    char names[64][64];
    size_t n;
    struct ext_state *st = state_with("racks=1,nodes-per-rack=2", names, &n);
    struct pol_workload w = wl_of("g", 8, 1, 1, 0);
    const char *cand[] = {names[0], "late", names[1]};
    struct ext_state_resolution res;
    struct ext_state_verdicts v;
    struct tpx_err err = TPX_ERR_INIT;
    struct topo_node_info late;
    int scores[3];

    ext_state_resolution_init(&res);
    for (int round = 0; round < 2; round++) {
        cr_assert_eq(ext_state_filter_res(st, &w, cand, 3, &res, 1000, &v, &err), TPX_OK);
        cr_expect_eq(v.verdict[0], POL_FIT);
        cr_expect_eq(v.verdict[1], POL_FAIL);
        cr_expect_str_eq(v.reason[1], EXT_UNKNOWN_NODE_REASON);
        cr_expect_eq(v.nunknown, 1);
        ext_state_verdicts_release(&v);
    }
    {
        struct topo_cluster *one = cluster("racks=1,nodes-per-rack=1");

        late = *topo_cluster_node(one, 0);
        late.name = "late";
        cr_assert_eq(ext_state_upsert_node(st, &late, &err), TPX_OK, "%s", err.msg);
        topo_cluster_free(one);
    }
    cr_assert_eq(ext_state_filter_res(st, &w, cand, 3, &res, 1000, &v, &err), TPX_OK);
    cr_expect_eq(v.nunknown, 0, "the node that arrived is known now");
    cr_expect_eq(v.verdict[1], POL_FIT, "%s", v.reason[1] ? v.reason[1] : "");
    ext_state_verdicts_release(&v);
    cr_assert_eq(ext_state_remove_node(st, names[1], &err), TPX_OK, "%s", err.msg);
    cr_assert_eq(ext_state_score_res(st, &w, cand, 3, &res, 1000, scores, &err), TPX_OK);
    cr_expect_eq(scores[2], 0, "a node that left scores 0");
    cr_assert_eq(ext_state_filter_res(st, &w, cand, 3, &res, 1000, &v, &err), TPX_OK);
    cr_expect_eq(v.verdict[2], POL_FAIL);
    cr_expect_str_eq(v.reason[2], EXT_UNKNOWN_NODE_REASON);
    ext_state_verdicts_release(&v);
    ext_state_resolution_release(&res);
    ext_state_free(st);
}

/* Pods keep their workload packed (issue 14, memory): what a bind reports and what a repeated
 * bind gives back are the workload as it was remembered, long strings and all. */
Test(ext_state, a_remembered_workload_comes_back_whole)
{
    char names[64][64];
    size_t n;
    struct ext_state *st = state_with("racks=1,nodes-per-rack=2", names, &n);
    struct pol_workload w = wl_of("ns/grp", 8, 1, 1, 0);
    struct ext_state_bind_out out, again;
    struct tpx_err err = TPX_ERR_INIT;

    memset(w.display, 'd', sizeof(w.display) - 1);
    w.display[sizeof(w.display) - 1] = '\0';
    snprintf(w.resource, sizeof(w.resource), "nvidia.com/gpu");
    ext_state_remember_pod(st, "u1", "ns", "p1", &w, 1000);
    cr_assert_eq(ext_state_bind(st, "u1", "p1", names[0], 1000, &out, &err), TPX_OK, "%s", err.msg);
    cr_expect(out.known && out.intent);
    cr_expect_str_eq(out.group, "ns/grp");
    cr_expect_eq(strlen(out.display), sizeof(w.display) - 1);
    cr_assert_eq(ext_state_bind(st, "u1", "p1", names[0], 1000, &again, &err), TPX_OK, "%s",
                 err.msg);
    cr_expect(again.already);
    cr_expect_str_eq(again.rack, out.rack);
    cr_expect_str_eq(again.display, out.display);
    ext_state_free(st);
}

/* issue 21, item 6: a pod without a topology intent still needs free accelerators to bind. */
Test(ext_state, a_bind_without_intent_checks_capacity)
{
    char names[64][64];
    size_t n;
    struct ext_state *st = state_with("racks=1,nodes-per-rack=1,gpus-per-node=8", names, &n);
    struct pol_workload plain;
    struct ext_state_bind_out out;
    struct tpx_err err = TPX_ERR_INIT;
    const char *uids[] = {"p0", "p1", "p2"};

    memset(&plain, 0, sizeof(plain));
    plain.accel_per_pod = 8;
    for (size_t i = 0; i < 3; i++)
        ext_state_remember_pod(st, uids[i], "ns", uids[i], &plain, 1000);
    cr_assert_eq(ext_state_bind(st, "p0", "p0", names[0], 1000, &out, &err), TPX_OK, "%s", err.msg);
    for (size_t i = 1; i < 3; i++) {
        tpx_err_clear(&err);
        cr_expect_neq(ext_state_bind(st, uids[i], uids[i], names[0], 1000, &out, &err), TPX_OK,
                      "pod %zu of 8 GPUs on a full 8-GPU node", i);
        cr_expect(strstr(err.msg, "has 0 free accelerators") != NULL, "%s", err.msg);
    }
    tpx_err_clear(&err);
    cr_expect_eq(ext_state_bind(st, "p0", "p0", names[0], 1000, &out, &err), TPX_OK,
                 "a repeated bind of the bound pod is idempotent: %s", err.msg);
    ext_state_free(st);
}

/* Bind `count` pods of `accel` GPUs each (no intent), each filtered first; returns the binds
 * refused because the filter was not remembered. */
static size_t bind_many(struct ext_state *st, char names[][64], size_t nnodes, size_t count,
                        unsigned accel)
{
    struct pol_workload plain;
    size_t refused = 0;

    memset(&plain, 0, sizeof(plain));
    plain.accel_per_pod = accel;
    for (size_t i = 0; i < count; i++) {
        char uid[32];
        struct ext_state_bind_out out;
        struct tpx_err err = TPX_ERR_INIT;

        snprintf(uid, sizeof(uid), "u%zu", i);
        ext_state_remember_pod(st, uid, "ns", uid, &plain, 1000 + (time_t)i);
        if (!ext_state_was_filtered(st, uid, 1000 + (time_t)i)) {
            refused++;
            continue;
        }
        cr_expect_eq(ext_state_bind(st, uid, uid, names[i % nnodes], 1000 + (time_t)i, &out, &err),
                     TPX_OK, "%s: %s", uid, err.msg);
    }
    return refused;
}

/* issue 21, item 3: without a watch, a bind keeps no entry for a pod without intent, so the
 * table never fills with them for good; their accelerators stay counted. */
Test(ext_state, record_mode_keeps_no_entry_for_pods_without_intent)
{
    char names[64][64];
    size_t n;
    struct ext_state *st = state_with("racks=4,nodes-per-rack=16,gpus-per-node=8", names, &n);
    struct ext_state_pod_stats ps;
    struct pol_workload w = wl_of("g", 8, 1, 1, 0);
    const char *cand[64];
    struct ext_state_verdicts v;
    struct tpx_err err = TPX_ERR_INIT;

    ext_state_set_pod_max(st, 80);
    ext_state_set_bound_ageing(st, true);
    cr_expect_eq(bind_many(st, names, 64, 300, 0), 0, "pods of no GPUs");
    cr_expect_eq(bind_many(st, names, 64, 300, 1), 0, "no bind refused");
    ext_state_pod_stats(st, &ps);
    cr_expect_eq(ps.entries, 0, "%zu entries", ps.entries);
    for (size_t i = 0; i < 64; i++)
        cand[i] = names[i];
    cr_assert_eq(ext_state_filter(st, &w, cand, 64, 2000, &v, &err), TPX_OK, "%s", err.msg);
    cr_expect_eq(v.nfit, 0, "every node holds 4 or 5 of the 300 GPUs still");
    ext_state_verdicts_release(&v);
    ext_state_free(st);
}

Test(ext_state, without_ageing_bound_pods_fill_the_table)
{
    char names[64][64];
    size_t n;
    struct ext_state *st = state_with("racks=4,nodes-per-rack=16,gpus-per-node=8", names, &n);
    struct ext_state_pod_stats ps;

    ext_state_set_pod_max(st, 80);
    cr_expect_eq(bind_many(st, names, 64, 100, 1), 20);
    ext_state_pod_stats(st, &ps);
    cr_expect_eq(ps.entries, 80);
    ext_state_free(st);
}

struct holds_read {
    const char *group;
    struct pol_hold h[8];
    size_t n;
    size_t rack[8];
    size_t full_rack; /* node 0's, which the test fills */
};

static void read_group_holds(void *ctx, const struct pol_ledger *l, size_t pods_seen)
{
    struct holds_read *r = ctx;

    (void)pods_seen;
    r->n = pol_group_holds(l, r->group, r->h, 8);
    for (size_t i = 0; i < r->n && i < 8; i++)
        r->rack[i] = topo_cluster_node_rack(pol_ledger_cluster(l), r->h[i].node);
    r->full_rack = topo_cluster_node_rack(pol_ledger_cluster(l), 0);
}

/* A PodGroup gang seen waiting (extender/nominate.c): ext_state_gang_hold holds its whole room
 * with every node a candidate, as its first member's filter would: one slot per member, all in
 * one rack with room (rack 0 is full). A second call keeps the hold; a gang no rack can take is
 * not held. */
Test(ext_state, a_waiting_gang_is_held_whole_in_one_rack_with_room)
{
    char names[64][64];
    size_t n;
    struct ext_state *st = state_with("racks=3,nodes-per-rack=2,gpus-per-node=8", names, &n);
    struct pol_workload g = wl_of("llm/podgroup:gang-0", 8, 2, 2, -1);
    struct pol_workload big = wl_of("llm/podgroup:gang-1", 8, 3, 3, -1);
    struct holds_read r = {.group = g.group};
    struct ext_state_bind_out out;
    struct tpx_err err = TPX_ERR_INIT;
    bool held = true;

    g.gang = big.gang = true;
    g.gang_level = big.gang_level = -1;
    /* node 0's rack taken by two plain 8-GPU pods */
    for (int i = 0; i < 2; i++) {
        char uid[16];
        struct pol_workload w = wl_of(uid, 8, 1, 1, 0);

        snprintf(uid, sizeof(uid), "fill-%d", i);
        snprintf(w.group, sizeof(w.group), "%s", uid);
        ext_state_remember_pod(st, uid, NULL, uid, &w, 1000);
        cr_assert_eq(ext_state_bind(st, uid, uid, names[i], 1000, &out, &err), TPX_OK, "%s",
                     err.msg);
    }
    cr_assert_eq(ext_state_gang_hold(st, &g, 1000, &held, &err), TPX_OK, "%s", err.msg);
    cr_expect(held);
    cr_assert(ext_state_read(st, read_group_holds, &r));
    cr_assert_eq(r.n, 2, "one held slot per member, not %zu", r.n);
    cr_expect_neq(r.h[0].node, r.h[1].node);
    cr_expect_eq(r.rack[0], r.rack[1], "held across racks %zu and %zu", r.rack[0], r.rack[1]);
    cr_expect_neq(r.rack[0], r.full_rack, "held in the full rack");
    cr_assert_eq(ext_state_gang_hold(st, &g, 1001, &held, &err), TPX_OK, "%s", err.msg);
    cr_expect(!held, "a standing hold is kept, not made again");
    cr_assert_eq(ext_state_gang_hold(st, &big, 1001, &held, &err), TPX_OK, "%s", err.msg);
    cr_expect(!held, "three 8-GPU pods fit no 2-node rack");
    {
        /* a hold made while waiting gives way to a bind kube-scheduler decided: a plain 8-GPU
         * pod on a held node is bound, and the waiting gang's hold goes */
        struct pol_workload plain;
        char held_node[64];

        memset(&plain, 0, sizeof(plain));
        plain.accel_per_pod = 8;
        snprintf(held_node, sizeof(held_node), "%s", names[r.h[0].node]);
        ext_state_remember_pod(st, "plain-0", "ns", "plain-0", &plain, 1001);
        cr_expect_eq(ext_state_bind(st, "plain-0", "plain-0", held_node, 1001, &out, &err), TPX_OK,
                     "%s", err.msg);
        cr_assert(ext_state_read(st, read_group_holds, &r));
        cr_expect_eq(r.n, 0, "the waiting hold is still there: %zu slots", r.n);
    }
    ext_state_free(st);
}
